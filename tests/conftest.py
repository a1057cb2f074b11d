"""Shared fixtures.

``lab_factory(name, topology="single", networks=1)`` brings a local namespace lab
up and configures it once per session (scripts/lab.sh, i.e. make lab-up and
make configure) and takes it down when the session ends; it returns a
:class:`trexlab.lab.Lab`. Lab tests need root; without it they are skipped
with that reason. Each test module uses its own lab name so labs never collide.
"""

from __future__ import annotations

import os
import shutil

import pytest

from trexlab.lab import load_lab

from labtools import lab_env, run


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


@pytest.fixture(scope="session")
def lab_factory():
    started = []

    def make(name: str, topology: str = "single", networks: int = 1):
        env = lab_env(name, topology, networks)
        run("scripts/lab.sh", "up", env=env)
        started.append(env)
        result = run("scripts/lab.sh", "configure", env=env, check=False, timeout=300)
        if result.returncode != 0:
            raise AssertionError(f"configure of lab {name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
        return load_lab(f"inventory/generated/{name}/hosts.yml")

    yield make
    for env in started:
        run("scripts/lab.sh", "down", env=env, check=False)
