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
* the achieved rate is measured opackets over the duration TRex sent for.
  TRex stops a stream at its duration whether or not it kept up, so a tester
  that cannot keep up shows as unsent frames (a stretched trial), never as a
  rate x duration that it did not send;
* tester-side receive drops (``ierrors`` and the NIC's ``rx_missed_errors``,
  e.g. a full AF_PACKET ring in software mode) are reported apart from DUT loss;
* latency: median, 99.9th percentile and max from the HDR histogram that a
  server started with ``--hdrh`` keeps per latency pg_id; TRex's own histogram
  (10 us buckets, then decades) is too coarse for percentiles;
* byte counters include the FCS: bytes per sent frame must equal the frame size.

The first trial after a server start may lose a few frames, so a short warm-up
trial runs after connecting and its result is discarded.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

from trexlab import __version__
from trexlab.lab import Lab, load_lab
from trexlab.params import InvalidParameter, check_range
from trexlab.trial import (
    DirectionResult,
    GeneratorError,
    Latency,
    TrialResult,
    TrialSpec,
)

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "trex-profiles" / "stl_rfc2544_udp.py"
#: Where the trex role installs TRex (a `current` link to the versioned directory).
DEFAULT_TREX_PATH = "/opt/trex/current"
CLIENT_SUBDIR = "automation/trex_control_plane/interactive"
DEFAULT_SYNC_PORT = 4501
#: TRex reports latency in whole microseconds.
MICROSECOND = 1e-6
#: Warm-up trial after connecting: short and slow, only to wake the server's data path.
WARMUP = {"offered_load": 1000.0, "duration": 1.0, "receive_tail": 0.5}
#: TRex stops streams itself at their duration; wall time beyond this margin means it fell behind.
WALL_MARGIN = 1.0


def load_client_api():
    """The TRex STL client API module: from an installed TRex, else PyPI lbr-trex-client.

    Client and server must agree on the API major version, so the client
    shipped with the installed TRex comes first.
    """
    errors = []
    candidates = [os.environ.get("TREXLAB_TREX_PATH"), DEFAULT_TREX_PATH]
    for root in filter(None, candidates):
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


def profile_module(path: Path = PROFILE):
    """The STL profile as a module; it lives outside the package so trex-console can load it too."""
    spec = importlib.util.spec_from_file_location("trexlab_stl_profile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decode_hdrh(encoded: str | bytes) -> Latency:
    """TRex's base64 HDR histogram (microseconds) as a Latency histogram in seconds."""
    from hdrh.histogram import HdrHistogram

    histogram = HdrHistogram.decode(encoded)
    values, counts = [], []
    for item in histogram.get_recorded_iterator():
        values.append(item.value_iterated_to * MICROSECOND)
        counts.append(item.count_at_value_iterated_to)
    return Latency(tuple(values), tuple(counts))


def _pg(table: dict, pg_id: int) -> dict:
    """A per-pg_id entry; TRex's client keys them by int, JSON round trips by str."""
    return table.get(pg_id) or table.get(str(pg_id)) or {}


def _port(table: dict, port: int) -> int:
    return int(table.get(port, table.get(str(port), 0)) or 0)


class TRexGenerator:
    name = "trex"

    def __init__(self, api, client, lab: Lab | None, server: str, profile, warmup: bool = True):
        self.api, self.client, self.lab, self.server = api, client, lab, server
        self.profile = profile
        self.warmup = warmup
        self.connected = False
        self.server_version: dict = {}

    # -- the contract -------------------------------------------------------------------------

    def describe(self) -> dict:
        return {"generator": "trex", "server": self.server, "server_version": self.server_version,
                "profile": str(PROFILE.relative_to(REPO)), "warmup": self.warmup,
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

    # -- one trial ----------------------------------------------------------------------------

    def _connect(self) -> None:
        if self.connected:
            return
        self.client.connect()
        self.connected = True
        self.server_version = dict(self.client.get_server_version() or {})
        if self.warmup:
            self._trial(TrialSpec(**WARMUP))

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
                latency_rate=latency_rate, pg_id=test_pg, latency_pg_id=latency_pg)
            client.add_streams(streams, ports=[port])
        client.clear_stats()
        started = time.monotonic()
        client.start(ports=senders, mult="1", duration=spec.duration, force=True)
        # rx_delay_ms keeps TRex's receive filters for the tail, so late test frames still count.
        client.wait_on_traffic(ports=senders, timeout=spec.duration + spec.receive_tail + 30,
                               rx_delay_ms=int(spec.receive_tail * 1000))
        wall = time.monotonic() - started - spec.receive_tail
        stats = client.get_stats(ports=all_ports)
        xstats = {port: client.get_xstats(port) for port in all_ports}
        return self._result(spec, stats, xstats, wall, latency_rate > 0)

    def _result(self, spec: TrialSpec, stats: dict, xstats: dict, wall: float, timed: bool) -> TrialResult:
        directions, notes = {}, []
        # TRex ends the streams at their duration; a wall time far beyond it means it fell behind.
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
            port_rx = stats.get(receiver, stats.get(str(receiver), {}))
            tester_drops = int(port_rx.get("ierrors", 0)) + int(xstats[receiver].get("rx_missed_errors", 0))
            latency, duplicates, reordered = None, 0, 0
            if timed:
                entry = _pg(stats.get("latency", {}), self.pg_ids(sender)[1])
                errors = entry.get("err_cntrs", {})
                duplicates, reordered = int(errors.get("dup", 0)), int(errors.get("out_of_order", 0))
                encoded = entry.get("latency", {}).get("hdrh")
                if not encoded:
                    raise GeneratorError(f"TRex server {self.server}: no HDR histogram for pg_id "
                                         f"{self.pg_ids(sender)[1]}: start the server with --hdrh")
                latency = decode_hdrh(encoded)
            directions[direction] = DirectionResult(
                direction=direction, frames_intended=spec.frames_per_direction, frames_sent=sent,
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

    server: the TRex host (default: the tester's trexlab_trex_server, else its ansible_host);
    client/api: an STLClient-like object and its API module (tests pass fakes).
    """
    sync_port = int(sync_port)
    check_range("sync_port", sync_port, 1, 65535, integer=True)
    warmup = _flag("warmup", warmup)
    if server is None:
        lab = lab or load_lab(inventory)
        tester = lab.tester
        server = tester.extra.get("trexlab_trex_server") or tester.ansible_host
    api = api or load_client_api()
    if client is None:
        client = api.STLClient(server=server, sync_port=sync_port, async_port=sync_port - 1)
    return TRexGenerator(api, client, lab, f"{server}:{sync_port}", profile_module().register(), warmup)
