"""make test's parallel phases keep the tests that share something on one pytest-xdist worker: the tests of one
file (module fixtures, a lab, the swtester binaries a file rebuilds) and the files that name one lab group.
With pytest 9.2 and pytest-xdist 3.8 the groups were silently ignored: a file's tests ran on three workers."""

from __future__ import annotations

import re
import subprocess
import sys

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
