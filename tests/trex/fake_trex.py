"""A fake TRex STL API and client for unit tests: records every call, answers in TRex's shape.

The statistics dictionaries have the shape the real client returned from a
TRex v3.08 server in software (AF_PACKET) mode (STLClient.get_stats /
get_xstats, recorded on the local lab): per-port counters under the port
number, ``flow_stats`` and ``latency`` keyed by int pg_id with per-port
dictionaries (int port keys plus ``"total"``), and a ``global`` entry in each.
The "server" behind it is a toy DUT: it takes only frames sent to its MAC
(the port's configured destination, ``dest_mac``; a stream whose packet sets
its MACs has them sent, as STLStream asks the real server) and forwards a
declared fraction of them, the tester's receive ring drops ``rx_missed`` of them (counted in the
port's ``ierrors`` and again as the xstat ``rx_missed_errors``, as TRex does),
a tester with a ``ceiling`` sends every frame but takes longer, a continuous
stream may send one frame more than rate x duration (``extra_frame``; a
single burst sends its count), and
latency frames get the declared one-way delays (whole microseconds, as TRex
reports).

Sending follows a timeline on the fake's ``clock`` (which advances only by
the fake's own calls and by ``sleep``): each port starts ``start_skew[port]``
s after start() (a synchronized start: every port at the start time its lead
sets, as STLClient.start, its duration still counted from start(), as TRex's
is), and ``late_start[port]`` s later still either way, sends ``burst[port]`` frames of its first stream at once
(TRex's start-up burst, seen on port 0 of a real TRex) and the rest paced at
the stream rates (times ``pace[port]``: above 1 a sender that runs fast and
finishes early; a ceiling slows every stream in proportion); a stream starts
after its inter-stream gap (``isg``, us) and a single burst stops after its
``total_pkts``. ``get_pgid_stats`` answers the counters at the moment of the
read (the middle of its ``rpc_time`` round trip).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import warnings
from pathlib import Path

from hdrh.histogram import HdrHistogram


class TRexError(Exception):
    pass


class CTRexVmInsFixHwCs:
    L4_TYPE_UDP = 11
    L4_TYPE_TCP = 13
    L4_TYPE_IP = 17


#: Stands for a parameter the caller left out, so the fake records only what it was given.
UNSET = object()


class STLVM:
    """The field-engine program: each instruction recorded with the arguments it was given. The parameters are the
    real STLVM's (test_trex_fake_fidelity checks them against lbr-trex-client's)."""

    def __init__(self):
        self.instructions = []

    def _record(self, op: str, given: dict) -> None:
        extra = given.pop("options", {})
        self.instructions.append((op, {k: v for k, v in given.items() if k != "self" and v is not UNSET} | extra))

    def var(self, name, min_value, max_value, size, op, step=UNSET, split_to_cores=UNSET, next_var=UNSET,
            **options):
        self._record("var", locals())

    def write(self, fv_name, pkt_offset, offset_fixup=UNSET, add_val=UNSET, byte_order=UNSET):
        self._record("write", locals())

    def write_mask(self, fv_name, pkt_offset, pkt_cast_size, mask, shift=UNSET, offset_fixup=UNSET, add_val=UNSET,
                   byte_order=UNSET):
        self._record("write_mask", locals())

    def fix_chksum_hw(self, l3_offset, l4_offset, l4_type):
        self._record("fix_chksum_hw", locals())


class STLPktBuilder:
    def __init__(self, pkt=None, pkt_buffer=None, vm=None):
        # The real builder takes a Scapy packet (pkt) or bytes; tests read the bytes either way.
        self.pkt, self.pkt_buffer, self.vm = pkt, bytes(pkt) if pkt is not None else pkt_buffer, vm

    # As the real builder: a Scapy packet whose Ether layer sets a MAC asks for that MAC on the wire.
    def is_default_src_mac(self):
        return self.pkt is None or "src" not in getattr(self.pkt, "fields", {})

    def is_default_dst_mac(self):
        return self.pkt is None or "dst" not in getattr(self.pkt, "fields", {})


STLStreamDstMAC_CFG_FILE, STLStreamDstMAC_PKT, STLStreamDstMAC_ARP = 0, 1, 2


class STLTXCont:
    def __init__(self, *, pps):  # the real modes take their rate by keyword only
        self.pps = pps


class STLTXSingleBurst:
    def __init__(self, *, pps, total_pkts=1):
        if not isinstance(total_pkts, int):  # as the real one: a float count is refused
            raise TRexError(f"total_pkts: {total_pkts!r} is not an int")
        self.pps, self.total_pkts = pps, total_pkts


class STLFlowStats:
    def __init__(self, pg_id):
        self.pg_id = pg_id


class STLFlowLatencyStats(STLFlowStats):
    pass


class STLStream:
    # After mode, keyword-only: the real STLStream has more parameters in between (enabled, self_start).
    def __init__(self, name=None, packet=None, mode=None, *, isg=0.0, flow_stats=None, mac_src_override_by_pkt=None,
                 mac_dst_override_mode=None):
        self.name, self.packet, self.mode, self.flow_stats, self.isg = name, packet, mode, flow_stats, isg
        # The real STLStream's rule: unless told otherwise, a packet that sets a MAC has that MAC sent.
        self.src_from_packet = (not packet.is_default_src_mac() if mac_src_override_by_pkt is None
                                else bool(mac_src_override_by_pkt))
        self.dst_from_packet = ((STLStreamDstMAC_CFG_FILE if packet.is_default_dst_mac() else STLStreamDstMAC_PKT)
                                if mac_dst_override_mode is None else mac_dst_override_mode) == STLStreamDstMAC_PKT

    def wire_macs(self, port_mac: str, dest_mac: str) -> tuple[str, str]:
        """(source, destination) MAC of the stream's frames on the wire: the packet's or the port's."""
        return (self.packet.pkt.src if self.src_from_packet else port_mac,
                self.packet.pkt.dst if self.dst_from_packet else dest_mac)

    def get_pg_id(self):
        return self.flow_stats.pg_id if self.flow_stats else None


def _flow_entry(sender: int, sent: int, received: int, size: int) -> dict:
    """One pg_id's flow statistics as the client gives them: per port (int keys) and "total", bytes with the FCS."""
    receiver = 1 - sender
    return {"rx_pkts": {0: 0, 1: 0, receiver: received, "total": received},
            "rx_bytes": {0: 0, 1: 0, receiver: received * size, "total": received * size},
            "tx_pkts": {0: 0, 1: 0, sender: sent, "total": sent},
            "tx_bytes": {0: 0, 1: 0, sender: sent * size, "total": sent * size},
            **{key: {0: 0.0, 1: 0.0, "total": 0.0} for key in RATE_KEYS}}


class StatNotAvailable(str):
    """The client's mark for a flow figure the server did not send (trex.common.trex_types.StatNotAvailable): the
    text "N/A"."""

    def __new__(cls, name):
        return super().__new__(cls, "N/A")


#: The flow counters a server can leave out of a pg_id's statistics: TRex's sends "rb" only from NICs that count
#: received bytes (trex-core src/stx/stl/trex_stl_fs.cpp dump_json, IF_STAT_RX_BYTES_COUNT: not an X710 filtering
#: in hardware, not the mock platform); the client makes any one missing "N/A" (CPgIdStats.get_stats).
FLOW_COUNTS = ("rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes")


def _latency_entry(dropped: int, dup: int, latency: dict) -> dict:
    return {"err_cntrs": {"dropped": dropped, "out_of_order": 0, "dup": dup, "seq_too_high": 0, "seq_too_low": 0},
            "latency": latency}


def _flow_stats_global() -> dict:
    return {"rx_err": {0: 0, 1: 0}, "tx_err": {0: 0, 1: 0}}


def _latency_global() -> dict:
    return {"old_flow": 0, "bad_hdr": 0}


class FakeClock:
    """Monotonic seconds that advance only when the fake server sends (the generator's clock in tests)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


PORT_COUNTERS = ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors", "tx_bps", "tx_pps",
                 "tx_bps_L1", "tx_util", "rx_bps", "rx_pps", "rx_bps_L1", "rx_util")
GLOBAL_COUNTERS = ("active_flows", "active_sockets", "bw_per_core", "cpu_util", "cpu_util_raw", "open_flows",
                   "platform_factor", "rx_bps", "rx_core_pps", "rx_cpu_util", "rx_drop_bps", "rx_pps",
                   "socket_util", "tx_expected_bps", "tx_expected_cps", "tx_expected_pps", "tx_pps", "tx_bps",
                   "tx_cps", "total_servers", "total_clients", "total_alloc_error", "queue_full")
RATE_KEYS = ("rx_bps", "rx_pps", "tx_bps", "tx_pps", "rx_bps_l1", "tx_bps_l1")


#: Seconds per port STLClient.start(synchronized=True) puts between its ping of the server and the ports' common start
#: time (lbr-trex-client trex/stl/trex_stl_client.py; the ping's round trip per port when longer). Stated apart from
#: the generator's figure: the fake stands for the client, so a wrong figure in the generator can fail a test.
SYNCHRONIZED_LEAD_PER_PORT = 0.5


class FakeClient:
    #: STLClient's core masks (trex/stl/trex_stl_client.py).
    CORE_MASK_SPLIT, CORE_MASK_PIN, CORE_MASK_SINGLE = 1, 2, 3

    def __init__(self, forwarded=1.0, ceiling=None, delays_us=(10,), rx_missed=0, hdrh=True, fail_at=None,
                 extra_frame=False, start_skew=None, burst=None, pace=None, rpc_time=0.0005, silent=(),
                 port_mac=("02:00:00:00:00:10", "02:00:00:00:00:11"),
                 dest_mac=("02:00:00:00:00:20", "02:00:00:00:00:21"), late_start=None, duplicated=0, stale_delays=0,
                 duplicated_test=0, unsent=(), dummy_ports=(), latency_missing=False, lacking=(), software_mode=True):
        # trex_cfg's port_info: each port's own MAC and its destination's (the DUT port it is cabled to).
        self.port_mac, self.dest_mac = port_mac, dest_mac
        # duplicated: latency frames of each latency stream the DUT delivers twice (TRex counts the copy in rx_pkts,
        # its histogram and err_cntrs' dup); stale_delays: delays of frames no trial of this client sent, left in
        # the HDR histogram (a server that did not reset it).
        self.duplicated, self.stale_delays = duplicated, stale_delays
        self.duplicated_test = duplicated_test  # frames of each test stream the DUT delivers twice (no sequence)
        # unsent: figures the server does not send, which the client gives as "N/A": flow counters (FLOW_COUNTS) of
        # every pg_id, port figures (PORT_COUNTERS) of every port (TRex's mock platform sends none); dummy_ports:
        # ports the server leaves out of flow statistics (trex_cfg "dummy" interfaces, trex_stl_fs.cpp m_port_ids).
        assert set(unsent) <= {*FLOW_COUNTS, *PORT_COUNTERS}, unsent
        self.unsent, self.dummy_ports = tuple(unsent), tuple(dummy_ports)
        self.latency_missing = latency_missing  # get_stats leaves the latency streams' pg_ids out of "latency"
        # lacking: (figure, pg_id) pairs the server's answer leaves out, of those the client reads unchecked ("lat" of
        # a latency pg_id, "tp"): the client fails on them as the real one (_read_as_the_client).
        assert {figure for figure, _ in lacking} <= {"lat", "tp"}, lacking
        self.lacking = tuple(lacking)
        # software_mode: the server configures no hardware filters (--software, or a virtual NIC such as AF_PACKET,
        # which always runs so), so its RX core handles every counted frame received; get_system_info says so.
        self.software_mode = software_mode
        self.forwarded, self.ceiling, self.delays_us = forwarded, ceiling, delays_us
        self.rx_missed, self.hdrh, self.fail_at, self.extra_frame = rx_missed, hdrh, fail_at, extra_frame
        self.start_skew, self.burst, self.pace = start_skew or {}, burst or {}, pace or {}
        self.late_start = late_start or {}  # s a port starts after its start time, synchronized or not
        self.rpc_time, self.silent = rpc_time, tuple(silent)  # silent: ports that send nothing (link down)
        self.clock = FakeClock()
        self.calls: list[tuple] = []
        self.streams: dict[int, list] = {0: [], 1: []}
        self.duration = 0.0
        self.started: list[int] = []
        self.started_at = 0.0
        self.lead = 0.0  # s from the server being told to start to the ports' start (a synchronized start's)
        self.synchronized = False
        self.core_mask = None
        self.reads = 0  # get_pgid_stats calls during traffic

    def _call(self, name, **kw):
        self.calls.append((name, kw))
        if self.fail_at == name:
            raise TRexError(f"*** {name}: Server is not responding")

    def call_names(self):
        return [c[0] for c in self.calls]

    def connect(self):
        self._call("connect")

    def disconnect(self):
        self._call("disconnect")

    def get_server_version(self):
        return {"build_date": "Nov 23 2026", "build_time": "08:21:06", "built_by": "unknown", "mode": "STL",
                "version": "v3.08"}

    def get_server_system_info(self):
        """What the server's get_system_info answered at connect (trex-core src/stx/common/trex_rpc_cmds_common.cpp,
        TrexRpcCmdGetSysInfo): its advanced_per_stream_stats is true when no hardware filter is used (software
        mode). The ports' entries carry only what the fake's two AF_PACKET ports would say of themselves."""
        return {"hostname": "tester", "uptime": "Nov 23 2026 @ 08:21:06", "dp_core_count": 1,
                "dp_core_count_per_port": 1, "core_type": "Intel Core Processor", "is_multiqueue_mode": False,
                "advanced_per_stream_stats": self.software_mode, "port_count": 2,
                "ports": [{"index": port, "driver": "net_af_packet", "hw_mac": mac, "is_virtual": True}
                          for port, mac in enumerate(self.port_mac)]}

    def reset(self, ports):
        self._call("reset", ports=ports)
        self.streams = {0: [], 1: []}

    def add_streams(self, streams, ports):
        self._call("add_streams", streams=streams, ports=ports)
        for port in ports:
            self.streams[port].extend(streams)

    def clear_stats(self):
        self._call("clear_stats")

    def start(self, ports=None, mult="1", force=False, duration=-1, total=False, core_mask=None, synchronized=False):
        self._call("start", ports=ports, mult=mult, duration=duration, force=force, core_mask=core_mask,
                   synchronized=synchronized)
        # As STLClient.start: the multiplier is text ("1", "100kpps", "50%"), a plain number is refused.
        if not isinstance(mult, str) or not isinstance(force, bool) or not isinstance(duration, (int, float)):
            raise TRexError(f"*** start: bad argument types mult={mult!r} force={force!r} duration={duration!r}")
        if synchronized:
            # As STLClient.start: pairs of adjacent ports (port ^ 1), one core per port unless a mask is given; the
            # ports' start time is its ping's time plus the lead per port.
            if len(ports) % 2:
                raise TRexError("Must use even number of ports in synchronized mode")
            for port in ports:
                if port ^ 1 not in ports:
                    raise TRexError(f'Must use adjacent ports in synchronized mode. Port "{port}" has not pair.')
            pinged = self.clock.now
            self.clock.now += self.rpc_time
            start_at = pinged + max(self.rpc_time, SYNCHRONIZED_LEAD_PER_PORT) * len(ports)
        self.started, self.duration = ports, duration
        self.synchronized = synchronized
        self.core_mask = self.CORE_MASK_SINGLE if synchronized and core_mask is None else core_mask
        self.clock.now += self.rpc_time
        # TRex's duration timer runs from when a port is told to start (trex-core src/stx/stl/trex_stl_dp_core.cpp,
        # add_port_duration: the core's time then plus the duration), its streams from the start time.
        self.started_at = start_at if synchronized else self.clock.now
        self.lead = self.started_at - self.clock.now
        for port in ports:
            if duration <= 0 and any(isinstance(s.mode, STLTXCont) for s in self.streams[port]):
                raise AssertionError(f"start: port {port}'s continuous streams without a duration never stop")

    # -- the timeline of sending ---------------------------------------------------------------

    def _sent(self, stream) -> int:
        """Frames a stream sends in the whole trial."""
        if any(stream in self.streams[port] for port in self.silent):
            return 0
        if isinstance(stream.mode, STLTXSingleBurst):
            return stream.mode.total_pkts
        # The duration runs from when the port was told: a synchronized start's lead is cut from its end.
        active = max(0.0, self.duration - self.lead - stream.isg / 1e6)
        return int(round(stream.mode.pps * active)) + (1 if self.extra_frame else 0)

    def _slowdown(self, port) -> float:
        offered = sum(s.mode.pps for s in self.streams[port])
        return min(1.0, self.ceiling / offered) if self.ceiling else 1.0

    def _stream_start(self, port, stream) -> float:
        skew = 0.0 if self.synchronized else self.start_skew.get(port, 0.0)  # synchronized: one start time for all
        return self.started_at + skew + self.late_start.get(port, 0.0) + stream.isg / 1e6

    def _rate(self, port, stream) -> float:
        return stream.mode.pps * self._slowdown(port) * self.pace.get(port, 1.0)

    def _sent_at(self, port, stream, t) -> int:
        start = self._stream_start(port, stream)
        if t < start:
            return 0
        burst = self.burst.get(port, 0) if stream is self.streams[port][0] else 0
        return min(self._sent(stream), burst + 1 + int((t - start) * self._rate(port, stream) + 1e-9))

    def _end(self, port) -> float:
        """When a port's last frame leaves."""
        ends = []
        for i, stream in enumerate(self.streams[port] if port not in self.silent else ()):
            burst = self.burst.get(port, 0) if i == 0 else 0
            ends.append(self._stream_start(port, stream) + max(0, self._sent(stream) - 1 - burst)
                        / self._rate(port, stream))
        return max(ends, default=self.started_at)

    def is_traffic_active(self, ports):
        self._call("is_traffic_active", ports=ports)
        self.clock.now += self.rpc_time
        return any(self.clock.now <= self._end(p) for p in ports)

    def get_pgid_stats(self, pgid_list):
        self._call("get_pgid_stats", pgid_list=pgid_list)
        self.reads += 1
        self.clock.now += self.rpc_time / 2
        flow, latency = {}, {}
        for port in self.started:
            for stream in self.streams[port]:
                pg = stream.flow_stats.pg_id
                # Frames sent so far; the fake counts arrivals only in get_stats (the generator reads tx here).
                flow[pg] = self._as_sent(_flow_entry(port, self._sent_at(port, stream, self.clock.now), 0,
                                                     len(stream.packet.pkt_buffer) + 4))
                if isinstance(stream.flow_stats, STLFlowLatencyStats):
                    latency[pg] = _latency_entry(0, 0, self._latency(0))
        self.clock.now += self.rpc_time / 2
        # TRex's server leaves a pg_id without a stream out of its answer (trex-core src/stx/stl/trex_stl_fs.cpp,
        # dump_json): here that fails the test, as the generator has no business asking for one.
        unknown = sorted(set(pgid_list) - set(flow))
        assert not unknown, f"get_pgid_stats: pg_id {unknown[0]} has no stream"
        flow, latency = {pg: flow[pg] for pg in pgid_list}, {pg: latency[pg] for pg in pgid_list if pg in latency}
        self._read_as_the_client(flow, latency)
        # As the client's CPgIdStats.get_stats: a "global" entry in both tables, the pg_ids' version ids.
        return {"flow_stats": {**flow, "global": _flow_stats_global()},
                "latency": {**latency, "global": _latency_global()}, "ver_id": {str(pg): 1 for pg in pgid_list}}

    def _read_as_the_client(self, flow: dict, latency: dict) -> None:
        """Read the server's answer as the real client's CPgIdStats.get_stats does: its pg_ids are text, in the order
        the server's JSON object sorts them; it reads every latency pg_id's "lat", then the first pg_id's "tp" (its
        ports), unchecked: one the answer lacks is a KeyError raised in that loop, its pg_id a local there. Another
        pg_id's missing "tp" is "N/A" for its tx_pkts."""
        pg_ids = sorted(str(pg) for pg in flow if pg != "global")
        for pg_id in sorted(str(pg) for pg in latency if pg != "global"):
            if ("lat", int(pg_id)) in self.lacking:
                raise KeyError("lat")
        for pg_id in pg_ids:
            if ("tp", int(pg_id)) in self.lacking:
                if pg_id == pg_ids[0]:
                    raise KeyError("tp")
                entry = flow[int(pg_id)]
                entry["tx_pkts"] = {port: StatNotAvailable("tx_pkts") for port in entry["tx_pkts"]}

    def _as_sent(self, entry: dict) -> dict:
        """A pg_id's flow statistics as the client makes them of the server's answer: a counter the server did not
        send is "N/A" for every port and the total; a dummy port has no entry."""
        for key, per_port in entry.items():
            if key in self.unsent and key in FLOW_COUNTS:  # a rate's name is a port figure's (tx_pps, ...)
                per_port = {port: StatNotAvailable(key) for port in per_port}
            entry[key] = {port: value for port, value in per_port.items() if port not in self.dummy_ports}
        return entry

    def wait_on_traffic(self, ports, timeout, rx_delay_ms):
        self._call("wait_on_traffic", ports=ports, timeout=timeout, rx_delay_ms=rx_delay_ms)
        self.clock.now = max([self.clock.now] + [self._end(p) for p in ports]) + rx_delay_ms / 1000

    def get_xstats(self, port_id):
        self._call("get_xstats", port_id=port_id)
        missed = self.rx_missed if 1 - port_id in self.started else 0
        return {"rx_good_packets": 0, "tx_good_packets": 0, "rx_good_bytes": 0, "tx_good_bytes": 0,
                "rx_missed_errors": missed, "rx_errors": 0, "tx_errors": 0, "rx_mbuf_allocation_errors": 0}

    def get_stats(self, ports):
        self._call("get_stats", ports=ports)
        port_stats = {p: dict.fromkeys(PORT_COUNTERS, 0) for p in (0, 1)}
        flow = {"global": _flow_stats_global()}
        latency = {"global": _latency_global()}
        for sender in self.started:
            receiver = 1 - sender
            # The receiving tester's ring drops rx_missed frames, counted as the port's ierrors.
            port_stats[receiver]["ierrors"] += self.rx_missed
            missed = self.rx_missed
            for stream in self.streams[sender]:
                sent = self._sent(stream)
                _, destination = stream.wire_macs(self.port_mac[sender], self.dest_mac[sender])
                # A frame for another MAC is none of the DUT's: it forwards nothing of it.
                received = int(sent * self.forwarded) if destination == self.dest_mac[sender] else 0
                dropped_here = min(missed, received)
                received, missed = received - dropped_here, missed - dropped_here
                size = len(stream.packet.pkt_buffer) + 4  # TRex's byte counters include the FCS
                for p, key, n in ((sender, "o", sent), (receiver, "i", received)):
                    port_stats[p][f"{key}packets"] += n
                    port_stats[p][f"{key}bytes"] += n * size
                pg = stream.flow_stats.pg_id
                latency_stream = isinstance(stream.flow_stats, STLFlowLatencyStats)
                copies = (self.duplicated if latency_stream else self.duplicated_test) if received else 0
                received += copies
                flow[pg] = self._as_sent(_flow_entry(sender, sent, received, size))
                if latency_stream and not self.latency_missing:
                    latency[pg] = _latency_entry(max(0, sent - received + copies), copies,
                                                 self._latency(received + self.stale_delays))
        self._read_as_the_client(flow, latency)
        total = {key: sum(port_stats[p][key] for p in port_stats) for key in PORT_COUNTERS}  # the client's PortStatsSum
        for key in set(self.unsent) & set(PORT_COUNTERS):  # AbstractStats.get_rel's text for a figure not sent
            for figures in (*port_stats.values(), total):
                figures[key] = "N/A"
        return {**port_stats, "global": dict.fromkeys(GLOBAL_COUNTERS, 0.0), "total": total,
                "flow_stats": flow, "latency": latency}

    def _latency(self, received):
        # TRex's own HDR histogram: 1 us to 10 s, 3 significant digits (trex-core src/time_histogram.cpp HDRH_*); a
        # delay beyond what it can hold (about 16.8 s) it leaves out, as the HdrHistogram library does here too.
        histogram = HdrHistogram(1, 10 * 1000 * 1000, 3)
        delays = [self.delays_us[i % len(self.delays_us)] for i in range(received)]
        for delay in delays:
            histogram.record_value(delay)
        coarse = {}  # TRex's own histogram: 10 us buckets below 100 us, then 100 us, 1000 us, ...
        for delay in delays:
            step = 10 ** max(1, len(str(delay)) - 1)
            coarse[delay // step * step] = coarse.get(delay // step * step, 0) + 1
        shape = {"jitter": 0, "average": sum(delays) / max(1, len(delays)), "total_max": max(delays, default=0),
                 "total_min": min(delays, default=0), "last_max": max(delays, default=0), "histogram": coarse}
        if self.hdrh:
            shape["hdrh"] = histogram.encode().decode()
        return shape


#: The Scapy layers TRex's stl.api re-exports and the profile builds its frames with.
SCAPY_LAYERS = {"scapy.layers.l2": ("Ether",), "scapy.layers.inet": ("IP", "UDP"), "scapy.layers.inet6": ("IPv6",),
                "scapy.packet": ("Raw",)}


def import_bundled_scapy(monkeypatch) -> dict:
    """The Scapy that TRex's client bundles (lbr-trex-client's external_libs), imported without importing the
    client itself: its bundled zmq cannot share a process with the pyzmq that other tests load."""
    spec = importlib.util.find_spec("lbr_trex_client")
    assert spec is not None, "the fake TRex API takes Scapy from lbr-trex-client (requirements.txt)"
    [scapy_dir] = (Path(spec.submodule_search_locations[0]) / "external_libs").glob("scapy-*")
    monkeypatch.syspath_prepend(str(scapy_dir))
    with warnings.catch_warnings():  # Scapy 2.4.3 imports modules newer Pythons deprecate (cgi)
        warnings.simplefilter("ignore", DeprecationWarning)
        return {name: getattr(importlib.import_module(module), name)
                for module, names in SCAPY_LAYERS.items() for name in names}


def install(monkeypatch):
    """Make `import trex.stl.api` find this module's fakes (as the profile does inside TRex), with the Scapy
    layers the real module re-exports."""
    api = types.ModuleType("trex.stl.api")
    for name, layer in import_bundled_scapy(monkeypatch).items():
        setattr(api, name, layer)
    for name in ("TRexError", "CTRexVmInsFixHwCs", "STLVM", "STLPktBuilder", "STLTXCont", "STLTXSingleBurst",
                 "STLFlowStats", "STLFlowLatencyStats", "STLStream", "STLStreamDstMAC_CFG_FILE", "STLStreamDstMAC_PKT",
                 "STLStreamDstMAC_ARP"):
        setattr(api, name, globals()[name])
    api.STLError = TRexError
    api.STLClient = FakeClient
    trex, stl = types.ModuleType("trex"), types.ModuleType("trex.stl")
    trex.stl, stl.api = stl, api
    for name, module in (("trex", trex), ("trex.stl", stl), ("trex.stl.api", api)):
        monkeypatch.setitem(sys.modules, name, module)
    return api
