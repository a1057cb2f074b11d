"""pip install of the checkout into a fresh venv, run from elsewhere: the installed trexlab finds its notebooks,
experiments and roles (trexlab.paths), declares every dependency its sim procedures, campaigns and reports
import, and ends a generator or lab error in one line (exit 2).

The dependencies come from a wheelhouse in the user's cache (downloaded once per machine, shared by its
checkouts, with requirements.txt as constraints) and the venv installs with --no-index from it, pinned by
requirements.txt again, so the versions are the tested ones: nothing from the checkout's own environment leaks in,
and a dependency pyproject.toml does not declare is simply missing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from trexlab import __version__
from trexlab.paths import CONTENT

REPO = Path(__file__).resolve().parent.parent
# In the user's cache, not the checkout's .cache/: every fresh clone's make test downloaded the same 121 MB of
# wheels again (14 s of its longest phase-1 test), as ansible-test's environments once were (scripts/collection.sh).
WHEELHOUSE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trexlab" / "wheelhouse"

SIM_SPEC = """\
name: simcheck
description: throughput of a simulated DUT, from an installed trexlab
generator: sim
generator_options: {capacity: 400000}
traffic: {frame_size: [64, 64], ip_version: [4, 4], directions: bidirectional, receive_tail: 0}
procedure: {name: throughput, params: {max_rate: 1000000, trial_duration: 1}}
repetitions: 2
"""

# A lab whose tester the trex generator would reach, on an address nobody answers: it stops before that.
INVENTORY = """\
all:
  vars:
    trexlab_lab: {name: t, kind: static, topology: loopback}
  children:
    testers:
      hosts:
        tester:
          ansible_host: 192.0.2.1
          test_ports:
            - {index: 0, name: p0, mac: "02:00:00:00:00:01", ipv4: 198.18.0.2/24}
            - {index: 1, name: p1, mac: "02:00:00:00:00:02", ipv4: 198.19.0.2/24}
"""


def checked(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
    return result


def pip(venv: Path, *args: str) -> list[str]:
    """This environment's pip installing into venv, from the wheelhouse only, pinned by requirements.txt (the
    shared wheelhouse also holds the versions other checkouts pin); no byte-compiling of every dependency."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile",
            "--no-index", "--find-links", str(WHEELHOUSE), "-c", str(REPO / "requirements.txt"), *args]


def make_venv(venv: Path, wheel: Path, env: dict) -> None:
    """A fresh venv with wheel[report] and its dependencies; the wheelhouse filled from the index the first time (or
    when pyproject.toml asks for something it lacks). No pip inside (this environment's pip installs into it)."""
    checked([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    if subprocess.run(pip(venv, f"{wheel}[report]"), capture_output=True, env=env, timeout=600).returncode != 0:
        checked([sys.executable, "-m", "pip", "download", "-q", "-d", str(WHEELHOUSE),
                 "-c", str(REPO / "requirements.txt"), f"{wheel}[report]"], timeout=600)
        checked(pip(venv, f"{wheel}[report]"), env=env, timeout=600)


def dependency_venv(wheel: Path, env: dict) -> Path:
    """The venv of wheel[report]'s dependencies and nothing else, in the user's cache beside the wheelhouse: made
    by installing the wheel and removing trexlab again, once per set of declared dependencies (the wheel's
    Requires-Dist), requirements.txt and Python; the venv of any other set is removed (one kept, 434 MB)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = sorted(line for line in archive.read(metadata).decode().splitlines()
                          if line.startswith("Requires-Dist:"))
    key = hashlib.sha256("\n".join([*requires, (REPO / "requirements.txt").read_text(), sys.version]).encode())
    root = WHEELHOUSE.with_name("package-test-venv")
    venv = root / key.hexdigest()[:16]
    if not (venv / "complete").is_file():
        shutil.rmtree(root, ignore_errors=True)
        make_venv(venv, wheel, env)
        checked([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "uninstall", "-q", "-y",
                 "trexlab"], env=env)
        (venv / "complete").write_text("")
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(run, workdir): run(*args) runs the fresh venv's trexlab in workdir, outside the checkout."""
    tmp = tmp_path_factory.mktemp("install")
    # The checkout as it is (tracked and new files), copied: the build leaves build/ and *.egg-info behind.
    files = checked(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).stdout
    source = tmp / "src"
    for name in filter(None, files.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    # trexlab's wheel with this environment's setuptools (no download); its dependencies from the wheelhouse,
    # filled from the index the first time (or when pyproject.toml asks for something it lacks).
    dist = tmp / "dist"
    checked([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
             str(source)], timeout=300)
    wheel = next(dist.glob("trexlab-*.whl"))
    # Byte-compiled as it is imported instead of at install: the first run writes what it imports (numpy, pandas,
    # matplotlib), and every later one reads it (0.9 s for trexlab --version instead of 2.7 s where
    # PYTHONDONTWRITEBYTECODE is set, as on the machine make test is timed on).
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TREXLAB_HOME", "TREXLAB_SWTESTER", "TREXLAB_INVENTORY",
                        "PYTHONDONTWRITEBYTECODE")}
    venv = tmp / "venv"
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    # One checkout at a time fills the wheelhouse and the dependencies' venv: another's install must not read a
    # wheel while pip writes it, nor copy a venv half made or half removed.
    with open(WHEELHOUSE.with_name("wheelhouse.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # The venv of the wheel's dependencies, hard-linked: installing the same 434 MB into every fresh venv cost
        # 9 CPU-s, most of the setup. Only trexlab itself is installed into the copy (new files: nothing in the copy
        # is written in place, so the shared one stays as pip left it). The dependencies' own scripts in bin/ name
        # the shared venv's python: the tests run the copy's trexlab and python only.
        dependencies = dependency_venv(wheel, env)
        if subprocess.run(["cp", "-al", str(dependencies), str(venv)], capture_output=True).returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)  # another file system than the user's cache: install anew
            make_venv(venv, wheel, env)
        else:
            checked(pip(venv, "--no-deps", str(wheel)), env=env, timeout=600)
    work = tmp / "work"
    work.mkdir()

    def run(*args: str, program: str = "trexlab") -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / program), *args], capture_output=True, text=True, cwd=work,
                              env=env, timeout=300)
    return run, work


def test_version_and_the_content_come_from_the_installed_package(installed):
    run, _ = installed
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"trexlab {__version__}"
    where = run("-c", "from trexlab.paths import paths; import json, trexlab; p = paths(); "
                "print(json.dumps([trexlab.__file__, str(p.root), p.checkout]))", program="python")
    package, root, checkout = json.loads(where.stdout)
    assert "site-packages" in package and str(REPO) not in package, package
    assert checkout is None and root.endswith("site-packages/trexlab/data"), root
    assert all((Path(root) / name).exists() for name in CONTENT)


def test_a_sim_procedure_runs(installed):
    run, work = installed
    result = run("throughput", "--generator", "sim", "--generator-opt", "capacity=1e6", "--frame-size", "64",
                 "--trial-duration", "1", "--results", "throughput", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["summary"] and (work / "throughput" / "rep-001" / "result.json").is_file()


def test_a_sim_campaign_and_its_report(installed):
    run, work = installed
    (work / "sim.yml").write_text(SIM_SPEC)
    campaign = run("campaign", "sim.yml")
    assert campaign.returncode == 0, campaign.stderr[-3000:]
    outcome = json.loads(campaign.stdout)
    assert outcome["done"] == 1 and outcome["failed"] == []
    report = run("report", "simcheck")
    assert report.returncode == 0, report.stderr[-3000:]
    html = Path(report.stdout.strip())
    assert html == work / outcome["campaign"] / "report.html" and html.stat().st_size > 10_000
    assert "simcheck" in html.read_text()


def test_a_shipped_experiment_is_found_by_name_and_a_lab_error_is_one_line(installed):
    run, _ = installed
    result = run("campaign", "demo")  # experiments/demo ships with the package; no lab here
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "inventory" in result.stderr, result.stderr


def test_no_trex_client_is_one_line_and_exit_2(installed):
    run, work = installed
    (work / "hosts.yml").write_text(INVENTORY)
    result = run("throughput", "--generator", "trex", "--inventory", "hosts.yml")
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().count("\n") == 0 and "TRex client not found" in result.stderr, result.stderr
