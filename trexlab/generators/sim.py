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
  frames it fails to send count as lost and flag the trial as stretched, and
  it tags only frames it sent (fewer tags than asked when those after
  ``tag_delay`` are fewer).

Every frame's delay is ``latency_base`` + Exp(``latency_spread``) (+ ``delay``
for a held frame); a frame whose delay exceeds the trial's frame timeout is
late (counted in ``frames_late``, not received), whatever made it slow.

Latency: with ``latency_mode="tagged"`` the ``latency_frames`` tags go into
frames sent at t >= ``tag_delay`` (RFC 8219 section 7.2): the interval
[tag_delay, duration) is cut into equal slots and one frame at a random
position in each slot is tagged, so the tags are spread evenly yet cannot
alias with a periodic DUT pattern (every Nth frame delayed). A tag lost, held
past the receive tail or later than the frame timeout counts in
``lost_or_late`` (+infinity in every percentile). The send times of the last
trial's tags are kept in ``SimGenerator.tag_send_times`` so that tests can
check them. With ``"all"`` every received frame's delay is in the histogram:
the counts per histogram bucket are drawn from the delay distribution (a
multinomial over the buckets), so a 60 s trial at 1 Mfps costs no more than
one at 1 kfps.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from trexlab import __version__
from trexlab.params import InvalidParameter, check_range
from trexlab.spec.schema import doc
from trexlab.trial import (
    NANOSECOND,
    Capabilities,
    Direction,
    DirectionResult,
    Latency,
    TrialResult,
    TrialSpec,
    encode_histogram,
)

# numpy is imported where the model draws, not here: building trexlab's argument parser reads this module's options
# (every command, trexlab --help and a one-line refusal too), and numpy took a tenth of a second of that.
if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class SimulatedSUT:
    capacity: float = field(default=1_000_000.0, metadata=doc(
        "frames/s per direction the simulated DUT forwards without loss", exclusiveMinimum=0))
    capacity_noise: float = field(default=0.0, metadata=doc(
        "relative standard deviation of the capacity from trial to trial (0.05: 5 %)", minimum=0, maximum=1))
    buffer_frames: int = field(default=0, metadata=doc(
        "frames above the capacity a trial's excess is absorbed by (short trials pass more)", minimum=0))
    random_loss: float = field(default=0.0, metadata=doc(
        "probability that a frame is lost at random, a ratio (0.0001: 0.01 %)", minimum=0, maximum=1))
    every_nth_loss: int = field(default=0, metadata=doc(
        "every Nth forwarded frame is lost; 0: none (1 is refused)", minimum=0))
    latency_base: float = field(default=10e-6, metadata=doc("s, every frame's least delay", minimum=0))
    latency_spread: float = field(default=2e-6, metadata=doc(
        "s, the mean of the exponential delay added to latency_base", minimum=0))
    delay: float = field(default=0.0, metadata=doc(
        "s more that the held frames (delay_every_nth, delay_fraction) are delayed", minimum=0))
    delay_every_nth: int = field(default=0, metadata=doc("every Nth frame is held (delay); 0: none", minimum=0))
    delay_fraction: float = field(default=0.0, metadata=doc(
        "share of the frames held at random (delay), a ratio", minimum=0, maximum=1))
    tester_ceiling: float | None = field(default=None, metadata=doc(
        "frames/s per direction above which the simulated tester cannot send (its trials stretch); none: no "
        "limit", exclusiveMinimum=0))
    seed: int = field(default=1, metadata=doc("the random generator's seed", minimum=0))

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
        check_range("seed", self.seed, 0, integer=True)
        if self.every_nth_loss == 1:
            raise InvalidParameter("every_nth_loss", 1, "0 (off) or >= 2")


class SimGenerator:
    """Generator on the trial contract, backed by a SimulatedSUT."""

    name = "sim"
    # No lab; frame timeouts honoured; test frames are never fragmented here, so a DF bit would change nothing.
    capabilities = Capabilities(needs_lab=False, dont_fragment=False, frame_timeout=True, translated_frames=True)
    lab = None

    def __init__(self, sut: SimulatedSUT, wall_clock_factor: float = 0.0):
        import numpy as np
        self.sut = sut
        # Wall seconds actually waited per simulated second of trial (0: none). Lets a test or a
        # demonstration watch a campaign progress, or interrupt it mid-trial, as with a real lab.
        check_range("wall_clock_factor", wall_clock_factor, 0, 1)
        self.wall_clock_factor = wall_clock_factor
        self.rng = np.random.default_rng(sut.seed)  # drawn anew for each trial (run_trial)
        self.simulated_time = 0.0  # s: sum of trial durations and receive tails
        self.trials = 0
        self.tag_send_times: dict[str, np.ndarray] = {}  # direction -> s into the last trial, one per tag

    def describe(self) -> dict:
        return {"generator": "sim", "version": __version__, "sut": asdict(self.sut)}

    def close(self) -> None:
        pass

    def skip_trials(self, count: int) -> None:
        """Count trials of an uninterrupted run that this generator did not run (trexlab.plan.resume replays them from
        the log): the next trial then draws what it would have drawn."""
        self.trials += count

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        import numpy as np
        sut = self.sut
        # Each trial's random numbers come from (seed, its number in the run), not from one stream: a run resumed
        # mid-search, whose earlier trials are replayed from the log, goes on exactly as an uninterrupted one.
        self.rng = np.random.default_rng([sut.seed, self.trials])
        capacity = sut.capacity
        if sut.capacity_noise:
            capacity = max(0.0, capacity * (1 + sut.capacity_noise * self.rng.standard_normal()))
        results = {d: self._direction(spec, d, capacity) for d in spec.active_directions}
        # The trial's phases c to e (RFC 2544 section 23): sending, the receive tail, the restabilize wait.
        phases = spec.duration + spec.receive_tail + spec.restabilize_wait
        self.simulated_time += phases
        self.trials += 1
        if self.wall_clock_factor:
            time.sleep(phases * self.wall_clock_factor)
        return TrialResult(spec=spec, directions=results, generator=self.name)

    def _direction(self, spec: TrialSpec, direction: Direction, capacity: float) -> DirectionResult:
        sut, rng = self.sut, self.rng
        intended = spec.frames_per_direction
        sent = intended
        if sut.tester_ceiling is not None and spec.offered_load > sut.tester_ceiling:
            sent = int(sut.tester_ceiling * spec.duration)
        # Overload: what exceeds the capacity over the trial, less what the buffer holds.
        excess = max(0.0, sent - capacity * spec.duration) - sut.buffer_frames
        forwarded = sent - int(max(0.0, math.ceil(excess)))
        nth_lost = forwarded // sut.every_nth_loss if sut.every_nth_loss else 0
        forwarded -= nth_lost
        if sut.random_loss:
            forwarded -= int(rng.binomial(forwarded, sut.random_loss))
        # A frame not among the every-Nth dropped ones is lost (overload or random loss) with this probability.
        drop_probability = 1 - forwarded / (sent - nth_lost) if sent > nth_lost else 1.0
        held = self._delayed_count(forwarded)
        if held and sut.delay > spec.receive_tail and self._late_probability(spec, sut.delay) < 1:
            # Held frames sent in the last (delay - tail) s arrive after the tester stopped listening.
            share = min(1.0, (sut.delay - spec.receive_tail) / spec.duration)
            gone = int(round(held * share))
            forwarded, held = forwarded - gone, held - gone
        # The frame timeout applies to every frame's delay, not only to the held ones (issue 16).
        late_plain = int(rng.binomial(forwarded - held, self._late_probability(spec, 0.0)))
        late_held = int(rng.binomial(held, self._late_probability(spec, sut.delay))) if held else 0
        received = forwarded - late_plain - late_held
        tags: dict[str, int] = {}
        latency = None
        if spec.latency_mode == "tagged" and sent:
            latency, tags = self._tagged(spec, direction, sent, drop_probability)
        elif spec.latency_mode == "all" and sent:
            latency = self._every_frame(spec, forwarded - held - late_plain, held - late_held)
            tags = {"tags_sent": sent, "tags_received": received, "tags_lost_or_late": sent - received}
            latency = Latency(latency.histogram, latency.unit, sent - received, spec.frame_timeout)
        return DirectionResult(
            direction=direction,
            frames_intended=intended,
            frames_sent=sent,
            frames_received=received,
            frames_late=late_plain + late_held,
            send_duration=spec.duration,
            latency=latency,
            **tags,
        )

    def _late_probability(self, spec: TrialSpec, extra: float) -> float:
        """P(latency_base + extra + Exp(latency_spread) > frame timeout)."""
        if spec.frame_timeout is None:
            return 0.0
        slack = spec.frame_timeout - self.sut.latency_base - extra
        if slack < 0:
            return 1.0
        if self.sut.latency_spread <= 0:
            return 0.0
        return math.exp(-slack / self.sut.latency_spread)

    def _delayed_count(self, frames: int) -> int:
        if self.sut.delay <= 0:
            return 0
        if self.sut.delay_every_nth:
            return frames // self.sut.delay_every_nth
        if self.sut.delay_fraction:
            return int(self.rng.binomial(frames, self.sut.delay_fraction))
        return 0

    def _tagged(self, spec: TrialSpec, direction: Direction, sent: int,
                drop_probability: float) -> tuple[Latency, dict]:
        """Each tag followed through the DUT: dropped, held, past the tail, late, or received in time."""
        import numpy as np
        sut, rng = self.sut, self.rng
        n = spec.latency_frames
        if sent < spec.frames_per_direction:
            # A tester short of the rate (tester_ceiling) tags only frames it sent: at most those after tag_delay,
            # as TRex's latency stream sends fewer tags then (the procedure says so: tags_sent < tagged_frames).
            n = min(n, sent - math.ceil(round(sent * spec.tag_delay / spec.duration, 9)))
            if n <= 0:
                return Latency.from_delays(()), {"tags_sent": 0, "tags_received": 0, "tags_lost_or_late": 0}
        slot = (spec.duration - spec.tag_delay) / n
        times = spec.tag_delay + (np.arange(n) + rng.random(n)) * slot
        self.tag_send_times[direction] = times
        index = np.minimum((times * sent / spec.duration).astype(np.int64), sent - 1)
        dropped = rng.random(n) < drop_probability
        if sut.every_nth_loss:
            dropped |= index % sut.every_nth_loss == sut.every_nth_loss - 1
        delays = sut.latency_base + rng.exponential(sut.latency_spread or 0.0, n)
        if sut.delay > 0:
            if sut.delay_every_nth:
                held = index % sut.delay_every_nth == sut.delay_every_nth - 1
            else:
                held = rng.random(n) < sut.delay_fraction
            delays = delays + np.where(held, sut.delay, 0.0)
        gone = dropped | (times + delays > spec.duration + spec.receive_tail)
        if spec.frame_timeout is not None:
            gone |= delays > spec.frame_timeout
        kept = delays[~gone]
        latency = Latency.from_delays((float(x) for x in kept), lost_or_late=int(n - kept.size),
                                      timeout=spec.frame_timeout)
        return latency, {"tags_sent": n, "tags_received": int(kept.size), "tags_lost_or_late": int(n - kept.size)}

    def _every_frame(self, spec: TrialSpec, plain: int, held: int) -> Latency:
        """The histogram of every frame received in time, drawn bucket by bucket from the delay distribution."""
        histogram = Latency.empty_histogram()
        self._record(histogram, plain, self.sut.latency_base, spec.frame_timeout)
        self._record(histogram, held, self.sut.latency_base + self.sut.delay, spec.frame_timeout)
        return Latency(encode_histogram(histogram), NANOSECOND, 0, spec.frame_timeout)

    def _record(self, histogram, frames: int, low: float, cutoff: float | None) -> None:
        """Record `frames` delays of low + Exp(latency_spread) conditioned on <= cutoff (s), as counts per bucket."""
        import numpy as np
        if frames <= 0:
            return
        spread = self.sut.latency_spread
        first_value = round(low / NANOSECOND)
        high = low + 40 * spread  # exp(-40): no frame of any trial lies beyond
        if cutoff is not None:
            high = min(high, cutoff)
        if spread <= 0 or high <= low:
            histogram.record_value(first_value, frames)
            return
        first = histogram.get_counts_array_index(first_value)
        last = histogram.get_counts_array_index(int(high / NANOSECOND))
        lows = [histogram.get_value_from_index(i) for i in range(first, last + 1)]
        edges = np.array([*lows[1:], histogram.get_highest_equivalent_value(lows[-1]) + 1]) * NANOSECOND
        cdf = 1 - np.exp(-(np.clip(edges, low, high) - low) / spread)
        probabilities = np.diff(np.concatenate(([0.0], cdf)))
        counts = self.rng.multinomial(frames, probabilities / probabilities.sum())
        for value, count in zip(lows, counts, strict=True):
            if count:
                histogram.record_value(max(value, first_value), int(count))


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
            kind = int if key in ("buffer_frames", "every_nth_loss", "delay_every_nth", "seed") else float
            try:
                value = kind(float(value)) if kind is int else kind(value)
            except ValueError:
                raise InvalidParameter(key, value, "a number") from None
        typed[key] = value
    return SimGenerator(SimulatedSUT(**typed), wall_clock_factor)
