"""RFC 8219 section 7.3 packet delay variation.

Every frame is timestamped; PDV = 99.9th percentile - minimum of the one-way
delays of a direction (RFC 5481's PDV form, as RFC 8219 prescribes), both from
the direction's HDR histogram of every received frame's delay.

IPDV (the difference between consecutive frames' delays) is not offered: a
histogram keeps no order, and RFC 8219 asks for PDV only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from trexlab.params import check_range
from trexlab.procedures.common import TrialRunner, ceiling_warning, near_floor, tester_bound_fields
from trexlab.procedures.selftest import latency_floor_check
from trexlab.trial import TrialSpec, merge_latency

METHOD = "RFC 8219 section 7.3"


@dataclass(frozen=True)
class Params:
    rate: float = 10_000.0  # fps per direction: the measured throughput rate
    trial_duration: float = 60.0  # s, RFC 8219: at least 60 s
    frame_timeout: float | None = None
    tester_ceiling: float | None = None  # fps from a self-test; a rate near it is flagged
    # s, the tester's own latency floor from a self-test (median, 99.9th percentile); figures near it are flagged
    tester_floor_median: float | None = None
    tester_floor_p99_9: float | None = None

    def __post_init__(self) -> None:
        check_range("rate", self.rate, 0, low_open=True)
        check_range("trial_duration", self.trial_duration, 0, 3600, low_open=True)
        if self.frame_timeout is not None:
            check_range("frame_timeout", self.frame_timeout, 0, low_open=True)
        for name in ("tester_ceiling", "tester_floor_median", "tester_floor_p99_9"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0, low_open=True)


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
        return {
            "procedure": "pdv",
            "method": METHOD,
            "directions": self.directions,
            "trials": self.trials,
            "trial_seconds": self.trial_seconds,
            "notes": self.notes,
            "tester_latency_floor": self.floor,
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
        samples = merge_latency([trial], direction)
        stats = {"pdv": samples.percentile(99.9) - samples.percentile(0), "min": samples.percentile(0),
                 "p99_9": samples.percentile(99.9), "samples": samples.size}
        directions[direction] = stats
    notes = runner.notes()
    if warning := ceiling_warning(params.rate, params.tester_ceiling, "offered load"):
        notes.append(warning)
    floor, warnings = latency_floor_check(directions, params, {"pdv": "p99_9"})
    return PdvResult(params, directions, len(runner.log), runner.trial_seconds, notes + warnings, floor,
                     runner.tester_limits(params.tester_ceiling, params.rate) + near_floor(floor))
