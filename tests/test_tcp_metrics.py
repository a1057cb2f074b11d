"""RFC 6349 arithmetic against the worked example of the application note "TCP throughput testing" (Xena)."""

import math

import pytest

from trexlab.params import InvalidParameter
from trexlab.tcp import metrics as m


def test_bdp_of_100_mbps_and_10_211_ms_is_127_638_bytes():
    assert m.bdp_bytes(100e6, 10.211e-3) == pytest.approx(127_637.5)
    assert round(m.bdp_bytes(100e6, 10.211e-3)) == 127_638


def test_four_connections_take_31_910_bytes_of_window_each():
    assert m.window_per_connection(m.bdp_bytes(100e6, 10.211e-3), 4) == 31_910  # 127,638 / 4 = 31,909.5
    assert m.window_per_connection(127_638, 1) == 127_638


def test_a_1500_byte_mtu_frame_costs_1538_bytes_on_the_wire():
    assert m.FRAME_OVERHEAD_BYTES == 38
    assert m.max_frame_rate(100e6, 1500) == pytest.approx(8127.44, abs=0.005)
    assert m.mss_bytes(1500) == 1460 and m.mss_bytes(1500, 6) == 1440


def test_maximum_achievable_tcp_throughput_of_100_mbps_with_1500_mtu():
    # The note prints 94,928,478.4 bit/s; 1e8 * 1460 / 1538 = 94,928,478.54 (it rounded on the way).
    assert m.max_achievable_tcp_throughput(100e6, 1500) == pytest.approx(94_928_478.4, abs=0.2)


def test_actual_throughput_and_transfer_time_ratio_of_the_download_example():
    actual = m.actual_tcp_throughput(116_994_380, 10)
    assert actual == pytest.approx(93_595_504)
    assert m.transfer_time_ratio(actual, 94_928_478.4) == pytest.approx(1.01424, abs=5e-6)


def test_efficiency_is_100_percent_when_good_bytes_equal_transmitted_bytes():
    assert m.tcp_efficiency_percent(116_994_380, 0) == 100.0
    assert m.tcp_efficiency_percent(1000, 10) == pytest.approx(99.0)


def test_buffer_delay_and_window_limit():
    assert m.buffer_delay_percent(12.5e-3, 10e-3) == pytest.approx(25.0)
    # A 31,910-byte window over 10.211 ms carries at most 25 Mbit/s, whatever the link.
    assert m.window_limited_throughput(31_910, 10.211e-3) == pytest.approx(25_000_489.7, rel=1e-6)


def test_bottleneck_from_the_rfc2544_result_is_its_layer1_rate():
    # The note's BB test: 8,127 fps of 1518-byte frames = 99.99 Mbit/s at layer 1.
    assert m.bottleneck_from_frame_rate(8127, 1518) == pytest.approx(99.99e6, rel=1e-4)


# RFC 6349's own worked examples (the note's are above).


@pytest.mark.parametrize(("bottleneck_bps", "rtt_s", "bdp"), [
    (1.536e6, 20e-3, 3_840), (44.21e6, 25e-3, 138_156.25), (100e6, 2e-3, 25_000), (1e9, 1e-3, 125_000),
    (10e9, 0.05e-3, 62_500)])
def test_bdp_of_rfc_6349s_links_t1_to_10_gbps(bottleneck_bps, rtt_s, bdp):
    """Section 3.3.1's table: the minimum window is the BDP, RTT x BB / 8 (a T1 of 1.536 Mbit/s at 20 ms: 3.84 KB;
    a T3 of 44.21 Mbit/s at 25 ms: 138.16 KB)."""
    assert m.bdp_bytes(bottleneck_bps, rtt_s) == pytest.approx(bdp)


def test_a_64_kb_window_holds_a_t3_at_25_ms_to_20_97_mbps():
    """Section 3.3.1: a window below the BDP caps the throughput at window / RTT. Without window scaling a T3 path of
    25 ms (BDP 138.16 KB) carries at most 64 KB per round trip, about half its 42.8 Mbit/s; twice that window still
    falls short of it."""
    assert m.window_limited_throughput(64 * 1024, 25e-3) == pytest.approx(20.97e6, abs=0.005e6)
    assert m.window_limited_throughput(128 * 1024, 25e-3) == pytest.approx(41.94e6, abs=0.005e6)


def test_five_connections_of_at_most_64_kb_fill_500_mbps_at_5_ms():
    """Section 5.1's table: 500 Mbit/s at 5 ms is a BDP of 312.5 KB, which 20 connections of 16 KB, 10 of 32 KB, 5
    of 64 KB or 3 of 128 KB windows fill: the window each needs stays within its cap."""
    bdp = m.bdp_bytes(500e6, 5e-3)
    assert bdp == pytest.approx(312_500)
    for cap_kb, connections in ((16, 20), (32, 10), (64, 5), (128, 3)):
        assert m.window_per_connection(bdp, connections) <= cap_kb * 1024
        assert m.window_per_connection(bdp, connections - 1) > cap_kb * 1024


@pytest.mark.parametrize(("link_bps", "fps"), [(100e6, 8127), (1e9, 81_274), (10e9, 812_743)])
def test_ethernet_carries_rfc_6349s_full_size_frames_per_second(link_bps, fps):
    """Section 4.1.1: 1538 bytes per 1500-byte MTU frame (MTU, Ethernet header 14, CRC32 4, IFG 12, preamble 7, SFD
    1); the RFC prints the whole frames per second, and 8127 x 1460 x 8 = 94.9 Mbit/s of TCP payload."""
    assert math.floor(m.max_frame_rate(link_bps, 1500)) == fps
    assert m.max_achievable_tcp_throughput(100e6, 1500) == pytest.approx(94.9e6, abs=0.05e6)


def test_efficiency_counts_retransmitted_bytes_in_the_transmitted_ones():
    """Section 4.2: 100,000 bytes sent and 2,000 of them sent again: (102,000 - 2,000) / 102,000 = 98.039 %.
    A direction's transmitted bytes are its sent bytes plus those retransmitted."""
    from trexlab.tcp.iperf import DirectionStats

    sent = DirectionStats("upload", good_bytes=100_000, sent_bytes=100_000, retransmits=2, mss=1000, seconds=1)
    assert (sent.transmitted_bytes, sent.retransmitted_bytes) == (102_000, 2_000)
    assert m.tcp_efficiency_percent(sent.transmitted_bytes, sent.retransmitted_bytes) == pytest.approx(98.039,
                                                                                                        abs=5e-4)


def test_buffer_delay_of_rfc_6349s_example():
    """Section 4.3: a baseline RTT of 25 ms and an average of 32 ms during the transfer: 28 %."""
    assert m.buffer_delay_percent(32e-3, 25e-3) == pytest.approx(28.0)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: m.bdp_bytes(0, 0.01), "bottleneck_bandwidth_bps"), (lambda: m.bdp_bytes(1e6, -1), "rtt_s"),
    (lambda: m.window_per_connection(1000, 0), "connections"),
    (lambda: m.max_achievable_tcp_throughput(1e8, 40), "mtu"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(InvalidParameter, match=name):
        call()


def test_no_transfer_is_an_infinite_ratio_not_a_crash():
    assert math.isinf(m.transfer_time_ratio(0, 1e6)) and math.isnan(m.tcp_efficiency_percent(0, 0))
