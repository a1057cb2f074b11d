"""The TRex generator against a fake client: calls, streams, rates, counters and latency in TRex's shape."""

import struct

import pytest

from trexlab.generators import create_generator
from trexlab.generators.trex import PROFILE, profile_module
from trexlab.trial import GeneratorError, TrialSpec

from fake_trex import FakeClient, install

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def api(monkeypatch):
    return install(monkeypatch)


def generator(api, warmup=False, **fake):
    client = FakeClient(**fake)
    gen = create_generator("trex", server="192.0.2.1", api=api, client=client, warmup=warmup)
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
    gen, _ = generator(api, forwarded=0.9, rx_missed=7)
    d = gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions["forward"]
    assert d.frames_lost == 100 and d.tester_drops == 7
    assert "reverse" not in gen.run_trial(TrialSpec(offered_load=1000, duration=1, directions="forward")).directions


def test_tester_below_offered_load_is_stretched_from_measured_opackets(api):
    gen, _ = generator(api, ceiling=800)
    result = gen.run_trial(TrialSpec(offered_load=1000, duration=2))
    d = result.directions["forward"]
    assert d.frames_sent == 1600 and d.achieved_rate == pytest.approx(800)
    assert result.stretched and d.frames_lost == 400


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


def test_ipv6_latency_frames_below_82_bytes_are_refused(api):
    gen, client = generator(api)
    with pytest.raises(ValueError, match=r"frame_size=78: allowed >= 82"):
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
