"""make lab-up / lab-down of a lab name with another kind (LAB) than the lab was made as: refused in one line,
before Terraform reads the lab's state (scripts/lab.sh, made_as). No lab is made: the state directory is
written by hand as lab-up leaves it."""

from __future__ import annotations

import json
import shutil

import pytest

from labtools import REPO, run

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]


@pytest.mark.parametrize(("name", "recorded", "action", "env", "message"), [
    # What lab-up records.
    ("tfk1", {"kind": "local\n", "terraform.tfstate": json.dumps({"version": 4, "resources": []})}, "up",
     {"LAB": "static", "TFVARS": "terraform/labs/static/examples/single.tfvars"},
     "LAB=static: lab tfk1 is a local lab: take it down first (make lab-down LAB=local LAB_NAME=tfk1)"),
    # A lab made before lab-up recorded its kind: its state names its realiser.
    ("tfk2", {"terraform.tfstate": json.dumps({"version": 4, "resources": [{"type": "terraform_data", "name": "lab",
                                                "instances": [{"attributes": {"input": {"value": {
                                                    "script": "/x/terraform/labs/vm/scripts/vmlab.py"}}}}]}]})},
     "down", {"LAB": "local"}, "LAB=local: lab tfk2 is a vm lab: make lab-down LAB=vm LAB_NAME=tfk2"),
])
def test_another_kind_over_a_lab_is_refused_before_its_state_is_read(name, recorded, action, env, message):
    state_dir = REPO / ".cache/labs" / name
    assert not state_dir.exists(), f"{state_dir} is another test's"
    try:
        state_dir.mkdir(parents=True)
        for file, text in recorded.items():
            (state_dir / file).write_text(text)
        before = {p.name: p.read_text() for p in state_dir.iterdir()}
        result = run("scripts/lab.sh", action, env={"LAB_NAME": name, "TOPOLOGY": "single", **env}, check=False)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr
        assert {p.name: p.read_text() for p in state_dir.iterdir()} == before, "the lab's state directory changed"
        assert not (REPO / "inventory/generated" / name).exists()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        shutil.rmtree(REPO / "inventory/generated" / name, ignore_errors=True)


def test_a_lab_up_that_failed_before_terraform_ran_binds_no_kind():
    """A recorded kind without a Terraform state: nothing of that lab is up, so another kind may take the name."""
    name = "tfk3"
    state_dir = REPO / ".cache/labs" / name
    assert not state_dir.exists(), f"{state_dir} is another test's"
    try:
        state_dir.mkdir(parents=True)
        (state_dir / "kind").write_text("vm\n")
        result = run("scripts/lab.sh", "down", env={"LAB_NAME": name, "LAB": "local"}, check=False)
        assert result.returncode == 0 and "nothing to destroy" in result.stdout, result.stdout + result.stderr
        assert not state_dir.exists()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
