"""Tester self-test: the tester's own loss-free ceiling, measured with its ports looped back.

Run on the loopback topology (tester port 0 wired to port 1, no DUT), an RFC
2544 throughput search per frame size finds the highest rate the tester
itself sends and receives without loss (Lencse & Szilagyi 2024, section 4.2).
A DUT result within 10 % of that ceiling may describe the tester, not the DUT:
pass the ceiling to other procedures as ``tester_ceiling`` and they say so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field

from trexlab.params import check_range
from trexlab.procedures import throughput
from trexlab.trial import SIIT_SIZE_DELTA, TrialSpec

METHOD = "tester self-test (RFC 2544 throughput, ports looped back)"


@dataclass(frozen=True)
class Params:
    frame_sizes: tuple[int, ...] = (64,)
    max_rate: float | None = None
    min_rate: float = 100.0
    resolution: float | None = None
    loss_tolerance_percent: float = 0.0
    trial_duration: float = 60.0
    media: str = "10g"

    def __post_init__(self) -> None:
        if not self.frame_sizes:
            check_range("frame_sizes", 0, 1)
        for size in self.frame_sizes:
            check_range("frame_sizes", size, 64, 9018 - SIIT_SIZE_DELTA, integer=True)
        throughput.Params(**self.search_params())  # the search's own checks

    def search_params(self) -> dict:
        return {k: getattr(self, k) for k in ("max_rate", "min_rate", "resolution", "loss_tolerance_percent",
                                              "trial_duration", "media")}


@dataclass
class SelfTestResult:
    params: Params
    ceilings: dict  # frame size -> fps per direction (None: below min_rate)
    searches: dict
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "procedure": "selftest",
            "method": METHOD,
            "ceilings_fps": {str(k): v for k, v in self.ceilings.items()},
            "searches": self.searches,
            "notes": self.notes,
            "params": asdict(self.params),
            "headline": {f"ceiling_{k}B_fps": v for k, v in self.ceilings.items()},
        }


def run(generator, traffic: TrialSpec, params: Params, on_trial=None, progress=None) -> SelfTestResult:
    ceilings, searches, notes = {}, {}, []
    search = throughput.Params(**params.search_params())
    for size in params.frame_sizes:
        sized = dataclasses.replace(traffic, frame_size=(size, size))
        result = throughput.run(generator, sized, search, on_trial, progress)
        ceilings[size] = result.throughput
        searches[str(size)] = result.to_dict()
        notes.extend(f"{size} B: {n}" for n in result.notes)
    return SelfTestResult(params, ceilings, searches, notes)
