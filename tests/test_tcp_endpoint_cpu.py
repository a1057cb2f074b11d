"""RFC 6349 section 3 requires test hosts that send and receive stateful TCP at the full bottleneck bandwidth (a MUST),
not limit what they measure: the CPU each end of a TCP test used is
recorded, and a test whose sender or receiver was saturated is marked tester-bound with a note, as trexlab marks a
frame trial's tester limits. From iperf3 reports recorded on this machine (Debian 12's iperf 3.12, --json
--get-server-output against a --json server, as roles/tcp_endpoints runs them):

* upload-4-streams-sender-saturated.json: 4 streams over one veth pair, the client's iperf3 sending as fast as it
  could (its process near all of one CPU);
* download-through-a-forwarder.json: one stream through a forwarding namespace, one segment per packet
  (gso_max_segs 1), bbr: neither end's process near its limit.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import jsonschema
import pytest
from test_rfc6349 import FakeEndpoints, PathGenerator, params, run

from trexlab.plan.repetition import method_line, method_of, summarize_headlines
from trexlab.procedures import rfc6349
from trexlab.tcp import metrics as tcp_metrics
from trexlab.tcp.engines import Iperf3Engine
from trexlab.tcp.iperf import FULL_CPU_PERCENT, TcpTest, busy_percent, parse
from trexlab.testbed.endpoints import Endpoints, cpu_list, node_cpu_ticks

RECORDED = Path(__file__).parent / "data" / "iperf3"
UPLOAD = RECORDED / "upload-4-streams-sender-saturated.json"
DOWNLOAD = RECORDED / "download-through-a-forwarder.json"


def recorded(path: Path) -> dict:
    return json.loads(path.read_text())


def cpu_of(path: Path) -> dict:
    return recorded(path)["end"]["cpu_utilization_percent"]


def saturated(percent: float) -> bool:
    return percent >= rfc6349.ENDPOINT_CPU_SATURATED * FULL_CPU_PERCENT


def test_the_recordings_are_one_saturated_sender_and_no_saturated_end():
    """The fixtures are what their names say (else the tests below would prove nothing)."""
    assert saturated(cpu_of(UPLOAD)["host_total"]) and not saturated(cpu_of(UPLOAD)["remote_total"])
    assert not any(saturated(cpu_of(DOWNLOAD)[end]) for end in ("host_total", "remote_total"))
    assert {recorded(p)["start"]["version"] for p in (UPLOAD, DOWNLOAD)} == {"iperf 3.12"}


def test_each_direction_carries_its_senders_and_receivers_cpu():
    """host_total is the client's process, remote_total the server's: the upload's sender is the client, the
    download's the server. An iperf3 before 3.16 runs every stream in one thread: its limit is one CPU."""
    upload = parse(recorded(UPLOAD), TcpTest("upload", "upload", 4))["upload"]
    assert (upload.sender_cpu_percent, upload.receiver_cpu_percent) == (cpu_of(UPLOAD)["host_total"],
                                                                        cpu_of(UPLOAD)["remote_total"])
    download = parse(recorded(DOWNLOAD), TcpTest("download", "download", 1))["download"]
    assert (download.sender_cpu_percent, download.receiver_cpu_percent) == (cpu_of(DOWNLOAD)["remote_total"],
                                                                            cpu_of(DOWNLOAD)["host_total"])
    assert {upload.sender_cpu_limit_percent, upload.receiver_cpu_limit_percent, download.sender_cpu_limit_percent,
            download.receiver_cpu_limit_percent} == {FULL_CPU_PERCENT}


def versioned(client: str, server: str, host_total: float | None = None) -> dict:
    """The recorded 4-stream upload as iperf3 of these versions would report it (host_total: the client's figure)."""
    report = recorded(UPLOAD)
    report["start"]["version"], report["server_output_json"]["start"]["version"] = client, server
    if host_total is not None:
        report["end"]["cpu_utilization_percent"]["host_total"] = host_total
    return report


def limits(d) -> tuple:
    return d.sender_cpu_limit_percent, d.receiver_cpu_limit_percent


@pytest.mark.parametrize("cpus", [2, 8])
def test_a_threaded_iperf3s_sum_is_judged_against_one_cpu_per_stream_thread_up_to_its_nodes_cpus(cpus):
    """From 3.16 iperf3 runs a thread per stream and reports the process's CPU, every thread's: all it can use is one
    CPU per stream thread, as far as the node has CPUs (it was not judged at all). Four streams on two CPUs: 200 %."""
    test = TcpTest("upload", "upload", 4)
    limit = min(test.connections, cpus) * FULL_CPU_PERCENT
    nodes = {"client": cpus, "server": cpus}
    upload = parse(versioned("iperf 3.16", "iperf 3.16"), test, allowed_cpus=nodes)["upload"]
    assert limits(upload) == (limit, limit) and rfc6349.cpu_saturation(upload) == []
    # The recorded sender's 92.1 % is a saturated single thread's, not four threads' on these CPUs; a sum near their
    # limit is.
    busy = parse(versioned("iperf 3.16", "iperf 3.16", rfc6349.ENDPOINT_CPU_SATURATED * limit), test,
                 allowed_cpus=nodes)["upload"]
    assert rfc6349.cpu_saturation(busy) == [
        f"endpoint CPU saturated (sender {rfc6349.ENDPOINT_CPU_SATURATED * limit:.1f} % of {limit:g} %)"]
    # Without the CPUs it may run on several threads' sum cannot be judged; one stream's thread can, as before 3.16.
    assert limits(parse(versioned("iperf 3.16", "iperf 3.16"), test)["upload"]) == (None, None)
    assert limits(parse(versioned("iperf 3.16", "iperf 3.16"), TcpTest("u", "upload", 1))["upload"]) == (
        FULL_CPU_PERCENT, FULL_CPU_PERCENT)


def test_each_end_is_judged_by_its_own_iperf3s_version():
    """The server's report (--get-server-output) says its own version: a 3.12 client beside a 3.16 server with four
    streams was judged by the client's, the server's sum of four threads against one CPU."""
    upload = parse(versioned("iperf 3.12", "iperf 3.16"), TcpTest("upload", "upload", 4))["upload"]
    assert limits(upload) == (FULL_CPU_PERCENT, None)
    upload = parse(versioned("iperf 3.16", "iperf 3.12"), TcpTest("upload", "upload", 4))["upload"]
    assert limits(upload) == (None, FULL_CPU_PERCENT)


def test_a_bidirectional_test_has_a_stream_thread_each_way_at_each_end():
    """--bidir opens the connections both ways: one connection is two stream threads per threaded iperf3, so its sum
    can reach 200 % on two CPUs (it was judged against 100 %: two half-busy threads read saturated)."""
    test = TcpTest("bidirectional", "bidirectional", 1)
    report = versioned("iperf 3.16", "iperf 3.16")
    report["end"]["sum_sent_bidir_reverse"] = report["end"]["sum_sent"]
    report["end"]["sum_received_bidir_reverse"] = report["end"]["sum_received"]
    directions = parse(report, test, allowed_cpus={"client": 2, "server": 2})
    assert {limits(d) for d in directions.values()} == {(2 * FULL_CPU_PERCENT, 2 * FULL_CPU_PERCENT)}
    single = parse(versioned("iperf 3.12", "iperf 3.12") | {"end": report["end"]}, test)
    assert {limits(d) for d in single.values()} == {(FULL_CPU_PERCENT, FULL_CPU_PERCENT)}


@pytest.mark.parametrize("version", ["iperf 3.16", "iperf 3.17.1", "iperf 3.18"])
def test_a_paced_sender_of_3_16_and_3_17_is_not_judged(version):
    """In 3.16 and 3.17 a stream thread paced by --bitrate loops while it waits (iperf3 issue #1741, fixed in 3.18):
    its process reads about a CPU whatever it sent, so a paced sender (the baseline RTT connection) is not judged
    there; the receiver, which blocks in its reads, is."""
    test = TcpTest("baseline rtt", "upload", 1, bitrate_bps=1e6)
    sender, receiver = limits(parse(versioned(version, version), test)["upload"])
    assert receiver == FULL_CPU_PERCENT
    assert sender == (FULL_CPU_PERCENT if version == "iperf 3.18" else None)


def replaying(download: Path, upload: Path, baseline_cpu: Path | None = DOWNLOAD) -> str:
    """A stand-in iperf3 client that prints a recorded report: the download's for --reverse, else the upload's. The
    baseline RTT connection (paced: --bitrate) gets the upload's with the CPU figures of baseline_cpu's recording
    (the download's by default: neither end near its limit; None: the upload's own, its sender saturated)."""
    swap = "" if baseline_cpu is None else (
        f"if '--bitrate' in sys.argv:\n"
        f"    report['end']['cpu_utilization_percent'] = json.load(open({str(baseline_cpu)!r}))['end']"
        f"['cpu_utilization_percent']\n")
    return (f"import json, sys\nreport = json.load(open({str(download)!r} if '--reverse' in sys.argv else "
            f"{str(upload)!r}))\n{swap}print(json.dumps(report))\n")


def test_a_saturated_sender_makes_its_test_tester_bound_and_the_report_says_so():
    endpoints = FakeEndpoints(client_program=replaying(DOWNLOAD, UPLOAD))
    result = run(PathGenerator(), params(mtu=1500, bottleneck_bandwidth=1e9, tests=("download", "upload")),
                 endpoints).to_dict()
    download, upload = (t["directions"][t["test"]["name"]] for t in result["tests"])
    # Recorded per direction: both ends' CPU, and the figure of all they can use.
    assert (upload["sender_cpu_percent"], upload["receiver_cpu_percent"]) == (cpu_of(UPLOAD)["host_total"],
                                                                              cpu_of(UPLOAD)["remote_total"])
    assert download["sender_cpu_percent"] == cpu_of(DOWNLOAD)["remote_total"]
    # The upload's sender was saturated: its test is tester-bound, the download's is not.
    assert upload["tester_bound_reasons"] == [
        f"endpoint CPU saturated (sender {cpu_of(UPLOAD)['host_total']:.1f} % of {FULL_CPU_PERCENT:g} %)"]
    assert download["tester_bound_reasons"] == []
    assert result["tester_bound"] and result["tester_bound_reasons"] == [f"upload: {upload['tester_bound_reasons'][0]}"]
    note = next(n for n in result["notes"] if n.startswith("TESTER-BOUND"))
    assert "upload (endpoint CPU saturated" in note and "download" not in note and "test host's limit" in note
    # What RFC 6349 requires, where it says so: section 3's test host MUST carry the full bottleneck bandwidth.
    assert "RFC 6349 section 3: a test host MUST carry the full bottleneck bandwidth" in note
    assert not any(n.startswith("endpoint CPU not judged") for n in result["notes"])
    # Only the upload's figures are bound: not the download's, nor the path MTU or bottleneck bandwidth.
    bound = result["headline_tester_bound"]
    assert set(bound) == set(result["headline"])
    assert {name for name, reasons in bound.items() if reasons} == {
        "upload_tcp_throughput_bps", "upload_transfer_time_ratio", "upload_tcp_efficiency_percent",
        "upload_buffer_delay_percent"}
    # The summary a user reads: the upload's throughput is a tester-bound lower bound, the download's is not.
    summary = summarize_headlines([result])
    assert summary["upload_tcp_throughput_bps"]["tester_bound"] == 1
    assert summary["upload_tcp_throughput_bps"]["median_lower_bound"]
    assert "endpoint CPU saturated (sender" in summary["upload_tcp_throughput_bps"]["why"]
    assert summary["download_tcp_throughput_bps"]["tester_bound"] == 0
    assert summary["bottleneck_bandwidth_bps"]["tester_bound"] == 0
    # The method says whose CPU and from what share a test counts as tester-bound; the schema declares it all.
    line = method_line(method_of(result))
    assert f"{rfc6349.ENDPOINT_CPU_SATURATED * 100:g} % or more of all the CPU it can" in line
    assert "iperf3 process" in line
    schema = json.loads((Path(__file__).parent.parent / "docs" / "schemas" / "result.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(result)


def test_tests_whose_endpoints_report_no_cpu_are_said_not_judged():
    """test_rfc6349's stand-in iperf3 reports no CPU: nothing is claimed either way, and the report says so."""
    result = run(PathGenerator(), params(mtu=1500, bottleneck_bandwidth=1e9, tests=("download",)),
                 FakeEndpoints()).to_dict()
    download = result["tests"][0]["directions"]["download"]
    assert download["sender_cpu_percent"] is None and download["tester_bound_reasons"] == []
    assert not result["tester_bound"]
    assert any(n.startswith("endpoint CPU not judged (baseline RTT, download)") for n in result["notes"])


@pytest.mark.parametrize("declared_window", [False, True])
def test_a_saturated_end_of_the_baseline_rtt_connection_bounds_the_figures_resting_on_it(declared_window):
    """RFC 6349 section 3.2 baselines the path's inherent, non-congested RTT; a saturated endpoint's queueing and
    scheduling delay is in the RTT its kernel samples. The baseline RTT connection's endpoints were never judged: its
    sender at 92.1 % of its one CPU left the result not tester-bound. Now the baseline RTT, the BDP and every buffer
    delay are bounded, and a transfer time ratio where a window limits the maximum achievable throughput (a declared
    window below the BDP), not the throughputs nor the path MTU or bottleneck bandwidth."""
    rtt = min(s["sender"]["min_rtt"] for s in recorded(UPLOAD)["end"]["streams"]) / 1e6
    bb, mtu = 1e9, 1500
    window = {"window_bytes": int(tcp_metrics.bdp_bytes(bb, rtt) / 2)} if declared_window else {}
    endpoints = FakeEndpoints(client_program=replaying(DOWNLOAD, UPLOAD, baseline_cpu=None))
    result = run(PathGenerator(), params(mtu=mtu, bottleneck_bandwidth=bb, tests=("download",), connections=1,
                                         **window), endpoints).to_dict()
    reason = f"endpoint CPU saturated (sender {cpu_of(UPLOAD)['host_total']:.1f} % of {FULL_CPU_PERCENT:g} %)"
    assert result["baseline_rtt_s"] == pytest.approx(rtt)
    assert result["tester_bound"] and result["tester_bound_reasons"] == [f"baseline RTT: {reason}"]
    assert result["baseline_rtt_connection"]["sender_cpu_percent"] == cpu_of(UPLOAD)["host_total"]
    assert result["baseline_rtt_connection"]["tester_bound_reasons"] == [reason]
    assert result["tests"][0]["directions"]["download"]["tester_bound_reasons"] == []
    bound = {name for name, reasons in result["headline_tester_bound"].items() if reasons}
    assert bound == {"baseline_rtt_s", "bdp_bytes", "download_buffer_delay_percent"} | (
        {"download_transfer_time_ratio"} if declared_window else set())
    note = next(n for n in result["notes"] if n.startswith("TESTER-BOUND baseline RTT"))
    assert reason in note and rfc6349.BASELINE_RTT_FIGURES in note
    summary = summarize_headlines([result])
    assert summary["baseline_rtt_s"]["tester_bound"] == summary["bdp_bytes"]["tester_bound"] == 1
    assert summary["download_tcp_throughput_bps"]["tester_bound"] == summary["path_mtu_bytes"]["tester_bound"] == 0
    assert rfc6349.BASELINE_RTT_FIGURES in method_line(method_of(result))
    schema = json.loads((Path(__file__).parent.parent / "docs" / "schemas" / "result.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(result)


@pytest.mark.parametrize("percent", [95.0, 50.0])
def test_the_threshold_is_one_share_of_the_limit(percent):
    """The same margin as a frame trial near the tester's ceiling (common.CEILING_MARGIN)."""
    from trexlab.procedures.common import CEILING_MARGIN

    d = parse(recorded(UPLOAD), TcpTest("upload", "upload", 4))["upload"]
    d = dataclasses.replace(d, sender_cpu_percent=percent, receiver_cpu_percent=None)
    assert bool(rfc6349.cpu_saturation(d)) == (percent >= (1 - CEILING_MARGIN) * FULL_CPU_PERCENT)


#: This machine's /proc/stat (its first three lines) before and after a 2 s download through the forwarding namespace
#: (another run than the recorded report's).
STAT = Path(__file__).parent / "data" / "proc-stat"


def lines_of(path: Path) -> dict[str, list[str]]:
    """A /proc file's lines by their first word."""
    return {fields[0].rstrip(":"): fields[1:] for fields in map(str.split, path.read_text().splitlines()) if fields}


class CatNode:
    """A node whose `cat` reads a recorded file instead of the one asked for (missing: a failed read)."""

    def __init__(self, path: Path):
        self.path = path

    def command(self, argv: list[str]) -> list[str]:
        return ["cat", str(self.path)]


def test_a_nodes_cpus_busy_share_is_all_but_idle_and_iowait_of_its_proc_stat():
    """/proc/stat's "cpu" line: user nice system idle iowait irq softirq steal (ticks, all CPUs); busy is all but
    idle and iowait: softirq (the receiving stack) and steal count, as no endpoint could use them."""
    before, after = (node_cpu_ticks(CatNode(STAT / f"{when}-a-download.txt")) for when in ("before", "after"))
    # One "cpuN" line per online CPU, each read on its own (the "cpu" line sums possible CPUs, offline ones too).
    lines = {when: lines_of(STAT / f"{when}-a-download.txt") for when in ("before", "after")}
    cpus = {int(name[3:]) for name in lines["before"] if name != "cpu"}
    assert set(before) == set(after) == cpus

    def share(of: set[int]) -> float:
        spent = [sum(int(lines["after"][f"cpu{c}"][i]) - int(lines["before"][f"cpu{c}"][i]) for c in of)
                 for i in range(8)]
        return 100 - (spent[3] + spent[4]) / sum(spent) * 100

    assert busy_percent(before, after) == pytest.approx(share(cpus))
    for cpu in cpus:  # the CPUs an iperf3 may run on: theirs alone
        assert busy_percent(before, after, frozenset({cpu})) == pytest.approx(share({cpu}))
    assert busy_percent(before, after, frozenset({max(before) + 1})) is None  # a CPU not read: no figure
    assert node_cpu_ticks(CatNode(STAT / "missing")) is None and busy_percent(None, after) is None


@pytest.mark.parametrize("below", [False, True])
def test_busy_endpoint_nodes_make_a_test_tester_bound(below):
    """An iperf3 waiting for a CPU that other work took reads low on its own figure: the nodes' CPUs, all of them,
    busy ENDPOINT_CPU_SATURATED of the test's time or more bound its figures too (the stand-in iperf3 reports no
    CPU of its own)."""
    total = 10_000
    busy = round(rfc6349.ENDPOINT_CPU_SATURATED * total) - (1 if below else 0)
    def node(busy_ticks: int, all_ticks: int) -> dict[int, tuple[int, int]]:  # two CPUs, equally busy
        return {cpu: (busy_ticks / 2, all_ticks / 2) for cpu in (0, 1)}

    idle = {"client": node(0, total), "server": node(0, total)}
    readings = [idle, {"client": node(total // 10, 2 * total), "server": node(total // 10, 2 * total)},  # RTT
                idle, {"client": node(busy, 2 * total), "server": node(0, 2 * total)}]  # download: client busy
    result = run(PathGenerator(), params(mtu=1500, bottleneck_bandwidth=1e9, tests=("download",)),
                 FakeEndpoints(cpu_ticks=readings)).to_dict()
    download = result["tests"][0]["directions"]["download"]
    assert download["receiver_node_busy_percent"] == pytest.approx(busy / total * 100)
    assert download["sender_node_busy_percent"] == 0
    expected = [] if below else [f"endpoint node CPUs busy (receiver {busy / total * 100:.1f} %)"]
    assert download["tester_bound_reasons"] == expected and result["tester_bound"] == (not below)


#: Recorded on this machine (2 CPUs) with both ends' iperf3 (3.12) pinned to CPU 1 (taskset -c 1), each in a namespace
#: of its own over a veth pair: the server's listening socket as ss -Htlnp shows it, its /proc/<pid>/status, a
#: command's own status run as the client's iperf3 then was, /proc/stat's cpu lines before and after, and the 3 s,
#: 4-stream upload's report. CPU 1 was busy all the test's time, CPU 0 much less.
PINNED = Path(__file__).parent / "data" / "pinned-iperf3"
PINNED_REPORT = PINNED / "upload-4-streams-both-ends-on-cpu-1.json"


class RecordedNode:
    """A node whose commands print the pinned recording: /proc/stat before, then after; its statuses; ss; a report."""

    def __init__(self, name: str, report: Path):
        self.name, self.report = name, report
        self.stats = [PINNED / "proc-stat-before.txt", PINNED / "proc-stat-after.txt"]
        self.server_pid = re.search(r"pid=(\d+)", (PINNED / "ss.txt").read_text()).group(1)

    def command(self, argv: list[str]) -> list[str]:
        if argv == ["cat", "/proc/stat"]:
            return ["cat", str(self.stats.pop(0))] if self.stats else ["false"]
        recorded_file = {("cat", "/proc/self/status"): PINNED / "client-status.txt",
                         ("cat", f"/proc/{self.server_pid}/status"): PINNED / "server-status.txt",
                         ("ss", "-Htlnp"): PINNED / "ss.txt" if argv[2:] == ["sport = :5201"] else None,
                         }.get(tuple(argv[:2]), self.report if argv[0] == "iperf3" else None)
        return ["cat", str(recorded_file)] if recorded_file else ["false"]


class RecordedEndpoints(Endpoints):
    """Endpoints whose client and server nodes are the pinned recording's (one kernel: both read the same files)."""

    def __init__(self, report: Path):  # no lab: the nodes are the recording
        self.client, self.server = RecordedNode("client", report), RecordedNode("server", report)
        self.facts = {"iperf3_ports": [5201]}

    def server_address(self, ip_version: int) -> str:
        return "198.18.250.2"


def test_the_pinned_recording_is_both_ends_on_one_cpu_of_two():
    statuses = [lines_of(PINNED / f"{end}-status.txt")["Cpus_allowed_list"] for end in ("client", "server")]
    assert statuses == [["1"], ["1"]] and '(("iperf3",pid=' in (PINNED / "ss.txt").read_text()
    assert len(node_cpu_ticks(CatNode(PINNED / "proc-stat-before.txt"))) == 2


@pytest.mark.parametrize("text, cpus", [("1", {1}), ("0-3,8", {0, 1, 2, 3, 8}), ("3-1", None), ("", None)])
def test_a_kernel_cpu_list_is_read_as_its_cpus(text, cpus):
    if cpus is None:
        with pytest.raises(ValueError):
            cpu_list(text)
    else:
        assert cpu_list(text) == cpus


def test_an_iperf3_pinned_to_fewer_cpus_than_its_threads_is_judged_against_those_it_may_run_on(tmp_path):
    """Both ends' iperf3 could run on CPU 1 only: a threaded (3.16+) iperf3's four stream threads can use one CPU,
    not the node's two (its sum was judged against 200 %, so a saturated pinned end read half its limit)."""
    report = recorded(PINNED_REPORT)
    report["start"]["version"] = report["server_output_json"]["start"]["version"] = "iperf 3.16"
    threaded = tmp_path / "threaded.json"
    threaded.write_text(json.dumps(report))
    endpoints = RecordedEndpoints(threaded)
    assert endpoints.iperf3_cpus(5201) == {"client": {1}, "server": {1}}
    upload = Iperf3Engine(endpoints).run([TcpTest("upload", "upload", 4)])[0]["upload"]
    assert limits(upload) == (FULL_CPU_PERCENT, FULL_CPU_PERCENT)
    # A server port whose listener is not read (no ss line of an iperf3 for it): the server's not known.
    assert RecordedEndpoints(threaded).iperf3_cpus(5202) == {"client": {1}, "server": None}


def test_the_busy_share_of_the_cpus_a_pinned_iperf3_may_run_on_bounds_its_test():
    """CPU 1, the only one either end could use, was busy the whole test while CPU 0 was not: the node's CPUs
    together read below the threshold (not tester-bound), the CPUs the ends may run on above it."""
    before, after = (node_cpu_ticks(CatNode(PINNED / f"proc-stat-{when}.txt")) for when in ("before", "after"))
    pinned, whole = busy_percent(before, after, frozenset({1})), busy_percent(before, after)
    assert whole < rfc6349.ENDPOINT_CPU_SATURATED * FULL_CPU_PERCENT <= pinned  # the recording is what it says
    upload = Iperf3Engine(RecordedEndpoints(PINNED_REPORT)).run([TcpTest("upload", "upload", 4)])[0]["upload"]
    assert (upload.sender_node_busy_percent, upload.receiver_node_busy_percent) == (pytest.approx(pinned),) * 2
    assert rfc6349.cpu_saturation(upload) == [
        f"endpoint node CPUs busy (sender {pinned:.1f} %, receiver {pinned:.1f} %)"]
