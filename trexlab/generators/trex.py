"""The trial contract on Cisco TRex (stateless mode, STL).

One trial: reset the ports, add per direction the test stream and, when the
trial measures latency, a latency stream with its own pg_id (built by
trex-profiles/stl_rfc2544_udp.py), clear the statistics, start every sending
port at the offered load, each stream a single burst of its share of the
trial's frames (both ports of a bidirectional trial at one time of the
server's: TRex's synchronized start), wait until the traffic stops
plus the receive tail (TRex keeps its receive filters for that long, so late
frames still count under their pg_id), then read the counters.

What is reported and why:

* frames sent / received per direction come from the pg_id counters (tx_pkts
  on the sending port, rx_pkts on the receiving port), so stray frames on a
  port never count as test frames;
* the send time is measured, never assumed: while the trial runs the sending
  ports' pg_id counters are read (back to back around the first frames and the
  expected end, so each port's first and last frame are timed to about one RPC
  round trip). A TRex that cannot keep up sends every frame, only later: its
  send time exceeds the duration (a stretched trial). A TRex that sends frames
  ahead of the paced schedule (a start-up burst: ~220 frames in the first 5 ms
  of port 0 at 10 kfps, captured on TRex v3.08) offers the DUT more than the
  offered load: the frames ahead are counted (a lower bound) and, beyond the
  trial contract's tolerance, flag the trial as a stretched one is. Both
  ports' start skew is recorded per trial (DirectionResult.send_start) and
  flagged beyond the tolerance, though the synchronized start sets one start
  time for both. A stream sends its burst's frames, the trial's count; a
  frame sent is a frame intended;
* tester-side receive drops are the receiving port's ``ierrors``, which TRex
  sums from the NIC's imissed (xstat ``rx_missed_errors``: in software mode a
  full AF_PACKET ring), ierrors and rx_nombuf; reported apart from DUT loss;
* frames count until the receive tail ends: test frames carry no timestamp,
  so a frame timeout is refused;
* latency: median, 99.9th percentile and max from the HDR histogram that a
  server started with ``--hdrh`` keeps per latency pg_id; TRex's own histogram
  (10 us buckets, then decades) is too coarse for percentiles. The latency
  stream starts after the trial's tag_delay (RFC 8219's warm-up) and carries
  the test stream's flows (trex-profiles/stl_rfc2544_udp.py). Every tag sent is
  ranked once: one the histogram does not hold (duplicates aside, which TRex's
  sequence check counts) as lost; a histogram holding more delays than latency
  frames arrived is refused;
* byte counters include the FCS: bytes per sent frame must equal the frame size;
* a server in software mode counts every received test frame on its one RX
  core: a trial beyond what that core counts (MAX_SOFTWARE_RX_FPS over all
  ports) would measure TRex, so it is refused before any traffic.

The first trial after a server start may lose a few frames, so a short warm-up
trial runs after connecting and its result is discarded.

TRex binds its RPC and publisher ports to IPv4 only; unless a server address
is given, the generator reaches the server on the tester node's loopback
through an SSH tunnel (the local lab's management network is IPv6 only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import math
import os
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trexlab import __version__, rolevalues
from trexlab.params import MAX_PORT, InvalidParameter, check_range
from trexlab.paths import paths
from trexlab.testbed.inventory import Lab, Node, load_lab
from trexlab.trial import (
    SEND_OVERRUN_TOLERANCE,
    Capabilities,
    DirectionResult,
    GeneratorError,
    Latency,
    TrialResult,
    TrialSpec,
    restabilize,
)

PROFILE = paths().trex_profiles / "stl_rfc2544_udp.py"
CLIENT_SUBDIR = "automation/trex_control_plane/interactive"
DEFAULT_SYNC_PORT = 4501
#: TRex reports latency in whole microseconds.
MICROSECOND = 1e-6
#: Warm-up trial after connecting: short and slow, only to wake the server's data path.
WARMUP: dict[str, Any] = {"offered_load": 1000.0, "duration": 1.0, "receive_tail": 0.5}
#: Seconds between two reads of the sending ports' frame counters while a trial runs. Within FINE_WINDOW s of
#: the first frames and of the expected end they are read back to back (one RPC round trip apart), so the first
#: and last frame are timed to about a round trip, not to TRex's end-of-traffic event (+-30 ms, measured).
POLL_INTERVAL = 0.05
FINE_WINDOW = 0.2
#: Latency frames/s TRex times accurately over all ports together: its RX core timestamps and checks them in
#: software, and TRex's stateless manual ("Per stream latency/jitter/packet errors") says to keep the latency streams'
#: total at most 5 Mpps. Beyond it the delays would be TRex's as much as the DUT's.
MAX_LATENCY_FPS = 5_000_000
#: Test frames/s TRex in software mode counts over all ports together. A server without hardware filters (started
#: with --software, or on a virtual NIC such as AF_PACKET, which always runs so; get_system_info's
#: advanced_per_stream_stats says which) hands every received frame of a pg_id to its one RX core, which counts it in
#: software. TRex's manual: its appendix "Software mode" names that RX core as what limits per-stream statistics
#: (~10 Mpps when the NIC steers the frames to it), and its stateless manual ("Tagged Packet Group") puts the same
#: path in software mode, the data-plane cores redirecting the frames to the RX thread, at 3-5 Mpps; the upper end
#: is taken. Beyond it a trial's loss and send time would be TRex's, not the DUT's.
MAX_SOFTWARE_RX_FPS = 5_000_000
#: Seconds the reads wait back to back for every sending port's first frames after they are due.
START_WAIT = 1.0
#: Seconds per port a synchronized start puts between its ping of the server and the ports' common start time
#: (start_at_ts; the ping's round trip per port instead when that is longer): lbr-trex-client's STLClient.start
#: (trex/stl/trex_stl_client.py). The server refuses a start time less than 0.1 s ahead (trex-core
#: src/stx/stl/trex_stl_port.cpp, TrexStatelessProfile::start_traffic). The first frames are due that long after the
#: start request: the reads of the sending ports' counters wait for them (_watch_sending).
SYNCHRONIZED_LEAD_PER_PORT = 0.5
#: Seconds to wait for the SSH tunnel's local port.
TUNNEL_TIMEOUT = 15.0
#: ssh's last words when a local port it was to forward is taken (with ExitOnForwardFailure), and the times the
#: tunnel chooses its ports and starts ssh before it gives up.
SSH_FORWARD_REFUSED = "Could not request local forwarding"
TUNNEL_PORT_ATTEMPTS = 3
#: Why SIIT traffic (another IP version per port) is refused (TRexGenerator.capabilities).
TRANSLATED_FRAMES_REFUSED = ("the same on both tester ports with the trex generator (TRex finds a frame's pg_id in "
                             "its IPv4 Identification or IPv6 Flow Label, which a SIIT translator does not carry "
                             "over: every translated frame would count as lost)")


def installed_trex_paths(lab: Lab | None = None) -> list[str]:
    """Where a TRex installed on this machine may be, most specific first.

    TREXLAB_TREX_PATH; on a local lab the tester node's own installation, which
    roles/trex puts below the node's state directory (its trex_root on namespace
    nodes); then the role's default for a node with a disk of its own. Both roots
    are rolevalues.trex_root's, the role's as well (filter trexlab.lab.trex_root).
    """
    paths = [os.environ.get("TREXLAB_TREX_PATH")]
    if lab is not None and lab.tester.netns:
        paths.append(rolevalues.trex_current(rolevalues.trex_root(lab.name, lab.tester.name, namespace=True)))
    paths.append(default_trex_path())
    return [p for p in paths if p]


def default_trex_path() -> str:
    """Where roles/trex installs TRex on a tester with a disk of its own (not a namespace of this host)."""
    return rolevalues.trex_current(rolevalues.TREX_SYSTEM_ROOT)


def load_client_api(lab: Lab | None = None, module: str = "trex.stl.api"):
    """A TRex client API module (STL by default, or trex.astf.api): from an installed TRex, else PyPI
    lbr-trex-client.

    Client and server must agree on the API major version, so the client
    shipped with the installed TRex comes first.
    """
    errors = []
    for root in reversed(installed_trex_paths(lab)):  # each goes to the front: the first ends up first
        interactive = Path(root) / CLIENT_SUBDIR
        if interactive.is_dir() and str(interactive) not in sys.path:
            sys.path.insert(0, str(interactive))
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        errors.append(str(exc))
    try:
        importlib.import_module("lbr_trex_client")  # puts its bundled `trex` package on sys.path
        return importlib.import_module(module)
    except ImportError as exc:
        errors.append(str(exc))
    raise GeneratorError(f"TRex client not found: install TRex under {default_trex_path()} (roles/trex), set "
                         "TREXLAB_TREX_PATH, or pip install 'trexlab[trex]' (lbr-trex-client); "
                         f"{'; '.join(errors)}")


class SSHTunnel:
    """Local ports forwarded over SSH to ports on a node's loopback.

    TRex binds its RPC (sync) and publisher (async) ZMQ sockets to IPv4 only
    (``tcp://*:port``), and a lab's management network may be IPv6 only (the
    local lab's is) or firewalled: the node's own sshd reaches the server on
    its loopback whatever the management network is.
    """

    def __init__(self, node: Node, remote_ports: tuple[int, ...], timeout: float = TUNNEL_TIMEOUT):
        self.node, self.remote_ports = node, remote_ports
        end = time.monotonic() + timeout
        for attempt in range(1, TUNNEL_PORT_ATTEMPTS + 1):
            error = self._start(end)
            if error is None:
                return
            # A local port found free was another process's by the time ssh bound it: other ports, again.
            if SSH_FORWARD_REFUSED not in error or attempt == TUNNEL_PORT_ATTEMPTS:
                raise GeneratorError(f"ssh tunnel to {node.name} ({node.ansible_host}) for TRex ports "
                                     f"{', '.join(map(str, remote_ports))} did not come up: "
                                     f"{error or f'no local port within {timeout:.0f} s'}")

    def _start(self, end: float) -> str | None:
        """ssh forwarding free local ports; None once it listens on them, else what ssh said (empty at the
        deadline)."""
        self.local_ports = tuple(_free_local_port() for _ in self.remote_ports)
        forwards = []
        for local, remote in zip(self.local_ports, self.remote_ports, strict=True):
            forwards += ["-L", f"127.0.0.1:{local}:127.0.0.1:{remote}"]
        # ControlPath=none: this ssh binds the local ports itself, never a master connection of the user's ssh
        # configuration (_listening checks that the listeners are this process's).
        argv = self.node.ssh("-N", "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=5",
                             "-o", "ControlPath=none", *forwards)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > end:
                self._end()
                said = self.process.stderr.read() if self.process.stderr else ""
                self.close()  # its pipe: the next attempt's Popen takes self.process
                return (said or "").strip()
            time.sleep(0.1)
        return None

    def _listening(self) -> bool:
        """ssh itself listens on every local port. A port _free_local_port found free may be another process's by
        the time ssh binds it (ssh then exits, ExitOnForwardFailure): a probe connecting to it would find that
        process listening, and the client would talk to it as to the TRex server."""
        listening = _listeners(self.local_ports)
        return len(listening) == len(self.local_ports) and set(listening.values()) <= _socket_inodes(self.process.pid)

    def close(self) -> None:
        """End ssh and close the pipe of its stderr, which the garbage collector would otherwise close (and warn
        of: a ResourceWarning)."""
        self._end()
        if self.process.stderr is not None:
            self.process.stderr.close()

    def _end(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _free_local_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The kernel's table of this network namespace's IPv4 TCP sockets, and its state code for a listening one.
PROC_NET_TCP = Path("/proc/net/tcp")
TCP_LISTEN = "0A"


def _listeners(ports: tuple[int, ...]) -> dict[int, str]:
    """The inode of the socket listening on 127.0.0.1:port, for each of ports that has one."""
    # The kernel shows the address as the integer its bytes make in this machine's byte order, and the port.
    loopback = int.from_bytes(socket.inet_aton("127.0.0.1"), sys.byteorder)
    wanted = {f"{loopback:08X}:{port:04X}": port for port in ports}
    found = {}
    for line in PROC_NET_TCP.read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] in wanted and fields[3] == TCP_LISTEN:
            found[wanted[fields[1]]] = fields[9]
    return found


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process pid has open (none once it has ended)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    except OSError:
        pass
    return inodes


def profile_module(path: Path = PROFILE):
    """The STL profile as a module; it lives outside the package so trex-console can load it too."""
    spec = importlib.util.spec_from_file_location("trexlab_stl_profile", path)
    if spec is None or spec.loader is None:
        raise GeneratorError(f"STL profile {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decode_hdrh(encoded: str | bytes, timeout: float | None = None, lost_or_late: int = 0) -> Latency:
    """TRex's base64 HDR histogram (microseconds), kept as it came, as a Latency."""
    if isinstance(encoded, bytes):
        encoded = encoded.decode("ascii")
    return Latency(encoded, MICROSECOND, lost_or_late=lost_or_late, timeout=timeout)


def _pg(table: dict, pg_id: int) -> dict:
    """A per-pg_id entry; TRex's client keys them by int, JSON round trips by str."""
    return table.get(pg_id) or table.get(str(pg_id)) or {}


#: The figures of one pg_id that TRex's client reads from the server's answer without checking they are there
#: (lbr-trex-client 3.4.0, trex/stl/trex_stl_stats.py CPgIdStats.get_stats): a latency pg_id's "lat", and "tp" of
#: the first pg_id (whose ports it takes for every pg_id's); each with what it is and what is lost without it.
#: trex-core v3.07's dump_json (src/stx/stl/trex_stl_fs.cpp) puts "tp" in every pg_id's entry and "lat" in a latency
#: pg_id's while it is mapped to a hardware id; an unmapped one gets "lat" only from a saved histogram and an entry
#: at all only from non-zero sequence counters ("er", which unmapping resets). A server answer without them (another
#: version, a mock) makes the client fail with a bare KeyError, in clear_stats, start, get_pgid_stats or get_stats.
UNCHECKED_BY_CLIENT = {"lat": ("latency figures", "its delays cannot be read"),
                       "tp": ("tx_pkts counts", "the trial's frames cannot be counted")}


def reply_lacking(exc: KeyError) -> str | None:
    """What a KeyError raised in TRex's client says the server's answer lacked, naming the pg_id and the figure; None
    for any other KeyError (a fault of trexlab's own, which must keep its traceback). The client raises it in its loop
    over the answer's pg_ids, whose pg_id (the answer's key) is then a local of the frame that raised."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    if not frames or not exc.args or exc.args[0] not in UNCHECKED_BY_CLIENT:
        return None
    pg_id = frames[-1].f_locals.get("pg_id")
    if pg_id is None:
        return None
    figure, lost = UNCHECKED_BY_CLIENT[exc.args[0]]
    return (f'no {figure} ("{exc.args[0]}") for pg_id {pg_id} in its answer, which TRex\'s client cannot do '
            f"without: {lost}")


class TRexSession:
    """One connection to a TRex server's RPC port, direct or through an SSH tunnel to a node's loopback.

    Shared by the STL generator and the ASTF TCP engine: both reach the server the same way and must
    close it the same way (after a server died, closing must not hide the error that ended the run).
    The client is made on first use (tests pass a fake one), so creating a session starts nothing.
    """

    def __init__(self, server: str | None, sync_port: int, tunnel_node: Node | None, client=None):
        self.host, self.sync_port, self.tunnel_node = server, sync_port, tunnel_node
        self.server = (f"{server}:{sync_port}" if tunnel_node is None
                       else f"{tunnel_node.name}:{sync_port} (ssh tunnel to {tunnel_node.ansible_host})")
        self.client = client
        self.tunnel: SSHTunnel | None = None
        self.connected = False
        self.server_version: dict = {}

    def _open(self, make_client) -> None:
        """Connect once; make_client(server=, sync_port=, async_port=) is the API's STLClient or ASTFClient."""
        if self.client is None:
            # TRex's asynchronous publisher listens one port below the RPC port.
            host, sync_port, async_port = self.host, self.sync_port, self.sync_port - 1
            if self.tunnel_node is not None:
                self.tunnel = SSHTunnel(self.tunnel_node, (self.sync_port, self.sync_port - 1))
                host, (sync_port, async_port) = "127.0.0.1", self.tunnel.local_ports
            self.client = make_client(server=host, sync_port=sync_port, async_port=async_port)
        self.client.connect()
        self.connected = True
        self.server_version = dict(self.client.get_server_version() or {})

    def close(self) -> None:
        if self.connected:
            try:
                self.client.disconnect()
            except Exception:  # noqa: BLE001 - closing after the server died must not hide the real error
                pass
            self.connected = False
        if self.tunnel is not None:
            self.tunnel.close()
            self.tunnel = None


def _figure(table: dict, key: int | str) -> int | None:
    """A count from TRex's statistics (key: a port, or a port figure's name); None when TRex gave none. TRex's
    client puts the text "N/A" for a figure the server did not send (CPgIdStats.get_stats, AbstractStats.get_rel:
    e.g. rx_bytes on a NIC that counts no received bytes, every port figure from a server that sends none), and a
    port the server leaves out of its flow statistics (a dummy port) has no entry."""
    return _count_of(_given(table, key))


def _given(table: dict, key: int | str):
    """What TRex gave under key, a port or a figure's name (the client's int key or JSON's text); None: nothing."""
    return table.get(key, table.get(str(key)))


def _count_of(value) -> int | None:
    """value if it is a count (an int, not "N/A" nor a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class TRexGenerator(TRexSession):
    name = "trex"
    # The profile's test frames carry IPv4's DF bit when TrialSpec.dont_fragment asks; only latency frames carry a
    # timestamp, so TRex cannot tell a late test frame from one in time (no frame timeout). TRex marks a frame's
    # pg_id in its IPv4 Identification or IPv6 Flow Label, and its receiver counts only frames so marked: a SIIT
    # translator carries neither over (RFC 7915: flow label 0, a new identification), so TRex would count every
    # translated frame as lost (no translated frames).
    capabilities = Capabilities(needs_lab=True, dont_fragment=True, frame_timeout=False, translated_frames=False)

    def __init__(self, api, lab: Lab | None, profile, server: str | None = None,
                 sync_port: int = DEFAULT_SYNC_PORT, tunnel_node: Node | None = None, warmup: bool = True,
                 client=None):
        """server: the TRex host reached directly; or tunnel_node: the node whose loopback it listens on.

        The client is made on the first trial (tests pass a fake one), so creating a generator
        changes nothing and starts nothing.
        """
        super().__init__(server, sync_port, tunnel_node, client)
        self.api, self.lab, self.profile = api, lab, profile
        self.warmup = warmup
        self.clock, self.sleep = time.monotonic, time.sleep
        self.sending_pg_ids: dict[int, list[int]] = {}  # tester port -> pg_ids of the trial's streams
        self.software_mode: bool | None = None  # the server's, once connected (None: it did not say)

    # -- the contract -------------------------------------------------------------------------

    def describe(self) -> dict:
        return {"generator": "trex", "server": self.server, "server_version": self.server_version,
                "client": getattr(self.api, "__file__", None),  # the installed TRex's or lbr-trex-client's
                "profile": str(PROFILE.relative_to(paths().root)), "warmup": self.warmup,
                "send_time": f"pg_id tx counters read every {POLL_INTERVAL} s, back to back within {FINE_WINDOW} s "
                             "of the first frames and of the expected end",
                "start": "each stream a single burst of its frames; a bidirectional trial's ports started "
                         "synchronized (one server time, TRex's start_at_ts; core mask split)",
                "software_mode": self.software_mode,
                "node": self.lab.tester.name if self.lab else None, "trexlab": __version__}

    def skip_trials(self, count: int) -> None:
        pass  # no random stream of its own: a replayed trial changes nothing here

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        try:
            self._connect()
            result = self._trial(spec)
        except self.api.TRexError as exc:
            raise GeneratorError(f"TRex server {self.server}: {str(exc).strip().splitlines()[-1]}") from exc
        except (ConnectionError, TimeoutError, OSError) as exc:
            raise GeneratorError(f"TRex server {self.server} went away: {exc}") from exc
        except KeyError as exc:
            lacking = reply_lacking(exc)
            if lacking is None:
                raise
            raise GeneratorError(f"TRex server {self.server}: {lacking}") from exc
        restabilize(spec, self.sleep)
        return result

    def _connect(self) -> None:
        if self.connected:
            return
        self._open(self.api.STLClient)
        # True when the server uses no hardware filter: its RX core then counts every test frame (_check_rx_rate).
        software = (self.client.get_server_system_info() or {}).get("advanced_per_stream_stats")
        self.software_mode = software if isinstance(software, bool) else None
        if self.warmup:
            self._trial(TrialSpec(**WARMUP))

    # -- one trial ----------------------------------------------------------------------------

    @staticmethod
    def stream_rates(spec: TrialSpec) -> tuple[float, float]:
        """(test stream, latency stream) frames/s of each direction; together the offered load.

        With latency_mode "tagged" the latency stream sends its latency_frames over [tag_delay, duration)
        (a warm-up stream carries its rate before); "all" measures every frame from t = 0."""
        if spec.latency_mode == "none":
            return spec.offered_load, 0.0
        if spec.latency_mode == "all":
            return 0.0, spec.offered_load
        latency = min(spec.offered_load, spec.latency_frames / (spec.duration - spec.tag_delay))
        return spec.offered_load - latency, latency

    def pg_ids(self, port: int) -> tuple[int, int, int]:
        """(test, latency, warm-up) pg_id of the streams sent from a tester port: each direction its own."""
        test = 2 * port + 1
        return test, 2 * port + 2, test + self.profile.warmup_pg_offset

    def _trial(self, spec: TrialSpec) -> TrialResult:
        if spec.frame_timeout is not None:
            # Only latency frames carry a timestamp: TRex cannot tell a late test frame from one in time.
            raise InvalidParameter("frame_timeout", spec.frame_timeout,
                                   "none with the trex generator (frames count until the receive tail ends)")
        if spec.ip_version[0] != spec.ip_version[1]:
            raise InvalidParameter("ip_version", spec.ip_version, TRANSLATED_FRAMES_REFUSED)
        client, all_ports = self.client, [0, 1]
        senders = [spec.sender_port(d) for d in spec.active_directions]
        test_rate, latency_rate = self.stream_rates(spec)
        self._check_latency_rate(spec, latency_rate * len(senders))
        self._check_rx_rate(spec, len(senders))
        delay = spec.tag_delay if spec.latency_mode == "tagged" else 0.0  # "all" measures every frame
        # Every stream a single burst of its frames: the trial's count exactly, and a synchronized start cannot cut
        # it short (TRex's duration timer runs from when a port is told to start, not from the common start time).
        latency_frames = round(latency_rate * (spec.duration - delay))
        client.reset(ports=all_ports)
        for direction in spec.active_directions:
            port = spec.sender_port(direction)
            test_pg, latency_pg, warmup_pg = self.pg_ids(port)
            streams = self.profile.get_streams(
                direction=port, port_id=port, frame_size=spec.frame_size[port], ip_version=spec.ip_version[port],
                port_mode=spec.port_mode, networks=spec.destination_networks, rate=test_rate,
                latency_rate=latency_rate, pg_id=test_pg, latency_pg_id=latency_pg, warmup_pg_id=warmup_pg,
                tag_delay=delay, dont_fragment=spec.dont_fragment, frames=spec.frames_per_direction,
                latency_frames=latency_frames)
            client.add_streams(streams, ports=[port])
            # Only the pg_ids of streams the port really sends are read while sending.
            self.sending_pg_ids[port] = [stream.get_pg_id() for stream in streams]
        client.clear_stats()
        # Both directions start at one time of the server's (TRex's synchronized start: it pairs adjacent ports, 0
        # and 1, so only a bidirectional trial), not one port's start request after the other's: for the skew
        # between them the DUT carried one direction only. Its default core mask would send each port from one
        # core (STLClient.start): split keeps all the port's cores, each starting at that time.
        synchronized = len(senders) == 2
        how = {"synchronized": True, "core_mask": client.CORE_MASK_SPLIT} if synchronized else {}
        lead = SYNCHRONIZED_LEAD_PER_PORT * len(senders) if synchronized else 0.0
        requested = self.clock()
        # No duration: the bursts end by themselves once every frame is sent.
        client.start(ports=senders, mult="1", duration=-1, force=True, **how)
        samples = self._watch_sending(spec, senders, requested, lead)
        # rx_delay_ms keeps TRex's receive filters for the tail, so late test frames still count.
        client.wait_on_traffic(ports=senders, timeout=lead + spec.duration + spec.receive_tail + 30,
                               rx_delay_ms=int(spec.receive_tail * 1000))
        return self._result(spec, client.get_stats(ports=all_ports), samples, requested, latency_rate > 0)

    @staticmethod
    def _check_latency_rate(spec: TrialSpec, total: float) -> None:
        """Refuse latency streams beyond MAX_LATENCY_FPS over all ports (total), naming the trial's figure that sets
        their rate: offered_load with latency_mode "all", latency_frames (over duration - tag_delay) with "tagged"."""
        if total <= MAX_LATENCY_FPS:
            return
        per_direction = MAX_LATENCY_FPS / len(spec.active_directions)
        if spec.latency_mode == "all":
            name, value, allowed = "offered_load", spec.offered_load, f"<= {per_direction:.0f} frames/s per direction"
        else:
            name, value = "latency_frames", spec.latency_frames
            allowed = f"<= {math.floor(per_direction * (spec.duration - spec.tag_delay)):d} per direction"
        raise InvalidParameter(name, value, f"{allowed} with latency_mode={spec.latency_mode} on the trex generator "
                                            "(TRex timestamps latency frames in software on its RX core: at most "
                                            f"{MAX_LATENCY_FPS:d} frames/s over all ports, its manual says)")

    def _check_rx_rate(self, spec: TrialSpec, senders: int) -> None:
        """Refuse a trial whose test frames, over all ports, exceed what the RX core of a server in software mode
        counts (MAX_SOFTWARE_RX_FPS); a server with hardware filters counts in its NICs."""
        if not self.software_mode or spec.offered_load * senders <= MAX_SOFTWARE_RX_FPS:
            return
        raise InvalidParameter("offered_load", spec.offered_load,
                               f"<= {MAX_SOFTWARE_RX_FPS / senders:.0f} frames/s per direction on the trex generator "
                               "with its server in software mode (its RX core counts every test frame received: at "
                               f"most {MAX_SOFTWARE_RX_FPS:d} frames/s over all ports, TRex's manual says; beyond, the "
                               "trial would measure TRex)")

    def _count(self, flow: dict, pg_id: int, counter: str, port: int) -> int:
        """A frame count the trial's result rests on (tx_pkts, rx_pkts of a pg_id on a port): one TRex did not give
        cannot be guessed, and 0 would be taken for frames lost or unsent, so the trial has no result."""
        given = _given(_pg(flow, pg_id).get(counter, {}), port)
        count = _count_of(given)
        if count is None:
            raise GeneratorError(f"TRex server {self.server}: pg_id {pg_id} has no {counter} count for port {port} "
                                 f"(TRex gave {'nothing' if given is None else repr(given)}): the trial's frames "
                                 "cannot be counted")
        return count

    def _sent_by_port(self, senders: list[int]) -> dict[int, int]:
        """Frames each sending port has sent so far, over all its pg_ids (TRex's flow-statistics counters)."""
        pg_ids = [pg for port in senders for pg in self.sending_pg_ids[port]]
        flow = self.client.get_pgid_stats(pg_ids).get("flow_stats", {})
        return {port: sum(self._count(flow, pg, "tx_pkts", port) for pg in self.sending_pg_ids[port])
                for port in senders}

    def _watch_sending(self, spec: TrialSpec, senders: list[int], requested: float,
                       lead: float = 0.0) -> list[CounterSample]:
        """Read the sending ports' counters while the trial runs: back to back (one RPC round trip apart)
        from shortly before the first frames are due (`lead` s after the start request: a synchronized start's)
        until every port has sent its first frames and from shortly before the expected end until the
        traffic stops, every POLL_INTERVAL in between. The reads bound each port's first and last frame."""
        samples: list[CounterSample] = []
        first_seen: float | None = None
        give_up = requested + lead + spec.duration + spec.receive_tail + 30
        self.sleep(max(0.0, requested + lead - FINE_WINDOW - self.clock()))  # no frame is due before
        while True:
            before = self.clock()
            sent = self._sent_by_port(senders)
            after = self.clock()
            samples.append(CounterSample(before, after, sent))
            if first_seen is None and all(sent.values()):
                first_seen = after
            if after > give_up:
                return samples  # wait_on_traffic times out and says so
            # A port that sends nothing (a dead link) must not keep the reads back to back for the whole trial.
            if first_seen is None and after - requested < lead + START_WAIT:
                continue
            origin = requested + lead if first_seen is None else first_seen
            if after - origin < FINE_WINDOW:
                continue
            if after - origin >= spec.duration - FINE_WINDOW:
                if not self.client.is_traffic_active(ports=senders):
                    before = self.clock()
                    sent = self._sent_by_port(senders)
                    samples.append(CounterSample(before, self.clock(), sent))
                    return samples
                continue
            self.sleep(min(POLL_INTERVAL, origin + spec.duration - FINE_WINDOW - after))

    def _result(self, spec: TrialSpec, stats: dict, samples: list[CounterSample], requested: float,
                timed: bool) -> TrialResult:
        directions, notes, spans = {}, [], {}
        for direction in spec.active_directions:
            sender = spec.sender_port(direction)
            receiver = 1 - sender
            sent = received = copies = 0
            tx_bytes: int | None = 0
            latency_pg = self.pg_ids(sender)[1] if timed else None
            flows = stats.get("flow_stats", {})
            # The pg_ids of the streams the port sent: each must be in TRex's answer (0 is no stand-in).
            for pg_id in self.sending_pg_ids[sender]:
                pg_sent = self._count(flows, pg_id, "tx_pkts", sender)
                pg_received = self._count(flows, pg_id, "rx_pkts", receiver)
                sent += pg_sent
                pg_bytes = _figure(_pg(flows, pg_id).get("tx_bytes", {}), sender)
                tx_bytes = None if tx_bytes is None or pg_bytes is None else tx_bytes + pg_bytes
                if pg_id == latency_pg:
                    received += pg_received  # its copies are counted by TRex's sequence check (below)
                else:
                    # A stream cannot deliver more frames than it sent: the rest are copies TRex counted again.
                    received += min(pg_sent, pg_received)
                    copies += max(0, pg_received - pg_sent)
            if copies:
                notes.append(f"{direction}: {copies} test frames received beyond those sent: the DUT duplicates "
                             "frames, and TRex cannot tell a copy of a test frame from a frame (only latency frames "
                             "carry a sequence number), so loss among them may be hidden")
            if tx_bytes is None:
                notes.append(f"{direction}: frame sizes on the wire not checked: TRex gave no tx_bytes for port "
                             f"{sender}")
            elif sent and tx_bytes != sent * spec.frame_size[sender]:
                # TRex counts bytes with the FCS, as frame sizes are: a mismatch is a wrong frame.
                notes.append(f"{direction}: {tx_bytes / sent:.1f} bytes per sent frame, "
                             f"frame size {spec.frame_size[sender]}")
            span = send_span(samples, sender, sent, spec.offered_load, requested, streams=3 if timed else 1)
            spans[direction] = span
            send_duration = span.send_duration(spec.duration, spec.offered_load)
            if send_duration > spec.duration * (1 + SEND_OVERRUN_TOLERANCE):
                notes.append(f"{direction}: sending took {send_duration:.3f} s for a {spec.duration:g} s trial "
                             f"(first and last frame timed to +-{span.resolution * 1e3:.1f} ms)")
            elif send_duration < spec.duration * (1 - SEND_OVERRUN_TOLERANCE):
                notes.append(f"{direction}: sent in {send_duration:.3f} s instead of {spec.duration:g} s "
                             f"(first and last frame timed to +-{span.resolution * 1e3:.1f} ms): the DUT was "
                             f"offered {sent / send_duration:.1f} fps for {spec.offered_load:g} fps")
            if span.frames_ahead > SEND_OVERRUN_TOLERANCE * max(spec.frames_per_direction, sent):
                notes.append(f"{direction}: at least {span.frames_ahead} frames went ahead of the paced schedule "
                             f"(a start-up burst or a short send span; tolerance "
                             f"{SEND_OVERRUN_TOLERANCE:.1%} of the frames): the trial counts as not paced")
            # TRex's port ierrors already sum the NIC's imissed (xstat rx_missed_errors: a full AF_PACKET
            # ring in software mode), ierrors and rx_nombuf: adding rx_missed_errors would count them twice.
            # None: unknown (DirectionResult.tester_drops), never 0; not a count the frame counts rest on, so the
            # trial stands, said so here and by the procedures (TrialRunner.notes, tester_limits).
            tester_drops = _figure(stats.get(receiver, stats.get(str(receiver), {})), "ierrors")
            if tester_drops is None:
                notes.append(f"{direction}: frames tester port {receiver} dropped itself unknown: TRex gave no "
                             "ierrors for it")
            latency, duplicates, reordered, tags = None, 0, 0, {}
            if timed:
                latency_pg = self.pg_ids(sender)[1]
                entry = _pg(stats.get("latency", {}), latency_pg)
                if not entry:  # checked first: the histogram check's cause (no --hdrh) would be the wrong one
                    raise GeneratorError(f"TRex server {self.server}: no latency statistics for pg_id {latency_pg} "
                                         f"(the {direction} latency stream) in its answer: its delays cannot be read")
                errors = entry.get("err_cntrs", {})
                duplicates, reordered = int(errors.get("dup", 0)), int(errors.get("out_of_order", 0))
                encoded = entry.get("latency", {}).get("hdrh")
                if not encoded:
                    raise GeneratorError(f"TRex server {self.server}: no HDR histogram for pg_id "
                                         f"{latency_pg}: start the server with --hdrh")
                # The latency stream's own counters: its frames are the tags (all frames with "all"). One that
                # never arrived within the receive tail is lost: +infinity in every percentile. TRex's rx_pkts and
                # histogram count a duplicated tag twice (its sequence check counts the copies, dup): without them,
                # a copy would stand in for a lost tag.
                tags_sent = self._count(flows, latency_pg, "tx_pkts", sender)
                arrived = self._count(flows, latency_pg, "rx_pkts", receiver)
                tags_received = min(tags_sent, max(0, arrived - duplicates))
                latency = decode_hdrh(encoded, spec.frame_timeout)
                if latency.size > arrived:
                    raise GeneratorError(f"TRex server {self.server}: the HDR histogram of pg_id {latency_pg} holds "
                                         f"{latency.size} delays for {arrived} latency frames received: its "
                                         "percentiles would not be this trial's")
                # Tags the histogram does not hold (beyond the copies) rank as lost: each tag sent is ranked once.
                lost = max(0, tags_sent - max(0, latency.size - duplicates))
                tags = {"tags_sent": tags_sent, "tags_received": tags_received, "tags_lost_or_late": lost}
                latency = dataclasses.replace(latency, lost_or_late=lost)
                received = max(0, received - duplicates)  # a copy is not a frame received (swtester's rule too)
            # The streams' bursts add up to the trial's frames; should TRex send more (a continuous stream with a
            # duration sent one more at times), a frame it sent is a test frame, and losing it is loss.
            directions[direction] = DirectionResult(
                direction=direction, frames_intended=max(spec.frames_per_direction, sent), frames_sent=sent,
                frames_received=received, tester_drops=tester_drops, duplicates=duplicates + copies,
                reordered=reordered, send_duration=send_duration, latency=latency,
                frames_ahead=span.frames_ahead, **tags)
        starts = {d: s.first_estimate for d, s in spans.items() if s.first_estimate is not None}
        if starts:
            origin = min(starts.values())
            directions = {d: dataclasses.replace(r, send_start=starts[d] - origin if d in starts else None)
                          for d, r in directions.items()}
            skew = max(starts.values()) - origin
            resolution = max(spans[d].resolution for d in starts)
            if skew > max(SEND_OVERRUN_TOLERANCE * spec.duration, resolution):
                notes.append(f"tester ports started {skew * 1e3:.1f} ms apart (+-{resolution * 1e3:.1f} ms): "
                             "for that long the DUT carried one direction only")
        return TrialResult(spec=spec, directions=directions, generator=self.name, notes=tuple(notes))


@dataclass(frozen=True)
class CounterSample:
    """One read of the sending ports' frame counters: TRex counted ``sent`` somewhere between ``before`` and
    ``after`` (s, the generator's monotonic clock: the RPC's round trip)."""

    before: float
    after: float
    sent: dict[int, int]  # tester port -> frames sent so far


@dataclass(frozen=True)
class SendSpan:
    """When one tester port sent its first and last frame, bounded by counter reads (s, generator clock)."""

    first: tuple[float, float] | None  # (earliest, latest) time of the first frame; None: nothing sent
    last: tuple[float, float] | None  # (earliest, latest) time of the last frame
    frames_ahead: int  # at least this many frames went ahead of the paced schedule

    @property
    def first_estimate(self) -> float | None:
        return None if self.first is None else sum(self.first) / 2

    @property
    def resolution(self) -> float:
        """Half the widest bound: how exactly first and last frame are timed."""
        if self.first is None or self.last is None:
            return math.inf
        return max(self.first[1] - self.first[0], self.last[1] - self.last[0]) / 2

    def send_duration(self, duration: float, rate: float) -> float:
        """The send time closest to the trial duration that the counters allow.

        A paced stream of rate x duration frames spans duration - 1/rate from first to last frame (one more
        frame: duration), so the send time lies in [shortest span, longest span + 1/rate]; the duration is
        reported when it lies in there (the reads cannot tell them apart), else the nearer end: a sender that
        overran or finished early by more than the reads' resolution is reported as such, never on a guess.
        """
        if self.first is None or self.last is None:
            return duration
        shortest = max(0.0, self.last[0] - self.first[1])
        longest = self.last[1] - self.first[0] + 1 / rate
        return min(max(duration, shortest), longest)


def send_span(samples: list[CounterSample], port: int, total: int, rate: float, requested: float,
              streams: int = 1) -> SendSpan:
    """A port's first and last frame and its frames ahead of schedule, from counter reads.

    First frame: after the last read that saw none (or the start request), before the first that saw some.
    Last frame: after the last read below the port's final count, before the first at it. Frames ahead: a paced
    sender at ``rate`` can have sent at most rate x (read's end - earliest first frame) + one frame per stream
    (each stream's first goes at its start) by a read; more is a burst or a faster pace (a lower bound).
    """
    if not total:
        return SendSpan(None, None, 0)
    none_yet = [s for s in samples if s.sent.get(port, 0) == 0]
    some = [s for s in samples if s.sent.get(port, 0) > 0]
    first_lo = max([requested] + [s.before for s in none_yet])
    first_hi = min([s.after for s in some], default=math.inf)
    below = [s.before for s in samples if s.sent.get(port, 0) < total]
    at_end = [s.after for s in samples if s.sent.get(port, 0) >= total]
    last = (max(below, default=first_lo), min(at_end)) if at_end else None
    ahead = max([s.sent.get(port, 0) - math.floor(rate * (s.after - first_lo)) - streams for s in some], default=0)
    first = (first_lo, first_hi) if some else None
    return SendSpan(first, last, max(0, ahead))


def _flag(name: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("1", "true", "yes", "on"):
        return True
    if str(value).lower() in ("0", "false", "no", "off"):
        return False
    raise InvalidParameter(name, value, "true, false")


def create(lab: Lab | None = None, inventory: str | None = None, server: str | None = None,
           sync_port: int | str = DEFAULT_SYNC_PORT, warmup: str | bool = True, client=None,
           api=None) -> TRexGenerator:
    """A TRex generator.

    server: the TRex host, reached directly (default: the tester's trexlab_trex_server; without
    it, the server on the tester node's loopback, reached through an SSH tunnel to the node);
    sync_port: its RPC port (the publisher's is one below, TRex's default pair 4501/4500);
    client/api: an STLClient-like object and its API module (tests pass fakes).
    """
    sync_port = int(sync_port)
    check_range("sync_port", sync_port, 2, MAX_PORT, integer=True)
    warmup = _flag("warmup", warmup)
    tunnel_node = None
    if server is None:
        lab = lab or load_lab(inventory)
        server = lab.tester.extra.get("trexlab_trex_server")
        if server is None:
            tunnel_node = lab.tester
    api = api or load_client_api(lab)
    return TRexGenerator(api, lab, profile_module().register(), server=server, sync_port=sync_port,
                         tunnel_node=tunnel_node, warmup=warmup, client=client)
