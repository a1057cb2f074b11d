"""How much lab time a campaign will take, before it starts, and its ETA refined while it runs.

A repetition's trial plan depends on the DUT (a binary search takes more steps for
some capacities than for others, MLRsearch stops early at the media limit), so the
plan is not guessed: each procedure runs, as it would in the lab, against the
simulated SUT (trexlab.generators.sim), whose trials take no wall time yet report
their declared durations. It runs once per DUT capacity of a grid spread evenly on a
log scale from half the search's minimum load to twice its maximum:

* worst case: the costliest capacity of the grid, those outside the search's range included;
* expected: the mean over the capacities inside the range, i.e. for a DUT whose capacity is
  anywhere in the range the spec declares, answering every trial alike (a noisy DUT can
  make a search longer; the ETA during the run is refined from the measured repetitions).

Lab time counts trial durations plus receive tails and restabilize waits, which the
simulated tester adds exactly as the lab's testers wait them. What no spec declares (DUT configuration
playbooks, a tester's start-up per trial) is left out of the estimate and shows in the
refined ETA. HTTP downloads and TCP tests run on the lab's endpoints, not on a
generator: their time comes from their declared durations and timeouts.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from contextvars import ContextVar
from dataclasses import dataclass

from trexlab.media import max_frame_rate, media_speed
from trexlab.plan.rate_from import GIVES_RATE, measured_in_campaign, split_rate_from
from trexlab.procedures.common import RunContext, SimulationTooLong
from trexlab.trial import MAX_FRAMES_PER_DIRECTION, Latency, TrialResult, TrialSpec

#: DUT capacities per decade of the grid; 8 puts neighbours 33 % apart, finer than any search's first steps.
GRID_PER_DECADE = 8
#: A placeholder rate for procedures that take theirs from the point's throughput (rate: {from: throughput}):
#: their trial plan (fixed durations) does not depend on it. High enough that the tags a latency spec asks for fit
#: in its frames after tag_delay (trexlab.procedures.latency.check_tag_window): a measured rate is checked when it
#: is measured, the placeholder must not refuse the estimate of a spec a real rate may run.
PLACEHOLDER_RATE = 1e7


#: The most lab time a campaign may plan, worst case (s): 30 days. Each value of a spec is bounded (sweep points,
#: repetitions, trial durations), their product is not: 1000 points of 1000 repetitions would hold a lab for longer
#: than it exists, and a campaign holds its lab throughout (the lab lock). The longest shipped experiment plans
#: 160 h (http-download-delay, every download timing out); a longer study is several campaigns.
CAMPAIGN_WORST_S_MAX = 30 * 86400


@dataclass(frozen=True)
class Cost:
    """One repetition's lab time (s) and trials, worst case and expected; None where not known in advance."""

    worst_s: float
    expected_s: float | None
    worst_trials: int | None
    expected_trials: float | None
    basis: str  # how it was found, in one line

    def __add__(self, other: Cost) -> Cost:
        def add(a, b):
            return None if a is None or b is None else a + b

        return Cost(self.worst_s + other.worst_s, add(self.expected_s, other.expected_s),
                    add(self.worst_trials, other.worst_trials), add(self.expected_trials, other.expected_trials),
                    f"{self.basis}; {other.basis}")


def _search_range(params, traffic: TrialSpec) -> tuple[float, float]:
    """The loads a procedure's trials can lie between, fps: (minimum, maximum)."""
    top = getattr(params, "max_rate", None) or getattr(params, "rate", None)
    if top is None:
        top = float(max_frame_rate(media_speed(getattr(params, "media", "10g")), max(traffic.frame_size)))
    bottom = getattr(params, "min_rate", None) or top
    return float(bottom), float(top)


def capacity_grid(low: float, high: float) -> list[float]:
    """DUT capacities from low / 2 to 2 * high, GRID_PER_DECADE per decade (log scale), ends included."""
    first, last = math.log10(low / 2), math.log10(high * 2)
    steps = max(2, math.ceil((last - first) * GRID_PER_DECADE))
    return [10 ** (first + (last - first) * i / steps) for i in range(steps + 1)]


class _PlanLatency(Latency):
    """A delay distribution whose percentiles are all 0 s: a trial plan never depends on them, and ranking a real
    histogram (hdrh's iterator) costs a tenth of a second per call, too slow for a dry run over a grid."""

    def percentiles(self, qs) -> list[float]:
        return [0.0 for _ in qs]

    def median(self) -> float:
        return 0.0


#: A simulated trial's own work (the simulated tester's, and a search's bookkeeping of it), in loads scanned: measured
#: here, a trial cost about as much CPU as scanning 30 to 40 loads of MLRsearch's measurement database.
TRIAL_WORK = 32


#: The most simulated work (_SimulationBudget's units) one campaign's estimate may do over all its sweep points: a
#: procedure bounds one point's (mlrsearch.ESTIMATE_WORK_MAX), this their sum, which up to 1000 points of different
#: traffic would multiply (1000 points of MLRsearch goals just inside their own bound: about 80 min of a dry run).
#: Measured here: the shipped campaigns at most 66,744 (siitperf-frame-sizes); 1000 frame sizes of the default
#: MLRsearch goals about 19 M (110 s), of throughput 41 s; at 1 to 6 us a unit, a dry run of at most a few minutes.
CAMPAIGN_WORK_MAX = 30_000_000
#: The work the campaign being planned (plan()) may still simulate; None outside plan().
_campaign_work_left: ContextVar[list[int] | None] = ContextVar("campaign_work_left", default=None)


class CampaignEstimateTooLong(Exception):
    """The estimate of a campaign's sweep points together simulated more than CAMPAIGN_WORK_MAX."""


class _SimulationBudget:
    """The work a simulation may still do over the whole capacity grid (None: no bound), in loads scanned: each trial
    costs TRIAL_WORK plus the distinct loads its run has tried so far (a search such as MLRsearch's scans them after
    every trial), so both many trials at few loads and many loads count."""

    def __init__(self, work_max: int | None, capacities: int):
        self.work_max, self.capacities, self.work = work_max, capacities, 0
        self.loads: set[float] = set()

    def new_run(self) -> None:
        self.loads = set()

    def spend(self, load: float) -> None:
        self.loads.add(load)
        work = TRIAL_WORK + len(self.loads)
        self.work += work
        campaign = _campaign_work_left.get()
        if campaign is not None:
            campaign[0] -= work
            if campaign[0] < 0:
                raise CampaignEstimateTooLong
        if self.work_max is not None and self.work > self.work_max:
            raise SimulationTooLong(self.work_max, self.capacities)


def _planning_generator(capacity: float, budget: _SimulationBudget):
    """The simulated SUT of one grid capacity, its latencies reduced to _PlanLatency, each trial spent from budget."""
    from trexlab.generators.sim import SimGenerator, SimulatedSUT

    class PlanGenerator(SimGenerator):
        def run_trial(self, spec: TrialSpec) -> TrialResult:
            budget.spend(spec.offered_load)
            result = super().run_trial(spec)
            return dataclasses.replace(result, directions={
                name: d if d.latency is None else dataclasses.replace(d, latency=_PlanLatency(
                    d.latency.histogram, d.latency.unit, d.latency.lost_or_late, d.latency.timeout))
                for name, d in result.directions.items()})

    return PlanGenerator(SimulatedSUT(capacity=capacity))


def _simulate(module, params, traffic: TrialSpec, capacity: float, budget: _SimulationBudget) -> tuple[float, int]:
    """(lab seconds, trials) of one run of a procedure against a simulated SUT of this capacity."""
    budget.new_run()
    generator = _planning_generator(capacity, budget)
    module.run(RunContext(generator, traffic), params)
    return generator.simulated_time, generator.trials


def simulated_cost(name: str, params, traffic: TrialSpec, work_max: int | None = None) -> Cost:
    """A trial-based procedure's cost over the capacity grid (see the module's doc); SimulationTooLong beyond
    work_max (_SimulationBudget) over the whole grid: a procedure whose parameters can make its simulation long
    bounds it."""
    from trexlab.procedures import procedure

    module = procedure(name)
    low, high = _search_range(params, traffic)
    # A procedure at a given rate (latency, PDV) runs the same trials whatever the DUT: one capacity will do.
    grid = [high] if getattr(params, "rate", None) is not None else capacity_grid(low, high)
    budget = _SimulationBudget(work_max, len(grid))
    runs = [(capacity, *_simulate(module, params, traffic, capacity, budget)) for capacity in grid]
    inside = [(s, n) for c, s, n in runs if low <= c <= high] or [(s, n) for _, s, n in runs]
    worst = max(runs, key=lambda r: r[1])
    if len(runs) == 1:
        basis = f"{name}: its trials at the given rate, whatever the DUT"
    else:
        basis = (f"{name}: simulated against {len(runs)} DUT capacities {low / 2:.4g}..{high * 2:.4g} fps "
                 f"(expected: mean over the {len(inside)} within {low:.4g}..{high:.4g} fps)")
    return Cost(worst[1], sum(s for s, _ in inside) / len(inside), worst[2],
                sum(n for _, n in inside) / len(inside), basis)


def repetition_cost(name: str, raw_params: dict, traffic: dict) -> Cost:
    """One repetition of a sweep point: its procedure, and the throughput it takes its rate from (if it does)."""
    from trexlab.procedures import procedure
    from trexlab.spec.experiment import procedure_params_class

    template = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, **(traffic or {})})
    raw, rate_from = split_rate_from(raw_params or {})
    if rate_from is not None:
        # At most as many frames per trial as a tester numbers: 3600 s latency trials at the placeholder were refused
        # (above 2^32 frames), and with them the estimate of a spec whose measured rate is checked when measured.
        duration = float(raw.get("trial_duration", getattr(procedure_params_class(name), "trial_duration", 1.0)))
        raw = {**raw, "rate": min(PLACEHOLDER_RATE, MAX_FRAMES_PER_DIRECTION / duration)}
    params = procedure_params_class(name)(**{**raw, **({"goals": tuple(raw["goals"])} if "goals" in raw else {})})
    cost = procedure(name).cost(params, template)
    # The search a point runs for its rate; a stored campaign's rate (rate.campaign) costs no lab time here.
    if rate_from is not None and measured_in_campaign(rate_from):
        cost = repetition_cost(GIVES_RATE, rate_from["params"], traffic) + cost
    return cost


#: Traffic fields no repetition's cost depends on (tests/test_estimate.py holds them to that).
COST_FREE_TRAFFIC = ("destination_networks",)


@dataclass(frozen=True)
class PointPlan:
    point_id: str
    values: dict
    repetitions: int  # the most it may run (adaptive repetitions: their max)
    min_repetitions: int  # the fewest (fixed: the same)
    cost: Cost  # of one repetition

    @property
    def worst_s(self) -> float:
        return self.repetitions * self.cost.worst_s

    @property
    def expected_s(self) -> float | None:
        return None if self.cost.expected_s is None else self.repetitions * self.cost.expected_s


def plan(experiment) -> list[PointPlan]:
    """Every sweep point of an (already validated) experiment with its repetitions and the cost of one."""
    from trexlab.plan.adaptive import repetition_rule

    rule = repetition_rule(experiment.spec)
    cache: dict[str, Cost] = {}
    plans: list[PointPlan] = []
    points = experiment.points()
    token = _campaign_work_left.set([CAMPAIGN_WORK_MAX])
    try:
        _plan_points(points, rule, cache, plans)
    except CampaignEstimateTooLong:
        from trexlab.spec.experiment import InvalidExperiment

        raise InvalidExperiment(
            f"{experiment.path or experiment.name}: sweep ({len(points)} point(s)): estimating their lab time "
            f"simulated more than {CAMPAIGN_WORK_MAX:,} units of work by point {len(plans) + 1}: at most that per "
            "campaign; fewer points of different traffic or procedure.params, or split it into campaigns") from None
    finally:
        _campaign_work_left.reset(token)
    return plans


def _plan_points(points, rule, cache: dict, plans: list) -> None:
    """plan()'s loop: each point's PointPlan appended to plans."""
    for point in points:
        procedure = point.spec["procedure"]
        # Keyed by what a repetition's cost can depend on: no procedure nor the simulated tester reads the number of
        # destination networks, so a sweep over it (siitperf's 1..256) is estimated once, not once per point (256
        # points of throughput took 46 s of a dry run, 1000 of MLRsearch's 1000-trial goals hours).
        traffic = {k: v for k, v in (point.spec.get("traffic") or {}).items() if k not in COST_FREE_TRAFFIC}
        key = json.dumps([procedure, traffic], sort_keys=True, default=str)
        if key not in cache:
            cache[key] = repetition_cost(procedure["name"], procedure.get("params") or {}, point.spec.get("traffic"))
        plans.append(PointPlan(point.point_id, point.values, rule.maximum, rule.minimum, cache[key]))


def check_length(experiment, plans: list[PointPlan]) -> None:
    """Refuse a campaign that plans more than CAMPAIGN_WORST_S_MAX of lab time, worst case (InvalidExperiment,
    one line naming the keys whose product it is), before anything runs."""
    from trexlab.spec.experiment import InvalidExperiment

    worst = sum(p.worst_s for p in plans)
    if worst <= CAMPAIGN_WORST_S_MAX:
        return
    longest = max(plans, key=lambda p: p.cost.worst_s)
    raise InvalidExperiment(
        f"{experiment.path or experiment.name}: sweep ({len(plans)} point(s)) x repetitions "
        f"({max(p.repetitions for p in plans)}) x the trials of procedure.params (up to {hours(longest.cost.worst_s)} "
        f"per repetition) plan {hours(worst)} of lab time, worst case: at most {hours(CAMPAIGN_WORST_S_MAX)} "
        "(30 days) per campaign; split it into campaigns")


def checked_plan(experiment) -> list[PointPlan]:
    """plan(experiment), its length checked (check_length): the dry run's and the campaign's one check. An estimate
    that cannot be made is a refusal naming why (InvalidExperiment), not a campaign run with its length unchecked."""
    from trexlab.params import InvalidParameter
    from trexlab.spec.experiment import InvalidExperiment

    try:
        plans = plan(experiment)
    except (InvalidParameter, InvalidExperiment, ValueError) as exc:
        raise InvalidExperiment(
            f"{experiment.path or experiment.name}: no lab time estimate ({exc}): a campaign's length, at most "
            f"{hours(CAMPAIGN_WORST_S_MAX)} (30 days) of lab time worst case, is checked from it") from None
    check_length(experiment, plans)
    return plans


def hours(seconds: float | None) -> str:
    """A duration for people: s, min or h."""
    if seconds is None:
        return "not known"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def plan_lines(experiment, plans: list[PointPlan]) -> list[str]:
    """The dry run's report: points, repetitions and lab time, with how it was estimated."""
    from trexlab.plan.adaptive import repetition_rule

    rule = repetition_rule(experiment.spec)
    lines = [f"experiment {experiment.name}: {len(plans)} point(s), {rule.describe()} each, procedure "
             f"{experiment.spec['procedure']['name']}, generator {experiment.generator}"]
    for k, p in enumerate(plans, start=1):
        c = p.cost
        trials = "" if c.worst_trials is None else (f", {c.worst_trials} trials worst / "
                                                    f"{c.expected_trials:.1f} expected")
        lines.append(f"point {k}/{len(plans)} {p.point_id}: per repetition {hours(c.worst_s)} worst, "
                     f"{hours(c.expected_s)} expected{trials}")
    worst = sum(p.worst_s for p in plans)
    known = [p.expected_s for p in plans if p.expected_s is not None]
    expected = sum(known) if len(known) == len(plans) else None
    lines.append(f"lab time: worst case {hours(worst)}, expected {hours(expected)} "
                 f"({sum(p.repetitions for p in plans)} repetitions)")
    if rule.adaptive:
        fewest = sum(p.min_repetitions * (p.cost.expected_s or p.cost.worst_s) for p in plans)
        lines.append(f"  adaptive repetitions: as little as {hours(fewest)} if every point stops at "
                     f"{rule.minimum} repetitions")
    lines.append(order_line(experiment, len(plans), rule.maximum))
    lines.append("  counted: trial durations and receive tails; not counted: DUT configuration playbooks and "
                 "tester start-up (the ETA during the run is refined from the measured repetitions)")
    for basis in dict.fromkeys(p.cost.basis for p in plans):
        lines.append(f"  how: {basis}")
    return lines


def order_line(experiment, points: int, repetitions: int) -> str:
    """The campaign's order of repetitions (trexlab.plan.campaign) and the visits of the points it makes: each visit
    applies the point's DUT configuration (where the spec has one), a playbook run the estimate does not count."""
    if experiment.order != "interleaved":
        return f"  order: sequential, one visit of each point ({points} visit(s), a DUT configuration each)"
    per_round = experiment.repetitions_per_round
    rounds = -(-repetitions // per_round)
    # The throughput runs a rate comes from run in rounds of their own first.
    stages = 2 if measured_in_campaign(split_rate_from(experiment.spec["procedure"].get("params") or {})[1]) else 1
    return (f"  order: interleaved, {per_round} repetition(s) of each point per round: up to {stages * rounds} "
            f"round(s), {stages * rounds * points} visit(s) of the points, a DUT configuration each (sequential: "
            f"{points})")


class Eta:
    """The campaign's remaining time: the estimate, scaled by how long the finished repetitions really took.

    Before any repetition ends it is the estimate itself (expected, else worst case); afterwards each
    remaining repetition costs its estimate times measured / estimated over those already run here."""

    def __init__(self, plans: list[PointPlan]):
        self.remaining = {p.point_id: p.repetitions for p in plans}
        self.cost = {p.point_id: p.cost.expected_s or p.cost.worst_s for p in plans}
        self.measured_s = 0.0
        self.estimated_s = 0.0
        self._started: tuple[str, float] | None = None

    def repetition_started(self, point_id: str) -> None:
        self._finish(time.monotonic())
        self._started = (point_id, time.monotonic())

    def repetition_skipped(self, point_id: str) -> None:
        self.remaining[point_id] = max(0, self.remaining.get(point_id, 0) - 1)

    def point_finished(self, point_id: str) -> None:
        """The point ended (its last repetition with it); an adaptive one may leave repetitions unused."""
        self._finish(time.monotonic())
        self.remaining[point_id] = 0

    def _finish(self, now: float) -> None:
        if self._started is None:
            return
        point_id, start = self._started
        self._started = None
        self.measured_s += now - start
        self.estimated_s += self.cost.get(point_id, 0.0)
        self.remaining[point_id] = max(0, self.remaining.get(point_id, 0) - 1)

    @property
    def factor(self) -> float:
        """Measured / estimated lab time so far (1 before any repetition ended)."""
        return self.measured_s / self.estimated_s if self.estimated_s > 0 and self.measured_s > 0 else 1.0

    def seconds(self) -> float:
        return self.factor * sum(n * self.cost.get(pid, 0.0) for pid, n in self.remaining.items())

    def text(self) -> str:
        basis = "estimate" if self.estimated_s == 0 else f"measured {self.factor:.2f} x estimate"
        return f", ETA {hours(self.seconds())} ({basis})"
