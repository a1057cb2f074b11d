"""MLRsearch marks each goal's figure tester-bound only by the trials that bear on it (mlrsearch.bearing_loads: at loads
from the goal's relevant lower to its relevant upper bound, whose class, or at the lower bound whose loss quantile,
the disturbed trials read as the DUT's success would move), as throughput counts only the trials below the lowest
load the DUT itself failed. No lab: the simulated SUT behind a tester disturbed in some trials (the stand-ins of
tests/test_tester_stalls.py, test_host_backlog.py, test_tester_drops.py, test_hypervisor_steal.py)."""

import dataclasses
import json
import re

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
    ndr_notes, lossy_notes = (goal["notes"] for goal in found.goals)
    assert ndr_notes == [] and len(lossy_notes) == 1 and f"({marks['LOSSY_fps'][0]})" in lossy_notes[0], (
        "each goal's notes say what bears on it")


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
    loads = mlrsearch.bearing_loads(data["trial_log"], lossy)
    assert lossy["relevant_upper_bound"] in loads, "all its trials disturbed: read as successes, no upper bound"
    bearing = [t for t in data["trial_log"] if t["searched"] and t["offered_load"] in loads]
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
    assert any(note.startswith(f"relevant lower bound {lossy['relevant_lower_bound']:,.0f} fps is within")
               for note in lossy["notes"])


def test_the_trial_log_gives_the_effective_duration_the_search_summed_a_stretched_one_longer():
    # Draft-15 section 4.5.8: the search sums each trial's effective duration; a stretched trial's sender took
    # 0.1 s longer (Stalling), so a reader classifying the loads again from trial_log needs it, not only the
    # trial duration (before, the log had only that).
    found = mlrsearch.run(RunContext(DisturbedAbove(Stalling(capacity=CAPACITY, stalls=None), 1.05 * CAPACITY),
                                     SPEC), PARAMS)
    stretched = [t for t in found.trial_log if t["searched"] and t["stretched"]]
    assert stretched and all(t["effective_duration"] == pytest.approx(t["duration"] + 0.1) for t in stretched)
    assert all(t["effective_duration"] == t["duration"] for t in found.trial_log if not t["stretched"])


class UnknownDropsFirst(Stalling):
    """The simulated SUT behind a tester that gives no count of its own drops (tester_drops None, as TRex's "N/A"
    ierrors) in the first trial at each load: the trial stays valid, its loss, where it has any, maybe the tester's."""

    def disturb(self, result, spec):
        return dataclasses.replace(result, directions={k: dataclasses.replace(d, tester_drops=None)
                                                       for k, d in result.directions.items()})


def test_a_disturbed_trial_at_a_load_its_clean_trials_alone_make_the_relevant_upper_bound_does_not_mark_it():
    # Two goals of loss ratio 0 share their relevant upper bound; LONG needs 41 s of trials there, NDR 21 s. The first
    # trial at that load lost frames with its tester drops unknown; the 20 clean ones after it all lost frames too.
    # For NDR those 20 alone make the load an upper bound however the disturbed one is read (20 of 21 s high-loss):
    # it cannot have moved NDR's figure. For LONG they do not (20 of 41 s): read as the DUT's success, the load is
    # no upper bound. Before, every disturbed trial from a goal's relevant lower to its upper bound marked it.
    long = {**mlrsearch.NDR, "name": "LONG", "duration_sum": 41.0}
    found = mlrsearch.run(RunContext(UnknownDropsFirst(capacity=CAPACITY, stalls=1), SPEC),
                          dataclasses.replace(PARAMS, goals=(mlrsearch.NDR, long)))
    ndr, longer = found.goals
    assert ndr["relevant_upper_bound"] == longer["relevant_upper_bound"]
    at_upper = [t for t in found.trial_log if t["searched"] and t["offered_load"] == ndr["relevant_upper_bound"]]
    assert [bool(t["tester_drops_unknown"]) for t in at_upper] == [True] + [False] * 20
    assert all(t["loss_ratio"] > 0 for t in at_upper)
    assert found.to_dict()["headline_tester_bound"] == {"NDR_fps": [], "LONG_fps": ["tester drops unknown"]}


#: A goal tolerating 10 % loss, decided by 4 s of trials of 1 s (short ones of 0.5 s), and the loads of a trial log
#: written by hand: its relevant lower bound (LOWER), a load between (BETWEEN), its relevant upper bound (UPPER), fps.
GOAL = {"name": "G", "loss_ratio": 0.1, "exceed_ratio": 0.5, "relative_width": 0.1, "initial_trial_duration": 0.5,
        "final_trial_duration": 1.0, "duration_sum": 4.0, "conditional_throughput": None}
LOWER, BETWEEN, UPPER = 100_000.0, 104_000.0, 108_000.0
CLEAN_LOWER, CLEAN_UPPER = [0.05] * 4, [0.2] * 4  # 4 s of 5 % loss: a lower bound; of 20 %: an upper bound


def logged(load: float, loss: float, disturbed: str = "", duration: float = 1.0) -> dict:
    """One searched trial as trial_log has it; `disturbed`: "unknown" (a valid trial, its tester drops unknown) or
    "stretched" (invalid: the search counted all its frames lost)."""
    return {"offered_load": load, "duration": duration, "effective_duration": duration, "loss_ratio": loss,
            "stretched": disturbed == "stretched", "stolen": False, "host_drops": 0, "host_steal": 0.0,
            "tester_drops": 0, "tester_drops_unknown": ["forward"] if disturbed == "unknown" else [],
            "valid": disturbed != "stretched", "searched": True}


@pytest.mark.parametrize(("at_lower", "between", "at_upper", "marks"), [
    # The disturbed trial's 8 % sits above the quantile the figure takes (5 %) and stays there read as 0 %: the
    # load is a lower bound with or without it, the figure the same. Before, it marked the figure.
    ([0.05, 0.05, 0.05, (0.08, "unknown")], [], CLEAN_UPPER, []),
    # Two trials counted as all lost: read as the DUT's 0 % they are the quantile's, the figure the load's own (the
    # load a lower bound either way: a class alone would miss it).
    ([0.05, 0.08, (0.0, "stretched"), (0.0, "stretched")], [], CLEAN_UPPER, ["stretched trials"]),
    # A short disturbed trial at the lower bound: no full-length loss ratio, and the load a lower bound either way.
    ([*CLEAN_LOWER, (0.5, "unknown", 0.5)], [], CLEAN_UPPER, []),
    # Between the bounds, undecided: read as the DUT's success, the disturbed trials make it a lower bound.
    (CLEAN_LOWER, [0.05, (0.2, "unknown"), (0.2, "unknown")], CLEAN_UPPER, ["tester drops unknown"]),
    # Between the bounds, too few trials to decide either way: undecided however they are read.
    (CLEAN_LOWER, [0.2, (0.2, "unknown")], CLEAN_UPPER, []),
    # At the upper bound, 3 s of 4 high-loss: read as the DUT's success, the disturbed one leaves 2 s, no upper bound.
    (CLEAN_LOWER, [], [0.2, 0.2, (0.2, "unknown"), 0.05], ["tester drops unknown"]),
    # At the upper bound, its 4 clean high-loss trials alone make it one: the disturbed trial moved nothing.
    (CLEAN_LOWER, [], [*CLEAN_UPPER, (0.0, "stretched")], []),
], ids=["lower-quantile-kept", "lower-quantile-moved", "lower-short", "between-decided", "between-undecided",
        "upper-moved", "upper-kept"])
def test_a_disturbed_trial_at_or_between_the_relevant_bounds_marks_a_figure_only_if_reading_it_otherwise_moves_it(
        at_lower, between, at_upper, marks):
    def trials(load, losses):
        return [logged(load, *(spec if isinstance(spec, tuple) else (spec,))) for spec in losses]

    log = trials(LOWER, at_lower) + trials(BETWEEN, between) + trials(UPPER, at_upper)
    goal = {**GOAL, "relevant_lower_bound": LOWER, "relevant_upper_bound": UPPER}
    assert mlrsearch.headline_tester_bound(log, [goal], None) == {"G_fps": marks}


def test_notes_on_what_may_be_the_testers_are_the_goals_it_bears_on_and_the_results_only_the_whole_runs():
    # Host drops in every trial above 105 kfps, each run again (only the repeat counts) and dropping again: LOSSY's
    # relevant bounds rest on such trials, NDR's on none. Before, the runner's notes said for the whole result that
    # the host's loss was counted and "the result may be a lower bound", NDR's figure too, and a note after them
    # listed the figures.
    found = mlrsearch.run(RunContext(DisturbedAbove(HostDropping(capacity=CAPACITY, stalls=None), 1.05 * CAPACITY),
                                     SPEC), PARAMS).to_dict()
    assert not any("lower bound" in note for note in found["notes"]), found["notes"]
    ndr, lossy = found["goals"]
    assert ndr["notes"] == []
    assert len(lossy["notes"]) == 1 and re.fullmatch(
        r"\d+ trial\(s\) at \d+ load\(s\) from its relevant lower to its relevant upper bound may be the tester's or "
        r"the host's \(host backlog drops \([\d,]+ frames\)\): read as the DUT's success they would move its relevant "
        r"bounds or its figure, so its figure may be a lower bound", lossy["notes"][0]), lossy["notes"]
    assert f"({found['headline_tester_bound']['LOSSY_fps'][0]})" in lossy["notes"][0]
    # Result-wide: the trials run again, and those disturbed above LOSSY's upper bound, which bear on no goal.
    assert [note.split(" trial(s) ")[1][:40] for note in found["notes"]] == [
        "in which the host's receive backlog drop", "may be the tester's or the host's (host "], found["notes"]


def test_disturbed_trials_that_bear_on_no_goal_are_named_in_the_results_notes_without_claiming_a_lower_bound():
    # Tester drops unknown only between NDR's relevant upper and LOSSY's relevant lower bound: no goal is marked.
    # Before, the notes said "loss in those trials may be the tester's, not the DUT's" of the whole result.
    window = (1.005 * CAPACITY, 1.06 * CAPACITY)

    class UnknownDropsBetween(UnknownDropsAbove):
        def run_trial(self, spec):
            return super().run_trial(spec) if spec.offered_load < window[1] else self.generator.run_trial(spec)

    found = mlrsearch.run(RunContext(UnknownDropsBetween(CAPACITY, window[0]), SPEC), PARAMS).to_dict()
    assert found["headline_tester_bound"] == {"NDR_fps": [], "LOSSY_fps": []}
    unknown = sum(1 for t in found["trial_log"] if t["searched"] and t["tester_drops_unknown"] and t["loss_ratio"] > 0)
    assert found["notes"] == [
        f"{unknown} searched trial(s) may be the tester's or the host's (tester drops unknown): they bear on no goal's "
        "figure (read as the DUT's success they would move no goal's relevant bounds nor figure), so none is marked by "
        "them"]
    assert [goal["notes"] for goal in found["goals"]] == [[], []]


def test_a_disturbed_warm_up_is_named_in_the_results_notes_and_marks_no_goal():
    # The warm-up runs at max_rate, above 105 kfps, and its host drops persist; the search discards its result, so
    # no figure rests on it. Before, the runner's notes counted it among the trials that made "the result" a lower
    # bound.
    params = dataclasses.replace(PARAMS, warmup_duration=1.0)
    found = mlrsearch.run(RunContext(DisturbedAbove(HostDropping(capacity=CAPACITY, stalls=None), 1.05 * CAPACITY),
                                     SPEC), params)
    warmup = found.trial_log[:next(i for i, t in enumerate(found.trial_log) if t["searched"])]  # its runs, first
    assert warmup and all(t["offered_load"] == params.max_rate for t in warmup) and not warmup[-1]["valid"]
    assert (f"the warm-up trial may be the tester's or the host's (host backlog drops ({warmup[-1]['host_drops']:,} "
            "frames)): the search discards it, and no figure rests on it") in found.notes


class UnknownDropsLossless(UnknownDropsAbove):
    """The simulated SUT behind a tester whose drops are unknown (TRex's "N/A" ierrors) in every trial that lost no
    frame: valid trials whose loss, none, the unknown count cannot have made."""

    def __init__(self, capacity: float):
        super().__init__(capacity, 0.0)

    def run_trial(self, spec):
        result = super().run_trial(spec)
        return result if result.frames_lost == 0 else self.generator.run_trial(spec)


def test_lossless_trials_with_tester_drops_unknown_a_goals_result_rests_on_are_named_in_its_notes_unmarked():
    # Draft-15 (as draft-01: the tester qualifies the received stream) counts a trial's loss as frames intended but
    # not received; a tester drop only removes a received frame. NDR's relevant lower bound rests on lossless trials
    # whose tester drops are unknown: the count cannot hide DUT loss there, so its figure stays unmarked, and its notes
    # say so. LOSSY's bounds lie above the capacity, among lossy trials with their counts read: no such note. Before,
    # NDR's notes were empty, though its figure rested on trials whose counters no one read.
    found = mlrsearch.run(RunContext(UnknownDropsLossless(CAPACITY), SPEC), PARAMS)
    ndr, lossy = found.goals
    unread = [t for t in found.trial_log if t["searched"] and t["tester_drops_unknown"]]
    assert unread and all(t["loss_ratio"] == 0 and t["valid"] for t in unread)
    assert found.to_dict()["headline_tester_bound"] == {"NDR_fps": [], "LOSSY_fps": []}
    assert found.tester_bound_reasons == [] and found.notes == []
    at_lower = [t for t in unread if t["offered_load"] == ndr["relevant_lower_bound"]]
    assert at_lower and len(ndr["notes"]) == 1 and re.fullmatch(
        rf"{len(at_lower)} lossless trial\(s\) at 1 load\(s\) its relevant bounds or figure rest on had tester drops "
        r"unknown \(read as failed, as a trial with tester drops is, they would move them\): every intended frame was "
        r"received in time, so the unknown count hides no DUT loss \(a tester drop only adds loss\): they count as "
        r"the DUT's success and do not mark its figure",
        ndr["notes"][0]), ndr["notes"]
    assert lossy["notes"] == []


@pytest.mark.parametrize(("at_lower", "at_upper", "noted"), [
    # Two of four lossless trials at the relevant lower bound unread: read as failed, the 5 % trials become the
    # quantile the figure takes, not 0 %: the figure rests on them.
    ([0.05, 0.05, (0.0, "unknown"), (0.0, "unknown")], CLEAN_UPPER, 2),
    # One of five: read as failed it lies above the quantile (5 %), the load a lower bound either way.
    ([*CLEAN_LOWER, (0.0, "unknown")], CLEAN_UPPER, 0),
    # At the relevant upper bound, one of four: its three high-loss trials make it one with it read either way.
    (CLEAN_LOWER, [*CLEAN_UPPER[:3], (0.0, "unknown")], 0),
    # A lossless trial unread below the relevant lower bound: no load there moves a bound.
    ([*CLEAN_LOWER], CLEAN_UPPER, 0),
], ids=["lower-quantile-rests", "lower-kept", "upper-kept", "below"])
def test_a_goal_names_the_lossless_trials_with_tester_drops_unknown_only_where_its_result_rests_on_them(
        at_lower, at_upper, noted):
    def trials(load, losses):
        return [logged(load, *(spec if isinstance(spec, tuple) else (spec,))) for spec in losses]

    log = trials(LOWER * 0.9, [(0.0, "unknown")] * 4) + trials(LOWER, at_lower) + trials(UPPER, at_upper)
    goal = {**GOAL, "relevant_lower_bound": LOWER, "relevant_upper_bound": UPPER}
    notes = mlrsearch.unread_notes(log, [goal])[0]
    assert [int(note.split(" ")[0]) for note in notes] == ([noted] if noted else [])
    assert mlrsearch.headline_tester_bound(log, [goal], None) == {"G_fps": []}, "a lossless trial marks no figure"
