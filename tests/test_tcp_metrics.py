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
