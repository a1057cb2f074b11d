"""make lab-status names each lab and says what of it is down: a local lab whose node sshd died (killed, OOM)
kept its namespaces and state, and nothing told the user which lab it was or that it was broken; lab-up's own
check of it printed nothing. The lab's owner (its state directory) was told by that sshd alone: once it died,
another checkout's lab-up of the same name took the lab for its own leftovers and removed it. Now the owner is
recorded (nslab.py record_owner): that lab-up is refused, and another checkout's lab-status names the owner, or
says it is unknown (a lab made before the record). Also: lab-up makes such a lab again (scripts/lab.sh
replaces the realiser's lab)."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from labtools import NSLAB_DIR, REPO, lab_env, lab_leftovers, run

pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

NAME = "tfst"


def status(env: dict):
    return run("scripts/lab.sh", "status", env=env, check=False, timeout=60)


def other_checkout(tmp_path):
    """scripts/lab.sh status of another checkout (its own .cache/labs, without this lab)."""
    # trexlab: the lab name's rule (rolevalues), which scripts/common.sh reads and nslab.py imports
    for part in ("scripts", "terraform/labs/local/scripts", "terraform/labs/vm/scripts", "trexlab"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return lambda: run(str(tmp_path / "scripts/lab.sh"), "status", env={"LAB_NAME": ""}, check=False, timeout=60)


def test_lab_status_names_a_lab_whose_sshd_is_down_and_lab_up_makes_it_again(tmp_path):
    env = {**lab_env(NAME, "loopback"), "LAB": "local"}
    state = REPO / ".cache/labs" / NAME
    elsewhere = other_checkout(tmp_path)
    decoy = None
    try:
        up = run("scripts/lab.sh", "up", env=env, check=False, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        ok = status(env)
        assert (ok.returncode, ok.stdout.strip()) == (0, f"lab {NAME} (local, loopback, {state}): up"), ok
        assert f"lab {NAME} (local, loopback, {state}): up" in status({**env, "LAB_NAME": ""}).stdout
        assert f"lab {NAME} (another checkout's: {os.path.realpath(state)}): its namespaces are up" \
            in elsewhere().stdout

        pid = int((state / "tester" / "sshd.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.02)
        # Its number handed to another process, as the kernel does (pid_max 32768 here: make test wraps it): a
        # living process under the pid file's number is no sshd of the node (a fresh clone's lab-up took the lab
        # for up, "up in 0 s", and remade nothing).
        decoy = subprocess.Popen(["sleep", "300"])
        (state / "tester" / "sshd.pid").write_text(f"{decoy.pid}\n")
        broken = status(env)
        assert broken.returncode == 1, broken
        assert broken.stdout.startswith(f"lab {NAME} (local, loopback, {state}): down: tester: sshd is down"), broken
        owner = f"lab {NAME} (another checkout's: {os.path.realpath(state)}): its namespaces are up"
        assert owner in elsewhere().stdout, "the owner of a lab whose sshd is down is not named"
        # Another checkout's lab of this name: refused, naming this one, instead of taking this lab for leftovers.
        plan = json.loads((state / "terraform.tfstate").read_text())["outputs"]["plan"]["value"]
        other = {**plan, "state_dir": str(tmp_path / "other-checkout")}
        refused = run("python3", str(NSLAB_DIR / "nslab.py"), "up", env={"NSLAB_PLAN": json.dumps(other)},
                      check=False, timeout=60)
        assert refused.returncode != 0 and f"a lab of that name is up for another state directory ({state}" \
            in refused.stderr, refused
        assert status(env).returncode == 1 and (state / "tester" / "sshd_config").exists(), "the lab was taken"
        # A lab made before owners were recorded (its record removed here): no sshd and no record tell its owner.
        record = Path("/run/trexlab/owners") / NAME
        assert record.read_text() == f"{os.path.realpath(state)}\n"
        record.unlink()
        unknown = f"lab {NAME} (owner unknown: no sshd runs in its namespaces tl-{NAME}-* and none is recorded)"
        assert unknown in elsewhere().stdout

        again = run("scripts/lab.sh", "up", env=env, check=False, timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "tester: sshd is down" in again.stdout + again.stderr, "lab-up said nothing of what it makes again"
        assert status(env).returncode == 0
    finally:
        run("scripts/lab.sh", "down", env=env, check=False, timeout=300)
        if decoy is not None:
            decoy.kill()
            decoy.wait()
    assert lab_leftovers(NAME) == []
    assert not (Path("/run/trexlab/owners") / NAME).exists(), "lab-down left the lab's owner recorded"
    gone = status(env)
    assert (gone.returncode, gone.stdout.strip()) == (3, f"lab {NAME}: not up (no Terraform state): make lab-up "
                                                         f"LAB_NAME={NAME} brings it up"), gone
