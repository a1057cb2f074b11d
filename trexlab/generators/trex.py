"""The trial contract on Cisco TRex (stateless mode, STL).

One trial: reset the ports, add per direction the test stream and, when the
trial measures latency, a latency stream with its own pg_id (built by
trex-profiles/stl_rfc2544_udp.py), clear the statistics, start every sending
port at the offered load for the trial duration, wait until the traffic stops
plus the receive tail (TRex keeps its receive filters for that long, so late
frames still count under their pg_id), then read the counters.

What is reported and why:

* frames sent / received per direction come from the pg_id counters (tx_pkts
  on the sending port, rx_pkts on the receiving port), so stray frames on a
  port never count as test frames;
* the achieved rate is the measured tx_pkts over the time TRex took to send
  them, never rate x duration. A TRex that cannot keep up sends every frame,
  only later: the wall time from start to the end of the traffic (less the
  receive tail) then exceeds the duration, and that time is the send duration
  (a stretched trial). A continuous stream with a duration sends rate x
  duration frames or one more; a frame sent is a frame intended;
* tester-side receive drops are the receiving port's ``ierrors``, which TRex
  sums from the NIC's imissed (xstat ``rx_missed_errors``: in software mode a
  full AF_PACKET ring), ierrors and rx_nombuf; reported apart from DUT loss;
* frames count until the receive tail ends: test frames carry no timestamp,
  so a frame timeout is refused;
* latency: median, 99.9th percentile and max from the HDR histogram that a
  server started with ``--hdrh`` keeps per latency pg_id; TRex's own histogram
  (10 us buckets, then decades) is too coarse for percentiles;
* byte counters include the FCS: bytes per sent frame must equal the frame size.

The first trial after a server start may lose a few frames, so a short warm-up
trial runs after connecting and its result is discarded.

TRex binds its RPC and publisher ports to IPv4 only; unless a server address
is given, the generator reaches the server on the tester node's loopback
through an SSH tunnel (the local lab's management network is IPv6 only).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from trexlab import __version__
from trexlab.lab import Lab, Node, load_lab
from trexlab.params import InvalidParameter, check_range
from trexlab.paths import paths
from trexlab.trial import (
    DirectionResult,
    GeneratorError,
    Latency,
    TrialResult,
    TrialSpec,
)

PROFILE = paths().trex_profiles / "stl_rfc2544_udp.py"
#: Where the trex role installs TRex (a `current` link to the versioned directory).
DEFAULT_TREX_PATH = "/opt/trex/current"
CLIENT_SUBDIR = "automation/trex_control_plane/interactive"
DEFAULT_SYNC_PORT = 4501
#: TRex reports latency in whole microseconds.
MICROSECOND = 1e-6
#: Warm-up trial after connecting: short and slow, only to wake the server's data path.
WARMUP = {"offered_load": 1000.0, "duration": 1.0, "receive_tail": 0.5}
#: Seconds of wall time beyond the duration that still count as on time: the end of the traffic is seen
#: through TRex's async events within about +-30 ms (measured on the local lab, 1..400 kfps).
WALL_MARGIN = 0.1
#: Seconds to wait for the SSH tunnel's local port.
TUNNEL_TIMEOUT = 15.0


def installed_trex_paths(lab: Lab | None = None) -> list[str]:
    """Where a TRex installed on this machine may be, most specific first.

    TREXLAB_TREX_PATH; on a local lab the tester node's own installation, which
    roles/trex puts under /var/lib/trexlab/<lab>/<node>/trex (its trex_root on
    namespace nodes); then the role's default /opt/trex/current.
    """
    paths = [os.environ.get("TREXLAB_TREX_PATH")]
    if lab is not None and lab.tester.netns:
        paths.append(f"/var/lib/trexlab/{lab.name}/{lab.tester.name}/trex/current")
    paths.append(DEFAULT_TREX_PATH)
    return [p for p in paths if p]


def load_client_api(lab: Lab | None = None):
    """The TRex STL client API module: from an installed TRex, else PyPI lbr-trex-client.

    Client and server must agree on the API major version, so the client
    shipped with the installed TRex comes first.
    """
    errors = []
    for root in reversed(installed_trex_paths(lab)):  # each goes to the front: the first ends up first
        interactive = Path(root) / CLIENT_SUBDIR
        if interactive.is_dir() and str(interactive) not in sys.path:
            sys.path.insert(0, str(interactive))
    try:
        return importlib.import_module("trex.stl.api")
    except ImportError as exc:
        errors.append(str(exc))
    try:
        importlib.import_module("lbr_trex_client")  # puts its bundled `trex` package on sys.path
        return importlib.import_module("trex.stl.api")
    except ImportError as exc:
        errors.append(str(exc))
    raise GeneratorError("TRex client not found: install TRex under /opt/trex/current (roles/trex), set "
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
        self.local_ports = tuple(_free_local_port() for _ in remote_ports)
        forwards = []
        for local, remote in zip(self.local_ports, remote_ports, strict=True):
            forwards += ["-L", f"127.0.0.1:{local}:127.0.0.1:{remote}"]
        argv = node.ssh("-N", "-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=5", *forwards)
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + timeout
        while not self._listening():
            if self.process.poll() is not None or time.monotonic() > end:
                self.close()
                error = (self.process.stderr.read() or "").strip() if self.process.stderr else ""
                raise GeneratorError(f"ssh tunnel to {node.name} ({node.ansible_host}) for TRex ports "
                                     f"{', '.join(map(str, remote_ports))} did not come up: "
                                     f"{error or f'no local port within {timeout:.0f} s'}")
            time.sleep(0.1)

    def _listening(self) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.local_ports[0])) == 0

    def close(self) -> None:
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


def profile_module(path: Path = PROFILE):
    """The STL profile as a module; it lives outside the package so trex-console can load it too."""
    spec = importlib.util.spec_from_file_location("trexlab_stl_profile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decode_hdrh(encoded: str | bytes, timeout: float | None = None) -> Latency:
    """TRex's base64 HDR histogram (microseconds), kept as it came, as a Latency."""
    if isinstance(encoded, bytes):
        encoded = encoded.decode("ascii")
    return Latency(encoded, MICROSECOND, timeout=timeout)


def _pg(table: dict, pg_id: int) -> dict:
    """A per-pg_id entry; TRex's client keys them by int, JSON round trips by str."""
    return table.get(pg_id) or table.get(str(pg_id)) or {}


def _port(table: dict, port: int) -> int:
    return int(table.get(port, table.get(str(port), 0)) or 0)


class TRexGenerator:
    name = "trex"
    supports_df = True  # the profile's test frames carry IPv4's DF bit when TrialSpec.dont_fragment asks

    def __init__(self, api, lab: Lab | None, profile, server: str | None = None,
                 sync_port: int = DEFAULT_SYNC_PORT, tunnel_node: Node | None = None, warmup: bool = True,
                 client=None):
        """server: the TRex host reached directly; or tunnel_node: the node whose loopback it listens on.

        The client is made on the first trial (tests pass a fake one), so creating a generator
        changes nothing and starts nothing.
        """
        self.api, self.lab, self.profile = api, lab, profile
        self.host, self.sync_port, self.tunnel_node = server, sync_port, tunnel_node
        self.server = (f"{server}:{sync_port}" if tunnel_node is None
                       else f"{tunnel_node.name}:{sync_port} (ssh tunnel to {tunnel_node.ansible_host})")
        self.warmup = warmup
        self.client = client
        self.clock = time.monotonic
        self.tunnel: SSHTunnel | None = None
        self.connected = False
        self.server_version: dict = {}

    # -- the contract -------------------------------------------------------------------------

    def describe(self) -> dict:
        return {"generator": "trex", "server": self.server, "server_version": self.server_version,
                "client": getattr(self.api, "__file__", None),  # the installed TRex's or lbr-trex-client's
                "profile": str(PROFILE.relative_to(paths().root)), "warmup": self.warmup,
                "node": self.lab.tester.name if self.lab else None, "trexlab": __version__}

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        try:
            self._connect()
            return self._trial(spec)
        except self.api.TRexError as exc:
            raise GeneratorError(f"TRex server {self.server}: {str(exc).strip().splitlines()[-1]}") from exc
        except (ConnectionError, TimeoutError, OSError) as exc:
            raise GeneratorError(f"TRex server {self.server} went away: {exc}") from exc

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

    def _connect(self) -> None:
        if self.connected:
            return
        if self.client is None:
            host, sync_port, async_port = self.host, self.sync_port, self.sync_port - 1
            if self.tunnel_node is not None:
                self.tunnel = SSHTunnel(self.tunnel_node, (self.sync_port, self.sync_port - 1))
                host, (sync_port, async_port) = "127.0.0.1", self.tunnel.local_ports
            self.client = self.api.STLClient(server=host, sync_port=sync_port, async_port=async_port)
        self.client.connect()
        self.connected = True
        self.server_version = dict(self.client.get_server_version() or {})
        if self.warmup:
            self._trial(TrialSpec(**WARMUP))

    # -- one trial ----------------------------------------------------------------------------

    @staticmethod
    def stream_rates(spec: TrialSpec) -> tuple[float, float]:
        """(test stream, latency stream) frames/s of each direction; together the offered load."""
        if spec.latency_mode == "none":
            return spec.offered_load, 0.0
        if spec.latency_mode == "all":
            return 0.0, spec.offered_load
        latency = min(spec.offered_load, spec.latency_frames / spec.duration)
        return spec.offered_load - latency, latency

    @staticmethod
    def pg_ids(port: int) -> tuple[int, int]:
        """(test, latency) pg_id of the stream sent from a tester port: each direction its own."""
        return 2 * port + 1, 2 * port + 2

    def _trial(self, spec: TrialSpec) -> TrialResult:
        if spec.frame_timeout is not None:
            # Only latency frames carry a timestamp: TRex cannot tell a late test frame from one in time.
            raise InvalidParameter("frame_timeout", spec.frame_timeout,
                                   "none with the trex generator (frames count until the receive tail ends)")
        client, all_ports = self.client, [0, 1]
        senders = [spec.sender_port(d) for d in spec.active_directions]
        test_rate, latency_rate = self.stream_rates(spec)
        client.reset(ports=all_ports)
        for direction in spec.active_directions:
            port = spec.sender_port(direction)
            test_pg, latency_pg = self.pg_ids(port)
            streams = self.profile.get_streams(
                direction=port, port_id=port, frame_size=spec.frame_size[port], ip_version=spec.ip_version[port],
                port_mode=spec.port_mode, networks=spec.destination_networks, rate=test_rate,
                latency_rate=latency_rate, pg_id=test_pg, latency_pg_id=latency_pg, dont_fragment=spec.dont_fragment)
            client.add_streams(streams, ports=[port])
        client.clear_stats()
        client.start(ports=senders, mult="1", duration=spec.duration, force=True)
        # The clock starts once start() has returned: compiling the streams is not sending.
        started = self.clock()
        # rx_delay_ms keeps TRex's receive filters for the tail, so late test frames still count.
        client.wait_on_traffic(ports=senders, timeout=spec.duration + spec.receive_tail + 30,
                               rx_delay_ms=int(spec.receive_tail * 1000))
        wall = self.clock() - started - spec.receive_tail
        return self._result(spec, client.get_stats(ports=all_ports), wall, latency_rate > 0)

    def _result(self, spec: TrialSpec, stats: dict, wall: float, timed: bool) -> TrialResult:
        directions, notes = {}, []
        # A TRex that cannot keep up still sends every frame, only later (measured here: at 2 x 1 Mpps
        # offered for 2 s it sent all frames in 4.8 s), so the wall time tells a stretched trial.
        send_duration = spec.duration if wall <= spec.duration + WALL_MARGIN else wall
        if send_duration != spec.duration:
            notes.append(f"sending took {wall:.3f} s of wall time for a {spec.duration} s trial")
        for direction in spec.active_directions:
            sender = spec.sender_port(direction)
            receiver = 1 - sender
            sent = received = tx_bytes = 0
            for pg_id in self.pg_ids(sender):
                flow = _pg(stats.get("flow_stats", {}), pg_id)
                sent += _port(flow.get("tx_pkts", {}), sender)
                received += _port(flow.get("rx_pkts", {}), receiver)
                tx_bytes += _port(flow.get("tx_bytes", {}), sender)
            if sent and tx_bytes != sent * spec.frame_size[sender]:
                # TRex counts bytes with the FCS, as frame sizes are: a mismatch is a wrong frame.
                notes.append(f"{direction}: {tx_bytes / sent:.1f} bytes per sent frame, "
                             f"frame size {spec.frame_size[sender]}")
            # TRex's port ierrors already sum the NIC's imissed (xstat rx_missed_errors: a full AF_PACKET
            # ring in software mode), ierrors and rx_nombuf: adding rx_missed_errors would count them twice.
            port_rx = stats.get(receiver, stats.get(str(receiver), {}))
            tester_drops = int(port_rx.get("ierrors", 0))
            latency, duplicates, reordered = None, 0, 0
            if timed:
                entry = _pg(stats.get("latency", {}), self.pg_ids(sender)[1])
                errors = entry.get("err_cntrs", {})
                duplicates, reordered = int(errors.get("dup", 0)), int(errors.get("out_of_order", 0))
                encoded = entry.get("latency", {}).get("hdrh")
                if not encoded:
                    raise GeneratorError(f"TRex server {self.server}: no HDR histogram for pg_id "
                                         f"{self.pg_ids(sender)[1]}: start the server with --hdrh")
                latency = decode_hdrh(encoded, spec.frame_timeout)
            # A continuous stream with a duration sends rate x duration frames, sometimes one more (its
            # first frame goes at 0 s): a frame TRex sent is a test frame, and losing it is loss.
            directions[direction] = DirectionResult(
                direction=direction, frames_intended=max(spec.frames_per_direction, sent), frames_sent=sent,
                frames_received=received, tester_drops=tester_drops, duplicates=duplicates,
                reordered=reordered, send_duration=send_duration, latency=latency)
        return TrialResult(spec=spec, directions=directions, generator=self.name, notes=tuple(notes))


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
    check_range("sync_port", sync_port, 2, 65535, integer=True)
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
