"""The simulated SUT: a declared device answering trials on simulated time.

It exists so that procedures can be tested against known answers and their
cost measured without a lab: a 60 s trial takes no wall time, yet the result
reports its 60 s, so the sum of trial durations of a search is exact.

The device is declared, not guessed:

* ``capacity``: loss-free forwarding limit per direction [frames/s]; above it
  the excess is lost, less what ``buffer_frames`` absorbs (so short trials can
  pass at loads where long ones fail: a duration-dependent SUT);
* ``capacity_noise``: relative standard deviation of the capacity from trial to
  trial (a noisy SUT, like a vCPU that stalls now and then);
* ``random_loss``: probability that any frame is lost (e.g. 0.0001 = 0.01 %);
* ``every_nth_loss``: every Nth forwarded frame is lost;
* ``latency_base`` + an exponential spread of mean ``latency_spread`` [s];
* ``delay_every_nth`` / ``delay_fraction`` frames are held back ``delay`` seconds
  more (the selective delay of Lencse et al. 2020, Figs. 4-6);
* ``tester_ceiling``: the rate above which the (simulated) tester cannot send;
  frames it fails to send count as lost and flag the trial as stretched.

Latency samples: with ``latency_mode="tagged"`` the tagged frames sit at random
positions in the trial (so whether a single tagged frame meets a delayed one is
luck, as RFC 2544's one-frame latency is); with ``"all"`` a uniform random
sample of at most ``max_latency_samples`` received frames stands for every
frame (percentiles of 100 000 samples are precise far beyond what PDV needs).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from trexlab import __version__
from trexlab.params import InvalidParameter, check_range
from trexlab.trial import DirectionResult, Latency, TrialResult, TrialSpec


@dataclass(frozen=True)
class SimulatedSUT:
    capacity: float = 1_000_000.0
    capacity_noise: float = 0.0
    buffer_frames: int = 0
    random_loss: float = 0.0
    every_nth_loss: int = 0
    latency_base: float = 10e-6
    latency_spread: float = 2e-6
    delay: float = 0.0
    delay_every_nth: int = 0
    delay_fraction: float = 0.0
    tester_ceiling: float | None = None
    max_latency_samples: int = 100_000
    seed: int = 1

    def __post_init__(self) -> None:
        check_range("capacity", self.capacity, 0, low_open=True)
        check_range("capacity_noise", self.capacity_noise, 0, 1)
        check_range("buffer_frames", self.buffer_frames, 0, integer=True)
        check_range("random_loss", self.random_loss, 0, 1)
        check_range("every_nth_loss", self.every_nth_loss, 0, integer=True)
        check_range("latency_base", self.latency_base, 0)
        check_range("latency_spread", self.latency_spread, 0)
        check_range("delay", self.delay, 0)
        check_range("delay_every_nth", self.delay_every_nth, 0, integer=True)
        check_range("delay_fraction", self.delay_fraction, 0, 1)
        if self.tester_ceiling is not None:
            check_range("tester_ceiling", self.tester_ceiling, 0, low_open=True)
        check_range("max_latency_samples", self.max_latency_samples, 1, integer=True)
        check_range("seed", self.seed, 0, integer=True)
        if self.every_nth_loss == 1:
            raise InvalidParameter("every_nth_loss", 1, "0 (off) or >= 2")


class SimGenerator:
    """Generator on the trial contract, backed by a SimulatedSUT."""

    name = "sim"

    def __init__(self, sut: SimulatedSUT, wall_clock_factor: float = 0.0):
        self.sut = sut
        # Wall seconds actually waited per simulated second of trial (0: none). Lets a test or a
        # demonstration watch a campaign progress, or interrupt it mid-trial, as with a real lab.
        check_range("wall_clock_factor", wall_clock_factor, 0, 1)
        self.wall_clock_factor = wall_clock_factor
        self.rng = np.random.default_rng(sut.seed)
        self.simulated_time = 0.0  # s: sum of trial durations and receive tails
        self.trials = 0

    def describe(self) -> dict:
        return {"generator": "sim", "version": __version__, "sut": asdict(self.sut)}

    def close(self) -> None:
        pass

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        sut = self.sut
        capacity = sut.capacity
        if sut.capacity_noise:
            capacity = max(0.0, capacity * (1 + sut.capacity_noise * self.rng.standard_normal()))
        results = {d: self._direction(spec, d, capacity) for d in spec.active_directions}
        self.simulated_time += spec.duration + spec.receive_tail
        self.trials += 1
        if self.wall_clock_factor:
            time.sleep((spec.duration + spec.receive_tail) * self.wall_clock_factor)
        return TrialResult(spec=spec, directions=results, generator=self.name)

    def _direction(self, spec: TrialSpec, direction: str, capacity: float) -> DirectionResult:
        sut, rng = self.sut, self.rng
        intended = spec.frames_per_direction
        sent = intended
        if sut.tester_ceiling is not None and spec.offered_load > sut.tester_ceiling:
            sent = int(sut.tester_ceiling * spec.duration)
        # Overload: what exceeds the capacity over the trial, less what the buffer holds.
        excess = max(0.0, sent - capacity * spec.duration) - sut.buffer_frames
        forwarded = sent - int(max(0.0, math.ceil(excess)))
        if sut.every_nth_loss:
            forwarded -= forwarded // sut.every_nth_loss
        if sut.random_loss:
            forwarded -= int(rng.binomial(forwarded, sut.random_loss))
        delayed = self._delayed_count(forwarded)
        late = 0
        if delayed:
            arrival = sut.latency_base + sut.delay
            if spec.frame_timeout is not None and arrival > spec.frame_timeout:
                late = delayed  # arrived, but too late to count
            elif sut.delay > spec.receive_tail:
                # Delayed frames sent in the last (delay - tail) s arrive after the tester stopped listening.
                share = min(1.0, (sut.delay - spec.receive_tail) / spec.duration)
                forwarded -= int(round(delayed * share))
        received = forwarded - late
        latency = self._latency(spec, sent, received, forwarded, late)
        return DirectionResult(
            direction=direction,
            frames_intended=intended,
            frames_sent=sent,
            frames_received=received,
            frames_late=late,
            send_duration=spec.duration,
            latency=latency,
        )

    def _delayed_count(self, frames: int) -> int:
        if self.sut.delay <= 0:
            return 0
        if self.sut.delay_every_nth:
            return frames // self.sut.delay_every_nth
        if self.sut.delay_fraction:
            return int(self.rng.binomial(frames, self.sut.delay_fraction))
        return 0

    def _latency(self, spec: TrialSpec, sent: int, received: int, arrived: int, late: int) -> Latency | None:
        if spec.latency_mode == "none" or sent == 0:
            return None
        sut, rng = self.sut, self.rng
        if spec.latency_mode == "tagged":
            # Tagged frames at random positions; each is lost with the trial's loss probability.
            positions = rng.integers(0, sent, size=min(spec.latency_frames, sent))
            survive = rng.random(positions.size) < (arrived / sent)
        else:
            positions = rng.integers(0, sent, size=min(sut.max_latency_samples, max(arrived, 1)))
            survive = np.ones(positions.size, dtype=bool)
        positions = positions[survive]
        delays = sut.latency_base + rng.exponential(sut.latency_spread or 0.0, positions.size)
        if sut.delay > 0:
            if sut.delay_every_nth:
                held = (positions % sut.delay_every_nth) == sut.delay_every_nth - 1
            else:
                held = rng.random(positions.size) < sut.delay_fraction
            delays = delays + np.where(held, sut.delay, 0.0)
        if spec.frame_timeout is not None:
            delays = delays[delays <= spec.frame_timeout]
        return Latency.from_delays((float(x) for x in delays), timeout=spec.frame_timeout)


def create(wall_clock_factor: float | str = 0.0, **options) -> SimGenerator:
    """A sim generator from options (numbers may come as strings from the CLI)."""
    fields = SimulatedSUT.__dataclass_fields__
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise InvalidParameter("sim option", unknown[0], ", ".join([*fields, "wall_clock_factor"]))
    try:
        wall_clock_factor = float(wall_clock_factor)
    except ValueError:
        raise InvalidParameter("wall_clock_factor", wall_clock_factor, "a number 0..1") from None
    typed = {}
    for key, value in options.items():
        if isinstance(value, str):
            kind = int if key in ("buffer_frames", "every_nth_loss", "delay_every_nth",
                                  "max_latency_samples", "seed") else float
            try:
                value = kind(float(value)) if kind is int else kind(value)
            except ValueError:
                raise InvalidParameter(key, value, "a number") from None
        typed[key] = value
    return SimGenerator(SimulatedSUT(**typed), wall_clock_factor)
