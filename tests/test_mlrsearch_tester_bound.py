"""MLRsearch marks each goal's figure tester-bound only by the trials that bear on it (mlrsearch.bears_on: at loads
from the goal's relevant lower to its relevant upper bound), as throughput counts only the trials below the lowest
load the DUT itself failed. No lab: the simulated SUT behind a tester disturbed in some trials (the stand-ins of
tests/test_tester_stalls.py, test_host_backlog.py, test_tester_drops.py, test_hypervisor_steal.py)."""

import dataclasses
import json

import pytest
from test_host_backlog import HostDropping
from test_hypervisor_steal import Stolen
from test_tester_drops import SPEC, DroppingTester, UnknownDropsAbove
from test_tester_stalls import Stalling

from trexlab.generators import create_generator
from trexlab.procedures import mlrsearch
from trexlab.procedures.common import CEILING_MARGIN, RunContext

CAPACITY = 100_000  # fps, the simulated DUT's
#: A goal that tolerates 10 % loss: its relevant bounds lie near CAPACITY / 0.9, NDR's near CAPACITY.
LOSSY = {**mlrsearch.NDR, "name": "LOSSY", "loss_ratio": 0.1}
PARAMS = mlrsearch.Params(max_rate=2 * CAPACITY, min_rate=CAPACITY / 10, goals=(mlrsearch.NDR, LOSSY))


class DisturbedAbove:
    """The simulated SUT behind `tester` (a stand-in disturbing every trial) that disturbs only trials above `above`
    fps, each run of them: a disturbance that persists, so the search classifies loads with it."""

    name = "sim"

    def __init__(self, tester: Stalling, above: float):
        self.tester, self.above = tester, above

    def run_trial(self, spec):
        result = self.tester.generator.run_trial(spec)
        return self.tester.disturb(result, spec) if spec.offered_load > self.above else result

    def describe(self):
        return self.tester.describe()


@pytest.mark.parametrize(("tester", "reason"), [
    (Stalling, "stretched trials"), (Stolen, "hypervisor steal ("), (DroppingTester, "tester drops"),
    (HostDropping, "host backlog drops (")], ids=["stretched", "steal", "tester-drops", "host-drops"])
def test_a_disturbed_trial_marks_only_the_goals_whose_relevant_bounds_it_bears_on(tester, reason):
    # Every trial above 105 kfps disturbed (all its frames counted lost): NDR's relevant upper bound lies below
    # them, so they classified only loads above its figure; LOSSY's relevant upper bound is one of them. Before,
    # each reason marked every goal's figure.
    above = 1.05 * CAPACITY
    found = mlrsearch.run(RunContext(DisturbedAbove(tester(capacity=CAPACITY, stalls=None), above), SPEC), PARAMS)
    ndr, lossy = found.goals
    assert ndr["relevant_upper_bound"] < above < lossy["relevant_upper_bound"]
    marks = found.to_dict()["headline_tester_bound"]
    assert marks["NDR_fps"] == [] and len(marks["LOSSY_fps"]) == 1 and marks["LOSSY_fps"][0].startswith(reason)
    assert found.tester_bound_reasons == marks["LOSSY_fps"]
    assert found.notes[-1].endswith(f"NDR_fps none; LOSSY_fps {marks['LOSSY_fps'][0]}"), "the notes say which figure"


def test_a_lossy_trial_below_a_goals_relevant_lower_bound_does_not_mark_its_figure():
    # Tester drops unknown (the trial stays valid, so the search runs as on a clean tester) only in trials between
    # NDR's relevant upper bound and LOSSY's relevant lower bound: loads LOSSY classified lower bounds or left
    # undecided below its figure, which their loss cannot hold down. Before, any such trial at or below a goal's
    # relevant upper bound marked it.
    window = (1.005 * CAPACITY, 1.06 * CAPACITY)

    class UnknownDropsBetween(UnknownDropsAbove):
        def run_trial(self, spec):
            return super().run_trial(spec) if spec.offered_load < window[1] else self.generator.run_trial(spec)

    found = mlrsearch.run(RunContext(UnknownDropsBetween(CAPACITY, window[0]), SPEC), PARAMS)
    ndr, lossy = found.goals
    unknown = [t["offered_load"] for t in found.trial_log
               if t["searched"] and t["tester_drops_unknown"] and t["loss_ratio"] > 0]
    assert unknown and ndr["relevant_upper_bound"] < min(unknown) <= max(unknown) < lossy["relevant_lower_bound"]
    assert found.to_dict()["headline_tester_bound"] == {"NDR_fps": [], "LOSSY_fps": []}
    assert found.tester_bound_reasons == []


def test_each_goals_marks_are_counted_again_from_result_json_alone():
    # What a reader of result.json can check: each figure's reasons from its trial_log, goals and tester ceiling.
    found = mlrsearch.run(RunContext(DisturbedAbove(HostDropping(capacity=CAPACITY, stalls=None), 1.05 * CAPACITY),
                                     SPEC), PARAMS)
    data = json.loads(json.dumps(found.to_dict()))
    lossy = data["goals"][1]
    bearing = [t for t in data["trial_log"] if t["searched"]
               and lossy["relevant_lower_bound"] <= t["offered_load"] <= lossy["relevant_upper_bound"]]
    assert data["headline_tester_bound"]["LOSSY_fps"] == [
        f"host backlog drops ({sum(t['host_drops'] for t in bearing):,} frames)"]
    assert mlrsearch.headline_tester_bound(data["trial_log"], data["goals"], data["params"]["tester_ceiling"]) == (
        data["headline_tester_bound"])


def test_a_goal_whose_relevant_bounds_reach_the_testers_ceiling_is_marked_though_its_figure_is_below_it():
    # LOSSY's figure lies some 10 % below its relevant lower bound (its loss ratio): a ceiling the loads it rests on
    # reached may have made them fail, its figure outside CEILING_MARGIN of it. Before, only the figure was checked.
    ceiling = 1.2 * CAPACITY
    found = mlrsearch.run(RunContext(create_generator("sim", capacity=CAPACITY), SPEC),
                          dataclasses.replace(PARAMS, tester_ceiling=ceiling))
    ndr, lossy = found.goals
    near = ceiling * (1 - CEILING_MARGIN)
    assert ndr["relevant_upper_bound"] < near
    assert lossy["conditional_throughput"] < near <= lossy["relevant_lower_bound"]
    assert found.to_dict()["headline_tester_bound"] == {"NDR_fps": [], "LOSSY_fps": ["near tester ceiling"]}
    assert any(note.startswith(f"LOSSY: relevant lower bound {lossy['relevant_lower_bound']:.0f} fps is within")
               for note in found.notes)


def test_the_trial_log_gives_the_effective_duration_the_search_summed_a_stretched_one_longer():
    # Draft-15 section 4.5.8: the search sums each trial's effective duration; a stretched trial's sender took
    # 0.1 s longer (Stalling), so a reader classifying the loads again from trial_log needs it, not only the
    # trial duration (before, the log had only that).
    found = mlrsearch.run(RunContext(DisturbedAbove(Stalling(capacity=CAPACITY, stalls=None), 1.05 * CAPACITY),
                                     SPEC), PARAMS)
    stretched = [t for t in found.trial_log if t["searched"] and t["stretched"]]
    assert stretched and all(t["effective_duration"] == pytest.approx(t["duration"] + 0.1) for t in stretched)
    assert all(t["effective_duration"] == t["duration"] for t in found.trial_log if not t["stretched"])
