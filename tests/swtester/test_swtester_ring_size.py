"""swtester's receive ring is sized by the bytes it keeps of each frame. The ring alone (--receive-method ring) keeps
whole frames, so that the receiver verifies their checksums; its 64 MiB, sized for the SNAP_LEN bytes every ring kept
before, held 8 times fewer seconds of 1518 B frames than before from 100 kfps on (0.26 s instead of 2.05 s; 0.13 s
instead of 1.02 s at 200 kfps): a receiver held up that long found it full, and the frames the kernel dropped counted
as the DUT's loss. ring_check (its own build of swtester.c, no privileges) prints the ring rx_ring_geometry sets up
for a rate and frame size and counts the seconds of frames it holds (a block handed over at the block timeout or when
full, whichever comes first): at every rate a whole-frame ring holds what a SNAP_LEN ring holds, within the most
a ring may take (rx_ring_limit: its share of the machine's memory); the largest frames' ring takes that most. ~1 s
(the build)."""

import json
import os
import subprocess

import pytest
from test_swtester_cli import preloaded, refused_setsockopt

from labtools import REPO, run

RATES = (1_000, 10_000, 20_000, 100_000, 146_000, 200_000, 500_000, 1_000_000, 2_000_000)


@pytest.fixture(scope="module")
def ring_check():
    run("make", "-s", "-C", "swtester", "ring_check")
    return str(REPO / "swtester" / "ring_check")


def rings(ring_check, cases):
    """(blocks, block bytes, seconds, seconds of a SNAP_LEN ring, the most bytes a ring may take, blocks and block
    bytes of a SNAP_LEN ring) per (rate, frame size, directions)."""
    lines = "".join(f"{rate} {size} {directions}\n" for rate, size, directions in cases)
    out = subprocess.run([ring_check], input=lines, capture_output=True, text=True, timeout=30, check=True).stdout
    return [(int(b), int(size), float(s), float(snap), int(limit), int(snap_b), int(snap_size))
            for b, size, s, snap, limit, snap_b, snap_size in (line.split() for line in out.splitlines())]


@pytest.mark.parametrize("directions", [1, 2])
@pytest.mark.parametrize("size", [64, 128, 1518])
def test_the_ring_holds_as_many_seconds_of_frames_whatever_their_size(ring_check, size, directions):
    for rate, (blocks, block, seconds, snap, limit, *_) in zip(RATES, rings(ring_check, [(r, size, directions)
                                                                                      for r in RATES]), strict=True):
        assert blocks * block <= limit, (rate, blocks, block, limit)
        # As many seconds, or all a ring may take (a machine whose share is less than the 1518 B ring needs).
        assert seconds >= snap * (1 - 1e-9) or blocks * block > limit - block, \
            f"{size} B at {rate} fps: the ring holds {seconds} s, not {snap} s, in {blocks} blocks of {block} B"


def test_the_ring_grows_with_the_frames_kept_up_to_its_limit(ring_check):
    (small, small_block, *_), (mid, mid_block, *_), (jumbo, jumbo_block, seconds, snap, limit, *_) = rings(
        ring_check, [(100_000, 64, 1), (100_000, 1518, 1), (100_000, 9018, 1)])
    assert small * small_block < mid * mid_block <= jumbo * jumbo_block
    # 9018 B frames need more than a ring may take: it takes all it may, and holds fewer seconds (disclosed in
    # swtester.c and the README).
    assert seconds < snap and jumbo * jumbo_block > limit - jumbo_block, (jumbo, jumbo_block, limit)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for AF_PACKET sockets and network namespaces")
def test_where_the_kernel_refuses_the_filter_the_ring_is_sized_for_the_whole_frames_it_keeps(ring_check, tmp_path):
    """auto (a trial that times frames: no tcx) where the kernel refuses the counting filter (SO_ATTACH_BPF, refused
    by a preloaded shim): its ring keeps whole frames, but was set up before the refusal, sized for SNAP_LEN bytes of
    each: 1024 blocks of 64 KiB at 30 kfps of 1518 B, 1.37 s of frames instead of 2.05 s (0.41 s at 100 kfps). It is
    the ring ring_check gives whole frames, and the report says how many seconds of frames it holds (ring_seconds) as
    ring_check counts them. 30 frames on a veth pair in a namespace of its own; ~1 s (the build)."""
    preload = preloaded(tmp_path, refused_setsockopt("SOL_SOCKET", "SO_ATTACH_BPF", "EPERM"))
    rate, size = 30_000, 1518
    [(blocks, block, seconds, _, _, snap_blocks, snap_block)] = rings(ring_check, [(rate, size, 1)])
    assert (blocks, block) != (snap_blocks, snap_block), "a rate at which whole frames need another ring"
    setup = "ip link add name p0 type veth peer name p1 && ip link set p0 up && ip link set p1 up && exec \"$@\""
    argv = ["unshare", "-n", "sh", "-c", setup, "sh", "env", preload, str(REPO / "swtester" / "swtester"),
            "--port0", "p0", "--port1", "p1", "--mac0", "02:00:00:00:00:01", "--mac1", "02:00:00:00:00:02",
            "--peer0", "02:00:00:00:00:02", "--peer1", "02:00:00:00:00:01", "--directions", "forward",
            "--size0", str(size), "--size1", str(size), "--rate", str(rate), "--duration", "0.001", "--timeout", "1",
            "--tail", "0"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert result.returncode == 0, result.stderr
    forward = json.loads(result.stdout)["directions"]["forward"]
    assert forward["receive_method"] == "ring"
    assert forward["receive_method_fallback"] == "SO_ATTACH_BPF refused: Operation not permitted"
    assert (forward["ring_blocks"], forward["ring_block_bytes"]) == (blocks, block), forward
    assert forward["ring_seconds"] == pytest.approx(seconds, abs=1e-6), "the seconds it holds, as ring_check counts"
    assert forward["sent"] == forward["received"] == forward["intended"], forward
