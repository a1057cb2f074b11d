"""A received frame the DUT changed is not the frame sent, however whole its headers and test payload are.
RFC 2544 (section 10) asks the tester to check each received frame's length: swtester's receivers looked at the
headers and the test payload alone, so a DUT that pads or truncates every frame showed no loss. They now count such a
frame in `wrong_length`, disclosed, and not as received. Over IPv6 a UDP checksum of zero makes a datagram every
receiver discards (RFC 8200 section 8.1): TAYGA writes one for about one frame in 65,536 it translates to IPv6, and
swtester counted those as received; they now count in `zero_checksum`. An IPv6 atomic fragment (a Fragment header,
offset 0 and More clear: what RFC 6145 translators sent, RFC 8021 deprecates) was neither received nor said: it
counts in `atomic_fragments`. IPv4 options the frame sent had not (no forwarding adds any) counted as received where
the DUT kept the frame's length (cutting the UDP payload by as much), every receive method alike, and as wrong_length
("padded or cut") where it did not: they count in `ipv4_options`. An IPv4 header checksum that does not verify (a TTL
or address rewritten without it updated) counted as received: it counts in `bad_ipv4_header_checksum`.

The DUT is a forwarder of the test's own (FORWARDER, in the DUT's namespace): each forward frame that arrives on q0
leaves q1 (towards p1) changed: IPv4 frames padded by PAD bytes or, every other frame, cut to TRUNCATED bytes
(headers and test payload kept), or with IPv4 options; IPv6 frames with their UDP checksum set to zero, or behind a
Fragment header, or in IPv6 fragments; IPv4 frames after test frames of another trial. Every receive method (the eBPF
program counting in the kernel at tc ingress and in the receive socket's filter, the ring). Each run's report also
checks that the generator reads every count swtester reports and sums each changed frame into the nftables
cross-check. ~0.5 s per build, method and change."""

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
# What a change may call (each on the frame from its EtherType; IPv4 without options, nothing after the UDP
# datagram). with_ipv4_options: the frame with a Router Alert option (RFC 2113, 4 bytes) in its IPv4 header, its
# checksums made again; keep_length: the UDP payload's last 4 bytes (zero: the test payload is its first 16) cut, so
# that the frame keeps the length sent.
HELPERS = """
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

def with_udp_checksum(f):
    # The frame (IPv4 without options, or IPv6 without extension headers) with its UDP checksum made again over the
    # addresses it has now (a translator's new ones, RFC 7915).
    start = 22 if f[:2] == b"\\x08\\x00" else 42
    udp = bytearray(f[start:])
    udp[6:8] = bytes(2)
    udp[6:8] = checksum(f[start - (8 if start == 22 else 32):start] + bytes([0, 17]) + bytes(udp[4:6]) + bytes(udp))
    udp[6:8] = udp[6:8] if any(udp[6:8]) else b"\\xff\\xff"  # 0 is no checksum (RFC 768)
    return f[:start] + bytes(udp)

def with_ipv4_source(f):
    # The IPv4 frame from another source address (its last byte changed), its header checksum made again; its UDP
    # checksum as it was.
    ip = bytearray(f[2:22])
    ip[15] ^= 1
    ip[10:12] = bytes(2)
    ip[10:12] = checksum(bytes(ip))
    return f[:2] + bytes(ip) + f[22:]

def with_ttl_decremented(f):
    # The IPv4 frame one hop further (its TTL one less), its header checksum as it was: what a router or translator
    # that forgets to update it (RFC 1624) forwards.
    return f[:10] + bytes([f[10] - 1]) + f[11:]

def with_last_byte_changed(f):
    # A byte of the padding after the test payload, the frame's last, changed: what a corrupting DUT may do.
    return f[:-1] + bytes([f[-1] ^ 1])

def ipv6_fragments(f, n, first):
    # An IPv6 frame (next header UDP) as the DUT fragments it: the first fragment (offset 0, More set) with the
    # datagram's first `first` bytes (a multiple of 8: the header and test payload), the later one (offset `first`,
    # More clear) with the rest; and a later fragment whose data is the whole datagram again: what a receiver that
    # took no notice of the offset would count as a test frame. Identification n. Other frames unchanged.
    if f[8] != 17:
        return [f]
    def fragment(offset_and_more, data):  # the offset in 8-byte units above 3 bits: `first` itself
        return (f[:6] + (8 + len(data)).to_bytes(2, "big") + bytes([44]) + f[9:42] + bytes([17, 0])
                + offset_and_more.to_bytes(2, "big") + n.to_bytes(4, "big") + data)
    datagram = f[42:]
    return [fragment(1, datagram[:first]), fragment(first, datagram[first:]), fragment(first, datagram)]

def with_foreign(f, n):
    # An IPv4 test frame (test payload at 30: seq 4 bytes, send time 8, trial id 2, flags 1, magic 1), after three
    # test frames that are not this trial's (another trial's, the other direction's, a sequence number beyond the
    # trial's) and a UDP frame that is no test frame (no magic). Other frames unchanged.
    if len(f) < 46:
        return [f]
    def changed(at, value):
        return f[:30 + at] + value + f[30 + at + len(value):]
    return [changed(12, ((int.from_bytes(f[42:44], "big") + 1) % 65536).to_bytes(2, "big")),
            changed(14, bytes([f[44] ^ 1])), changed(0, (int.from_bytes(f[30:34], "big") | 1 << 31).to_bytes(4, "big")),
            changed(15, bytes(1)), f]
"""
# Forwards the frames of one IP version received on q0 (not sent by it) to q1, addressed to port 1's MAC and changed
# by CHANGE (the frame after its MAC addresses, and its number: a frame, or a list of frames sent in turn); prints
# "ready" once both sockets are bound.
FORWARDER = HELPERS + f"""
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
    out = change(frame[12:], n)
    for part in out if isinstance(out, list) else [out]:
        tx.send(head + part)
    n += 1
"""
#: The integers in swtester's report of a direction that count no test frame of the trial by what became of it: of
#: another trial or direction, the receive ring's own, the sender's pacing and threads.
NOT_FRAME_COUNTS = {"foreign", "ring_frames", "ring_blocks", "ring_block_bytes", "max_lag_ns", "start_lag_ns",
                    "max_burst", "slips", "slip_ns", "threads", "send_waited_ns"}
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
    # A UDP checksum that does not verify: every other frame from another source address (the last byte of the IPv6
    # header's, at 10-25) without its checksum updated, the others with a byte of their padding changed.
    "bad_checksum": (6, "lambda f, n: f[:25] + bytes([f[25] ^ 1]) + f[26:] if n % 2 else with_last_byte_changed(f)"),
    # An IPv4 header checksum that does not verify: every other frame with its TTL decremented without it updated,
    # the others from another source address (the last byte of the IPv4 header's, at 14-17) with neither checksum
    # updated (the header's is verified first, as a receiving host's IP layer does before its UDP).
    "bad_ipv4_header_checksum": (4, "lambda f, n: with_ttl_decremented(f) if n % 2 else f[:17] + bytes([f[17] ^ 1])"
                                    " + f[18:]"),
}


def forwarded(binary, tester_and_dut, method, version, change, *options):
    """The forward direction of swtester's report of a trial (--receive-method method, IP version each way) through
    the FORWARDER that changes each frame by change; options: more of swtester's."""
    tester, dut = tester_and_dut
    forwarder = subprocess.Popen(["timeout", "30", "ip", "netns", "exec", dut, sys.executable, "-c", FORWARDER,
                                  "0800" if version == 4 else "86dd", change], stdout=subprocess.PIPE, text=True)
    try:
        assert forwarder.stdout.readline() == "ready\n"
        result = run("timeout", "30", "ip", "netns", "exec", tester, binary, "--port0", "p0", "--port1", "p1",
                     "--mac0", TESTER_MAC[0], "--mac1", TESTER_MAC[1], "--peer0", DUT_MAC[0], "--peer1", DUT_MAC[1],
                     "--version0", str(version), "--version1", str(version), "--rate", str(RATE), "--duration",
                     str(DURATION), "--tail", str(TAIL), "--directions", "forward", "--receive-method", method,
                     "--cpus", str(min(os.sched_getaffinity(0))), *options)
    finally:
        forwarder.terminate()  # timeout passes it on to the forwarder
        forwarder.wait()
    forward = json.loads(result.stdout)["directions"]["forward"]
    assert forward["receive_method"] == method and forward["sent"] == round(RATE * DURATION)
    return forward


@pytest.mark.parametrize("count", list(CHANGE))
@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_a_frame_the_dut_changed_counts_as_such_not_as_received(binary, tester_and_dut, method, count):
    version, change = CHANGE[count]
    forward = forwarded(binary, tester_and_dut, method, version, change, "--size0", str(FRAME), "--size1", str(FRAME))
    intended = round(RATE * DURATION)
    assert forward["received"] == 0, f"{forward['received']} changed frames counted as received"
    assert forward[count] == intended and forward["foreign"] == 0
    # Each reached p1 whole, once: the nftables cross-check's sum (generators/software.py) must hold it.
    assert frames_arrived(forward) == intended, f"the nftables cross-check leaves {count} out"
    # Every count swtester reports is one the generator reads: a new count of changed frames left out of
    # CHANGED_COUNTS (its note, the cross-check) fails here.
    read = {*REPORT_COUNTS, *REPORT_TAGS, *(changed.key for changed in CHANGED_COUNTS), *NOT_FRAME_COUNTS}
    assert {key for key, value in forward.items() if type(value) is int} <= read


#: IPv4 frames longer than the counting program's copy of CHECKSUM_CHUNK (400) bytes, twice, of an odd length (the
#: checksum's last word holds 3 bytes).
LONG_FRAME = 1001


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_the_udp_checksum_is_verified_over_the_addresses_the_frame_arrived_with_and_all_of_it(binary, tester_and_dut,
                                                                                             method):
    """swtester counted a test frame whose UDP checksum does not verify as received: a DUT that rewrites addresses and
    updates the checksum wrongly or not at all (a SIIT translator must, RFC 7915), or corrupts a byte, showed no loss
    although every receiving host discards such a frame. Here, in turn: a frame from another source address with
    its checksum made again for it (received: the pseudo-header is the one the frame arrived with), one with a
    checksum of zero (none over IPv4, RFC 768: received), one from another source address with its checksum as sent
    and one with the last byte of its padding changed (bad_checksum, not received)."""
    change = ("lambda f, n: [with_udp_checksum(with_ipv4_source(f)), f[:28] + bytes(2) + f[30:], with_ipv4_source(f), "
              "with_last_byte_changed(f)][n % 4]")
    forward = forwarded(binary, tester_and_dut, method, 4, change, "--size0", str(LONG_FRAME), "--size1",
                        str(LONG_FRAME))
    intended = round(RATE * DURATION)
    bad = sum(1 for n in range(intended) if n % 4 >= 2)
    assert forward["bad_checksum"] == bad and forward["received"] == intended - bad, forward
    others = {key: forward[key] for key in ("foreign", "duplicates", "reordered", "late",
                                            *(c.key for c in CHANGED_COUNTS if c.key != "bad_checksum"))}
    assert not any(others.values()), others


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_frames_of_another_size_each_way_arrive_whole(binary, tester_and_dut, method):
    """A trial may send frames of another size each way (TrialSpec.frame_size per port): the receivers compared a
    frame's length with the receiving port's own frame size, not with the size it was sent with, so every frame of
    such a trial counted as wrong_length and lost. Here the DUT forwards each frame unchanged."""
    forward = forwarded(binary, tester_and_dut, method, 4, "lambda f, n: f", "--size0", str(FRAME), "--size1",
                        str(2 * FRAME))
    assert forward["wrong_length"] == 0 and forward["received"] == forward["sent"] == round(RATE * DURATION), forward


#: Bytes of the UDP datagram in the first fragment ipv6_fragments makes: its header and test payload, 8-byte units.
FIRST_FRAGMENT = 8 + 16


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_an_ipv6_fragmented_test_frame_counts_as_a_fragment_and_a_later_fragment_as_nothing(binary, tester_and_dut,
                                                                                          method):
    """A test frame the DUT delivers in IPv6 fragments (a SIIT translator's IPv6 side, whose MTU is smaller than the
    IPv4 frame it translates): its first fragment (offset 0, More set) carries the UDP header and the test payload
    and counts in `fragments`, not as received, as the IPv4 first fragment does (test_swtester_fragments.py); a later
    fragment (an offset) is no test frame, whatever its data: each frame here comes with one whose data is the whole
    datagram again, which a receiver that took no notice of the offset would count as received or as an atomic
    fragment. Every receive method alike."""
    forward = forwarded(binary, tester_and_dut, method, 6, f"lambda f, n: ipv6_fragments(f, n, {FIRST_FRAGMENT})",
                        "--size0", str(FRAME), "--size1", str(FRAME))
    intended = round(RATE * DURATION)
    assert forward["fragments"] == intended, forward
    assert forward["received"] == 0, f"{forward['received']} fragments counted as received"
    others = {key: forward[key] for key in ("foreign", "duplicates", "reordered", "late",
                                            *(changed.key for changed in CHANGED_COUNTS if changed.key != "fragments"))}
    assert not any(others.values()), others
    # No frame reached p1 whole: the nftables cross-check expects none.
    assert frames_arrived(forward) == 0


@pytest.mark.parametrize("method", ["tcx", "bpf", "ring"])
def test_frames_of_another_trial_count_as_foreign_and_leave_the_trial_exact(binary, tester_and_dut, method):
    """Test frames on the tester's port that are not this trial's (another trial's, the other direction's, beyond
    this trial's sequence numbers: a trial before it whose frames are still arriving, another tester on the same
    link) count in `foreign`, in the kernel (tcx, bpf) as in the ring, and no frame of the trial is lost, duplicated
    or reordered by them; a UDP frame that is no test frame counts nowhere. Each test frame here comes after one of
    each kind."""
    forward = forwarded(binary, tester_and_dut, method, 4, "with_foreign", "--size0", str(FRAME), "--size1",
                        str(FRAME))
    intended = round(RATE * DURATION)
    assert forward["received"] == intended and forward["foreign"] == 3 * intended, forward
    others = {key: forward[key] for key in ("duplicates", "reordered", "late",
                                            *(changed.key for changed in CHANGED_COUNTS))}
    assert not any(others.values()), others
