"""The host's receive backlog (issue 16): the frames it drops are the host's loss, counted as the DUT's.

No lab: nslab.py's hold and release of net.core.netdev_max_backlog run on a fake sysctl file and state under
tmp_path with the namespaces that exist given, and the software generator reads a fake /proc/net/softnet_stat.
tests/lab/test_local_lab.py checks the real sysctl around lab-up and lab-down."""

import dataclasses
import errno
import json
import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from test_tester_stalls import Stalling

from trexlab.generators import create_generator
from trexlab.generators.software import SoftwareGenerator, backlog_drops, drops_between, trial_from_report
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import STRETCHED_RETRIES, RunContext, TrialRunner
from trexlab.testbed.inventory import load_lab
from trexlab.trial import TrialSpec

from labtools import REPO, backlog_and_holders

sys.path.insert(0, str(REPO / "terraform" / "labs" / "local" / "scripts"))
import nslab  # noqa: E402  (the local lab's realiser: standard library only, not a package)

SPEC = TrialSpec(offered_load=40_000, duration=1.0, directions="forward", receive_tail=0.5)


@pytest.fixture
def host(tmp_path):
    """A fake sysctl at Linux's default and where the state goes: hold(lab, *namespaces_present) and
    release(lab, *namespaces_present) as nslab.py's, value() the sysctl's."""
    sysctl = tmp_path / "netdev_max_backlog"
    sysctl.write_text("1000\n")
    state = tmp_path / "run" / "trexlab" / "netdev_max_backlog.json"

    class Host:
        def __init__(self):
            self.sysctl, self.state = sysctl, state

        def hold(self, lab, *present):
            nslab.hold_backlog(lab, [f"tl-{lab}-tester", f"tl-{lab}-dut1"], state, sysctl, set(present))

        def release(self, lab, *present):
            nslab.release_backlog(lab, state, sysctl, set(present))

        def value(self):
            return int(sysctl.read_text())

    return Host()


def spaces(*labs):
    return [f"tl-{lab}-{node}" for lab in labs for node in ("tester", "dut1")]


def test_the_first_lab_raises_the_backlog_and_the_last_one_down_restores_it(host):
    host.hold("a", *spaces("a"))
    assert host.value() == nslab.BACKLOG > 1000
    host.hold("b", *spaces("a", "b"))
    host.release("a", *spaces("b"))
    assert host.value() == nslab.BACKLOG, "kept while another lab is up"
    host.release("b")
    assert host.value() == 1000, "restored when the last lab went down"
    assert not host.state.parent.exists(), "state, lock and directory removed: the host as it was"


def test_a_lab_whose_namespaces_vanished_no_longer_holds_the_raise(host):
    host.hold("a", *spaces("a"))
    host.hold("b", *spaces("a", "b"))
    host.release("b")  # lab a crashed meanwhile: none of its namespaces is left
    assert host.value() == 1000 and not host.state.exists()


def test_the_value_from_before_a_crashed_lab_is_the_one_restored(host):
    host.hold("a", *spaces("a"))  # a crashes: its raise stays, and so does its state
    host.hold("c", *spaces("c"))  # the next lab finds the backlog raised by a lab that is gone
    assert json.loads(host.state.read_text())["holders"] == {"c": sorted(spaces("c"))}
    host.release("c")
    assert host.value() == 1000, "not the crashed lab's raise"


def test_a_value_set_higher_is_never_lowered_nor_touched_at_the_end(host):
    host.sysctl.write_text("50000\n")
    host.hold("a", *spaces("a"))
    assert host.value() == 50000
    host.release("a")
    assert host.value() == 50000 and not host.state.exists()


def test_a_value_someone_set_while_labs_were_up_is_theirs_to_keep(host):
    host.hold("a", *spaces("a"))
    host.sysctl.write_text("4000\n")
    host.release("a")
    assert host.value() == 4000


def test_lab_down_without_a_hold_changes_nothing(host):
    host.release("a")
    assert host.value() == 1000 and not host.state.parent.exists()


def test_concurrent_labs_up_and_down_restore_the_value_once_all_are_down(host):
    """Eight labs going up and down at once, each in its own process (make test runs four workers): the state is
    updated under its lock, so no hold is lost and the value comes back only when the last lab is down."""
    labs = [f"w{i}" for i in range(8)]
    everything = spaces(*labs)

    def lab(name):
        for _ in range(20):
            host.hold(name, *everything)
            if host.value() != nslab.BACKLOG:
                sys.exit(f"lab {name} is up with the backlog at {host.value()}")
            host.release(name, *everything)

    processes = [multiprocessing.get_context("fork").Process(target=lab, args=(name,)) for name in labs]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [p.exitcode for p in processes] == [0] * len(labs)
    assert host.value() == 1000 and not host.state.parent.exists()


def test_the_backlog_and_its_holders_are_read_as_they_were_at_one_moment(host):
    """A lab going down between the reads of the holders and of the value (another make test worker's, beside
    tests/lab/test_local_lab.py's check of the value) waits until both are read: the pair is the one before the lab
    went down or the one after, never the holders from before with the value from after."""
    host.hold("a", *spaces("a"))
    gone = threading.Thread(target=host.release, args=("a",))

    class Between(type(host.sysctl)):
        """A file whose first read lets the lab go down (waiting a while for it) before the next read."""
        def read_text(self, *args, **kwargs):
            text = super().read_text(*args, **kwargs)
            if not gone.is_alive() and gone.ident is None:
                gone.start()
                gone.join(0.2)
            return text

    read = backlog_and_holders(Between(host.state), Between(host.sysctl))
    gone.join(10)
    assert read in ((nslab.BACKLOG, {"a": sorted(spaces("a"))}), (1000, {}))
    assert backlog_and_holders(host.state, host.sysctl) == (1000, {}) and host.value() == 1000
    assert not host.state.parent.exists(), "reading the state leaves no lock file behind, as the last lab down"


def test_a_lab_up_whose_state_directory_goes_during_its_mkdir_makes_it_again(host, monkeypatch):
    """mkdir(exist_ok=True) fails on the directory there, then finds no directory (the last lab down removed it in
    between) and raises FileExistsError: seen once in the eight-process test above on a fresh clone's make test."""
    real_mkdir, gone = nslab.os.mkdir, []

    def mkdir_while_the_last_lab_goes_down(path, *args):
        if not gone and Path(path) == host.state.parent:  # the race, made certain
            gone.append(path)
            host.state.parent.rmdir()
            raise FileExistsError(errno.EEXIST, "File exists", str(path))
        return real_mkdir(path, *args)

    host.state.parent.mkdir(parents=True)
    monkeypatch.setattr(nslab.os, "mkdir", mkdir_while_the_last_lab_goes_down)
    host.hold("a", *spaces("a"))
    assert gone and host.value() == nslab.BACKLOG
    monkeypatch.undo()
    host.release("a")
    assert host.value() == 1000 and not host.state.parent.exists()


def test_a_lab_up_whose_state_directory_goes_between_its_mkdir_and_its_open_makes_it_again(host, monkeypatch):
    """The last lab down removes the state's directory under the lock; a lab coming up meanwhile may have made it
    just before (seen once in make test's eight-process test above: FileNotFoundError from the open)."""
    real_open, gone = nslab.os.open, []

    def open_after_the_last_lab_down(path, *args):
        if not gone:  # the race, made certain: the directory goes after this lab's mkdir, before its open
            gone.append(path)
            host.state.parent.rmdir()
        return real_open(path, *args)

    monkeypatch.setattr(nslab.os, "open", open_after_the_last_lab_down)
    host.hold("a", *spaces("a"))
    assert gone and host.value() == nslab.BACKLOG
    monkeypatch.undo()
    host.release("a")
    assert host.value() == 1000 and not host.state.parent.exists()


# The software generator's view of the backlog: softnet_stat's dropped column around each trial.

def softnet(path, drops: list[int]) -> None:
    """A softnet_stat of one line per CPU: processed, dropped (the count), time_squeeze, then zeros (hex)."""
    path.write_text("".join(f"{0x1000 + i:08x} {d:08x} 00000000" + " 00000000" * 10 + "\n"
                            for i, d in enumerate(drops)))


def test_softnet_stat_drops_are_summed_over_cpus_and_wrap_at_32_bits(tmp_path):
    path = tmp_path / "softnet_stat"
    softnet(path, [5, 0xFFFFFFF0])
    before = backlog_drops(path)
    softnet(path, [7, 0x10])
    assert before == [5, 0xFFFFFFF0] and drops_between(before, backlog_drops(path)) == 2 + 0x20
    assert drops_between(before, [7]) is None, "a CPU came or went: not measured"
    assert backlog_drops(tmp_path / "missing") is None


def report(received: int = 40_000) -> dict:
    forward = {"intended": 40_000, "sent": 40_000, "received": received, "late": 0, "duplicates": 0, "reordered": 0,
               "tester_drops": 0, "send_duration": 0.999975, "latency": None}
    return {"tester": "swtester", "directions": {"forward": forward}}


def test_a_trial_with_host_backlog_drops_is_invalid_and_says_how_many():
    result = trial_from_report(SPEC, report(received=39_000), host_drops=1_000)
    assert result.host_drops == 1_000 and not result.valid and not result.stretched
    assert result.notes == ("the host's receive backlog dropped 1,000 frame(s) during the trial (softnet_stat, all "
                            "CPUs): the host's loss, not the DUT's, so the trial is invalid",)
    assert result.to_dict()["host_drops"] == 1_000
    assert trial_from_report(SPEC, report()).valid


def namespace_lab(tmp_path):
    """A one-DUT inventory whose tester is a namespace (as the local lab's): it shares this host's kernel."""
    ports = {"tester": [("port0", "02:00:00:00:00:01", "02:00:00:00:01:00"),
                        ("port1", "02:00:00:00:00:02", "02:00:00:00:01:01")],
             "dut1": [("left", "02:00:00:00:01:00", None), ("right", "02:00:00:00:01:01", None)]}
    hosts = {name: {"ansible_host": f"192.0.2.{10 + i}", "trexlab_netns": f"tl-hb-{name}",
                    "test_ports": [{"index": j, "name": n, "mac": m, **({"peer_mac": p} if p else {})}
                                   for j, (n, m, p) in enumerate(ports[name])]}
             for i, name in enumerate(ports)}
    inventory = {"all": {"vars": {"trexlab_lab": {"name": "hb", "kind": "local", "topology": "single"}},
                         "children": {"testers": {"hosts": {"tester": hosts["tester"]}},
                                      "duts": {"hosts": {"dut1": hosts["dut1"]}}}}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return load_lab(str(path))


def test_the_software_generator_reads_the_host_backlog_around_each_trial(tmp_path, monkeypatch):
    stat = tmp_path / "softnet_stat"
    softnet(stat, [100, 200])
    generator = SoftwareGenerator(namespace_lab(tmp_path), cross_check=False, softnet_stat=stat)
    generator.probed = {}
    drops = {"during": [30, 0]}

    def swtester(argv, **_):  # a trial during which CPU 0's backlog drops what `drops` says
        if (before := backlog_drops(stat)) is not None:
            softnet(stat, [b + d for b, d in zip(before, drops["during"], strict=True)])
        return subprocess.CompletedProcess(argv, 0, json.dumps(report()), "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", swtester)
    dropped = generator.run_trial(SPEC)
    assert dropped.host_drops == 30 and not dropped.valid
    drops["during"] = [0, 0]
    assert generator.run_trial(SPEC).host_drops == 0
    stat.unlink()
    unread = generator.run_trial(SPEC)
    assert unread.host_drops == 0 and unread.notes == (f"host backlog drops not measured: {stat} unreadable or its "
                                                       "CPUs changed",)


class HostDropping(Stalling):
    """The simulated SUT on a host whose receive backlog drops 500 frames in the first `stalls` trials at each load
    (or always): frames the receivers never see, counted as lost, the tester on its schedule."""

    def disturb(self, result, spec):
        directions = {k: dataclasses.replace(d, frames_received=d.frames_received - 500)
                      for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions, host_drops=500)


def test_a_trial_with_host_drops_is_run_again_and_only_the_repeat_counts():
    runner = TrialRunner(HostDropping(capacity=100_000), SPEC)
    result = runner.run(50_000, 1.0, "binary search")
    assert len(runner.log) == 1 + STRETCHED_RETRIES and runner.log[0].host_drops == 500
    assert result is runner.log[-1] and result.valid and runner.host_drops == 0


def test_throughput_recovers_from_host_drops_and_never_counts_them_as_the_duts():
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1, loss_tolerance_percent=5)
    clean = throughput.run(RunContext(create_generator("sim", capacity=100_000), SPEC), params)
    dropped = throughput.run(RunContext(HostDropping(capacity=100_000), SPEC), params)
    assert dropped.throughput == clean.throughput and dropped.tester_bound_reasons == []
    assert dropped.trials == 2 * clean.trials
    assert dropped.notes == [f"{clean.trials} trial(s) in which the host's receive backlog dropped frames were run "
                             "again; only the repeat counts, both are logged"]


def test_host_drops_that_persist_fail_the_load_and_mark_the_result_tester_bound_with_their_count():
    """Even within a loss tolerance the 500 frames would pass: the host's loss is never the DUT's pass."""
    params = throughput.Params(max_rate=200_000, resolution=500, trial_duration=1, loss_tolerance_percent=5)
    data = throughput.run(RunContext(HostDropping(capacity=100_000, stalls=None), SPEC), params).to_dict()
    assert data["below_minimum_load"] and all(not t["passed"] for t in data["search"])
    assert data["tester_bound"] and data["tester_bound_reasons"] == [
        f"host backlog drops ({500 * sum(1 for t in data['search'] if t['host_drops']):,} frames)"]
    found = mlrsearch.run(RunContext(HostDropping(capacity=100_000, stalls=None), SPEC),
                          mlrsearch.Params(max_rate=200_000, min_rate=10_000, goals=(mlrsearch.PDR,)))
    assert found.goals[0]["below_minimum_load"]
    assert len(found.tester_bound_reasons) == 1 and found.tester_bound_reasons[0].startswith("host backlog drops (")
