"""make test's parallel phases keep the tests that share something on one pytest-xdist worker: the tests of one
file (module fixtures, a lab, the swtester binaries a file rebuilds) and the files that name one lab group.
With pytest 9.2 and pytest-xdist 3.8 the groups were silently ignored: a file's tests ran on three workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
    # Two files of many quick tests that import little: each of the three workers imports both (test_paths and
    # test_lab_checks, which import the campaign and its pandas, cost about a CPU-second more per worker).
    ran = workers_by_group("tests/test_impairment.py", "tests/test_host_backlog.py")
    # Every test carries its group (the file's path under tests/, without .py), and each group ran on one worker.
    assert set(ran) == {"test_impairment", "test_host_backlog"}, ran
    assert all(len(workers) == 1 for workers in ran.values()), ran


@pytest.mark.timeout(60)  # a claim that waited for the holder would wait forever: the holder waits for this test
def test_a_lab_name_in_use_by_another_test_process_fails_at_once():
    """Two workers giving their labs one name would share namespaces: the second is stopped before lab-up."""
    # The claim's lock is machine-wide, as a lab's namespaces are: under a fixed name ("zzgrp") the make test of
    # another checkout running this test at the same moment held it, and this test failed there or here. This
    # process's id names a lab no other living process uses.
    name = f"zz{os.getpid()}"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, labtools; labtools.claim_lab(sys.argv[1]);"
                               "print('held', flush=True); sys.stdin.read()", name],
                              cwd=REPO / "tests", stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(AssertionError, match=f"lab {name} is in use by another test process"):
            labtools.lab_env(name)
    finally:
        holder.communicate("", timeout=30)
    try:
        labtools.lab_env(name)  # free again once that process ended; this process may now use it, and again
        assert labtools.lab_env(name, "dual", 2)["TOPOLOGY"] == "dual"
    finally:
        # This process would hold the name until it ends, and the lock file would stay in /tmp: one per run.
        held = labtools._LABS_HELD.pop(name, None)
        if held is not None:
            held.close()
            Path(held.name).unlink()


def test_the_long_groups_are_handed_out_first(request):
    """The scheduler make test's phases use (tests/conftest.py) gives LONG_GROUPS to the first workers, before the
    groups with more tests that xdist's own order puts first; the others keep that order."""
    from types import SimpleNamespace

    # tests/conftest.py as pytest loaded it: `import conftest` gives whichever conftest.py was collected last
    # (tests/swtester has one too), so it failed whenever both directories were collected, as in make test.
    conftest = request.config.pluginmanager.get_plugin(str(REPO / "tests" / "conftest.py"))
    assert conftest is not None, [getattr(p, "__file__", p) for p in request.config.pluginmanager.get_plugins()]

    class Worker:
        shutting_down = False

        def __init__(self, name):
            self.sent, self.gateway = [], SimpleNamespace(id=name)

        def send_runtest_some(self, indices):
            self.sent.append(indices)

        def shutdown(self):
            self.shutting_down = True

    sizes = {"many": 8, conftest.LONG_GROUPS[1]: 2, "some": 6, conftest.LONG_GROUPS[0]: 5, "few": 1}
    collection = [f"tests/{group}.py::test_{i}@{group}" for group, size in sizes.items() for i in range(size)]
    config = SimpleNamespace(getvalue=lambda name: {"dist": "loadgroup", "tx": ["popen"] * 3}[name],
                             option=SimpleNamespace(loadscopereorder=True))
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)
    workers = [Worker(f"gw{i}") for i in range(3)]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    first = [{collection[i].rpartition("@")[2] for i in worker.sent[0]} for worker in workers]
    assert first == [{conftest.LONG_GROUPS[0]}, {conftest.LONG_GROUPS[1]}, {"many"}], first
