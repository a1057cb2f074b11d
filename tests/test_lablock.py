"""One campaign per lab (trexlab.lablock): a second one is refused naming the holder; a crashed holder's lock is
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

from trexlab.lab import LabError
from trexlab.lablock import LabLock, _stat, stop_leftovers

# A campaign stand-in: holds the lock of lab "lk", runs a child as a trial would, and waits to be killed.
HOLDER = r"""
import subprocess, sys, time
from pathlib import Path
from types import SimpleNamespace
from trexlab.lablock import LabLock
where = Path(sys.argv[1])
with LabLock(SimpleNamespace(name="lk", inventory=where / "hosts.yml"), "demo/c-holder"):
    child = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL)
    procs = where / "campaign.procs.json"
    while not procs.exists() or str(child.pid) not in procs.read_text():
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
        with pytest.raises(LabError) as busy, LabLock(lab(tmp_path), "demo/c-second"):
            pass
        assert str(busy.value) == (f"lab lk is in use by campaign demo/c-holder (PID {holder.pid}): "
                                   "one campaign per lab at a time")
        assert running(child)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert running(child), "SIGKILL of a campaign leaves its child running (what the lock's takeover is for)"
    lines = []
    with LabLock(lab(tmp_path), "demo/c-resumed", lines.append):
        assert not running(child)
        assert lines == [f"lab lk: took over the lock of campaign demo/c-holder (PID {holder.pid}), which is no "
                         f"longer running; stopped what it left running: sleep (PID {child})"]
    # A clean end lets go: the next campaign takes the lock without a takeover.
    lines.clear()
    with LabLock(lab(tmp_path), "demo/c-next", lines.append):
        pass
    assert lines == [] and not (tmp_path / "campaign.procs.json").exists()


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
