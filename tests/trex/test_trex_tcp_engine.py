"""RFC 6349 with the TRex ASTF engine against a fake ASTF client: counters -> metrics, and the same result
directory as the iperf3 engine's (no TRex, no lab needed)."""

from __future__ import annotations

import json
from pathlib import Path

import fake_astf
import pytest
from test_rfc6349 import PATH_MTU, FakeEndpoints, PathGenerator, params

from trexlab.cli import EXIT_BAD_INPUT, build_parser, main
from trexlab.params import InvalidParameter
from trexlab.plan.repetition import SUMMARY, repeat
from trexlab.plan.runplan import check_on_lab, plan_cli
from trexlab.procedures import rfc6349
from trexlab.procedures.common import RunContext
from trexlab.results.store import PROVENANCE, RESULT, TRIALS
from trexlab.tcp import metrics as tcp_metrics
from trexlab.tcp.engines import ASTF_PROFILE, TRexAstfEngine, direction_stats, flow_rtts
from trexlab.tcp.iperf import TcpTest
from trexlab.trial import GeneratorError, TrialSpec

LINK_BPS = 1e9
#: The flow dump gives the smoothed RTT in whole milliseconds: a path of whole milliseconds keeps the figures exact
#: here (test_a_baseline_rtt_of_few_milliseconds_is_flagged covers the coarse case).
RTT_S = 2e-3
PORTS = [5201, 5202, 5203, 5204, 5205]


def engine(client=None, **path) -> TRexAstfEngine:
    client = client or fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, **path)
    trex = TRexAstfEngine(None, PORTS, server="192.0.2.1", api=fake_astf.api(), client=client)
    trex.clock, trex.sleep = client.clock, client.clock.sleep
    return trex


def run(trex, **overrides):
    traffic = TrialSpec(offered_load=1, duration=1, receive_tail=0)
    recorded = []
    context = RunContext(PathGenerator(capacity=50_000), traffic, on_trial=lambda r, c: recorded.append((r, c)))
    result = rfc6349.run(context, params(engine="trex", **overrides), engine=trex)
    return result.to_dict(), recorded


def test_counters_become_the_rfc6349_metrics():
    trex = engine()
    result, recorded = run(trex, omit=1.0)
    client = trex.client
    assert result["engine"] == "trex" and "TRex ASTF" in result["method"]
    # Baseline RTT: the low-load connection's smallest smoothed RTT from the flow dump (whole ms -> s).
    assert result["baseline_rtt_s"] == pytest.approx(RTT_S, rel=0.01)
    names = [t["test"]["name"] for t in result["tests"]]
    assert names == ["download", "upload", "bidirectional", "single", "reduced 25%", "reduced 50%",
                     "reduced 75%", "dscp 46", "dscp 10", "dscp 12", "dscp 14", "dscp 0", "stress"]
    download = result["tests"][0]["directions"]["download"]
    # Good bytes: the client's tcps_rcvbyte between the reads after omit and after the duration, over the time
    # between them; the fake path gives window x 8 / RTT per connection (the windows are BDP / 4).
    per_connection = result["window_per_connection"] * 8 / RTT_S
    assert download["actual_tcp_throughput_bps"] == pytest.approx(4 * per_connection, rel=1e-3)
    window_limited = tcp_metrics.window_limited_throughput(4 * result["window_per_connection"], RTT_S)
    link = tcp_metrics.max_achievable_tcp_throughput(result["bottleneck_bandwidth_bps"], PATH_MTU)
    assert download["max_achievable_tcp_throughput_bps"] == pytest.approx(min(link, window_limited), rel=0.01)
    assert download["transfer_time_ratio"] == pytest.approx(
        download["max_achievable_tcp_throughput_bps"] / download["actual_tcp_throughput_bps"])
    # Retransmissions as TRex counts them (bytes, not segments x MSS); sent = tcps_sndbyte_ok, not the
    # application's tcps_sndbyte that runs a buffer ahead.
    assert download["retransmitted_bytes"] == download["counted_retransmitted_bytes"] > 0
    assert download["sent_bytes"] == pytest.approx(download["good_bytes"], rel=1e-6)
    assert download["tcp_efficiency_percent"] == pytest.approx(
        tcp_metrics.tcp_efficiency_percent(download["transmitted_bytes"], download["retransmitted_bytes"]))
    assert download["tcp_efficiency_percent"] == pytest.approx(100 / 1.001, rel=1e-3)
    # Buffer delay: the bulk connections' smoothed RTT is 1.5 x the baseline.
    assert download["buffer_delay_percent"] == pytest.approx(50.0, rel=0.01)
    assert download["seconds"] == pytest.approx(params().test_duration, rel=0.01)
    assert set(result["tests"][2]["directions"]) == {"upload", "download"}
    # The profiles got the test's tunables: windows, MSS = MTU - 40, one DSCP profile per port, all at once.
    loads = [c[1] for c in client.calls if c[0] == "load_profile"]
    assert all(c["profile"] == str(ASTF_PROFILE) and c["tunables"]["mss"] == PATH_MTU - 40 for c in loads)
    dscp = [c["tunables"] for c in loads if c["tunables"]["dscp"] >= 0]
    assert [(t["dscp"], t["port"]) for t in dscp] == list(zip((46, 10, 12, 14, 0), PORTS, strict=True))
    assert loads[0]["tunables"]["bitrate"] == pytest.approx(result["bottleneck_bandwidth_bps"] / 100)
    # Every profile started was stopped and removed; every test was recorded as it ended.
    assert sorted(client.started) == sorted(client.stopped)
    assert all(c[1]["is_remove"] for c in client.calls if c[0] == "stop")
    assert sum(c["phase"].startswith("tcp test") for _, c in recorded) == 13
    assert all(json.dumps(r.to_dict()) for r, _ in recorded)


def test_omit_leaves_the_connection_setup_out():
    # The fake's connections, established at once, carry nothing for their first 0.5 s (slow start): without omit
    # that time lowers the figure (the handshakes' time is left out either way: the next test).
    with_omit, _ = run(engine(handshake_s=0.0), omit=1.0, tests=("download",))
    without, _ = run(engine(handshake_s=0.0), omit=0.0, tests=("download",))
    measured = {name: r["tests"][0]["directions"]["download"]["actual_tcp_throughput_bps"]
                for name, r in (("omit", with_omit), ("none", without))}
    duration = params().test_duration
    assert measured["none"] == pytest.approx(measured["omit"] * (duration - 0.5) / duration, rel=0.01)


def test_direction_stats_read_the_sending_and_receiving_sections():
    test = TcpTest("download", "download", 2, mss=1460)
    before = {"client": {"tcps_rcvbyte": 100}, "server": {"tcps_sndbyte": 500, "tcps_sndrexmitpack": 1,
                                                           "tcps_sndrexmitbyte": 1460}}
    after = {"client": {"tcps_rcvbyte": 10_100}, "server": {"tcps_sndbyte": 20_500, "tcps_sndrexmitpack": 3,
                                                             "tcps_sndrexmitbyte": 3000}}
    flows = {"a:1-b:2": [{"origin": "server", "rtt": 2, "duration": 500}, {"origin": "client", "rtt": 10,
                                                                          "duration": 500}],
             "next_index": 7}
    stats = direction_stats("download", test, before, after, 2.0, flows)
    # A server without tcps_sndbyte_ok: the application's count stands in.
    assert (stats.good_bytes, stats.sent_bytes, stats.retransmits) == (10_000, 20_000, 2)
    assert stats.retransmitted_bytes == 1540 and stats.transmitted_bytes == 21_540
    assert stats.rtt_mean_s == pytest.approx(2e-3)  # 2 ms: the sender's (server's) flows only
    with pytest.raises(GeneratorError, match="no tcps_rcvbyte in section 'client'"):
        direction_stats("download", test, before, {"server": after["server"]}, 2.0, flows)


def test_rtt_samples_of_slow_start_are_left_out():
    flows = {"f": [{"origin": "client", "rtt": 10, "duration": 100}, {"origin": "client", "rtt": 2,
                                                                     "duration": 1500}]}
    assert flow_rtts(flows, "client", omit=1.0) == [pytest.approx(2e-3)]
    assert len(flow_rtts(flows, "client", omit=0.0)) == 2


def test_the_flow_dumps_rtt_is_whole_milliseconds():
    # TRex keeps t_srtt in ticks of 1 ms scaled by 2^5 and sends tcp_timer_ticks_to_msec(t_srtt) >> TCP_RTT_SHIFT:
    # whole ms, the scaling shifted out (trex-core src/44bsd/tcp_subr.cpp, CTcpFlow::to_json; netinet/tcp_var.h
    # TCP_RTT_SHIFT 5, netinet/tcp_timer.h hz 1000). A connection of a 2 ms path, established 1.5 s, reads rtt 2.
    flows = {"198.18.0.2:40000-198.19.0.2:5201": [{"origin": "client", "duration": 1500, "state": 4, "rtt": 2}]}
    assert flow_rtts(flows, "client", omit=1.0) == [pytest.approx(2e-3)]
    # Below 1 ms the dump reads 0, as before the first sample: no RTT, never 0 s.
    flows["198.18.0.2:40000-198.19.0.2:5201"][0]["rtt"] = 0
    assert flow_rtts(flows, "client", omit=1.0) == []


def test_a_test_longer_than_trexs_flow_dump_span_keeps_every_rtt_sample():
    # TRex keeps the last 10 s of flow dumps and overwrites older ones (trex-core src/stx/astf/trex_astf.cpp): read
    # only at the end, a 30 s test would keep its last 10 s. Here the queue fills over 20 s (RTT 20 ms rising to
    # 30 ms): the RTTs of the whole test, after omit, run from 20 to 30 ms, not 30 ms only.
    trex = engine(client=fake_astf.FakeAstfClient(rtt_s=20e-3, queue_fill_s=20.0))
    [stats] = trex.run([TcpTest("download", "download", 1, port=5201, duration=30, omit=1, interval=1.0)])
    download = stats["download"]
    assert (download.rtt_min_s, download.rtt_max_s) == (pytest.approx(20e-3), pytest.approx(30e-3))
    assert download.rtt_min_s < download.rtt_mean_s < download.rtt_max_s


def test_a_server_error_is_one_line_and_stops_what_it_started():
    trex = engine(client=fake_astf.FakeAstfClient(fail_at="get_flow_info"))
    with pytest.raises(GeneratorError) as err:
        trex.run([TcpTest("download", "download", 1, port=5201, duration=1)])
    assert str(err.value) == "TRex ASTF server 192.0.2.1:4501: *** get_flow_info: Server is not responding"
    assert trex.client.stopped == {"trexlab-tcp-5201": pytest.approx(trex.client.clock.now, abs=1)}


def test_a_test_whose_connections_did_not_all_come_up_is_refused():
    # A DUT that dropped two of four handshakes: TRex carries on with two, and their throughput is not that of
    # four connections with the window the test gave each (iperf3 itself fails a stream that cannot connect).
    trex = engine(client=fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, established=2))
    with pytest.raises(GeneratorError) as err:
        trex.run([TcpTest("download", "download", 4, port=5201, duration=5, omit=1.0)])
    assert str(err.value) == ("TRex ASTF server 192.0.2.1:4501: test 'download' had 2 of its 4 connections "
                              "established while it was measured (the client's m_est_flows): the others' "
                              "handshakes failed or they were dropped")
    assert trex.client.stopped == {"trexlab-tcp-5201": pytest.approx(trex.client.clock.now, abs=1)}
    # All four up: measured.
    trex = engine(client=fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, established=4))
    [stats] = trex.run([TcpTest("download", "download", 4, port=5201, duration=5, omit=1.0)])
    assert stats["download"].good_bytes > 0


@pytest.mark.parametrize("phase", [0.0, 0.13, 0.37])
def test_counters_are_read_fresh_not_as_of_the_last_half_second_refresh(phase):
    # TRex refreshes the ASTF counters get_traffic_stats answers with every 500 ms: a read right after start + omit
    # can get values up to 0.5 s old, one after the duration fresh ones, and 2.25 s of transfer read as 2.0-2.5 s
    # (up to 11 % off). Read through get_stats, which has the server refresh them, the bottleneck's rate comes out.
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, refresh_phase=phase)
    window = 1 << 20  # 4.2 Gbit/s at RTT_S: the bottleneck limits, not the window
    [stats] = engine(client=client).run([TcpTest("download", "download", 1, window, port=5201, duration=2.25,
                                                 omit=1.0)])
    download = stats["download"]
    assert download.good_bytes * 8 / download.seconds == pytest.approx(LINK_BPS, rel=2e-3)
    assert download.seconds == pytest.approx(2.25, abs=0.01)
    assert "get_stats" in client.call_names()


def test_ipv6_is_refused_before_any_traffic():
    with pytest.raises(InvalidParameter, match="ip_version=6: allowed 4 with engine trex"):
        rfc6349.check_engine(engine(), params(engine="trex"), TrialSpec(1, 1, ip_version=(6, 6), frame_size=(84, 84)))


def shape(value):
    """The structure of a JSON value: keys of objects (recursively), one element of lists, types of leaves
    (numbers and null alike: a figure the engine cannot give is null)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, str):
        return "str"
    return "figure"


def result_dir_shape(root: Path) -> dict:
    """Every file of a result directory: the shape of the JSON ones, the columns of the columnar exports."""
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = str(path.relative_to(root))
        if path.suffix == ".jsonl":
            files[name] = [shape(json.loads(line)) for line in path.read_text().splitlines()]
        elif path.suffix == ".json":
            files[name] = shape(json.loads(path.read_text()))
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            files[name] = pq.read_schema(path).names
        else:
            files[name] = "present"
    return files


def test_the_result_directory_has_the_iperf3_engines_shape(tmp_path, monkeypatch):
    traffic = TrialSpec(offered_load=1, duration=1, receive_tail=0)
    dirs = {}
    for name, make in (("iperf3", lambda: rfc6349.tcp_engines.Iperf3Engine(FakeEndpoints())), ("trex", engine)):
        monkeypatch.setattr(rfc6349, "engine_of", lambda generator, p, make=make: make())
        dirs[name] = tmp_path / name
        repeat("tcp", PathGenerator(capacity=50_000), traffic, params(engine=name, omit=1.0), 1, dirs[name],
               {"argv": ["tcp", "--engine", name]})
    shapes = {name: result_dir_shape(path) for name, path in dirs.items()}
    assert {f"rep-001/{PROVENANCE}", f"rep-001/{RESULT}", f"rep-001/{TRIALS}", SUMMARY} <= set(shapes["trex"])
    assert shapes["iperf3"] == shapes["trex"]
    results = {name: json.loads((path / "rep-001/result.json").read_text()) for name, path in dirs.items()}
    assert results["iperf3"]["headline"].keys() == results["trex"]["headline"].keys()


def test_cli_takes_the_engine_and_needs_no_client_node_for_trex(tmp_path):
    from test_rfc6349 import INVENTORY_WITHOUT_ENDPOINTS

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY_WITHOUT_ENDPOINTS)
    common = ["tcp", "--inventory", str(inventory), "--results", str(tmp_path / "r"), "--generator", "sim",
              "--mtu", "1500", "--bottleneck-bandwidth", "1e9"]
    argv = [*common, "--engine", "trex", "--trex-server", "192.0.2.1"]
    plan = plan_cli(build_parser().parse_args(argv), argv)
    assert plan.params.engine == "trex" and plan.params.trex_server == "192.0.2.1"
    # What the CLI checks before any traffic: the trex engine needs no client and server nodes.
    check_on_lab([plan])
    assert isinstance(rfc6349.engine_of(plan.lab, plan.params), TRexAstfEngine)


@pytest.mark.parametrize(("flags", "message"), [
    (["--engine", "ns3"], "trexlab tcp: engine='ns3': allowed iperf3, trex"),
    (["--engine", "trex"], "trexlab tcp: trex_server=None: allowed the TRex ASTF server's address"),
    (["--engine", "trex", "--trex-server", "192.0.2.1", "--ip-version", "6", "--frame-size", "84"],
     "trexlab tcp: ip_version=6: allowed 4 with engine trex"),
])
def test_cli_bad_engine_input_is_one_line(tmp_path, capsys, flags, message):
    code = main(["tcp", "--generator", "sim", "--mtu", "1500", "--bottleneck-bandwidth", "1e9", "--results",
                 str(tmp_path / "r"), *flags])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and err.startswith(message) and err.count("\n") == 1, err


def test_an_experiment_with_the_trex_engine_needs_no_endpoints(tmp_path):
    from trexlab.plan.campaign import CampaignError, check_requirements
    from trexlab.spec.experiment import procedure_needs_endpoints, validate
    from trexlab.testbed.inventory import Lab, Node
    from trexlab.testbed.inventory import TestPort as Port

    spec = {"name": "kx", "lab": {"kind": "local", "topology": "single"}, "generator": "trex",
            "procedure": {"name": "tcp", "params": {"engine": "trex", "mtu": 1500, "bottleneck_bandwidth": 1e9}}}
    assert not procedure_needs_endpoints("tcp", spec["procedure"]["params"])
    assert procedure_needs_endpoints("tcp", {}) and procedure_needs_endpoints("tcp", {"engine": "iperf3"})
    # A lab without client and server nodes: enough for the trex engine, refused for iperf3's.
    tester = Node("tester", "tester", "::1", test_ports=(Port(0, "port0", "02:00:00:00:00:01"),))
    lab = Lab("kx", "local", "single", {"tester": tester}, inventory=tmp_path / "hosts.yml")
    check_requirements(validate(spec), lab)
    iperf3 = {**spec, "procedure": {"name": "tcp", "params": {"engine": "iperf3"}}}
    with pytest.raises(CampaignError, match="lab kx has no client node"):
        check_requirements(validate(iperf3), lab)


def test_a_baseline_rtt_of_few_milliseconds_is_flagged():
    # TRex's TCP clock ticks in whole milliseconds (hz 1000, tcp_ts_getticks): each RTT sample is whole ms, and the
    # flow dump truncates the smoothed RTT to whole ms. A 3 ms baseline is three steps of that: the result says how
    # coarse it is. 20 ms is enough steps.
    result, _ = run(engine(client=fake_astf.FakeAstfClient(rtt_s=3e-3)), tests=("download",))
    assert result["baseline_rtt_s"] == pytest.approx(3e-3)
    assert any(n.startswith("baseline RTT 3.000 ms is fewer than 10 steps of trex's RTT resolution (1 ms)")
               and "up to 33% error" in n for n in result["notes"]), result["notes"]
    result, _ = run(engine(client=fake_astf.FakeAstfClient(rtt_s=20e-3)), tests=("download",))
    assert not any("RTT resolution" in n for n in result["notes"])


def test_the_fake_flow_dump_takes_only_whole_millisecond_rtts():
    # Its smoothed RTT is exact only where TRex's would be: a path of whole milliseconds (or below 1 ms: 0).
    with pytest.raises(ValueError, match=r"rtt_s=0\.0025: allowed whole milliseconds, or below 1 ms"):
        fake_astf.FakeAstfClient(rtt_s=2.5e-3)


def test_a_path_below_the_flow_dumps_millisecond_says_trex_cannot_measure_its_rtt():
    # TRex's flow dump reads a smoothed RTT below 1 ms as 0, as it reads a flow not yet sampled: the baseline RTT
    # cannot be measured with engine trex there, and the error says so rather than that TRex sampled nothing.
    with pytest.raises(GeneratorError, match=r"^baseline RTT: trex reported no RTT of the sending side \(none "
                                             r"sampled, or below its resolution of 1 ms, which it reads as 0\)$"):
        run(engine(client=fake_astf.FakeAstfClient(rtt_s=200e-6)), tests=("download",))


def test_the_baseline_rtt_carries_the_engines_resolution_and_the_interval_it_allows():
    # Each of TRex's RTT samples counts whole ticks of its 1 ms TCP clock between a segment and its ACK: by where in a
    # tick the segment left, a path of r ms reads floor(r) or floor(r) + 1 ticks, so a sample (and the smoothed RTT,
    # a weighted mean of samples) lies within one tick of the true RTT either way. A 20 ms path gets no note (enough
    # steps), yet its figure is 20 +- 1 ms: the result must say so, not give a bare 0.020 s.
    result, _ = run(engine(client=fake_astf.FakeAstfClient(rtt_s=20e-3)), tests=("download",))
    assert result["baseline_rtt_s"] == pytest.approx(20e-3)
    assert result["baseline_rtt_resolution_s"] == pytest.approx(1e-3)
    low, high = result["baseline_rtt_interval_s"]
    assert (low, high) == (pytest.approx(19e-3), pytest.approx(21e-3))
    # The BDP from it is an interval too: the bottleneck bandwidth times each end (it was one number).
    bb = result["bottleneck_bandwidth_bps"]
    assert result["bdp_interval_bytes"] == [pytest.approx(bb * 19e-3 / 8), pytest.approx(bb * 21e-3 / 8)]
    assert "whole ticks" in result["baseline_rtt_method"] and "1 ms" in result["baseline_rtt_method"]


def test_trexs_cpu_util_is_both_ends_cpu_and_a_saturated_tester_bounds_its_tests():
    """TRex returns its data-plane cores' cpu_util with the counters (get_stats' global section): TRex plays both
    ends, so it is the sender's and the receiver's figure, and a saturated TRex makes the test tester-bound. A server
    that returns none leaves the CPU unknown and says so, never assumed idle."""
    limit = rfc6349.ENDPOINT_CPU_SATURATED * 100
    busy, idle = (limit + 100) / 2, limit / 2
    for cpu in (busy, idle):
        result, _ = run(engine(cpu_util=cpu), omit=1.0, tests=("download",))
        download = result["tests"][0]["directions"]["download"]
        assert download["sender_cpu_percent"] == download["receiver_cpu_percent"] == cpu
        assert bool(download["tester_bound_reasons"]) == result["tester_bound"] == (cpu == busy)
        assert "TRex's data-plane cores" in result["endpoint_cpu_method"]
    silent, _ = run(engine(), omit=1.0, tests=("download",))
    download = silent["tests"][0]["directions"]["download"]
    assert download["sender_cpu_percent"] is None
    assert download["sender_cpu_limit_percent"] is download["receiver_cpu_limit_percent"] is None
    assert not silent["tester_bound"] and any(n.startswith("endpoint CPU not judged") for n in silent["notes"])


def test_concurrent_tests_without_omit_are_each_measured_from_their_own_first_read():
    # The DSCP connections run as one profile each, started one after another; each start is an RPC that waits for
    # TRex to build and start the profile (here 0.2 s). Without omit, every profile's bytes were counted from its own
    # start but its time from after the last start: the first profile's 0.8 s more of transfer read as 8 % more
    # throughput than its path gave it, the DSCP classes compared unequal on an equal path. Each profile's bytes and
    # time now run between two reads of its counters.
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, setup_s=0.0, build_s=0.2)
    window = 16384  # window-limited: 65.5 Mbit/s per connection, five of them well below the link
    tests = [TcpTest(f"dscp {d}", "upload", 1, window, dscp=d, port=p, duration=10, omit=0.0)
             for d, p in zip((46, 10, 12, 14, 0), PORTS, strict=True)]
    results = engine(client=client).run(tests)
    for test, stats in zip(tests, results, strict=True):
        upload = stats["upload"]
        assert upload.good_bytes * 8 / upload.seconds == pytest.approx(window * 8 / RTT_S, rel=2e-3), test.name


def test_without_omit_the_measured_time_starts_once_every_connection_is_established():
    # TRex's clients open their connections once the profile runs; until the handshakes complete they carry nothing.
    # Without omit the first read came right after the start, so the set-up lay inside the measured time and lowered
    # the figure by its share of the duration (here 0.5 s of 10 s, 5 %). iperf3 starts its clock once its streams
    # are connected; the engine now reads first once every connection is established, as an omit's read comes after.
    setup = 0.5
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, setup_s=setup, handshake_s=setup)
    window, duration = 16384, 10.0  # window-limited: 65.5 Mbit/s per connection, four well below the link
    test = TcpTest("download", "download", 4, window, port=5201, duration=duration, omit=0.0)
    [stats] = engine(client=client).run([test])
    download = stats["download"]
    assert download.good_bytes * 8 / download.seconds == pytest.approx(4 * window * 8 / RTT_S, rel=2e-3)
    assert download.seconds == pytest.approx(duration, rel=1e-3)
    # A handshake that never completes is still refused, after the test's duration at the latest.
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S, setup_s=setup, handshake_s=setup, established=3)
    with pytest.raises(GeneratorError, match="had 3 of its 4 connections established"):
        engine(client=client).run([test])


def test_a_test_without_a_window_is_judged_against_trexs_default_buffers():
    # The stress test sets no window: iperf3's kernels then autotune theirs, but TRex gives each connection its
    # default 32 KiB socket buffers (tcp.rxbufsize/txbufsize). One connection of a 2 ms path then carries at most
    # 32 KiB x 8 / 2 ms = 131 Mbit/s whatever the link: judged against the link's (541 Mbit/s here) its transfer
    # time ratio read 4.1, a path four times slower than it should be, when the tester's own window held it down.
    result, _ = run(engine(), omit=1.0, tests=("stress",), stress_connections=1)
    stress = result["tests"][0]["directions"]["download"]
    window_limited = tcp_metrics.window_limited_throughput(fake_astf.DEFAULT_BUFFER_BYTES, result["baseline_rtt_s"])
    assert window_limited < result["max_achievable_tcp_throughput_bps"] / 2
    assert stress["max_achievable_tcp_throughput_bps"] == pytest.approx(window_limited)
    assert stress["transfer_time_ratio"] == pytest.approx(1.0, rel=0.01)
    assert any(n.startswith("stress: no window given") and "32768 bytes" in n for n in result["notes"]), result["notes"]


def test_a_window_below_trexs_smallest_buffer_is_refused_before_the_tcp_tests():
    # TRex refuses a tcp.rxbufsize/txbufsize below 1 KiB (trex-core src/astf/astf_db.cpp, 1K-1G). The reduced-window
    # tests give each of 4 connections 25 % of the BDP / 4: on a 1 ms path of 0.54 Gbit/s that is 4.2 KB, but on a
    # 100 Mbit/s one (the application note's example), 782 bytes: TRex then refused the profile after the download,
    # upload, bidirectional and single tests had run. As a too-large window, it is refused before the first.
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=1e-3)
    with pytest.raises(InvalidParameter) as err:
        run(engine(client=client), bottleneck_bandwidth=1e8, mtu=PATH_MTU)
    assert str(err.value).startswith("window_bytes (reduced 25%)=782: allowed >= 1024 bytes (TRex ASTF's smallest "
                                     "tcp.rxbufsize/txbufsize)") and "\n" not in str(err.value)
    assert [c for c in client.call_names() if c == "load_profile"] == ["load_profile"], "only the baseline RTT's"
    # A declared window is refused before any traffic.
    with pytest.raises(InvalidParameter, match=r"^window_bytes=512: allowed >= 1024 bytes"):
        rfc6349.check_engine(engine(), params(engine="trex", window_bytes=512), TrialSpec(1, 1))


def test_a_window_above_trexs_largest_buffer_is_refused_before_the_tcp_tests():
    # TRex refuses a tcp.rxbufsize/txbufsize above 1 GiB (trex-core src/astf/astf_db.cpp, 1K-1G) when it loads the
    # profile. The single-connection test's window is the whole BDP: on a 100 Gbit/s path of 100 ms, 1.25 GB, which
    # no kernel cap catches with TRex, so TRex refused it after the download, upload and bidirectional tests had run.
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=0.1)
    largest = fake_astf.BUFFER_RANGE[1]
    with pytest.raises(InvalidParameter) as err:
        run(engine(client=client), bottleneck_bandwidth=1e11, mtu=PATH_MTU)
    message = str(err.value)
    assert message.startswith("window_bytes (single)="), message
    assert f": allowed <= {largest} bytes (TRex ASTF's largest tcp.rxbufsize/txbufsize)" in message, message
    assert "kernel" not in message and "\n" not in message, "TRex refuses the window; no kernel shrinks it"
    assert [c for c in client.call_names() if c == "load_profile"] == ["load_profile"], "only the baseline RTT's"
    # A declared window is refused before any traffic; the largest TRex takes is not.
    with pytest.raises(InvalidParameter, match=rf"^window_bytes={largest + 1}: allowed <= {largest} bytes"):
        rfc6349.check_engine(engine(), params(engine="trex", window_bytes=largest + 1), TrialSpec(1, 1))
    rfc6349.check_engine(engine(), params(engine="trex", window_bytes=largest), TrialSpec(1, 1))


def test_the_result_says_trexs_timestamps_hold_the_transfer_time_ratio_above_1():
    # TRex sends RFC 1323 timestamps on every segment (tcp.do_rfc1323, on by default; both ends are TRex): 12 bytes
    # of TCP options within the MSS (trex-core src/44bsd/netinet/tcp_output.c: payload <= t_maxseg - optlen). The
    # maximum achievable TCP throughput counts MTU - 40 bytes of payload per frame (RFC 6349's formula), so a path
    # that delivers all it can reads a transfer time ratio of (MTU - 40) / (MTU - 52), not 1: the reader must know.
    result, _ = run(engine(), omit=1.0, tests=("download",))
    mss = tcp_metrics.mss_bytes(PATH_MTU)
    [note] = [n for n in result["notes"] if "timestamps" in n]
    assert f"{mss - 12}-byte" in note and f"{mss / (mss - 12):.4f}" in note, note


def test_without_omit_the_cpu_is_the_last_reads_not_the_one_before_the_handshakes():
    # TRex's cpu_util is low-pass filtered (trex-core src/utils/utl_cpuu.cpp, CCpuUtlCp::Update: 3/4 of the last
    # figure each update): read right after a profile started, it is the load of the seconds before, such as the
    # previous test's. Without omit that read is the first of the test's two: its CPU was the previous test's, and an
    # idle TRex read as saturated.
    limit = rfc6349.ENDPOINT_CPU_SATURATED * 100
    busy, idle = (limit + 100) / 2, limit / 2
    client = fake_astf.FakeAstfClient(link_bps=LINK_BPS, rtt_s=RTT_S)
    started = client.clock.now
    client.cpu_util = lambda now: busy if now < started + 1.0 else idle
    [stats] = engine(client=client).run([TcpTest("download", "download", 1, 1 << 20, port=5201, duration=5)])
    assert stats["download"].sender_cpu_percent == idle


def test_the_result_names_trexs_congestion_control_algorithm():
    # iperf3's results name the kernels' algorithm (cubic, bbr, ...); TRex's profile sets no tcp.cc_algo, so TRex runs
    # its default, NewReno (trex-core src/44bsd/tcp_var.h: 0 newreno, 1 cubic; tcp_subr.cpp CTcpTunableCtx sets 0).
    # The result said only "TRex ASTF default": a reader comparing engines could not tell which algorithm ran.
    result, _ = run(engine(), omit=1.0, tests=("download",))
    assert result["congestion_control"].split(" ")[0] == "newreno", result["congestion_control"]


def test_a_coarse_baseline_rtt_says_how_far_off_the_buffer_delays_can_be():
    # Buffer delay = (RTT under load - baseline RTT) / baseline RTT from two RTTs each within one step (1 ms) of the
    # truth: on a 3 ms baseline, a path of 3.9 ms under load read 3 ms (0 %) or 4 ms (33 %) for a true 30 %; off by up
    # to 2 steps / baseline (67 points), plus one step / baseline of the figure itself from the divisor. The note
    # named the BDP's error only, while the buffer delay, resting on the baseline RTT twice, can be further off.
    result, _ = run(engine(client=fake_astf.FakeAstfClient(rtt_s=3e-3)), tests=("download",))
    [note] = [n for n in result["notes"] if "RTT resolution" in n]
    step = 1e-3 / result["baseline_rtt_s"]
    assert f"buffer delay is off by up to {2 * step * 100:.0f} percentage points and {step:.0%} of itself" in note, note
