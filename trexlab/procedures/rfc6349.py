"""RFC 6349 TCP throughput: path MTU, bottleneck bandwidth, baseline RTT, then TCP tests (iperf3 or TRex ASTF).

The steps of RFC 6349 as the application note "TCP throughput testing" (Teledyne
LeCroy Xena; not part of this repository) walks through them, on the same lab and DUT ports the
RFC 2544 procedures use:

1. path MTU: RFC 2544-style trials at increasing frame sizes with the IPv4
   Don't Fragment bit set (IPv6 routers never fragment), then trials halving
   the gap between the largest loss-free size and the next one down to one
   byte (as RFC 4821's search narrows its search_low..search_high); the
   largest loss-free frame size minus 18 bytes is the MTU. Or declared
   (--mtu). These are the application note's trials, not the Packetization
   Layer Path MTU Discovery (RFC 4821) RFC 6349 section 3.1 asks for; like it,
   they need no ICMP. The result discloses it (deviations).
2. bottleneck bandwidth (BB): RFC 2544 throughput at the MTU frame size, read as
   its layer-1 bit rate, stateless streams as RFC 6349 section 3.2.2 wants; or
   declared (--bottleneck-bandwidth, e.g. the CIR).
3. baseline RTT: one connection at low load (a share of BB), the smallest RTT
   the sender's kernel saw (RFC 6349 section 3.2.1: the minimum of the samples
   estimates the inherent RTT); its endpoints' CPU is judged as in step 7,
   since a saturated host's queueing and scheduling delay would be in that RTT
   and in every figure resting on it (BASELINE_RTT_FIGURES).
4. BDP = BB x RTT (RFC 6349 section 3.3.1); window per connection = BDP /
   connections (or declared).
5. TCP tests, by one of two engines (trexlab.tcp.engines, --engine): iperf3
   between the lab's client and server nodes, or TRex ASTF playing client
   (tester port 0) and server (tester port 1) through the DUT: download,
   upload, bidirectional with that many connections (RFC 6349 section 3.3:
   each direction alone, then both at once); one connection with the whole
   BDP; total windows of 25/50/75 % of the BDP; concurrent connections with
   different DSCP values; a many-connection stress run (the application note's).
6. per direction, RFC 6349 section 4's metrics: actual TCP throughput (good
   bytes / transfer time), the maximum achievable TCP throughput (section
   4.1.1: from BB, MTU and 38 bytes of Ethernet overhead per frame; or window /
   RTT, section 3.3.1, when the window is smaller), the TCP transfer time ratio
   (4.1), TCP efficiency % (4.2, retransmitted bytes) and buffer delay % (4.3,
   RTT under load vs baseline). Section 5 asks for tests longer than 30 s to
   exercise the network's buffers; test_duration's default 10 s is the
   application note's example's.
7. per direction, the CPU the sending and receiving ends used and how busy
   the CPUs they may run on were (the engine's cpu_method). RFC 6349 section 3 requires
   a test host that can send and receive stateful TCP at the full BB of the
   network under test (a MUST), and section 5 that the hosts' hardware
   performance be well understood before testing (a dedicated test instrument
   generally REQUIRED at 1 and 10 Gbit/s); it names no CPU figure. trexlab
   checks the hosts after each test from what they used: a direction whose
   sender or receiver used nearly all the CPU it can, or whose CPUs were
   nearly all busy (ENDPOINT_CPU_SATURATED), is marked tester-bound, with a
   note: its figures may be the host's, not the path's.

Both engines give the same figures in the same result shape; only where the
byte counts, retransmissions and RTTs come from differs (the engine's doc).

Every frame trial and every TCP test is appended to the run's trials.jsonl the
moment it ends. A declared window larger than the nodes' kernels allow, more
concurrent tests than server ports, endpoints not configured or MTU frame sizes
none of which the tester ports can send are refused by check_lab, before any
run directory or host configuration; a window computed from the measured BDP
is refused before the first TCP test.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from trexlab.media import media_speed
from trexlab.params import MAX_PORT, InvalidParameter, check_choice, check_range
from trexlab.procedures import throughput
from trexlab.procedures.common import CEILING_MARGIN, MEDIA_FIELD, RunContext, TrialRunner, tester_bound_fields
from trexlab.spec.schema import HOST_PATTERN, doc
from trexlab.tcp import engines as tcp_engines
from trexlab.tcp import metrics as tcp_metrics
from trexlab.tcp.iperf import (
    FULL_CPU_PERCENT,
    MAX_DSCP,
    MAX_OMIT,
    MAX_STREAMS,
    MAX_TEST_DURATION,
    DirectionStats,
    TcpTest,
    TcpTestResult,
    finite,
)
from trexlab.testbed.endpoints import Endpoints, LabView, require_lab
from trexlab.trial import (
    MAX_FRAME_SIZE,
    MAX_OFFERED_LOAD,
    MAX_TRIAL_DURATION,
    MIN_FRAME_SIZE,
    GeneratorError,
    TrialSpec,
    check_trial_frames,
)

NAME = "tcp"
TAKES_RATE = False
METHOD = "RFC 6349 (path MTU, BB, baseline RTT, TCP throughput tests with {engine})"
#: A baseline RTT of fewer steps of the engine's RTT resolution than this is flagged (10 steps: 10 % error).
RTT_STEPS = 10
#: s a TCP test must exceed: RFC 6349 section 5 asks for tests long enough to exercise the network's buffers
#: ("greater than 30 seconds"); a shorter test_duration is disclosed (rfc6349_deviations).
RFC6349_TEST_DURATION = 30.0
#: The TCP tests, in the order they run.
TESTS = ("download", "upload", "bidirectional", "single", "reduced", "dscp", "stress")
#: The share of all the CPU an end can use (DirectionStats' sender_ and receiver_cpu_limit_percent) from which it
#: counts as saturated and its direction's figures as the test host's limit rather than the path's (RFC 6349 section 3:
#: a test host MUST send and receive stateful TCP at the full BB, not limit it): within CEILING_MARGIN of it, the
#: margin within which a frame trial's rate counts as near the tester's own ceiling. A saturated end reads a few %
#: below its limit: iperf3's figure divides its CPU time by a wall time that includes the connection set-up and the
#: result exchange, and TRex smooths its own.
ENDPOINT_CPU_SATURATED = 1 - CEILING_MARGIN
#: What rests on the baseline RTT, and is marked tester-bound with it where an end of its connection was saturated
#: (Rfc6349Result.headline_tester_bound): a host's queueing and scheduling delay is in the RTT its kernel samples, not
#: the path's inherent, non-congested delay RFC 6349 section 3.2 baselines.
BASELINE_RTT_FIGURES = ("the baseline RTT, the BDP and the windows made from it, every test's buffer delay (its RTT "
                        "against the baseline), and a maximum achievable TCP throughput a window limits (window / "
                        "baseline RTT) with its transfer time ratio; not the TCP throughputs, which no RTT enters (a "
                        "window from a longer RTT is only larger, so it does not hold them down)")


def _check_choices(name: str, values: tuple, allowed: tuple) -> None:
    for value in values:
        if value not in allowed:
            raise InvalidParameter(name, value, ", ".join(allowed))


@dataclass(frozen=True)
class Params:
    mtu: int | None = field(default=None, metadata=doc(
        "bytes, the declared path MTU; none: found with Don't-Fragment trials at mtu_frame_sizes", minimum=576,
        maximum=MAX_FRAME_SIZE - tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES))
    mtu_frame_sizes: tuple[int, ...] = field(default=(1024, 1280, 1518, 2018, 4018, 9018), metadata=doc(
        "bytes per frame with FCS of the MTU trials; the gap above the largest loss-free one is then halved down to "
        "one byte", minItems=1, items={"minimum": 594, "maximum": MAX_FRAME_SIZE}))
    mtu_trial_rate: float = field(default=1000.0, metadata=doc(
        "frames/s per direction of the MTU trials: a low load, so that a loss can only mean too big",
        exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    mtu_trial_duration: float = field(default=1.0, metadata=doc("s per MTU trial", exclusiveMinimum=0,
                                                                  maximum=MAX_TRIAL_DURATION))
    bottleneck_bandwidth: float | None = field(default=None, metadata=doc(
        "bit/s at layer 1, the declared bottleneck bandwidth (the CIR): every Ethernet frame counted with its 20 "
        "bytes of preamble, SFD and inter-frame gap, as RFC 6349 section 4.1.1 counts the link and the measured one "
        "is read; none: RFC 2544 throughput at the MTU frame size",
        exclusiveMinimum=0))
    # The bottleneck bandwidth's RFC 2544 search: throughput's parameters (bottleneck_search), checked as those.
    bb_max_rate: float | None = field(default=None, metadata=doc(
        "frames/s per direction, the BB search's upper end (above bb_min_rate); none: the medium's maximum frame "
        "rate at the MTU frame size", exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    bb_min_rate: float = field(default=1000.0, metadata=doc(
        "frames/s per direction, the BB search's lower end", exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD))
    bb_resolution: float | None = field(default=None, metadata=doc(
        "frames/s the BB search stops at; none: the throughput search's relative default",
        minimum=throughput.MIN_RESOLUTION_FPS))
    bb_trial_duration: float = field(default=10.0, metadata=doc("s per BB trial", exclusiveMinimum=0,
                                                                  maximum=MAX_TRIAL_DURATION))
    bb_loss_tolerance_percent: float = field(default=0.0, metadata=doc(
        "% of the frames a BB trial may lose and still pass", minimum=0, maximum=100))
    media: str = field(default="10g", metadata=MEDIA_FIELD)
    rtt_duration: float = field(default=5.0, metadata=doc("s of the baseline RTT connection", exclusiveMinimum=0,
                                                            maximum=MAX_TEST_DURATION))
    rtt_load_percent: float = field(default=1.0, metadata=doc(
        "% of the bottleneck bandwidth the baseline RTT connection is paced to", exclusiveMinimum=0, maximum=100))
    connections: int = field(default=4, metadata=doc(
        "TCP connections of the download, upload and bidirectional tests", minimum=1, maximum=MAX_STREAMS))
    window_bytes: int | None = field(default=None, metadata=doc(
        "bytes of window per connection; none: the BDP / connections", minimum=1))
    reduced_window_percent: tuple[int, ...] = field(default=(25, 50, 75), metadata=doc(
        "% of the BDP: the total windows of the reduced-window tests", items={"minimum": 1, "maximum": 100}))
    dscp: tuple[int, ...] = field(default=(46, 10, 12, 14, 0), metadata=doc(
        "DSCP values of the DSCP test, one concurrent connection each (default EF, AF11, AF12, AF13, BE)",
        items={"minimum": 0, "maximum": MAX_DSCP}))
    stress_connections: int = field(default=100, metadata=doc(
        "TCP connections of the many-connection test", minimum=1, maximum=MAX_STREAMS))
    test_duration: float = field(default=10.0, metadata=doc(
        "s of each TCP test's measured (steady) period (RFC 6349 section 5 asks for more than 30 s, to exercise the "
        "network's buffers; 10 s is the application note's example)", exclusiveMinimum=0, maximum=MAX_TEST_DURATION))
    omit: float = field(default=0.0, metadata=doc(
        "s left out at the start of each TCP test (slow start)", minimum=0, maximum=MAX_OMIT))
    tests: tuple[str, ...] = field(default=TESTS, metadata=doc(
        "the TCP tests to run, in this order", minItems=1, items={"enum": list(TESTS)}))
    engine: str = field(default="iperf3", metadata=doc(
        "iperf3 (the lab's client and server nodes) or trex (TRex ASTF on the tester's ports)",
        enum=list(tcp_engines.ENGINES)))
    trex_server: str | None = field(default=None, metadata=doc(
        "engine trex: the ASTF server's host name or address; none: the tester's (roles/trex)",
        pattern=HOST_PATTERN))
    trex_sync_port: int = field(default=4501, metadata=doc(
        "engine trex: the server's RPC port (its publisher's is one below)", minimum=2, maximum=MAX_PORT))
    trex_server_port: int = field(default=5201, metadata=doc(
        "engine trex: TCP port of the first concurrent test's server, one more per test", minimum=1,
        maximum=MAX_PORT))

    def __post_init__(self) -> None:
        if self.mtu is not None:
            check_range("mtu", self.mtu, 576, MAX_FRAME_SIZE - tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES,
                        integer=True)
        if not self.mtu_frame_sizes:
            raise InvalidParameter("mtu_frame_sizes", self.mtu_frame_sizes, "at least one frame size")
        for size in self.mtu_frame_sizes:
            check_range("mtu_frame_sizes", size, 594, MAX_FRAME_SIZE, integer=True)
        check_range("mtu_trial_rate", self.mtu_trial_rate, 0, MAX_OFFERED_LOAD, low_open=True)
        check_range("mtu_trial_duration", self.mtu_trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        if self.bottleneck_bandwidth is not None:
            check_range("bottleneck_bandwidth", self.bottleneck_bandwidth, 0, low_open=True)
        if self.bb_max_rate is not None:
            check_range("bb_max_rate", self.bb_max_rate, self.bb_min_rate, low_open=True)
        check_range("bb_min_rate", self.bb_min_rate, 0, low_open=True)
        if self.bb_resolution is not None:
            check_range("bb_resolution", self.bb_resolution, 0, low_open=True)
        check_range("bb_trial_duration", self.bb_trial_duration, 0, MAX_TRIAL_DURATION, low_open=True)
        check_range("bb_loss_tolerance_percent", self.bb_loss_tolerance_percent, 0, 100)
        # The BB search is a throughput search: its own checks, before any trial rather than after the MTU trials
        # (a bb_resolution of 1e-6 passed here and was refused as 'resolution' by the search it reached).
        try:
            bottleneck_search(self)
        except InvalidParameter as exc:
            raise bb_refusal(exc) from None
        media_speed(self.media)
        check_range("rtt_duration", self.rtt_duration, 0, MAX_TEST_DURATION, low_open=True)
        check_range("rtt_load_percent", self.rtt_load_percent, 0, 100, low_open=True)
        check_range("connections", self.connections, 1, MAX_STREAMS, integer=True)
        if self.window_bytes is not None:
            check_range("window_bytes", self.window_bytes, 1, integer=True)
        for percent in self.reduced_window_percent:
            check_range("reduced_window_percent", percent, 1, 100, integer=True)
        for value in self.dscp:
            check_range("dscp", value, 0, MAX_DSCP, integer=True)
        check_range("stress_connections", self.stress_connections, 1, MAX_STREAMS, integer=True)
        check_range("test_duration", self.test_duration, 0, MAX_TEST_DURATION, low_open=True)
        check_range("omit", self.omit, 0, MAX_OMIT)
        if not self.tests:
            raise InvalidParameter("tests", self.tests, "at least one of " + ", ".join(TESTS))
        _check_choices("tests", self.tests, TESTS)
        check_choice("engine", self.engine, tcp_engines.ENGINES)
        # The same rule as the trex generator's server option: a host name or address, nothing else in the
        # endpoint the TRex client connects to.
        if self.trex_server is not None and not (isinstance(self.trex_server, str)
                                                 and re.match(HOST_PATTERN, self.trex_server)):
            raise InvalidParameter("trex_server", self.trex_server, "a host name or address")
        check_range("trex_sync_port", self.trex_sync_port, 2, MAX_PORT, integer=True)
        check_range("trex_server_port", self.trex_server_port, 1, MAX_PORT - len(self.dscp), integer=True)


#: The headline figures of the path, in Rfc6349Result.headline's order: the MTU, bottleneck bandwidth, baseline RTT
#: and BDP the TCP tests rest on.
PATH_FIGURES = ("path_mtu_bytes", "bottleneck_bandwidth_bps", "baseline_rtt_s", "bdp_bytes")
#: The tests whose directions have headline figures; the other tests vary one thing (window, DSCP, connections):
#: see result.tests.
HEADLINE_TESTS = ("download", "upload", "bidirectional")


def headline_directions(tests: list[dict]):
    """(headline name prefix, direction's dict) of each direction of the HEADLINE_TESTS among tests."""
    for where, d in test_directions([t for t in tests if t["test"]["name"] in HEADLINE_TESTS]):
        yield where.replace(" ", "_"), d


def headline_names(params: Params, traffic: TrialSpec) -> tuple[str, ...]:
    """The headline figures a run reports: the path's, and each figure of each direction of the headline tests it
    runs (the directions of each test as its engine measures them, tcp.engines.DIRECTIONS_OF)."""
    planned = [{"test": {"name": name}, "directions": dict.fromkeys(tcp_engines.DIRECTIONS_OF[name])}
               for name in params.tests if name in HEADLINE_TESTS]
    return (*PATH_FIGURES, *(f"{prefix}_{suffix}" for prefix, _ in headline_directions(planned)
                             for suffix in Rfc6349Result.HEADLINE_FIGURES.values()))


def needs_tcp_endpoints(params: Mapping) -> bool:
    """Whether a run with these procedure.params needs the lab's client and server nodes (iperf3 does)."""
    return (params or {}).get("engine", Params.engine) == "iperf3"


def check(plan) -> None:
    """What the plan tells: one IP version, a generator that sets DF when the MTU is to be measured, the engine's
    addresses, and the lab's client and server nodes for iperf3 (whether they are configured, and the kernels'
    window limits: check_lab)."""
    params, traffic = plan.params, plan.traffic
    if traffic.ip_version[0] != traffic.ip_version[1]:
        raise InvalidParameter("ip_version", traffic.ip_version, "the same on both tester ports for TCP tests")
    if params.mtu is None and not plan.capabilities.dont_fragment:
        raise InvalidParameter("mtu", None, f"a declared path MTU with generator {plan.generator}: it cannot set "
                                            "the Don't Fragment bit the MTU trials need")
    # Trials of 1..2^32 frames: the MTU trials, and the BB search's lower end and its upper end when given (the
    # medium's rate at a measured MTU's frame size is checked by the search itself, before its first trial).
    if params.mtu is None:
        check_trial_frames("mtu_trial_rate x mtu_trial_duration", params.mtu_trial_rate, params.mtu_trial_duration)
    if params.bottleneck_bandwidth is None:
        check_trial_frames("bb_min_rate x bb_trial_duration", params.bb_min_rate, params.bb_trial_duration)
        if params.bb_max_rate is not None:
            check_trial_frames("bb_max_rate x bb_trial_duration", params.bb_max_rate, params.bb_trial_duration)
    if plan.lab is None and plan.capabilities.needs_lab:
        return  # a dry run without the lab's inventory: what follows needs it
    if needs_tcp_endpoints(asdict(params)):
        lab = require_lab(plan.lab, plan.generator, NAME)
        lab.client, lab.server  # noqa: B018  (each raises LabError naming the missing node)
    else:
        engine_of(plan.lab, params).server_address(traffic.ip_version[0])


@dataclass
class Rfc6349Result:
    params: Params
    path_mtu: int
    mtu_source: str  # declared | measured | tester limit
    bottleneck_bandwidth_bps: float
    bb_source: str  # declared | RFC 2544 throughput
    baseline_rtt_s: float
    baseline_rtt_resolution_s: float  # the engine's RTT step: the figure is within one of the true RTT either way
    baseline_rtt_method: str  # how the engine samples RTTs and which of them is the baseline
    bdp_bytes: float
    window_per_connection: int
    window_limit: tuple[int | None, str]  # None: no cap known
    max_achievable_bps: float
    ip_version: int
    congestion_control: str | None
    engine: str  # iperf3 | trex
    engine_method: str  # how the engine ran the connections, for the method line
    mtu_search: list[dict] = field(default_factory=list)
    bb_search: dict | None = None
    tests: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trials: int = 0
    endpoint_cpu_method: str = ""  # whose CPU the tests' sender/receiver_cpu_percent are, and how taken
    segmentation_offload: bool | None = None  # the endpoints' TCP kept TSO/GSO (TcpEngine.segmentation_offload)
    # The baseline RTT connection's direction as its trial records it: RTTs, both ends' CPU, tester_bound_reasons.
    baseline_rtt_connection: dict = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)  # where the run falls short of RFC 6349 (rfc6349_deviations)

    #: Each headline test direction's figures: the field of its per-direction metrics -> the headline name's suffix.
    HEADLINE_FIGURES = {"actual_tcp_throughput_bps": "tcp_throughput_bps", "transfer_time_ratio": "transfer_time_ratio",
                        "tcp_efficiency_percent": "tcp_efficiency_percent",
                        "buffer_delay_percent": "buffer_delay_percent"}

    def headline(self) -> dict:
        figures = dict(zip(PATH_FIGURES, (self.path_mtu, self.bottleneck_bandwidth_bps, self.baseline_rtt_s,
                                          self.bdp_bytes), strict=True))
        for prefix, d in headline_directions(self.tests):
            figures.update({f"{prefix}_{suffix}": d[key] for key, suffix in self.HEADLINE_FIGURES.items()})
        return figures

    def bottleneck_tester_bound(self) -> list[str]:
        """Why the measured bottleneck bandwidth may be the tester's limit: its RFC 2544 search's reasons (none where
        it was declared)."""
        search = self.bb_search or {}
        return [f"bottleneck bandwidth: {reason}" for reason in search.get("tester_bound_reasons") or []]

    def baseline_rtt_tester_bound(self) -> list[str]:
        """Why the baseline RTT may hold the test hosts' delay: its connection's endpoints' reasons (cpu_saturation)."""
        return [f"baseline RTT: {reason}" for reason in self.baseline_rtt_connection.get("tester_bound_reasons") or []]

    def headline_tester_bound(self) -> dict[str, list[str]]:
        """Per headline figure, why it may be the tester's limit (empty: it is not, as far as the figures tell): a
        test direction's figures carry its own endpoints' reasons; a tester-bound bottleneck bandwidth's reasons go
        with every figure made from it (the BDP, the windows from it, the maximum achievable throughput behind the
        transfer time ratio), all but the path MTU and the baseline RTT; a baseline RTT taken with a saturated
        endpoint's go with BASELINE_RTT_FIGURES: the baseline RTT, the BDP, each buffer delay, and the transfer time
        ratio of a direction whose maximum achievable throughput is its window's (below the link's)."""
        from_bb, from_rtt = self.bottleneck_tester_bound(), self.baseline_rtt_tester_bound()
        bound = {name: [] if name in ("path_mtu_bytes", "baseline_rtt_s") else list(from_bb)
                 for name in self.headline()}
        bound["baseline_rtt_s"] += from_rtt
        bound["bdp_bytes"] += from_rtt
        for prefix, d in headline_directions(self.tests):
            for suffix in self.HEADLINE_FIGURES.values():
                bound[f"{prefix}_{suffix}"] += d.get("tester_bound_reasons") or []
            bound[f"{prefix}_buffer_delay_percent"] += from_rtt
            # The headline tests run alone: the link's share of each is all of max_achievable_bps (add_metrics).
            if d["max_achievable_tcp_throughput_bps"] < self.max_achievable_bps:
                bound[f"{prefix}_transfer_time_ratio"] += from_rtt
        return bound

    def tester_bound_reasons(self) -> list[str]:
        """A tester-bound bottleneck bandwidth, a baseline RTT taken with a saturated endpoint, and every TCP test
        direction whose endpoints may have been its limit, and why."""
        return self.bottleneck_tester_bound() + self.baseline_rtt_tester_bound() + [
            f"{where}: {reason}" for where, d in test_directions(self.tests)
            for reason in d.get("tester_bound_reasons") or []]

    def to_dict(self) -> dict:
        return {
            "procedure": NAME, "method": METHOD.format(engine=self.engine_method), "engine": self.engine,
            "path_mtu": self.path_mtu, "mtu_source": self.mtu_source, "mtu_search": self.mtu_search,
            "bottleneck_bandwidth_bps": self.bottleneck_bandwidth_bps, "bb_source": self.bb_source,
            "bb_search": self.bb_search, "baseline_rtt_s": self.baseline_rtt_s,
            "baseline_rtt_resolution_s": self.baseline_rtt_resolution_s,
            "baseline_rtt_interval_s": baseline_rtt_interval(self.baseline_rtt_s, self.baseline_rtt_resolution_s),
            "baseline_rtt_method": self.baseline_rtt_method, "bdp_bytes": self.bdp_bytes,
            "bdp_interval_bytes": bdp_interval(self.bottleneck_bandwidth_bps, self.baseline_rtt_s,
                                               self.baseline_rtt_resolution_s),
            "window_per_connection": self.window_per_connection,
            "window_limit": {"bytes": self.window_limit[0], "set_by": self.window_limit[1]},
            "max_achievable_tcp_throughput_bps": self.max_achievable_bps, "ip_version": self.ip_version,
            "congestion_control": self.congestion_control, "tests": self.tests, "trials": self.trials,
            "notes": self.notes, "deviations": self.deviations, "params": asdict(self.params),
            "headline": self.headline(),
            "endpoint_cpu_method": self.endpoint_cpu_method, "segmentation_offload": self.segmentation_offload,
            "endpoint_cpu_saturated_percent": ENDPOINT_CPU_SATURATED * 100,
            "baseline_rtt_connection": self.baseline_rtt_connection, "baseline_rtt_bounds": BASELINE_RTT_FIGURES,
            **tester_bound_fields(self.tester_bound_reasons()),
            "headline_tester_bound": self.headline_tester_bound(),
        }


def engine_of(lab, params: Params, endpoint_facts=None) -> tcp_engines.TcpEngine:
    """The TCP engine the params name, on the lab (None: none); nothing is started. endpoint_facts: LabView's."""
    ports = [params.trex_server_port + i for i in range(max(1, len(params.dscp)))]
    return tcp_engines.create(params.engine, lab, ports, params.trex_server, params.trex_sync_port, endpoint_facts)


def check_lab(plan, lab: LabView) -> None:
    """Procedure.check_lab: the engine on the lab as the run will find it (check_engine), nothing started."""
    engine = engine_of(lab.lab, plan.params, lab.endpoint_facts)
    try:
        check_engine(engine, plan.params, plan.traffic)
    finally:
        engine.close()


def check_engine(engine: tcp_engines.TcpEngine, params: Params, traffic: TrialSpec) -> None:
    """What only the lab can tell: the engine's endpoints configured (engine_of), their address of the traffic's IP
    version, enough server ports for the concurrent tests, the engine's window limits for a declared window, and a
    MTU frame size the tester ports can send (check(plan) did the rest)."""
    if traffic.ip_version[0] != traffic.ip_version[1]:
        raise InvalidParameter("ip_version", traffic.ip_version, "the same on both tester ports for TCP tests")
    engine.server_address(traffic.ip_version[0])  # refuses what the engine cannot address
    concurrent = len(params.dscp) if "dscp" in params.tests else 1
    if concurrent > len(engine.ports):
        raise InvalidParameter("dscp", params.dscp, f"at most {len(engine.ports)} values: the server "
                                                    "runs that many iperf3 servers (tcp_endpoints_iperf3_ports)")
    if params.window_bytes is not None:
        check_window("window_bytes", params.window_bytes, engine, engine.window_limit())
    if params.mtu is None:
        mtu_trial_sizes(engine, traffic, params)


def check_window(name: str, window: int, engine: tcp_engines.TcpEngine, limit: tuple[int | None, str]) -> None:
    """A window per connection the engine gives as asked: within its limit (engine.window_limit(), read once by the
    caller) and, where it has one, its minimum; a refusal says what that engine would do with it."""
    minimum = engine.min_window
    if minimum is not None and window < minimum[0]:
        raise InvalidParameter(name, window, f">= {minimum[0]} bytes ({minimum[1]}): use fewer connections, a "
                                             "larger window, or leave this test out")
    if limit[0] is not None and window > limit[0]:
        raise InvalidParameter(name, window, f"<= {limit[0]} bytes ({limit[1]}): {engine.over_window_limit}")


def cost(params: Params, traffic: TrialSpec):
    """MTU trials, the bottleneck search, the baseline RTT and the TCP tests, each of declared length."""
    from trexlab.plan.estimate import Cost

    # One test after another (plan_tests, _groups): each reduced window is its own test, the DSCP connections run
    # together.
    groups = sum(len(params.reduced_window_percent) if name == "reduced" else 1 for name in params.tests)
    mtu_s = 0.0 if params.mtu is not None else mtu_trials(params.mtu_frame_sizes) * (
        params.mtu_trial_duration + traffic.receive_tail + traffic.restabilize_wait)
    fixed = mtu_s + params.rtt_duration + groups * params.test_duration
    found = Cost(fixed, fixed, None, None, f"{NAME}: MTU trials, {groups} TCP test(s) of "
                                           f"{params.test_duration:g} s, baseline RTT {params.rtt_duration:g} s")
    if params.bottleneck_bandwidth is None:
        sized = dataclasses.replace(traffic, frame_size=(max(params.mtu_frame_sizes),) * 2)
        found = found + throughput.cost(bottleneck_search(params), sized)
    return found


def run(context: RunContext, params: Params, endpoints: Endpoints | None = None,
        engine: tcp_engines.TcpEngine | None = None) -> Rfc6349Result:
    """endpoints (iperf3 on them) or engine: given by tests; otherwise the params' engine on the generator's lab,
    which check_lab found fit."""
    if engine is None and endpoints is not None:
        engine = tcp_engines.Iperf3Engine(endpoints)
    engine = engine or engine_of(context.generator.lab, params)
    try:
        return _run(context.generator, context.traffic, params, context.on_trial, context.progress, engine)
    finally:
        engine.close()


def _run(generator, traffic: TrialSpec, params: Params, on_trial, progress,
         engine: tcp_engines.TcpEngine) -> Rfc6349Result:
    ip_version = traffic.ip_version[0]
    runner = TrialRunner(generator, traffic, on_trial, progress, NAME)
    notes: list[str] = []

    # 1. Path MTU.
    mtu_search: list[dict] = []
    if params.mtu is not None:
        mtu, mtu_source = params.mtu, "declared"
    else:
        mtu, mtu_source, mtu_search = find_path_mtu(runner, traffic, params, engine, notes)

    # 2. Bottleneck bandwidth.
    frame_size = mtu + tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES
    bb_search = None
    if params.bottleneck_bandwidth is not None:
        bb, bb_source = params.bottleneck_bandwidth, "declared"
    else:
        bb, bb_search = measure_bottleneck(generator, traffic, params, frame_size, on_trial, progress, notes)
        bb_source = "RFC 2544 throughput"

    # 3. Baseline RTT: one connection, low load; the sender's smallest RTT.
    tcp = TcpRunner(engine, on_trial, progress, ip_version, tcp_metrics.mss_bytes(mtu, ip_version))
    # RTT samples every 0.1 s (iperf3's shortest interval): the minimum of many, not of a few.
    rtt_test = TcpTest("baseline rtt", "upload", 1, duration=params.rtt_duration,
                       bitrate_bps=bb * params.rtt_load_percent / 100, port=engine.ports[0],
                       ip_version=ip_version, mss=tcp.mss, interval=0.1)
    rtt_result = tcp.run([rtt_test], "baseline RTT")[0]
    # Its endpoints' CPU judged as every test's: a saturated end's queueing and scheduling delay is in the RTT its
    # kernel samples, and BASELINE_RTT_FIGURES rest on it.
    rtt_result.metrics["upload"] = {"tester_bound_reasons": cpu_saturation(rtt_result.directions["upload"])}
    tcp.record(rtt_result, "baseline RTT")
    baseline_connection = rtt_result.to_dict()["directions"]["upload"]
    baseline_rtt = rtt_result.directions["upload"].rtt_min_s
    if not baseline_rtt:
        # An engine cannot tell an RTT below its resolution from none (TRex's flow dump reads both as 0).
        raise GeneratorError(f"baseline RTT: {engine.name} reported no RTT of the sending side (none sampled, or "
                             f"below its resolution of {engine.rtt_resolution_s * 1e3:g} ms, which it reads as 0)")

    if baseline_rtt < RTT_STEPS * engine.rtt_resolution_s:
        # A buffer delay's two RTTs are each within one step: its difference off by up to two steps of the baseline,
        # and its divisor, the baseline, by one step, which scales the figure itself.
        step = engine.rtt_resolution_s / baseline_rtt
        notes.append(f"baseline RTT {baseline_rtt * 1e3:.3f} ms is fewer than {RTT_STEPS} steps of {engine.name}'s "
                     f"RTT resolution ({engine.rtt_resolution_s * 1e3:.4g} ms): the BDP and the windows from it carry "
                     f"up to {step:.0%} error; declare --window-bytes if it matters; each buffer delay is off by up "
                     f"to {2 * step * 100:.0f} percentage points and {step:.0%} of itself (its RTT under load and the "
                     "baseline each within one step)")

    # 4. BDP and windows, checked against the engine's limits (both kernels', or TRex's) before any TCP test.
    bdp = tcp_metrics.bdp_bytes(bb, baseline_rtt)
    window = params.window_bytes or tcp_metrics.window_per_connection(bdp, params.connections)
    limit = engine.window_limit()
    link_max = tcp_metrics.max_achievable_tcp_throughput(bb, mtu, ip_version)
    plan = plan_tests(params, engine.ports, bdp, window, ip_version, tcp.mss)
    raised = []
    minimum = engine.min_window
    for test in plan:
        if test.window_bytes is None:
            continue
        # A window computed from a BDP smaller than the kernels' smallest socket buffer (a path of microseconds) runs
        # with the kernel's minimum: said per test, as the window the test had; a declared one is refused (check_lab).
        if engine.raises_small_window and minimum is not None and test.window_bytes < minimum[0]:
            raised.append(f"{test.name} {test.window_bytes}")
            continue
        check_window(f"window_bytes ({test.name})", test.window_bytes, engine, limit)
    if raised and minimum is not None:
        notes.append(f"windows computed from the BDP ({bdp:.0f} bytes) below {engine.name}'s smallest honoured "
                     f"window {minimum[0]} bytes ({minimum[1]}): {', '.join(raised)} bytes asked, "
                     f"so those tests ran with about {minimum[0]} bytes per connection, not the window "
                     "their figures name (a reduced-window test then is no reduced window)")

    # 5./6. The TCP tests and their metrics.
    tests = []
    for group in _groups(plan):
        phase = "tcp test " + group[0].name.split(" ")[0]
        for result in tcp.run(group, phase):
            add_metrics(result, link_max / len(group), baseline_rtt, engine.default_window_bytes)
            tcp.record(result, phase)
            tests.append(result.to_dict())
    unsized = sorted({t.name for t in plan if t.window_bytes is None})
    if unsized and engine.default_window_bytes is not None:
        notes.append(f"{', '.join(unsized)}: no window given, so {engine.name} gave each connection its default "
                     f"{engine.default_window_bytes} bytes, which bounds the maximum achievable TCP throughput "
                     "(window / baseline RTT) as a declared window does")
    if engine.segment_option_bytes:
        # RFC 6349's maximum achievable TCP throughput counts MTU - 40 (IPv4) bytes of payload per frame, no options.
        payload = tcp.mss - engine.segment_option_bytes
        notes.append(f"{engine.name} carries {engine.segment_option_bytes} bytes of TCP options (RFC 1323 "
                     f"timestamps) in every segment, so a full-size frame carries a {payload}-byte payload, not the "
                     f"{tcp.mss} bytes the maximum achievable TCP throughput counts (RFC 6349's MTU - "
                     f"{tcp_metrics.TCP_IP_HEADER_BYTES[ip_version]}): a path that delivers all it can reads a "
                     f"transfer time ratio of {tcp.mss / payload:.4f}, not 1, and an actual TCP throughput "
                     f"{1 - payload / tcp.mss:.2%} below the maximum achievable")
    if mtu_source == "tester limit":
        notes.append(f"path MTU {mtu} is the largest size the tester ports can send: the path may allow more")
    notes.extend(result_notes(tests, baseline_connection))
    rtt_method = (f"the smallest of {engine.rtt_sampling}, sampled every {rtt_test.interval:g} s of one connection "
                  f"paced to {params.rtt_load_percent:g} % of the bottleneck bandwidth"
                  "; its endpoints' CPU judged as each test's (baseline_rtt_connection)")
    return Rfc6349Result(params, mtu, mtu_source, bb, bb_source, baseline_rtt, engine.rtt_resolution_s, rtt_method,
                         bdp, window, limit, link_max,
                         ip_version, engine.congestion_control, engine.name, engine.method, mtu_search,
                         bb_search, tests, notes,
                         len(runner.log) + (bb_search or {}).get("trials", 0) + tcp.count, engine.cpu_method,
                         engine.segmentation_offload, baseline_connection,
                         rfc6349_deviations(params, traffic, tests, engine.name))


def rfc6349_deviations(params: Params, traffic: TrialSpec, tests: list[dict], engine: str) -> list[str]:
    """Where a run falls short of RFC 6349, as a result discloses it ('deviations'; no comma inside an item: the
    method line lists them comma-separated): a measured path MTU found by the tester's Don't-Fragment frame trials
    (the application note's method) rather than section 3.1's Packetization Layer Path MTU Discovery (RFC 4821) by
    the TCP endpoints; a measured bottleneck bandwidth of one direction (section 3.2.2: both); tests not longer than
    section 5's 30 s; TCP tests of one direction only (section 3.3: the transfer time ratio, TCP efficiency and
    buffer delay MUST be measured in each direction) or none of both at once (section 3.3 RECOMMENDS each direction
    alone and then both at once); retransmitted bytes an engine did not count but that were taken as its
    retransmitted segments x MSS (section 4.2 counts bytes; iperf3 reports segments): at least the bytes sent again
    (a segment carries at most the MSS), so each TCP efficiency is a lower bound."""
    found = []
    if params.mtu is None:
        found.append("path MTU by Don't-Fragment frame trials from the tester (RFC 6349 section 3.1: Packetization "
                     "Layer Path MTU Discovery of RFC 4821 by the TCP endpoints)")
    if params.bottleneck_bandwidth is None and len(traffic.active_directions) < 2:
        found.append(f"bottleneck bandwidth measured {traffic.directions} only and taken for both directions "
                     "(RFC 6349 section 3.2.2: measured in both)")
    if params.test_duration <= RFC6349_TEST_DURATION:
        found.append(f"TCP test duration {params.test_duration:g} s (RFC 6349 section 5: more than "
                     f"{RFC6349_TEST_DURATION:g} s)")
    measured = sorted({direction for test in tests for direction in test["directions"]})
    if len(measured) == 1:
        found.append(f"TCP tests in the {measured[0]} direction only (RFC 6349 section 3.3: the metrics measured in "
                     "each direction)")
    if not any(test["test"]["direction"] == "bidirectional" for test in tests):
        found.append("no bidirectional TCP test (RFC 6349 section 3.3: each direction alone and then both at once)")
    if any(d.get("counted_retransmitted_bytes") is None for _, d in test_directions(tests)):
        found.append(f"retransmitted bytes as {engine}'s retransmitted segments x MSS (RFC 6349 section 4.2 counts "
                     "bytes): at least the bytes sent again so each TCP efficiency is a lower bound")
    return found


def find_path_mtu(runner: TrialRunner, traffic: TrialSpec, params: Params, engine: tcp_engines.TcpEngine,
                  notes: list[str]) -> tuple[int, str, list[dict]]:
    """Trials with DF set at each frame size the tester can send (and at the largest it can, where every one of those
    crossed and a larger size was declared), then halving the gap between the largest loss-free one and the next size
    (which lost frames) down to one byte: the largest loss-free frame gives the MTU.

    RFC 4821's probing method (its section 7) likewise keeps the path MTU between the largest size that got through
    (search_low) and the smallest that did not (search_high) and probes between them: the declared sizes alone read a
    1492-byte path (PPPoE) between 1280- and 1518-byte frames as an MTU of 1262, and every figure made from it (the
    MSS, the maximum achievable TCP throughput) with it."""
    sizes, testable, tester_mtu = mtu_trial_sizes(engine, traffic, params)
    overhead = tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES
    search: list[dict] = []

    def trial(size: int) -> bool:
        result = runner.run(params.mtu_trial_rate, params.mtu_trial_duration, "path MTU",
                            frame_size=(size, size), dont_fragment=True)
        ok = result.passes(0.0) and result.valid
        search.append({"frame_size": size, "loss_ratio": result.loss_ratio, "passed": ok})
        return ok

    passed = max((size for size in testable if trial(size)), default=None)
    if passed is None:
        raise InvalidParameter("mtu_frame_sizes", params.mtu_frame_sizes,
                               "a size that crosses the DUT without loss (none did, at low load)")
    failed = min((size for size in testable if size > passed), default=None)
    skipped = [s for s in sizes if s not in testable]
    if skipped and failed is None and tester_mtu is not None and passed < tester_mtu + overhead:
        # Every size the tester sends got through and the next declared one is beyond the tester: the largest frame
        # it can send is the top of the search (else the MTU read as a declared size the tester is not limited to).
        top = tester_mtu + overhead
        passed, failed = (top, None) if trial(top) else (passed, top)
    while failed is not None and failed - passed > 1:
        middle = (passed + failed) // 2
        passed, failed = (middle, failed) if trial(middle) else (passed, middle)
    if skipped:
        notes.append(f"frame sizes {', '.join(map(str, skipped))} not tried: the tester ports' MTU is {tester_mtu}")
    source = "tester limit" if skipped and passed - overhead == tester_mtu else "measured"
    if not skipped and passed == sizes[-1]:
        notes.append(f"path MTU {passed - overhead} is the largest of mtu_frame_sizes ({passed}-byte frames): every "
                     "size tried crossed, so the path may allow more (declare a larger size to find it)")
    return passed - overhead, source, search


def mtu_trials(frame_sizes: tuple[int, ...]) -> int:
    """The most MTU trials find_path_mtu runs: one per frame size, then the halving of the widest gap between two
    neighbouring sizes down to one byte (a gap of g bytes: ceil(log2 g) trials)."""
    sizes = sorted(set(frame_sizes))
    return len(sizes) + max((math.ceil(math.log2(high - low)) for low, high in itertools.pairwise(sizes)), default=0)


def mtu_trial_sizes(engine: tcp_engines.TcpEngine, traffic: TrialSpec,
                    params: Params) -> tuple[list[int], list[int], int | None]:
    """The MTU trials' frame sizes, those of them the tester ports' MTU lets them send and receive (at least one),
    and that MTU (None: unknown, e.g. DPDK). Both ports, whichever direction the trials take: a port receiving a
    frame above its MTU drops it as one sending it refuses it, and with the sending ports' alone a receiving port's
    smaller MTU was reported as the path's."""
    ports = sorted({port for d in traffic.active_directions
                    for port in (traffic.sender_port(d), 1 - traffic.sender_port(d))})
    tester_mtu = engine.tester_port_mtu(ports)
    overhead = tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES
    sizes = sorted(set(params.mtu_frame_sizes))
    testable = [s for s in sizes if tester_mtu is None or s - overhead <= tester_mtu]
    if not testable:
        raise InvalidParameter("mtu_frame_sizes", params.mtu_frame_sizes,
                               "at least one size" if tester_mtu is None else
                               f"at least one size <= {tester_mtu + overhead} (the tester ports' MTU + {overhead})")
    return sizes, testable, tester_mtu


def measure_bottleneck(generator, traffic: TrialSpec, params: Params, frame_size: int, on_trial, progress,
                       notes: list[str]) -> tuple[float, dict]:
    """RFC 2544 throughput at the MTU frame size, as a layer-1 bit rate (the application note's BB)."""
    overhead = tcp_metrics.ETHERNET_FRAME_OVERHEAD_BYTES
    if frame_size < MIN_FRAME_SIZE:  # the MTU's value, not its frame's
        raise InvalidParameter("mtu", frame_size - overhead, f">= {MIN_FRAME_SIZE - overhead}")
    search_params = bottleneck_search(params)
    spec = dataclasses.replace(traffic, frame_size=(frame_size, frame_size))

    def tagged(result, context):
        if on_trial:
            on_trial(result, {**context, "procedure": NAME, "step": "bottleneck bandwidth"})

    try:  # its range at the MTU's frame size, known only now (above the medium's rate, too many frames, ...)
        result = throughput.run(RunContext(generator, spec, tagged, progress), search_params)
    except InvalidParameter as exc:
        raise bb_refusal(exc) from None
    if result.throughput is None:
        raise InvalidParameter("bottleneck_bandwidth", None,
                               f"a declared value: no load passed at {frame_size}-byte frames, not even "
                               f"bb_min_rate {params.bb_min_rate:.0f} fps")
    notes.extend(f"bottleneck bandwidth: {n}" for n in result.notes)
    return tcp_metrics.bottleneck_from_frame_rate(result.throughput, frame_size), result.to_dict()


#: The BB search's parameters: throughput's key -> tcp's, as a spec spells it.
BB_SEARCH_KEYS = {"max_rate": "bb_max_rate", "min_rate": "bb_min_rate", "resolution": "bb_resolution",
                  "loss_tolerance_percent": "bb_loss_tolerance_percent", "trial_duration": "bb_trial_duration",
                  "media": "media"}
_BB_KEY = re.compile(r"\b(" + "|".join(BB_SEARCH_KEYS) + r")\b")


def bottleneck_search(params: Params) -> throughput.Params:
    """The RFC 2544 throughput search that measures the bottleneck bandwidth."""
    return throughput.Params(**{key: getattr(params, own) for key, own in BB_SEARCH_KEYS.items()})


def bb_refusal(exc: InvalidParameter) -> InvalidParameter:
    """A refusal of the BB search with tcp's keys where throughput's are, in the keys it names and in what it allows
    ('min_rate x trial_duration' is 'bb_min_rate x bb_trial_duration' to whoever wrote the spec)."""
    def spelled(text: str) -> str:
        return _BB_KEY.sub(lambda m: BB_SEARCH_KEYS[m.group(1)], text)

    return InvalidParameter(spelled(exc.name), exc.value, spelled(exc.allowed))


def plan_tests(params: Params, ports: list[int], bdp: float, window: int, ip_version: int,
               mss: int) -> list[TcpTest]:
    """Every TCP test of the run, windows filled in; concurrent ones share a name prefix ("dscp ...")."""
    port = ports[0]
    common: dict[str, Any] = {"duration": params.test_duration, "omit": params.omit, "ip_version": ip_version,
                              "mss": mss}
    plan = []
    for name in params.tests:
        if name in ("download", "upload", "bidirectional"):
            plan.append(TcpTest(name, name, params.connections, window, port=port, **common))
        elif name == "single":
            plan.append(TcpTest("single", "download", 1, max(1, round(bdp)), port=port, **common))
        elif name == "reduced":
            for percent in params.reduced_window_percent:
                per = tcp_metrics.window_per_connection(bdp * percent / 100, params.connections)
                plan.append(TcpTest(f"reduced {percent}%", "download", params.connections, per, port=port,
                                    **common))
        elif name == "dscp":
            # Upload: the client marks its segments; iperf3's server does not mark the ones it sends.
            per = tcp_metrics.window_per_connection(bdp, len(params.dscp))
            for value, server_port in zip(params.dscp, ports, strict=False):
                plan.append(TcpTest(f"dscp {value}", "upload", 1, per, dscp=value, port=server_port, **common))
        elif name == "stress":
            plan.append(TcpTest("stress", "download", params.stress_connections, None, port=port, **common))
    return plan


def _groups(plan: list[TcpTest]) -> list[list[TcpTest]]:
    """Tests that run at the same time: the DSCP connections together, every other test alone."""
    groups: list[list[TcpTest]] = []
    for test in plan:
        if test.dscp is not None and groups and groups[-1][0].dscp is not None:
            groups[-1].append(test)
        else:
            groups.append([test])
    return groups


def baseline_rtt_interval(rtt: float, resolution: float) -> list[float]:
    """[low, high] s the true RTT lies in: an engine's RTT sample counts its clock's steps between a segment and its
    ACK, floor(r) or floor(r) + 1 steps of a path of r steps by where in a step the segment left, so a sample (and a
    smoothed RTT, a weighted mean of samples) is within one step of the truth either way; never below 0."""
    return [max(0.0, rtt - resolution), rtt + resolution]


def bdp_interval(bottleneck_bps: float, rtt: float, resolution: float) -> list[float]:
    """[low, high] bytes the true BDP lies in: the bottleneck bandwidth times each end of the baseline RTT's interval
    (baseline_rtt_interval; the bandwidth is the RFC 2544 throughput found, or declared, not sampled in steps)."""
    return [tcp_metrics.bdp_bytes(bottleneck_bps, t) if t > 0 else 0.0
            for t in baseline_rtt_interval(rtt, resolution)]


def add_metrics(result: TcpTestResult, link_share_bps: float, baseline_rtt: float,
                default_window: int | None = None) -> None:
    """RFC 6349 metrics of each direction; the ideal is the link's share, or window / RTT when smaller (the test's
    window, else the engine's default_window, which a test without one gets; None: no fixed window)."""
    test = result.test
    ideal = link_share_bps
    window = test.window_bytes if test.window_bytes is not None else default_window
    if window is not None:
        ideal = min(ideal, tcp_metrics.window_limited_throughput(window * test.connections, baseline_rtt))
    for name, d in result.directions.items():
        actual = tcp_metrics.actual_tcp_throughput(d.good_bytes, d.seconds) if d.seconds > 0 else 0.0
        result.metrics[name] = {
            "actual_tcp_throughput_bps": actual,
            "max_achievable_tcp_throughput_bps": ideal,
            "transfer_time_ratio": finite(tcp_metrics.transfer_time_ratio(actual, ideal)),
            "tcp_efficiency_percent": finite(tcp_metrics.tcp_efficiency_percent(d.transmitted_bytes,
                                                                                d.retransmitted_bytes)),
            "buffer_delay_percent": (tcp_metrics.buffer_delay_percent(d.rtt_mean_s, baseline_rtt)
                                     if d.rtt_mean_s else None),
            "tester_bound_reasons": cpu_saturation(d),
        }


def _at_limit(ends: tuple[tuple[str, float | None, float | None], ...], of_limit: bool) -> list[str]:
    """The ends (name, figure, limit) whose figure reached ENDPOINT_CPU_SATURATED of its limit, as "sender 95.1 %"
    (of_limit: "sender 95.1 % of 200 %"); an end without a figure or a limit is not judged."""
    return [f"{end} {value:.1f} %" + (f" of {limit:g} %" if of_limit else "") for end, value, limit in ends
            if value is not None and limit is not None and value >= ENDPOINT_CPU_SATURATED * limit]


def cpu_saturation(d: DirectionStats) -> list[str]:
    """Why a direction's figures may be its endpoints' limit rather than the path's: its sender or receiver used
    ENDPOINT_CPU_SATURATED or more of all the CPU it can (each end's own limit), or the CPUs it may run on were that
    busy (with whatever ran there: an endpoint waiting for a CPU reads low on its own figure). Empty: neither, or not
    known (see result_notes)."""
    reasons = []
    if saturated := _at_limit((("sender", d.sender_cpu_percent, d.sender_cpu_limit_percent),
                               ("receiver", d.receiver_cpu_percent, d.receiver_cpu_limit_percent)), True):
        reasons.append(f"endpoint CPU saturated ({', '.join(saturated)})")
    if busy := _at_limit((("sender", d.sender_node_busy_percent, FULL_CPU_PERCENT),
                          ("receiver", d.receiver_node_busy_percent, FULL_CPU_PERCENT)), False):
        reasons.append(f"endpoint node CPUs busy ({', '.join(busy)})")
    return reasons


def result_notes(tests: list[dict], baseline: dict | None = None) -> list[str]:
    """What a reader must know to judge the metrics: figures that point at the method, not the path (baseline: the
    baseline RTT connection's direction, Rfc6349Result.baseline_rtt_connection)."""
    notes = cpu_notes(tests, baseline)
    above = sorted({t["test"]["name"] for t in tests for d in t["directions"].values()
                    if (d["transfer_time_ratio"] or 2) < 1})
    if above:
        notes.append(f"actual TCP throughput above the maximum achievable ({', '.join(above)}): the bottleneck "
                     "bandwidth (or the baseline RTT behind a window limit) underestimates the path, e.g. an RFC "
                     "2544 throughput limited by the tester; declare the CIR with --bottleneck-bandwidth")
    below = sorted({t["test"]["name"] for t in tests for d in t["directions"].values()
                    if (d["buffer_delay_percent"] or 0) < 0})
    if below:
        notes.append(f"RTT under load below the baseline RTT ({', '.join(below)}): on this host the low-load "
                     "connection's RTT includes waking idle CPUs, which busy ones do not pay")
    return notes


def test_directions(tests: list[dict]):
    """(test direction as a reader names it, its dict) of every TCP test: "download", "bidirectional upload"."""
    for test in tests:
        name = test["test"]["name"]
        for direction, d in test["directions"].items():
            yield (name if name == direction else f"{name} {direction}"), d


def cpu_notes(tests: list[dict], baseline: dict | None = None) -> list[str]:
    """The baseline RTT connection and the tests whose endpoints used nearly all their CPU (their figures may be the
    host's), and those whose endpoints' CPU the engine did not report or reported as a sum that cannot tell (not
    judged)."""
    notes = []
    if baseline and baseline.get("tester_bound_reasons"):
        notes.append(f"TESTER-BOUND baseline RTT ({', '.join(baseline['tester_bound_reasons'])}): an endpoint of the "
                     f"low-load connection used {ENDPOINT_CPU_SATURATED:.0%} or more of all the CPU it can, or the "
                     "CPUs it may run on were that busy, so the RTT its kernel sampled may hold the hosts' queueing "
                     "and scheduling delay, not only the path's inherent delay RFC 6349 section 3.2 baselines; resting "
                     f"on it: {BASELINE_RTT_FIGURES}; give the endpoints CPU of their own and measure again")
    bound = [f"{where} ({', '.join(d['tester_bound_reasons'])})" for where, d in test_directions(tests)
             if d.get("tester_bound_reasons")]
    if bound:
        notes.append(f"TESTER-BOUND: {'; '.join(bound)}: an endpoint used {ENDPOINT_CPU_SATURATED:.0%} or more of "
                     "all the CPU it can, or the CPUs it may run on were that busy, so these actual TCP throughputs "
                     "(and the transfer time ratio, efficiency and buffer delay with them) may be the test host's "
                     "limit, not the path's (RFC 6349 section 3: a test host MUST carry the full bottleneck "
                     "bandwidth); give the endpoints CPU of their own (nothing else running beside them), or let "
                     "their TCP use segmentation offload, and measure again")
    def judged(d: dict) -> bool:
        return d.get("sender_cpu_limit_percent") is not None and d.get("receiver_cpu_limit_percent") is not None

    unknown = (["baseline RTT"] if baseline and not judged(baseline) else []) + sorted(
        {t["test"]["name"] for t in tests for d in t["directions"].values() if not judged(d)})
    if unknown:
        notes.append(f"endpoint CPU not judged ({', '.join(unknown)}) at one end or both: the engine reported no CPU "
                     "figure, or an iperf3 of 3.16 or later summed several stream threads and the CPUs it may run "
                     "on were not read, or spun in a paced sender's threads (3.16, 3.17): whether the test hosts were "
                     "the limit is not known")
    return notes


class TcpRunner:
    """Runs TCP tests on the engine, records each in the run (on_trial) and tells progress."""

    def __init__(self, engine: tcp_engines.TcpEngine, on_trial, progress, ip_version: int, mss: int):
        self.engine, self.on_trial, self.progress = engine, on_trial, progress
        self.address = engine.server_address(ip_version)
        self.mss = mss
        self.count = 0

    def run(self, tests: list[TcpTest], phase: str) -> list[TcpTestResult]:
        names = ", ".join(t.name for t in tests)
        if self.progress:
            self.progress(phase, {"test": names, "trial": self.count + 1})
        results = []
        for test, directions in zip(tests, self.engine.run(tests), strict=True):
            self.count += 1
            results.append(TcpTestResult(test, directions, self.address,
                                         congestion_control=self.engine.congestion_control))
        if self.progress:
            rates = {name: d.good_bytes * 8 / d.seconds for r in results for name, d in r.directions.items()
                     if d.seconds > 0}
            self.progress(phase, {"test": names, "trial": self.count, "done": True, "throughput_bps": rates})
        return results

    def record(self, result: TcpTestResult, phase: str) -> None:
        if self.on_trial:
            self.on_trial(result, {"procedure": NAME, "phase": phase, "test": result.test.name})
