"""One inventory shape for every lab kind (docs/architecture.md, "Inventory shape"): the inventory module's value as
the local, VM and static labs render it, compared with each other without applying anything (terraform console
evaluates the root module's plan, offline).

Per group, per host: the same host variables with values of the same JSON type, and test ports with the same keys;
only the variables the docs name as one kind's differ. The MAAS lab (static's nodes plus MAAS's answers) needs
canonical/maas even to evaluate; tests/terraform/test_maas_lab_fake_region.py reads its inventory's keys.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from labtools import REPO, offline, terraform, tf_env

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]

#: Host variables only some lab kinds give (docs/architecture.md): namespaces on the local lab and the VM lab's
#: tester and endpoints, the VM lab's accelerator on its DUTs, sudo and MAAS's names on bare metal.
KIND_VARS = {"local": {"trexlab_netns"}, "vm": {"trexlab_netns", "trexlab_vm_accel"}, "static": {"ansible_become"}}

#: A static lab of a tester, one DUT and the TCP endpoints, declared as bare metal would be.
STATIC_MACHINES = """
machines = {
  tester = { ansible_host = "192.0.2.10", ssh_key = "/root/.ssh/id", cpus = [2, 3], test_ports = [
    { name = "t0", mac = "02:00:00:00:01:00", pci = "0000:41:00.0" }, { name = "t1", mac = "02:00:00:00:01:01" }] }
  dut1 = { ansible_host = "192.0.2.20", ansible_user = "admin", become = true, cpus = [4], test_ports = [
    { name = "l", mac = "02:00:00:00:02:00" }, { name = "r", mac = "02:00:00:00:02:01" }] }
  client = { ansible_host = "192.0.2.30", test_ports = [{ name = "c0", mac = "02:00:00:00:03:00" }] }
  server = { ansible_host = "192.0.2.40", test_ports = [{ name = "s0", mac = "02:00:00:00:04:00" }] }
}
"""


def rendered(kind: str, tmp_path) -> dict:
    """The inventory (as a value) a lab kind's root module gives for a single topology with TCP endpoints."""
    module = f"terraform/labs/{kind}"
    env = tf_env(tmp_path / kind)
    init = terraform(module, "init", "-input=false", f"-backend-config=path={tmp_path / kind / 'terraform.tfstate'}",
                     env=env)
    assert init.returncode == 0, init.stdout[-2000:] + init.stderr[-2000:]
    state_dir = tmp_path / kind / "state"
    args = [f"-var=state_dir={state_dir}", "-var=lab_name=shp"]
    expression = "jsonencode(module.inventory.inventory)"
    if kind == "vm":
        args.append(f"-var=image_dir={state_dir}/image")
    elif kind == "static":
        (tmp_path / "static.tfvars").write_text(STATIC_MACHINES)
        args = [f"-var-file={tmp_path / 'static.tfvars'}", f"-var=known_hosts_file={state_dir}/known_hosts",
                "-var=lab_name=shp"]
        expression = "jsonencode(module.inventory[0].inventory)"
    console = subprocess.run(offline(["terraform", f"-chdir={module}", "console", *args]), input=expression + "\n",
                             capture_output=True, text=True, timeout=180, cwd=REPO, env={**os.environ, **env})
    assert console.returncode == 0, console.stderr[-2000:]
    return json.loads(json.loads(console.stdout))


def json_type(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}[type(value)]


#: Keys whose value is a string or null on every lab kind: a port without a PCI address (veth, tap; a NIC left to
#: the kernel), a node reached with the SSH agent's keys (bare metal without ssh_key; Ansible then passes no -i).
STRING_OR_NULL = {"pci", "ansible_ssh_private_key_file"}


def shape(inventory: dict, kind: str) -> dict:
    """Groups -> hosts -> host variable -> JSON type (test_ports: each port's keys and types), less the kind's own
    variables."""
    def typed(key: str, value) -> str:
        return "string|null" if key in STRING_OR_NULL else json_type(value)

    return {
        "vars": sorted(inventory["all"]["vars"]),
        "groups": {group: {host: {k: [{pk: typed(pk, pv) for pk, pv in p.items()} for p in v]
                                  if k == "test_ports" else typed(k, v)
                                  for k, v in host_vars.items() if k not in KIND_VARS[kind]}
                           for host, host_vars in (children.get("hosts") or {}).items()}
                   for group, children in inventory["all"]["children"].items()},
    }


def test_local_vm_and_static_labs_render_one_inventory_shape(tmp_path):
    inventories = {kind: rendered(kind, tmp_path) for kind in KIND_VARS}
    assert {kind: inv["all"]["vars"]["trexlab_lab"]["kind"] for kind, inv in inventories.items()} == {
        kind: kind for kind in KIND_VARS}
    shapes = {kind: shape(inv, kind) for kind, inv in inventories.items()}
    assert set(shapes["local"]["groups"]) == {"testers", "duts", "clients", "servers"}
    assert shapes["vm"] == shapes["local"]
    assert shapes["static"] == shapes["local"]
    # What each kind adds is where the docs say: namespaces, the VM DUT's accelerator, bare metal's sudo.
    hosts = {kind: {h: hv for c in inv["all"]["children"].values() for h, hv in c["hosts"].items()}
             for kind, inv in inventories.items()}
    assert {h for h, hv in hosts["local"].items() if "trexlab_netns" in hv} == set(hosts["local"])
    assert {h for h, hv in hosts["vm"].items() if "trexlab_netns" in hv} == {"tester", "client", "server"}
    assert {h for h, hv in hosts["vm"].items() if "trexlab_vm_accel" in hv} == {"dut1"}
    assert {h for h, hv in hosts["static"].items() if "ansible_become" in hv} == {"dut1"}
