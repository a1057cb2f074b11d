"""A received frame of another length than the receiving port's frame size is not the frame sent: RFC 2544
(section 10) asks the tester to check each received frame's length. swtester's receivers looked at the headers and
the test payload alone, so a DUT that pads or truncates every frame showed no loss. They now count such a frame in
`wrong_length`, disclosed, and not as received.

The DUT is a forwarder of the test's own (FORWARDER, in the DUT's namespace): each forward frame that arrives on q0
leaves q1 (towards p1) padded by PAD bytes or, every other frame, cut to TRUNCATED bytes (headers and test payload
kept). Both receive methods (the eBPF filter counting in the kernel, the ring). ~1 s per build."""

import json
import os
import subprocess
import sys

import pytest

from labtools import run

pytestmark = pytest.mark.lab

RATE, DURATION, TAIL = 1000, 0.1, 0.2
FRAME = 128  # bytes with FCS
PAD, TRUNCATED = 8, 100  # bytes: TRUNCATED holds the headers and test payload (14 + 20 + 8 + 16)
TESTER_MAC = ("02:00:00:00:e0:00", "02:00:00:00:e0:01")
DUT_MAC = ("02:00:00:00:e1:00", "02:00:00:00:e1:01")
# Forwards IPv4 frames received on q0 (not sent by it) to q1, addressed to port 1's MAC, each other one padded or
# truncated; prints "ready" once both sockets are bound.
FORWARDER = f"""
import socket, sys
rx, tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800)), socket.socket(socket.AF_PACKET,
    socket.SOCK_RAW)
rx.bind(("q0", 0x0800)); tx.bind(("q1", 0))
print("ready", flush=True)
n = 0
while True:
    frame, address = rx.recvfrom(9018)
    if address[2] == socket.PACKET_OUTGOING: continue
    head = bytes.fromhex("{TESTER_MAC[1].replace(':', '')}{DUT_MAC[1].replace(':', '')}")
    tx.send(head + (frame[12:] + bytes({PAD}) if n % 2 else frame[12:{TRUNCATED}]))
    n += 1
"""


@pytest.mark.parametrize("method", ["bpf", "ring"])
def test_a_frame_of_another_length_counts_as_wrong_length_not_as_received(binary, tester_and_dut, method):
    tester, dut = tester_and_dut
    forwarder = subprocess.Popen(["timeout", "30", "ip", "netns", "exec", dut, sys.executable, "-c", FORWARDER],
                                 stdout=subprocess.PIPE, text=True)
    try:
        assert forwarder.stdout.readline() == "ready\n"
        result = run("timeout", "30", "ip", "netns", "exec", tester, binary, "--port0", "p0", "--port1", "p1",
                     "--mac0", TESTER_MAC[0], "--mac1", TESTER_MAC[1], "--peer0", DUT_MAC[0], "--peer1", DUT_MAC[1],
                     "--size0", str(FRAME), "--size1", str(FRAME), "--rate", str(RATE), "--duration", str(DURATION),
                     "--tail", str(TAIL), "--directions", "forward", "--receive-method", method,
                     "--cpus", str(min(os.sched_getaffinity(0))))
    finally:
        forwarder.terminate()  # timeout passes it on to the forwarder
        forwarder.wait()
    forward = json.loads(result.stdout)["directions"]["forward"]
    intended = round(RATE * DURATION)
    assert forward["receive_method"] == method and forward["sent"] == intended
    assert forward["received"] == 0, f"{forward['received']} padded or truncated frames counted as received"
    assert forward["wrong_length"] == intended and forward["foreign"] == 0
