"""kill -9 of a campaign during a trial, resumed within 5 s: the resumed campaign stops what the killed one left
running (its swtester) before it configures anything, and its own trials' nftables cross-check holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from trexlab.testbed.lock import _same_process, descendants

from labtools import REPO, VENV

pytestmark = pytest.mark.lab

# The plain routing DUT, one repetition of a few trials; a trial long enough that the killed campaign's swtester
# still runs when the resumed campaign starts (a Python start takes a second or two on a loaded machine).
SPEC = {
    "name": "crash",
    "description": "kill -9 during a trial, then resume",
    "lab": {"kind": "local", "topology": "single"},
    "generator": "software",
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional", "receive_tail": 0.5},
    "procedure": {"name": "throughput",
                  "params": {"max_rate": 20000, "min_rate": 2000, "resolution": 6000, "trial_duration": 6}},
    "repetitions": 1,
}


def running(process: dict) -> bool:
    """The recorded process still runs (same PID, start time and command line; not a zombie)."""
    stat = Path(f"/proc/{process['pid']}/stat")
    return _same_process(process) and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def in_trial(process: dict) -> bool:
    """A trial's swtester; not `swtester --probe`, which the software generator runs first to learn the send method:
    it sends nothing and ends in a moment, so a kill during it left nothing for the resume to stop."""
    return Path(process["cmdline"][0]).name == "swtester" and "--probe" not in process["cmdline"]


def test_a_campaign_killed_in_a_trial_and_resumed_leaves_no_process_of_the_old_run(lab_factory, tmp_path):
    # The lab of tests/e2e/test_experiments.py (single DUT): already up when the whole suite runs.
    lab = lab_factory("ex1", "single", 1)
    (tmp_path / "crash").mkdir()
    (tmp_path / "crash" / "experiment.yml").write_text(yaml.safe_dump(SPEC))
    argv = [str(VENV / "bin" / "trexlab"), "campaign", str(tmp_path / "crash"), "--results", str(tmp_path / "r"),
            "--ceilings", str(tmp_path / "ceilings.json"), "--inventory", str(lab.inventory), "--campaign", "c-crash"]
    first = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    old = []
    try:
        while time.monotonic() < deadline and first.poll() is None:
            old = descendants(first.pid)
            if any(in_trial(p) for p in old):
                break
            time.sleep(0.05)
        assert first.poll() is None and old, "the campaign reached a trial"
        time.sleep(0.3)  # inside the trial
        first.send_signal(signal.SIGKILL)  # the campaign only, as the OOM killer or kill -9 <pid> would
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    swtesters = [p for p in old if in_trial(p)]
    assert any(running(p) for p in swtesters), "SIGKILL left the trial's swtester running (what the resume stops)"

    resumed = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    took_over = [line for line in resumed.stderr.splitlines() if "took over the lock" in line]
    assert len(took_over) == 1 and f"swtester (PID {swtesters[0]['pid']})" in took_over[0], resumed.stderr[-2000:]
    # It said so before its first point: nothing was configured while the old swtester ran.
    assert resumed.stderr.index("took over the lock") < resumed.stderr.index("point 1/1")
    assert not any(running(p) for p in old), "no process of the killed campaign is left"
    outcome = json.loads(resumed.stdout)
    assert outcome["done"] == outcome["points"] == 1
    trials = [json.loads(line) for f in Path(outcome["campaign"]).rglob("trials.jsonl")
              for line in f.read_text().splitlines()]
    crossed = [n for t in trials for n in t["notes"] if "nftables counted" in n]
    assert trials and crossed == [], crossed
    assert not os.path.exists(lab.inventory.parent / "lab.procs.json"), "a clean end lets go of the lab"
