"""make test's parallel phases keep the tests that share something on one pytest-xdist worker: the tests of one
file (module fixtures, a lab, the swtester binaries a file rebuilds) and the files that name one lab group.
With pytest 9.2 and pytest-xdist 3.8 the groups were silently ignored: a file's tests ran on three workers."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import labtools
from labtools import REPO


def workers_by_group(*paths: str) -> dict[str, set[str]]:
    """Run paths on three workers as make test does: group (xdist's nodeid suffix) -> the workers that ran it."""
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "3", "--dist",
                             "loadgroup", "-v", "-m", "not lab", *paths],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    ran: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+)", result.stdout, re.M):
        ran.setdefault(nodeid.rpartition("@")[2] if "@" in nodeid else nodeid, set()).add(worker)
    return ran


def test_one_worker_per_file_and_per_shared_lab():
    ran = workers_by_group("tests/test_paths.py", "tests/test_lab_checks.py")
    # Every test carries its group (the file's path under tests/, without .py), and each group ran on one worker.
    assert set(ran) == {"test_paths", "test_lab_checks"}, ran
    assert all(len(workers) == 1 for workers in ran.values()), ran


def test_a_lab_name_in_use_by_another_test_process_fails_at_once():
    """Two workers giving their labs one name would share namespaces: the second is stopped before lab-up."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, labtools; labtools.claim_lab('zzgrp');"
                               "print('held', flush=True); sys.stdin.read()"],
                              cwd=REPO / "tests", stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(AssertionError, match="lab zzgrp is in use by another test process"):
            labtools.lab_env("zzgrp")
    finally:
        holder.communicate("", timeout=30)
    labtools.lab_env("zzgrp")  # free again once that process ended; this process may now use it, and again
    assert labtools.lab_env("zzgrp", "dual", 2)["TOPOLOGY"] == "dual"
