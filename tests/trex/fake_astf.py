"""A fake TRex ASTF client for unit tests: a declared path behind TRex's TCP counters and flow dump.

It answers in the shapes TRex's own client (lbr-trex-client 3.4.0, ASTFClient)
documents and returns: ``get_traffic_stats`` gives sections "client" and
"server", each with every counter of TRex's table by name (skip_zero=False;
with skip_zero=True the zero ones are left out, as TRex does), counting from
the profile's start; ``get_flow_info`` gives, per flow id
"<src_ip>:<src_port>-<dst_ip>:<dst_port>" (each side's own first), the samples
of the flow dump, each with "origin", "duration" (ms since established) and
"rtt" (the smoothed RTT in whole milliseconds, truncated, as trex-core's
src/44bsd/tcp_subr.cpp CTcpFlow::to_json sends it; TRex's samples are whole
milliseconds, so the fake's path RTT is too), plus "next_index" when an index
is asked for. As TRex's (one data-plane core), the dump samples only the first
connection of each side, and keeps only its last 10 s of dumps.

The path behind it: a bottleneck of ``link_bps`` bit/s of TCP payload per
direction, shared by every connection sending that way; a connection carries
at most window x 8 / RTT (a profile without --window: TRex's default socket
buffers) and, when the profile paces it (--bitrate), that.
Connections send nothing for ``setup_s`` after start (the handshake and slow
start iperf3's --omit leaves out); their handshakes complete ``handshake_s``
after start (None: one RTT, a SYN and its SYN-ACK; at most ``setup_s``), before
which the client's ``m_est_flows`` and ``tcps_connects`` count none of them. A paced connection sees the base RTT, a
bulk one ``loaded_rtt_factor`` times it (queues fill), reached linearly over
``queue_fill_s`` s from the start (0: at once). Each start takes
``build_s`` s before the profile transmits (TRex builds it first; the start
RPC returns once it transmits). The sender retransmits
``retransmit_ratio`` of the bytes it sends, in ``mss``-byte segments; its
application is ``app_ahead`` bytes ahead of the wire (tcps_sndbyte vs
tcps_sndbyte_ok). Of each profile's connections, only ``established`` (None:
all) complete their handshake (a DUT that drops SYNs): the others carry
nothing, and the client's ``m_est_flows`` and ``tcps_connects`` count them as
TRex does. The clock advances only through ``sleep`` and each RPC's
``rpc_time``. ``get_stats``'s "global" section carries every figure of
lbr-trex-client's GlobalStats.to_dict, ``cpu_util`` (TRex's data-plane cores'
utilisation, %, the server's m_cpu_util) the declared one (or a function of
the clock's time: TRex low-pass filters it, so it trails the load), else "N/A" as that
client gives a figure the server did not send: one the engine must not assume.

As TRex's, the counters ``get_traffic_stats`` answers with are those of the
last refresh: TRex's master thread refreshes them every 500 ms (its slow path,
``refresh_s``; the first at ``refresh_phase`` s after the clock's start), and
a read between two refreshes gets the earlier one's values. ``get_stats``
(global and port statistics, then the traffic counters) refreshes them first,
as the server's global statistics do.
"""

from __future__ import annotations

import argparse
import math
import sys
import types
from pathlib import Path

from trexlab.paths import paths

from fake_trex import GLOBAL_COUNTERS, PORT_COUNTERS, FakeClock

#: TRex's ASTF counter table (names as the server describes them), recorded from trex-core (the file says where);
#: with skip_zero=False every one of them is returned, zero or not.
COUNTER_NAMES_FILE = Path(__file__).resolve().parent.parent / "data" / "trex" / "astf_counter_names.txt"
COUNTERS = tuple(line for line in COUNTER_NAMES_FILE.read_text().splitlines() if line and not line.startswith("#"))
#: The counters TRex returns even at zero when skip_zero=True (registered with keep_zero: trex-core src/stt_cp.cpp
#: CMN_S_ADD_CNT*, all but m_traffic_duration); every other zero counter is left out then.
KEPT_WHEN_ZERO = frozenset(("m_active_flows", "m_est_flows", "m_tx_bw_l7_r", "m_tx_bw_l7_total_r", "m_rx_bw_l7_r",
                            "m_tx_pps_r", "m_rx_pps_r", "m_avg_size", "m_tx_ratio"))


#: Seconds of flow dumps TRex keeps per profile: (10 / dump interval) dumps per data-plane core, the oldest
#: overwritten (trex-core src/stx/astf/trex_astf.cpp TrexAstfPerProfile::init_flow_info and add_flow_info). Stated
#: here apart from the engine's: the fake stands for the server, so a wrong figure in the engine can fail a test.
FLOW_DUMP_SPAN_S = 10.0
#: Bytes of socket buffer per connection TRex gives where a profile sets no tcp.rxbufsize/txbufsize (trex-core
#: doc/trex_astf.asciidoc's tunables table, 32K; src/44bsd/tcp_subr.cpp CTcpTunableCtx). The server's figure, stated
#: apart from the engine's as FLOW_DUMP_SPAN_S is.
DEFAULT_BUFFER_BYTES = 32 * 1024
#: The tcp.rxbufsize/txbufsize TRex takes (trex-core src/astf/astf_db.cpp); it refuses a profile with others.
BUFFER_RANGE = (1024, 1 << 30)


class TRexError(Exception):
    pass


def tunables_of(tunables: dict) -> argparse.Namespace:
    """The profile's tunables as the profile itself would parse them (trex-console's -t, as a dict)."""
    sys.path.insert(0, str(paths().trex_profiles))
    try:
        import astf_tcp_throughput as profile
    finally:
        sys.path.pop(0)
    argv = [item for key, value in tunables.items() for item in (f"--{key}", str(value))]
    args = profile.parser().parse_args(argv)
    profile.check(args)
    return args


class FakeAstfClient:
    def __init__(self, link_bps=1e9, rtt_s=2e-3, loaded_rtt_factor=1.5, retransmit_ratio=0.001, mss=1460,
                 setup_s=0.5, app_ahead=65536, rpc_time=0.0005, fail_at=None, established=None, refresh_s=0.5,
                 refresh_phase=0.0, cpu_util=None, queue_fill_s=0.0, build_s=0.0, handshake_s=None):
        # TRex's TCP clock ticks in whole milliseconds, so its RTT samples are whole ms and the smallest smoothed RTT
        # of a paced connection is exact only on a path of whole milliseconds; below 1 ms the dump reads 0 whatever
        # the samples: the fake takes no other paths.
        if rtt_s <= 0 or (rtt_s >= 1e-3 and abs(rtt_s * 1000 - round(rtt_s * 1000)) > 1e-9):
            raise ValueError(f"rtt_s={rtt_s!r}: allowed whole milliseconds, or below 1 ms (TRex's RTT samples are "
                             "whole ms)")
        self.link_bps, self.rtt_s, self.loaded_rtt_factor = link_bps, rtt_s, loaded_rtt_factor
        self.refresh_s, self.refresh_phase = refresh_s, refresh_phase
        self.established = established
        self.retransmit_ratio, self.mss, self.setup_s, self.app_ahead = retransmit_ratio, mss, setup_s, app_ahead
        self.rpc_time, self.fail_at = rpc_time, fail_at
        self.cpu_util, self.queue_fill_s = cpu_util, queue_fill_s
        self.build_s = build_s
        self.handshake_s = rtt_s if handshake_s is None else handshake_s
        if self.handshake_s > setup_s and setup_s:  # setup_s 0: sending at once, the handshake not modelled apart
            raise ValueError(f"handshake_s={handshake_s!r}: allowed <= setup_s ({setup_s}): a connection sends only "
                             "once established")
        self.clock = FakeClock()
        self.origin = self.clock.now
        self.synced_at = -math.inf  # the last refresh get_stats asked for
        self.calls: list[tuple] = []
        self.loaded: dict[str, argparse.Namespace] = {}
        self.started: dict[str, tuple[float, float]] = {}  # profile -> (start time, dump interval)
        self.stopped: dict[str, float] = {}

    def _call(self, name, **kw):
        self.calls.append((name, kw))
        self.clock.now += self.rpc_time / 2
        if self.fail_at == name:
            raise TRexError(f"*** {name}: Server is not responding")

    def _done(self):
        self.clock.now += self.rpc_time / 2

    def call_names(self):
        return [c[0] for c in self.calls]

    def connect(self):
        self._call("connect")
        self._done()

    def disconnect(self):
        self._call("disconnect")
        self._done()

    def reset(self):
        self._call("reset")
        self._done()

    def get_server_version(self):
        return {"mode": "ASTF", "version": "v3.08"}

    def load_profile(self, profile, tunables=None, pid_input="_"):
        self._call("load_profile", profile=profile, tunables=dict(tunables or {}), pid_input=pid_input)
        try:
            self.loaded[pid_input] = tunables_of(tunables or {})
        except Exception as exc:  # as ASTFClient.load_profile: what the profile raised, in a TRexError
            raise TRexError(f"Could not load profile: {exc}") from exc
        window = self.loaded[pid_input].window
        if window and not BUFFER_RANGE[0] <= window <= BUFFER_RANGE[1]:
            del self.loaded[pid_input]
            raise TRexError(f"field 'rxbufsize' value {window} is out of {BUFFER_RANGE[0]}..{BUFFER_RANGE[1]}")
        self._done()

    def start(self, mult=1, duration=-1, nc=False, block=True, latency_pps=0, ipv6=False, pid_input="_",
              client_mask=0xFFFFFFFF, e_duration=0, t_duration=0, dump_interval=0):
        self._call("start", duration=duration, pid_input=pid_input, dump_interval=dump_interval)
        if pid_input not in self.loaded:
            raise TRexError(f"*** start: profile {pid_input} is not loaded")
        # ASTFClient.start(block=True) waits until TRex has built the profile and reports it transmitting.
        self.clock.now += self.build_s
        self.started[pid_input] = (self.clock.now, dump_interval)
        self.stopped.pop(pid_input, None)  # a profile id is used again once removed
        self._done()

    def stop(self, block=True, pid_input="_", is_remove=False):
        self._call("stop", pid_input=pid_input, is_remove=is_remove)
        self.stopped[pid_input] = self.clock.now
        self._done()

    # -- the path ---------------------------------------------------------------------------------

    def _sends(self, args, side: str) -> bool:
        return {"client": ("upload", "bidirectional"), "server": ("download", "bidirectional")}[side].__contains__(
            args.direction)

    def up(self, args) -> int:
        """Connections of a profile whose handshake completed."""
        return args.connections if self.established is None else min(args.connections, self.established)

    def rate(self, pid: str, side: str) -> float:
        """Payload bit/s one connection of a profile carries from a side (client or server)."""
        args = self.loaded[pid]
        if not self._sends(args, side):
            return 0.0
        sharing = sum(self.up(self.loaded[p]) for p in self.started
                      if (p == pid or p not in self.stopped) and self._sends(self.loaded[p], side))
        rate = self.link_bps / sharing
        rate = min(rate, (args.window or DEFAULT_BUFFER_BYTES) * 8 / self.rtt_s)
        if args.bitrate:
            rate = min(rate, args.bitrate)
        return rate

    def rtt(self, pid: str, at: float | None = None) -> float:
        """The smoothed RTT of a profile's connections (at a time: a bulk one's rises as the queue fills)."""
        if self.loaded[pid].bitrate:
            return self.rtt_s
        filled = 1.0
        if self.queue_fill_s and at is not None:
            filled = min(1.0, (at - self.started[pid][0]) / self.queue_fill_s)
        return self.rtt_s * (1 + (self.loaded_rtt_factor - 1) * filled)

    def refreshed_at(self) -> float:
        """When the server last refreshed the counters it answers with."""
        if not self.refresh_s:
            return self.clock.now
        first = self.origin + self.refresh_phase
        return max(self.synced_at, first + math.floor((self.clock.now - first) / self.refresh_s) * self.refresh_s)

    def _elapsed(self, pid: str, at: float) -> float:
        start, _ = self.started[pid]
        end = min(self.stopped.get(pid, at), at)
        return max(0.0, end - start - self.setup_s)

    def _section(self, pid: str, side: str) -> dict:
        args = self.loaded[pid]
        other = "server" if side == "client" else "client"
        at = self.refreshed_at()
        if at < self.started[pid][0]:
            return dict.fromkeys(COUNTERS, 0)  # refreshed before the profile started: it counted nothing yet
        elapsed = self._elapsed(pid, at)
        sent = int(self.rate(pid, side) * elapsed / 8) * self.up(args)
        received = int(self.rate(pid, other) * elapsed / 8) * self.up(args)
        rexmit = int(sent * self.retransmit_ratio)
        up = self.up(args) if at >= self.started[pid][0] + self.handshake_s else 0
        counters = dict.fromkeys(COUNTERS, 0)
        counters.update({"tcps_sndbyte_ok": sent, "tcps_sndbyte": sent + (self.app_ahead if sent else 0),
                         "tcps_rcvbyte": received, "tcps_sndrexmitbyte": rexmit,
                         "tcps_sndrexmitpack": math.ceil(rexmit / self.mss),
                         "tcps_connects": up, "m_est_flows": up})
        return counters

    def get_traffic_stats(self, skip_zero=True, pid_input="_", is_sum=False):
        self._call("get_traffic_stats", skip_zero=skip_zero, pid_input=pid_input)
        if pid_input not in self.started:
            raise TRexError(f"*** get_traffic_stats: profile {pid_input} was not started")
        stats = {side: self._section(pid_input, side) for side in ("client", "server")}
        if skip_zero:
            stats = {side: {k: v for k, v in c.items() if v or k in KEPT_WHEN_ZERO} for side, c in stats.items()}
        self._done()
        return stats

    def get_stats(self, ports=None, sync_now=True, skip_zero=True, pid_input="_", is_sum=False):
        """ASTFClient.get_stats: global and port statistics (the server refreshes every counter for them), then the
        profile's traffic counters and the latency statistics."""
        self._call("get_stats", sync_now=sync_now, pid_input=pid_input)
        if sync_now:
            self.synced_at = self.clock.now
        self._done()
        # As TRex's client: every global and port figure by name (GlobalStats/PortStats.to_dict), the text "N/A"
        # for one the server did not send (AbstractStats.get), and the ports' sum as "total".
        ports = {port: dict.fromkeys(PORT_COUNTERS, 0) for port in (0, 1)}
        figure = self.cpu_util(self.clock.now) if callable(self.cpu_util) else self.cpu_util
        cpu = "N/A" if figure is None else figure
        return {"global": {**dict.fromkeys(GLOBAL_COUNTERS, 0.0), "cpu_util": cpu}, **ports,
                "total": dict.fromkeys(PORT_COUNTERS, 0),
                "traffic": self.get_traffic_stats(skip_zero, pid_input, is_sum), "latency": {}}

    def get_flow_info(self, profile_id="_", duration=0, index=None):
        """The flow dumps taken since ``index``, as TRex keeps them: one dump at the start and one every dump
        interval, each with the first connection of each side only (the one its profile context tracks), and only
        the last FLOW_DUMP_SPAN_S s of dumps kept (older ones are overwritten)."""
        self._call("get_flow_info", profile_id=profile_id, index=index)
        args = self.loaded[profile_id]
        start, interval = self.started[profile_id]
        taken = int((self.clock.now - start) / interval) + 1 if interval else 0
        kept = int(FLOW_DUMP_SPAN_S / interval) if interval else 0
        flows: dict = {}
        next_index = index or 0
        for k in range(max(next_index, taken - kept), taken):
            if self.up(args):
                at = start + k * interval
                ends = {"client": (args.client_address, 40000, args.server_address, args.port),
                        "server": (args.server_address, args.port, args.client_address, 40000)}
                for origin, (src, sport, dst, dport) in ends.items():
                    # A side that has not sent yet has no RTT sample: 0. TRex truncates to whole ms.
                    rtt = math.floor(self.rtt(profile_id, at) * 1000 + 1e-9) if self.rate(profile_id, origin) else 0
                    flows.setdefault(f"{src}:{sport}-{dst}:{dport}", []).append(
                        {"origin": origin, "duration": int(k * interval * 1000), "state": 4, "rtt": rtt})
            next_index = k + 1
        if index is not None:
            flows["next_index"] = next_index
        self._done()
        return flows


def api() -> types.ModuleType:
    """What the engine takes from trex.astf.api."""
    module = types.ModuleType("trex.astf.api")
    module.TRexError = TRexError
    module.ASTFClient = FakeAstfClient
    return module
