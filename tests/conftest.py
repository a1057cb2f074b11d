"""Shared fixtures.

``lab_factory(name, topology="single", networks=1, kind="local", configure=True)`` brings a lab
(local namespaces, or kind="vm": QEMU DUTs) up and configures it (scripts/lab.sh,
i.e. make lab-up and make configure; configure=False: lab-up only) and takes it down when the session ends; it
returns a :class:`trexlab.testbed.inventory.Lab`. A second call with the same arguments hands out the same lab again,
without configuring it anew. A VM lab is skipped, with the reason, where
QEMU or the tools that build its guest image are missing. Lab tests need root;
without it they are skipped with that reason. Each test module uses its own lab name so labs never collide.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time

import pytest

from trexlab.testbed.inventory import load_lab

from labtools import REPO, lab_env, run

#: The tests that build swtester (release, asan, hdr_check): one xdist group, so one worker builds at a time.
SWTESTER_TESTS = REPO / "tests" / "swtester"


def pytest_itemcollected(item):
    """make test runs on pytest-xdist workers with --dist loadgroup: a test file stays on one worker (its tests
    share module fixtures and its lab), the files of tests/swtester share one (each builds the same binaries and
    runs them), and files whose tests name a group themselves, the lab they share with other files
    (xdist_group("lab-<name>")), stay together on one worker: two workers on one lab would configure and count
    each other's traffic. (Marked here, as each test is collected: pytest-xdist reads the markers in its own
    pytest_collection_modifyitems.)"""
    if item.get_closest_marker("xdist_group") is not None:
        return
    if item.path.is_relative_to(SWTESTER_TESTS):  # each file runs make -C swtester: the same build products
        item.add_marker(pytest.mark.xdist_group("swtester-build"))
        return
    file = item.nodeid.split("::", 1)[0]  # tests/roles/test_x.py -> roles/test_x: the suffix xdist shows
    item.add_marker(pytest.mark.xdist_group(file.removeprefix("tests/").removesuffix(".py")))


#: Groups handed out to the workers before the others, in this order: pytest-xdist hands out the groups with the
#: most tests first, so a file of few tests that take long came near the end and ran alone there, ending the phase:
#: test_package_install's five (a fresh venv installed from wheels first: about a minute of make test's phase 1),
#: then the 13-22 s of two or three tests each (a report in Chromium; an inner pytest on three workers; CLI
#: processes killed and resumed). Handed out first, phase 1's three workers ended within seconds of each other
#: (replayed with the durations of three phase-1 runs here: 119-125 s instead of 134-151 s).
LONG_GROUPS = ("test_package_install", "test_latency_report", "test_worker_groups", "test_resume")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup with LONG_GROUPS first; xdist's own scheduler for every other --dist."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LongGroupsFirst(LoadGroupScheduling):
        def _assign_work_unit(self, node):
            for group in reversed(LONG_GROUPS):  # xdist takes the queue's first unit; the rest keep its order
                if group in self.workqueue:
                    self.workqueue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return LongGroupsFirst(config, log)


def pytest_collection_modifyitems(config, items):
    reasons = []
    if os.geteuid() != 0:
        reasons.append("needs root for network namespaces")
    if not shutil.which("terraform"):
        reasons.append("needs terraform on PATH")
    if reasons:
        skip = pytest.mark.skip(reason="; ".join(reasons))
        for item in items:
            if "lab" in item.keywords:
                item.add_marker(skip)
    # Tests without a lab first (file order kept within each group): they run while make test still builds the
    # VM lab's guest image, and the lab tests, some of which measure, run after it. VM labs last: a lab is
    # kept up until the session ends, and an idle QEMU DUT under TCG still takes ~40 % of one of the two
    # CPUs, which namespace-lab tests that measure traffic must not share (a 1,000 fps MTU trial lost frames).
    def group(item) -> int:
        return 0 if "lab" not in item.keywords else 2 if "vm" in item.keywords else 1

    items.sort(key=group)  # stable: file and parameter order kept within each group


#: A lock make test (scripts/test.sh) holds while it builds the VM lab's guest image in the background.
IMAGE_BUILD_LOCK = "TREXLAB_VM_IMAGE_BUILD_LOCK"
#: The longest wait for it: a build that takes longer is left to the VM lab-up, which waits for it itself.
IMAGE_BUILD_WAIT_S = 600
_WAITED = pytest.StashKey[bool]()


def pytest_runtest_setup(item):
    """Before the first lab test: wait until the background image build (if any) ended, so that it competes
    for the CPUs with no test that measures traffic (a VM lab-up would wait for it anyway: image.sh locks)."""
    lock = os.environ.get(IMAGE_BUILD_LOCK)
    if "lab" not in item.keywords or not lock or item.config.stash.get(_WAITED, False):
        return
    item.config.stash[_WAITED] = True
    if not os.path.exists(lock):
        return
    start = time.monotonic()
    with open(lock) as held:
        while time.monotonic() - start < IMAGE_BUILD_WAIT_S:
            try:
                fcntl.flock(held, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused while the build holds it
                break
            except BlockingIOError:
                time.sleep(1)
    waited = time.monotonic() - start
    reporter = item.config.pluginmanager.get_plugin("terminalreporter")
    capture = item.config.pluginmanager.get_plugin("capturemanager")
    if reporter and capture and waited >= 1:  # in the log, for make test's time budget
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nwaited {waited:.0f} s for the VM lab's guest image build ({lock})")


def _user_results() -> dict:
    """The user's own results in the checkout (the ceilings above all): what no test may write."""
    root = REPO / "results"
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*")} if root.is_dir() else {}


@pytest.fixture(scope="session", autouse=True)
def tests_leave_the_users_results_alone():
    """Tests write into their own temporary results and ceilings (--results, --ceilings), never results/."""
    before = _user_results()
    yield
    after = _user_results()
    assert after == before, f"a test wrote into {REPO / 'results'}: " \
        f"{sorted(set(after.items()) ^ set(before.items()))[:5]}"


def vm_lab_prerequisites() -> None:
    """Skip (saying what is missing) where the VM lab cannot be built: no QEMU, no mmdebstrap, no apt."""
    missing = [tool for tool in ("qemu-system-x86_64", "mmdebstrap", "apt-get", "cpio", "depmod")
               if not shutil.which(tool)]
    if missing:
        pytest.skip(f"the VM lab needs {', '.join(missing)} (scripts/setup.sh installs them on Debian as root)")


@pytest.fixture(scope="session")
def lab_factory():
    started = []

    made = {}

    def make(name: str, topology: str = "single", networks: int = 1, kind: str = "local", configure: bool = True):
        env = {**lab_env(name, topology, networks), "LAB": kind}
        inventory = REPO / "inventory" / "generated" / name / "hosts.yml"
        if kind == "vm":
            vm_lab_prerequisites()
        # Configuring costs 10-15 s on namespaces and half a minute under emulation (VM lab): a lab that is still
        # up as the same call left it is handed out again (tests restore what they change, and assert it).
        if made.get(name) == (env, configure) and inventory.is_file():
            return load_lab(inventory)
        result = run("scripts/lab.sh", "up", env=env, check=False, timeout=600 if kind == "vm" else 120)
        started.append(env)
        if result.returncode != 0:
            raise AssertionError(f"lab-up of lab {name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
        if configure:  # a test of a role that needs no base configuration (ports, routing) spares it
            result = run("scripts/lab.sh", "configure", env=env, check=False, timeout=300)
            if result.returncode != 0:
                raise AssertionError(f"configure of lab {name} failed:\n{result.stdout[-3000:]}\n"
                                     f"{result.stderr[-2000:]}")
        made[name] = (env, configure)
        return load_lab(inventory)

    yield make
    for env in started:
        run("scripts/lab.sh", "down", env=env, check=False)
