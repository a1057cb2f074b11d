"""swtester/stall_probe, the pacing benchmark's platform floor: it must see a stall of the CPU it sleeps on, where it
happened and for how long, and nothing of that length when there is none. The stall here is made by stopping the
probe (SIGSTOP) for a known time: to the probe it is the same as a hypervisor stopping its virtual CPU. No lab."""

import json
import os
import signal
import subprocess
import time

import pytest

from labtools import REPO, run

STALL = 0.15  # s: the probe stopped this long
STOP_AT = 0.4  # s after it starts


@pytest.fixture(scope="module")
def stall_probe():
    run("make", "-s", "-C", "swtester", "stall_probe")
    return str(REPO / "swtester" / "stall_probe")


def test_a_stall_is_reported_with_its_time_and_length(stall_probe):
    cpu = min(os.sched_getaffinity(0))
    probe = subprocess.Popen([stall_probe, "1.2", str(cpu)], stdout=subprocess.PIPE, text=True)
    time.sleep(STOP_AT)
    probe.send_signal(signal.SIGSTOP)
    time.sleep(STALL)
    probe.send_signal(signal.SIGCONT)
    out, _ = probe.communicate(timeout=30)
    report = json.loads(out)
    assert probe.returncode == 0
    assert report["cpu"] == cpu and report["quantum_ns"] > 0 and report["catch_up_limit"] > 0
    longest = max(report["late"], key=lambda late: late[1])
    assert longest[1] == report["longest_ns"]
    assert STALL * 0.9 <= report["longest_ns"] / 1e9 < STALL + 0.25, report["longest_ns"]
    # The stall began after the first quarter of a second of the run and well before its end.
    assert 0.1 <= longest[0] / 1e9 <= 1.0, longest
    assert report["late_sum_ns"] >= report["longest_ns"] and report["late_total"] >= len(report["late"]) >= 1


def test_without_a_stall_nothing_near_its_length_is_reported(stall_probe):
    report = json.loads(run(stall_probe, "0.5", str(min(os.sched_getaffinity(0)))).stdout)
    assert report["longest_ns"] < STALL * 0.9 * 1e9, report["longest_ns"]
    assert all(late[1] >= report["min_ns"] for late in report["late"])


@pytest.mark.parametrize("args", [[], ["0", "0"], ["1", "-1"], ["4000", "0"], ["1", "0", "5", "6"]])
def test_bad_arguments_are_one_line_and_exit_2(stall_probe, args):
    result = subprocess.run([stall_probe, *args], capture_output=True, text=True, timeout=10)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
