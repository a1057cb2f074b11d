"""A lab of the same name from another checkout (another state directory): its up is refused and its down
removes only its own files, leaving the lab that is up alone (terraform/labs/local/scripts/nslab.py).

Namespaces, links and role state are named by the lab's name only, so two clones of the repository (or two
worktrees) each running `make lab-up` with the default name met on one set of names: the second up began by
removing "whatever an interrupted run left of this lab", which was the first clone's running lab."""

import json

import pytest

from labtools import REPO, lab_env, lab_leftovers, run

pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]

NAME = "tfcl"
NSLAB = str(REPO / "terraform/labs/local/scripts/nslab.py")


def nslab(action: str, plan: dict) -> object:
    return run("python3", NSLAB, action, env={"NSLAB_PLAN": json.dumps(plan)}, check=False, timeout=120)


def test_the_same_lab_name_from_another_state_directory_leaves_the_lab_that_is_up(tmp_path):
    env = {**lab_env(NAME, "loopback"), "LAB": "local"}
    state = REPO / ".cache/labs" / NAME
    try:
        up = run("scripts/lab.sh", "up", env=env, check=False, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        tfstate = json.loads((state / "terraform.tfstate").read_text())
        plan = json.loads(next(r for r in tfstate["resources"] if r["name"] == "lab")
                          ["instances"][0]["attributes"]["input"]["value"]["plan"])
        assert nslab("status", plan).returncode == 0
        other = {**plan, "state_dir": str(tmp_path / "other-checkout")}

        refused = nslab("up", other)
        assert refused.returncode != 0
        assert f"a lab of that name is up for another state directory ({state}" in refused.stderr, refused.stderr
        assert nslab("status", plan).returncode == 0, "the other checkout's lab-up took this lab down"

        # Its lab-down (what Terraform runs after that failed up): only its own files.
        (tmp_path / "other-checkout" / "tester").mkdir(parents=True)
        (tmp_path / "other-checkout" / "tester" / "sshd_config").write_text("")
        down = nslab("down", other)
        assert down.returncode == 0, down.stderr
        assert nslab("status", plan).returncode == 0, "the other checkout's lab-down took this lab down"
        assert not (tmp_path / "other-checkout").exists()
    finally:
        run("scripts/lab.sh", "down", env=env, check=False, timeout=300)
    assert lab_leftovers(NAME) == []
