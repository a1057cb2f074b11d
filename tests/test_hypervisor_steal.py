"""The hypervisor's steal (issue 16): on a virtual machine the host takes the tester's vCPU now and then, and a
trial stretched by it is a host disturbance, not the tester's limit.

No lab: the software generator reads a fake /proc/stat around a faked swtester; the procedures run on the
simulated SUT behind a tester whose schedule slips while the hypervisor steals (test_tester_stalls.Stalling)."""

import dataclasses
import json
import subprocess

import pytest
from test_host_backlog import namespace_lab
from test_host_backlog import report as swtester_report
from test_tester_stalls import Stalling
from test_tester_stalls import report as stretched_report

from trexlab.generators import create_generator
from trexlab.generators.software import USER_HZ, SoftwareGenerator, cpu_steal, steal_between
from trexlab.plan.resume import trial_from_record
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import HOST_DISTURBANCE_RUNS, STRETCHED_RETRIES, RunContext, TrialRunner
from trexlab.trial import SEND_OVERRUN_TOLERANCE, STEAL_SHARE, TrialSpec

SPEC = TrialSpec(offered_load=40_000, duration=3.0, directions="forward", receive_tail=0.5)


def proc_stat(path, steal: list[int]) -> None:
    """A /proc/stat of two or more CPUs whose steal column (the eighth value) is `steal`, in ticks."""
    cpus = "".join(f"cpu{i} 1580162 6250 694319 1678318 8607 0 114239 {s} 0 0\n" for i, s in enumerate(steal))
    path.write_text(f"cpu  3850615 12331 1247880 2781625 30813 0 267094 {sum(steal)} 0 0\n{cpus}"
                    "intr 141569985 0 0\nctxt 416242856\n")


def test_steal_is_read_per_cpu_and_the_most_any_tester_cpu_lost_counts(tmp_path):
    path = tmp_path / "stat"
    proc_stat(path, [93221, 75661])
    before = cpu_steal(path)
    proc_stat(path, [93224, 75666])
    assert before == {0: 93221, 1: 75661}
    assert steal_between(before, cpu_steal(path), (0,)) == pytest.approx(3 / USER_HZ)
    assert steal_between(before, cpu_steal(path)) == pytest.approx(5 / USER_HZ), "unpinned: any CPU"
    assert steal_between(before, cpu_steal(path), (2,)) is None, "a CPU /proc/stat does not list: not measured"
    path.write_text("cpu  1 2 3 4\ncpu0 1 2 3 4\n")
    assert cpu_steal(path) is None, "no steal column"
    assert cpu_steal(tmp_path / "missing") is None


def slipped(spec: TrialSpec, slip: float, steal: float, unsent: int = 0):
    """A trial whose sender slipped `slip` s while the hypervisor took `steal` s of the tester's CPU."""
    result = create_sim().run_trial(spec)
    directions = {k: dataclasses.replace(d, send_slip=slip, send_duration=spec.duration + slip,
                                         frames_sent=d.frames_sent - unsent)
                  for k, d in result.directions.items()}
    return dataclasses.replace(result, directions=directions, host_steal=steal)


def create_sim():
    return create_generator("sim", capacity=100_000)


def test_a_slip_the_hypervisor_took_at_least_half_of_is_its_doing():
    """The stalls seen in make test: both senders 31 ms late with 30 ms stolen (steal in 10 ms ticks), a 15 ms slip
    with one tick; a tester too slow for the load slips far more than a trial's steal."""
    assert slipped(SPEC, 0.031, 0.03).stolen and slipped(SPEC, 0.015, 0.01).stolen
    assert slipped(SPEC, 0.031, 0.03).stretched and not slipped(SPEC, 0.031, 0.03).valid, "never a pass"
    assert not slipped(SPEC, 0.031, 0.0).stolen, "no steal: the tester's own stall"
    assert not slipped(SPEC, 0.1, 0.04).stolen, f"steal under {STEAL_SHARE:.0%} of the slip"
    assert not slipped(SPEC, 0.031, 0.03, unsent=10).stolen, "frames left unsent: the tester fell short"
    assert not slipped(SPEC, SEND_OVERRUN_TOLERANCE * SPEC.duration / 2, 0.01).stolen, "not stretched at all"
    assert slipped(SPEC, 0.031, 0.03).to_dict()["host_steal"] == 0.03


def test_host_steal_survives_resume():
    record = json.loads(json.dumps(slipped(SPEC, 0.031, 0.03).to_dict()))
    assert trial_from_record(record).host_steal == 0.03
    del record["host_steal"]  # a log from before the field
    assert trial_from_record(record).host_steal == 0.0


def test_the_software_generator_reads_the_steal_of_the_testers_cpus_around_each_trial(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    proc_stat(stat, [100, 200])
    lab = namespace_lab(tmp_path)
    lab.nodes["tester"] = dataclasses.replace(lab.nodes["tester"], cpus=(0,))
    generator = SoftwareGenerator(lab, cross_check=False, softnet_stat=None, proc_stat=stat)
    generator.probed = {}
    during = {"steal": [3, 5]}

    def swtester(argv, **_):  # a trial during which the hypervisor steals `during` ticks of each CPU
        if (before := cpu_steal(stat)) is not None:
            proc_stat(stat, [before[c] + s for c, s in enumerate(during["steal"])])
        return subprocess.CompletedProcess(argv, 0, json.dumps(swtester_report()), "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", swtester)
    paced = generator.run_trial(dataclasses.replace(SPEC, duration=1.0))
    assert paced.host_steal == pytest.approx(3 / USER_HZ), "the tester's CPU 0, not CPU 1"
    assert paced.notes == (), "caught up: the steal changed nothing worth a note"

    def slipping(argv, **_):  # the same steal, and the sender slipped 31 ms meanwhile
        proc_stat(stat, [ticks + 3 for ticks in cpu_steal(stat).values()])
        return subprocess.CompletedProcess(argv, 0, json.dumps(stretched_report(slip_ns=31_000_000)), "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", slipping)
    stolen = generator.run_trial(dataclasses.replace(SPEC, duration=1.0))
    assert stolen.stolen and stolen.notes[-1] == (f"the hypervisor took {3000 / USER_HZ:.0f} ms of the tester's CPU "
                                                  "during the trial (/proc/stat steal): a host disturbance, not the "
                                                  "tester's limit")
    monkeypatch.setattr("trexlab.generators.software.subprocess.run", swtester)
    during["steal"] = [0, 9]
    assert generator.run_trial(dataclasses.replace(SPEC, duration=1.0)).host_steal == 0.0
    stat.unlink()
    unread = generator.run_trial(dataclasses.replace(SPEC, duration=1.0))
    assert unread.host_steal == 0.0 and unread.notes[-1].startswith(f"hypervisor steal not measured: {stat}")


class Stolen(Stalling):
    """The simulated SUT behind a tester whose senders both slip 31 ms in the first `stalls` trials at each load (or
    always) while the hypervisor takes 30 ms of its CPU; `steal` 0: the same slip with nothing stolen."""

    def __init__(self, capacity: float, stalls: int | None = 1, steal: float = 0.03):
        super().__init__(capacity, stalls)
        self.steal = steal

    def disturb(self, result, spec):
        directions = {k: dataclasses.replace(d, send_slip=0.031, send_duration=spec.duration + 0.031)
                      for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions, host_steal=self.steal)


def test_a_trial_stretched_by_steal_is_run_again_up_to_the_bound_and_the_last_run_counts():
    runner = TrialRunner(Stolen(capacity=100_000, stalls=HOST_DISTURBANCE_RUNS - 1), SPEC)
    result = runner.run(50_000, 3.0, "binary search")
    assert len(runner.log) == HOST_DISTURBANCE_RUNS > 1 + STRETCHED_RETRIES
    assert all(r.stolen for r in runner.log[:-1]) and result is runner.log[-1] and result.valid
    assert runner.tester_limits(None) == []
    assert runner.notes() == [f"{HOST_DISTURBANCE_RUNS - 1} trial(s) stretched while the hypervisor took "
                              f"{30 * (HOST_DISTURBANCE_RUNS - 1)} ms of the tester's CPU (a host disturbance, not "
                              f"the tester's limit) were run again, up to {HOST_DISTURBANCE_RUNS} runs in all; only "
                              "the last counts, all are logged"]


def test_progress_says_what_the_hypervisor_took():
    said = []
    runner = TrialRunner(Stolen(capacity=100_000), SPEC, progress=lambda phase, info: said.append((phase, info)))
    runner.run(50_000, 3.0, "binary search")
    assert said[1][1]["host_steal"] == 0.03
    assert said[2][0] == "binary search (again: the hypervisor took 30 ms of the tester's CPU)"


def test_a_stretched_trial_without_steal_is_run_again_once_as_before():
    runner = TrialRunner(Stolen(capacity=100_000, stalls=None, steal=0.0), SPEC)
    result = runner.run(50_000, 3.0, "binary search")
    assert len(runner.log) == 1 + STRETCHED_RETRIES and result.stretched and not result.stolen
    assert runner.tester_limits(None) == ["stretched trials"]


def test_steal_that_persists_names_the_hypervisor_as_the_limit():
    params = throughput.Params(max_rate=200_000, resolution=5_000, trial_duration=3)
    data = throughput.run(RunContext(Stolen(capacity=100_000, stalls=None), SPEC), params).to_dict()
    seen = len(data["search"])
    assert data["below_minimum_load"] and data["trials"] == HOST_DISTURBANCE_RUNS * seen
    assert data["tester_bound_reasons"] == [f"hypervisor steal ({30 * seen} ms)"], "not 'stretched trials'"
    assert any(note.startswith(f"{seen} trial(s) still stretched after {HOST_DISTURBANCE_RUNS} runs, the "
                               f"hypervisor taking {30 * seen} ms") for note in data["notes"])
    found = mlrsearch.run(RunContext(Stolen(capacity=100_000, stalls=None), SPEC),
                          mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.PDR,)))
    assert found.goals[0]["below_minimum_load"]
    assert len(found.tester_bound_reasons) == 1 and found.tester_bound_reasons[0].startswith("hypervisor steal (")


def test_throughput_recovers_from_steal_as_from_a_clean_run():
    params = throughput.Params(max_rate=200_000, resolution=5_000, trial_duration=3)
    clean = throughput.run(RunContext(create_sim(), SPEC), params)
    stolen = throughput.run(RunContext(Stolen(capacity=100_000, stalls=HOST_DISTURBANCE_RUNS - 1), SPEC), params)
    assert stolen.throughput == clean.throughput and stolen.tester_bound_reasons == []
    assert stolen.trials == HOST_DISTURBANCE_RUNS * clean.trials
