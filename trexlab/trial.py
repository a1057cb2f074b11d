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

import bisect
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from trexlab.addressing import MAX_NETWORKS
from trexlab.params import InvalidParameter
from trexlab.results.stats import median_ranks, nearest_rank

if TYPE_CHECKING:
    from trexlab.testbed.inventory import Lab

Direction = Literal["forward", "reverse"]
DIRECTIONS: tuple[Direction, Direction] = ("forward", "reverse")
TrafficDirections = Literal["bidirectional", "forward", "reverse"]
PortMode = Literal["fixed", "rfc4814"]
LatencyMode = Literal["none", "tagged", "all"]

MIN_FRAME_SIZE = 64  # Ethernet's minimum frame, FCS included
#: Bytes of a test frame around its IP header: Ethernet header 14 + FCS 4, and the UDP header 8.
ETHERNET_HEADER_AND_FCS = 18
UDP_HEADER = 8
#: IP header bytes per version (no options, no extension headers).
IP_HEADER_BYTES = {4: 20, 6: 40}
#: The testers' tag in every test frame's UDP payload: swtester's payload (sequence number, send time, trial id,
#: flags, magic; swtester.c PAYLOAD_LEN) and TRex's latency signature (trex-profiles LATENCY_SIGNATURE) are 16 B.
TEST_TAG_BYTES = 16
#: Smallest test frame per IP version (bytes, FCS included): headers plus the testers' tag, and never below
#: Ethernet's 64 B. IPv6: 82 B. RFC 5180 section 5 lists 78 B as IPv6's smallest, which leaves 12 B after the UDP
#: header, too few for the tag; siitperf's 84 B is its SIIT bound (MIN_SIIT_IPV6_FRAME_SIZE), which it applies to
#: every IPv6 frame only because its one size parameter is the IPv6 side's.
MIN_FRAME_SIZE_BY_VERSION = {
    version: max(MIN_FRAME_SIZE, ETHERNET_HEADER_AND_FCS + header + UDP_HEADER + TEST_TAG_BYTES)
    for version, header in IP_HEADER_BYTES.items()}
#: An IPv6 header is 20 bytes longer than an IPv4 header: SIIT frames grow or shrink by this.
SIIT_SIZE_DELTA = IP_HEADER_BYTES[6] - IP_HEADER_BYTES[4]
#: The smallest IPv6 frame of a SIIT trial (ports of different IP versions): translated, it is SIIT_SIZE_DELTA
#: shorter, and an IPv4 frame below Ethernet's 64 B would be padded by the DUT, not translated to its size (RFC 8219
#: section 5.1's IPv6 sizes are the IPv4 ones + 20 B; siitperf takes 84..1538 B IPv6 frames, IPv4 = IPv6 - 20).
MIN_SIIT_IPV6_FRAME_SIZE = MIN_FRAME_SIZE + SIIT_SIZE_DELTA
MAX_FRAME_SIZE = 9018  # jumbo frames; media limits say what a link can carry
#: RFC 2544 section 24: the test portion of a trial SHOULD last at least 60 s; section 23: after sending stops, the
#: tester waits 2 s for frames still in the DUT (Lencse 2021 restates both for RFC 8219's throughput). The defaults
#: of the trials that follow it, and what a shorter one is disclosed against (procedures.common.shorter_than).
RFC2544_TRIAL_DURATION = 60.0
RFC2544_RECEIVE_TAIL = 2.0
#: RFC 2544 section 23 e: after the receive tail, the tester waits at least 5 s for the DUT to restabilize before the
#: next trial. What a shorter wait is disclosed against; not the default (TrialSpec.restabilize_wait): it would add
#: 5 s to every trial of every search, so a user asks for it, and its absence is disclosed.
RFC2544_RESTABILIZE_WAIT = 5.0
#: The longest restabilize wait, s: as MAX_RECEIVE_TAIL, a shared spec must not hold the lab endlessly.
MAX_RESTABILIZE_WAIT = 60.0
#: The longest receive tail, s: the software tester's own bound (swtester --tail); RFC 2544 asks for 2 s. A longer
#: one would only hold the lab: with TRex the tail is waited out, and a shared spec could make it endless.
MAX_RECEIVE_TAIL = 60.0
#: The highest offered load, frames/s per direction: swtester's own bound (--rate), above 400 GbE's 595 Mfps of
#: 64-byte frames. Rates are floats: far above it a rate search's midpoints stop moving (and the sim's frame counts
#: overflow), so a search given one would never end.
MAX_OFFERED_LOAD = 1e9
#: The most frames a trial may intend per direction: the software tester numbers frames in 32 bits (frame 2^32 + k
#: would arrive as frame k, a duplicate, and count the trial lost), and swtester refuses more, or none, at the trial.
#: Every load a procedure may offer is checked against it when its plan is made (check_trial_frames), not mid-run.
MAX_FRAMES_PER_DIRECTION = 2**32
#: The longest frame timeout, s: the software tester's own bound (swtester --timeout), so that a longer one is refused
#: with the spec, before a run makes its directory, not by swtester at the run's first trial.
MAX_FRAME_TIMEOUT = 3600.0
#: The longest trial, s of sending, of any procedure: a shared spec must not hold the lab for longer per trial
#: (RFC 2544 asks for 60 s, RFC 8219's latency trials 120 s).
MAX_TRIAL_DURATION = 3600


def tolerance_ratio(percent: float) -> Fraction:
    """A loss tolerance in % as the exact ratio its decimal says (0.011 -> 11/100000), for TrialResult.passes: in
    binary floating point 0.011 / 100 is 0.00010999999999999999, below 11/100000, so a trial that lost exactly the
    disclosed tolerance failed."""
    return Fraction(repr(float(percent))) / 100


def check_trial_frames(keys: str, load: float, duration: float) -> None:
    """A trial at load (fps) for duration (s) intends 1..MAX_FRAMES_PER_DIRECTION frames per direction; keys names
    what the user sets them by. Below one frame a trial measures nothing (a generator other than swtester would run
    it with 0 frames, its loss ratio 0); the bound is on load x duration itself, so that any rounding of it to whole
    frames (swtester's half up, TrialSpec.frames_per_direction's half even) falls within it."""
    frames = load * duration
    if not 1 <= frames <= MAX_FRAMES_PER_DIRECTION:
        # Too many: the whole frames, at least one above the bound; too few: the fraction of a frame.
        raise InvalidParameter(keys, math.ceil(frames) if frames > 1 else float(f"{frames:.3g}"),
                               f"1..{MAX_FRAMES_PER_DIRECTION} frames per direction per trial ({load:g} fps for "
                               f"{duration:g} s; the testers number frames in 32 bits)")


class InvalidTrialSpec(InvalidParameter):
    """A trial parameter is outside its allowed range; the message names it."""


@dataclass(frozen=True)
class TrialSpec:
    """What one trial asks of a generator.

    ``ip_version`` and ``frame_size`` are given per tester port: frames *sent*
    from port ``i`` are IPv``ip_version[i]`` frames of ``frame_size[i]`` bytes.
    For SIIT (e.g. NAT64 with IPv6 on port 0) that is ``(6, 4)`` and
    ``(84, 64)``: each side sends and expects its own version and size, the
    IPv6 side from MIN_SIIT_IPV6_FRAME_SIZE; plain IPv6 from
    MIN_FRAME_SIZE_BY_VERSION[6].
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
    # s after the trial starts before the first tagged frame (RFC 8219 section 7.2, siitperf's `delay`): the tags
    # go into frames sent at t >= tag_delay, spread evenly over [tag_delay, duration), so a DUT's warm-up (caches,
    # ARP/ND, route lookups) is not measured. latency_mode "all" measures every frame from t = 0 and ignores it.
    tag_delay: float = 0.0
    frame_timeout: float | None = None  # s; a frame later than this counts as lost
    receive_tail: float = RFC2544_RECEIVE_TAIL  # s of receiving after sending stops
    # s the tester sends nothing after the receive tail, before anything else: the DUT restabilizes before the next
    # trial (RFC 2544 section 23 e). Part of the trial: the generator waits it out (trexlab.trial.restabilize).
    restabilize_wait: float = 0.0
    # IPv4 Don't Fragment: a DUT must drop a frame too big for its next link instead of fragmenting it (path
    # MTU trials, RFC 6349); IPv6 routers never fragment. Generators that cannot set it say so (Capabilities).
    dont_fragment: bool = False

    def __post_init__(self) -> None:
        def bad(name: str, allowed: str, value: object) -> InvalidTrialSpec:
            return InvalidTrialSpec(name, value, allowed)

        def whole(value: object) -> bool:  # a count, not a float (100.5 B frames) nor a bool (an int to Python)
            return isinstance(value, int) and not isinstance(value, bool)

        if not (0 < self.offered_load <= MAX_OFFERED_LOAD):
            raise bad("offered_load", f"a rate > 0 and <= {MAX_OFFERED_LOAD:g} frames/s", self.offered_load)
        if not (self.duration > 0 and math.isfinite(self.duration)):
            raise bad("duration", "> 0 s", self.duration)
        # A trial of no frame measures nothing (a generator other than swtester ran it with 0 frames, its loss ratio
        # 0), one of more than 2^32 no tester numbers: the plan refuses the procedures' loads by their own keys
        # (check_trial_frames), and every spec handed to a generator is held to the same bound here.
        try:
            check_trial_frames("offered_load x duration", self.offered_load, self.duration)
        except InvalidParameter as exc:
            raise bad(exc.name, exc.allowed, exc.value) from None
        for i, size in enumerate(self.frame_size):
            if not whole(size) or not MIN_FRAME_SIZE <= size <= MAX_FRAME_SIZE:
                raise bad(f"frame_size[{i}]", f"{MIN_FRAME_SIZE}..{MAX_FRAME_SIZE} bytes (an integer)", size)
        for i, version in enumerate(self.ip_version):
            if not whole(version) or version not in (4, 6):
                raise bad(f"ip_version[{i}]", "4 or 6", version)
        if len(self.frame_size) != 2 or len(self.ip_version) != 2:
            raise bad("frame_size/ip_version", "one value per tester port (2)", self.frame_size)
        siit = self.ip_version[0] != self.ip_version[1]
        for i, (size, version) in enumerate(zip(self.frame_size, self.ip_version, strict=True)):
            if version == 6 and siit and size < MIN_SIIT_IPV6_FRAME_SIZE:
                raise bad(f"frame_size[{i}]", f"{MIN_SIIT_IPV6_FRAME_SIZE}..{MAX_FRAME_SIZE} bytes for IPv6 test "
                          f"frames of SIIT (translated they are {SIIT_SIZE_DELTA} B shorter, and Ethernet's minimum "
                          f"is {MIN_FRAME_SIZE} B)", size)
            if size < MIN_FRAME_SIZE_BY_VERSION[version]:
                raise bad(f"frame_size[{i}]", f"{MIN_FRAME_SIZE_BY_VERSION[version]}..{MAX_FRAME_SIZE} bytes for "
                          f"IPv{version} test frames (IPv{version}/UDP headers and the testers' {TEST_TAG_BYTES} B "
                          "tag)", size)
        if self.directions not in ("bidirectional", "forward", "reverse"):
            raise bad("directions", "bidirectional, forward, reverse", self.directions)
        if self.port_mode not in ("fixed", "rfc4814"):
            raise bad("port_mode", "fixed, rfc4814", self.port_mode)
        if not whole(self.destination_networks) or not 1 <= self.destination_networks <= MAX_NETWORKS:
            raise bad("destination_networks", f"1..{MAX_NETWORKS} (an integer)", self.destination_networks)
        if self.latency_mode not in ("none", "tagged", "all"):
            raise bad("latency_mode", "none, tagged, all", self.latency_mode)
        if not whole(self.latency_frames) or (self.latency_mode == "tagged" and self.latency_frames < 1):
            raise bad("latency_frames", ">= 1 with latency_mode=tagged (an integer)", self.latency_frames)
        if not (0 <= self.tag_delay < self.duration):
            raise bad("tag_delay", f"0 <= tag_delay < duration ({self.duration:g} s)", self.tag_delay)
        if self.frame_timeout is not None and not 0 < self.frame_timeout <= MAX_FRAME_TIMEOUT:
            raise bad("frame_timeout", f"> 0 and <= {MAX_FRAME_TIMEOUT:g} s or None", self.frame_timeout)
        if not 0 <= self.receive_tail <= MAX_RECEIVE_TAIL:  # NaN and infinity fail too
            raise bad("receive_tail", f"0..{MAX_RECEIVE_TAIL:g} s", self.receive_tail)
        if not 0 <= self.restabilize_wait <= MAX_RESTABILIZE_WAIT:
            raise bad("restabilize_wait", f"0..{MAX_RESTABILIZE_WAIT:g} s", self.restabilize_wait)
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


#: Latency histograms built here (sim, tests) keep 3 significant digits: a bucket is at most 0.1 % of its
#: value wide (8 ns at 10 us), values in nanoseconds up to an hour.  Decoded histograms keep their own layout.
LATENCY_SIGNIFICANT_DIGITS = 3
LATENCY_HIGHEST_UNITS = 3600 * 10**9
NANOSECOND = 1e-9


def _histogram_class():
    from hdrh.histogram import HdrHistogram  # imported lazily: the CLI starts without it

    return HdrHistogram


def format_seconds(value: float) -> str:
    """A delay for people: '10 ms', '25.3 us', '1.5 s'."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def lost_tags_text(timeout: float | None) -> str:
    """What a percentile that falls among lost or late tags is reported as (never a received frame's delay)."""
    if timeout is None:
        return "> receive tail (lost tags)"
    return f"> {format_seconds(timeout)} (lost tags)"


def delay_for_json(value: float, timeout: float | None) -> float | str | None:
    """A delay as JSON shows it: seconds, or the lost-tags text when it lies among lost or late tags."""
    if math.isinf(value):
        return lost_tags_text(timeout)
    if math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class Latency:
    """One direction's one-way delays of tagged frames (or of every frame, latency_mode "all").

    ``histogram`` is the compressed base64 HdrHistogram (V2, the ``hdrhistogram``
    library's encode() format, the one TRex's ``--hdrh`` exports) of the delays
    of the frames received within the frame timeout, in units of ``unit``
    seconds.  ``lost_or_late`` measured frames never arrived or arrived after
    the frame timeout: they enter every percentile as +infinity (the frame
    timeout is Lencse et al. 2020's proposal, siitperf-pdv's, not RFC 8219's: a
    later frame is lost; siitperf-lat gives a lost tag a penalty delay above
    any it can measure), so a 99.9th percentile that falls among them is
    reported as "> timeout (lost tags)", never as a delay a received frame had.
    """

    histogram: str  # compressed base64 HdrHistogram V2 of the delays of frames received in time
    unit: float  # s per histogram value: 1e-9 (swtester, sim: ns), 1e-6 (TRex: us)
    lost_or_late: int = 0  # measured frames lost or later than the frame timeout: +infinity
    timeout: float | None = None  # s, the frame timeout in force (None: the receive tail decided)

    def __post_init__(self) -> None:
        if not (self.unit > 0 and math.isfinite(self.unit)):
            raise InvalidParameter("unit", self.unit, "> 0 s per histogram value")
        if isinstance(self.lost_or_late, bool) or not isinstance(self.lost_or_late, int) or self.lost_or_late < 0:
            raise InvalidParameter("lost_or_late", self.lost_or_late, "an integer >= 0")
        if self.timeout is not None and not self.timeout > 0:
            raise InvalidParameter("timeout", self.timeout, "> 0 s or None")

    @classmethod
    def from_delays(cls, delays_s: Iterable[float], lost_or_late: int = 0, timeout: float | None = None,
                    unit: float = NANOSECOND) -> Latency:
        """Record delays given in seconds (rounded to whole units) into a new histogram."""
        histogram = cls.empty_histogram()
        values: dict[int, int] = {}
        for delay in delays_s:
            value = round(delay / unit)
            if not 0 <= value <= LATENCY_HIGHEST_UNITS:
                raise InvalidParameter("delay", delay, f"0..{LATENCY_HIGHEST_UNITS * unit:g} s")
            values[value] = values.get(value, 0) + 1
        for value, count in values.items():
            histogram.record_value(value, count)
        return cls(encode_histogram(histogram), unit, lost_or_late, timeout)

    @staticmethod
    def empty_histogram():
        """A histogram of the layout this project records into (nanoseconds, 3 significant digits)."""
        return _histogram_class()(1, LATENCY_HIGHEST_UNITS, LATENCY_SIGNIFICANT_DIGITS)

    @cached_property
    def decoded(self):
        """The histogram as an ``hdrh.histogram.HdrHistogram`` (decoded once)."""
        return _histogram_class().decode(self.histogram)

    @property
    def size(self) -> int:
        """Frames received in time, i.e. in the histogram."""
        return self.decoded.get_total_count()

    @property
    def measured(self) -> int:
        """Frames the percentiles rank: received in time plus lost or late."""
        return self.size + self.lost_or_late

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100) in seconds, nearest rank over received + lost/late frames.

        Nearest rank (no interpolation), so that the 99.9th percentile of 1000
        frames is the 999th smallest delay: the bucket of one a frame really had,
        or +infinity when that rank falls among the lost or late frames. The
        histogram keeps each delay only to its bucket (3 significant digits),
        so each figure reads the bucket's cautious edge: q > 0
        its upper edge, no delay in the bucket above it; q = 0, the minimum,
        its lower edge, no delay below it.
        """
        return self.percentiles([q])[0]

    def percentiles(self, qs: Iterable[float]) -> list[float]:
        """Several percentiles (0..100) by the rule of percentile(), in one pass over the histogram."""
        qs = list(qs)
        n = self.measured
        if not n:
            return [math.nan] * len(qs)
        edges = self._at_ranks([nearest_rank(q, n) for q in qs])
        return [low if q == 0 else high for q, (low, high) in zip(qs, edges, strict=True)]

    def median(self) -> float:
        """The typical latency of RFC 8219 section 7.2, Median(Li), in seconds: the middle delay of an odd count,
        of an even count the mean of the two middle ones (as siitperf computes it; trexlab.results.stats's
        median over repetitions is the same rule), each read at its bucket's upper edge as every percentile above 0 is;
        +infinity when a middle rank falls among lost or late tags."""
        n = self.measured
        if n == 0:
            return math.nan
        (_, low), (_, high) = self._at_ranks(list(median_ranks(n)))
        return (low + high) / 2

    def _at_ranks(self, ranks: list[int]) -> list[tuple[float, float]]:
        """The delays (s) of these 1-based ranks over received + lost/late frames: the lower and upper edges of the
        bucket holding the rank (a delay recorded there lies between them), or +infinity among the lost or late
        ones."""
        histogram = self.decoded
        # The counts array read up to the largest delay's bucket, not hdrh's recorded iterator: that one makes
        # several Python calls per bucket it passes, recorded or not (0.1 CPU-s per summary of a trial whose latest
        # tag took milliseconds, 50 times this loop's; the sim latency campaigns of the tests spent most of their
        # time there). Same buckets: each recorded one's lowest equivalent value and the count up to it.
        last = histogram.get_counts_array_index(histogram.get_max_value())
        edges, cumulative, total = [], [], 0
        for index, count in enumerate(histogram.counts[:last + 1]):
            if count:
                total += count
                low = histogram.get_value_from_index(index)
                edges.append((low * self.unit, histogram.get_highest_equivalent_value(low) * self.unit))
                cumulative.append(total)
        return [(math.inf, math.inf) if rank > total else edges[bisect.bisect_left(cumulative, rank)]
                for rank in ranks]

    def resolution(self, delay: float) -> float:
        """s: the width of the histogram bucket holding a delay of this size (at least one unit). A figure read at
        that delay (a bucket's edge, percentile()) lies up to this far from the frame's delay, and PDV (the 99.9th
        percentile's upper edge less the minimum's lower edge) is over by up to the two buckets' widths: at 100 ms a
        3-significant-digit bucket is 65.5 us wide, however many nanoseconds the unit."""
        histogram, value = self.decoded, round(delay / self.unit)
        return (histogram.get_highest_equivalent_value(value) - histogram.get_lowest_equivalent_value(value) + 1) \
            * self.unit

    def summary(self) -> dict[str, float]:
        """Frames received and lost/late, minimum, median (RFC 8219's, median()), 99.9th percentile and maximum
        (s, inf = lost tags)."""
        low, p99_9, high = self.percentiles((0, 99.9, 100))
        return {"samples": self.size, "lost_or_late": self.lost_or_late, "min": low, "median": self.median(),
                "p99_9": p99_9, "max": high}

    def to_dict(self) -> dict:
        """For the trial log: the histogram itself (to merge and plot later) and its summary, JSON-safe."""
        summary = {key: delay_for_json(value, self.timeout) if key not in ("samples", "lost_or_late") else value
                   for key, value in self.summary().items()}
        return {"histogram": self.histogram, "unit": self.unit, "lost_or_late": self.lost_or_late,
                "timeout": self.timeout, **summary}

    @classmethod
    def from_dict(cls, data: dict) -> Latency:
        return cls(data["histogram"], float(data["unit"]), int(data.get("lost_or_late", 0)), data.get("timeout"))

    @classmethod
    def merge(cls, latencies: Iterable[Latency]) -> Latency | None:
        """Several trials' delays of one direction as one distribution (None when there are none)."""
        latencies = list(latencies)
        if not latencies:
            return None
        units = {lat.unit for lat in latencies}
        if len(units) != 1:
            raise ValueError(f"cannot merge latency histograms of different units: {sorted(units)}")
        # A lost or late tag was later than its own trial's timeout, so later than the smallest of them.
        timeouts = [lat.timeout for lat in latencies if lat.timeout is not None]
        timeout = min(timeouts) if len(timeouts) == len(latencies) else None
        merged = _histogram_class().decode(latencies[0].histogram)
        for lat in latencies[1:]:
            merged.add(lat.decoded)
        return cls(encode_histogram(merged), latencies[0].unit, sum(lat.lost_or_late for lat in latencies), timeout)


def encode_histogram(histogram) -> str:
    return histogram.encode().decode("ascii")


@dataclass(frozen=True)
class DirectionResult:
    """What one direction of a trial did.

    ``frames_lost`` counts every frame that was intended but not received in
    time, including frames the tester failed to send: a tester that cannot keep
    up must never make the DUT look better.  ``tester_drops`` (frames the
    tester's own receiver dropped, e.g. a full AF_PACKET ring) are reported
    apart so that a reader can tell tester limits from DUT loss; None when the
    generator could not read them (TRex gave "N/A" for the port's ierrors):
    unknown, never taken for none (TrialResult.tester_drops_unknown).
    """

    direction: Direction
    frames_intended: int
    frames_sent: int
    frames_received: int  # received within the frame timeout (or the tail)
    frames_late: int = 0  # received, but after the frame timeout
    tester_drops: int | None = 0
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
    # How far the sender fell behind its paced schedule, from generators that measure it (software: swtester's
    # pacing), else None/0. send_lag_max: s, the largest lag of the next frame to send behind its due time.
    # send_burst_max: frames, the most it sent back to back to catch up (a constant-rate tester catches up only a
    # small backlog: swtester at most 512 frames). send_slip: s by which the sender moved the rest of its
    # schedule later when a larger backlog was due (it was stalled: a burst of the backlog would have offered the
    # DUT more than the load; swtester catches up 512 frames of it and slips by the rest); the slip lengthens
    # send_duration, so more than SEND_OVERRUN_TOLERANCE of the duration makes the trial stretched.
    send_lag_max: float | None = None
    send_burst_max: int | None = None
    send_slip: float = 0.0
    latency: Latency | None = None
    # Measured frames (latency_mode "tagged": tagged frames; "all": every frame): sent by the tester, received
    # within the frame timeout, and lost or late (= sent - received; they enter the latency as +infinity).
    tags_sent: int = 0
    tags_received: int = 0
    tags_lost_or_late: int = 0

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
            data["latency"] = self.latency.to_dict()
        return data


#: A trial whose sending took longer than duration * (1 + this) is flagged, as siitperf does.
SEND_OVERRUN_TOLERANCE = 0.001
#: A stretched trial is the hypervisor's doing (TrialResult.stolen) when it took at least this share of the overrun
#: from the tester's CPUs. Not all of it: /proc/stat counts steal in whole ticks (USER_HZ, 10 ms), so a 31 ms stall
#: reads as 30 ms and a 15 ms one as 10 ms, and a vCPU given back still owes the sender its timer and softirq work
#: (the slip is the steal plus that). A tester too slow for the load overruns far more than the steal of a trial
#: (here ~1.7 % of a CPU, 50 ms of a 3 s trial). Either way the trial never passes: the rule decides only how
#: often it is run again and which limit the result names.
STEAL_SHARE = 0.5


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    directions: dict[Direction, DirectionResult]
    generator: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Frames the host kernel's per-CPU receive backlog dropped during the trial (/proc/net/softnet_stat), measured
    # by generators whose tester shares the host's kernel with the DUT (software on a namespace tester), else 0.
    # Any frame, not only a test frame, and the host's loss, not the DUT's: a trial with such drops is invalid.
    host_drops: int = 0
    # s of CPU time the hypervisor took from the tester's CPUs during the trial (/proc/stat's steal: the most any
    # one of them lost, as a sender pinned to one CPU loses that CPU's steal), measured by generators whose tester
    # shares this machine (software on a namespace tester), else 0.0. A stall of a vCPU, not of the tester:
    # see stolen.
    host_steal: float = 0.0

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
    def tester_drops(self) -> int:
        """Frames the tester's own receivers are known to have dropped, over all directions
        (DirectionResult.tester_drops): the tester's loss, not the DUT's, so a trial with any is invalid. Directions
        whose count is unknown add nothing here and are named by tester_drops_unknown."""
        return sum(d.tester_drops or 0 for d in self.directions.values())

    @property
    def tester_drops_unknown(self) -> tuple[Direction, ...]:
        """The directions whose tester drops the generator could not read (DirectionResult.tester_drops None): the
        trial's loss there may be the tester's, which no count rules out."""
        return tuple(name for name, d in self.directions.items() if d.tester_drops is None)

    @property
    def stretched(self) -> bool:
        """The tester did not send at the offered load: sending overran (a sender too slow, or one whose schedule
        slipped after a stall: send_slip), frames went unsent, or frames went ahead of the paced schedule (a burst
        or a short send span: the DUT was offered more than the load). Procedures never count a stretched trial
        as a pass (trexlab.procedures.common.TrialRunner runs it again first)."""
        limit = self.spec.duration * (1 + SEND_OVERRUN_TOLERANCE)
        return any(d.unsent or d.send_duration > limit or d.send_slip > SEND_OVERRUN_TOLERANCE * self.spec.duration
                   or d.frames_ahead > SEND_OVERRUN_TOLERANCE * d.frames_intended for d in self.directions.values())

    @property
    def overrun(self) -> float:
        """s by which the slowest direction's sending overran the duration or slipped its schedule (0 when none)."""
        return max((max(d.send_slip, d.send_duration - self.spec.duration) for d in self.directions.values()),
                   default=0.0)

    @property
    def all_sent(self) -> bool:
        """Every direction sent every frame it intended: a stretched trial that did is a stall (run again), one
        that did not is a tester well below the load (it would stretch again)."""
        return not any(d.unsent for d in self.directions.values())

    @property
    def stolen(self) -> bool:
        """Stretched by the hypervisor, not by the tester: every frame sent, the sending overran the tolerance, and
        the hypervisor took at least STEAL_SHARE of that overrun from the tester's CPUs (host_steal). The one rule
        for a host disturbance of a stretched trial (TrialRunner runs such a trial again, HOST_DISTURBANCE_RUNS)."""
        overrun = self.overrun
        return (self.stretched and self.host_steal > 0 and self.all_sent
                and overrun > SEND_OVERRUN_TOLERANCE * self.spec.duration and self.host_steal >= STEAL_SHARE * overrun)

    @property
    def valid(self) -> bool:
        """Whether the trial measured the DUT at the offered load: not stretched, and no frame dropped by the
        host's receive backlog or by the tester's own receivers (their loss would count as the DUT's). Procedures
        never count an invalid trial as a pass (trexlab.procedures.common.TrialRunner runs it again first). An unknown
        count (tester_drops_unknown) leaves the trial valid, as no drop was seen, and is disclosed instead: a result
        resting on such a trial with loss is marked tester-bound ("tester drops unknown", TrialRunner.tester_limits)."""
        return not self.stretched and not self.host_drops and not self.tester_drops

    def passes(self, loss_tolerance: float | Fraction) -> bool:
        """RFC 2544 pass/fail with a disclosed loss tolerance (a ratio, 0 = zero loss): every direction's frames lost
        over frames intended, compared exactly (tolerance_ratio gives the ratio of a percentage as written). A
        direction that intended no frame (a load and duration of less than half a frame) fails: it showed nothing
        forwarded, and passing it gave a DUT that lost every frame a throughput of the load where trials carried
        none."""
        limit = Fraction(loss_tolerance)
        return all(d.frames_intended and Fraction(d.frames_lost, d.frames_intended) <= limit
                   for d in self.directions.values())

    def to_dict(self) -> dict:
        return {
            "spec": self.spec.to_dict(),
            "generator": self.generator,
            "loss_ratio": self.loss_ratio,
            "stretched": self.stretched,
            "host_drops": self.host_drops,
            "host_steal": self.host_steal,
            "notes": list(self.notes),
            "directions": {name: d.to_dict() for name, d in self.directions.items()},
        }


@dataclass(frozen=True)
class Capabilities:
    """What a generator can do, declared by its class (Generator.capabilities) so that a run plan asks for nothing
    the generator cannot give: trexlab.plan.runplan checks each request against them before any host is touched."""

    #: It runs on a lab's tester node (False: everything happens in this process, e.g. the simulated SUT).
    needs_lab: bool
    #: It sets IPv4's Don't Fragment bit when TrialSpec.dont_fragment asks (RFC 6349's path MTU trials).
    dont_fragment: bool
    #: It counts a frame received later than TrialSpec.frame_timeout as lost (else only the receive tail decides).
    frame_timeout: bool
    #: It counts frames a translator turned into the other IP version (SIIT: TrialSpec.ip_version differs per port).
    translated_frames: bool


@runtime_checkable
class Generator(Protocol):
    """A traffic generator behind the trial contract.

    Every generator class declares ``name`` and ``capabilities`` (class attributes: a plan reads them without
    making a generator) and has ``lab`` (None without one)."""

    name: str
    capabilities: Capabilities
    lab: Lab | None

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Send, receive and count one trial.  Raises GeneratorError when it cannot."""

    def describe(self) -> dict:
        """Provenance: generator name, version, target and settings, for the results store."""

    def close(self) -> None:
        """Release what the generator holds (connections, processes)."""

    def skip_trials(self, count: int) -> None:
        """Count trials of an uninterrupted run that were replayed from the log, not run (trexlab.plan.resume): a
        generator with a random stream of its own draws on as if it had run them; the others ignore it."""


def restabilize(spec: TrialSpec, sleep: Callable[[float], None] | None = None) -> None:
    """A real tester's last phase of a trial (RFC 2544 section 23 e): send nothing for spec.restabilize_wait s, so
    the DUT restabilizes before whatever comes next. Generators call it as their trial's end (sleep: the generator's
    own, where it has one); the simulated SUT counts the wait as simulated time instead."""
    if spec.restabilize_wait:
        (sleep or time.sleep)(spec.restabilize_wait)


class GeneratorError(RuntimeError):
    """The generator could not run a trial (tester gone, bad port, no permission)."""


def merge_latency(results: Sequence[TrialResult], direction: Direction) -> Latency | None:
    """One direction's latency over several trials, merged (None when no trial measured it)."""
    return Latency.merge(latency for result in results if direction in result.directions
                         and (latency := result.directions[direction].latency) is not None)
