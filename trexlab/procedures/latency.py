"""RFC 8219 section 7.2 latency, beside RFC 2544 section 26.2's single-frame latency.

RFC 8219: at the throughput rate, for at least 120 s, with at least 500 tagged
frames sent after the first 60 s (siitperf's ``delay``: a DUT's warm-up is not
measured); typical latency = median, worst-case latency = 99.9th percentile of
the tagged frames' one-way delays, per direction. A tagged frame that is lost
or arrives after the frame timeout counts as an infinite delay (RFC 8219 sets
no per-frame timeout, as RFC 2544 sets none: Lencse et al. 2020 propose one,
and siitperf-pdv's counts a later frame as lost; siitperf-lat gives a lost tag
a penalty delay above any it can measure), so a
percentile that falls among lost tags is reported as "> <frame timeout> (lost
tags)", never as a delay some received frame had. The delays come from the
generator's HDR histogram (trexlab.trial.Latency): the median of an even count
of tags is the mean of the two middle delays (RFC 8219's Median(Li), as
siitperf computes it), the 99.9th percentile is nearest rank. A histogram keeps
a delay only to its bucket (up to 0.1 % wide): every figure but the minimum
reads its bucket's upper edge, so the worst case is never below the delay it
stands for; the minimum reads its lower edge (trexlab.trial.Latency.percentile).

The rate has no default: RFC 8219 measures latency at the throughput rate, so
it is given (``rate``), or taken from a throughput result (``trexlab latency
--rate-from DIR`` or ``EXPERIMENT/ID``; in an experiment ``rate: {from: throughput}``).

RFC 2544 measures one tagged frame per trial and averages 20 trials. When a DUT
delays only some frames (every Nth by a second, say) whether that one frame
meets a delayed one is luck; the result is reported beside RFC 8219's, labelled
as what it is, to show that weakness (Lencse et al. 2020, section VI).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from trexlab.params import InvalidParameter, check_range
from trexlab.procedures.common import (
    FLOOR_MEDIAN_FIELD,
    FLOOR_P99_9_FIELD,
    RATE_FIELD,
    TESTER_CEILING_FIELD,
    RunContext,
    ceiling_warning,
    check_plan_frame_timeout,
    coarse_delay_note,
    fewer_repetitions,
    frame_timeout_override,
    generator_traffic_only,
    near_floor,
    no_lab_checks,
    shorter_than,
    simulated_cost_of,
    tester_bound_fields,
    trial_duration_field,
)
from trexlab.procedures.selftest import latency_floor_check
from trexlab.results.stats import nearest_rank
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_TIMEOUT,
    MAX_OFFERED_LOAD,
    MAX_TRIAL_DURATION,
    Direction,
    GeneratorError,
    Latency,
    TrialResult,
    TrialSpec,
    check_trial_frames,
    delay_for_json,
    lost_tags_text,
    merge_latency,
)

NAME = "latency"
#: Measures at the throughput rate, given or from throughput results (trexlab.plan.rate_from).
TAKES_RATE = True
METHOD = "RFC 8219 section 7.2"
MIN_TAGGED_FRAMES = 500  # RFC 8219 section 7.2
#: The most tagged frames per direction: the software tester's own bound (swtester --tagged). Each is kept (send
#: time, delay) by the generators and by the dry run's simulation: 10^12 would exhaust the memory of the machine
#: that merely checks a shared spec.
MAX_TAGGED_FRAMES = 10_000_000
#: RFC 2544 section 26.2 trials a run may add (each a full trial for one tagged frame).
MAX_RFC2544_TRIALS = 1000
#: RFC 2544 section 26.2: its one-tag latency trial is repeated at least 20 times and the average reported.
RFC2544_TRIALS = 20
#: RFC 8219 sections 7.2 and 7.3: the latency (and PDV) test is repeated at least 20 times and the median of the
#: repetitions' TL, WCL (PDV) is the reported value; a summary over fewer says so (repetition_deviations).
MIN_REPETITIONS = 20
TRIAL_DURATION = 120.0  # s, RFC 8219: at least 120 s
TAG_DELAY = 60.0  # s, RFC 8219: tags only after the first 60 s
#: RFC 8219 section 7.2's report MUST state which RFC 1242 latency definition was used. The testers timestamp a
#: tagged frame when they send it and when they have received all of it, so for a store and forward DUT (last bit
#: in to first bit out) the figure adds the frame's transmission time on both of its links and the tester's own
#: send and receive path, which its self-test measures (the latency floor, where its 3x warning comes from).
LATENCY_DEFINITION = ("RFC 1242 store and forward, plus the frame's transmission time into and out of the DUT and "
                      "the tester's own send and receive path (its latency floor): from the tester's send timestamp "
                      "to its receive timestamp of the whole frame")


def check_rate(rate: float | None) -> float:
    """The rate is required: no default stands in for the measured throughput. Returns it."""
    if rate is None:
        raise InvalidParameter("rate", None, "a rate > 0 frames/s: the throughput rate (RFC 8219 measures at it); "
                                             "give rate, or --rate-from a throughput result")
    check_range("rate", rate, 0, MAX_OFFERED_LOAD, low_open=True)
    return rate


def measured_latency(results: list[TrialResult], direction: Direction) -> Latency:
    """One direction's latency over trials that asked the generator to measure it."""
    latency = merge_latency(results, direction)
    if latency is None:
        raise GeneratorError(f"{direction}: the generator returned no latency for trials that asked for it")
    return latency


@dataclass(frozen=True)
class Params:
    rate: float | None = field(default=None, metadata=RATE_FIELD)
    trial_duration: float = field(default=TRIAL_DURATION, metadata=trial_duration_field(
        "RFC 8219 section 7.2: at least 120 s; more than tag_delay"))
    tag_delay: float = field(default=TAG_DELAY, metadata=doc(
        "s from the trial's start to the first tagged frame, less than trial_duration (RFC 8219: 60 s)", minimum=0))
    tagged_frames: int = field(default=1000, metadata=doc(
        "tagged frames per direction and trial, whose delays the figures are of (RFC 8219: at least 500)",
        minimum=MIN_TAGGED_FRAMES, maximum=MAX_TAGGED_FRAMES))
    frame_timeout: float | None = field(default=None, metadata=doc(
        "s: a tag received later than this counts as lost (its delay reads > timeout); none: every tag received "
        "before the receive tail ends counts", exclusiveMinimum=0, maximum=MAX_FRAME_TIMEOUT))
    rfc2544_trials: int = field(default=0, metadata=doc(
        f"RFC 2544 section 26.2 trials (one tagged frame each) run besides (RFC 2544: at least {RFC2544_TRIALS}); "
        "0: none",
        minimum=0, maximum=MAX_RFC2544_TRIALS))
    tester_ceiling: float | None = field(default=None, metadata=TESTER_CEILING_FIELD)
    tester_floor_median: float | None = field(default=None, metadata=FLOOR_MEDIAN_FIELD)
    tester_floor_p99_9: float | None = field(default=None, metadata=FLOOR_P99_9_FIELD)

    def __post_init__(self) -> None:
        check_rate(self.rate)
        check_range("trial_duration", self.trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        check_range("tag_delay", self.tag_delay, 0)
        if self.tag_delay >= self.trial_duration:
            raise InvalidParameter("tag_delay", self.tag_delay,
                                   f"0 <= tag_delay < trial_duration ({self.trial_duration:g} s)")
        check_range("tagged_frames", self.tagged_frames, MIN_TAGGED_FRAMES, MAX_TAGGED_FRAMES, integer=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, MAX_FRAME_TIMEOUT, low_open=True)
        for name in ("tester_ceiling", "tester_floor_median", "tester_floor_p99_9"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0, low_open=True)
        check_range("rfc2544_trials", self.rfc2544_trials, 0, MAX_RFC2544_TRIALS, integer=True)


@dataclass
class LatencyResult:
    params: Params
    directions: dict  # direction -> typical, worst_case, min, max (s or lost-tags text), tags_*
    rfc2544: dict  # direction -> {"trials", "values", "average"} (one tagged frame per trial)
    trials: int
    trial_seconds: float
    notes: list[str] = field(default_factory=list)
    floor: dict | None = None  # the tester's latency floor the figures were compared against, and the warnings
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit

    def to_dict(self) -> dict:
        # What falls short of RFC 8219 section 7.2's durations: a CI-scale run's figures are not RFC 8219's.
        deviations = shorter_than("RFC 8219", [("trial duration", self.params.trial_duration, TRIAL_DURATION),
                                               ("tag delay", self.params.tag_delay, TAG_DELAY)])
        # RFC 8219's 500 tags are tags sent (siitperf sends exactly its count): a tester that sent fewer measured
        # fewer, whatever tagged_frames asked for (the notes say each shortfall).
        deviations += [f"{direction}: {stats['tags_sent']} tagged frames sent (RFC 8219: at least "
                       f"{MIN_TAGGED_FRAMES})" for direction, stats in self.directions.items()
                       if stats["tags_sent"] < MIN_TAGGED_FRAMES]
        if 0 < self.params.rfc2544_trials < RFC2544_TRIALS:  # the average beside the figures is over fewer
            deviations.append(f"RFC 2544 single-frame latency trials {self.params.rfc2544_trials} "
                              f"(RFC 2544: at least {RFC2544_TRIALS})")
        # Numbers for the statistics over repetitions: +inf where the percentile lies among lost tags
        # (the directions block and every table show it as "> timeout (lost tags)").
        headline = {headline_name(direction, key): stats[key]
                    for direction, stats in self.directions.items() for key in HEADLINE_FIGURES}
        directions = {d: {k: v for k, v in s.items() if not k.endswith("_s")} for d, s in self.directions.items()}
        return {
            "procedure": NAME,
            "method": METHOD,
            "latency_definition": LATENCY_DEFINITION,
            "deviations": deviations,
            "directions": directions,
            "rfc2544_single_frame_latency": self.rfc2544,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "lost_tags": lost_tags_text(self.params.frame_timeout),
            "notes": self.notes,
            "tester_latency_floor": self.floor,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            "headline": headline,
        }


def repetition_deviations(count: int) -> list[str]:
    """What a summary over count repetitions falls short of RFC 8219's (trexlab.plan.repetition adds it to the
    summary's deviations, beside those of each repetition's durations)."""
    return fewer_repetitions("RFC 8219", count, MIN_REPETITIONS)


def check_tag_window(params: Params) -> None:
    """At most one tag per frame sent after tag_delay (siitperf refuses more too): more tags than frames would be
    refused by swtester mid-run, sent fewer by TRex, and counted as sent by the sim; and at most 2^32 frames per
    trial."""
    rate = check_rate(params.rate)
    check_trial_frames("rate x trial_duration", rate, params.trial_duration)
    frames = round(rate * params.trial_duration) - math.ceil(round(rate * params.tag_delay, 9))
    if params.tagged_frames > frames:
        raise InvalidParameter("tagged_frames", params.tagged_frames,
                               f"at most {max(frames, 0)}, the frames sent in the "
                               f"{params.trial_duration - params.tag_delay:g} s after tag_delay at {rate:g} fps")


# The trial procedures' shared members (trexlab.procedures.common).
needs_tcp_endpoints = generator_traffic_only

#: Each direction's headline figures: the keys of its statistics (LatencyResult.directions) that go in.
HEADLINE_FIGURES = ("typical_s", "worst_case_s", "tags_lost_or_late")


def headline_name(direction: str, key: str) -> str:
    return f"{direction}_{key}"


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run reports: each of HEADLINE_FIGURES per direction of the traffic."""
    return tuple(headline_name(d, key) for d in traffic.active_directions for key in HEADLINE_FIGURES)


def check(plan) -> None:
    """A frame timeout the generator can keep, and tags that fit in the frames after tag_delay at the rate (a
    campaign's rate from throughput runs is measured first: run checks the tags then, before its first trial)."""
    check_plan_frame_timeout(plan)
    if plan.rate_from is None:
        check_tag_window(plan.params)


check_lab = no_lab_checks
cost = simulated_cost_of(NAME)


def run(context: RunContext, params: Params) -> LatencyResult:
    check_tag_window(params)
    runner = context.runner(NAME)
    timeout = frame_timeout_override(params.frame_timeout)
    rate = check_rate(params.rate)
    main = runner.run(rate, params.trial_duration, "RFC 8219 latency", latency_mode="tagged",
                      latency_frames=params.tagged_frames, tag_delay=params.tag_delay, **timeout)
    directions = {}
    notes = runner.notes()
    if warning := ceiling_warning(params.rate, params.tester_ceiling, "offered load"):
        notes.append(warning)
    for direction in context.traffic.active_directions:
        latency = measured_latency([main], direction)
        result = main.directions[direction]
        summary = latency.summary()
        directions[direction] = {
            "typical": delay_for_json(summary["median"], params.frame_timeout),
            "worst_case": delay_for_json(summary["p99_9"], params.frame_timeout),
            "min": delay_for_json(summary["min"], params.frame_timeout),
            "max": delay_for_json(summary["max"], params.frame_timeout),
            "samples": summary["samples"],
            "tags_sent": result.tags_sent, "tags_received": result.tags_received,
            "tags_lost_or_late": latency.lost_or_late,
            "typical_s": summary["median"], "worst_case_s": summary["p99_9"],
        }
        if result.tags_sent < params.tagged_frames:
            # A tag never sent is neither a delay nor a lost tag: the percentiles rank only those sent, so the
            # figures rest on fewer tags than the run declared.
            notes.append(f"{direction}: the tester sent {result.tags_sent} of the {params.tagged_frames} tagged "
                         f"frames asked for; the figures rank those {result.tags_sent} only")
        if latency.lost_or_late:
            notes.append(f"{direction}: {latency.lost_or_late} of {latency.measured} tagged frames lost or later "
                         f"than the frame timeout; they count as infinite delays "
                         f"({lost_tags_text(params.frame_timeout)} where a percentile falls among them)")
        if nearest_rank(99.9, latency.measured) == latency.measured:
            # Below 1000 tags the 99.9th percentile's rank is the last: no rare outlier (a tester's timestamping
            # error, Lencse et al. 2021 section III) is left out of the worst case, as more tags would leave it.
            notes.append(f"{direction}: of {latency.measured} tagged frames the worst-case latency (99.9th "
                         f"percentile, nearest rank ceil(0.999 n) as siitperf's) is rank {latency.measured} of "
                         f"{latency.measured}: the largest delay, any rare outlier included")
        if coarse := coarse_delay_note(direction, "typical latency", summary["median"], latency.unit):
            notes.append(coarse)
        if summary["samples"] < MIN_TAGGED_FRAMES:
            notes.append(f"{direction}: only {summary['samples']} tagged frames arrived in time "
                         f"(RFC 8219 asks for >= {MIN_TAGGED_FRAMES}); the figures are less reliable")
    rfc2544 = {}
    if params.rfc2544_trials:
        singles = [runner.run(rate, params.trial_duration, "RFC 2544 single-frame latency",
                              latency_mode="tagged", latency_frames=1, tag_delay=params.tag_delay, **timeout)
                   for _ in range(params.rfc2544_trials)]
        for direction in context.traffic.active_directions:
            # The one tag's delay, read as every latency figure is: its bucket's upper edge (Latency.percentile).
            delays = [single.percentile(100) for r in singles if (single := r.directions[direction].latency)]
            values = [d for d in delays if math.isfinite(d)]
            rfc2544[direction] = {"trials": len(singles), "values": values, "lost": len(delays) - len(values),
                                  "average": statistics.fmean(values) if values else None,
                                  "label": "RFC 2544 latency: one tagged frame per trial, averaged over the "
                                           "trials whose tag arrived (RFC 2544 says nothing of a lost tag: those "
                                           "trials are left out of the average and counted in lost)"}
    # The floor compares numbers: +inf (a percentile among lost tags) is skipped there.
    figures = {d: {"typical": s["typical_s"], "worst_case": s["worst_case_s"]} for d, s in directions.items()}
    floor, warnings = latency_floor_check(figures, params, {"typical": "median", "worst_case": "p99_9"})
    return LatencyResult(params, directions, rfc2544, len(runner.log), runner.trial_seconds, notes + warnings, floor,
                         runner.tester_limits(params.tester_ceiling, params.rate) + near_floor(floor))
