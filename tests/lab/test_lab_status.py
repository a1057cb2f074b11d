"""make lab-status names each lab and says what of it is down: a local lab whose node sshd died (killed, OOM)
kept its namespaces and state, and nothing told the user which lab it was or that it was broken; lab-up's own
check of it printed nothing. Another checkout's lab-status lists it too, with its owner while its sshd tells it
and as one of unknown owner once no sshd does. Also: lab-up makes such a lab again (scripts/lab.sh replaces the
realiser's lab)."""

import os
import shutil
import signal
import time

import pytest

from labtools import REPO, lab_env, lab_leftovers, run

pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

NAME = "tfst"


def status(env: dict):
    return run("scripts/lab.sh", "status", env=env, check=False, timeout=60)


def other_checkout(tmp_path):
    """scripts/lab.sh status of another checkout (its own .cache/labs, without this lab)."""
    for part in ("scripts", "terraform/labs/local/scripts", "terraform/labs/vm/scripts"):
        shutil.copytree(REPO / part, tmp_path / part)
    return lambda: run(str(tmp_path / "scripts/lab.sh"), "status", env={"LAB_NAME": ""}, check=False, timeout=60)


def test_lab_status_names_a_lab_whose_sshd_is_down_and_lab_up_makes_it_again(tmp_path):
    env = {**lab_env(NAME, "loopback"), "LAB": "local"}
    state = REPO / ".cache/labs" / NAME
    elsewhere = other_checkout(tmp_path)
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
        broken = status(env)
        assert broken.returncode == 1, broken
        assert broken.stdout.startswith(f"lab {NAME} (local, loopback, {state}): down: tester: sshd is down"), broken
        assert f"lab {NAME} (owner unknown: no sshd runs in its namespaces tl-{NAME}-*)" in elsewhere().stdout

        again = run("scripts/lab.sh", "up", env=env, check=False, timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "tester: sshd is down" in again.stdout + again.stderr, "lab-up said nothing of what it makes again"
        assert status(env).returncode == 0
    finally:
        run("scripts/lab.sh", "down", env=env, check=False, timeout=300)
    assert lab_leftovers(NAME) == []
    gone = status(env)
    assert (gone.returncode, gone.stdout.strip()) == (0, f"lab {NAME}: not up (no Terraform state)"), gone
