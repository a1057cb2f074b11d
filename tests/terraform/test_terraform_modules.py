"""terraform test of the shared modules every lab kind uses: the inventory contract and the management block."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from labtools import REPO, terraform, terraform_test, tf_env

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
