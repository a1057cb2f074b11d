"""swtester's receive ring is sized by the bytes it keeps of each frame. The ring alone (--receive-method ring) keeps
whole frames, so that the receiver verifies their checksums; its 64 MiB, sized for the SNAP_LEN bytes every ring kept
before, held 8 times fewer seconds of 1518 B frames than before from 100 kfps on (0.26 s instead of 2.05 s; 0.13 s
instead of 1.02 s at 200 kfps): a receiver held up that long found it full, and the frames the kernel dropped counted
as the DUT's loss. ring_check (its own build of swtester.c, no privileges) prints the ring rx_ring_geometry sets up
for a rate and frame size and counts the seconds of frames it holds (a block handed over at the block timeout or when
full, whichever comes first): at every rate a whole-frame ring holds what a SNAP_LEN ring holds, within the most
a ring may take (rx_ring_limit: its share of the machine's memory); the largest frames' ring takes that most. ~1 s
(the build)."""

import subprocess

import pytest

from labtools import REPO, run

RATES = (1_000, 10_000, 20_000, 100_000, 146_000, 200_000, 500_000, 1_000_000, 2_000_000)


@pytest.fixture(scope="module")
def ring_check():
    run("make", "-s", "-C", "swtester", "ring_check")
    return str(REPO / "swtester" / "ring_check")


def rings(ring_check, cases):
    """(blocks, block bytes, seconds, seconds of a SNAP_LEN ring, the most bytes a ring may take) per (rate, frame
    size, directions)."""
    lines = "".join(f"{rate} {size} {directions}\n" for rate, size, directions in cases)
    out = subprocess.run([ring_check], input=lines, capture_output=True, text=True, timeout=30, check=True).stdout
    return [(int(b), int(size), float(s), float(snap), int(limit))
            for b, size, s, snap, limit in (line.split() for line in out.splitlines())]


@pytest.mark.parametrize("directions", [1, 2])
@pytest.mark.parametrize("size", [64, 128, 1518])
def test_the_ring_holds_as_many_seconds_of_frames_whatever_their_size(ring_check, size, directions):
    for rate, (blocks, block, seconds, snap, limit) in zip(RATES, rings(ring_check, [(r, size, directions)
                                                                                      for r in RATES]), strict=True):
        assert blocks * block <= limit, (rate, blocks, block, limit)
        # As many seconds, or all a ring may take (a machine whose share is less than the 1518 B ring needs).
        assert seconds >= snap * (1 - 1e-9) or blocks * block > limit - block, \
            f"{size} B at {rate} fps: the ring holds {seconds} s, not {snap} s, in {blocks} blocks of {block} B"


def test_the_ring_grows_with_the_frames_kept_up_to_its_limit(ring_check):
    (small, small_block, *_), (mid, mid_block, *_), (jumbo, jumbo_block, seconds, snap, limit) = rings(
        ring_check, [(100_000, 64, 1), (100_000, 1518, 1), (100_000, 9018, 1)])
    assert small * small_block < mid * mid_block <= jumbo * jumbo_block
    # 9018 B frames need more than a ring may take: it takes all it may, and holds fewer seconds (disclosed in
    # swtester.c and the README).
    assert seconds < snap and jumbo * jumbo_block > limit - jumbo_block, (jumbo, jumbo_block, limit)
