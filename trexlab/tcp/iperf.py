"""TCP tests with iperf3 between the lab's client and server nodes, read per direction.

The server node runs one iperf3 server per port (roles/tcp_endpoints, with
--json); each test runs the iperf3 client on the client node through
trexlab.testbed.inventory.Node.command (inside its namespace locally, over SSH elsewhere) with
--json --get-server-output, so one report holds both ends: the receiver's good
bytes and the sender's bytes, retransmissions and RTTs, for either direction.

Directions are named from the client's point of view, as the application note's
tool does (RFC 6349 names none: section 3.3 asks for each direction alone, then
both at once): *download* = server -> client (the lab's reverse direction, tester port 1 ->
port 0), *upload* = client -> server (forward).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import asdict, dataclass, field

from trexlab.params import MAX_PORT, InvalidParameter, check_choice, check_range
from trexlab.trial import GeneratorError

TEST_DIRECTIONS = ("download", "upload", "bidirectional")
#: iperf3 refuses more parallel streams than this.
MAX_STREAMS = 128
#: The longest TCP test (its measured period, and the baseline RTT connection), s: a TCP period, not a trial
#: (trial.MAX_TRIAL_DURATION bounds those); an hour, so that a shared spec cannot hold the lab's endpoints longer.
MAX_TEST_DURATION = 3600
#: The longest start of a test left out of its figures (slow start), s.
MAX_OMIT = 600
#: DSCP is a 6-bit field (RFC 2474).
MAX_DSCP = 63
#: iperf3's longest reporting interval, s (it refuses --interval above 60).
MAX_INTERVAL = 60.0
#: Seconds a test may take beyond its duration (connection set-up, result exchange) before it is ended. Its own
#: choice, not swtester's (generators.software.SWTESTER_GRACE): another program, other overheads (an iperf3 connects
#: and exchanges its results over the network under test), so either may change without the other.
IPERF3_GRACE = 30.0
#: The first iperf3 that runs each stream in a thread of its own (3.16; its release notes, PR #1591); the main thread
#: keeps the control connection and the timers. Its CPU figure is the whole process's in every version (host_total:
#: clock(), the process's CPU time, all its threads', over the test's wall time, % of one CPU): before 3.16 one thread
#: serves every stream, so 100 % is all the process can use; from 3.16 on the stream threads' times add up, so all it
#: can use is one CPU per stream thread, as far as it may run on CPUs (its affinity: cpu_limit).
THREAD_PER_STREAM_IPERF3 = (3, 16)
#: The first threaded iperf3 whose stream thread, paced by --bitrate, sleeps until its next send (3.18: issue #1741,
#: PR #1743). In 3.16 and 3.17 such a thread loops without waiting, so a paced sender's CPU figure reads about one CPU
#: per sending stream whatever it sent: the spin's, not the work's (cpu_limit does not judge it).
PACED_THREAD_SLEEPS_IPERF3 = (3, 18)
#: A CPU figure (%) of all the CPU it counts used: one CPU for a single-threaded iperf3, every data-plane core for
#: TRex's cpu_util (the cores' mean).
FULL_CPU_PERCENT = 100.0


@dataclass(frozen=True)
class TcpTest:
    """One iperf3 run: what a TCP throughput test asks of the client and server nodes."""

    name: str
    direction: str = "download"  # download | upload | bidirectional
    connections: int = 1
    window_bytes: int | None = None  # per connection (iperf3 -w: SO_SNDBUF and SO_RCVBUF); None: autotuning
    dscp: int | None = None  # 0..63 on the client's segments (iperf3's server does not mark its own)
    duration: float = 10.0  # s of transfer
    omit: float = 0.0  # s at the start left out of the figures (slow start)
    bitrate_bps: float | None = None  # pacing per connection (low load for the baseline RTT); None: as fast as TCP
    mss: int | None = None  # TCP maximum segment size (path MTU - 40); None: the kernel's
    port: int = 5201
    ip_version: int = 4
    interval: float = 1.0  # s between the reports whose RTT samples give min/mean/max (iperf3 allows >= 0.1)

    def __post_init__(self) -> None:
        check_choice("direction", self.direction, TEST_DIRECTIONS)
        check_range("connections", self.connections, 1, MAX_STREAMS, integer=True)
        if self.window_bytes is not None:
            check_range("window_bytes", self.window_bytes, 1, integer=True)
        if self.dscp is not None:
            check_range("dscp", self.dscp, 0, MAX_DSCP, integer=True)
        check_range("duration", self.duration, 0, MAX_TEST_DURATION, low_open=True)
        check_range("omit", self.omit, 0, MAX_OMIT)
        if self.bitrate_bps is not None:
            check_range("bitrate_bps", self.bitrate_bps, 0, low_open=True)
        if self.mss is not None:
            check_range("mss", self.mss, 88, 9000, integer=True)
        check_range("port", self.port, 1, MAX_PORT, integer=True)
        check_choice("ip_version", self.ip_version, (4, 6))
        check_range("interval", self.interval, 0.1, MAX_INTERVAL)

    def argv(self, server_address: str) -> list[str]:
        argv = ["iperf3", "--client", server_address, "--port", str(self.port), "--json", "--get-server-output",
                "--time", f"{self.duration:g}", "--parallel", str(self.connections), "--connect-timeout", "5000",
                "--interval", f"{self.interval:g}"]
        argv += {"download": ["--reverse"], "upload": [], "bidirectional": ["--bidir"]}[self.direction]
        if self.omit:
            argv += ["--omit", f"{self.omit:g}"]
        if self.window_bytes is not None:
            argv += ["--window", str(self.window_bytes)]
        if self.dscp is not None:
            argv += ["--dscp", str(self.dscp)]
        if self.bitrate_bps is not None:
            argv += ["--bitrate", f"{self.bitrate_bps:.0f}"]
        if self.mss is not None:
            argv += ["--set-mss", str(self.mss)]
        return argv


@dataclass(frozen=True)
class DirectionStats:
    """What one direction of a TCP test carried (payload bytes; RTTs of the sender's kernel, in s)."""

    direction: str  # download | upload
    good_bytes: int  # received by the application, each byte once
    sent_bytes: int  # written by the sending application
    retransmits: int  # segments the sender's kernel sent again
    mss: int  # bytes per segment (retransmitted bytes = retransmits x mss)
    seconds: float  # the receiver's transfer duration
    rtt_min_s: float | None = None
    rtt_mean_s: float | None = None
    rtt_max_s: float | None = None
    counted_retransmitted_bytes: int | None = None  # where the engine counts them (TRex ASTF); iperf3 does not
    # The CPU the sending and the receiving end used during the test, % (how: the engine's cpu_method); None: the
    # engine did not report it.
    sender_cpu_percent: float | None = None
    receiver_cpu_percent: float | None = None
    # The figure each end's CPU reaches when all of what it can use is used (a single-threaded iperf3: one CPU, 100;
    # iperf.cpu_limit); None: not known from the figures (not judged).
    sender_cpu_limit_percent: float | None = None
    receiver_cpu_limit_percent: float | None = None
    # How busy the CPUs the sending and the receiving end's iperf3 may run on (its affinity; all its node's where that
    # was not read) were during the test, together, % (node_cpu_ticks: whatever ran there, the endpoints, softirq
    # work, other programs, time a hypervisor took); None: not read.
    sender_node_busy_percent: float | None = None
    receiver_node_busy_percent: float | None = None

    @property
    def retransmitted_bytes(self) -> int:
        """Counted where the engine counts them, else retransmitted segments x MSS (iperf3 gives segments)."""
        if self.counted_retransmitted_bytes is not None:
            return self.counted_retransmitted_bytes
        return self.retransmits * self.mss

    @property
    def transmitted_bytes(self) -> int:
        """Payload bytes on the wire, retransmissions included."""
        return self.sent_bytes + self.retransmitted_bytes


@dataclass
class TcpTestResult:
    """A TCP test as the results store keeps it (trials.jsonl): what was asked and what each direction did."""

    test: TcpTest
    directions: dict[str, DirectionStats]
    server_address: str
    metrics: dict[str, dict] = field(default_factory=dict)  # per direction, filled by the procedure
    congestion_control: str | None = None

    def to_dict(self) -> dict:
        return {"kind": "tcp test", "test": asdict(self.test), "server_address": self.server_address,
                "congestion_control": self.congestion_control,
                "directions": {name: {**asdict(d), "retransmitted_bytes": d.retransmitted_bytes,
                                      "transmitted_bytes": d.transmitted_bytes, **self.metrics.get(name, {})}
                               for name, d in self.directions.items()}}


def _us(value) -> float | None:
    return value / 1e6 if value else None


def _sender_rtts(streams: list[dict]) -> tuple[float | None, float | None, float | None]:
    """(min, mean, max) RTT over the sending streams of one end's report, in s (iperf3 gives microseconds)."""
    senders = [s["sender"] for s in streams if s.get("sender", {}).get("sender") and s["sender"].get("mean_rtt")]
    if not senders:
        return None, None, None
    return (_us(min(s["min_rtt"] for s in senders)), _us(sum(s["mean_rtt"] for s in senders) / len(senders)),
            _us(max(s["max_rtt"] for s in senders)))


def iperf3_version(report: dict) -> tuple[tuple[int, int], bool] | None:
    """(major, minor) of the iperf3 that wrote a report (start.version, "iperf 3.12") and whether it runs a thread per
    stream (THREAD_PER_STREAM_IPERF3 or later, or a "-mt" beta); None where the report says no version."""
    version = str((report.get("start") or {}).get("version", ""))
    found = re.search(r"(\d+)\.(\d+)", version)
    if not found:
        return None
    number = (int(found.group(1)), int(found.group(2)))
    return number, number >= THREAD_PER_STREAM_IPERF3 or "-mt" in version


def cpu_limit(report: dict, streams: int, cpus: int | None = None, paced_sender: bool = False) -> float | None:
    """The CPU figure (%) of one end's iperf3 (report: that end's own, whose start.version is its version) when its
    threads had all the CPU they can use: one CPU for an iperf3 that serves every stream in one thread; for one with a
    thread per stream (streams: that end's, a bidirectional test's both ways), one CPU per stream thread up to the
    online CPUs it may run on (cpus: its affinity, a cpuset's included; None: not read). The sum reaches
    ENDPOINT_CPU_SATURATED of that only when the stream threads together were nearly all busy: one saturated thread
    among idle ones is not seen in it. None (not judged): no version; several stream threads and the CPUs it may run
    on not read; a paced sending end of a threaded iperf3 before
    PACED_THREAD_SLEEPS_IPERF3, whose figure is its spin."""
    found = iperf3_version(report)
    if found is None:
        return None
    version, threaded = found
    if not threaded:
        return FULL_CPU_PERCENT
    if paced_sender and version < PACED_THREAD_SLEEPS_IPERF3:
        return None
    if streams == 1:
        return FULL_CPU_PERCENT
    return min(streams, cpus) * FULL_CPU_PERCENT if cpus else None


def _percent(figures: dict, key: str) -> float | None:
    value = figures.get(key)
    return None if value is None else float(value)


def busy_percent(before: dict[int, tuple[int, int]] | None, after: dict[int, tuple[int, int]] | None,
                 cpus: frozenset[int] | None = None) -> float | None:
    """% of the CPU time of a node's CPUs `cpus` (None: all it has) from `before` to `after` (per CPU, (busy, all)
    ticks: testbed.endpoints.node_cpu_ticks) that was busy; None without both reads of every one of those CPUs or
    without a tick between them."""
    if before is None or after is None:
        return None
    chosen = (before.keys() & after.keys()) if cpus is None else cpus
    if not chosen or not chosen <= before.keys() & after.keys():
        return None
    busy = sum(after[cpu][0] - before[cpu][0] for cpu in chosen)
    ticks = sum(after[cpu][1] - before[cpu][1] for cpu in chosen)
    return busy / ticks * 100 if ticks > 0 else None


def parse(report: dict, test: TcpTest, node_busy: dict[str, float | None] | None = None,
          allowed_cpus: dict[str, int | None] | None = None) -> dict[str, DirectionStats]:
    """Per direction, from an iperf3 client report with --get-server-output (both ends' views); node_busy: how busy
    the CPUs the "client" and "server" iperf3 may run on were over the test (busy_percent; None: not read);
    allowed_cpus: how many online CPUs of its node each end's iperf3 may run on (its affinity, a cpuset's included:
    testbed.endpoints.Endpoints.iperf3_cpus; None: not read)."""
    if "error" in report:
        raise GeneratorError(f"iperf3: {report['error']}")
    end = report.get("end") or {}
    # Each end's iperf3 process (the client's figure is host_total, the server's, sent in the result exchange,
    # remote_total): the sender's and the receiver's of a direction, and in a bidirectional test both of each.
    cpu = end.get("cpu_utilization_percent") or {}
    client_cpu, server_cpu = _percent(cpu, "host_total"), _percent(cpu, "remote_total")
    server = report.get("server_output_json") or {}
    # Each end's limit from its own iperf3 (the server's report, sent with --get-server-output, says its version): a
    # client and a server of different versions were both judged by the client's. Every stream has a thread at both
    # ends, a bidirectional test's both ways; --bitrate paces whichever end sends.
    streams = test.connections * (2 if test.direction == "bidirectional" else 1)
    cpus = allowed_cpus or {}
    sends = {"client": test.direction != "download", "server": test.direction != "upload"}
    limits = {role: cpu_limit(own, streams, cpus.get(role), test.bitrate_bps is not None and sends[role])
              if cpu else None for role, own in (("client", report), ("server", server))}
    client_rtts = _sender_rtts(end.get("streams", []))
    server_rtts = _sender_rtts((server.get("end") or {}).get("streams", []))
    mss = test.mss or report.get("start", {}).get("tcp_mss") or report.get("start", {}).get("tcp_mss_default") \
        or (1460 if test.ip_version == 4 else 1440)
    # The sums the client reports: sum_sent/sum_received are the test's main direction; with --bidir the
    # *_bidir_reverse pair is the server's sending.
    ends = {"download": (server_cpu, client_cpu), "upload": (client_cpu, server_cpu)}  # (sender's, receiver's)
    end_limits = {"download": (limits["server"], limits["client"]), "upload": (limits["client"], limits["server"])}
    busy = node_busy or {}
    nodes = {"download": (busy.get("server"), busy.get("client")), "upload": (busy.get("client"), busy.get("server"))}
    pairs = {"download": [("download", "sum_sent", "sum_received", server_rtts)],
             "upload": [("upload", "sum_sent", "sum_received", client_rtts)],
             "bidirectional": [("upload", "sum_sent", "sum_received", client_rtts),
                               ("download", "sum_sent_bidir_reverse", "sum_received_bidir_reverse", server_rtts)],
             }[test.direction]
    stats = {}
    for name, sent_key, received_key, rtts in pairs:
        sent, received = end.get(sent_key), end.get(received_key)
        if not sent or not received:
            raise GeneratorError(f"iperf3 report of test {test.name!r} has no {sent_key}/{received_key}")
        stats[name] = DirectionStats(
            direction=name, good_bytes=int(received["bytes"]), sent_bytes=int(sent["bytes"]),
            retransmits=int(sent.get("retransmits", 0)), mss=int(mss), seconds=float(received["seconds"]),
            rtt_min_s=rtts[0], rtt_mean_s=rtts[1], rtt_max_s=rtts[2], sender_cpu_percent=ends[name][0],
            receiver_cpu_percent=ends[name][1], sender_cpu_limit_percent=end_limits[name][0],
            receiver_cpu_limit_percent=end_limits[name][1], sender_node_busy_percent=nodes[name][0],
            receiver_node_busy_percent=nodes[name][1])
    return stats


def run_tests(client, server_address: str, tests: list[TcpTest]) -> list[dict]:
    """Run the tests at the same time (one iperf3 client each, on its own server port); their JSON reports.

    Every test is bounded in time: an iperf3 that outlives its duration plus IPERF3_GRACE is ended.
    """
    if len({t.port for t in tests}) != len(tests):
        raise InvalidParameter("port", [t.port for t in tests], "one server port per concurrent test")
    procs = [subprocess.Popen(client.command(t.argv(server_address)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for t in tests]
    reports = []
    try:
        for test, proc in zip(tests, procs, strict=True):
            limit = test.duration + test.omit + IPERF3_GRACE
            try:
                out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                raise GeneratorError(f"iperf3 test {test.name!r} did not finish within {limit:.0f} s") from None
            try:
                report = json.loads(out)
            except json.JSONDecodeError:
                last = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
                raise GeneratorError(f"iperf3 test {test.name!r} printed no JSON report: {last}") from None
            reports.append(report)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            # The pipes of a client whose report was not read (another test failed first): closed here, not by
            # the garbage collector, which warns of each (a ResourceWarning). communicate() closed the others.
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
    return reports


def finite(value: float | None) -> float | None:
    """A figure for JSON: inf/NaN (no transfer) as None."""
    return value if value is not None and math.isfinite(value) else None
