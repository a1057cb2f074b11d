"""One run per lab (trexlab.testbed.lock): a second one is refused naming the holder; a crashed holder's lock is
taken over and what it left running is stopped, and only that (verified by start time and command line)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from trexlab.testbed.inventory import LabError
from trexlab.testbed.lock import LabLock, _cmdline, _stat, stop_leftovers

from labtools import static_inventory

# A campaign stand-in: holds the lock of lab "lk", runs a child as a trial would, and waits to be killed.
HOLDER = r"""
import json, subprocess, sys, time
from pathlib import Path
from types import SimpleNamespace
from trexlab.testbed.lock import LabLock
where = Path(sys.argv[1])
with LabLock(SimpleNamespace(name="lk", inventory=where / "hosts.yml"), "campaign demo/c-holder"):
    child = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL)
    procs = where / "lab.procs.json"
    # Recorded as the takeover will check it, with its own command line: a scan between the child's fork and its
    # exec (a busy machine's scheduler can hold a new child that long) records the holder's, and the takeover then
    # rightly leaves alone a process whose command line is not the one recorded.
    while not any(p["pid"] == child.pid and p["cmdline"] == ["sleep", "300"]
                  for p in (json.loads(procs.read_text())["processes"] if procs.exists() else [])):
        time.sleep(0.05)
    print(child.pid, flush=True)
    time.sleep(300)
"""


def lab(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(name="lk", inventory=tmp_path / "hosts.yml")


def running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_second_campaign_is_refused_and_a_killed_ones_leftovers_are_stopped_before_the_next_starts(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    try:
        child = int(holder.stdout.readline() or 0)
        assert child, "the holder did not start its child"
        with pytest.raises(LabError) as busy, LabLock(lab(tmp_path), "campaign demo/c-second"):
            pass
        assert str(busy.value) == (f"lab lk is in use by campaign demo/c-holder (PID {holder.pid}): "
                                   "one run per lab at a time")
        assert running(child)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()  # not left to the garbage collector, which warns of it (a ResourceWarning)
    assert running(child), "SIGKILL of a campaign leaves its child running (what the lock's takeover is for)"
    lines = []
    with LabLock(lab(tmp_path), "campaign demo/c-resumed", lines.append):
        assert not running(child)
        assert lines == [f"lab lk: took over the lock of campaign demo/c-holder (PID {holder.pid}), which is no "
                         f"longer running; stopped what it left running: sleep (PID {child})"]
    # A clean end lets go: the next campaign takes the lock without a takeover.
    lines.clear()
    with LabLock(lab(tmp_path), "campaign demo/c-next", lines.append):
        pass
    assert lines == [] and not (tmp_path / "lab.procs.json").exists()


# A leftover whose way out takes a while: a gibibyte of its own memory, touched, which the kernel frees after the
# process has let go of it (its command line is empty from then on) and before it ends.
LARGE = ("import mmap, time\nm = mmap.mmap(-1, 1 << 30)\nfor i in range(0, len(m), 4096):\n    m[i] = 1\n"
         "print('ready', flush=True)\ntime.sleep(300)")


def test_leftovers_are_stopped_once_they_have_ended_not_when_their_command_line_goes():
    """stop_leftovers waited until a process was no longer 'the same' (its start time and command line), and a
    process's command line is gone as soon as it has let its memory go, before the kernel has freed it, closed its
    sockets and files and ended it: a fresh clone's make test saw a killed campaign's child still running after the
    next campaign had taken the lock over."""
    large = subprocess.Popen([sys.executable, "-c", LARGE], stdout=subprocess.PIPE, text=True)
    try:
        assert large.stdout.readline() == "ready\n"
        record = {"pid": large.pid, "start": _stat(large.pid)[1], "cmdline": _cmdline(large.pid)}
        assert stop_leftovers([record]) == [record]
        assert not running(large.pid), "stop_leftovers returned while the process was still ending"
    finally:
        large.kill()
        large.wait()
        large.stdout.close()  # not left to the garbage collector, which warns of it (a ResourceWarning)


def test_a_recorded_pid_now_belonging_to_another_process_is_left_alone():
    other = subprocess.Popen(["sleep", "300"])
    try:
        time.sleep(0.1)
        start = _stat(other.pid)[1]
        cmdline = ["sleep", "300"]
        assert stop_leftovers([{"pid": other.pid, "start": start + 1, "cmdline": cmdline},
                               {"pid": other.pid, "start": start, "cmdline": ["swtester", "--port0", "x"]}],
                              grace=0.1) == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


# -- single CLI runs take the same lock ----------------------------------------------------------------------------

INVENTORY = static_inventory("lk")


@pytest.fixture
def cli_on_a_lab(tmp_path, monkeypatch):
    """cli.main of a throughput run on lab lk (a static lab's inventory, no host): its generator is a simulated SUT
    that, at every trial, records whether another run could take the lab."""
    from trexlab import cli
    from trexlab.generators import create_generator
    from trexlab.plan.runplan import RunPlan

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    refused = []

    class Watching:
        def __init__(self):
            self.sim = create_generator("sim", capacity=5e4)
            self.name, self.capabilities, self.lab = "sim", self.sim.capabilities, None

        def run_trial(self, spec):
            try:
                with LabLock(lab(tmp_path), "campaign demo/c-during"):
                    refused.append(False)
            except LabError as exc:
                refused.append(str(exc))
            return self.sim.run_trial(spec)

        def describe(self):
            return self.sim.describe()

        def skip_trials(self, count):
            self.sim.skip_trials(count)

        def close(self):
            pass

    monkeypatch.setattr(RunPlan, "create_generator", lambda plan: Watching())

    def main(results: str = "r") -> int:
        return cli.main(["throughput", "--generator", "software", "--inventory", str(inventory), "--max-rate", "1e5",
                         "--trial-duration", "1", "--results", str(tmp_path / results),
                         "--ceilings", str(tmp_path / "ceilings.json")])

    return main, refused


def test_a_cli_run_holds_the_lab_and_is_refused_while_another_run_holds_it(tmp_path, capsys, cli_on_a_lab):
    main, refused = cli_on_a_lab
    with LabLock(lab(tmp_path), "campaign demo/c-holder"):
        assert main("busy") == 2
    err = capsys.readouterr().err
    assert err == (f"trexlab throughput: lab lk is in use by campaign demo/c-holder (PID {os.getpid()}): one run per "
                   "lab at a time\n")
    assert not (tmp_path / "busy").exists()
    assert main() == 0
    assert refused and all(r == f"lab lk is in use by trexlab throughput (PID {os.getpid()}): one run per lab at a "
                                "time" for r in refused), refused
    assert (tmp_path / "lab.lock").read_text() == "" and not (tmp_path / "lab.procs.json").exists()


def test_a_cli_run_takes_over_a_dead_runs_lock(tmp_path, capsys, cli_on_a_lab):
    main, _ = cli_on_a_lab
    (tmp_path / "lab.lock").write_text("campaign demo/c-dead (PID 999999)\n")
    assert main() == 0
    assert ("trexlab throughput: lab lk: took over the lock of campaign demo/c-dead (PID 999999), which is no longer "
            "running\n") in capsys.readouterr().err


# make run's check (trexlab campaign --check) holding the lab of argv[1] for make process argv[2] (HELD_FOR_ENV).
HOLD_FOR = r"""
import os, sys
from pathlib import Path
from types import SimpleNamespace
from trexlab.testbed.lock import HELD_FOR_ENV, LabLock
os.environ[HELD_FOR_ENV] = sys.argv[2]
lab = SimpleNamespace(name="lk", inventory=Path(sys.argv[1]) / "hosts.yml")
LabLock(lab, "campaign demo/c-check").hold_for_next_run()
"""


class MakeRun:
    """A make whose recipe runs the check (HOLD_FOR, for that make, or for make process `owner`), then prints its
    shell's PID and becomes a sleep that stands for the recipe's later steps: make and that sleep run until kill()."""

    def __init__(self, tmp_path: Path, owner: str = "$$PPID"):
        (tmp_path / "hold.py").write_text(HOLD_FOR)
        (tmp_path / "Makefile").write_text(
            f"hold:\n\t@{sys.executable} hold.py {tmp_path} {owner}; echo $$$$; exec sleep 60\n")
        self.make = subprocess.Popen(["make", "-s", "-f", str(tmp_path / "Makefile")], stdout=subprocess.PIPE,
                                     text=True, cwd=tmp_path,
                                     env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
        self.sleep = int(self.make.stdout.readline())  # once the check has ended, as make's $(shell) waits for it

    def kill(self) -> None:
        for pid in (self.make.pid, self.sleep):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        self.make.wait()


def test_make_runs_check_holds_the_lab_for_that_makes_run_only_and_lets_go_when_that_make_ends(tmp_path, monkeypatch):
    """make run's check and the run its recipe starts are two processes: a lab another run took between them was
    refused in the recipe (two lines through make). The check holds the lab now: another run is refused, naming it;
    the run of the make it holds the lab for (HELD_FOR_ENV) takes the lock over and holds it as any run does; a lab
    held for a make that ends without its run (a refusal of another goal, Ctrl-C) is let go, its lock file empty.
    HELD_FOR_ENV naming a process that is no make the check runs under (a value left in a shell) holds nothing."""
    from trexlab.testbed.lock import HELD_FOR_ENV

    (tmp_path / "lab.lock").write_text("campaign demo/c-dead (PID 999999)\n")  # a crash's, before the check
    make = MakeRun(tmp_path)
    try:
        with pytest.raises(LabError, match=r"lab lk is in use by campaign demo/c-check \(PID \d+\)"):
            LabLock(lab(tmp_path), "campaign demo/c-other").check_free()
        with pytest.raises(LabError, match="in use by campaign demo/c-check"), LabLock(lab(tmp_path), "other"):
            pass
        said = []
        monkeypatch.setenv(HELD_FOR_ENV, str(make.make.pid))
        with LabLock(lab(tmp_path), "campaign demo/c-check", said.append):
            assert HELD_FOR_ENV not in os.environ  # for that run only, not the processes it starts
            assert (tmp_path / "lab.lock").read_text() == f"campaign demo/c-check (PID {os.getpid()})\n"
            with pytest.raises(LabError, match=f"in use by campaign demo/c-check \\(PID {os.getpid()}\\)"), \
                    LabLock(lab(tmp_path), "other"):
                pass
        # The line the check found is a crash's: the run that takes the lock over says so, as any run would.
        assert said == ["lab lk: took over the lock of campaign demo/c-dead (PID 999999), which is no longer running"]
        assert (tmp_path / "lab.lock").read_text() == ""
        LabLock(lab(tmp_path), "campaign demo/c-next").check_free()
    finally:
        make.kill()
    for end in ("make ends", "Ctrl-C"):  # held again for a make that ends without its run, or is interrupted
        make = MakeRun(tmp_path)
        try:
            with pytest.raises(LabError):
                LabLock(lab(tmp_path), "campaign demo/c-other").check_free()
            if end == "Ctrl-C":  # the terminal's SIGINT reaches make's process group, the holder in it
                os.kill(int((tmp_path / "lab.lock").read_text().split("(PID ")[1].rstrip(")\n")), signal.SIGINT)
            else:
                make.kill()
            deadline = time.monotonic() + 10
            while True:  # the holder empties the lock file, then ends, which lets the lock go
                try:
                    LabLock(lab(tmp_path), "campaign demo/c-next").check_free()
                    break
                except LabError:
                    assert time.monotonic() < deadline, f"the lab is still held after {end}"
                    time.sleep(0.05)
            assert (tmp_path / "lab.lock").read_text() == ""
        finally:
            make.kill()
    for owner in (str(os.getpid()), "1"):  # no make, or not one the check runs under
        make = MakeRun(tmp_path, owner)
        try:
            LabLock(lab(tmp_path), "campaign demo/c-next").check_free()
        finally:
            make.kill()
