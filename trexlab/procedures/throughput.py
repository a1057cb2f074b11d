"""RFC 2544 section 26.1 throughput: the highest offered load at which the DUT forwards every frame.

A binary search between a minimum and a maximum rate with fixed-duration
trials. Two weaknesses the seed papers point out are handled openly rather
than hidden: the loss tolerance (0 = RFC 2544's zero-loss criterion) is a
parameter and is always written into the result, and a per-frame timeout can
turn frames that arrive too late into loss (RFC 2544 has none, so a DUT may
hold frames for seconds and still pass).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from trexlab.media import max_frame_rate, media_speed
from trexlab.params import InvalidParameter, check_range
from trexlab.procedures.common import (
    FRAME_TIMEOUT_FIELD,
    MAX_RATE_FIELD,
    MEDIA_FIELD,
    TESTER_CEILING_FIELD,
    RunContext,
    ceiling_warning,
    check_plan_frame_timeout,
    frame_timeout_override,
    generator_traffic_only,
    no_lab_checks,
    rfc2544_deviations,
    simulated_cost_of,
    tester_bound_fields,
    trial_duration_field,
)
from trexlab.results.stats import WHOLE
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_TIMEOUT,
    MAX_OFFERED_LOAD,
    MAX_TRIAL_DURATION,
    RFC2544_TRIAL_DURATION,
    TrialSpec,
    check_trial_frames,
    tolerance_ratio,
)

NAME = "throughput"
TAKES_RATE = False
METHOD = "RFC 2544 section 26.1 throughput, binary search"
#: The default stopping rule: the interval is narrower than this share of the rate found.
DEFAULT_RESOLUTION_PERCENT = 0.5
#: The finest resolutions a search may stop at (see Params.__post_init__).
MIN_RESOLUTION_FPS = 1e-3
MIN_RESOLUTION_PERCENT = 1e-6


@dataclass(frozen=True)
class Params:
    max_rate: float | None = field(default=None, metadata=MAX_RATE_FIELD)
    min_rate: float = field(default=100.0, metadata=doc(
        "frames/s per direction, the search's lower end (below max_rate): a DUT failing it has no throughput "
        "figure, reported as below min_rate", exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    initial_rate: float | None = field(default=None, metadata=doc(
        "frames/s per direction of the first trial, from min_rate to max_rate; none: max_rate",
        exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    resolution: float | None = field(default=None, metadata=doc(
        "frames/s: the search stops when the rate found and the lowest failed rate are this close; none: "
        "resolution_percent", minimum=MIN_RESOLUTION_FPS))
    # With no absolute resolution, the search stops when the interval is narrower than this share of the rate
    # found (its lower end), so a 20 kfps DUT is measured as closely as a 10 Mfps one.
    resolution_percent: float = field(default=DEFAULT_RESOLUTION_PERCENT, metadata=doc(
        "% of the rate found: the search stops when the interval is narrower (when no resolution is given)",
        minimum=MIN_RESOLUTION_PERCENT, maximum=100))
    loss_tolerance_percent: float = field(default=0.0, metadata=doc(
        "% of the frames sent that a trial may lose and still pass (RFC 2544: 0; Lencse & Szilagyi 2024 used "
        "0.01); disclosed with every result", minimum=0, maximum=100))
    trial_duration: float = field(default=RFC2544_TRIAL_DURATION, metadata=trial_duration_field(
        f"RFC 2544 section 24: at least {RFC2544_TRIAL_DURATION:g} s"))
    frame_timeout: float | None = field(default=None, metadata=FRAME_TIMEOUT_FIELD)
    media: str = field(default="10g", metadata=MEDIA_FIELD)
    tester_ceiling: float | None = field(default=None, metadata=TESTER_CEILING_FIELD)
    # Repeated runs (trexlab.plan.adaptive): start each repetition after the first from bounds near the median of
    # those before it, rather than from the whole range (disclosed: start_bounds in each result's params).
    warm_start: bool = field(default=False, metadata=doc(
        "start each repetition after the first from bounds near the earlier ones' median, each verified by a "
        "full trial (disclosed as start_bounds)"))
    start_bounds: tuple[float, float] | None = field(default=None, metadata=doc(
        "[low, high] frames/s with 0 < low < high the search starts from: verified first, widened when they "
        "fail (warm_start sets them)"))

    def __post_init__(self) -> None:
        if self.max_rate is not None:
            check_range("max_rate", self.max_rate, 0, MAX_OFFERED_LOAD, low_open=True)
        check_range("min_rate", self.min_rate, 0, MAX_OFFERED_LOAD, low_open=True)
        if self.max_rate is not None and self.min_rate >= self.max_rate:
            raise InvalidParameter("min_rate", self.min_rate, f"< max_rate ({self.max_rate})")
        if self.initial_rate is not None:
            # Without a max_rate the media's rate is the top, known only with the traffic: bounded here by the most
            # any trial may offer, so that 1e12 is refused with the spec, naming initial_rate, not at the first trial.
            check_range("initial_rate", self.initial_rate, self.min_rate, self.max_rate or MAX_OFFERED_LOAD)
        # Floors: below them the search's float midpoints stop moving before the interval is that narrow, and the
        # search would go on for ever (a resolution of 1e-300 did); no trial tells such rates apart anyway.
        if self.resolution is not None:
            check_range("resolution", self.resolution, MIN_RESOLUTION_FPS)
        check_range("resolution_percent", self.resolution_percent, MIN_RESOLUTION_PERCENT, 100)
        check_range("loss_tolerance_percent", self.loss_tolerance_percent, 0, 100)
        check_range("trial_duration", self.trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, MAX_FRAME_TIMEOUT, low_open=True)
        media_speed(self.media)
        if self.tester_ceiling is not None:
            check_range("tester_ceiling", self.tester_ceiling, 0, low_open=True)
        if self.start_bounds is not None:
            if len(self.start_bounds) != 2 or not 0 < self.start_bounds[0] < self.start_bounds[1]:
                raise InvalidParameter("start_bounds", self.start_bounds, "(low, high) fps with 0 < low < high")

    def rate_limits(self, traffic: TrialSpec) -> tuple[float, float, float]:
        """(min, max, initial) in fps for this traffic."""
        top = self.max_rate or float(max_frame_rate(media_speed(self.media), max(traffic.frame_size)))
        if top > MAX_OFFERED_LOAD:  # a media given in bit/s
            raise InvalidParameter("media", self.media, f"a medium of at most {MAX_OFFERED_LOAD:g} fps at "
                                   f"{max(traffic.frame_size)} B, or a max_rate")
        if self.min_rate >= top:
            raise InvalidParameter("min_rate", self.min_rate, f"< max_rate ({top:.0f})")
        # Every load the search offers lies between the two: both ends' trials carry 1..2^32 frames.
        check_trial_frames("min_rate x trial_duration", self.min_rate, self.trial_duration)
        check_trial_frames(f"{'max_rate' if self.max_rate else 'media'} x trial_duration", top, self.trial_duration)
        return (self.min_rate, top, self.initial_rate or top)

    def narrow_enough(self, low: float, high: float) -> bool:
        """Whether the search may stop with the rate found `low` and the lowest failed rate `high`."""
        if self.resolution is not None:
            return high - low <= self.resolution
        return high - low <= low * self.resolution_percent / 100

    def stopping_rule(self) -> str:
        """The resolution as the summary discloses it."""
        if self.resolution is not None:
            return f"{self.resolution:g} fps"
        return f"{self.resolution_percent:g} % of the rate found"


@dataclass
class ThroughputResult:
    throughput: float | None  # fps per direction; None: not even min_rate passed
    below_minimum: bool
    params: Params
    max_rate: float
    width: float  # fps: the final interval between the rate found and the lowest failed rate (0: max passed)
    trials: int
    trial_seconds: float
    search: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit
    deviations: list[str] = field(default_factory=list)  # what falls short of RFC 2544's durations
    # No trial failed and the rate found is below the medium's limit: the search never met the DUT's throughput,
    # which is at least this (a max_rate below what the DUT forwards).
    at_least: bool = False

    def to_dict(self) -> dict:
        return {
            "procedure": NAME,
            "method": METHOD,
            "deviations": self.deviations,
            "throughput_fps": self.throughput,
            "below_minimum_load": self.below_minimum,
            "loss_tolerance_percent": self.params.loss_tolerance_percent,
            "trial_duration": self.params.trial_duration,
            "frame_timeout": self.params.frame_timeout,
            "max_rate": self.max_rate,
            "resolution": self.params.resolution,
            "resolution_percent": None if self.params.resolution is not None else self.params.resolution_percent,
            "stopping_rule": self.params.stopping_rule(),
            "warm_start": self.params.warm_start,
            "final_width_fps": self.width,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "search": self.search,
            "notes": self.notes,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            "headline": {HEADLINE: self.throughput},
            # A search that ended below the minimum load still observed something: the figure is below min_rate.
            "headline_below": {HEADLINE: self.params.min_rate} if self.below_minimum else {},
            # One in which no trial failed observed no limit: the figure is a lower bound of the DUT's.
            "headline_at_least": {HEADLINE: self.throughput} if self.at_least else {},
        }


# The trial procedures' shared members (trexlab.procedures.common).
needs_tcp_endpoints = generator_traffic_only

#: The one headline figure: the RFC 2544 throughput, frames/s.
HEADLINE = "throughput_fps"


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run reports."""
    return (HEADLINE,)


def check(plan) -> None:
    """A frame timeout the generator can keep, and a search range the traffic allows (min_rate below the media's
    top rate at the largest frame size; trials of 1..2^32 frames from one end to the other)."""
    check_plan_frame_timeout(plan)
    plan.params.rate_limits(plan.traffic)


check_lab = no_lab_checks
cost = simulated_cost_of(NAME)


def run(context: RunContext, params: Params) -> ThroughputResult:
    low, high, rate = params.rate_limits(context.traffic)
    top = high
    tolerance = tolerance_ratio(params.loss_tolerance_percent)
    runner = context.runner(NAME)
    extra = frame_timeout_override(params.frame_timeout)
    best = None
    search: list[dict] = []

    def trial(load: float, phase: str) -> bool:
        result = runner.run(load, params.trial_duration, phase, **extra)
        passed = result.passes(tolerance) and result.valid
        search.append({"offered_load": load, "loss_ratio": result.loss_ratio, "passed": passed,
                       "stretched": result.stretched, "host_drops": result.host_drops,
                       "tester_drops": result.tester_drops, "tester_drops_unknown": list(result.tester_drops_unknown),
                       "host_steal": result.host_steal, "stolen": result.stolen})
        return passed

    if params.start_bounds is not None:
        best, low, high, done = warm_start(params, params.start_bounds, trial, low, high)
        rate = (low + high) / 2
    else:
        done = False
    while not done:
        if trial(rate, "binary search"):
            best, low = rate, rate
        else:
            high = rate
        if best == high or params.narrow_enough(low, high):
            break
        rate = (low + high) / 2
    below_minimum = False
    if best is None:
        # Nothing passed: the search never tried the minimum itself.
        if trial(params.min_rate, "minimum load check"):
            best = params.min_rate
        else:
            below_minimum = True
    # An invalid trial (stretched, or with host backlog or tester drops) counts as failed; it holds the result down
    # unless the DUT failed a lower load in a valid trial: a DUT that loses frames at a lower load loses them at this
    # one too, so its verdict stands. A failed trial whose tester drops are unknown is not surely the DUT's failure.
    own_failure = min((t["offered_load"] for t in search if not t["passed"] and not (
                           t["stretched"] or t["host_drops"] or t["tester_drops"] or t["tester_drops_unknown"])),
                      default=float("inf"))
    bearing = sum(1 for t in search if t["stretched"] and not t["stolen"] and t["offered_load"] < own_failure)
    steal_bearing = sum(t["host_steal"] for t in search if t["stolen"] and t["offered_load"] < own_failure)
    host_bearing = int(sum(t["host_drops"] for t in search if t["offered_load"] < own_failure))
    tester_bearing = int(sum(t["tester_drops"] for t in search if t["offered_load"] < own_failure))
    unknown_bearing = sum(1 for t in search
                          if t["tester_drops_unknown"] and not t["passed"] and t["offered_load"] < own_failure)
    notes = runner.notes(bearing)
    if below_minimum:
        notes.append(f"no load passed, not even min_rate {params.min_rate:{WHOLE}} fps: throughput below minimum load")
    if warning := ceiling_warning(best, params.tester_ceiling):
        notes.append(warning)
    # Every trial passed, below the medium's own limit (a max_rate under what the DUT forwards): the search found
    # no load the DUT fails, so its throughput is at least the rate found, not that rate (RFC 2544's throughput is
    # the highest rate without loss, and a higher one was never offered).
    medium = float(max_frame_rate(media_speed(params.media), max(context.traffic.frame_size)))
    at_least = best is not None and all(t["passed"] for t in search) and best < medium
    if at_least:
        notes.append(f"no trial failed: the DUT forwarded every load offered, up to {best:{WHOLE}} fps (max_rate "
                     f"{top:.0f}): its throughput is at least that")
    return ThroughputResult(best, below_minimum, params, top, high - low, len(runner.log), runner.trial_seconds,
                            search, notes,
                            runner.tester_limits(params.tester_ceiling, best, stretched_bearing=bearing,
                                                 host_drops_bearing=host_bearing, steal_bearing=steal_bearing,
                                                 tester_drops_bearing=tester_bearing,
                                                 tester_drops_unknown_bearing=unknown_bearing),
                            rfc2544_deviations(params.trial_duration, context.traffic, params.frame_timeout,
                                               context.generator),
                            at_least)


def warm_start(params: Params, bounds: tuple[float, float], trial, low: float,
               high: float) -> tuple[float | None, float, float, bool]:
    """Verify the start bounds (params.start_bounds) with full-duration trials, widening one that does not hold
    (its distance doubled each time, up to the range's end); return (best, low, high, done) for the bisection
    that follows."""
    start_low = min(max(bounds[0], low), high)
    start_high = min(max(bounds[1], start_low), high)
    best = None
    step = max(start_high - start_low, 1.0)
    rate = start_high
    while True:  # the upper bound: fails, or is widened upwards until one fails or the maximum passes
        if not trial(rate, "warm start: upper bound"):
            high = rate
            break
        best = low = rate
        if rate >= high:
            return best, low, high, True  # the maximum passed
        rate, step = min(high, rate + step), step * 2
    if best is None:
        step = max(start_high - start_low, 1.0)
        rate = start_low if low < start_low < high else (low + high) / 2
        while True:  # the lower bound: passes, or is widened downwards (never past half way to the minimum)
            if trial(rate, "warm start: lower bound"):
                best = low = rate
                break
            high = rate
            if params.narrow_enough(low, high):
                return None, low, high, True  # nothing passed: the minimum-load check follows, as after a bisection
            rate, step = max(rate - step, (low + rate) / 2), step * 2
    return best, low, high, params.narrow_enough(low, high)
