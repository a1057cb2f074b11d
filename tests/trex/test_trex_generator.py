"""The TRex generator against a fake client: calls, streams, rates, counters and latency in TRex's shape."""

import socket
import struct
import sys
import time
from pathlib import Path

import pytest

from trexlab.generators import create_generator
from trexlab.generators.trex import (
    CLIENT_SUBDIR,
    PROFILE,
    SSHTunnel,
    installed_trex_paths,
    load_client_api,
    profile_module,
)
from trexlab.lab import Lab, Node
from trexlab.trial import GeneratorError, TrialSpec

from fake_trex import FakeClient, install

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def api(monkeypatch):
    return install(monkeypatch)


def generator(api, warmup=False, **fake):
    client = FakeClient(**fake)
    gen = create_generator("trex", server="192.0.2.1", api=api, client=client, warmup=warmup)
    gen.clock = client.clock  # the fake server's time: it advances while the fake sends
    return gen, client


def streams_of(client, port):
    added = [kw for name, kw in client.calls if name == "add_streams" and kw["ports"] == [port]]
    return [s for kw in added for s in kw["streams"]]


def test_trial_order_is_reset_add_clear_start_wait_then_read(api):
    gen, client = generator(api)
    gen.run_trial(TrialSpec(offered_load=1000, duration=2))
    names = client.call_names()
    assert names[:2] == ["connect", "reset"]
    assert names[2:4] == ["add_streams", "add_streams"]
    assert names[4:7] == ["clear_stats", "start", "wait_on_traffic"]
    assert names.index("get_stats") > names.index("wait_on_traffic")
    start = dict(client.calls)["start"]
    assert start == {"ports": [0, 1], "mult": "1", "duration": 2, "force": True}
    assert dict(client.calls)["wait_on_traffic"]["rx_delay_ms"] == 2000  # the receive tail


def test_warmup_trial_runs_once_after_connect_and_is_discarded(api):
    gen, client = generator(api, warmup=True)
    gen.run_trial(TrialSpec(offered_load=1000, duration=1))
    gen.run_trial(TrialSpec(offered_load=1000, duration=1))
    assert client.call_names().count("connect") == 1
    assert client.call_names().count("start") == 3


def test_loss_free_bidirectional_trial_counts_per_pg_id(api):
    gen, client = generator(api)
    result = gen.run_trial(TrialSpec(offered_load=5000, duration=2, frame_size=(128, 128)))
    for name in ("forward", "reverse"):
        d = result.directions[name]
        assert (d.frames_intended, d.frames_sent, d.frames_received) == (10000, 10000, 10000)
        assert d.achieved_rate == pytest.approx(5000)
    assert result.loss_ratio == 0 and not result.stretched and result.notes == ()
    assert [s.flow_stats.pg_id for s in streams_of(client, 0)] == [1]
    assert [s.flow_stats.pg_id for s in streams_of(client, 1)] == [3]


def test_dut_loss_and_tester_drops_are_reported_apart(api):
    gen, client = generator(api, forwarded=0.9, rx_missed=7)
    d = gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions["forward"]
    # 100 frames lost in the DUT, 7 more in the tester's receive ring: port ierrors, which TRex sums
    # from rx_missed_errors too, so the xstat must not be added again.
    assert d.frames_lost == 107 and d.tester_drops == 7
    assert client.get_xstats(1)["rx_missed_errors"] == 7 and "get_xstats" not in client.call_names()[:-1]
    assert "reverse" not in gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions


def test_tester_below_offered_load_is_stretched_from_its_send_time(api):
    # TRex sends every frame of a stream it cannot keep up with, only later (2000 frames at 800 fps: 2.5 s).
    gen, _ = generator(api, ceiling=800)
    result = gen.run_trial(TrialSpec(offered_load=1000, duration=2, receive_tail=1))
    d = result.directions["forward"]
    assert d.frames_sent == 2000 and d.send_duration == pytest.approx(2.5)
    assert d.achieved_rate == pytest.approx(800) and result.stretched
    assert result.notes == ("sending took 2.500 s of wall time for a 2 s trial",)


def test_send_time_within_the_margin_is_the_trial_duration(api):
    gen, _ = generator(api, ceiling=2000 / 2.05)  # 50 ms late: how late TRex's end-of-traffic event may be
    result = gen.run_trial(TrialSpec(offered_load=1000, duration=2))
    assert result.directions["forward"].send_duration == 2 and not result.stretched


def test_a_frame_beyond_rate_times_duration_counts_as_intended(api):
    # TRex's continuous stream with a duration sometimes sends rate x duration + 1 frames.
    gen, _ = generator(api, extra_frame=True)
    d = gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions["forward"]
    assert (d.frames_intended, d.frames_sent, d.frames_lost) == (1001, 1001, 0)
    gen, _ = generator(api, extra_frame=True, forwarded=0.9995)  # 1000 of 1001 arrive: one frame lost
    d = gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions["forward"]
    assert (d.frames_received, d.frames_lost) == (1000, 1)


def test_frame_timeout_is_refused_before_any_traffic(api):
    gen, client = generator(api)
    with pytest.raises(ValueError, match=r"frame_timeout=0.5: allowed none with the trex generator"):
        gen.run_trial(TrialSpec(offered_load=100, duration=1, frame_timeout=0.5))
    assert "start" not in client.call_names()


def test_frame_sizes_per_port_for_siit_and_fcs_in_byte_counters(api):
    gen, client = generator(api)
    result = gen.run_trial(TrialSpec(offered_load=100, duration=1, ip_version=(6, 4), frame_size=(84, 64)))
    assert len(streams_of(client, 0)[0].packet.pkt_buffer) == 80  # 84 bytes on the wire minus the FCS
    assert len(streams_of(client, 1)[0].packet.pkt_buffer) == 60
    assert result.notes == ()  # tx_bytes / tx_pkts equals the frame size: the FCS is counted


def test_rfc4814_ports_use_32_bit_random_vars_written_with_a_16_bit_mask(api):
    gen, client = generator(api)
    gen.run_trial(TrialSpec(offered_load=100, duration=1, port_mode="rfc4814", destination_networks=4))
    vm = streams_of(client, 0)[0].packet.vm.instructions
    variables = {kw["name"]: kw for op, kw in vm if op == "var"}
    assert variables["source_port"] | {} == {"name": "source_port", "min_value": 1024, "max_value": 65535,
                                             "size": 4, "op": "random"}
    assert (variables["destination_port"]["min_value"], variables["destination_port"]["max_value"]) == (1, 49151)
    assert variables["network"]["max_value"] == 3
    masks = {kw["fv_name"]: kw for op, kw in vm if op == "write_mask"}
    assert masks["source_port"]["pkt_offset"] == 34 and masks["source_port"]["pkt_cast_size"] == 2
    assert masks["destination_port"]["pkt_offset"] == 36 and masks["destination_port"]["mask"] == 0xFFFF
    assert vm[-1][0] == "fix_chksum_hw"  # checksums after every rewrite


def test_fixed_ports_and_one_network_need_no_field_engine(api):
    gen, client = generator(api)
    gen.run_trial(TrialSpec(offered_load=100, duration=1))
    frame = streams_of(client, 0)[0].packet.pkt_buffer
    assert streams_of(client, 0)[0].packet.vm is None
    assert struct.unpack("!HH", frame[34:38]) == (1024, 1024)
    assert frame[30:34] == bytes([198, 19, 0, 2]) and frame[26:30] == bytes([198, 18, 0, 2])


def test_latency_percentiles_come_from_the_hdr_histogram(api):
    delays = tuple(range(1, 1001))  # 1..1000 us, once each per 1000 frames
    gen, client = generator(api, delays_us=delays)
    spec = TrialSpec(offered_load=10000, duration=1, latency_mode="tagged", latency_frames=1000)
    result = gen.run_trial(spec)
    pg_ids = [s.flow_stats.pg_id for s in streams_of(client, 1)]
    assert pg_ids == [3, 4]
    rates = [s.mode.pps for s in streams_of(client, 0)]
    assert rates == [9000, 1000]  # the latency stream is part of the offered load
    for name in ("forward", "reverse"):
        summary = result.directions[name].latency.summary()
        assert summary["samples"] == 1000
        assert summary["median"] == pytest.approx(500e-6, rel=1e-3)
        assert summary["p99_9"] == pytest.approx(999e-6, rel=1e-3)
        assert summary["max"] == pytest.approx(1000e-6, rel=1e-3)


def test_latency_without_hdrh_on_the_server_is_a_clear_error(api):
    gen, _ = generator(api, hdrh=False)
    with pytest.raises(GeneratorError, match="--hdrh"):
        gen.run_trial(TrialSpec(offered_load=100, duration=1, latency_mode="all"))


def test_ipv6_frames_below_84_bytes_are_refused_before_trex_is_asked(api):
    gen, client = generator(api)
    with pytest.raises(ValueError, match=r"frame_size\[0\]=78: allowed 84\.\.9018 bytes for IPv6"):
        gen.run_trial(TrialSpec(offered_load=100, duration=1, ip_version=(6, 6), frame_size=(78, 78),
                                latency_mode="all"))
    assert "start" not in client.call_names()


def test_server_gone_is_a_generator_error(api):
    gen, _ = generator(api, fail_at="get_stats")
    with pytest.raises(GeneratorError, match=r"TRex server 192.0.2.1:4501: .*not responding"):
        gen.run_trial(TrialSpec(offered_load=100, duration=1))


def test_bad_options_name_the_parameter(api):
    with pytest.raises(ValueError, match=r"sync_port=0: allowed"):
        create_generator("trex", server="x", api=api, client=FakeClient(), sync_port=0)
    with pytest.raises(ValueError, match=r"warmup='maybe': allowed true, false"):
        create_generator("trex", server="x", api=api, client=FakeClient(), warmup="maybe")


def test_describe_names_server_and_profile(api):
    gen, _ = generator(api)
    gen.run_trial(TrialSpec(offered_load=100, duration=1))
    facts = gen.describe()
    assert facts["server"] == "192.0.2.1:4501" and facts["server_version"]["version"] == "v3.08"
    assert facts["profile"] == "trex-profiles/stl_rfc2544_udp.py" and PROFILE.is_file()


def test_profile_frames_have_correct_checksums():
    module = profile_module()
    for version, size in ((4, 64), (6, 78), (4, 1518), (6, 9018)):
        frame = module.test_frame(1, version, size, network=5)
        assert len(frame) == size - 4
        if version == 4:
            assert module._checksum(frame[14:34]) == 0
            pseudo = frame[26:34] + struct.pack("!BBH", 0, 17, len(frame) - 34)
            assert frame[30:34] == bytes([198, 18, 5, 2])
            assert module._checksum(pseudo + frame[34:]) == 0
        else:
            pseudo = frame[22:54] + struct.pack("!IxxxB", len(frame) - 54, 17)
            assert module._checksum(pseudo + frame[54:]) == 0
            assert frame[38:54].hex() == "20010002000080050000000000000002"


def test_dont_fragment_sets_the_ipv4_df_bit_in_test_and_latency_frames(api):
    gen, client = generator(api)
    assert gen.supports_df  # RFC 6349's path MTU step may use it
    gen.run_trial(TrialSpec(offered_load=100, duration=1, dont_fragment=True, latency_mode="tagged", latency_frames=10))
    for stream in streams_of(client, 0):
        header = stream.packet.pkt_buffer[14:34]
        assert header[6] & 0x40 and profile_module()._checksum(header) == 0
    gen, client = generator(api)
    gen.run_trial(TrialSpec(offered_load=100, duration=1))
    assert not streams_of(client, 0)[0].packet.pkt_buffer[20] & 0x40


def lab_with_tester(**extra) -> Lab:
    tester = Node(name="tester", role="tester", ansible_host="2001:db8::3", extra=extra)
    return Lab(name="t", kind="static", topology="single", nodes={"tester": tester}, inventory=Path("hosts.yml"))


def test_server_on_the_tester_is_reached_through_ssh_unless_an_address_is_given(api):
    # TRex binds its RPC ports to IPv4 only; a lab's management network may be IPv6 only.
    lab = lab_with_tester()
    gen = create_generator("trex", lab=lab, api=api)
    assert gen.tunnel_node is lab.tester and gen.tunnel is None  # nothing started before the first trial
    assert gen.server == "tester:4501 (ssh tunnel to 2001:db8::3)"
    direct = create_generator("trex", lab=lab_with_tester(trexlab_trex_server="198.51.100.7"), api=api)
    assert direct.tunnel_node is None and direct.server == "198.51.100.7:4501"


def test_a_tunnel_that_cannot_come_up_is_a_generator_error_naming_the_node():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens here once the socket is closed
    node = Node(name="tester", role="tester", ansible_host="127.0.0.1", ansible_port=closed)
    started = time.monotonic()
    with pytest.raises(GeneratorError, match=r"ssh tunnel to tester \(127.0.0.1\) for TRex ports 4501, 4500 "
                                             r"did not come up: .*refused"):
        SSHTunnel(node, (4501, 4500))
    assert time.monotonic() - started < 10


def test_the_client_of_the_installed_trex_comes_first(tmp_path, monkeypatch):
    # Client and server must speak the same API major: the client shipped with the server wins.
    package = tmp_path / CLIENT_SUBDIR / "trex" / "stl"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "api.py").write_text("SHIPPED_WITH = 'the installed TRex'\n")
    monkeypatch.setenv("TREXLAB_TREX_PATH", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    for name in [n for n in sys.modules if n == "trex" or n.startswith("trex.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        assert load_client_api().SHIPPED_WITH == "the installed TRex"
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]


def test_installed_trex_is_looked_for_in_the_tester_nodes_own_tree(monkeypatch):
    monkeypatch.setenv("TREXLAB_TREX_PATH", "/srv/trex")
    node = Node(name="tester", role="tester", ansible_host="2001:db8::3", netns="tl-t-tester")
    lab = Lab(name="t", kind="local", topology="single", nodes={"tester": node}, inventory=Path("hosts.yml"))
    assert installed_trex_paths(lab) == ["/srv/trex", "/var/lib/trexlab/t/tester/trex/current", "/opt/trex/current"]
