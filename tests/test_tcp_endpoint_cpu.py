"""RFC 6349 wants test hosts that are not the limit of what they measure: the CPU each end of a TCP test used is
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
from pathlib import Path

import jsonschema
import pytest
from test_rfc6349 import FakeEndpoints, PathGenerator, params, run

from trexlab.plan.repetition import method_line, method_of, summarize_headlines
from trexlab.procedures import rfc6349
from trexlab.tcp.iperf import FULL_CPU_PERCENT, TcpTest, busy_percent, parse
from trexlab.testbed.endpoints import node_cpu_ticks

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
    assert upload.cpu_limit_percent == download.cpu_limit_percent == FULL_CPU_PERCENT


def test_an_iperf3_that_sums_several_stream_threads_is_not_judged():
    """From 3.16 iperf3 runs a thread per stream and reports their sum: one saturated stream among four cannot be
    told, so no limit is claimed (None), and no figure is made up either."""
    report = recorded(UPLOAD)
    report["start"]["version"] = "iperf 3.16"
    upload = parse(report, TcpTest("upload", "upload", 4))["upload"]
    assert upload.cpu_limit_percent is None and upload.sender_cpu_percent == cpu_of(UPLOAD)["host_total"]
    assert rfc6349.cpu_saturation(upload) == []
    assert parse(report, TcpTest("upload", "upload", 1))["upload"].cpu_limit_percent == FULL_CPU_PERCENT


def replaying(download: Path, upload: Path) -> str:
    """A stand-in iperf3 client that prints a recorded report: the download's for --reverse, else the upload's."""
    return f"import sys\nprint(open({str(download)!r} if '--reverse' in sys.argv else {str(upload)!r}).read())\n"


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
    assert any(n.startswith("endpoint CPU not judged (download)") for n in result["notes"])


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
    columns = [[int(v) for v in (STAT / f"{when}-a-download.txt").read_text().split("\n")[0].split()[1:9]]
               for when in ("before", "after")]
    spent = [b - a for a, b in zip(*columns, strict=True)]
    assert busy_percent(before, after) == pytest.approx(100 - (spent[3] + spent[4]) / sum(spent) * 100)
    assert node_cpu_ticks(CatNode(STAT / "missing")) is None and busy_percent(None, after) is None


@pytest.mark.parametrize("below", [False, True])
def test_busy_endpoint_nodes_make_a_test_tester_bound(below):
    """An iperf3 waiting for a CPU that other work took reads low on its own figure: the nodes' CPUs, all of them,
    busy ENDPOINT_CPU_SATURATED of the test's time or more bound its figures too (the stand-in iperf3 reports no
    CPU of its own)."""
    total = 10_000
    busy = round(rfc6349.ENDPOINT_CPU_SATURATED * total) - (1 if below else 0)
    idle = {"client": (0, total), "server": (0, total)}
    readings = [idle, {"client": (total // 10, 2 * total), "server": (total // 10, 2 * total)},  # baseline RTT
                idle, {"client": (busy, 2 * total), "server": (0, 2 * total)}]  # the download: client node busy
    result = run(PathGenerator(), params(mtu=1500, bottleneck_bandwidth=1e9, tests=("download",)),
                 FakeEndpoints(cpu_ticks=readings)).to_dict()
    download = result["tests"][0]["directions"]["download"]
    assert download["receiver_node_busy_percent"] == pytest.approx(busy / total * 100)
    assert download["sender_node_busy_percent"] == 0
    expected = [] if below else [f"endpoint node CPUs busy (receiver {busy / total * 100:.1f} %)"]
    assert download["tester_bound_reasons"] == expected and result["tester_bound"] == (not below)
