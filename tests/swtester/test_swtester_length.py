"""A received frame the DUT changed is not the frame sent, however whole its headers and test payload are.
RFC 2544 (section 10) asks the tester to check each received frame's length: swtester's receivers looked at the
headers and the test payload alone, so a DUT that pads or truncates every frame showed no loss. They now count such a
frame in `wrong_length`, disclosed, and not as received. Over IPv6 a UDP checksum of zero makes a datagram every
receiver discards (RFC 8200 section 8.1): TAYGA writes one for about one frame in 65,536 it translates to IPv6, and
swtester counted those as received; they now count in `zero_checksum`. An IPv6 atomic fragment (a Fragment header,
offset 0 and More clear: what RFC 6145 translators sent, RFC 8021 deprecates) was neither received nor said: it
counts in `atomic_fragments`. IPv4 options the frame sent had not (no forwarding adds any) counted as received where
the DUT kept the frame's length (cutting the UDP payload by as much), every receive method alike, and as wrong_length
("padded or cut") where it did not: they count in `ipv4_options`.

The DUT is a forwarder of the test's own (FORWARDER, in the DUT's namespace): each forward frame that arrives on q0
leaves q1 (towards p1) changed: IPv4 frames padded by PAD bytes or, every other frame, cut to TRUNCATED bytes
(headers and test payload kept), or with IPv4 options; IPv6 frames with their UDP checksum set to zero, or behind a
Fragment header. Every receive method (the eBPF program counting in the kernel at tc ingress and in the receive
socket's filter, the ring). Each run's report also checks that the generator reads every count swtester reports and
sums each changed frame into the nftables cross-check. ~1.5 s per build and change."""

import json
import os
import subprocess
import sys

import pytest

from trexlab.generators.software import CHANGED_COUNTS, REPORT_COUNTS, REPORT_TAGS, frames_arrived

from labtools import run

pytestmark = pytest.mark.lab

RATE, DURATION, TAIL = 1000, 0.1, 0.2
FRAME = 128  # bytes with FCS
PAD, TRUNCATED = 8, 100  # bytes: TRUNCATED holds the headers and test payload (14 + 20 + 8 + 16)
TESTER_MAC = ("02:00:00:00:e0:00", "02:00:00:00:e0:01")
DUT_MAC = ("02:00:00:00:e1:00", "02:00:00:00:e1:01")
# What CHANGE may call: the frame (from its EtherType; IPv4 without options, nothing after the UDP datagram) with a
# Router Alert option (RFC 2113, 4 bytes) in its IPv4 header, its checksums made again; keep_length: the UDP
# payload's last 4 bytes (zero: the test payload is its first 16) cut, so that the frame keeps the length sent.
OPTIONS = """
def checksum(data):
    data += bytes(len(data) % 2)
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s & 0xffff).to_bytes(2, "big")

def with_ipv4_options(f, keep_length):
    ip, udp = bytearray(f[2:22] + bytes([0x94, 4, 0, 0])), bytearray(f[22:len(f) - 4 if keep_length else len(f)])
    ip[0], ip[2:4], ip[10:12] = 0x46, (len(ip) + len(udp)).to_bytes(2, "big"), bytes(2)
    ip[10:12] = checksum(bytes(ip))
    udp[4:6], udp[6:8] = len(udp).to_bytes(2, "big"), bytes(2)
    udp[6:8] = checksum(bytes(ip[12:20]) + bytes([0, 17]) + bytes(udp[4:6]) + bytes(udp))
    udp[6:8] = udp[6:8] if any(udp[6:8]) else b"\\xff\\xff"  # 0 is no checksum (RFC 768)
    return f[:2] + bytes(ip) + bytes(udp)
"""
# Forwards the frames of one IP version received on q0 (not sent by it) to q1, addressed to port 1's MAC and changed
# by CHANGE (the frame after its MAC addresses, and its number); prints "ready" once both sockets are bound.
FORWARDER = OPTIONS + f"""
import socket, sys
ethertype = int(sys.argv[1], 16)
change = eval(sys.argv[2])
rx, tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype)), socket.socket(socket.AF_PACKET,
    socket.SOCK_RAW)
rx.bind(("q0", ethertype)); tx.bind(("q1", 0))
print("ready", flush=True)
n = 0
while True:
    frame, address = rx.recvfrom(9018)
    if address[2] == socket.PACKET_OUTGOING: continue
    head = bytes.fromhex("{TESTER_MAC[1].replace(':', '')}{DUT_MAC[1].replace(':', '')}")
    tx.send(head + change(frame[12:], n))
    n += 1
"""
#: The integers in swtester's report of a direction that count no test frame of the trial by what became of it: of
#: another trial or direction, the receive ring's own, the sender's pacing and threads.
NOT_FRAME_COUNTS = {"foreign", "ring_frames", "ring_blocks", "ring_block_bytes", "max_lag_ns", "max_burst", "slips",
                    "slip_ns", "threads", "send_waited_ns"}
#: What the DUT does to each frame (the frame from its EtherType, its number) for each count: the IP version sent.
CHANGE = {
    "wrong_length": (4, f"lambda f, n: f + bytes({PAD}) if n % 2 else f[:{TRUNCATED - 12}]"),
    # The UDP checksum: bytes 6-7 of the UDP header, after the EtherType (2) and the IPv6 header (40).
    "zero_checksum": (6, "lambda f, n: f[:48] + bytes(2) + f[50:]"),
    # A Fragment header (next header UDP, offset 0, More clear, identification n) after the IPv6 header, whose
    # payload length grows by its 8 bytes and whose next header becomes 44.
    "atomic_fragments": (6, "lambda f, n: f[:6] + (int.from_bytes(f[6:8], 'big') + 8).to_bytes(2, 'big') + bytes([44])"
                            " + f[9:42] + bytes([17, 0, 0, 0]) + n.to_bytes(4, 'big') + f[42:]"),
    # IPv4 options the frame sent had not: every other frame 4 bytes longer, the others of the length sent.
    "ipv4_options": (4, "lambda f, n: with_ipv4_options(f, n % 2 == 0)"),
}


@pytest.mark.parametrize("count", list(CHANGE))
@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_a_frame_the_dut_changed_counts_as_such_not_as_received(binary, tester_and_dut, method, count):
    tester, dut = tester_and_dut
    version, change = CHANGE[count]
    ethertype = "0800" if version == 4 else "86dd"
    forwarder = subprocess.Popen(["timeout", "30", "ip", "netns", "exec", dut, sys.executable, "-c", FORWARDER,
                                  ethertype, change], stdout=subprocess.PIPE, text=True)
    try:
        assert forwarder.stdout.readline() == "ready\n"
        result = run("timeout", "30", "ip", "netns", "exec", tester, binary, "--port0", "p0", "--port1", "p1",
                     "--mac0", TESTER_MAC[0], "--mac1", TESTER_MAC[1], "--peer0", DUT_MAC[0], "--peer1", DUT_MAC[1],
                     "--version0", str(version), "--version1", str(version),
                     "--size0", str(FRAME), "--size1", str(FRAME), "--rate", str(RATE), "--duration", str(DURATION),
                     "--tail", str(TAIL), "--directions", "forward", "--receive-method", method,
                     "--cpus", str(min(os.sched_getaffinity(0))))
    finally:
        forwarder.terminate()  # timeout passes it on to the forwarder
        forwarder.wait()
    forward = json.loads(result.stdout)["directions"]["forward"]
    intended = round(RATE * DURATION)
    assert forward["receive_method"] == method and forward["sent"] == intended
    assert forward["received"] == 0, f"{forward['received']} changed frames counted as received"
    assert forward[count] == intended and forward["foreign"] == 0
    # Each reached p1 whole, once: the nftables cross-check's sum (generators/software.py) must hold it.
    assert frames_arrived(forward) == intended, f"the nftables cross-check leaves {count} out"
    # Every count swtester reports is one the generator reads: a new count of changed frames left out of
    # CHANGED_COUNTS (its note, the cross-check) fails here.
    read = {*REPORT_COUNTS, *REPORT_TAGS, *(changed.key for changed in CHANGED_COUNTS), *NOT_FRAME_COUNTS}
    assert {key for key, value in forward.items() if type(value) is int} <= read


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_frames_of_another_size_each_way_arrive_whole(binary, tester_and_dut, method):
    """A trial may send frames of another size each way (TrialSpec.frame_size per port): the receivers compared a
    frame's length with the receiving port's own frame size, not with the size it was sent with, so every frame of
    such a trial counted as wrong_length and lost. Here the DUT forwards each frame unchanged."""
    tester, dut = tester_and_dut
    forwarder = subprocess.Popen(["timeout", "30", "ip", "netns", "exec", dut, sys.executable, "-c", FORWARDER,
                                  "0800", "lambda f, n: f"], stdout=subprocess.PIPE, text=True)
    try:
        assert forwarder.stdout.readline() == "ready\n"
        result = run("timeout", "30", "ip", "netns", "exec", tester, binary, "--port0", "p0", "--port1", "p1",
                     "--mac0", TESTER_MAC[0], "--mac1", TESTER_MAC[1], "--peer0", DUT_MAC[0], "--peer1", DUT_MAC[1],
                     "--size0", str(FRAME), "--size1", str(2 * FRAME), "--rate", str(RATE), "--duration",
                     str(DURATION), "--tail", str(TAIL), "--directions", "forward", "--receive-method", method,
                     "--cpus", str(min(os.sched_getaffinity(0))))
    finally:
        forwarder.terminate()
        forwarder.wait()
    forward = json.loads(result.stdout)["directions"]["forward"]
    assert forward["wrong_length"] == 0 and forward["received"] == forward["sent"] == round(RATE * DURATION), forward
