"""A fake TRex STL API and client for unit tests: records every call, answers in TRex's shape.

The statistics dictionaries have the shape the real client returns (trex.stl
STLClient.get_stats / get_pgid_stats / get_xstats of TRex v3.x): per-port
counters under the port number, ``flow_stats`` and ``latency`` keyed by pg_id
with per-port dictionaries plus ``total``, and a ``global`` entry in each.
The "server" behind it is a toy DUT: it forwards a declared fraction of the
frames, the tester sends at most ``ceiling`` frames/s per port, and latency
frames get the declared one-way delays (whole microseconds, as TRex reports).
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


class FakeClient:
    def __init__(self, forwarded=1.0, ceiling=None, delays_us=(10,), rx_missed=0, hdrh=True, fail_at=None):
        self.forwarded, self.ceiling, self.delays_us = forwarded, ceiling, delays_us
        self.rx_missed, self.hdrh, self.fail_at = rx_missed, hdrh, fail_at
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
        return {"version": "v3.08", "mode": "Stateless"}

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

    def wait_on_traffic(self, ports, timeout, rx_delay_ms):
        self._call("wait_on_traffic", ports=ports, timeout=timeout, rx_delay_ms=rx_delay_ms)

    def get_xstats(self, port):
        self._call("get_xstats", port=port)
        return {"rx_good_packets": 0, "rx_missed_errors": self.rx_missed if 1 - port in self.started else 0}

    def get_stats(self, ports):
        self._call("get_stats", ports=ports)
        port_stats = {p: {"opackets": 0, "ipackets": 0, "obytes": 0, "ibytes": 0, "ierrors": 0, "oerrors": 0,
                          "tx_pps": 0.0, "rx_pps": 0.0, "tx_bps": 0.0, "rx_bps": 0.0} for p in (0, 1)}
        flow, latency = {"global": {"rx_err": {0: 0, 1: 0}, "tx_err": {0: 0, 1: 0}}}, {
            "global": {"old_flow": 0, "bad_hdr": 0}}
        for sender in self.started:
            receiver = 1 - sender
            for stream in self.streams[sender]:
                rate = stream.mode.pps if self.ceiling is None else min(stream.mode.pps, self.ceiling)
                sent = int(round(rate * self.duration))
                received = int(sent * self.forwarded)
                size = len(stream.packet.pkt_buffer) + 4  # TRex's byte counters include the FCS
                for p, key, n in ((sender, "o", sent), (receiver, "i", received)):
                    port_stats[p][f"{key}packets"] += n
                    port_stats[p][f"{key}bytes"] += n * size
                pg = stream.flow_stats.pg_id
                flow[pg] = {
                    "tx_pkts": {sender: sent, receiver: 0, "total": sent},
                    "rx_pkts": {receiver: received, sender: 0, "total": received},
                    "tx_bytes": {sender: sent * size, receiver: 0, "total": sent * size},
                    "rx_bytes": {receiver: received * size, sender: 0, "total": received * size},
                    "tx_pps": {}, "rx_pps": {}, "tx_bps": {}, "rx_bps": {}, "tx_bps_l1": {}, "rx_bps_l1": {}}
                if isinstance(stream.flow_stats, STLFlowLatencyStats):
                    latency[pg] = {"err_cntrs": {"dropped": sent - received, "dup": 0, "out_of_order": 0,
                                                 "seq_too_high": 0, "seq_too_low": 0},
                                   "latency": self._latency(received)}
        return {**port_stats, "global": {"cpu_util": 1.0, "rx_drop_bps": 0.0, "queue_full": 0},
                "total": {}, "flow_stats": flow, "latency": latency}

    def _latency(self, received):
        histogram = HdrHistogram(1, 60 * 1000 * 1000, 3)
        delays = [self.delays_us[i % len(self.delays_us)] for i in range(received)]
        for delay in delays:
            histogram.record_value(delay)
        shape = {"average": sum(delays) / max(1, len(delays)), "jitter": 0, "last_max": max(delays, default=0),
                 "total_max": max(delays, default=0), "total_min": min(delays, default=0),
                 "histogram": {10: len(delays)}}
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
