"""RFC 2544 section 26.3 frame loss rate: loss ratio from the maximum rate downwards.

The first trial runs at the maximum rate; each next one is lower by a step of
at most 10 % of it, until two consecutive trials lose no frame. Each point
gives the loss over every direction and each direction's, and its load also
as a percent of the media's maximum rate at the frame size (section 26.3's X
axis); a first load other than that maximum (a max_rate given) is listed in
the deviations with its percent.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction

from trexlab.media import max_frame_rate, media_speed
from trexlab.params import check_range
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
from trexlab.results.stats import WHOLE, summarize
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_TIMEOUT,
    MAX_OFFERED_LOAD,
    MAX_TRIAL_DURATION,
    RFC2544_TRIAL_DURATION,
    TrialSpec,
    check_trial_frames,
)

NAME = "flr"
TAKES_RATE = False
METHOD = "RFC 2544 section 26.3"
#: The finest step: at most 1000 trials from max_rate down to zero.
MIN_STEP_PERCENT = 0.1


@dataclass(frozen=True)
class Params:
    max_rate: float | None = field(default=None, metadata=MAX_RATE_FIELD)
    step_percent: float = field(default=10.0, metadata=doc(
        "% of max_rate the offered load falls by from trial to trial (RFC 2544 section 26.3: at most 10)",
        minimum=MIN_STEP_PERCENT, maximum=10))
    trial_duration: float = field(default=RFC2544_TRIAL_DURATION, metadata=trial_duration_field(
        f"RFC 2544 section 24: at least {RFC2544_TRIAL_DURATION:g} s"))
    frame_timeout: float | None = field(default=None, metadata=FRAME_TIMEOUT_FIELD)
    media: str = field(default="10g", metadata=MEDIA_FIELD)
    tester_ceiling: float | None = field(default=None, metadata=TESTER_CEILING_FIELD)

    def __post_init__(self) -> None:
        if self.max_rate is not None:
            check_range("max_rate", self.max_rate, 0, MAX_OFFERED_LOAD, low_open=True)
        # At least 0.1 %: a step of 1e-300 % meant 1e302 trials, a run without end.
        check_range("step_percent", self.step_percent, MIN_STEP_PERCENT, 10)
        check_range("trial_duration", self.trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, MAX_FRAME_TIMEOUT, low_open=True)
        media_speed(self.media)
        if self.tester_ceiling is not None:
            check_range("tester_ceiling", self.tester_ceiling, 0, low_open=True)


@dataclass
class FrameLossResult:
    params: Params
    # [{"offered_load", "offered_load_percent", "loss_ratio", "frame_loss_rate_percent", "directions": {direction:
    # its frame loss rate %}}], highest load first
    points: list[dict]
    trials: int
    trial_seconds: float
    notes: list[str] = field(default_factory=list)
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit
    deviations: list[str] = field(default_factory=list)  # short durations, a first load off the media's maximum

    def to_dict(self) -> dict:
        return {
            "procedure": NAME,
            "method": METHOD,
            "deviations": self.deviations,
            "points": self.points,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "notes": self.notes,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            "headline": {HEADLINE: self.points[0]["frame_loss_rate_percent"]},
        }


#: The one headline figure: the frame loss rate at the highest load, %.
HEADLINE = "frame_loss_rate_at_max_percent"


def curve(result: dict) -> tuple[list[str], list[list[str]]]:
    """RFC 2544 section 26.3's curve as a table (column names, one row of text per load, highest first): the
    offered load in fps and in percent of the media's maximum (the section's X axis), the loss over every direction
    and each direction's. The one formatting of one repetition's: the CLI's summary (curve_lines) shows it, the
    campaign report the repetitions together (curve_over_repetitions). '-' where a result stored before a column
    was measured lacks it."""
    points = result["points"]
    directions = list(dict.fromkeys(d for point in points for d in point.get("directions", {})))
    columns = ["offered load (fps)", "% of media maximum", "frame loss rate (%)",
               *(f"{d} loss (%)" for d in directions), "stretched"]

    def number(value, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    # The load as the method line and every table write a rate (WHOLE).
    rows = [[number(point["offered_load"], WHOLE), number(point.get("offered_load_percent"), ".4g"),
             number(point["frame_loss_rate_percent"], ".4g"),
             *(number(point.get("directions", {}).get(d), ".4g") for d in directions),
             "yes" if point.get("stretched") else "no"] for point in points]
    return columns, rows


def curve_over_repetitions(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The curve of repeated runs of one point as one table (column names, one row of text per load, highest
    first), for the campaign report: a table per repetition made 20 tables of a point. Per load: how many
    repetitions ran it (a repetition ends after two lossless loads in a row, so the lowest loads show fewer), the
    median frame loss rate with its minimum and maximum, and each direction's median (the project's one median:
    trexlab.results.stats.summarize; a loss rate is no lower bound of anything), and in how many repetitions the
    tester stretched the trial. Every repetition's own curve stays in its result.json (curve())."""
    by_load: dict[float, list[dict]] = {}
    for result in results:
        for point in result["points"]:
            by_load.setdefault(point["offered_load"], []).append(point)
    directions = list(dict.fromkeys(d for points in by_load.values() for point in points
                                    for d in point.get("directions", {})))
    columns = ["offered load (fps)", "% of media maximum", "repetitions", "frame loss rate (%) median",
               "min", "max", *(f"{d} loss (%) median" for d in directions), "stretched"]

    def figure(value) -> str:
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, ".4g")

    rows = []
    for load in sorted(by_load, reverse=True):
        points = by_load[load]
        loss = summarize((p["frame_loss_rate_percent"] for p in points), lower_bounds=False)
        rows.append([format(load, WHOLE), figure(points[0].get("offered_load_percent")), str(len(points)),
                     figure(loss["median"]), figure(loss["min"]), figure(loss["max"]),
                     *(figure(summarize((p.get("directions", {}).get(d) for p in points), lower_bounds=False)["median"])
                       for d in directions),
                     f"{sum(1 for p in points if p.get('stretched'))} of {len(points)}"])
    return columns, rows


def curve_lines(result: dict) -> list[str]:
    """The curve (curve()) as aligned text lines under a heading, for the CLI's summary."""
    columns, rows = curve(result)
    widths = [max(len(cell) for cell in column) for column in zip(columns, *rows, strict=True)]
    return ["frame loss rate per offered load (the headline is the first):",
            *("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
              for row in [columns, *rows])]


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run reports."""
    return (HEADLINE,)


def media_maximum(params: Params, traffic: TrialSpec) -> int:
    """Frames/s: the maximum rate for the frame size on the input media, RFC 2544 section 26.3's 100 % (of the larger
    frame size where the two ports' differ, as a SIIT test's: the rate the busier link can carry)."""
    return max_frame_rate(media_speed(params.media), max(traffic.frame_size))


def first_load_deviations(params: Params, traffic: TrialSpec, top: float) -> list[str]:
    """RFC 2544 section 26.3 runs the first trial at 100 % of the media's maximum rate: a first load other than that
    (a max_rate given: the tester's ceiling, a DUT's link) is disclosed with its percent of it. No comma: the method
    line lists a result's deviations comma-separated."""
    maximum = media_maximum(params, traffic)
    if top == maximum:
        return []
    return [f"first offered load {top:g} fps: {100 * top / maximum:.4g} % of the {params.media} medium's maximum for "
            f"{max(traffic.frame_size)}-byte frames ({maximum} fps; RFC 2544 section 26.3: the first trial at "
            "100 % of it)"]


def loads(params: Params, traffic: TrialSpec) -> tuple[float, float, int]:
    """(top, step, steps): the trials' loads are top - k * step for k = 0..steps, every one above zero. steps
    comes from the step's decimal value, not from the float loads: 100 % less 100 float steps of 1 % of
    14880952.38 fps is 1.9e-9 fps, not zero, and that trial intended no frame."""
    top = params.max_rate or float(media_maximum(params, traffic))
    steps = math.ceil(100 / Fraction(repr(float(params.step_percent)))) - 1
    return top, top * params.step_percent / 100, steps


def check(plan) -> None:
    """A frame timeout the generator can keep, and 1..2^32 frames per direction in each trial, from the first
    load down to the lowest (the run stops earlier once two trials in a row lose nothing)."""
    check_plan_frame_timeout(plan)
    params = plan.params
    top, step, steps = loads(params, plan.traffic)
    check_trial_frames(f"{'max_rate' if params.max_rate else 'media'} x trial_duration", top, params.trial_duration)
    check_trial_frames(f"the lowest load ({steps} steps of step_percent below the first) x trial_duration",
                       top - steps * step, params.trial_duration)


# The trial procedures' shared members (trexlab.procedures.common).
needs_tcp_endpoints = generator_traffic_only
check_lab = no_lab_checks
cost = simulated_cost_of(NAME)


def run(context: RunContext, params: Params) -> FrameLossResult:
    top, step, steps = loads(params, context.traffic)
    runner = context.runner(NAME)
    timeout = frame_timeout_override(params.frame_timeout)
    maximum = media_maximum(params, context.traffic)
    points, lossless_in_a_row, k = [], 0, 0
    while lossless_in_a_row < 2 and k <= steps:
        load = top - k * step
        if load <= 0:
            break
        result = runner.run(load, params.trial_duration, "frame loss rate", **timeout)
        # RFC 2544 section 26.3's graph: the load as a percent of the media's maximum rate, the loss in percent.
        # The loss over every direction (siitperf's script sums them too), and each direction's: a translator's two
        # directions differ, and the sum alone hides which one lost.
        points.append({"offered_load": load, "offered_load_percent": 100 * load / maximum,
                       "loss_ratio": result.loss_ratio,
                       "frame_loss_rate_percent": 100 * result.loss_ratio,
                       "directions": {d: 100 * r.loss_ratio for d, r in result.directions.items()},
                       "stretched": result.stretched})
        lossless_in_a_row = lossless_in_a_row + 1 if result.frames_lost == 0 else 0
        k += 1
    notes = runner.notes()
    if lossless_in_a_row < 2:
        notes.append("no two consecutive lossless trials before the load reached zero")
    if warning := ceiling_warning(top, params.tester_ceiling, "maximum offered load"):
        notes.append(warning)
    return FrameLossResult(params, points, len(runner.log), runner.trial_seconds, notes,
                           runner.tester_limits(params.tester_ceiling, top),
                           rfc2544_deviations(params.trial_duration, context.traffic, params.frame_timeout,
                                              context.generator, first_load_deviations(params, context.traffic, top)))
