"""RFC 8219 section 7.2 latency, beside RFC 2544 section 26.2's single-frame latency.

RFC 8219: at the throughput rate, for at least 120 s, with at least 500 tagged
frames spread over the trial; typical latency = median, worst-case latency =
99.9th percentile of the tagged frames' one-way delays, per direction.

RFC 2544 measures one tagged frame per trial and averages 20 trials. When a DUT
delays only some frames (every Nth by a second, say) whether that one frame
meets a delayed one is luck; the result is reported beside RFC 8219's, labelled
as what it is, to show that weakness (Lencse et al. 2020, section VI).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from trexlab.params import check_range
from trexlab.procedures.common import TrialRunner, ceiling_warning, near_floor, tester_bound_fields
from trexlab.procedures.selftest import latency_floor_check
from trexlab.trial import TrialSpec, merge_latency

METHOD = "RFC 8219 section 7.2"
MIN_TAGGED_FRAMES = 500  # RFC 8219 section 7.2


@dataclass(frozen=True)
class Params:
    rate: float = 10_000.0  # fps per direction: the measured throughput rate
    trial_duration: float = 120.0  # s, RFC 8219: at least 120 s
    tagged_frames: int = 1000  # per direction, >= 500
    frame_timeout: float | None = None
    rfc2544_trials: int = 0  # also run this many one-tagged-frame RFC 2544 trials (RFC 2544: 20)
    tester_ceiling: float | None = None  # fps from a self-test; a rate near it is flagged
    # s, the tester's own latency floor from a self-test (median, 99.9th percentile); figures near it are flagged
    tester_floor_median: float | None = None
    tester_floor_p99_9: float | None = None

    def __post_init__(self) -> None:
        check_range("rate", self.rate, 0, low_open=True)
        check_range("trial_duration", self.trial_duration, 0, 3600, low_open=True)
        check_range("tagged_frames", self.tagged_frames, MIN_TAGGED_FRAMES, integer=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, low_open=True)
        for name in ("tester_ceiling", "tester_floor_median", "tester_floor_p99_9"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0, low_open=True)
        check_range("rfc2544_trials", self.rfc2544_trials, 0, 1000, integer=True)


@dataclass
class LatencyResult:
    params: Params
    directions: dict  # direction -> {"typical", "worst_case", "samples", "min", "max"}
    rfc2544: dict  # direction -> {"trials", "values", "average"} (one tagged frame per trial)
    trials: int
    trial_seconds: float
    notes: list[str] = field(default_factory=list)
    floor: dict | None = None  # the tester's latency floor the figures were compared against, and the warnings
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit

    def to_dict(self) -> dict:
        headline = {}
        for direction, stats in self.directions.items():
            headline[f"{direction}_typical_s"] = stats["typical"]
            headline[f"{direction}_worst_case_s"] = stats["worst_case"]
        return {
            "procedure": "latency",
            "method": METHOD,
            "directions": self.directions,
            "rfc2544_single_frame_latency": self.rfc2544,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "notes": self.notes,
            "tester_latency_floor": self.floor,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            "headline": headline,
        }


def run(generator, traffic: TrialSpec, params: Params, on_trial=None, progress=None) -> LatencyResult:
    runner = TrialRunner(generator, traffic, on_trial, progress, "latency")
    timeout = {"frame_timeout": params.frame_timeout} if params.frame_timeout else {}
    main = runner.run(params.rate, params.trial_duration, "RFC 8219 latency", latency_mode="tagged",
                      latency_frames=params.tagged_frames, **timeout)
    directions = {}
    notes = runner.notes()
    if warning := ceiling_warning(params.rate, params.tester_ceiling, "offered load"):
        notes.append(warning)
    for direction in traffic.active_directions:
        summary = merge_latency([main], direction).summary()
        directions[direction] = {"typical": summary["median"], "worst_case": summary["p99_9"],
                                 "min": summary["min"], "max": summary["max"], "samples": summary["samples"]}
        if summary["samples"] < MIN_TAGGED_FRAMES:
            notes.append(f"{direction}: only {summary['samples']} tagged frames arrived in time "
                         f"(RFC 8219 asks for >= {MIN_TAGGED_FRAMES}); the figures are less reliable")
    rfc2544 = {}
    if params.rfc2544_trials:
        singles = [runner.run(params.rate, params.trial_duration, "RFC 2544 single-frame latency",
                              latency_mode="tagged", latency_frames=1, **timeout)
                   for _ in range(params.rfc2544_trials)]
        for direction in traffic.active_directions:
            values = [r.directions[direction].latency.percentile(0) for r in singles
                      if r.directions[direction].latency and r.directions[direction].latency.size]
            rfc2544[direction] = {"trials": len(singles), "values": values,
                                  "average": statistics.fmean(values) if values else None,
                                  "label": "RFC 2544 latency: one tagged frame per trial, averaged"}
    floor, warnings = latency_floor_check(directions, params, {"typical": "median", "worst_case": "p99_9"})
    return LatencyResult(params, directions, rfc2544, len(runner.log), runner.trial_seconds, notes + warnings, floor,
                         runner.tester_limits(params.tester_ceiling, params.rate) + near_floor(floor))
