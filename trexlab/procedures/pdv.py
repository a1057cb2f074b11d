"""RFC 8219 section 7.3 packet delay variation, and optionally IPDV.

Every frame is timestamped; PDV = 99.9th percentile - minimum of the one-way
delays of a direction (RFC 5481's PDV form, as RFC 8219 prescribes). IPDV,
the difference between consecutive frames' delays, is reported as its
99.9th percentile of absolute values when asked, from the samples in their
arrival order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from trexlab.params import check_range
from trexlab.procedures.common import TrialRunner, ceiling_warning, tester_bound_fields
from trexlab.trial import Latency, TrialSpec, latency_samples_of

METHOD = "RFC 8219 section 7.3"


@dataclass(frozen=True)
class Params:
    rate: float = 10_000.0  # fps per direction: the measured throughput rate
    trial_duration: float = 60.0  # s, RFC 8219: at least 60 s
    frame_timeout: float | None = None
    ipdv: bool = False
    tester_ceiling: float | None = None  # fps from a self-test; a rate near it is flagged

    def __post_init__(self) -> None:
        check_range("rate", self.rate, 0, low_open=True)
        check_range("trial_duration", self.trial_duration, 0, 3600, low_open=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, low_open=True)
        if self.tester_ceiling is not None:
            check_range("tester_ceiling", self.tester_ceiling, 0, low_open=True)


@dataclass
class PdvResult:
    params: Params
    directions: dict
    trials: int
    trial_seconds: float
    notes: list[str] = field(default_factory=list)
    tester_bound_reasons: list[str] = field(default_factory=list)  # why the result may be the tester's limit

    def to_dict(self) -> dict:
        return {
            "procedure": "pdv",
            "method": METHOD,
            "directions": self.directions,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "notes": self.notes,
            **tester_bound_fields(self.tester_bound_reasons),
            "params": asdict(self.params),
            "headline": {f"{d}_pdv_s": v["pdv"] for d, v in self.directions.items()},
        }


def run(generator, traffic: TrialSpec, params: Params, on_trial=None, progress=None) -> PdvResult:
    runner = TrialRunner(generator, traffic, on_trial, progress, "pdv")
    timeout = {"frame_timeout": params.frame_timeout} if params.frame_timeout else {}
    trial = runner.run(params.rate, params.trial_duration, "RFC 8219 PDV", latency_mode="all", **timeout)
    directions = {}
    for direction in traffic.active_directions:
        samples = latency_samples_of([trial], direction)
        stats = {"pdv": samples.percentile(99.9) - samples.percentile(0), "min": samples.percentile(0),
                 "p99_9": samples.percentile(99.9), "samples": samples.size}
        if params.ipdv and samples.counts is None and samples.size > 1:
            steps = [abs(b - a) for a, b in zip(samples.values, samples.values[1:], strict=False)]
            stats["ipdv_p99_9"] = Latency.from_samples(steps).percentile(99.9)
        directions[direction] = stats
    notes = runner.notes()
    if warning := ceiling_warning(params.rate, params.tester_ceiling, "offered load"):
        notes.append(warning)
    return PdvResult(params, directions, len(runner.log), runner.trial_seconds, notes,
                     runner.tester_limits(params.tester_ceiling, params.rate))
