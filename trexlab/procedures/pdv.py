"""RFC 8219 section 7.3 packet delay variation.

Every frame is timestamped; PDV = 99.9th percentile - minimum of the one-way
delays of a direction (RFC 5481's PDV form, as RFC 8219 prescribes), both from
the direction's HDR histogram of every received frame's delay (nearest rank,
trexlab.trial.Latency.percentile: the 99.9th percentile its bucket's upper edge, the minimum its
bucket's lower edge, so PDV is an upper bound, over by up to the two buckets' widths, and a note says so
when the bucket is a large part of it: pdv_resolution_note). A frame lost or later than the frame timeout counts as
an infinite delay: when more than 0.1 % of the frames are lost or late, the
99.9th percentile lies among them and PDV is reported as "> <timeout - min>
(lost frames)", never as a number some received frame gave. When every frame is
lost or late there is no minimum either (inf - inf): the direction says so, and
its headline is +infinity as any PDV among lost frames (a summary over
repetitions shows "> timeout (lost)"), never a missing value that would leave
the repetition out of the median.

At the throughput rate (no default rate: give ``rate``, ``--rate-from`` a
throughput result, or ``rate: {from: throughput}`` in an experiment), 120 s by
default. Every frame from t = 0 is measured (the trial contract's
latency_mode "all").

IPDV (RFC 5481's difference between consecutive frames' delays) is not
offered: RFC 8219 section 7.3 recommends PDV and makes IPDV optional (it MAY be
measured for specific use cases, section 7.3.2), and a histogram keeps no order.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from trexlab.params import check_range
from trexlab.procedures.common import (
    FLOOR_MEDIAN_FIELD,
    FLOOR_P99_9_FIELD,
    RATE_FIELD,
    TESTER_CEILING_FIELD,
    RunContext,
    ceiling_warning,
    check_plan_frame_timeout,
    coarse_delay_note,
    frame_timeout_override,
    generator_traffic_only,
    near_floor,
    no_lab_checks,
    shorter_than,
    simulated_cost_of,
    tester_bound_fields,
    trial_duration_field,
)
from trexlab.procedures.latency import TRIAL_DURATION, check_rate, measured_latency
from trexlab.procedures.latency import repetition_deviations as rfc8219_repetitions
from trexlab.procedures.selftest import latency_floor_check
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_TIMEOUT,
    MAX_TRIAL_DURATION,
    Latency,
    check_trial_frames,
    delay_for_json,
    format_seconds,
)

NAME = "pdv"
#: s, RFC 8219 section 7.3: the PDV stream lasts at least 60 s.
MIN_TRIAL_DURATION = 60.0
#: Measures at the throughput rate, given or from throughput results (trexlab.plan.rate_from).
TAKES_RATE = True
METHOD = "RFC 8219 section 7.3"


@dataclass(frozen=True)
class Params:
    rate: float | None = field(default=None, metadata=RATE_FIELD)
    trial_duration: float = field(default=TRIAL_DURATION, metadata=trial_duration_field(
        "RFC 8219 section 7.3: at least 60 s; 120 s as for latency"))
    frame_timeout: float | None = field(default=None, metadata=doc(
        "s: a frame received later than this counts as lost (the PDV then reads > timeout - min); none: every "
        "frame received before the receive tail ends counts", exclusiveMinimum=0, maximum=MAX_FRAME_TIMEOUT))
    tester_ceiling: float | None = field(default=None, metadata=TESTER_CEILING_FIELD)
    tester_floor_median: float | None = field(default=None, metadata=FLOOR_MEDIAN_FIELD)
    tester_floor_p99_9: float | None = field(default=None, metadata=FLOOR_P99_9_FIELD)

    def __post_init__(self) -> None:
        check_rate(self.rate)
        check_range("trial_duration", self.trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, MAX_FRAME_TIMEOUT, low_open=True)
        for name in ("tester_ceiling", "tester_floor_median", "tester_floor_p99_9"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0, low_open=True)


def pdv_text(minimum: float, timeout: float | None) -> str:
    """PDV when the 99.9th percentile lies among lost or late frames: more than timeout - minimum; no bound when
    the minimum lies there too (every frame lost or late)."""
    if math.isinf(minimum):
        return f"every frame lost or later than {'the receive tail' if timeout is None else format_seconds(timeout)}"
    if timeout is None:
        return "> receive tail - min (lost frames)"
    return f"> {format_seconds(timeout - minimum)} (lost frames)"


def pdv_resolution_note(direction: str, latency: Latency, pdv: float, p99_9: float) -> str | None:
    """A note when PDV spans few steps of what resolves it: the generator's unit, or, where the delays are long,
    the width of the histogram bucket holding the 99.9th percentile (3 significant digits: 65.5 us at 100 ms). PDV
    is the 99.9th percentile's upper edge less the minimum's lower edge, an upper bound over by up to two such
    widths: behind a netem DUT's 100 ms delay a few microseconds of its own variation read as 65.5 us or more.
    None for a PDV of enough steps or among lost frames."""
    if not math.isfinite(pdv):
        return None
    step = latency.resolution(p99_9)
    if step <= latency.unit:
        return coarse_delay_note(direction, "PDV", pdv, latency.unit)
    buckets = f"the delays' histogram buckets near {format_seconds(p99_9)}"
    if pdv < step:  # the minimum's bucket is the 99.9th percentile's: PDV reads that bucket's width
        return (f"{direction}: PDV at most {format_seconds(pdv)}: the minimum and the 99.9th percentile fall in one "
                f"of {buckets} ({format_seconds(step)} wide), not measured finer")
    return coarse_delay_note(direction, "PDV", pdv, step, buckets)


@dataclass
class PdvResult:
    params: Params
    directions: dict
    trials: int
    trial_seconds: float
    notes: list[str] = field(default_factory=list)
    floor: dict | None = None  # the tester's latency floor the figures were compared against, and the warnings
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit

    def to_dict(self) -> dict:
        directions = {d: {k: v for k, v in s.items() if k != "pdv_s"} for d, s in self.directions.items()}
        return {
            "procedure": NAME,
            "method": METHOD,
            "deviations": shorter_than("RFC 8219", [("trial duration", self.params.trial_duration,
                                                     MIN_TRIAL_DURATION)]),
            "directions": directions,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "notes": self.notes,
            "tester_latency_floor": self.floor,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            # +inf where the 99.9th percentile lies among lost frames (the directions block says "> ...").
            "headline": {headline_name(d): v["pdv_s"] for d, v in self.directions.items()},
        }


# The trial procedures' shared members (trexlab.procedures.common).
needs_tcp_endpoints = generator_traffic_only


def headline_name(direction: str) -> str:
    return f"{direction}_pdv_s"


def headline_names(params: Params, traffic) -> tuple[str, ...]:
    """The headline figures a run reports: one PDV per direction of the traffic."""
    return tuple(headline_name(d) for d in traffic.active_directions)


def check(plan) -> None:
    """A frame timeout the generator can keep, and a trial of 1..2^32 frames per direction at the rate (a campaign's
    rate from throughput runs is checked once they measured it: trexlab.plan.runplan.execute)."""
    check_plan_frame_timeout(plan)
    if plan.rate_from is None:
        check_trial_frames("rate x trial_duration", check_rate(plan.params.rate), plan.params.trial_duration)


check_lab = no_lab_checks
cost = simulated_cost_of(NAME)
#: RFC 8219 section 7.3 asks PDV for the repetitions section 7.2 asks latency for, their median reported: a summary
#: over fewer says so (trexlab.plan.repetition).
repetition_deviations = rfc8219_repetitions


def run(context: RunContext, params: Params) -> PdvResult:
    runner = context.runner(NAME)
    timeout = frame_timeout_override(params.frame_timeout)
    trial = runner.run(check_rate(params.rate), params.trial_duration, "RFC 8219 PDV", latency_mode="all", **timeout)
    directions = {}
    notes = runner.notes()
    for direction in context.traffic.active_directions:
        latency = measured_latency([trial], direction)
        minimum, p99_9 = latency.percentile(0), latency.percentile(99.9)
        # Every frame lost or late: inf - inf is NaN, which reads as "not measured"; it was measured, and lost.
        pdv = math.inf if latency.lost_or_late and math.isinf(minimum) else p99_9 - minimum
        directions[direction] = {
            "pdv": pdv_text(minimum, params.frame_timeout) if math.isinf(pdv) else delay_for_json(pdv, None),
            "min": delay_for_json(minimum, params.frame_timeout),
            "p99_9": delay_for_json(p99_9, params.frame_timeout),
            "samples": latency.size, "lost_or_late": latency.lost_or_late,
            "pdv_s": pdv,
        }
        if latency.lost_or_late:
            notes.append(f"{direction}: {latency.lost_or_late} of {latency.measured} frames lost or later than "
                         "the frame timeout; they count as infinite delays")
        if coarse := pdv_resolution_note(direction, latency, pdv, p99_9):
            notes.append(coarse)
    if warning := ceiling_warning(params.rate, params.tester_ceiling, "offered load"):
        notes.append(warning)
    figures = {d: {"pdv": s["pdv_s"]} for d, s in directions.items()}  # numbers; +inf is skipped there
    floor, warnings = latency_floor_check(figures, params, {"pdv": "p99_9"})
    return PdvResult(params, directions, len(runner.log), runner.trial_seconds, notes + warnings, floor,
                     runner.tester_limits(params.tester_ceiling, params.rate) + near_floor(floor))
