"""MLRsearch (draft-ietf-bmwg-mlrsearch): several throughput goals, e.g. NDR and PDR, in one search.

The search itself is FD.io CSIT's reference implementation (PyPI
``MLRsearch``); this module puts our generator behind its measurer interface
and reports, per goal, the relevant lower and upper bounds and the conditional
throughput, plus every trial (through ``on_trial``, like any procedure).

A goal is the draft's tuple: goal loss ratio, goal exceed ratio, goal width
(relative), goal initial and final trial duration, goal duration sum. The
defaults are NDR (loss 0) and PDR (loss 0.5 %), each with 1 s final trials,
a 21 s duration sum, exceed ratio 0.5 and 0.5 % width; the RFC 2544-compliant
goal is expressible as loss 0, exceed 0, final trial duration 60 s, duration
sum 60 s. A goal whose relevant lower bound would lie below the minimum load
is reported as "below minimum load"; the other goals keep their results.
A goal result without both relevant bounds within the goal width is irregular
(draft-ietf-bmwg-mlrsearch-15, published as RFC 9971, section 4.8.4): the goal
says why, and a figure taken from it is marked so (headline_irregular) wherever
it is shown.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import time
import typing
from dataclasses import asdict, dataclass, field
from importlib.metadata import version

from MLRsearch import AbstractMeasurer, Config, GoalResult, MeasurementResult, MultipleLossRatioSearch, SearchGoal
from MLRsearch.load_rounding import LoadRounding

from trexlab.media import max_frame_rate, media_speed
from trexlab.params import InvalidParameter, check_range
from trexlab.procedures.common import (
    FIGURE_BOUND_KEYS,
    MAX_RATE_FIELD,
    MEDIA_FIELD,
    TESTER_CEILING_FIELD,
    RunContext,
    SimulationTooLong,
    TrialRunner,
    ceiling_warning,
    generator_traffic_only,
    no_lab_checks,
    rfc2544_trial_deviations,
    simulated_cost,
    tester_bound_fields,
    tester_limit_reasons,
)
from trexlab.results.stats import WHOLE
from trexlab.spec.schema import doc
from trexlab.trial import MAX_OFFERED_LOAD, MAX_TRIAL_DURATION, TrialResult, TrialSpec, check_trial_frames

NAME = "mlrsearch"
TAKES_RATE = False
#: What the figures are and how the trials feed them, beside the figures (draft-ietf-bmwg-mlrsearch-15 requires the
#: units and the loads' interfaces, 4.3 and 4.5.2; the goal width's quantity, 4.6.5; how the trial effective duration
#: is computed when it is not the trial duration, 4.5.8; and recommends the measurer's freedoms, 4.9.1).
METHOD = (f"MLRsearch (draft-ietf-bmwg-mlrsearch-15, published as RFC 9971), FD.io CSIT reference implementation "
          f"(PyPI MLRsearch {version('MLRsearch')}): each goal's figure is its conditional throughput in frames/s per "
          "direction (its relevant lower bound times one minus the exceed-ratio quantile of the loss ratios of its "
          "full-length trials there); goal width: (relevant upper bound - relevant lower bound) / relevant upper "
          "bound; trial loss ratio: frames intended but not received over frames intended, all directions summed, "
          "an invalid trial (stretched, host or tester drops) all lost; trial effective duration: the longer of the "
          "trial duration and the sender's measured sending time")
#: The reference implementation's own goal attributes (the spec lets an implementation add some): trexlab leaves
#: them at its defaults, and reports them with each goal, as every applied attribute is (4.9.3).
IMPLEMENTATION_GOAL_KEYS = ("preceding_targets", "expansion_coefficient")

GOAL_KEYS = ("name", "loss_ratio", "exceed_ratio", "relative_width", "initial_trial_duration",
             "final_trial_duration", "duration_sum")
NDR = {"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.5, "relative_width": 0.005,
       "initial_trial_duration": 1.0, "final_trial_duration": 1.0, "duration_sum": 21.0}
PDR = {**NDR, "name": "PDR", "loss_ratio": 0.005}
RFC2544 = {"name": "RFC2544", "loss_ratio": 0.0, "exceed_ratio": 0.0, "relative_width": 0.005,
           "initial_trial_duration": 1.0, "final_trial_duration": 60.0, "duration_sum": 60.0}


#: A goal's name: its figure is <name>_fps (summary.csv and trials.parquet columns, the report's headings).
GOAL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}\Z")
#: The trials a goal may ask for at one load (its duration_sum over its final_trial_duration): the reference
#: implementation runs them all, and so does the dry run's simulation, on the CPU of whoever checks the spec.
MAX_FINAL_TRIALS = 1000
#: The most goals one search may have. CSIT's jobs search two (NDR and PDR), the draft's examples one to three. The
#: reference implementation weighs every trial against every goal, and so does the lab time estimate, which runs the
#: search against some 30 simulated DUTs: per sweep point it took 0.4 s for the two default goals, 3.3 s for 32 goals
#: and 35 s for 64 here (ESTIMATE_WORK_MAX bounds the rest of its work).
MAX_GOALS = 16
#: The most work the lab time estimate may simulate for one repetition, over all its simulated DUTs, in goals x loads
#: scanned (trexlab.plan.estimate._SimulationBudget: after each trial the reference implementation scans the loads it
#: has tried, for each goal). A goal's duration_sum multiplies its trials (up to MAX_FINAL_TRIALS per load), a fine
#: width its loads. Measured here, at 1 to 3 us of CPU per unit: the two default goals 59,000 (0.4 s); two 1000-trial
#: goals 2.3 M (4.8 s); one 1000-trial goal of width 1e-9 1.5 M (4.5 s); 16 goals of width 0.005 0.9 M (1.3 s); refused:
#: eight 1000-trial goals (13.8 M, 11.6 s) and 16 goals of width 1e-9 (more than 19.8 M, minutes).
ESTIMATE_WORK_MAX = 3_000_000
#: The longest search, wall-clock s (search_time_max): one repetition at most a day.
MAX_SEARCH_TIME = 86400.0
#: The finest goal width: 1 frame/s at the highest load a trial may offer. A finer one tells apart no loads a tester
#: paces, and near 1e-16 the reference implementation's integer loads give it no width at all: its search failed
#: with ZeroDivisionError (1e-17) or "Not round load" (1e-16), a traceback after the run had begun.
MIN_RELATIVE_WIDTH = 1 / MAX_OFFERED_LOAD
#: Steps (Python lines) the reference implementation's load rounding may take to find the integer unit every goal
#: width is a whole number of (LoadRounding._find_ints, run before the search's first trial, and so in every dry run
#: and lab time estimate). Goal widths far apart (0.5 beside 1e-9) or many distinct ones can have no such unit: it
#: then searches for ever. Measured here: converging goal sets took at most 192,503 steps (64 random widths, loads
#: 1..1.5e8 fps), non-converging ones were still searching after 3e7 (6 s); a refusal costs about 0.3 s.
LOAD_ROUNDING_STEPS_MAX = 1_000_000


def goal_name(goal: dict, index: int) -> str:
    """A goal's name: its own, or goalN after its place among the goals."""
    return goal.get("name", f"goal{index}")


def goal_figure(name: str) -> str:
    """The headline figure of the goal of this name: its conditional throughput, frames/s."""
    return f"{name}_fps"


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run reports: one per goal."""
    return tuple(goal_figure(goal_name(goal, i)) for i, goal in enumerate(params.goals))


def search_goal(goal: dict, index: int = 0) -> SearchGoal:
    """The reference implementation's SearchGoal for one of our goal mappings."""
    unknown = sorted(set(goal) - set(GOAL_KEYS))
    if unknown:
        raise InvalidParameter(f"goals[{index}].{unknown[0]}", goal[unknown[0]], ", ".join(GOAL_KEYS))
    if "name" in goal and not (isinstance(goal["name"], str) and GOAL_NAME.match(goal["name"])):
        raise InvalidParameter(f"goals[{index}].name", goal["name"], "1-32 characters A-Z a-z 0-9 _, a letter first")
    values = {k: v for k, v in goal.items() if k != "name"}
    for key, value in values.items():
        high = MAX_TRIAL_DURATION if key.endswith("_trial_duration") else None
        check_range(f"goals[{index}].{key}", value, 0, high)
    _check_goal_bounds(values, index)
    try:
        found = SearchGoal(**values, fail_fast=False)
    except ValueError as exc:
        raise InvalidParameter(f"goals[{index}]", goal, str(exc).split(":")[0]) from None
    most = MAX_FINAL_TRIALS * found.final_trial_duration
    if found.duration_sum > most:
        raise InvalidParameter(f"goals[{index}].duration_sum", found.duration_sum,
                               f"<= {most:g} ({MAX_FINAL_TRIALS} final trials of {found.final_trial_duration:g} s)")
    return found


def _check_goal_bounds(values: dict, index: int) -> None:
    """The reference implementation's bounds of a goal's attributes (SearchGoal refuses them with a message that
    names neither the key nor its range), as one line that does: the exceed ratio and loss ratio below 1, the width
    strictly between 0 and 1, and durations that do not shrink from initial to final to their sum."""
    goal = {f.name: f.default for f in dataclasses.fields(SearchGoal)} | values

    def refuse(key: str, allowed: str) -> typing.NoReturn:
        raise InvalidParameter(f"goals[{index}].{key}", goal[key], allowed)

    for key in ("loss_ratio", "exceed_ratio"):
        if goal[key] >= 1:
            refuse(key, ">= 0 and < 1 (a fraction)")
    if not MIN_RELATIVE_WIDTH <= goal["relative_width"] < 1:
        refuse("relative_width", f">= {MIN_RELATIVE_WIDTH:g} and < 1 (a fraction of the upper bound; "
                                 f"{MIN_RELATIVE_WIDTH:g}: 1 fps at {MAX_OFFERED_LOAD:g} fps)")
    if goal["initial_trial_duration"] <= 0:
        refuse("initial_trial_duration", "> 0 s")
    if goal["final_trial_duration"] < goal["initial_trial_duration"]:
        refuse("final_trial_duration", f">= initial_trial_duration ({goal['initial_trial_duration']:g} s)")
    if goal["duration_sum"] < goal["final_trial_duration"]:
        refuse("duration_sum", f">= final_trial_duration ({goal['final_trial_duration']:g} s)")


@dataclass(frozen=True)
class Params:
    goals: tuple = field(default=(NDR, PDR), metadata=doc(
        "the search goals (draft-ietf-bmwg-mlrsearch), each {name, loss_ratio, exceed_ratio, relative_width, "
        "initial_trial_duration, final_trial_duration, duration_sum}: ratios as fractions, durations in s; "
        "default NDR (loss ratio 0) and PDR (0.005), 1 s final trials, 21 s duration sum, exceed ratio 0.5, "
        "width 0.005", minItems=1, maxItems=MAX_GOALS))
    max_rate: float | None = field(default=None, metadata=MAX_RATE_FIELD)
    min_rate: float = field(default=10_000.0, metadata=doc(
        "frames/s per direction, the lowest load the search tries (at most max_rate); a goal whose lower bound "
        "lies below it reads 'below minimum load'", exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    media: str = field(default="10g", metadata=MEDIA_FIELD)
    warmup_duration: float = field(default=0.0, metadata=doc(
        "s of sending at max_rate before the search; 0: none", minimum=0, maximum=MAX_TRIAL_DURATION))
    search_time_max: float = field(default=3600.0, metadata=doc(
        "wall-clock s after which the search stops with the bounds it has (an unfinished goal's result is "
        "irregular)", exclusiveMinimum=0,
        maximum=MAX_SEARCH_TIME))
    tester_ceiling: float | None = field(default=None, metadata=TESTER_CEILING_FIELD)

    def __post_init__(self) -> None:
        if not self.goals:
            raise InvalidParameter("goals", self.goals, "at least one goal")
        if len(self.goals) > MAX_GOALS:
            raise InvalidParameter("goals", f"{len(self.goals)} goals", f"1..{MAX_GOALS} goals")
        for index, goal in enumerate(self.goals):
            if not isinstance(goal, dict):  # e.g. goals: [NDR] written as names
                raise InvalidParameter(f"goals[{index}]", goal, f"a mapping of {', '.join(GOAL_KEYS)}")
        names = [goal_name(g, i) for i, g in enumerate(self.goals)]
        if len(set(names)) != len(names):
            raise InvalidParameter("goals", names, "distinct goal names")
        for index, goal in enumerate(self.goals):
            search_goal(goal, index)
        if self.max_rate is not None:
            check_range("max_rate", self.max_rate, 0, MAX_OFFERED_LOAD, low_open=True)
            check_range("min_rate", self.min_rate, 0, self.max_rate, low_open=True)
        check_range("min_rate", self.min_rate, 0, MAX_OFFERED_LOAD, low_open=True)
        media_speed(self.media)
        check_range("warmup_duration", self.warmup_duration, 0, MAX_TRIAL_DURATION)
        check_range("search_time_max", self.search_time_max, 0, MAX_SEARCH_TIME, low_open=True)
        # A ceiling of 0 or below marked every figure tester-bound ("LOWER BOUND"), its method line naming it.
        if self.tester_ceiling is not None:
            check_range("tester_ceiling", self.tester_ceiling, 0, low_open=True)


class _Measurer(AbstractMeasurer):
    """Our generator as the reference implementation's trial measurement provider."""

    def __init__(self, runner: TrialRunner, warmup: bool):
        self.runner = runner
        # The reference implementation's first call is the warm-up when it has one, whose result it discards.
        self.warmup = warmup
        self.searched: set[int] = set()  # ids of the trial results the search classified loads with
        self.warmup_result: int | None = None  # id of the warm-up's result, which the search discards

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        warmup, self.warmup = self.warmup, False
        result = self.runner.run(intended_load, intended_duration, "MLRsearch warm-up" if warmup else "MLRsearch")
        if not warmup:  # not a run TrialRunner repeated either: those the search never saw
            self.searched.add(id(result))
        else:
            self.warmup_result = id(result)
        directions = result.directions.values()
        sent = sum(d.frames_sent for d in directions)
        # Each direction's loss clamped at zero, as the trial's own loss ratio (DirectionResult.frames_lost): one
        # direction's frames received beyond those sent (copies a generator could not tell) must not offset
        # another's loss.
        lost = sum(max(0, d.frames_sent - d.frames_received) for d in directions)
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=sent,
            # An invalid trial (stretched: the tester did not offer the load; or with host backlog drops: the
            # host's loss; TrialRunner has run it again) fails every goal, as it fails the binary search.
            loss_count=sent if not result.valid else lost,
            # Frames the tester failed to send count as bad, never as the DUT's success.
            intended_count=sum(d.frames_intended for d in directions),
            offered_duration=effective_duration(result),
        )


def effective_duration(result: TrialResult) -> float:
    """The trial effective duration (draft-15 section 4.5.8) the search sums a trial's duration with: the longer of
    the trial duration and the sender's measured sending time (a stretched trial's is longer). Never shorter than
    intended: a paced sender that ends one frame interval early (59.99999 s of a 60 s trial) would otherwise never
    reach a goal's duration sum and the load would be measured again."""
    return max(result.spec.duration, *(d.send_duration for d in result.directions.values()))


@dataclass
class MlrResult:
    params: Params
    goals: list[dict]
    trials: int
    trial_seconds: float
    trial_log: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit
    deviations: list[str] = field(default_factory=list)  # where its trials fall short of RFC 2544 section 23's
    # Per goal figure, why it may be the tester's limit (headline_tester_bound: the trials bearing on its goal);
    # tester_bound_reasons: those of the trials bearing on any goal.
    headline_tester_bound: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "procedure": NAME,
            "method": METHOD,
            "goals": self.goals,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "trial_log": self.trial_log,
            "notes": self.notes,
            "deviations": self.deviations,
            **tester_bound_fields(self.tester_bound_reasons),
            "headline_tester_bound": self.headline_tester_bound,
            "params": asdict(self.params),
            "headline": {goal_figure(g["name"]): g["conditional_throughput"] for g in self.goals},
            # Beside each figure its goal's relevant bounds, fps per direction: the report must show the relevant
            # lower bound and should show the upper one (draft-15 section 4.8.4.1); summary.json and the report
            # carry them per repetition, marked irregular with the figure (headline_irregular).
            "headline_bounds": {
                goal_figure(g["name"]): dict(zip(FIGURE_BOUND_KEYS, (g["relevant_lower_bound"],
                                                                     g["relevant_upper_bound"]), strict=True))
                for g in self.goals},
            # A goal with no relevant lower bound above min_rate: its figure is known only to be below min_rate.
            "headline_below": {goal_figure(g["name"]): self.params.min_rate for g in self.goals
                               if g["below_minimum_load"]},
            # One with no relevant upper bound below the medium's limit: a lower bound (throughput's likewise).
            "headline_at_least": {goal_figure(g["name"]): g["conditional_throughput"] for g in self.goals
                                  if g.get("no_upper_bound")},
            # A figure from an irregular goal result, and why it is one (draft-15 section 4.8.4.2: marked as such).
            "headline_irregular": {goal_figure(g["name"]): g["irregular"] for g in self.goals
                                   if g.get("irregular") and g["conditional_throughput"] is not None},
        }


needs_tcp_endpoints = generator_traffic_only


def top_rate(params: Params, traffic: TrialSpec) -> float:
    """The search's top load (max_rate, or the media's limit at the largest frame size), above min_rate."""
    top = params.max_rate or float(max_frame_rate(media_speed(params.media), max(traffic.frame_size)))
    if top > MAX_OFFERED_LOAD:  # a media given in bit/s
        raise InvalidParameter("media", params.media, f"a medium of at most {MAX_OFFERED_LOAD:g} fps at "
                               f"{max(traffic.frame_size)} B, or a max_rate")
    if params.min_rate >= top:
        raise InvalidParameter("min_rate", params.min_rate, f"< max_rate ({top:.0f})")
    # The search offers loads from min_rate to top, each goal's trials lasting from its initial to its final trial
    # duration (the reference implementation's phases in between), and the warm-up runs at top: the shortest trial at
    # min_rate and the longest at top bound every trial's frames.
    goals = [search_goal(goal, i) for i, goal in enumerate(params.goals)]
    shortest = min(range(len(goals)), key=lambda i: goals[i].initial_trial_duration)
    longest = max(range(len(goals)), key=lambda i: goals[i].final_trial_duration)
    top_key = "max_rate" if params.max_rate else "media"
    check_trial_frames(f"min_rate x goals[{shortest}].initial_trial_duration", params.min_rate,
                       goals[shortest].initial_trial_duration)
    check_trial_frames(f"{top_key} x goals[{longest}].final_trial_duration", top, goals[longest].final_trial_duration)
    if params.warmup_duration:
        check_trial_frames(f"{top_key} x warmup_duration", top, params.warmup_duration)
    check_load_rounding(params.min_rate, top, tuple(sorted({goal.relative_width for goal in goals})))
    return top


class _RoundingTooLong(Exception):
    pass


@functools.cache
def check_load_rounding(min_load: float, max_load: float, widths: tuple) -> None:
    """The reference implementation's load rounding for these loads and goal widths ends (LOAD_ROUNDING_STEPS_MAX),
    else InvalidParameter naming the goals' widths. It is run here, its steps counted, as the search will run it."""
    code = LoadRounding._find_ints.__code__
    steps = 0

    def count(frame, event, arg):
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > LOAD_ROUNDING_STEPS_MAX:
                raise _RoundingTooLong
        return count

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: count if frame.f_code is code else None)
    try:
        LoadRounding(min_load, max_load, widths)
    except _RoundingTooLong:
        raise InvalidParameter("goals[*].relative_width", list(widths),
                               "widths the reference implementation can give one integer unit (its load rounding "
                               f"had found none after {LOAD_ROUNDING_STEPS_MAX:,} steps, and may search for ever): "
                               "fewer distinct widths, or closer ones") from None
    finally:
        sys.settrace(previous)


def check(plan) -> None:
    """A search range the traffic allows, whose trials carry 1..2^32 frames (every generator can run its trials: it
    sets no frame timeout)."""
    top_rate(plan.params, plan.traffic)


check_lab = no_lab_checks


def cost(params: Params, traffic: TrialSpec):
    try:
        found = simulated_cost(NAME, params, traffic, work_max=ESTIMATE_WORK_MAX // len(params.goals))
    except SimulationTooLong as exc:
        raise InvalidParameter("goals", f"{len(params.goals)} goals", (
            f"a search the lab time estimate can simulate against its {exc.capacities} DUT capacities within "
            f"{ESTIMATE_WORK_MAX:,} goals x loads scanned: fewer goals, a shorter duration_sum or a wider "
            "relative_width")) from None
    return dataclasses.replace(found, basis=f"{found.basis}; MLRsearch itself stops after search_time_max "
                                            f"{params.search_time_max:g} s")


def irregular(lower: float | None, upper: float | None, width: float, top: float, medium: float,
              out_of_time: float | None = None) -> str | None:
    """Why a goal result is irregular (draft-15 section 4.8.4), or None for a regular one: both relevant bounds, no
    farther apart than the goal width ((upper - lower) / upper, the reference implementation's relative width).
    out_of_time: the search_time_max that stopped the search (None: it ended by itself), when a missing bound says
    only that the search had not found it yet."""
    if lower is not None and upper is not None and upper - lower <= width * upper * (1 + 1e-9):
        return None  # the bounds are whole load steps: the tolerance covers float rounding only
    if out_of_time is not None:
        found = (f"relevant bounds {lower:{WHOLE}}-{upper:{WHOLE}} fps farther apart than the goal width {width:g}"
                 if lower is not None and upper is not None else
                 f"no relevant {'upper' if lower is not None else 'lower'} bound found yet")
        return f"search_time_max {out_of_time:g} s ran out: {found}"
    if lower is None:
        return "no relevant lower bound: min load is an upper bound"
    if upper is None:
        return ("no relevant upper bound: max load is a lower bound" + (" (the medium's limit)" if top >= medium else
                                                                        " (max_rate, below the medium's limit)"))
    # The reference implementation stops only when every goal met its width: unreachable unless out of time.
    return f"relevant bounds {lower:{WHOLE}}-{upper:{WHOLE}} fps farther apart than the goal width {width:g}"


def search(config: Config, measurer: _Measurer, goals: list[SearchGoal]) -> tuple[dict, bool]:
    """Each goal's result, and whether search_time_max stopped the search (its results then those it had)."""
    controller = MultipleLossRatioSearch(config=config)
    try:
        return controller.search(measurer=measurer, debug=lambda _: None), False
    except RuntimeError:
        # The reference implementation (1.2.1) raises when search_time_max runs out, its bounds so far kept in its
        # measurement database: take each goal's relevant bounds from there, as its search() would have.
        stop = getattr(controller, "stop_time", None)
        if stop is None or time.monotonic() < stop:
            raise  # another failure: not ours to read as results
        final = controller.scaling.goal_to_final_target
        return {goal: GoalResult.from_bounds(controller.database.get_relevant_bounds(target=final[goal]))
                for goal in goals}, True


def trial_entry(result: TrialResult, searched: bool) -> dict:
    """One trial as trial_log gives it: what a reader needs to classify the loads again (searched: the search
    classified loads with it, not the warm-up nor a run TrialRunner repeated; an invalid one, valid false, as all
    frames lost; effective_duration, what the search summed its duration as) and to tell which trials may be the
    tester's limit (stretched, stolen: the hypervisor's steal stretched it; host_drops and tester_drops in frames;
    tester_drops_unknown: the directions whose tester drops the generator could not read, which in a trial that
    lost frames may be the tester's loss)."""
    return {"offered_load": result.spec.offered_load, "duration": result.spec.duration,
            "effective_duration": effective_duration(result), "loss_ratio": result.loss_ratio,
            "stretched": result.stretched, "stolen": result.stolen, "host_drops": result.host_drops,
            "host_steal": result.host_steal, "tester_drops": result.tester_drops,
            "tester_drops_unknown": list(result.tester_drops_unknown), "valid": result.valid, "searched": searched}


def within_bounds(goal: dict, load: float) -> bool:
    """Whether `load` lies from the goal's relevant lower bound to its relevant upper bound (an end the goal lacks
    leaves that side open): the only loads whose class can move either bound. The relevant upper bound is the lowest
    load classified an upper bound, and the relevant lower bound the highest one classified a lower bound below it,
    whose trials' loss ratios also give the conditional throughput. Above the relevant upper bound a load's class
    moves neither; below the relevant lower bound the load is no upper bound (the relevant upper bound is the
    lowest), and being a lower bound or not it cannot raise a figure resting on a higher one. Loads and bounds are
    the same rounded loads: the tolerance covers float rounding only."""
    lower, upper = goal["relevant_lower_bound"], goal["relevant_upper_bound"]
    return (lower is None or load >= lower * (1 - 1e-9)) and (upper is None or load <= upper * (1 + 1e-9))


def tester_disturbed(trial: dict) -> bool:
    """Whether a logged trial's loss may be the tester's or the host's, not the DUT's: an invalid one (stretched,
    stolen, host or tester drops), which the search counted all frames lost, or one that lost frames with its tester
    drops unknown."""
    return not trial["valid"] or bool(trial["tester_drops_unknown"]) and trial["loss_ratio"] > 0


#: The classes of a load for a goal (draft-15's load classification).
UPPER_BOUND, LOWER_BOUND, UNDECIDED = "upper bound", "lower bound", "undecided"


def load_class(trials: list[tuple[float, float, float]], goal: dict) -> str:
    """A load's class for a goal from its trials, each (trial duration, trial effective duration, trial loss ratio),
    as draft-15 classifies it: a trial is high-loss above the goal loss ratio and full-length at the goal final
    trial duration or longer; the effective durations are summed per kind; the short high-loss sum in excess of
    the short low-loss sum times exceed ratio / (1 - exceed ratio) counts as full-length high-loss. The load is an
    upper bound when that high-loss sum exceeds the exceed ratio of the larger of the goal duration sum and all
    full-length sums (the optimistic exceed ratio), a lower bound when the high-loss sum with the duration still
    missing from the goal duration sum does not (the pessimistic one), else undecided. Written as the reference
    implementation compares them (products, not quotients), so that a load on the edge is classified as it was."""
    exceed, final, high_ratio = goal["exceed_ratio"], goal["final_trial_duration"], goal["loss_ratio"]
    long_high = long_low = short_high = short_low = 0.0
    for duration, effective, loss in trials:
        if duration >= final:
            long_high, long_low = (long_high + effective, long_low) if loss > high_ratio else (
                long_high, long_low + effective)
        else:
            short_high, short_low = (short_high + effective, short_low) if loss > high_ratio else (
                short_high, short_low + effective)
    high = long_high + max(0.0, short_high - short_low * exceed / (1.0 - exceed))
    whole = max(goal["duration_sum"], high + long_low)
    if high > whole * exceed:
        return UPPER_BOUND
    return LOWER_BOUND if whole - long_low <= whole * exceed else UNDECIDED


def quantile_loss(trials: list[tuple[float, float, float]], goal: dict) -> float:
    """The loss ratio a goal's conditional throughput takes at a load from its trials (as load_class's): the
    full-length trials by loss ratio, the one at which the subceed ratio (1 - exceed ratio) of the larger of the goal
    duration sum and their effective durations runs out; 1.0 when they run out first (the missing duration counted
    as all lost)."""
    full = sorted((loss, effective) for duration, effective, loss in trials if duration >= goal["final_trial_duration"])
    remaining = max(goal["duration_sum"], sum(effective for _, effective in full)) * (1.0 - goal["exceed_ratio"])
    found = None
    for loss, effective in full:
        if found is not None and remaining <= 0.0:
            break
        found, remaining = loss, remaining - effective
    return 1.0 if found is None or remaining > 0.0 else found


def bearing_loads(trial_log: list[dict], goal: dict) -> set[float]:
    """The loads whose tester-disturbed trials (tester_disturbed) bear on the goal's figure: within its relevant
    bounds (within_bounds), where reading those trials as the DUT's success (loss 0, the reading most in the DUT's
    favour: the search counted an invalid one all lost, one with tester drops unknown by its loss) gives the load
    another class (load_class), or, at the relevant lower bound, another loss ratio for the conditional throughput
    (quantile_loss). A load whose class its clean trials decide alone, e.g. an upper bound by their loss however the
    disturbed one is read, did not move on it. Every reading of the disturbed trials lies between the two compared
    (a trial read with less loss never makes a load more of an upper bound nor less of a lower one), so none else
    can give the load another class. The relevant lower bound is a lower bound read either way (it is one read as
    the search did, the least favourable reading): there the trials' loss ratios are what a disturbed one can
    move. Reading them as not run at all would miss some: four trials, three high-loss, one of them disturbed,
    exceed ratio 0.5, duration sum 2 s: an upper bound with it (3 of 4) and without it (2 of 3), not read as a
    success (2 of 4)."""
    return _loads_moved(trial_log, goal, tester_disturbed, 0.0)


def unread_lossless(trial: dict) -> bool:
    """Whether a logged trial is valid, lost no frame and had its tester drops unknown. Loss is frames intended minus
    frames received in time, and a frame the tester's receiver drops is one it did not receive: a tester drop only
    adds loss. With every intended frame received, the DUT forwarded every one whatever the tester dropped besides,
    so the unknown count hides no loss of the DUT's: the trial is the DUT's success however the count reads, and no
    figure is a lower bound by it."""
    return trial["valid"] and bool(trial["tester_drops_unknown"]) and trial["loss_ratio"] == 0


def resting_loads(trial_log: list[dict], goal: dict) -> set[float]:
    """The loads whose lossless trials with tester drops unknown (unread_lossless) the goal's result rests on: within
    its relevant bounds, where reading them as failed (all frames lost, as the search reads a trial whose tester drops
    were counted: invalid) gives the load another class, or, at the relevant lower bound, another loss ratio for the
    conditional throughput (bearing_loads' test, the other way round)."""
    return _loads_moved(trial_log, goal, unread_lossless, 1.0)


def _loads_moved(trial_log: list[dict], goal: dict, chosen: typing.Callable[[dict], bool], loss: float) -> set[float]:
    """The loads within the goal's relevant bounds whose searched trials `chosen` selects, read with this loss ratio
    instead of the searched one, give the load another class (load_class) or, at the relevant lower bound, another
    loss ratio for the conditional throughput (quantile_loss)."""
    by_load: dict[float, list[dict]] = {}
    for trial in trial_log:
        if trial["searched"]:  # the warm-up and runs repeated: the search classified no load with them
            by_load.setdefault(trial["offered_load"], []).append(trial)
    moved = set()
    for load, trials in by_load.items():
        if not within_bounds(goal, load) or not any(chosen(t) for t in trials):
            continue
        searched = [(t["duration"], t["effective_duration"], t["loss_ratio"] if t["valid"] else 1.0) for t in trials]
        other = [(duration, effective, loss if chosen(t) else was)
                 for (duration, effective, was), t in zip(searched, trials, strict=True)]
        lower = goal["relevant_lower_bound"]
        at_lower = lower is not None and abs(load - lower) <= lower * 1e-9
        if load_class(searched, goal) != load_class(other, goal) or at_lower and (
                quantile_loss(searched, goal) != quantile_loss(other, goal)):
            moved.add(load)
    return moved


#: What of a goal result is checked against the tester's ceiling, in a note's words: its figure, and the loads the
#: figure rests on (its relevant bounds), which the tester offered. A goal that tolerates loss has its figure below
#: its relevant lower bound by up to its loss ratio: at 10 %, a figure outside CEILING_MARGIN of a ceiling its loads
#: reached.
CEILING_CHECKS = (("conditional_throughput", "result"), ("relevant_lower_bound", "relevant lower bound"),
                  ("relevant_upper_bound", "relevant upper bound"))


def goal_ceiling_warning(goal: dict, ceiling: float | None) -> str | None:
    """The first of a goal result's CEILING_CHECKS near the tester's ceiling, as a note says it; None: none is."""
    return next((warning for key, what in CEILING_CHECKS if (warning := ceiling_warning(goal[key], ceiling, what))),
                None)


def bearing_reasons(trial_log: list[dict], goals: list[dict], ceiling: float | None) -> list[str]:
    """Why the figures of `goals` may be the tester's limit, counted from result.json's own trial_log and goals (and
    params.tester_ceiling), so that a reader can count them again: the reasons of the searched trials that may be
    the tester's at loads bearing on any of the goals (bearing_loads), and a figure or a load it rests on near the
    tester's ceiling (CEILING_CHECKS). The warm-up and the runs TrialRunner repeated bear on none: the search never
    classified a load with them."""
    loads = [bearing_loads(trial_log, goal) for goal in goals]
    bearing = [t for t in trial_log if t["searched"] and tester_disturbed(t)
               and any(t["offered_load"] in found for found in loads)]
    return trial_reasons(bearing, ceiling, *(goal[key] for goal in goals for key, _ in CEILING_CHECKS))


def trial_reasons(trials: list[dict], ceiling: float | None = None, *rates: float | None) -> list[str]:
    """The tester-bound reasons of these logged trials (and of `rates` near the tester's `ceiling`), in
    tester_limit_reasons' words."""
    return tester_limit_reasons(
        ceiling, *rates,
        stretched=sum(1 for t in trials if t["stretched"] and not t["stolen"]),
        steal=sum(t["host_steal"] for t in trials if t["stolen"]),
        tester_drops=sum(t["tester_drops"] for t in trials),
        tester_drops_unknown=sum(1 for t in trials if t["tester_drops_unknown"] and t["loss_ratio"] > 0),
        host_drops=sum(t["host_drops"] for t in trials))


def disturbed_notes(trial_log: list[dict], goals: list[dict], warmup: int | None) -> tuple[list[list[str]], list[str]]:
    """What the notes say of the trials that may be the tester's or the host's (tester_disturbed): per goal, those
    bearing on it (bearing_loads), in its own notes; result-wide, the searched ones bearing on no goal and a
    disturbed warm-up (`warmup`: its index in trial_log, None: none), whose loads no figure rests on."""
    per_goal, bearing = [], set()
    for goal in goals:
        loads = bearing_loads(trial_log, goal)
        found = [i for i, t in enumerate(trial_log) if t["searched"] and tester_disturbed(t)
                 and t["offered_load"] in loads]
        bearing.update(found)
        reasons = ", ".join(trial_reasons([trial_log[i] for i in found]))
        per_goal.append([] if not found else [
            f"{len(found)} trial(s) at {len(loads)} load(s) from its relevant lower to its relevant upper bound may be "
            f"the tester's or the host's ({reasons}): read as the DUT's success they would move its relevant bounds or "
            "its figure, so its figure may be a lower bound"])
    notes = []
    idle = [t for i, t in enumerate(trial_log) if t["searched"] and tester_disturbed(t) and i not in bearing]
    if idle:
        notes.append(f"{len(idle)} searched trial(s) may be the tester's or the host's "
                     f"({', '.join(trial_reasons(idle))}): they bear on no goal's figure (read as the DUT's success "
                     "they would move no goal's relevant bounds nor figure), so none is marked by them")
    if warmup is not None and tester_disturbed(trial_log[warmup]):
        notes.append("the warm-up trial may be the tester's or the host's "
                     f"({', '.join(trial_reasons([trial_log[warmup]]))}): the search discards it, and no figure rests "
                     "on it")
    return per_goal, notes


def unread_notes(trial_log: list[dict], goals: list[dict]) -> list[list[str]]:
    """Per goal, what its notes say of the lossless trials with tester drops unknown its result rests on
    (resting_loads): counted as the DUT's success, rightly (unread_lossless), so they mark no figure."""
    per_goal = []
    for goal in goals:
        loads = resting_loads(trial_log, goal)
        found = [t for t in trial_log if t["searched"] and unread_lossless(t) and t["offered_load"] in loads]
        per_goal.append([] if not found else [
            f"{len(found)} lossless trial(s) at {len(loads)} load(s) its relevant bounds or figure rest on had tester "
            "drops unknown (read as failed, as a trial with tester drops is, they would move them): every intended "
            "frame was received in time, so the unknown count hides no DUT loss (a tester drop only adds loss): they "
            "count as the DUT's success and do not mark its figure"])
    return per_goal


def headline_tester_bound(trial_log: list[dict], goals: list[dict], ceiling: float | None) -> dict[str, list[str]]:
    """Per goal figure (<name>_fps), why it may be the tester's limit: the reasons of the trials bearing on that
    goal alone (bearing_reasons)."""
    return {goal_figure(goal["name"]): bearing_reasons(trial_log, [goal], ceiling) for goal in goals}


def run(context: RunContext, params: Params) -> MlrResult:
    top = top_rate(params, context.traffic)
    runner = context.runner(NAME)
    goals = [search_goal(goal, i) for i, goal in enumerate(params.goals)]
    config = Config()
    config.goals = goals
    config.min_load = params.min_rate
    config.max_load = top
    config.search_duration_max = params.search_time_max
    config.warmup_duration = params.warmup_duration or None
    measurer = _Measurer(runner, bool(params.warmup_duration))
    found, out_of_time = search(config, measurer, goals)
    reported: list[dict] = []
    # The trials run again are the whole run's; what may be the tester's is said per goal it bears on, below.
    notes = runner.repeat_notes()
    if out_of_time:
        notes.append(f"search_time_max {params.search_time_max:g} s ran out: each goal's result is the bounds the "
                     "search had; an unfinished goal's is irregular")
    # A goal with no relevant upper bound met no load it fails up to the search's top: below the medium's own limit
    # (a max_rate under the DUT's figure) its conditional throughput is a lower bound, as throughput's
    # headline_at_least.
    medium = float(max_frame_rate(media_speed(params.media), max(context.traffic.frame_size)))
    for spec, goal in zip(params.goals, goals, strict=True):
        result = found[goal]
        lower, upper = result.relevant_lower_bound, result.relevant_upper_bound
        throughput = result.conditional_throughput
        entry = {
            **{k: spec.get(k, getattr(goal, k, None)) for k in GOAL_KEYS},
            **{k: getattr(goal, k) for k in IMPLEMENTATION_GOAL_KEYS},
            "relevant_lower_bound": float(lower) if lower else None,
            "relevant_upper_bound": float(upper) if upper else None,
            "conditional_throughput": float(throughput) if throughput is not None else None,
            # Out of time, only min load classified an upper bound says so: else no load was a lower bound yet.
            "below_minimum_load": lower is None and (not out_of_time or (
                upper is not None and float(upper) <= params.min_rate * (1 + 1e-9))),
            # Out of time, max load may be undecided: no load shown to pass up to it.
            "no_upper_bound": lower is not None and not upper and top < medium and not out_of_time,
        }
        entry["name"] = goal_name(spec, len(reported))
        entry["irregular"] = irregular(entry["relevant_lower_bound"], entry["relevant_upper_bound"],
                                       goal.relative_width, top, medium,
                                       params.search_time_max if out_of_time else None)
        entry["regular"] = entry["irregular"] is None
        entry["notes"] = goal_notes = []  # what the reader must know about this goal's result alone
        reported.append(entry)
        if entry["irregular"] and throughput is not None:
            goal_notes.append(f"irregular goal result ({entry['irregular']}): its figure is the conditional "
                              "throughput at the load it has for a relevant lower bound, not a regular result")
        if entry["below_minimum_load"]:
            goal_notes.append(f"no relevant lower bound above min_rate {params.min_rate:{WHOLE}} fps: below minimum "
                              "load")
        elif lower is None:
            goal_notes.append("no figure: no load classified a lower bound before search_time_max")
        elif warning := goal_ceiling_warning(entry, params.tester_ceiling):
            goal_notes.append(warning)
        if entry["no_upper_bound"]:
            goal_notes.append(f"no load up to max_rate {top:{WHOLE}} fps failed the goal: its figure is a lower bound")
    log = [trial_entry(r, id(r) in measurer.searched) for r in runner.log]
    # Each figure is marked by the trials bearing on its goal; the result by those bearing on any goal, each trial
    # counted once (a union of the goals' reasons would name host drops twice where their counts differ).
    headline_limits = headline_tester_bound(log, reported, params.tester_ceiling)
    limits = bearing_reasons(log, reported, params.tester_ceiling)
    warmup = next((i for i, r in enumerate(runner.log) if id(r) == measurer.warmup_result), None)
    per_goal, idle = disturbed_notes(log, reported, warmup)
    for entry, disturbed, unread in zip(reported, per_goal, unread_notes(log, reported), strict=True):
        entry["notes"].extend(disturbed + unread)
    notes.extend(idle)
    # A trial may deviate from RFC 2544 section 23's if the report says how (draft-15 section 4.4.3): its waits, and
    # what stands in place of phases a and b. The goals' trial durations are their own (and the method line's); the
    # RFC 2544 goal is the one that is 60 s.
    deviations = rfc2544_trial_deviations(context.traffic, None, context.generator)
    return MlrResult(params, reported, len(runner.log), runner.trial_seconds, log, notes, limits, deviations,
                     headline_limits)
