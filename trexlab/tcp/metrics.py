"""RFC 6349 arithmetic: bandwidth-delay product, windows, and the metrics of a TCP throughput test.

Names follow RFC 6349 (section 3.3.1: BDP and window; section 4: transfer time
ratio 4.1, maximum achievable TCP throughput 4.1.1, TCP efficiency 4.2, buffer
delay 4.3) and its worked example in the application note
"TCP throughput testing" (Teledyne LeCroy Xena; not part of this repository): a 100 Mbit/s bottleneck (BB)
with a 10.211 ms round-trip time (RTT) has a BDP of 127,638 bytes, four
connections take 31,910 bytes of window each, and with a 1500-byte path MTU at
most 94,928,478.4 bit/s of TCP payload fit through it.

Byte counts: *good bytes* are payload bytes delivered to the receiving
application once (retransmissions excluded); *transmitted bytes* are payload
bytes the sender put on the wire, retransmissions included.
"""

from __future__ import annotations

import math

from trexlab.media import WIRE_OVERHEAD_BYTES
from trexlab.params import check_range

#: Ethernet header (14) and FCS (4) around an IP packet: frame size = MTU + 18.
ETHERNET_FRAME_OVERHEAD_BYTES = 18
#: What a frame costs on the wire beyond its MTU: preamble, SFD and inter-frame gap (20) plus header and FCS
#: (18) = 38 bytes (RFC 6349 section 4.1.1's Ethernet case and the application note: 1538 bytes per 1500-byte MTU).
#: Section 4.1.1's T3 example frames with PPP instead (8 bytes per frame); trexlab's links are Ethernet.
FRAME_OVERHEAD_BYTES = WIRE_OVERHEAD_BYTES + ETHERNET_FRAME_OVERHEAD_BYTES
#: IP and TCP headers without options, per IP version: MSS = MTU - 40 (IPv4) or MTU - 60 (IPv6).
TCP_IP_HEADER_BYTES = {4: 40, 6: 60}
#: The MTU's range: the smallest an IPv4 link must carry (RFC 791: 68 bytes) up to the largest IPv4 packet (its
#: 16-bit Total Length). The same number as params.MAX_PORT, not the same bound.
MIN_MTU, MAX_MTU = 68, 2**16 - 1


def bdp_bytes(bottleneck_bps: float, rtt_s: float) -> float:
    """Bandwidth-delay product in bytes: BB x RTT / 8 (100 Mbit/s x 10.211 ms = 127,637.5 bytes)."""
    check_range("bottleneck_bandwidth_bps", bottleneck_bps, 0, low_open=True)
    check_range("rtt_s", rtt_s, 0, low_open=True)
    return bottleneck_bps * rtt_s / 8


def window_per_connection(total_window_bytes: float, connections: int) -> int:
    """The send/receive window each of n connections needs to fill the pipe together, rounded up.

    The application note rounds the BDP to whole bytes first (127,638 / 4 = 31,909.5 -> 31,910).
    """
    check_range("connections", connections, 1, integer=True)
    return math.ceil(round(total_window_bytes) / connections)


def mss_bytes(mtu: int, ip_version: int = 4) -> int:
    """Maximum segment size for a path MTU: MTU - 40 (IPv4) or MTU - 60 (IPv6), TCP options aside."""
    return mtu - TCP_IP_HEADER_BYTES[ip_version]


def max_frame_rate(bottleneck_bps: float, mtu: int) -> float:
    """Full-size frames per second through the bottleneck: BB / ((MTU + 38) x 8)."""
    return bottleneck_bps / ((mtu + FRAME_OVERHEAD_BYTES) * 8)


def max_achievable_tcp_throughput(bottleneck_bps: float, mtu: int, ip_version: int = 4) -> float:
    """Maximum achievable TCP throughput in bit/s: full-size frames per second times the MSS in bits (RFC 6349
    section 4.1.1).

    100 Mbit/s with a 1500-byte MTU: 8127.44 frames/s x 1460 bytes x 8 = 94,928,478.5 bit/s (the note
    prints 94,928,478.4, rounding the frame rate on the way).
    """
    check_range("bottleneck_bandwidth_bps", bottleneck_bps, 0, low_open=True)
    check_range("mtu", mtu, MIN_MTU, MAX_MTU, integer=True)
    return max_frame_rate(bottleneck_bps, mtu) * mss_bytes(mtu, ip_version) * 8


def window_limited_throughput(window_bytes: float, rtt_s: float) -> float:
    """The most a window can carry per round trip, in bit/s: window x 8 / RTT (RFC 6349 section 3.3.1)."""
    check_range("rtt_s", rtt_s, 0, low_open=True)
    return window_bytes * 8 / rtt_s


def actual_tcp_throughput(good_bytes: float, transfer_s: float) -> float:
    """Good bytes over the transfer duration, in bit/s (116,994,380 bytes in 10 s = 93,595,504 bit/s)."""
    check_range("transfer_s", transfer_s, 0, low_open=True)
    return good_bytes * 8 / transfer_s


def transfer_time_ratio(actual_bps: float, ideal_bps: float) -> float:
    """TCP transfer time ratio: actual transfer time / ideal transfer time = ideal throughput / actual.

    The note's example: 94,928,478.4 / 93,595,504 = 1.01424. Above 1: slower than the path allows.
    """
    if actual_bps <= 0:
        return math.inf
    return ideal_bps / actual_bps


def tcp_efficiency_percent(transmitted_bytes: float, retransmitted_bytes: float) -> float:
    """(transmitted - retransmitted) / transmitted x 100: the share of bytes sent only once."""
    if transmitted_bytes <= 0:
        return math.nan
    return (transmitted_bytes - retransmitted_bytes) / transmitted_bytes * 100


def buffer_delay_percent(rtt_under_load_s: float, baseline_rtt_s: float) -> float:
    """(average RTT during the transfer - baseline RTT) / baseline RTT x 100: how much queues grew."""
    check_range("baseline_rtt_s", baseline_rtt_s, 0, low_open=True)
    return (rtt_under_load_s - baseline_rtt_s) / baseline_rtt_s * 100


def bottleneck_from_frame_rate(frames_per_s: float, frame_size: int) -> float:
    """Layer-1 bit/s of a loss-free frame rate (the note reads BB as the RFC 2544 result's L1 rate)."""
    return frames_per_s * (frame_size + WIRE_OVERHEAD_BYTES) * 8
