"""The RFC 6349 and HTTP download procedures on a declared path: a simulated DUT for the frame trials and a
stand-in for iperf3/curl on the client node that answers from the same declared path (no lab needed)."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import re
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from trexlab.generators import create_generator
from trexlab.params import InvalidParameter
from trexlab.procedures import http_download, rfc6349
from trexlab.procedures.common import RunContext
from trexlab.tcp import engines as tcp_engines
from trexlab.tcp import iperf
from trexlab.tcp import metrics as tcp_metrics
from trexlab.tcp.iperf import TcpTest, parse
from trexlab.testbed.endpoints import TCP_COUNTERS, Endpoints, LabView, counted_between, node_tcp_counters
from trexlab.testbed.inventory import Lab, LabError, Node
from trexlab.testbed.inventory import TestPort as Port
from trexlab.trial import Capabilities, DirectionResult, GeneratorError, TrialResult, TrialSpec

from labtools import static_inventory

PATH_MTU = 1400
LINK_BPS = 1e9
RTT_US = 200  # the declared path's RTT at low load

# A stand-in for iperf3 on the client node: the declared path carries min(window x conns / RTT, link) and adds
# 50 % RTT under load; one retransmission per stream. It prints a report shaped as iperf3 --json
# --get-server-output does (only the fields trexlab.tcp.iperf reads).
FAKE_IPERF3 = r'''
import json, sys
argv = sys.argv[2:]  # after -c and the program's own first argument (unused)
def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default
link, rtt = 1e9, 200
conns, seconds = int(opt("--parallel", 1)), float(opt("--time", 10))
window = opt("--window")
rate = link / conns if window is None else min(link / conns, int(window) * 8 / (rtt / 1e6))
if opt("--bitrate"):
    rate = min(rate, float(opt("--bitrate")))
loaded = rtt if opt("--bitrate") else rtt * 1.5
mss = int(opt("--set-mss", 1448))
def streams(sender):
    return [{"sender": {"sender": sender, "min_rtt": rtt, "mean_rtt": loaded, "max_rtt": 2 * rtt,
                        "bytes": int(rate * seconds / 8)}} for _ in range(conns)]
def sums():
    sent = {"bytes": int(rate * seconds / 8) * conns, "seconds": seconds, "retransmits": conns}
    return sent, {"bytes": int(rate * seconds / 8) * conns, "seconds": seconds}
sent, received = sums()
reverse, bidir = "--reverse" in argv, "--bidir" in argv
end = {"sum_sent": sent, "sum_received": received, "streams": streams(not reverse)}
server = {"end": {"streams": streams(reverse or bidir)}}
if bidir:
    end["sum_sent_bidir_reverse"], end["sum_received_bidir_reverse"] = sums()
print(json.dumps({"start": {"tcp_mss": mss}, "end": end, "server_output_json": server,
                  "argv": argv}))
'''


class FakeNode:
    """A node whose commands run a stand-in program here; remembers every argv it was given."""

    def __init__(self, name: str, program: str):
        self.name, self.program, self.calls = name, program, []

    def command(self, argv: list[str]) -> list[str]:
        self.calls.append(argv)
        return [sys.executable, "-c", self.program, "", *argv[1:]]


class RecordedNode:
    """A node whose commands print recorded files, one per command in turn (none left: the command fails)."""

    def __init__(self, name: str, *paths: Path):
        self.name, self.paths = name, list(paths)

    def command(self, argv: list[str]) -> list[str]:
        return ["cat", str(self.paths.pop(0))] if self.paths else ["false"]


class LocalNode:
    """A node whose commands run on this machine as they are (its kernel is the node's)."""

    def __init__(self, name: str):
        self.name = name

    def command(self, argv: list[str]) -> list[str]:
        return list(argv)


def kernel_window_floor():
    """Endpoints.window_floor of two ends whose kernel is this machine's."""
    return Endpoints.window_floor(SimpleNamespace(client=LocalNode("client"), server=LocalNode("server")))


class FakeEndpoints:
    """What trexlab.testbed.endpoints.Endpoints gives the procedures, for a declared path."""

    def __init__(self, window_limit=4_194_304, tester_mtu=1500, ports=(5201, 5202, 5203, 5204, 5205),
                 client_program=FAKE_IPERF3, http_bytes=1_048_576, cpu_ticks=(), iperf3_cpus=None,
                 window_floor=None, server=(), timestamps=(None, None)):
        self.client = FakeNode("client", client_program)
        # server: the files the server node's commands print in turn (its TCP counters before and after a download)
        self.server = RecordedNode("server", *server)
        # window_floor: what window_floor answers (kernel_window_floor(): this machine's kernel's); None: the declared
        # path's ends take any window, so its small BDPs stand for a path of any size.
        self._floor = window_floor or (1, "the declared endpoints take any window")
        # cpu_ticks: what cpu_ticks answers in turn ({"client": {cpu: (busy, all)}, "server": ...}), then None (not
        # read); iperf3_cpus: the CPUs each end's iperf3 may run on ({"client": frozenset, ...}; None: not read).
        self._cpu_ticks = list(cpu_ticks)
        self._iperf3_cpus = iperf3_cpus or {"client": None, "server": None}
        self.iperf3_ports = list(ports)
        self.congestion_control = "reno"
        self.client_facts = {"congestion_control": "reno"}
        self.facts = {"http_path": "/download.bin", "http_port": 80, "http_file_bytes": http_bytes,
                      "iperf3_ports": list(ports), "segmentation_offload": False}
        self.http_file_bytes = http_bytes
        self._limit, self._mtu = window_limit, tester_mtu
        # timestamps: (client, server) net.ipv4.tcp_timestamps as tcp_timestamps reads them (None: not read)
        self._timestamps = dict(zip(("client", "server"), timestamps, strict=True))

    def server_address(self, ip_version: int) -> str:
        return "198.19.0.3" if ip_version == 4 else "2001:2:0:9000::3"

    def url(self, ip_version: int) -> str:
        return "http://198.19.0.3:80/download.bin"

    def window_limit(self):
        return self._limit, "net.core.rmem_max on node server"

    def window_floor(self):
        return self._floor

    def tester_port_mtu(self, indexes):
        return self._mtu

    def tcp_timestamps(self):
        return self._timestamps

    def cpu_ticks(self):
        return self._cpu_ticks.pop(0) if self._cpu_ticks else {"client": None, "server": None}

    def iperf3_cpus(self, port):
        return self._iperf3_cpus


class PathGenerator:
    """The simulated DUT behind a link of PATH_MTU: frames with DF set that are too big are dropped, as a
    router must; without DF they would be fragmented (and the first fragment would look delivered)."""

    name = "fake"
    capabilities = Capabilities(needs_lab=True, dont_fragment=True, frame_timeout=True, translated_frames=True)
    lab = None

    def __init__(self, capacity: float = 50_000.0, path_mtu: int = PATH_MTU):
        self.sim = create_generator("sim", capacity=capacity)
        self.path_mtu = path_mtu
        self.trials: list[TrialSpec] = []

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        self.trials.append(spec)
        result = self.sim.run_trial(spec)
        if spec.dont_fragment and max(spec.frame_size) - 18 > self.path_mtu:
            lost = {name: dataclasses.replace(d, frames_received=0, frames_late=0)
                    for name, d in result.directions.items()}
            result = dataclasses.replace(result, directions=lost)
        return result

    def skip_trials(self, count: int) -> None:
        pass

    def close(self):
        pass


def params(**overrides) -> rfc6349.Params:
    quick = dict(mtu_frame_sizes=(1280, 1418, 1518), mtu_trial_duration=1, bb_max_rate=100_000, bb_min_rate=1000,
                 bb_resolution=1000, bb_trial_duration=1, rtt_duration=1, test_duration=2, stress_connections=20)
    return rfc6349.Params(**{**quick, **overrides})


def run(generator, p, endpoints, recorded=None):
    recorded = [] if recorded is None else recorded
    traffic = TrialSpec(offered_load=1, duration=1, receive_tail=0)
    return rfc6349.run(RunContext(generator, traffic, on_trial=lambda r, c: recorded.append((r, c))), p,
                       endpoints=endpoints)


def test_the_whole_sequence_finds_mtu_bb_rtt_and_measures_every_tcp_test():
    generator, endpoints, recorded = PathGenerator(capacity=50_000), FakeEndpoints(), []
    result = run(generator, params(), endpoints, recorded).to_dict()
    # The headline is what an adaptive rule's until.figures may name (validate takes headline_names).
    assert list(result["headline"]) == list(rfc6349.headline_names(params(), TrialSpec(1, 1)))
    # 1. The largest loss-free DF frame is 1418 bytes: MTU 1400 (the 1518-byte frames were dropped, and every size
    # halving the gap down to one byte).
    assert result["path_mtu"] == PATH_MTU and result["mtu_source"] == "measured"
    mtu_trials = [(s["frame_size"], s["passed"]) for s in result["mtu_search"]]
    assert mtu_trials == [(1280, True), (1418, True), (1518, False), *((size, False) for size in
                                                                       (1468, 1443, 1430, 1424, 1421, 1419))]
    assert all(spec.dont_fragment for spec in generator.trials[:len(mtu_trials)])
    # 2. BB: RFC 2544 throughput at 1418-byte frames, as layer-1 bits (the sim forwards 50,000 fps).
    assert result["bottleneck_bandwidth_bps"] == pytest.approx(50_000 * (1418 + 20) * 8, rel=0.03)
    assert all(spec.frame_size == (1418, 1418) for spec in generator.trials[len(mtu_trials):])
    # 3./4. Baseline RTT (the low-load connection's minimum) and the windows from the BDP.
    assert result["baseline_rtt_s"] == pytest.approx(RTT_US / 1e6)
    bdp = tcp_metrics.bdp_bytes(result["bottleneck_bandwidth_bps"], RTT_US / 1e6)
    assert result["bdp_bytes"] == pytest.approx(bdp)
    assert result["window_per_connection"] == tcp_metrics.window_per_connection(bdp, 4)
    # 5. Every test ran with its window, MSS = MTU - 40, DSCP values on concurrent connections to own ports.
    names = [t["test"]["name"] for t in result["tests"]]
    assert names == ["download", "upload", "bidirectional", "single", "reduced 25%", "reduced 50%",
                     "reduced 75%", "dscp 46", "dscp 10", "dscp 12", "dscp 14", "dscp 0", "stress"]
    argvs = [c for c in endpoints.client.calls if "--parallel" in c]
    assert all(a[a.index("--set-mss") + 1] == "1360" for a in argvs)
    dscp = [a for a in argvs if "--dscp" in a]
    assert sorted(a[a.index("--port") + 1] for a in dscp) == ["5201", "5202", "5203", "5204", "5205"]
    reduced = {t["test"]["name"]: t["test"]["window_bytes"] for t in result["tests"] if "reduced" in t["test"]["name"]}
    assert reduced["reduced 25%"] == tcp_metrics.window_per_connection(bdp * 0.25, 4)
    # 6. Metrics per direction. The ideal is the link's (BB, MTU, 38 bytes per frame) unless the window allows
    # less; the fake path carries window / RTT per connection.
    download = result["tests"][0]["directions"]["download"]
    window_limited = tcp_metrics.window_limited_throughput(4 * result["window_per_connection"], RTT_US / 1e6)
    link = tcp_metrics.max_achievable_tcp_throughput(result["bottleneck_bandwidth_bps"], PATH_MTU)
    assert download["max_achievable_tcp_throughput_bps"] == pytest.approx(min(link, window_limited))
    assert download["actual_tcp_throughput_bps"] == pytest.approx(window_limited, rel=1e-3)
    assert download["transfer_time_ratio"] == pytest.approx(
        download["max_achievable_tcp_throughput_bps"] / download["actual_tcp_throughput_bps"])
    assert download["buffer_delay_percent"] == pytest.approx(50.0)
    assert download["tcp_efficiency_percent"] == pytest.approx(
        tcp_metrics.tcp_efficiency_percent(download["transmitted_bytes"], 4 * 1360))
    assert set(result["tests"][2]["directions"]) == {"upload", "download"}
    assert result["headline"]["download_tcp_throughput_bps"] == download["actual_tcp_throughput_bps"]
    # Every frame trial and TCP test was handed to the results store as it ended.
    phases = [c.get("step") or c["phase"] for _, c in recorded]
    assert phases[:len(mtu_trials)] == ["path MTU"] * len(mtu_trials) and "bottleneck bandwidth" in phases
    assert phases.count("baseline RTT") == 1 and sum(p.startswith("tcp test") for p in phases) == 13
    assert all(hasattr(r, "to_dict") and json.dumps(r.to_dict()) for r, _ in recorded)
    # The method beside the figures says how MTU, BB and window were chosen and how long each test ran.
    from trexlab.plan.repetition import method_line, method_of

    line = method_line(method_of(result))
    # The published schema validates the result and declares each of its fields (docs/schemas/result.schema.json).
    schema = json.loads((Path(__file__).parent.parent / "docs" / "schemas" / "result.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(result)
    declared = set(schema["properties"]).union(*(b["then"]["properties"] for b in schema["allOf"]
                                                 if b["if"]["properties"]["procedure"].get("const") == "tcp"))
    assert set(result) <= declared, set(result) - declared
    assert ("path MTU found by Don't-Fragment trials; bottleneck bandwidth by RFC 2544 throughput at the MTU; window "
            "per connection from the BDP (bottleneck bandwidth x baseline RTT) / connections; 4 connections") in line
    # How the endpoints' TCP cut its frames (roles/tcp_endpoints' default: one segment per packet): a figure of
    # super-frames costs the hosts far less per byte.
    assert result["segmentation_offload"] is False
    assert "the endpoints' TCP sends frames of at most the MTU (one segment per packet)" in line


def test_a_tester_bound_bottleneck_search_bounds_every_figure_made_from_it():
    """A simulated tester that cannot send above 30 kfps (its trials stretch) under a DUT that forwards 50 kfps: the
    RFC 2544 search behind the bottleneck bandwidth says so (tester_bound_reasons), and the TCP result passed that
    on to nothing: not tester_bound, no figure marked. The BB, the BDP and windows from it and the ideal behind the
    transfer time ratio all rest on it; the path MTU and the baseline RTT do not."""
    from trexlab.plan.repetition import summarize_headlines

    generator = PathGenerator(capacity=50_000)
    generator.sim = create_generator("sim", capacity=50_000, tester_ceiling=30_000)
    result = run(generator, params(tests=("download",)), FakeEndpoints()).to_dict()
    searched = result["bb_search"]["tester_bound_reasons"]
    assert searched, "the simulated tester's stretched trials bear on the search's result"
    expected = [f"bottleneck bandwidth: {reason}" for reason in searched]
    assert result["tester_bound"] and result["tester_bound_reasons"] == expected
    bound = result["headline_tester_bound"]
    assert bound["path_mtu_bytes"] == bound["baseline_rtt_s"] == []
    assert all(reasons == expected for name, reasons in bound.items() if name not in ("path_mtu_bytes",
                                                                                      "baseline_rtt_s"))
    summary = summarize_headlines([result])
    assert summary["bottleneck_bandwidth_bps"]["tester_bound"] == summary["download_tcp_throughput_bps"][
        "tester_bound"] == 1 and summary["path_mtu_bytes"]["tester_bound"] == 0


def test_declared_mtu_and_bottleneck_skip_the_frame_trials():
    generator = PathGenerator()
    result = run(generator, params(mtu=1500, bottleneck_bandwidth=100e6, tests=("download",)), FakeEndpoints())
    assert generator.trials == [] and result.mtu_source == "declared" and result.bb_source == "declared"
    assert result.max_achievable_bps == pytest.approx(94_928_478.5, abs=0.1)


def test_a_path_mtu_between_the_declared_frame_sizes_is_found_to_the_byte():
    """A PPPoE path (1492 bytes) between 1280- and 1518-byte frames: the declared sizes alone read it as 1262 (1280 -
    18), and the MSS and the maximum achievable TCP throughput with it. RFC 4821's search narrows the MTU between the
    largest size that got through and the smallest that did not; the run's cost bounds the trials it took."""
    generator, endpoints = PathGenerator(path_mtu=1492), FakeEndpoints()
    p = params(mtu_frame_sizes=(1280, 1518), tests=("download",))
    result = run(generator, p, endpoints)
    assert (result.path_mtu, result.mtu_source) == (1492, "measured")
    assert max(s["frame_size"] for s in result.mtu_search if s["passed"]) == 1510
    assert min(s["frame_size"] for s in result.mtu_search if not s["passed"]) == 1511
    assert len(result.mtu_search) <= rfc6349.mtu_trials(p.mtu_frame_sizes)
    argv = next(c for c in endpoints.client.calls if "--parallel" in c and "--bitrate" not in c)
    assert argv[argv.index("--set-mss") + 1] == "1452"
    assert result.max_achievable_bps == pytest.approx(
        tcp_metrics.max_achievable_tcp_throughput(result.bottleneck_bandwidth_bps, 1492))


@pytest.mark.parametrize(("path_mtu", "found", "source"), [(9000, 4000, "tester limit"), (3000, 3000, "measured")])
def test_a_tester_whose_mtu_lies_between_two_sizes_is_searched_up_to_it(path_mtu, found, source):
    """Tester ports of MTU 4000 and sizes 2018 and 9018 declared: every size up to 2018 crossed. That read as a path
    MTU of 2000 at the tester's limit; the tester sends up to 4018-byte frames, which is the top of the search."""
    p = params(mtu_frame_sizes=(1280, 1518, 2018, 9018), tests=("download",))
    result = run(PathGenerator(path_mtu=path_mtu), p, FakeEndpoints(tester_mtu=4000))
    assert (result.path_mtu, result.mtu_source) == (found, source)
    assert len(result.mtu_search) <= rfc6349.mtu_trials(p.mtu_frame_sizes)
    assert any("9018 not tried" in n for n in result.notes)
    assert any("largest size the tester ports can send" in n for n in result.notes) == (source == "tester limit")


def test_a_path_that_carries_every_size_tried_may_carry_more_and_says_so():
    result = run(PathGenerator(path_mtu=1500), params(mtu_frame_sizes=(1280, 1418), tests=("download",)),
                 FakeEndpoints())
    assert (result.path_mtu, result.mtu_source) == (1400, "measured")
    assert any(n.startswith("path MTU 1400 is the largest of mtu_frame_sizes") for n in result.notes)


def test_the_cost_counts_the_mtu_trials_that_narrow_the_gap():
    """Two declared sizes 238 bytes apart: both, then up to ceil(log2 238) = 8 trials halving the gap."""
    p = params(mtu_frame_sizes=(1280, 1518), bottleneck_bandwidth=1e8, tests=("download",))
    traffic = TrialSpec(offered_load=1, duration=1, receive_tail=0.5, restabilize_wait=0.5)
    assert rfc6349.mtu_trials(p.mtu_frame_sizes) == 10
    assert rfc6349.cost(p, traffic).worst_s == pytest.approx(10 * (1 + 0.5 + 0.5) + p.rtt_duration + p.test_duration)


def test_the_result_discloses_where_it_falls_short_of_rfc_6349():
    """RFC 6349: the path MTU by PLPMTUD (RFC 4821, section 3.1), the bottleneck bandwidth in both directions
    (section 3.2.2), tests longer than 30 s (section 5), the metrics in each direction and both directions at once
    (section 3.3), retransmitted bytes counted (section 4.2). A run that does otherwise says so beside its figures
    (the method line's "short of the standard"), one comma-free item each."""
    from trexlab.plan.repetition import method_line, method_of

    result = run(PathGenerator(), params(tests=("download",)), FakeEndpoints()).to_dict()
    assert result["deviations"] == [
        "path MTU by Don't-Fragment frame trials from the tester (RFC 6349 section 3.1: Packetization Layer Path MTU "
        "Discovery of RFC 4821 by the TCP endpoints)",
        "TCP test duration 2 s (RFC 6349 section 5: more than 30 s)",
        "TCP tests in the download direction only (RFC 6349 section 3.3: the metrics measured in each direction)",
        "no bidirectional TCP test (RFC 6349 section 3.3: each direction alone and then both at once)",
        "retransmitted bytes as iperf3's retransmitted segments x MSS (RFC 6349 section 4.2 counts bytes): at least "
        "the bytes sent again so each TCP efficiency is a lower bound"]
    assert "short of the standard: " + ", ".join(result["deviations"]) in method_line(method_of(result))
    counted = [{"test": {"name": name, "direction": name}, "directions": {
        direction: {"counted_retransmitted_bytes": 0} for direction in tcp_engines.DIRECTIONS_OF[name]}}
        for name in ("download", "upload", "bidirectional")]
    declared = params(mtu=1500, bottleneck_bandwidth=1e8, test_duration=31)
    assert rfc6349.rfc6349_deviations(declared, TrialSpec(1, 1), counted, "trex") == []
    one_way = rfc6349.rfc6349_deviations(params(test_duration=31), TrialSpec(1, 1, directions="forward"), counted,
                                         "trex")
    assert one_way[1:] == ["bottleneck bandwidth measured forward only and taken for both directions (RFC 6349 "
                           "section 3.2.2: measured in both)"]
    assert not any("," in item for item in result["deviations"] + one_way)


@pytest.mark.parametrize(("timestamps", "said"), [((1, 2), True), ((1, 0), False), ((None, 1), False)])
def test_iperf3_says_when_the_kernels_timestamps_shrink_every_segments_payload(timestamps, said):
    """RFC 6349 section 4.1.1 counts MTU - 40 bytes of payload per frame. Linux kernels enable RFC 7323 timestamps
    by default (net.ipv4.tcp_timestamps 1 or 2): with both ends' on, each segment carries 12 bytes of options within
    the MSS, so a path that delivers all it can reads a transfer time ratio of 1360 / 1348, not 1. Said only where
    both kernels were read and both offer them (a connection carries them only then)."""
    result = run(PathGenerator(), params(mtu=1400, bottleneck_bandwidth=1e8, tests=("download",)),
                 FakeEndpoints(timestamps=timestamps))
    note = [n for n in result.notes if "bytes of TCP options" in n]
    assert bool(note) == said
    if said:
        assert note[0].startswith("iperf3 carries 12 bytes of TCP options") and f"{1360 / 1348:.4f}" in note[0]


def test_sizes_the_tester_cannot_send_are_skipped_and_said():
    result = run(PathGenerator(), params(mtu_frame_sizes=(1280, 1418, 1518, 9018), tests=("download",)),
                 FakeEndpoints(tester_mtu=1500))
    assert result.path_mtu == 1400 and any("9018" in n and "MTU is 1500" in n for n in result.notes)


def test_a_receiving_ports_smaller_mtu_skips_the_sizes_it_would_drop():
    """A trial in one direction: its receiving port drops a frame above its MTU as the sending one refuses it (and
    swtester refuses the trial). With the sending port's MTU alone, the receiving port's was reported as the path's."""

    class Ports:
        mtu = {0: 9000, 1: 1500}

        def tester_port_mtu(self, indexes):
            return min(self.mtu[i] for i in indexes)

    forward = TrialSpec(offered_load=1, duration=1, directions="forward", receive_tail=0)
    sizes, testable, mtu = rfc6349.mtu_trial_sizes(Ports(), forward, params(mtu_frame_sizes=(1518, 9018)))
    assert (sizes, testable, mtu) == ([1518, 9018], [1518], 1500)


@pytest.fixture
def declared_endpoints(monkeypatch):
    """rfc6349.check_lab on a lab whose endpoints are the declared FakeEndpoints."""
    def use(**options):
        monkeypatch.setattr(tcp_engines, "Endpoints", lambda lab, facts=None: FakeEndpoints(**options))
    return use


def a_plan(params, traffic=None):
    """What check_lab reads of a RunPlan."""
    return SimpleNamespace(params=params, traffic=traffic or TrialSpec(1, 1), generator="software")


SOME_LAB = LabView(object())  # the declared endpoints stand for it


def test_a_generator_that_cannot_set_df_needs_a_declared_mtu_in_its_plan(tmp_path):
    from trexlab.cli import build_parser
    from trexlab.plan.runplan import plan_cli

    argv = ["tcp", "--generator", "sim", "--engine", "trex", "--trex-server", "192.0.2.1", "--results",
            str(tmp_path / "r"), "--ceilings", str(tmp_path / "ceilings.json")]
    with pytest.raises(InvalidParameter, match="mtu=None: allowed a declared path MTU with generator sim"):
        plan_cli(build_parser().parse_args(argv))
    plan_cli(build_parser().parse_args([*argv, "--mtu", "1500"]))


def test_a_window_larger_than_the_kernel_allows_is_refused_before_any_traffic(declared_endpoints):
    declared_endpoints(window_limit=212_992)
    with pytest.raises(InvalidParameter) as err:
        rfc6349.check_lab(a_plan(params(window_bytes=1_000_000)), SOME_LAB)
    assert str(err.value).startswith("window_bytes=1000000: allowed <= 212992 bytes (net.core.rmem_max on node")
    # The kernel takes a larger SO_RCVBUF/SO_SNDBUF and caps it: the refusal says so (TRex's says TRex refuses it).
    assert str(err.value).endswith("): the kernel would silently give a smaller window; raise it or use more "
                                   "connections")
    assert "\n" not in str(err.value)


def test_a_bdp_window_larger_than_the_kernel_allows_stops_before_the_tcp_tests():
    endpoints = FakeEndpoints(window_limit=4096)
    with pytest.raises(InvalidParameter, match=r"window_bytes \(single\)=\d+: allowed <= 4096 bytes"):
        run(PathGenerator(), params(), endpoints)
    tcp_tests = [c for c in endpoints.client.calls if "--bitrate" not in c]
    assert tcp_tests == [], "no TCP test ran"


def test_the_window_floor_is_the_smallest_window_the_kernel_doubles_on_both_buffers():
    # The kernel stores twice a requested SO_SNDBUF/SO_RCVBUF (socket(7)) but never less than its minimum
    # (include/net/sock.h SOCK_MIN_SNDBUF/SOCK_MIN_RCVBUF): a window below half of it got that minimum, silently.
    import socket

    floor, where = kernel_window_floor()
    assert "node " in where and "SO_SNDBUF" in where

    def doubled(window):
        with socket.socket() as s:
            got = []
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                s.setsockopt(socket.SOL_SOCKET, option, window)
                got.append(s.getsockopt(socket.SOL_SOCKET, option))
            return got == [2 * window, 2 * window]

    assert doubled(floor) and not doubled(floor - 1)


def test_a_window_below_the_kernels_smallest_socket_buffer_is_refused_before_the_tcp_tests(declared_endpoints):
    kernel = kernel_window_floor()
    floor = kernel[0]
    declared_endpoints(window_floor=kernel)
    with pytest.raises(InvalidParameter) as err:
        rfc6349.check_lab(a_plan(params(window_bytes=floor - 1)), SOME_LAB)
    assert str(err.value).startswith(f"window_bytes={floor - 1}: allowed >= {floor} bytes (")
    assert "SO_SNDBUF" in str(err.value) and "\n" not in str(err.value)
    rfc6349.check_lab(a_plan(params(window_bytes=floor)), SOME_LAB)
    # A window computed from the BDP: the reduced-window test's 25 % of it over four connections, on this path of
    # 200 us (a BDP of some 14 kB) below the floor, while the download test's quarter of the BDP is above it. The
    # kernel runs it with its minimum: refusing it left RFC 6349 unrunnable on a path of microseconds (the local
    # lab's BDP is some 1.3 kB, every computed window below 2,304 bytes); the result says which tests had the
    # kernel's window instead of theirs.
    endpoints = FakeEndpoints(window_floor=kernel)
    result = run(PathGenerator(), params(tests=("download", "reduced")), endpoints).to_dict()
    [note] = [n for n in result["notes"] if "smallest honoured window" in n]
    assert f"reduced 25% {result['tests'][1]['test']['window_bytes']}" in note and "download" not in note, note
    assert f"about {floor} bytes per connection" in note, note
    assert [t["test"]["name"] for t in result["tests"]] == ["download", "reduced 25%", "reduced 50%", "reduced 75%"]


def test_more_dscp_values_than_server_ports_is_refused(declared_endpoints):
    declared_endpoints(ports=(5201, 5202))
    with pytest.raises(InvalidParameter, match="dscp=.*at most 2 values"):
        rfc6349.check_lab(a_plan(params()), SOME_LAB)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"dscp": (46, 64)}, "dscp=64: allowed an integer >= 0 and <= 63"),
    ({"dscp": (46, -1)}, "dscp=-1: allowed"),
    ({"tests": ("download", "sideways")}, "tests='sideways': allowed download, upload"),
    ({"connections": 500}, "connections=500: allowed an integer >= 1 and <= 128"),
    ({"mtu": 100}, "mtu=100: allowed"),
])
def test_bad_parameters_are_one_line(overrides, message):
    with pytest.raises(InvalidParameter) as err:
        params(**overrides)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_iperf3_reports_are_read_per_direction():
    test = TcpTest("bidirectional", "bidirectional", 2, mss=1360)
    report = {"start": {"tcp_mss": 1360},
              "end": {"sum_sent": {"bytes": 1000, "seconds": 1, "retransmits": 3},
                      "sum_received": {"bytes": 990, "seconds": 1.0},
                      "sum_sent_bidir_reverse": {"bytes": 500, "seconds": 1, "retransmits": 0},
                      "sum_received_bidir_reverse": {"bytes": 500, "seconds": 1.0},
                      "streams": [{"sender": {"sender": True, "min_rtt": 100, "mean_rtt": 150, "max_rtt": 300}}]},
              "server_output_json": {"end": {"streams": [
                  {"sender": {"sender": True, "min_rtt": 80, "mean_rtt": 90, "max_rtt": 99}}]}}}
    stats = parse(report, test)
    assert stats["upload"].good_bytes == 990 and stats["upload"].retransmitted_bytes == 3 * 1360
    assert stats["upload"].transmitted_bytes == 1000 + 3 * 1360 and stats["upload"].rtt_mean_s == 150e-6
    assert stats["download"].good_bytes == 500 and stats["download"].rtt_min_s == 80e-6
    with pytest.raises(GeneratorError, match="iperf3: the server is busy"):
        parse({"error": "the server is busy running a test. try again later"}, test)


def test_lab_without_a_server_node_is_one_line():
    tester = Node("tester", "tester", "::1", test_ports=(Port(0, "port0", "02:00:00:00:00:01"),))
    lab = Lab("kx", "local", "single", {"tester": tester}, inventory="inventory/generated/kx/hosts.yml")
    with pytest.raises(LabError) as err:
        rfc6349.check_lab(a_plan(params()), LabView(lab))
    assert "lab kx has no client node" in str(err.value) and "\n" not in str(err.value)


FAKE_CURL = r'''
import json, sys
size = SIZE
print(json.dumps({"http_code": 200 if size else 404, "size_download": size, "time_total": 0.25,
                  "time_connect": 0.001, "time_starttransfer": 0.002, "speed_download": size / 0.25,
                  "num_connects": 1}))
'''


def test_http_download_times_one_whole_download():
    endpoints = FakeEndpoints(client_program=FAKE_CURL.replace("SIZE", "1048576"))
    recorded = []
    result = http_download.run(RunContext(None, TrialSpec(1, 1), on_trial=lambda r, c: recorded.append(r)),
                               http_download.Params(timeout=10), endpoints=endpoints).to_dict()
    assert result["headline"]["download_time_s"] == 0.25 and result["bytes"] == 1_048_576
    assert list(result["headline"]) == list(http_download.headline_names(http_download.Params(), TrialSpec(1, 1)))
    assert result["headline"]["download_throughput_bps"] == pytest.approx(1_048_576 * 8 / 0.25)
    argv = endpoints.client.calls[0]
    assert argv[0] == "curl" and argv[-1] == "http://198.19.0.3:80/download.bin" and "%{json}" in argv
    assert recorded[0].to_dict()["kind"] == "http download"


#: The server node's /proc/net/snmp and /proc/net/netstat (cat of both) before and after one 64 MiB download through
#: a DUT dropping 1 % of the frames towards the client (local lab, 2026-11-27).
PROC_NET = Path(__file__).parent / "data" / "proc-net"


def kernel_counter(path: Path, group: str, name: str) -> int:
    """One counter of a /proc/net file: the value under `name` on the line after `group`'s line of names."""
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{group}: ") and name in line.split())
    return int(lines[at + 1].split()[lines[at].split().index(name)])


def test_a_download_records_the_servers_tcp_counters_over_it():
    """The segments the server sent, sent again and had reported as duplicates, and its timeouts, over the
    download: the after-file's counters less the before-file's, each read from its group's line."""
    before, after = PROC_NET / "before-a-download.txt", PROC_NET / "after-a-download.txt"
    endpoints = FakeEndpoints(client_program=FAKE_CURL.replace("SIZE", "1048576"), server=(before, after))
    result = http_download.run(RunContext(None, TrialSpec(1, 1)), http_download.Params(timeout=10),
                               endpoints=endpoints).to_dict()
    expected = {key: kernel_counter(after, *where) - kernel_counter(before, *where)
                for key, where in TCP_COUNTERS.items()}
    assert result["server_tcp"] == expected
    # The recorded download's: 1 % of some 46,800 frames dropped and repaired, none spuriously, no timeout.
    assert 400 < expected["retransmitted_segments"] < 550 and expected["retransmission_timeouts"] == 0
    assert 46_000 < expected["segments_sent"] < 47_000
    assert expected == counted_between(node_tcp_counters(RecordedNode("s", before)),
                                       node_tcp_counters(RecordedNode("s", after)))


def test_a_download_whose_server_counters_cannot_be_read_still_counts_without_them(tmp_path):
    """A node that cannot be read, or whose files miss a counter or pair no values with a line of names (a
    kernel without D-SACK counting, a cut read): no counters, and the download's time stands."""
    full = (PROC_NET / "before-a-download.txt").read_text()
    for name, text in (("no-dsack", full.replace("TCPDSACKRecvSegs", "TCPDSACKRecvSegz")),
                       ("cut", "\n".join(full.splitlines()[:-1]))):
        (tmp_path / name).write_text(text)
        assert node_tcp_counters(RecordedNode("s", tmp_path / name)) is None, name
    assert counted_between(None, node_tcp_counters(RecordedNode("s", PROC_NET / "after-a-download.txt"))) is None
    endpoints = FakeEndpoints(client_program=FAKE_CURL.replace("SIZE", "1048576"))
    result = http_download.run(RunContext(None, TrialSpec(1, 1)), http_download.Params(timeout=10),
                               endpoints=endpoints).to_dict()
    assert result["server_tcp"] is None and result["download_time_s"] == 0.25


def test_a_short_download_fails_the_run():
    endpoints = FakeEndpoints(client_program=FAKE_CURL.replace("SIZE", "1000"))
    with pytest.raises(http_download.DownloadError, match="HTTP 200, 1000 of 1048576 bytes"):
        http_download.run(RunContext(None, TrialSpec(1, 1)), http_download.Params(), endpoints=endpoints)


def test_direction_results_hold_what_the_path_generator_dropped():
    result = PathGenerator().run_trial(TrialSpec(1000, 1, frame_size=(1518, 1518), dont_fragment=True))
    assert all(isinstance(d, DirectionResult) and d.frames_received == 0 for d in result.directions.values())


# -- experiments and the CLI: refused before anything runs ------------------------------------------------

def spec(**overrides) -> dict:
    base = {"name": "kx", "lab": {"kind": "local", "topology": "single"}, "generator": "software",
            "endpoints": {"http_file_mib": 64}, "procedure": {"name": "http_download"}}
    return {**base, **overrides}


@pytest.mark.parametrize(("overrides", "message"), [
    ({"endpoints": {"size": 1}}, "endpoints.size: unknown; allowed congestion_control, http_file, http_file_mib"),
    ({"endpoints": {"http_file_mib": "big"}}, "endpoints.http_file_mib: 'big' is not of type int"),
    ({"procedure": {"name": "throughput"}}, "endpoints: procedure throughput does not run on the lab's TCP"),
    ({"sweep": {"endpoints.http_file_mib": [1, 2]}}, "sweep.endpoints.http_file_mib: allowed roots"),
    ({"notebook": "../x.ipynb"}, "notebook: '../x.ipynb' does not match"),
])
def test_bad_endpoint_blocks_are_one_line(overrides, message):
    from trexlab.spec.experiment import InvalidExperiment, validate

    with pytest.raises(InvalidExperiment) as err:
        validate(spec(**overrides))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_shipped_http_experiments_validate_and_declare_what_they_need():
    from trexlab.spec.experiment import load

    for name in ("http-download-loss", "http-download-delay", "http-download-selective-delay"):
        experiment = load(f"experiments/{name}")
        ci = experiment.scaled("ci")
        assert experiment.spec["notebook"] == "analysis/http-download.ipynb"
        assert experiment.spec["dut"]["impairment"]["directions"] == ["reverse"]  # towards the client only
        needs = experiment.spec["lab"].get("requires", [])
        assert ("sch_netem" in needs) == (name != "http-download-loss"), name
        assert ci.spec["endpoints"]["http_file_mib"] < experiment.spec["endpoints"]["http_file_mib"]


def test_a_campaign_on_a_lab_without_endpoints_stops_before_anything(tmp_path):
    from trexlab.plan.campaign import CampaignError, check_requirements
    from trexlab.spec.experiment import validate

    tester = Node("tester", "tester", "::1", test_ports=(Port(0, "port0", "02:00:00:00:00:01"),))
    dut = Node("dut1", "dut", "::2")
    lab = Lab("kx", "local", "single", {"tester": tester, "dut1": dut}, inventory=tmp_path / "hosts.yml")
    with pytest.raises(CampaignError) as err:
        check_requirements(validate(spec()), lab)
    assert str(err.value).startswith("experiment kx: lab kx has no client node") and "\n" not in str(err.value)


INVENTORY_WITHOUT_ENDPOINTS = static_inventory("kx")


@pytest.mark.parametrize(("argv", "message"), [
    (["tcp"], "trexlab tcp: lab kx has no client node"),
    (["http_download"], "trexlab http_download: lab kx has no client node"),
    (["tcp", "--dscp", "46,64"], "trexlab tcp: dscp=64: allowed an integer >= 0 and <= 63"),
    (["tcp", "--tests", "download,everything"], "trexlab tcp: tests='everything': allowed download"),
])
def test_cli_bad_input_is_one_line_before_any_traffic(tmp_path, capsys, argv, message):
    from trexlab.cli import EXIT_BAD_INPUT, main

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY_WITHOUT_ENDPOINTS)
    results = tmp_path / "results"
    code = main([*argv, "--inventory", str(inventory), "--results", str(results)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and err.startswith(message) and err.count("\n") == 1, err
    assert not results.exists()


INVENTORY_WITH_ENDPOINTS = INVENTORY_WITHOUT_ENDPOINTS + """
    clients:
      hosts:
        client:
          ansible_host: 192.0.2.30
          test_ports:
            - {index: 0, name: e0, mac: "02:00:00:00:02:00", ipv4: 198.18.0.3/24, peer_mac: "02:00:00:00:01:00"}
    servers:
      hosts:
        server:
          ansible_host: 192.0.2.40
          test_ports:
            - {index: 0, name: e0, mac: "02:00:00:00:03:00", ipv4: 198.19.0.3/24, peer_mac: "02:00:00:00:01:01"}
"""


def test_a_campaign_configures_the_endpoints_around_its_points_and_removes_them_even_after_failures(tmp_path,
                                                                                                  monkeypatch):
    """Points fail here (the fake playbook configures nothing, so no endpoint facts): the removal still runs."""
    from trexlab.plan.campaign import Campaign
    from trexlab.spec.experiment import load

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY_WITH_ENDPOINTS)
    log = tmp_path / "playbooks.log"
    fake = tmp_path / "ansible-playbook"
    fake.write_text(f"#!/bin/sh\necho \"$3 $5\" >> {log}\n")
    fake.chmod(0o755)
    # The tester is reached nowhere, and ssh says so at once: the real one tried its address for 3 s per probe of
    # the generator (ARP on a host whose own network is 192.0.2.0/24), traffic to an address that is no test host.
    # The DUT answers the campaign's one question before its first configuration: no DUT configuration is left
    # from before (DUT_CONFIG_MARKERS: nothing listed).
    from trexlab.plan.campaign import DUT_CONFIG_MARKERS
    ssh = tmp_path / "bin" / "ssh"
    ssh.parent.mkdir()
    ssh.write_text(f"#!/bin/sh\ncase \"$*\" in *{DUT_CONFIG_MARKERS['reference']}*) exit 0;; esac\n"
                   "echo 'ssh: connect to host: No route to host' >&2\nexit 255\n")
    ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{ssh.parent}:{os.environ['PATH']}")
    experiment = load("experiments/http-download-loss").scaled("ci")
    outcome = Campaign(experiment, tmp_path / "results", inventory=str(inventory), ansible_playbook=str(fake)).run()
    assert outcome["done"] == 0 and len(outcome["failed"]) == 3
    calls = log.read_text().splitlines()
    mib = experiment.spec["endpoints"]["http_file_mib"]
    assert calls[0].endswith("tcp-endpoints.yml " + json.dumps({"tcp_endpoints_http_file_mib": mib,
                                                                  "tcp_endpoints_congestion_control": "reno",
                                                                  "tcp_endpoints_state": "present"}))
    assert calls[-1].endswith('"tcp_endpoints_state": "absent"}') and "tcp-endpoints.yml" in calls[-1]
    assert sum("tcp-endpoints.yml" in c for c in calls) == 2
    points_log = next((tmp_path / "results" / "http-download-loss").glob("*/points.jsonl"))
    errors = [json.loads(line)["error"] for line in points_log.read_text().splitlines()]
    assert all("the TCP endpoints are not configured" in e for e in errors)


@pytest.mark.parametrize("overrides", [
    {"bb_max_rate": None, "bb_min_rate": 90_000, "media": "1g"},  # above 1 GbE's 86,926 fps of 1418-byte frames
    {"bb_max_rate": None, "bb_trial_duration": 3600, "media": "100g"},  # 8.7 Mfps x 3600 s: above 2^32 frames
    {"bb_min_rate": 0.5},  # half a frame in a 1 s BB trial
])
def test_a_refused_bb_search_names_its_keys_as_the_spec_spells_them(overrides):
    """The BB search is throughput's, run with the bb_ keys (bottleneck_search): a refusal of it, when the
    MTU is known, names bb_min_rate, bb_trial_duration ... (min_rate or trial_duration is no key of tcp's)."""
    with pytest.raises(InvalidParameter) as err:
        run(PathGenerator(), params(tests=("download",), **overrides), FakeEndpoints())
    message = str(err.value)
    keys = set(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", message))
    assert keys and keys <= {f.name for f in dataclasses.fields(rfc6349.Params)}, message
    assert "\n" not in message


def test_iperf3_clients_ended_early_leave_no_pipe_to_the_garbage_collector():
    """run_tests starts the concurrent iperf3 clients at once; when one's report is refused, the others are ended
    and their output pipes closed there, not left to the garbage collector (which warns: a ResourceWarning)."""
    scripts = iter(["print('no report')", "import time; time.sleep(60)"])
    client = SimpleNamespace(command=lambda argv: [sys.executable, "-c", next(scripts)])
    tests = [TcpTest("first", duration=1, port=5201), TcpTest("second", duration=1, port=5202)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(GeneratorError, match=r"^iperf3 test 'first' printed no JSON report: exit status 0$"):
            iperf.run_tests(client, "198.18.0.2", tests)
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
