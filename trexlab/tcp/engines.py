"""TCP engines of the RFC 6349 procedure: what opens the connections and counts what they carry.

* ``iperf3``: kernel TCP on the lab's client and server nodes (trexlab.tcp.iperf);
* ``trex``: TRex advanced stateful (ASTF) on the tester's two ports, clients
  behind port 0 and the server behind port 1, through the DUT
  (trex-profiles/astf_tcp_throughput.py), read from TRex's TCP counters.

Both answer the procedure in the same shape, a DirectionStats per direction of
each TCP test, so the RFC 6349 metrics (trexlab.procedures.rfc6349.add_metrics)
are computed once, whichever engine ran.

What the trex engine reads, per profile (one per concurrent test), as TRex's
client returns them (ASTFClient.get_stats' "traffic", get_traffic_stats'
sections "client" and "server"; descriptions from TRex's counter table):

* good bytes: the receiving side's ``tcps_rcvbyte`` ("bytes received in
  sequence"), each byte once;
* sent bytes: the sending side's ``tcps_sndbyte_ok`` ("data bytes sent by
  tcp"), new data on the wire; a server without it gives ``tcps_sndbyte``
  ("data bytes sent by application layer"), which for a bulk sender can run a
  socket buffer ahead of the wire;
* retransmissions: the sender's ``tcps_sndrexmitpack`` and
  ``tcps_sndrexmitbyte`` (bytes counted, not segments times MSS);
* connections: the client's ``m_est_flows`` (established, not closed) at both
  reads; a test with fewer than its connections up is refused, as iperf3
  fails a stream that cannot connect;
* CPU: the global ``cpu_util`` get_stats returns with each read (TRex's
  data-plane cores' utilisation, %, as TRex smooths it), the larger of the
  two reads (without omit, the last: TRex's low-pass filter makes the first
  the load of the seconds before the test): TRex plays both ends of every connection on those cores, so it is
  the sender's and the receiver's figure; a server that returns none leaves
  the CPU unknown (None), never assumed idle (TRex's client then gives the
  text "N/A");
* RTT: the sending side's smoothed RTT from TRex's flow dump
  (ASTFClient.get_flow_info, sampled every TcpTest.interval while the test
  runs). Each dump holds, per data-plane core, the first connection of each
  side only (the one TRex's profile context tracks: src/44bsd/tcp_var.h
  set_flow_info), and TRex keeps the last 10 s of dumps, overwriting older
  ones: the engine reads them every 5 s, so a longer test loses none. Its
  ``rtt`` field is whole milliseconds: TRex keeps the smoothed RTT
  in ticks scaled by 2^5 (TCP_RTT_SHIFT) and shifts that scaling out before it
  sends it, truncating (trex-core src/44bsd/tcp_subr.cpp, CTcpFlow::to_json;
  the client's "msec >> TCP_RTT_SHIFT(5)" says the same). TRex's TCP clock
  ticks in whole milliseconds too, so each RTT sample is whole ms, coarse for
  a lab's paths of a few milliseconds or less (the procedure says so in its
  notes); a smoothed RTT below 1 ms reads 0, as a flow not yet sampled does.

The counters are read twice, after ``omit`` (without it, once every
connection is established: iperf3 too starts its clock once its streams are
connected) and after ``duration`` more, and the test's figures are the
differences over the time between the two reads: slow start is left out as
iperf3's --omit does, connection set-up always, and the transfer time is
measured, never assumed.
TRex's get_traffic_stats answers with counters its master thread refreshes
every 500 ms, so they are read through ASTFClient.get_stats, which has the
server refresh them first.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Protocol

from trexlab.generators.trex import TRexSession, load_client_api
from trexlab.params import InvalidParameter
from trexlab.paths import paths
from trexlab.tcp.iperf import (
    FULL_CPU_PERCENT,
    DirectionStats,
    TcpTest,
    busy_percent,
    parse,
    run_tests,
)
from trexlab.testbed.endpoints import Endpoints, read_number
from trexlab.testbed.inventory import Lab, LabError
from trexlab.trial import GeneratorError

ENGINES = ("iperf3", "trex")
ASTF_PROFILE = paths().trex_profiles / "astf_tcp_throughput.py"
#: s per unit of the flow dump's "rtt": TRex sends its smoothed RTT in whole milliseconds, the 2^5 scaling it keeps it
#: in (TCP_RTT_SHIFT) shifted out (trex-core src/44bsd/tcp_subr.cpp, CTcpFlow::to_json).
ASTF_RTT_UNIT_S = 1e-3
#: Seconds of flow dumps TRex keeps per profile, the oldest overwritten: (10 / dump interval) dumps per data-plane
#: core (trex-core src/stx/astf/trex_astf.cpp, TrexAstfPerProfile::init_flow_info and add_flow_info).
FLOW_DUMP_SPAN_S = 10.0
#: s per tick of TRex's TCP clock, from which its RTT samples are whole ticks.
TCP_CLOCK_TICK_S = 1e-3
#: Bytes of socket buffer, each way, TRex gives a connection whose profile sets no tcp.rxbufsize/txbufsize (trex-core
#: doc/trex_astf.asciidoc's tunables table: 32K; src/44bsd/tcp_subr.cpp, CTcpTunableCtx): its window then.
TREX_DEFAULT_BUFFER_BYTES = 32 * 1024
#: The smallest and largest tcp.rxbufsize/txbufsize TRex takes, both included: it refuses a profile with a buffer
#: outside them when it loads it (trex-core src/astf/astf_db.cpp, the tunables' 1K-1G range, checked on load).
TREX_MIN_BUFFER_BYTES = 1024
TREX_MAX_BUFFER_BYTES = 1 << 30
#: Bytes of TCP options on each data segment of a connection both of whose ends enable RFC 1323 (RFC 7323)
#: timestamps: the option's 10 bytes padded to 12, within the MSS. TRex's tcp.do_rfc1323 (on by default; the profile
#: leaves it) has both its ends agree on them (trex-core src/44bsd/netinet/tcp_output.c: a segment's payload is at most
#: t_maxseg less its options); Linux's net.ipv4.tcp_timestamps (on by default, for IPv6 too) likewise, a segment's
#: payload the MSS less the options (tcp_current_mss).
TIMESTAMP_OPTION_BYTES = 12
#: Seconds between two reads of the counters while a test without omit waits for its connections to be established:
#: the measured time starts at the first read that finds them all up, so this only bounds how much of slow start
#: falls before it (bytes and time are both counted from that read).
ESTABLISH_POLL_S = 0.05
#: Seconds beyond a test's omit + duration that stopping and reading may take before the server counts as gone.
ASTF_GRACE = 30.0
#: (sending, receiving) section of TRex's traffic counters per direction (directions as RFC 6349 tools name them).
ASTF_SIDES = {"download": ("server", "client"), "upload": ("client", "server")}
DIRECTIONS_OF = {"download": ("download",), "upload": ("upload",), "bidirectional": ("upload", "download")}


class TcpEngine(Protocol):
    """What the RFC 6349 procedure asks of an engine; nothing else."""

    name: str
    method: str  # how the connections ran, in the result's method line
    congestion_control: str | None
    ports: list[int]  # server ports, one per concurrent test
    rtt_resolution_s: float  # the smallest RTT step the engine reports
    #: How the engine's RTT samples are taken, for the result's baseline RTT method (its figure is within one
    #: rtt_resolution_s of the true smoothed RTT either way, rfc6349.baseline_rtt_interval).
    rtt_sampling: str
    #: Whose CPU the results' sender_cpu_percent / receiver_cpu_percent are and how they were taken.
    cpu_method: str
    #: Whether the endpoints' kernel TCP handed its ports TSO/GSO super-frames (True) or frames of at most the MTU
    #: (False), as roles/tcp_endpoints recorded it; None: not recorded, or not a kernel's TCP.
    segmentation_offload: bool | None
    #: The window per connection of a test that sets none, which bounds its throughput as a declared one does
    #: (window / RTT); None: the endpoints size it themselves (a kernel's autotuning), no fixed figure.
    default_window_bytes: int | None
    @property
    def min_window(self) -> tuple[int, str] | None:
        """The smallest window per connection the engine gives as asked and what sets it; None: none known."""
    #: Whether a window below min_window still runs, the endpoints giving it their minimum instead (a kernel raises a
    #: smaller socket buffer to its own), rather than failing (TRex refuses the profile).
    raises_small_window: bool
    #: What a window above window_limit() would get and what to do instead, for the one-line refusal.
    over_window_limit: str
    @property
    def segment_option_bytes(self) -> int | None:
        """Bytes of TCP options every data segment carries within the MSS (a full-size segment's payload is the MSS
        less them); None: not known (the kernels' settings could not be read)."""

    def server_address(self, ip_version: int) -> str: ...

    def window_limit(self) -> tuple[int | None, str]:
        """The largest window per connection the engine really gives (None: no cap known) and what sets it."""

    def tester_port_mtu(self, indexes) -> int | None: ...

    def run(self, tests: list[TcpTest]) -> list[dict[str, DirectionStats]]:
        """Run the tests at the same time; per test, what each direction carried."""

    def close(self) -> None: ...


class Iperf3Engine:
    """iperf3 between the lab's client and server nodes (roles/tcp_endpoints)."""

    name = "iperf3"
    method = "iperf3"
    default_window_bytes: int | None = None  # iperf3 without -w: the kernels autotune the socket buffers
    # The limit is the kernels' (Endpoints.window_limit): they cap a larger SO_SNDBUF/SO_RCVBUF without an error.
    over_window_limit = "the kernel would silently give a smaller window; raise it or use more connections"
    raises_small_window = True  # a kernel gives a smaller buffer its own minimum (min_window), without an error
    rtt_resolution_s = 1e-6  # iperf3 reports the kernel's RTTs in microseconds
    rtt_sampling = "the sending kernel's smoothed RTT (tcp_info), its samples whole microseconds"
    cpu_method = ("each end's iperf3 process as iperf3 reports it (end.cpu_utilization_percent: host_total on the "
                  "client node, remote_total on the server node): its CPU time, all its threads', over the test's "
                  "wall time, % of one CPU, judged against all that end's iperf3 can use: an iperf3 before 3.16 runs "
                  "every stream in one thread, so 100 %; 3.16 and later run a thread per stream (both ways of a "
                  "bidirectional test) and sum them, so 100 % per stream thread up to the online CPUs that end's "
                  "iperf3 may run on (its Cpus_allowed_list, which a cpuset narrows too: the server's process found by "
                  "its listening port, the client's as any command run on its node; online: /proc/stat's cpuN lines), "
                  "not judged where those were not read, nor for a paced sender of 3.16 or 3.17, whose threads spin "
                  "while they wait (one saturated stream thread among idle ones is not seen in a sum; nor a CPU "
                  "quota, cgroup cpu.max, which no affinity shows). Kernel work done outside the process (softirq) "
                  "is not in it, nor a CPU it waited for: sender_node_busy_percent and receiver_node_busy_percent "
                  "are the CPUs that end's iperf3 may run on (all its node's where not read), busy together from "
                  "before the test's iperf3 started to after it ended (/proc/stat's cpuN lines: all but idle and "
                  "iowait); softirq work on its node's other CPUs is not in them")

    def __init__(self, endpoints: Endpoints):
        self.endpoints = endpoints
        self.congestion_control = endpoints.congestion_control
        self.segmentation_offload = endpoints.facts.get("segmentation_offload")
        self.ports = list(endpoints.iperf3_ports)
        self._min_window: tuple[int, str] | None = None

    @property
    def min_window(self) -> tuple[int, str] | None:
        """Below it a kernel gives a socket buffer its own minimum, not twice the window (Endpoints.window_floor):
        read from the nodes once, when first asked (before the first TCP test)."""
        if self._min_window is None:
            self._min_window = self.endpoints.window_floor()
        return self._min_window

    @functools.cached_property
    def segment_option_bytes(self) -> int | None:
        """TIMESTAMP_OPTION_BYTES where both nodes' kernels enable timestamps, 0 where one does not (a connection
        carries them only when both ends offer them); None: either not read. Read from the nodes once, when first
        asked (after the TCP tests)."""
        enabled = self.endpoints.tcp_timestamps()
        if any(value is None for value in enabled.values()):
            return None
        return TIMESTAMP_OPTION_BYTES if all(enabled.values()) else 0

    def server_address(self, ip_version: int) -> str:
        return self.endpoints.server_address(ip_version)

    def window_limit(self) -> tuple[int | None, str]:
        return self.endpoints.window_limit()

    def tester_port_mtu(self, indexes) -> int | None:
        return self.endpoints.tester_port_mtu(indexes)

    def run(self, tests: list[TcpTest]) -> list[dict[str, DirectionStats]]:
        address = self.server_address(tests[0].ip_version)
        allowed = {test.port: self.endpoints.iperf3_cpus(test.port) for test in tests}
        before = self.endpoints.cpu_ticks()
        reports = run_tests(self.endpoints.client, address, tests)
        after = self.endpoints.cpu_ticks()
        results = []
        for test, report in zip(tests, reports, strict=True):
            # Each end's online CPUs it may run on (None: its affinity or its node's CPUs not read, or none of them
            # online): its limit's, and the CPUs whose busy share bounds it (all its node's where not read).
            cpus = {role: _online(allowed[test.port][role], before[role]) for role in before}
            busy = {role: busy_percent(before[role], after[role], cpus[role]) for role in before}
            results.append(parse(report, test, busy, {role: None if c is None else len(c) for role, c in cpus.items()}))
        return results

    def close(self) -> None:
        pass


def _online(allowed: frozenset[int] | None, ticks: dict[int, tuple[int, int]] | None) -> frozenset[int] | None:
    """The CPUs of `allowed` that are online (have ticks: node_cpu_ticks); None where either was not read or none is."""
    if allowed is None or ticks is None:
        return None
    return frozenset(allowed & ticks.keys()) or None


class TRexAstfEngine(TRexSession):
    """TRex ASTF on the tester's ports: one profile per concurrent test, its TCP counters read."""

    name = "trex"
    method = "TRex ASTF (clients on tester port 0, server on port 1)"
    # TRex's own TCP stack with its default algorithm, the profile setting no tcp.cc_algo: 0, NewReno (trex-core
    # src/44bsd/tcp_var.h names 0 newreno and 1 cubic; tcp_subr.cpp, CTcpTunableCtx, sets 0).
    congestion_control: str | None = "newreno (TRex ASTF's default: the profile sets no tcp.cc_algo)"
    segmentation_offload: bool | None = None  # TRex's own TCP stack on its ports: no kernel's TSO/GSO
    # A profile without --window sets no buffers: TRex's fixed defaults, not sized to the path as a kernel's are.
    default_window_bytes: int | None = TREX_DEFAULT_BUFFER_BYTES
    # TRex refuses a smaller buffer when it builds the profile: refused before the first test instead.
    min_window: tuple[int, str] | None = (TREX_MIN_BUFFER_BYTES, "TRex ASTF's smallest tcp.rxbufsize/txbufsize")
    raises_small_window = False
    # No kernel between: TRex's own bound, which it enforces by refusing the profile, mid-run unless checked first.
    over_window_limit = "TRex refuses a larger buffer; use more connections or a smaller window"
    segment_option_bytes: int | None = TIMESTAMP_OPTION_BYTES
    # TRex's TCP clock ticks in whole milliseconds (hz 1000; tcp_ts_getticks, the RFC 1323 timestamps' clock, counts
    # ms): every RTT sample is whole ms, and the flow dump truncates the smoothed RTT to whole ms as well.
    rtt_resolution_s = TCP_CLOCK_TICK_S
    # A sample counts the clock's tick boundaries between a segment and its ACK: a path of r ticks reads floor(r) or
    # floor(r) + 1 by where in a tick the segment left, so neither truncated nor rounded but within one tick.
    # Truncating keeps it within one tick: a smoothed RTT of floor(r) to floor(r) + 1 ticks reads one of the two.
    rtt_sampling = (f"TRex's smoothed RTT (flow dump: the first connection of each side on each TRex data-plane "
                    f"core, truncated to whole ms), its samples whole ticks of its {TCP_CLOCK_TICK_S * 1e3:g} ms "
                    "TCP clock")
    cpu_method = ("TRex's data-plane cores, which play both ends: the global cpu_util TRex returns with the counters "
                  "(its smoothed utilisation, %, the mean over those cores: one busy core among idle ones reads "
                  "below 100 %), the larger of the reads after omit and at the end (without omit, the one at the end: "
                  "read right after the start, the smoothed figure is the load before the test)")

    def __init__(self, lab: Lab | None, ports: list[int], server: str | None = None, sync_port: int = 4501,
                 tunnel_node=None, api=None, client=None, profile=ASTF_PROFILE):
        super().__init__(server, sync_port, tunnel_node, client)
        self.lab, self.ports, self.profile = lab, list(ports), profile
        self.api = api
        self.clock, self.sleep = time.monotonic, time.sleep

    # -- what the procedure asks before any traffic -------------------------------------------

    def _address(self, index: int, default: str) -> str:
        if self.lab is None:
            return default
        return self.lab.tester.port(index).ipv4_address or default

    def client_address(self) -> str:
        return self._address(0, "198.18.0.2")

    def server_address(self, ip_version: int) -> str:
        if ip_version != 4:
            raise InvalidParameter("ip_version", ip_version, "4 with engine trex (the ASTF profile's addresses are "
                                                             "the tester ports' IPv4 ones)")
        return self._address(1, "198.19.0.2")

    def window_limit(self) -> tuple[int | None, str]:
        return TREX_MAX_BUFFER_BYTES, "TRex ASTF's largest tcp.rxbufsize/txbufsize"

    def tester_port_mtu(self, indexes) -> int | None:
        """The tester ports' MTU where their kernel shows it (AF_PACKET mode); None under DPDK or without a lab."""
        if self.lab is None:
            return None
        tester = self.lab.tester
        mtus = [read_number(tester, f"/sys/class/net/{tester.port(i).name}/mtu") for i in indexes]
        known = [m for m in mtus if m is not None]
        return None if len(known) < len(mtus) or not known else min(known)

    def tunables(self, test: TcpTest) -> dict:
        """The profile's tunables for one test (trex-console's -t), by the names its argparse declares."""
        return {"direction": test.direction, "connections": test.connections, "window": test.window_bytes or 0,
                "mss": test.mss or 0, "dscp": -1 if test.dscp is None else test.dscp,
                "bitrate": test.bitrate_bps or 0.0, "client-address": self.client_address(),
                "server-address": self.server_address(test.ip_version), "port": test.port}

    # -- the server -----------------------------------------------------------------------------

    def _connect(self) -> None:
        if self.connected:
            return
        if self.client is None:
            self.api = self.api or load_client_api(self.lab, "trex.astf.api")
        self._open(None if self.api is None else self.api.ASTFClient)
        self.client.reset()

    def run(self, tests: list[TcpTest]) -> list[dict[str, DirectionStats]]:
        errors = (getattr(self.api, "TRexError", None) or _Never,)
        try:
            self._connect()
            return self._run(tests)
        except errors as exc:
            raise GeneratorError(f"TRex ASTF server {self.server}: {str(exc).strip().splitlines()[-1]}") from exc
        except (ConnectionError, TimeoutError, OSError) as exc:
            raise GeneratorError(f"TRex ASTF server {self.server} went away: {exc}") from exc

    # -- one group of concurrent tests ------------------------------------------------------------

    def _snapshot(self, ids: list[str]) -> dict[str, tuple[float, dict, float | None]]:
        """Every profile's counters, each with when the server took them (the middle of the reads' round trips) and
        TRex's global cpu_util of the same read (None: the server returned none).

        TRex answers get_traffic_stats with the counters its master thread last refreshed, every 500 ms: that RPC
        does not refresh them, so read alone a value could be half a second old (over a 10 s test, 5 % of the
        throughput). ASTFClient.get_stats refreshes them first (its global statistics make the server sync every
        core's counters), so each profile's counters are read through it.
        """
        snapshot = {}
        for pid in ids:
            before = self.clock()
            stats = self.client.get_stats(skip_zero=False, pid_input=pid)
            # TRex's client gives every global figure, the text "N/A" for one the server did not send
            # (AbstractStats.get): that is no figure, never a crash nor 0 %.
            cpu = (stats.get("global") or {}).get("cpu_util")
            figure = float(cpu) if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) else None
            snapshot[pid] = ((before + self.clock()) / 2, stats["traffic"], figure)
        return snapshot

    def _read_flows(self, ids: list[str], flows: dict[str, dict], read_from: dict[str, int]) -> None:
        """Add each profile's flow dumps taken since the last read to flows (flow id -> samples)."""
        for pid in ids:
            dump = self.client.get_flow_info(profile_id=pid, index=read_from[pid])
            read_from[pid] = dump.pop("next_index", read_from[pid])
            for flow_id, samples in dump.items():
                flows[pid].setdefault(flow_id, []).extend(samples)

    def _wait(self, until: float, ids: list[str], flows: dict[str, dict], read_from: dict[str, int]) -> None:
        """Sleep until `until`, reading the flow dumps twice per span TRex keeps them, before it overwrites any."""
        while self.clock() < until:
            self.sleep(min(until - self.clock(), FLOW_DUMP_SPAN_S / 2))
            if self.clock() < until:
                self._read_flows(ids, flows, read_from)

    def _established_read(self, ids: list[str], tests: list[TcpTest], until: float, flows: dict[str, dict],
                          read_from: dict[str, int]) -> dict[str, tuple[float, dict, float | None]]:
        """Read every profile's counters until each has all its test's connections established (the client's
        m_est_flows), and give that read; at `until` give the read as it is (_run then refuses the test). The flow
        dumps are read meanwhile twice per span TRex keeps them, as _wait does."""
        flows_read = self.clock()
        while True:
            reads = self._snapshot(ids)
            if all(established(reads[pid][1]) >= test.connections for pid, test in zip(ids, tests, strict=True)):
                return reads
            if self.clock() >= until:
                return reads
            if self.clock() - flows_read >= FLOW_DUMP_SPAN_S / 2:
                self._read_flows(ids, flows, read_from)
                flows_read = self.clock()
            self.sleep(min(ESTABLISH_POLL_S, max(0.0, until - self.clock())))

    def _run(self, tests: list[TcpTest]) -> list[dict[str, DirectionStats]]:
        ids = [f"trexlab-tcp-{test.port}" for test in tests]
        omit, duration = max(t.omit for t in tests), max(t.duration for t in tests)
        started = []
        try:
            for pid, test in zip(ids, tests, strict=True):
                self.client.load_profile(str(self.profile), tunables=self.tunables(test), pid_input=pid)
            for pid, test in zip(ids, tests, strict=True):
                # The flow dump samples a connection's TCP state (its smoothed RTT) each interval.
                self.client.start(duration=-1, pid_input=pid, dump_interval=test.interval)
                started.append(pid)
            origin = self.clock()
            flows: dict[str, dict] = {pid: {} for pid in ids}
            read_from = dict.fromkeys(ids, 0)  # the index of the next flow dump to read, per profile
            self._wait(origin + omit, ids, flows, read_from)
            # Read even without omit: each start is an RPC that waits for TRex to build and start the profile, so
            # a profile started before others carried traffic through their starts. Its counters from zero at its
            # own start over the time from the last start read that traffic as throughput (the first of five DSCP
            # profiles 8 % high at 0.2 s per start); between two reads of its own, bytes and time match. Without
            # omit the first read waits for every connection's handshake, as iperf3 starts its clock once its
            # streams are connected: read at the start, the set-up lay in the measured time (0.5 s of a 10 s test,
            # 5 % off the figure).
            first = self._snapshot(ids) if omit > 0 else self._established_read(ids, tests, origin + duration,
                                                                                flows, read_from)
            self._wait(min(at for at, _, _ in first.values()) + duration, ids, flows, read_from)
            last = self._snapshot(ids)
            self._read_flows(ids, flows, read_from)
        finally:
            for pid in started:
                self.client.stop(pid_input=pid, is_remove=True)
        last_at = max(at for at, _, _ in last.values())
        if last_at - origin > omit + duration + ASTF_GRACE:
            raise GeneratorError(f"TRex ASTF server {self.server}: reading the counters took until "
                                 f"{last_at - origin:.0f} s for a {omit + duration:g} s test")
        # The reads whose CPU figure is the test's: without omit the first comes right after the handshakes, and
        # with TRex's cpu_util low-pass filtered (3/4 of the last figure each update) it is mostly the seconds
        # before the test, such as the previous test's load; the last read only then.
        measured = {pid: (first[pid], last[pid]) if omit > 0 else (last[pid],) for pid in ids}
        for pid, test in zip(ids, tests, strict=True):
            # TRex carries on with the connections that came up; fewer than the test's would be measured as its
            # throughput with the window it gave each (iperf3 fails a stream that cannot connect).
            up = min(established(read[1]) for read in (first[pid], last[pid]))
            if up < test.connections:
                raise GeneratorError(f"TRex ASTF server {self.server}: test {test.name!r} had {up} of its "
                                     f"{test.connections} connections established while it was measured (the "
                                     "client's m_est_flows): the others' handshakes failed or they were dropped")
        cpu = {pid: max((read[2] for read in measured[pid] if read[2] is not None), default=None) for pid in ids}
        return [{name: direction_stats(name, test, first[pid][1], last[pid][1], last[pid][0] - first[pid][0],
                                       flows[pid], cpu[pid])
                 for name in DIRECTIONS_OF[test.direction]} for pid, test in zip(ids, tests, strict=True)]


class _Never(Exception):
    """Stands for the API's TRexError before the API is loaded: nothing raises it."""


def _counter(stats: dict, section: str, name: str) -> int | None:
    value = (stats.get(section) or {}).get(name)
    return None if value is None else int(value)


def established(stats: dict) -> int:
    """The client's connections established at a read of the counters (TRex: connects - closed)."""
    value = _counter(stats, "client", "m_est_flows")
    if value is None:
        raise GeneratorError("TRex ASTF counters have no m_est_flows in section 'client'")
    return value


def direction_stats(name: str, test: TcpTest, before: dict, after: dict, seconds: float,
                    flows: dict, cpu_percent: float | None = None) -> DirectionStats:
    """One direction of a test from two reads of its profile's counters and the flow dump; cpu_percent: TRex's
    cpu_util over the reads (None: not returned), its cores' figure for both ends, of which 100 % is all."""
    sender, receiver = ASTF_SIDES[name]

    def delta(section: str, *names: str) -> int:
        for counter in names:  # the first counter the server has
            a, b = _counter(after, section, counter), _counter(before, section, counter)
            if a is not None:
                return a - (b or 0)
        raise GeneratorError(f"TRex ASTF counters have no {'/'.join(names)} in section {section!r}")

    rtts = flow_rtts(flows, sender, test.omit)
    return DirectionStats(
        direction=name, good_bytes=delta(receiver, "tcps_rcvbyte"),
        sent_bytes=delta(sender, "tcps_sndbyte_ok", "tcps_sndbyte"),
        retransmits=delta(sender, "tcps_sndrexmitpack"), mss=test.mss or 0, seconds=seconds,
        rtt_min_s=min(rtts) if rtts else None, rtt_mean_s=sum(rtts) / len(rtts) if rtts else None,
        rtt_max_s=max(rtts) if rtts else None, counted_retransmitted_bytes=delta(sender, "tcps_sndrexmitbyte"),
        sender_cpu_percent=cpu_percent, receiver_cpu_percent=cpu_percent,
        sender_cpu_limit_percent=None if cpu_percent is None else FULL_CPU_PERCENT,
        receiver_cpu_limit_percent=None if cpu_percent is None else FULL_CPU_PERCENT)


def flow_rtts(flows: dict, origin: str, omit: float) -> list[float]:
    """Smoothed RTTs (s) of one side's connections, from samples taken after ``omit`` (slow start left out).

    A flow's "duration" is milliseconds since it was established; an "rtt" of 0 is no sample (none taken yet, or a
    smoothed RTT below the dump's 1 ms: TRex's dump cannot tell them apart).
    """
    samples = []
    for flow_id, infos in flows.items():
        if flow_id == "next_index":
            continue
        for info in infos:
            if info.get("origin") == origin and info.get("rtt") and info.get("duration", math.inf) >= omit * 1000:
                samples.append(info["rtt"] * ASTF_RTT_UNIT_S)
    return samples


def create(name: str, lab: Lab | None, ports: list[int], server: str | None = None,
           sync_port: int = 4501, endpoint_facts=None) -> TcpEngine:
    """An engine by name, on the lab (None: without one); nothing is started (the trex engine connects on its first
    test). ports: the trex engine's server ports, one per concurrent test (iperf3's are the server node's);
    endpoint_facts: the iperf3 engine's endpoints as they will be (trexlab.testbed.endpoints.LabView)."""
    if name == "iperf3":
        if lab is None:
            raise LabError("engine iperf3 needs a lab with client and server nodes (use --generator software)")
        return Iperf3Engine(Endpoints(lab, endpoint_facts))
    tunnel_node = None
    if server is None:
        if lab is None:
            raise InvalidParameter("trex_server", None, "the TRex ASTF server's address, or a lab whose tester "
                                                        "runs it (--inventory)")
        server = lab.tester.extra.get("trexlab_trex_server")
        tunnel_node = lab.tester if server is None else None
    return TRexAstfEngine(lab, ports, server=server, sync_port=sync_port, tunnel_node=tunnel_node)
