"""swtester's pacing (swtester/pacing.h) on made-up clocks: a sender woken every pacing quantum, stalled once. A stall
of up to the catch-up limit is caught up exactly; a longer one is caught up by a burst of the limit and slips the
schedule by the excess only, so the trial loses no more time than the burst could not bring back. No lab needed:
pacing_check drives pacing_take() as swtester's sender does, with wake-up times read from stdin."""

import json
import subprocess

import pytest

from labtools import REPO, run

QUANTUM_NS = 50_000  # swtester's PACING_QUANTUM_NS: a sender above one frame per quantum wakes once per quantum
STALL_AT_NS = 5_000_000


@pytest.fixture(scope="module")
def pacing_check():
    run("make", "-s", "-C", "swtester", "pacing_check")
    return str(REPO / "swtester" / "pacing_check")


def paced(binary: str, rate: float, frames: int, stall_ns: int) -> dict:
    """The sender woken every quantum from the start, except during `stall_ns` from STALL_AT_NS on, until long after
    its last frame is due."""
    end = int(frames / rate * 1e9) + stall_ns + 10_000_000
    wakes = [t for t in range(0, end, QUANTUM_NS) if not STALL_AT_NS < t < STALL_AT_NS + stall_ns]
    out = subprocess.run([binary, repr(rate), str(frames)], input="\n".join(map(str, wakes)), capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return json.loads(out)


def first_send_after_stall(report: dict, stall_ns: int) -> tuple[int, int, int]:
    return next(s for s in report["sends"] if s[0] >= STALL_AT_NS + stall_ns)


@pytest.mark.parametrize("rate", [10_000.0, 100_000.0, 1_000_000.0])
def test_a_stall_within_the_catch_up_limit_is_caught_up_without_a_slip(pacing_check, rate):
    limit = 512
    stall_ns = int((limit - 12) / rate * 1e9)  # a few frames under the limit come due meanwhile
    frames = int(rate * 0.03) + limit
    report = paced(pacing_check, rate, frames, stall_ns)
    assert report["catch_up_limit"] == limit and report["sent"] == frames
    assert report["slips"] == report["slip_ns"] == 0
    assert report["max_lag_ns"] >= stall_ns - QUANTUM_NS - 1e9 / rate  # the stall, less its first frame interval
    assert 1 < report["max_burst"] <= limit
    # Every frame went out at its due time or at the first wake-up after it, never before it.
    for at, first, count in report["sends"]:
        assert (first + count - 1) / rate * 1e9 <= at + 1


@pytest.mark.parametrize("rate", [10_000.0, 100_000.0, 1_000_000.0])
def test_a_longer_stall_is_caught_up_by_the_limit_and_slips_only_the_excess(pacing_check, rate):
    """At 100 kfps the limit is 5.1 ms: the 5.3-6.7 ms stalls of this project's 2-vCPU machines slipped their whole
    length before (0.2 % of a 3 s trial each), and slip 0.2-1.6 ms now."""
    limit, ns_per_frame = 512, 1e9 / rate
    stall_ns = int(1.5 * limit * ns_per_frame)
    frames = int(rate * 0.03) + 2 * limit
    report = paced(pacing_check, rate, frames, stall_ns)
    assert report["sent"] == frames and report["slips"] == 1
    at, first, count = first_send_after_stall(report, stall_ns)
    lag = at - first * ns_per_frame  # of the first frame the stall held back
    assert count == report["max_burst"] == limit, "the burst after the stall is the catch-up limit, no more"
    assert report["slip_ns"] == pytest.approx(lag - (limit - 1) * ns_per_frame, abs=2), "slipped by the excess only"
    assert report["max_lag_ns"] == pytest.approx(lag, abs=1)
    # After the slip each frame is due slip_ns later than before, and goes out no earlier than that.
    for at, first, count in report["sends"]:
        if at >= STALL_AT_NS + stall_ns:
            assert (first + count - 1) * ns_per_frame + report["slip_ns"] <= at + 2
    # The sender's span (and so its rate) is the schedule's plus the slip: the last frame went out at its due time
    # moved by the slip, rounded up to the next wake-up.
    last_at = report["sends"][-1][0]
    due = (frames - 1) * ns_per_frame + report["slip_ns"]
    assert due <= last_at + 2 < due + QUANTUM_NS + 2


def test_the_start_lag_is_the_first_frames_and_no_later_stall_changes_it(pacing_check):
    """A sender first woken LATE after its schedule's start (as one released late is) sends the frames due by then
    back to back: start_lag_ns is that lag, max_lag_ns the larger one of a later stall, which leaves it as it was."""
    rate, frames, late, stall_ns = 100_000.0, 1_000, 300_000, 2_000_000
    ns_per_frame = 1e9 / rate
    wakes = [late, *range(late + QUANTUM_NS, STALL_AT_NS, QUANTUM_NS),
             *range(STALL_AT_NS + stall_ns, int(frames * ns_per_frame) + stall_ns + 10_000_000, QUANTUM_NS)]
    out = subprocess.run([pacing_check, repr(rate), str(frames)], input="\n".join(map(str, wakes)),
                         capture_output=True, text=True, check=True, timeout=60).stdout
    report = json.loads(out)
    assert report["sends"][0] == [late, 0, int(late / ns_per_frame) + 1], "every frame due by then, at once"
    assert report["start_lag_ns"] == late
    assert report["max_lag_ns"] >= stall_ns - QUANTUM_NS > late


@pytest.mark.parametrize("args, named", [
    ([], "usage"), (["1000"], "usage"),
    # Mistyped numbers, which atof and atoll read as other numbers (1x as 1, abc as 0, 1.5 frames as 1).
    (["1x", "10"], "RATE=1x"), (["abc", "10"], "RATE=abc"), (["nan", "10"], "RATE=nan"), (["0", "10"], "RATE=0"),
    (["1000", "10x"], "FRAMES=10x"), (["1000", "1.5"], "FRAMES=1.5"), (["1000", "-1"], "FRAMES=-1"),
    (["1000", "0"], "FRAMES=0")])
def test_bad_arguments_are_one_line_naming_the_argument_and_exit_2(pacing_check, args, named):
    result = subprocess.run([pacing_check, *args], input="0\n", capture_output=True, text=True, timeout=10)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and named in result.stderr, result.stderr


def test_a_mistyped_wake_up_time_is_refused_not_the_end_of_the_input(pacing_check):
    """scanf stopped at the first token that was no number: the wake-ups after it were dropped without a word."""
    result = subprocess.run([pacing_check, "1000", "10"], input="0\n1000000x\n2000000\n", capture_output=True,
                            text=True, timeout=10)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "1000000x" in result.stderr, result.stderr
