"""lab-up of a static lab again with a declaration Terraform refuses: the lab that is up can still be taken down.

lab.sh kept each lab-up's TFVARS as the declaration lab-down plans with, before the apply: a refused one (an
ansible_host ssh would read as an option) replaced the lab's own, and lab-down's plan failed on it; on MAAS the
lab's machines stayed allocated until the kept file was mended by hand. No lab, no network: a static lab makes
nothing but its inventory."""

from __future__ import annotations

import shutil

import pytest

from labtools import REPO, run

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]

NAME = "tfrd"
EXAMPLE = REPO / "terraform/labs/static/examples/single.tfvars"


def test_a_refused_declaration_leaves_the_lab_that_is_up_to_its_own(tmp_path):
    env = {"LAB": "static", "LAB_NAME": NAME, "TOPOLOGY": "single"}
    state_dir, inventory = REPO / ".cache/labs" / NAME, REPO / "inventory/generated" / NAME
    assert not state_dir.exists(), f"{state_dir} is another test's"
    bad = tmp_path / "bad.tfvars"
    bad.write_text(EXAMPLE.read_text().replace('"192.0.2.20"', '"-oProxyCommand=touch /tmp/x"'))
    try:
        up = run("scripts/lab.sh", "up", env={**env, "TFVARS": str(EXAMPLE)}, check=False, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        hosts = (inventory / "hosts.yml").read_text()

        again = run("scripts/lab.sh", "up", env={**env, "TFVARS": str(bad)}, check=False, timeout=300)
        assert again.returncode != 0 and "Every ansible_host must be a host name or address" in again.stderr, \
            again.stdout + again.stderr
        assert (inventory / "hosts.yml").read_text() == hosts
        assert (state_dir / "machines.tfvars").read_text() == EXAMPLE.read_text(), "the lab's declaration was replaced"

        down = run("scripts/lab.sh", "down", env=env, check=False, timeout=300)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not state_dir.exists() and not inventory.exists()
    finally:
        if state_dir.exists():
            shutil.rmtree(state_dir)
        shutil.rmtree(inventory, ignore_errors=True)
