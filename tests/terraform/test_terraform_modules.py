"""terraform test of the shared modules every lab kind uses: the inventory contract and the management block."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import pytest
import yaml

from trexlab.testbed.inventory import ROLE_GROUPS, LabError, load_lab

from labtools import REPO, VENV, terraform, terraform_test, tf_env

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(not shutil.which("terraform"), reason="needs terraform on PATH")]


def test_inventory_module_groups_hosts_and_refuses_what_the_contract_does_not_allow(tmp_path):
    terraform_test("terraform/modules/inventory", tmp_path)


def test_management_module_derives_block_and_mac_byte_from_the_name(tmp_path):
    terraform_test("terraform/modules/management", tmp_path)


def test_a_refused_host_from_a_labs_state_leaves_the_lab_destroyable(tmp_path):
    """A MAAS lab's ansible_host is MAAS's answer, known only after its machines are allocated. The inventory
    module refuses one ssh would read as an option, and the lab can still be destroyed (released): a refusal by a
    variable validation failed the destroy plan as well. A terraform_data output stands in for MAAS."""
    root = tmp_path / "lab"
    root.mkdir()
    (root / "main.tf").write_text(textwrap.dedent(f"""\
        resource "terraform_data" "machine" {{
          input = "-oProxyCommand=touch /tmp/x"
        }}
        module "inventory" {{
          source = "{REPO / 'terraform/modules/inventory'}"
          lab    = {{ name = "t1", kind = "maas", topology = "loopback" }}
          nodes = {{ tester = {{ role = "tester", ansible_host = terraform_data.machine.output, test_ports = [
            {{ index = 0, name = "a", mac = "02:00:00:00:00:01" }},
            {{ index = 1, name = "b", mac = "02:00:00:00:00:02" }}] }} }}
        }}
        output "inventory_yaml" {{
          value = module.inventory.inventory_yaml
        }}
        """))
    env = tf_env(tmp_path)
    assert terraform(str(root), "init", "-input=false", env=env).returncode == 0
    apply = terraform(str(root), "apply", "-auto-approve", "-input=false", env=env)
    assert apply.returncode != 0 and "tester.ansible_host" in " ".join(apply.stderr.split()), apply.stderr[-2000:]
    destroy = terraform(str(root), "destroy", "-auto-approve", "-input=false", env=env)
    assert destroy.returncode == 0, destroy.stderr[-2000:]
    assert json.loads((root / "terraform.tfstate").read_text())["resources"] == []


def test_ansible_reads_the_rendered_inventory_without_a_warning_and_trexlab_reads_every_role(tmp_path):
    """Group tester held host tester (and client client, server server): Ansible warned "Found both group and host
    with same name" on every make configure, and a user who sees a warning on every run stops reading them. The
    module renders a dual lab with TCP endpoints; ansible-inventory must read it without a warning, load_lab must
    find each node in its role (trexlab's group names are the module's) and refuse an inventory of the old shape
    with advice (make configure's refusal of one: tests/test_hostile_front_door.py)."""
    root = tmp_path / "lab"
    root.mkdir()
    ports = [f'{{ index = {i}, name = "p{i}", mac = "02:00:00:00:0{n}:0{i}", peer_mac = "02:00:00:00:0{n}:0{i}" }}'
             for n in range(1, 6) for i in (0, 1)]
    (root / "main.tf").write_text(textwrap.dedent(f"""\
        module "inventory" {{
          source = "{REPO / 'terraform/modules/inventory'}"
          lab    = {{ name = "t1", kind = "static", topology = "dual" }}
          nodes = {{
            tester = {{ role = "tester", ansible_host = "h1", test_ports = [{ports[0]}, {ports[1]}] }}
            dut1   = {{ role = "dut", ansible_host = "h2", dut_position = 1, test_ports = [{ports[2]}, {ports[3]}] }}
            dut2   = {{ role = "dut", ansible_host = "h3", dut_position = 2, test_ports = [{ports[4]}, {ports[5]}] }}
            client = {{ role = "client", ansible_host = "h4", test_ports = [{ports[6]}] }}
            server = {{ role = "server", ansible_host = "h5", test_ports = [{ports[8]}] }}
          }}
        }}
        output "inventory_yaml" {{
          value = module.inventory.inventory_yaml
        }}
        """))
    env = tf_env(tmp_path)
    assert terraform(str(root), "init", "-input=false", env=env).returncode == 0
    apply = terraform(str(root), "apply", "-auto-approve", "-input=false", env=env)
    assert apply.returncode == 0, apply.stderr[-2000:]
    hosts_yml = tmp_path / "hosts.yml"
    hosts_yml.write_text(terraform(str(root), "output", "-raw", "inventory_yaml", env=env).stdout)

    ansible_env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    read = subprocess.run([str(VENV / "bin/ansible-inventory"), "-i", str(hosts_yml), "--list"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=ansible_env)
    assert read.returncode == 0 and "WARNING" not in read.stdout + read.stderr, read.stderr[-2000:]
    listed = json.loads(read.stdout)
    assert {g: sorted(listed[g]["hosts"]) for g in ROLE_GROUPS.values()} == {
        "testers": ["tester"], "duts": ["dut1", "dut2"], "clients": ["client"], "servers": ["server"]}

    lab = load_lab(hosts_yml)
    assert {n.name: n.role for n in lab.nodes.values()} == {
        "tester": "tester", "dut1": "dut", "dut2": "dut", "client": "client", "server": "server"}

    old = yaml.safe_load(hosts_yml.read_text())
    old["all"]["children"] = {role: old["all"]["children"][group] for role, group in ROLE_GROUPS.items()}
    hosts_yml.write_text(yaml.safe_dump(old))
    with pytest.raises(LabError, match=r"all\.children\.client: .*run this lab's make lab-up again"):
        load_lab(hosts_yml)
