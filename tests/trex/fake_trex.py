"""A fake TRex STL API and client for unit tests: records every call, answers in TRex's shape.

The statistics dictionaries have the shape the real client returned from a
TRex v3.08 server in software (AF_PACKET) mode (STLClient.get_stats /
get_xstats, recorded on the local lab): per-port counters under the port
number, ``flow_stats`` and ``latency`` keyed by int pg_id with per-port
dictionaries (int port keys plus ``"total"``), and a ``global`` entry in each.
The "server" behind it is a toy DUT: it forwards a declared fraction of the
frames, the tester's receive ring drops ``rx_missed`` of them (counted in the
port's ``ierrors`` and again as the xstat ``rx_missed_errors``, as TRex does),
a tester with a ``ceiling`` sends every frame but takes longer (its ``clock``
advances by the time it would take), a continuous stream may send one frame
more than rate x duration (``extra_frame``), and latency frames get the
declared one-way delays (whole microseconds, as TRex reports).
"""

from __future__ import annotations

import sys
import types

from hdrh.histogram import HdrHistogram


class TRexError(Exception):
    pass


class CTRexVmInsFixHwCs:
    L4_TYPE_UDP = 11
    L4_TYPE_TCP = 13
    L4_TYPE_IP = 17


class STLVM:
    def __init__(self):
        self.instructions = []

    def var(self, **kw):
        self.instructions.append(("var", kw))

    def write(self, **kw):
        self.instructions.append(("write", kw))

    def write_mask(self, **kw):
        self.instructions.append(("write_mask", kw))

    def fix_chksum_hw(self, **kw):
        self.instructions.append(("fix_chksum_hw", kw))


class STLPktBuilder:
    def __init__(self, pkt_buffer=None, vm=None, **kw):
        self.pkt_buffer, self.vm = pkt_buffer, vm


class STLTXCont:
    def __init__(self, pps):
        self.pps = pps


class STLFlowStats:
    def __init__(self, pg_id):
        self.pg_id = pg_id


class STLFlowLatencyStats(STLFlowStats):
    pass


class STLStream:
    def __init__(self, name, packet, mode, flow_stats=None):
        self.name, self.packet, self.mode, self.flow_stats = name, packet, mode, flow_stats


class FakeClock:
    """Monotonic seconds that advance only when the fake server sends (the generator's clock in tests)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


PORT_COUNTERS = ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors", "tx_bps", "tx_pps",
                 "tx_bps_L1", "tx_util", "rx_bps", "rx_pps", "rx_bps_L1", "rx_util")
GLOBAL_COUNTERS = ("active_flows", "active_sockets", "bw_per_core", "cpu_util", "cpu_util_raw", "open_flows",
                   "platform_factor", "rx_bps", "rx_core_pps", "rx_cpu_util", "rx_drop_bps", "rx_pps",
                   "socket_util", "tx_expected_bps", "tx_expected_cps", "tx_expected_pps", "tx_pps", "tx_bps",
                   "tx_cps", "total_servers", "total_clients", "total_alloc_error", "queue_full")
RATE_KEYS = ("rx_bps", "rx_pps", "tx_bps", "tx_pps", "rx_bps_l1", "tx_bps_l1")


class FakeClient:
    def __init__(self, forwarded=1.0, ceiling=None, delays_us=(10,), rx_missed=0, hdrh=True, fail_at=None,
                 extra_frame=False):
        self.forwarded, self.ceiling, self.delays_us = forwarded, ceiling, delays_us
        self.rx_missed, self.hdrh, self.fail_at, self.extra_frame = rx_missed, hdrh, fail_at, extra_frame
        self.clock = FakeClock()
        self.calls: list[tuple] = []
        self.streams: dict[int, list] = {0: [], 1: []}
        self.duration = 0.0
        self.started: list[int] = []

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

    def reset(self, ports):
        self._call("reset", ports=ports)
        self.streams = {0: [], 1: []}

    def add_streams(self, streams, ports):
        self._call("add_streams", streams=streams, ports=ports)
        for port in ports:
            self.streams[port].extend(streams)

    def clear_stats(self):
        self._call("clear_stats")

    def start(self, ports, mult, duration, force):
        self._call("start", ports=ports, mult=mult, duration=duration, force=force)
        self.started, self.duration = ports, duration

    def _sent(self, stream) -> int:
        return int(round(stream.mode.pps * self.duration)) + (1 if self.extra_frame else 0)

    def wait_on_traffic(self, ports, timeout, rx_delay_ms):
        self._call("wait_on_traffic", ports=ports, timeout=timeout, rx_delay_ms=rx_delay_ms)
        send_time = self.duration
        if self.ceiling is not None:
            for port in self.started:
                send_time = max(send_time, sum(self._sent(s) for s in self.streams[port]) / self.ceiling)
        self.clock.now += send_time + rx_delay_ms / 1000

    def get_xstats(self, port):
        self._call("get_xstats", port=port)
        missed = self.rx_missed if 1 - port in self.started else 0
        return {"rx_good_packets": 0, "tx_good_packets": 0, "rx_good_bytes": 0, "tx_good_bytes": 0,
                "rx_missed_errors": missed, "rx_errors": 0, "tx_errors": 0, "rx_mbuf_allocation_errors": 0}

    def get_stats(self, ports):
        self._call("get_stats", ports=ports)
        port_stats = {p: dict.fromkeys(PORT_COUNTERS, 0) for p in (0, 1)}
        flow = {"global": {"rx_err": {0: 0, 1: 0}, "tx_err": {0: 0, 1: 0}}}
        latency = {"global": {"old_flow": 0, "bad_hdr": 0}}
        for sender in self.started:
            receiver = 1 - sender
            # The receiving tester's ring drops rx_missed frames, counted as the port's ierrors.
            port_stats[receiver]["ierrors"] += self.rx_missed
            missed = self.rx_missed
            for stream in self.streams[sender]:
                sent = self._sent(stream)
                received = int(sent * self.forwarded)
                dropped_here = min(missed, received)
                received, missed = received - dropped_here, missed - dropped_here
                size = len(stream.packet.pkt_buffer) + 4  # TRex's byte counters include the FCS
                for p, key, n in ((sender, "o", sent), (receiver, "i", received)):
                    port_stats[p][f"{key}packets"] += n
                    port_stats[p][f"{key}bytes"] += n * size
                pg = stream.flow_stats.pg_id
                flow[pg] = {
                    "rx_pkts": {0: 0, 1: 0, receiver: received, "total": received},
                    "rx_bytes": {0: 0, 1: 0, receiver: received * size, "total": received * size},
                    "tx_pkts": {0: 0, 1: 0, sender: sent, "total": sent},
                    "tx_bytes": {0: 0, 1: 0, sender: sent * size, "total": sent * size},
                    **{key: {0: 0.0, 1: 0.0, "total": 0.0} for key in RATE_KEYS}}
                if isinstance(stream.flow_stats, STLFlowLatencyStats):
                    latency[pg] = {"err_cntrs": {"dropped": sent - received, "out_of_order": 0, "dup": 0,
                                                 "seq_too_high": 0, "seq_too_low": 0},
                                   "latency": self._latency(received)}
        return {**port_stats, "global": dict.fromkeys(GLOBAL_COUNTERS, 0.0), "total": {},
                "flow_stats": flow, "latency": latency}

    def _latency(self, received):
        histogram = HdrHistogram(1, 60 * 1000 * 1000, 3)
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


def install(monkeypatch):
    """Make `import trex.stl.api` find this module's fakes (as the profile does inside TRex)."""
    api = types.ModuleType("trex.stl.api")
    for name in ("TRexError", "CTRexVmInsFixHwCs", "STLVM", "STLPktBuilder", "STLTXCont", "STLFlowStats",
                 "STLFlowLatencyStats", "STLStream"):
        setattr(api, name, globals()[name])
    api.STLError = TRexError
    api.STLClient = FakeClient
    trex, stl = types.ModuleType("trex"), types.ModuleType("trex.stl")
    trex.stl, stl.api = stl, api
    for name, module in (("trex", trex), ("trex.stl", stl), ("trex.stl.api", api)):
        monkeypatch.setitem(sys.modules, name, module)
    return api
