"""A test frame the DUT fragmented is not a frame received: RFC 2544 counts the frames a DUT forwards, and its test
equipment checks that each received frame has the length sent (section 10); a fragment has not. swtester's receivers
counted an IPv4 first fragment (it carries the UDP header and the test payload) as the frame received whole, so a DUT
that fragments every frame showed no loss. They now count it in `fragments`, disclosed, and not as received.

Two namespaces of their own: the tester's ports p0 and p1, and a router between them whose route towards p1 has an
MTU of ROUTE_MTU (the route's, not the link's: frames from p1 still reach the router whole). Forward frames of FRAME
bytes leave the router as two fragments each (Don't Fragment clear); reverse frames are forwarded whole, the control
that the router forwards at all. Every receive method (the eBPF program counting in the kernel at tc ingress and in
the receive socket's filter, the ring). ~1.5 s per build. A Linux router fragments no IPv6 packet (RFC 8200 section
5): the IPv6 fragments are test_swtester_length.py's, from a forwarder that makes them."""

import json
import os

import pytest

from labtools import run

pytestmark = pytest.mark.lab

RATE, DURATION, TAIL = 1000, 0.2, 0.2
FRAME = 1518  # bytes with FCS: an IP packet of 1500
ROUTE_MTU = 1000
TESTER_MAC = ("02:00:00:00:f0:00", "02:00:00:00:f0:01")
DUT_MAC = ("02:00:00:00:f1:00", "02:00:00:00:f1:01")  # the router's


@pytest.fixture(scope="module")
def namespaces(tester_and_dut):
    tester, router = tester_and_dut
    run("ip", "netns", "exec", router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    # Port 0's side 198.18.0.0/24, port 1's 198.19.0.0/24 (swtester's default addresses, .2 each).
    run("ip", "-n", router, "addr", "add", "198.18.0.1/24", "dev", "q0")
    run("ip", "-n", router, "addr", "add", "198.19.0.1/24", "dev", "q1")
    run("ip", "-n", router, "route", "replace", "198.19.0.0/24", "dev", "q1", "src", "198.19.0.1", "mtu", "lock",
        str(ROUTE_MTU))
    for i, address in ((0, "198.18.0.2"), (1, "198.19.0.2")):
        run("ip", "-n", router, "neigh", "replace", address, "lladdr", TESTER_MAC[i], "dev", f"q{i}", "nud",
            "permanent")
    return tester


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_a_fragmented_test_frame_counts_as_a_fragment_not_as_received(binary, namespaces, method):
    result = run("timeout", "30", "ip", "netns", "exec", namespaces, binary, "--port0", "p0", "--port1", "p1",
                 "--mac0", TESTER_MAC[0], "--mac1", TESTER_MAC[1], "--peer0", DUT_MAC[0], "--peer1", DUT_MAC[1],
                 "--size0", str(FRAME), "--size1", str(FRAME), "--rate", str(RATE), "--duration", str(DURATION),
                 "--tail", str(TAIL), "--receive-method", method, "--cpus", str(min(os.sched_getaffinity(0))))
    report = json.loads(result.stdout)["directions"]
    intended = round(RATE * DURATION)
    forward, reverse = report["forward"], report["reverse"]
    assert forward["receive_method"] == reverse["receive_method"] == method
    assert forward["sent"] == reverse["sent"] == intended
    assert reverse["received"] == intended, "the router forwards whole frames"
    assert forward["received"] == 0, f"{forward['received']} fragmented frames counted as received"
    assert forward["fragments"] == intended and reverse["fragments"] == 0 and forward["foreign"] == 0
