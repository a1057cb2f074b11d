"""The trial contract: what every traffic generator is asked and what it answers.

A *trial* is one measurement at one offered load: the tester sends test frames
at a constant rate for a fixed duration, keeps receiving for a tail time after
sending stops, and reports per direction how many frames it meant to send,
really sent, and received in time.  Procedures (RFC 2544 throughput, MLRsearch,
frame loss rate, latency, PDV, ...) are built only on this contract, so the same
search runs on the simulated SUT, the native software tester and TRex.

Naming follows RFC 2544/8219 and siitperf: tester port 0 faces the DUT's left
port, tester port 1 its right port; the *forward* direction is port 0 -> port 1,
the *reverse* direction port 1 -> port 0.  Rates are frames per second *per
direction*, as siitperf reports them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol, runtime_checkable

from trexlab.params import InvalidParameter

Direction = Literal["forward", "reverse"]
DIRECTIONS: tuple[Direction, Direction] = ("forward", "reverse")
TrafficDirections = Literal["bidirectional", "forward", "reverse"]
PortMode = Literal["fixed", "rfc4814"]
LatencyMode = Literal["none", "tagged", "all"]

#: Frame sizes (bytes, FCS included) named by RFC 2544 section 9 / RFC 5180 / RFC 8219.
STANDARD_FRAME_SIZES = (64, 128, 256, 512, 768, 1024, 1280, 1518)
MIN_FRAME_SIZE = 64
MAX_FRAME_SIZE = 9018  # jumbo frames; media limits say what a link can carry
#: An IPv6 header is 20 bytes longer than an IPv4 header: SIIT frames grow or shrink by this.
SIIT_SIZE_DELTA = 20


class InvalidTrialSpec(InvalidParameter):
    """A trial parameter is outside its allowed range; the message names it."""


@dataclass(frozen=True)
class TrialSpec:
    """What one trial asks of a generator.

    ``ip_version`` and ``frame_size`` are given per tester port: frames *sent*
    from port ``i`` are IPv``ip_version[i]`` frames of ``frame_size[i]`` bytes.
    For SIIT (e.g. NAT64 with IPv6 on port 0) that is ``(6, 4)`` and
    ``(84, 64)``: each side sends and expects its own version and size.
    """

    offered_load: float  # frames/s per direction
    duration: float  # s of sending
    frame_size: tuple[int, int] = (64, 64)
    ip_version: tuple[int, int] = (4, 4)
    directions: TrafficDirections = "bidirectional"
    port_mode: PortMode = "fixed"  # RFC 4814 pseudorandom source/destination ports
    destination_networks: int = 1  # 198.19.x.0/24 (forward), 198.18.x.0/24 (reverse)
    latency_mode: LatencyMode = "none"
    latency_frames: int = 0  # with latency_mode "tagged": tagged frames per direction
    frame_timeout: float | None = None  # s; a frame later than this counts as lost
    receive_tail: float = 2.0  # s of receiving after sending stops (RFC 2544)
    # IPv4 Don't Fragment: a DUT must drop a frame too big for its next link instead of fragmenting it (path
    # MTU trials, RFC 6349); IPv6 routers never fragment. Generators that cannot set it say so (supports_df).
    dont_fragment: bool = False

    def __post_init__(self) -> None:
        def bad(name: str, allowed: str, value: object) -> InvalidTrialSpec:
            return InvalidTrialSpec(name, value, allowed)

        if not (self.offered_load > 0 and math.isfinite(self.offered_load)):
            raise bad("offered_load", "a finite rate > 0 frames/s", self.offered_load)
        if not (self.duration > 0 and math.isfinite(self.duration)):
            raise bad("duration", "> 0 s", self.duration)
        for i, size in enumerate(self.frame_size):
            if not MIN_FRAME_SIZE <= size <= MAX_FRAME_SIZE:
                raise bad(f"frame_size[{i}]", f"{MIN_FRAME_SIZE}..{MAX_FRAME_SIZE} bytes", size)
        for i, version in enumerate(self.ip_version):
            if version not in (4, 6):
                raise bad(f"ip_version[{i}]", "4 or 6", version)
        if len(self.frame_size) != 2 or len(self.ip_version) != 2:
            raise bad("frame_size/ip_version", "one value per tester port (2)", self.frame_size)
        if self.directions not in ("bidirectional", "forward", "reverse"):
            raise bad("directions", "bidirectional, forward, reverse", self.directions)
        if self.port_mode not in ("fixed", "rfc4814"):
            raise bad("port_mode", "fixed, rfc4814", self.port_mode)
        if not 1 <= self.destination_networks <= 256:
            raise bad("destination_networks", "1..256", self.destination_networks)
        if self.latency_mode not in ("none", "tagged", "all"):
            raise bad("latency_mode", "none, tagged, all", self.latency_mode)
        if self.latency_mode == "tagged" and self.latency_frames < 1:
            raise bad("latency_frames", ">= 1 with latency_mode=tagged", self.latency_frames)
        if self.frame_timeout is not None and not self.frame_timeout > 0:
            raise bad("frame_timeout", "> 0 s or None", self.frame_timeout)
        if not self.receive_tail >= 0:
            raise bad("receive_tail", ">= 0 s", self.receive_tail)
        if not isinstance(self.dont_fragment, bool):
            raise bad("dont_fragment", "true or false", self.dont_fragment)

    @property
    def active_directions(self) -> tuple[Direction, ...]:
        if self.directions == "bidirectional":
            return DIRECTIONS
        return (self.directions,)

    @property
    def frames_per_direction(self) -> int:
        """Frames the tester intends to send in each active direction."""
        return int(round(self.offered_load * self.duration))

    def sender_port(self, direction: Direction) -> int:
        return 0 if direction == "forward" else 1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrialSpec:
        data = dict(data)
        for key in ("frame_size", "ip_version"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)


@dataclass(frozen=True)
class Latency:
    """One-way delays of one direction, in seconds.

    Either raw samples (``counts`` is None) or a histogram: ``values[i]``
    occurred ``counts[i]`` times (how TRex's HDR histogram arrives).
    """

    values: tuple[float, ...]
    counts: tuple[int, ...] | None = None

    @classmethod
    def from_samples(cls, samples: Iterable[float]) -> Latency:
        return cls(tuple(samples))

    @property
    def size(self) -> int:
        return sum(self.counts) if self.counts is not None else len(self.values)

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100), nearest-rank on the sorted samples.

        Nearest rank (no interpolation) so that the 99.9th percentile of 1000
        samples is a delay that a frame really had, as RFC 8219 intends.
        """
        if not 0 <= q <= 100:
            raise ValueError(f"percentile q={q}: allowed 0..100")
        n = self.size
        if n == 0:
            return math.nan
        rank = max(1, math.ceil(round(q * n / 100, 9)))  # round: 99.9 * 1000 / 100 is not exact
        if self.counts is None:
            return sorted(self.values)[rank - 1]
        seen = 0
        for value, count in sorted(zip(self.values, self.counts, strict=True)):
            seen += count
            if seen >= rank:
                return value
        return max(self.values)

    def summary(self) -> dict[str, float]:
        return {
            "samples": self.size,
            "min": self.percentile(0) if self.size else math.nan,
            "median": self.percentile(50),
            "p99_9": self.percentile(99.9),
            "max": self.percentile(100),
        }


@dataclass(frozen=True)
class DirectionResult:
    """What one direction of a trial did.

    ``frames_lost`` counts every frame that was intended but not received in
    time, including frames the tester failed to send: a tester that cannot keep
    up must never make the DUT look better.  ``tester_drops`` (frames the
    tester's own receiver dropped, e.g. a full AF_PACKET ring) are reported
    apart so that a reader can tell tester limits from DUT loss.
    """

    direction: Direction
    frames_intended: int
    frames_sent: int
    frames_received: int  # received within the frame timeout (or the tail)
    frames_late: int = 0  # received, but after the frame timeout
    tester_drops: int = 0
    duplicates: int = 0
    reordered: int = 0
    # Frames the tester sent ahead of the paced schedule (a start-up burst, or a send span shorter than the
    # duration); measured by generators that can (trex), else 0. More than SEND_OVERRUN_TOLERANCE of the
    # intended frames means the DUT was offered more than the offered load: the trial is flagged as stretched.
    frames_ahead: int = 0
    # s from the earliest direction's first frame to this direction's first frame: the tester ports' start
    # skew, recorded per trial by generators that measure it (trex); None when not measured.
    send_start: float | None = None
    send_duration: float = 0.0  # s the sender really took
    latency: Latency | None = None

    @property
    def frames_lost(self) -> int:
        return max(0, self.frames_intended - self.frames_received)

    @property
    def loss_ratio(self) -> float:
        return self.frames_lost / self.frames_intended if self.frames_intended else 0.0

    @property
    def achieved_rate(self) -> float:
        return self.frames_sent / self.send_duration if self.send_duration > 0 else 0.0

    @property
    def unsent(self) -> int:
        return max(0, self.frames_intended - self.frames_sent)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("latency")
        data.update(
            frames_lost=self.frames_lost,
            loss_ratio=self.loss_ratio,
            achieved_rate=self.achieved_rate,
        )
        if self.latency is not None:
            data["latency"] = self.latency.summary()
        return data


#: A trial whose sending took longer than duration * (1 + this) is flagged, as siitperf does.
SEND_OVERRUN_TOLERANCE = 0.001


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    directions: dict[str, DirectionResult]
    generator: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def frames_intended(self) -> int:
        return sum(d.frames_intended for d in self.directions.values())

    @property
    def frames_lost(self) -> int:
        return sum(d.frames_lost for d in self.directions.values())

    @property
    def loss_ratio(self) -> float:
        """Loss over all directions: lost / intended (CSIT's trial loss ratio)."""
        intended = self.frames_intended
        return self.frames_lost / intended if intended else 0.0

    @property
    def stretched(self) -> bool:
        """The tester did not send at the offered load: sending overran, frames went unsent, or frames went
        ahead of the paced schedule (a burst or a short send span: the DUT was offered more than the load)."""
        limit = self.spec.duration * (1 + SEND_OVERRUN_TOLERANCE)
        return any(d.unsent or d.send_duration > limit or d.frames_ahead > SEND_OVERRUN_TOLERANCE * d.frames_intended
                   for d in self.directions.values())

    @property
    def valid(self) -> bool:
        return not self.stretched

    def passes(self, loss_tolerance: float) -> bool:
        """RFC 2544 pass/fail with a disclosed loss tolerance (a ratio, 0 = zero loss)."""
        return all(d.loss_ratio <= loss_tolerance for d in self.directions.values())

    def to_dict(self) -> dict:
        return {
            "spec": self.spec.to_dict(),
            "generator": self.generator,
            "loss_ratio": self.loss_ratio,
            "stretched": self.stretched,
            "notes": list(self.notes),
            "directions": {name: d.to_dict() for name, d in self.directions.items()},
        }


@runtime_checkable
class Generator(Protocol):
    """A traffic generator behind the trial contract."""

    name: str

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Send, receive and count one trial.  Raises GeneratorError when it cannot."""

    def describe(self) -> dict:
        """Provenance: generator name, version, target and settings, for the results store."""

    def close(self) -> None:
        """Release what the generator holds (connections, processes)."""


class GeneratorError(RuntimeError):
    """The generator could not run a trial (tester gone, bad port, no permission)."""


def latency_samples_of(results: Sequence[TrialResult], direction: Direction) -> Latency:
    """All latency samples of one direction over several trials, merged."""
    values: list[float] = []
    counts: list[int] = []
    histogram = False
    for result in results:
        lat = result.directions[direction].latency if direction in result.directions else None
        if lat is None:
            continue
        values.extend(lat.values)
        if lat.counts is not None:
            histogram = True
            counts.extend(lat.counts)
        else:
            counts.extend([1] * len(lat.values))
    return Latency(tuple(values), tuple(counts) if histogram else None)
