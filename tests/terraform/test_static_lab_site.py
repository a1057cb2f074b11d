"""The static lab's inventory drives playbooks/site.yml like the local lab's: same shape, same hosts.

A local namespace lab (st1) stands in for machines you already have: its nodes are declared in a
static tfvars file as bare-metal machines would be (SSH address, key, test ports by name and MAC, CPUs),
make lab-up LAB=static generates the inventory, and site.yml runs in check mode against it over SSH.
"""

from __future__ import annotations

import json

import pytest
import yaml

from trexlab.testbed.inventory import load_lab

from labtools import REPO, lab_env, lab_leftovers, playbook, run

# Configuration and frame counts at low rates, nothing that a busy CPU changes: make test runs it beside
# other such tests (the `unmeasured` marker).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]


def static_tfvars(local_inventory: dict) -> str:
    """The local lab's nodes as a static declaration: all on this one machine, so CPU lists disjoint."""
    children = local_inventory["all"]["children"]
    lines = ["machines = {"]
    for group in ("testers", "duts"):
        for name, hv in (children[group].get("hosts") or {}).items():
            ports = ", ".join(f"{{ name = {json.dumps(p['name'])}, mac = {json.dumps(p['mac'])} }}"
                              for p in hv["test_ports"])
            lines.append(f"  {name} = {{ ansible_host = {json.dumps(hv['ansible_host'])}, ansible_user = \"root\", "
                         f"ssh_key = {json.dumps(hv['ansible_ssh_private_key_file'])}, machine = \"this-host\", "
                         f"cpus = {json.dumps(hv['trexlab_cpus'])}, test_ports = [{ports}] }}")
    return "\n".join([*lines, "}", ""])


def without_lab_identity(inventory: dict) -> dict:
    """The inventory less what must differ between the two labs: the lab's name/kind, namespaces and its own
    known_hosts and host-key policy (the local lab knows the keys it made; bare metal records them at first use)."""
    data = json.loads(json.dumps(inventory))
    data["all"]["vars"].pop("trexlab_lab")
    for group in data["all"]["children"].values():
        for hv in (group.get("hosts") or {}).values():
            for key in ("trexlab_netns", "ansible_ssh_common_args", "trexlab_known_hosts", "trexlab_host_key_checking"):
                hv.pop(key, None)
    return data


def test_static_inventory_of_the_local_hosts_drives_site_check(tmp_path):
    # Without the local lab's TCP endpoints (client, server): the static declaration here has none.
    local_env = {**lab_env("st1", "single"), "TF_VAR_tcp_endpoints": "false"}
    static_env = {**lab_env("st1s", "single"), "LAB": "static", "TFVARS": str(tmp_path / "st1.tfvars")}
    try:
        run("scripts/lab.sh", "up", env=local_env)
        local = yaml.safe_load((REPO / "inventory/generated/st1/hosts.yml").read_text())
        (tmp_path / "st1.tfvars").write_text(static_tfvars(local))

        up = run("scripts/lab.sh", "up", env=static_env, check=False)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        static = yaml.safe_load((REPO / "inventory/generated/st1s/hosts.yml").read_text())
        assert static["all"]["vars"]["trexlab_lab"] == {"name": "st1s", "kind": "static", "topology": "single"}
        assert without_lab_identity(static) == without_lab_identity(local), \
            "the static lab computes the same addresses, peers and host vars as the local lab"

        lab = load_lab(REPO / "inventory/generated/st1s/hosts.yml")
        assert lab.tester.netns is None, "reached over SSH like bare metal, not by entering a namespace"
        result = playbook(lab, "playbooks/site.yml", "--check")
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        recap = [line for line in result.stdout.splitlines() if "unreachable=" in line]
        assert len(recap) == 2 and all("unreachable=0" in line and "failed=0" in line for line in recap), recap
    finally:
        down = run("scripts/lab.sh", "down", env={**static_env, "TFVARS": ""}, check=False)
        run("scripts/lab.sh", "down", env=local_env, check=False)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not (REPO / "inventory/generated/st1s").exists() and not (REPO / ".cache/labs/st1s").exists()
    assert lab_leftovers("st1") == []
