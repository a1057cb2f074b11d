"""Frames the tester's own receivers dropped (DirectionResult.tester_drops: swtester's receive ring full,
PACKET_STATISTICS tp_drops; TRex's port ierrors, its NIC's missed frames among them) are the tester's loss, not the
DUT's: a trial with them is invalid and run again, as one with host backlog drops (tests/test_host_backlog.py); if
they persist the load fails and the result names the tester. No lab: the simulated SUT, its tester dropping."""

import dataclasses
import json

from test_tester_stalls import Stalling

from trexlab.generators import create_generator
from trexlab.plan.repetition import observation
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import STRETCHED_RETRIES, RunContext, TrialRunner
from trexlab.trial import TrialSpec

SPEC = TrialSpec(offered_load=40_000, duration=1.0, directions="forward", receive_tail=0.5)
DROPS = 300  # frames per trial: 0.6 % of 50 kfps, within the 5 % tolerance below


class DroppingTester(Stalling):
    """The simulated SUT behind a tester whose receiver drops DROPS frames in the first `stalls` trials at each
    load (or always): frames it never counted, so lost, the tester on its schedule."""

    def disturb(self, result, spec):
        directions = {k: dataclasses.replace(d, frames_received=d.frames_received - DROPS, tester_drops=DROPS)
                      for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions)


def test_a_trial_with_tester_drops_is_invalid_run_again_and_only_the_repeat_counts():
    runner = TrialRunner(DroppingTester(capacity=100_000), SPEC)
    result = runner.run(50_000, 1.0, "binary search")
    assert not runner.log[0].valid, "the tester's loss made the trial no measure of the DUT"
    assert len(runner.log) == 1 + STRETCHED_RETRIES and result is runner.log[-1] and result.valid
    assert runner.tester_drops == 0 and runner.notes() == [
        "1 trial(s) in which the tester's own receivers dropped frames were run again; only the repeat counts, both "
        "are logged"]


def test_tester_drops_that_persist_fail_the_load_and_mark_the_result_tester_bound():
    """Within the 5 % loss tolerance the drops would pass: the tester's loss is never the DUT's pass."""
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1, loss_tolerance_percent=5)
    data = throughput.run(RunContext(DroppingTester(capacity=100_000, stalls=None), SPEC), params).to_dict()
    assert data["below_minimum_load"] and all(not t["passed"] for t in data["search"])
    assert data["tester_bound"] and data["tester_bound_reasons"] == ["tester drops"]
    trials = len(data["search"])
    assert (f"{DROPS * trials} frame(s) dropped by the tester's own receivers in {trials} trial(s): the tester's "
            "loss, counted as loss, and those trials as failed, so the result may be a lower bound") in data["notes"]
    found = mlrsearch.run(RunContext(DroppingTester(capacity=100_000, stalls=None), SPEC),
                          mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.PDR,)))
    assert found.goals[0]["below_minimum_load"] and found.tester_bound_reasons == ["tester drops"]
    clean = throughput.run(RunContext(create_generator("sim", capacity=100_000), SPEC), params)
    recovered = throughput.run(RunContext(DroppingTester(capacity=100_000), SPEC), params)
    assert recovered.throughput == clean.throughput and recovered.tester_bound_reasons == []


class UnknownDropsAbove:
    """The simulated SUT behind a tester that gives no count of its own drops (tester_drops None, as TRex's "N/A"
    ierrors) in trials above `above` fps only."""

    name = "sim"

    def __init__(self, capacity: float, above: float):
        self.generator = create_generator("sim", capacity=capacity)
        self.above = above

    def run_trial(self, spec):
        result = self.generator.run_trial(spec)
        if spec.offered_load <= self.above:
            return result
        return dataclasses.replace(result, directions={k: dataclasses.replace(d, tester_drops=None)
                                                       for k, d in result.directions.items()})

    def describe(self):
        return self.generator.describe()


def test_mlrsearch_marks_only_the_goals_whose_figure_a_lossy_trial_with_unknown_tester_drops_can_hold_down():
    # Loss above the DUT's capacity; the tester's drops unknown only well above it. NDR's relevant upper bound lies
    # near the capacity, below every such trial: their loss classified only loads above its figure. A goal that
    # tolerates 10 % loss has its upper bound where they ran: its figure may be the tester's limit.
    capacity, unknown_above = 100_000, 105_000
    lossy_goal = {**mlrsearch.NDR, "name": "LOSSY", "loss_ratio": 0.1}  # upper bound near capacity / 0.9
    found = mlrsearch.run(RunContext(UnknownDropsAbove(capacity, unknown_above), SPEC),
                          mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.NDR, lossy_goal)))
    ndr, lossy = found.goals
    assert ndr["relevant_upper_bound"] < unknown_above < lossy["relevant_upper_bound"]
    data = found.to_dict()
    assert (observation(data, "NDR_fps").tester_bound, observation(data, "LOSSY_fps").tester_bound) == (
        (), ("tester drops unknown",)), "the summary and report mark each figure by its own reasons"
    assert data["headline_tester_bound"] == {"NDR_fps": [], "LOSSY_fps": ["tester drops unknown"]}
    assert data["tester_bound_reasons"] == ["tester drops unknown"]


def test_mlrsearch_trial_log_names_each_trials_unknown_tester_drops_and_each_goals_mark_is_counted_from_it():
    # A goal's "tester drops unknown" rests on the trials that lost frames with their tester drops unknown: a reader of
    # result.json must find them in trial_log to check each figure's mark (before, the log did not say which they
    # were, and the mark could not be counted again).
    capacity, unknown_above = 100_000, 105_000
    lossy_goal = {**mlrsearch.NDR, "name": "LOSSY", "loss_ratio": 0.1}
    found = mlrsearch.run(RunContext(UnknownDropsAbove(capacity, unknown_above), SPEC),
                          mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.NDR, lossy_goal)))
    data = json.loads(json.dumps(found.to_dict()))  # as result.json has it
    log = data["trial_log"]
    assert [t["tester_drops_unknown"] for t in log] == [
        ["forward"] if t["offered_load"] > unknown_above else [] for t in log]
    for goal in data["goals"]:
        loads = mlrsearch.bearing_loads(log, goal)  # within its bounds, where the trials read otherwise move it
        bearing = [t for t in log if t["searched"] and t["tester_drops_unknown"] and t["loss_ratio"] > 0
                   and t["offered_load"] in loads]
        assert data["headline_tester_bound"][f"{goal['name']}_fps"] == (
            ["tester drops unknown"] if bearing else []), goal["name"]
    assert data["headline_tester_bound"]["LOSSY_fps"], "a goal the log marks"
