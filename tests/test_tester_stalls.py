"""A tester stalled by the machine (issue 16): swtester's pacing report in the trial contract, and how procedures
treat a trial the tester did not offer at the load (run again, never a pass). No lab: swtester's JSON is faked
here; tests/swtester/test_swtester_pacing.py stalls the real one."""

import dataclasses
import json
from pathlib import Path

import pytest

from trexlab.generators import create_generator
from trexlab.generators.software import OVERRUN_NOTE, trial_from_report
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import STRETCHED_RETRIES, RunContext, TrialRunner
from trexlab.trial import TrialSpec

from labtools import notes_but_steal

SPEC = TrialSpec(offered_load=40_000, duration=1.0, directions="forward", receive_tail=0.5)


def report(slip_ns: int = 0, max_lag_ns: int = 30_000, slips: int = 0, max_burst: int = 2) -> dict:
    """swtester's JSON for a 1 s forward trial at 40 kfps, all frames received; its send time grows by the slip."""
    forward = {"intended": 40_000, "sent": 40_000, "received": 40_000, "late": 0, "duplicates": 0, "reordered": 0,
               "tester_drops": 0, "foreign": 0, "send_duration": 0.999975 + slip_ns * 1e-9, "send_cpu": 0.3,
               "valid": slip_ns == 0, "tags_sent": 0, "tags_received": 0, "tags_lost_or_late": 0,
               "max_lag_ns": max_lag_ns, "max_burst": max_burst, "slips": slips, "slip_ns": slip_ns, "latency": None}
    return {"tester": "swtester", "version": "0.1", "trial_id": 7, "rate": 40_000.0, "duration": 1.0,
            "overrun_tolerance": 0.001, "catch_up_limit": 64, "directions": {"forward": forward}}


def test_a_paced_trial_discloses_its_lag_and_bursts_and_is_valid():
    result = trial_from_report(SPEC, report())
    forward = result.directions["forward"]
    assert forward.send_lag_max == pytest.approx(30e-6) and forward.send_burst_max == 2 and forward.send_slip == 0
    assert not result.stretched and result.notes == ()
    logged = result.to_dict()["directions"]["forward"]
    assert (logged["send_lag_max"], logged["send_burst_max"], logged["send_slip"]) == (pytest.approx(30e-6), 2, 0.0)


def test_a_stall_of_100_ms_is_disclosed_and_stretches_the_trial():
    result = trial_from_report(SPEC, report(slip_ns=100_000_000, max_lag_ns=100_100_000, slips=1, max_burst=64))
    forward = result.directions["forward"]
    assert forward.send_slip == pytest.approx(0.1) and forward.send_lag_max == pytest.approx(0.1001)
    assert forward.frames_lost == 0 and forward.unsent == 0, "every frame was sent and received"
    assert result.stretched and not result.valid
    assert result.notes == ("forward: the sender fell more than 64 frames behind its schedule 1 time(s) (longest "
                            "lag 100.1 ms): rather than a catch-up burst above 64 frames it moved its schedule 100 ms "
                            "later, more than the overrun tolerance: the trial is stretched",)


def test_a_slip_within_the_overrun_tolerance_is_disclosed_in_the_fields_and_valid():
    result = trial_from_report(SPEC, report(slip_ns=500_000, max_lag_ns=2_100_000, slips=1, max_burst=64))
    assert not result.stretched and result.notes == () and result.directions["forward"].send_slip == 5e-4


def test_a_slip_stretches_the_trial_even_when_the_send_time_hides_it():
    """The contract reads the slip itself, not only the send time it lengthens."""
    stalled = trial_from_report(SPEC, report(slip_ns=50_000_000, slips=1))
    forward = stalled.directions["forward"]
    hidden = dataclasses.replace(stalled, directions={"forward": dataclasses.replace(forward, send_duration=1.0)})
    assert hidden.stretched


#: swtester's report of a looped trial in the VM lab's TCG guest (QEMU emulating the CPU, Debian 12's kernel 6.1, one
#: vCPU carrying both directions' threads; a veth pair, 2,000 fps for 1 s, 64 B; swtester as of 27363e4, whose
#: send_duration ends as the last frame leaves): every frame sent and received, no slip, and the reverse sender's
#: last frame left 4.5 ms after it was due (the forward one's 0.39 ms). 3 of 25 such trials were stretched there.
TCG_LATE_END = json.loads((Path(__file__).parent / "data" / "swtester" / "tcg-guest-reverse-last-frame-late.json")
                          .read_text())
TCG_SPEC = TrialSpec(offered_load=2000, duration=1.0, directions="bidirectional", receive_tail=1.0)


def test_a_trial_whose_last_frame_left_late_is_stretched_and_its_note_says_why():
    """Before, such a trial was stretched (TrialResult.valid false) with no note at all: nothing said which direction
    overran, by how much, or that every frame had gone out."""
    result = trial_from_report(TCG_SPEC, TCG_LATE_END)
    assert result.stretched and not result.valid and result.frames_lost == 0
    assert result.notes == (
        f"reverse: {OVERRUN_NOTE} (the sender lagged its schedule by up to 5.348 ms, caught up in bursts of up to 11 "
        "frames and did not slip): sending took 1.004 s, 4.009 ms beyond the trial's 1 s, more than the overrun "
        "tolerance (0.1%, 1 ms): the DUT was offered its frames over a longer time than the load asks, so the trial "
        "is stretched",)
    on_time = json.loads(json.dumps(TCG_LATE_END))
    on_time["directions"]["reverse"]["send_duration"] = on_time["directions"]["forward"]["send_duration"]
    assert not trial_from_report(TCG_SPEC, on_time).stretched and trial_from_report(TCG_SPEC, on_time).notes == ()


def test_the_notes_with_the_sender_s_figures_say_how_late_it_started():
    """swtester reports how late each direction's first frame left (start_lag_ns); the notes that give the sender's
    lag, bursts and slip gave every figure but that one. An swtester without it: the notes above, unchanged."""
    slipped = report(slip_ns=100_000_000, max_lag_ns=100_100_000, slips=1, max_burst=64)
    slipped["directions"]["forward"]["start_lag_ns"] = 12_300
    assert trial_from_report(SPEC, slipped).notes == (
        "forward: the sender fell more than 64 frames behind its schedule 1 time(s) (longest lag 100.1 ms; started "
        "12.3 us late): rather than a catch-up burst above 64 frames it moved its schedule 100 ms later, more than the "
        "overrun tolerance: the trial is stretched",)
    late_end = json.loads(json.dumps(TCG_LATE_END))
    late_end["directions"]["reverse"]["start_lag_ns"] = 2_500_000
    assert trial_from_report(TCG_SPEC, late_end).notes[0].startswith(
        f"reverse: {OVERRUN_NOTE} (the sender started 2.5 ms late, lagged its schedule by up to 5.348 ms, caught up in "
        "bursts of up to 11 frames and did not slip): sending took 1.004 s")


def test_frames_never_sent_are_named_in_a_note():
    short = report()
    short["directions"]["forward"].update(sent=39_000, received=39_000)
    result = trial_from_report(SPEC, short)
    assert result.stretched and result.notes == (
        "forward: 1,000 of its 40,000 frames were never sent (the sender was still behind its schedule when swtester "
        "stops sending, past the duration): counted as lost, and the trial is stretched",)


def throttled_report(waited_ns: int, realtime: bool = True, runtime_us: int = 950_000) -> dict:
    """A 1 s trial whose sender lagged 48 ms once (as the kernel's realtime throttle stalls one: measured at 1 Mfps)
    and waited runnable waited_ns in all, under a realtime throttle of runtime_us of each 1 s period."""
    throttled = report(slip_ns=35_000_000, max_lag_ns=48_000_000, slips=1, max_burst=512)
    throttled["directions"]["forward"]["send_waited_ns"] = waited_ns
    return {**throttled, "realtime": realtime, "rt_runtime_us": runtime_us, "rt_period_us": 1_000_000}


def test_a_stall_of_the_realtime_throttle_is_named_with_its_numbers():
    result = trial_from_report(SPEC, throttled_report(waited_ns=49_000_000))
    assert result.stretched and len(result.notes) == 2 and "moved its schedule 35 ms later" in result.notes[0]
    assert result.notes[1] == (
        "forward: the kernel's realtime throttling stalled the sender (sched_rt_runtime_us 950000 of "
        "sched_rt_period_us 1000000: realtime threads that keep a CPU busy longer are stopped for the rest of the "
        "period, up to 50 ms): it lagged its schedule by up to 48 ms and waited runnable 49 ms in all (schedstat "
        "run_delay); its schedule slipped 35 ms. The tester's realtime threads kept that CPU busy: the stall is the "
        "tester's, not the DUT's")
    caught_up = throttled_report(waited_ns=49_000_000)
    caught_up["directions"]["forward"].update(slip_ns=0, slips=0)
    assert trial_from_report(SPEC, caught_up).notes[-1].endswith(
        "; it caught up in bursts of up to 512 frames. The tester's realtime threads kept that CPU busy: the stall "
        "is the tester's, not the DUT's")


def test_lab_tests_that_check_counts_pass_over_the_throttle_and_overrun_notes_and_no_other():
    """labtools.notes_but_steal, with which lab tests of the software generator check that a trial has no note but
    the machine's, failed them on the realtime throttle's note (37aaf95), which outside realtime load on the tester's
    CPUs may bring to a trial that counted every frame: the tester's stall, not a count; so does the note of a last
    frame that left late (overrun_note), a stall of the tester near the trial's end. Each is known by its name after
    the direction's; the slip note with it stays, and so does any other note that merely quotes one."""
    result = trial_from_report(SPEC, throttled_report(waited_ns=49_000_000))
    slip, throttled = result.notes
    assert "realtime throttling" in throttled and notes_but_steal(result) == [slip]
    quoting = dataclasses.replace(result, notes=(f"forward: nftables counted 1 test frames on port 1, the receiver 0 "
                                                 f"({throttled.partition(': ')[2]})",))
    assert notes_but_steal(quoting) == list(quoting.notes)
    # The same for the note of a last frame that left late (overrun_note).
    late = trial_from_report(TCG_SPEC, TCG_LATE_END)
    assert len(late.notes) == 1 and notes_but_steal(late) == []
    quoting = dataclasses.replace(late, notes=(f"forward: nftables counted 1 test frames on port 1, the receiver 0 "
                                               f"({late.notes[0].partition(': ')[2]})",))
    assert notes_but_steal(quoting) == list(quoting.notes)


@pytest.mark.parametrize("case", [
    {"waited_ns": 300_000},  # a stall it did not wait through runnable: stopped (SIGSTOP) or the hypervisor's
    {"waited_ns": -1},  # a kernel without schedstat: not measured
    {"waited_ns": 49_000_000, "realtime": False},  # the normal class: no realtime throttle applies
    {"waited_ns": 49_000_000, "runtime_us": -1},  # the throttle is off
])
def test_a_stall_the_realtime_throttle_did_not_cause_is_not_blamed_on_it(case):
    notes = trial_from_report(SPEC, throttled_report(**case)).notes
    assert len(notes) == 1 and "moved its schedule" in notes[0], notes


class Stalling:
    """The simulated SUT behind a tester that stalls in the first `stalls` trials at each load (or always) and then
    catches up with a burst, as the old swtester did: the burst overflows the DUT, which loses frames."""

    name = "sim"

    def __init__(self, capacity: float, stalls: int | None = 1):
        self.generator = create_generator("sim", capacity=capacity)
        self.stalls = stalls
        self.seen: dict[float, int] = {}

    def run_trial(self, spec):
        result = self.generator.run_trial(spec)
        n = self.seen[spec.offered_load] = self.seen.get(spec.offered_load, 0) + 1
        if self.stalls is not None and n > self.stalls:
            return result
        return self.disturb(result, spec)

    def disturb(self, result, spec):
        """The stalled trial: its schedule slipped 100 ms, and the burst after it cost 500 frames."""
        directions = {k: dataclasses.replace(d, send_slip=0.1, send_duration=spec.duration + 0.1,
                                             frames_received=d.frames_received - 500)
                      for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions)

    def describe(self):
        return {}

    def close(self):
        pass


def test_a_stalled_trial_is_run_again_and_only_the_last_run_counts():
    runner = TrialRunner(Stalling(capacity=100_000), SPEC)
    result = runner.run(50_000, 1.0, "binary search")
    assert len(runner.log) == 1 + STRETCHED_RETRIES and runner.log[0].stretched
    assert result is runner.log[-1] and not result.stretched and result.loss_ratio == 0


def test_throughput_recovers_from_stalls_and_never_counts_their_loss_as_the_duts():
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1)
    clean = throughput.run(RunContext(create_generator("sim", capacity=100_000), SPEC), params)
    stalled = throughput.run(RunContext(Stalling(capacity=100_000), SPEC), params)
    assert stalled.throughput == clean.throughput and stalled.tester_bound_reasons == []
    assert stalled.trials == 2 * clean.trials, "each load once stalled, once again"
    assert stalled.search == clean.search, "the search saw only the repeats"
    assert stalled.notes == [f"{clean.trials} trial(s) stretched with every frame sent (the tester's schedule "
                             "slipped, or its last frame left late: the machine stalled it) were run again; only the "
                             "repeat counts, both are logged"]


class LateEnd(Stalling):
    """The simulated SUT behind a tester whose last frame leaves 5 ms late in the first trial at each load: no slip,
    no frame lost (as 3 of 25 trials of a one-CPU TCG guest tester, tests/data/swtester)."""

    def disturb(self, result, spec):
        directions = {k: dataclasses.replace(d, send_duration=spec.duration + 0.005)
                      for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions)


def test_a_trial_run_again_for_a_late_last_frame_is_not_said_to_have_slipped():
    """The procedure's note on trials run again said the tester's schedule slipped, also of trials whose schedule
    never moved and whose last frame merely left late."""
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1)
    late = throughput.run(RunContext(LateEnd(capacity=100_000), SPEC), params)
    assert late.trials == 2 * throughput.run(RunContext(create_generator("sim", capacity=100_000), SPEC), params).trials
    assert len(late.notes) == 1 and "or its last frame left late" in late.notes[0], late.notes


def test_a_tester_that_always_stalls_fails_its_loads_and_bounds_the_result():
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1)
    data = throughput.run(RunContext(Stalling(capacity=100_000, stalls=None), SPEC), params).to_dict()
    assert data["below_minimum_load"] and data["tester_bound_reasons"] == ["stretched trials"]
    assert all(not t["passed"] for t in data["search"])


def test_mlrsearch_counts_a_stretched_trial_as_failed():
    params = mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.PDR,))
    found = mlrsearch.run(RunContext(Stalling(capacity=100_000, stalls=None), SPEC), params)
    assert found.goals[0]["below_minimum_load"] and found.tester_bound_reasons == ["stretched trials"]
    recovered = mlrsearch.run(RunContext(Stalling(capacity=100_000), SPEC), params)
    assert 99_000 <= recovered.goals[0]["conditional_throughput"] <= 100_000
    assert recovered.tester_bound_reasons == [] and "were run again" in recovered.notes[-1]
