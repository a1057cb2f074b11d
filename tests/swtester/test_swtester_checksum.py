"""swtester's UDP and IPv4 header checksum checks at every frame size where its sums change shape: the counting
program, both kinds (tc ingress: in place with bpf_csum_diff; socket filter: from copies on its stack, CHECKSUM_CHUNK
bytes at a time), and the ring's udp_checksum_ok and ipv4_header_checksum_ok, run by the kernel on made-up frames
(BPF_PROG_TEST_RUN, no network). The lab tests (test_swtester_length.py) send frames of two sizes; a sum that went
wrong at another one (a last word of 1-3 bytes, the border of a copy or of a call) would count a frame the DUT
forwarded intact as bad_checksum, or a corrupted one as received. checksum_check: its random padding, checksum made
again, verifies; one changed byte of the addresses, the UDP header or the padding does not; over IPv4 a changed bit of
the header (its checksum as it was) counts in bad_ipv4_header_checksum, the TTL one less with the header checksum
updated (a router's) and a UDP checksum of zero verify. Needs CAP_BPF (the lab tests' root). ~4 s."""

import subprocess

import pytest

from labtools import REPO, run

pytestmark = pytest.mark.lab


def test_the_udp_checksum_check_is_exact_at_every_frame_size():
    run("make", "-s", "-C", "swtester", "checksum_check")
    result = subprocess.run([str(REPO / "swtester" / "checksum_check")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-1000:])
    assert result.stdout.splitlines()[-1].endswith(" frames checked, 0 errors"), result.stdout[-3000:]
