"""Provenance of a run: what produced a figure, so that it can be judged and reproduced."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from trexlab import __version__
from trexlab.paths import paths


def git_commit() -> str | None:
    """The checkout's commit (with '-dirty' when it has uncommitted changes); None for an installed package."""
    checkout = paths().checkout
    if checkout is None:  # not the git repository some venv happens to lie in
        return None
    try:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit


def host_facts() -> dict:
    """Facts of the machine running the procedure (the controller; generators add the tester's)."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": platform.node(), "kernel": platform.release(), "cpu_model": cpu,
            "cpus": os.cpu_count(), "python": platform.python_version(),
            # The hypervisor's steal is not a host fact here: a counter since boot differs between two runs of one
            # plan, whose provenance must be identical. Each trial carries its own (TrialResult.host_steal), and the
            # software generator's description names the CPUs it is measured on (host_steal_cpus).
            # The receive backlog every frame of a namespace lab waits in (raised while one is up: nslab.py).
            "netdev_max_backlog": _read_int(Path("/proc/sys/net/core/netdev_max_backlog"))}


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def provenance(**parts) -> dict:
    """trexlab version and commit, start time, host facts, plus whatever the caller describes."""
    return {"trexlab_version": __version__, "git_commit": git_commit(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"), "host": host_facts(), **parts}
