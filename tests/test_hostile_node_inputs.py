"""Values that reach a node's shell, nft rules, files or ssh (trexlab.rolevalues): refused with one line, never run.

The roles are run for real (ansible-playbook, local connection) with hostile values: each host must fail at the
role's check, before any task that changes something, and the machine must be as it was. No lab is needed.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from test_hostile_front_door import checkout_state, out

from trexlab import impairment, reference_dut, rolevalues
from trexlab.generators.software import SoftwareGenerator
from trexlab.params import InvalidParameter
from trexlab.spec.experiment import with_role_defaults
from trexlab.testbed.inventory import LabError, load_lab

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("VENV", REPO / ".venv"))

@pytest.mark.parametrize("name", ['right" accept; #', "right; reboot", "a" * 16])
def test_impairment_and_reference_rules_refuse_a_port_name_that_is_not_an_interface(name):
    ports = [{"index": 0, "name": "left"}, {"index": 1, "name": name}]
    with pytest.raises(InvalidParameter, match=r"^test_ports\[1\]\.name="):
        impairment.plan(with_role_defaults("impairment", {"loss_every_nth": 10}), ports, kernel_has_netem=False)
    with pytest.raises(InvalidParameter, match=r"^test_ports\[1\]\.name="):
        reference_dut.plan(with_role_defaults("reference", {"rate_fps": 100_000}), ports)


def write_inventory(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def inventory(**tester: object) -> dict:
    host = {"ansible_host": "192.0.2.10", "test_ports": [
        {"index": 0, "name": "t0", "mac": "02:00:00:00:00:01"}, {"index": 1, "name": "t1", "mac": "02:00:00:00:00:02"}],
        **tester}
    return {"all": {"vars": {"trexlab_lab": {"name": "hx", "kind": "static", "topology": "loopback"}},
                    "children": {"testers": {"hosts": {"tester": host}}}}}


@pytest.mark.parametrize(("data", "key"), [
    ("- a\n- b\n", ": a mapping, got list"),
    ({"all": "tester"}, ": all: a mapping"),
    ({"all": {"children": ["tester"]}}, ": all.children: a mapping"),
    ({"all": {"vars": "x"}}, ": all.vars: a mapping"),
    ({"all": {"children": {"testers": {"hosts": ["t"]}}}}, ": all.children.testers.hosts: a mapping"),
    ({"all": {"children": {"testers": {"hosts": {"t": "x"}}}}}, ": t: a mapping"),
    (inventory(ansible_user="-oProxyCommand=touch /tmp/x"), "tester.ansible_user="),
    (inventory(ansible_port="22 -oProxyCommand=touch /tmp/x"), "tester.ansible_port"),
    (inventory(test_ports=[{"index": 0, "name": "t0; reboot", "mac": "02:00:00:00:00:01"}]),
     "tester.test_ports[0].name="),
    (inventory(test_ports="t0"), "tester.test_ports: a list"),
])
def test_a_hostile_or_malformed_inventory_is_one_line_naming_the_key(tmp_path, data, key):
    path = write_inventory(tmp_path, data)
    with pytest.raises(LabError) as exc:
        load_lab(path)
    message = str(exc.value)
    assert message.startswith(f"inventory {path}") and key in message and "\n" not in message, message


@pytest.mark.parametrize(("lab", "advice"), [
    ("rvu", "lab rvu is not up: run 'make lab-up LAB_NAME=rvu' first (and LAB= its kind, if not local)"),
    ("vm", "lab vm is not up: run 'make lab-up LAB=vm' first"),
    ("local", "lab local is not up: run 'make lab-up' first"),
    (None, "make lab-up writes a lab's inventory to inventory/generated/<LAB_NAME>/hosts.yml"),
])
def test_a_missing_inventory_names_the_lab_up_of_its_own_lab(tmp_path, lab, advice):
    """--inventory of a lab that is not up: a plain 'make lab-up' would bring up lab local, not this one."""
    path = tmp_path / ("inventory/generated/" + lab if lab else "mine") / "hosts.yml"
    with pytest.raises(LabError) as exc:
        load_lab(path)
    assert str(exc.value) == f"inventory {path} not found: {advice}"


def test_ssh_to_a_node_checks_its_host_key_against_the_labs_known_hosts(tmp_path):
    """The inventory's known_hosts and policy (terraform/modules/inventory) reach trexlab's own ssh."""
    known = inventory(trexlab_known_hosts=str(tmp_path / "known_hosts"), trexlab_host_key_checking="yes")
    ssh = load_lab(write_inventory(tmp_path, known)).tester.ssh()
    assert "StrictHostKeyChecking=yes" in ssh and f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in ssh
    for bad in ({"trexlab_host_key_checking": "no -oProxyCommand=x"}, {"trexlab_known_hosts": "/a b"}):
        with pytest.raises(LabError, match="trexlab_known_hosts"):
            load_lab(write_inventory(tmp_path, inventory(**{**known["all"]["children"]["testers"]["hosts"]["tester"],
                                                            **bad}))).tester.ssh()


def test_the_software_generator_runs_only_an_swtester_build(tmp_path):
    lab = load_lab(write_inventory(tmp_path, inventory(trexlab_netns="tl-hx-tester")))
    for program in ("/bin/sh", "/usr/bin/touch", str(REPO / "swtester/../swtester/swtester"), "swtester"):
        with pytest.raises(InvalidParameter, match=r"^generator_options\.binary="):
            SoftwareGenerator(lab, binary=program)
    remote = load_lab(write_inventory(tmp_path, inventory()))
    with pytest.raises(InvalidParameter, match=r"^generator_options\.binary="):
        SoftwareGenerator(remote, binary="/tmp/swtester")
    assert SoftwareGenerator(remote, binary="swtester-asan").binary == "swtester-asan"


# Each host carries one hostile value for one role; its group names the role (see PLAY).
ROLE_INPUTS = {
    "siit_tayga": {
        "s1": ({"siit_tayga_device": "siit0; touch {mark}"}, "siit_tayga_device"),
        "s2": ({"siit_tayga_device": "$(touch {mark})"}, "siit_tayga_device"),
        "s3": ({"siit_tayga_dir": "/"}, "siit_tayga_dir"),
        "s4": ({"siit_tayga_dir": "/", "siit_tayga_state": "absent"}, "siit_tayga_dir"),
        "s5": ({"siit_tayga_dir": "/var/lib/trexlab/hx/s5/../../../../etc"}, "siit_tayga_dir"),
        "s6": ({"siit_tayga_dir": "/var/lib/trexlab/hx/s6/x;touch {mark}"}, "siit_tayga_dir"),
        "s7": ({"siit_tayga_ipv4_addr": "192.0.0.8\nmap 0.0.0.0 ::"}, "siit_tayga_ipv4_addr"),
        "s8": ({"siit_tayga_prefix": "64:ff9b::/96; touch {mark}"}, "siit_tayga_prefix"),
    },
    "dut_tuning": {
        "t1": ({"dut_tuning_cpus": [0], "test_ports": [{"index": 0, "name": "p0;touch {mark}"},
                                                      {"index": 1, "name": "p1"}]}, "test_ports[0].name"),
    },
    "netem": {
        "n1": ({"netem_loss_every_nth": 2, "test_ports": [{"index": 0, "name": 'p0" accept #'},
                                                          {"index": 1, "name": "p1"}]}, "test_ports[0].name"),
        "n2": ({"netem_delay_ms": 5, "netem_backend": "netem",
                "test_ports": [{"index": 0, "name": "p0"}, {"index": 1, "name": "p1 root; touch {mark}"}]},
               "test_ports[1].name"),
    },
}


def role_state(lab: str) -> dict:
    """What the roles run here (this host's own namespace, local connection) could change: their state directories
    (<STATE_ROOT>/<lab>/<host>), the nftables ruleset (netem's table), the checkout. Not the rest of
    test_hostile_front_door's machine_state (the machine's namespaces, the other labs under STATE_ROOT, the receive
    backlog): the labs of other checkouts' make test, and of this one's lab phases, change those at any moment, and
    this test failed then."""
    root = Path(rolevalues.STATE_ROOT) / lab
    return {
        "state": sorted(str(p) for p in root.rglob("*")) if root.exists() else None,
        "nft": out("nft", "list", "ruleset") if os.geteuid() == 0 else "",
        "checkout": checkout_state(),
    }


PLAY = """- name: Each host runs the role its group names, with its hostile value
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: "trexlab.lab.{{ group_names[0] }}"
"""


def test_roles_refuse_hostile_values_before_they_change_anything(tmp_path):
    mark = tmp_path / "injected"
    children = {role: {"hosts": {host: {k: yaml.safe_load(yaml.safe_dump(v).replace("{mark}", str(mark)))
                                        for k, v in values.items()}
                                 for host, (values, _) in hosts.items()}}
                for role, hosts in ROLE_INPUTS.items()}
    hosts_yml = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": str(VENV / "bin/python"),
                                  "trexlab_lab": {"name": "hx"},
                                  "test_ports": [{"index": 0, "name": "p0"}, {"index": 1, "name": "p1"}]},
                         "children": children}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(hosts_yml))
    (tmp_path / "play.yml").write_text(PLAY)
    lab = hosts_yml["all"]["vars"]["trexlab_lab"]["name"]
    before = role_state(lab)
    result = subprocess.run([str(VENV / "bin/ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                             str(tmp_path / "play.yml")], capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    assert result.returncode == 2, result.stdout[-3000:]
    recap = dict(re.findall(r"^(\w+)\s+:\s+(.*)$", result.stdout, re.MULTILINE))
    for hosts in ROLE_INPUTS.values():
        for host, (_, key) in hosts.items():
            assert re.search(r"changed=0 .*failed=1", recap[host]), (host, recap[host])
            errors = re.findall(rf"^\[ERROR\]: Task failed: Action failed: (?:netem: )?{re.escape(key)}=.*$",
                                result.stdout + result.stderr, re.MULTILINE)
            assert errors, (host, key, result.stdout[-3000:])
    assert not mark.exists(), "a hostile value reached a shell"
    assert role_state(lab) == before


def test_terraform_checks_test_port_names_and_ssh_users_by_the_same_rules():
    """Terraform cannot import Python: its copies of the rules must stay the rules of trexlab.rolevalues. Python's
    patterns end with \\Z (its $ also matches before a final newline); Terraform's (RE2) with $, which is the end of
    the text there, as RE2 has no \\Z."""
    topology = (REPO / "terraform/modules/topology/main.tf").read_text()
    static = (REPO / "terraform/labs/static/variables.tf").read_text()
    rules = (REPO / "trexlab/rolevalues.py").read_text()
    interface = rolevalues._INTERFACE.pattern
    assert interface.endswith("\\Z")
    assert f'regex("{interface[:-2]}$", p.name)' in topology
    user = 'r"^[a-z_][a-z0-9_-]{0,31}\\Z", str(node.ansible_user)'
    maas = (REPO / "terraform/labs/maas/variables.tf").read_text()
    assert user in rules and 'regex("^[a-z_][a-z0-9_-]{0,31}$", m.ansible_user)' in static
    assert 'regex("^[a-z_][a-z0-9_-]{0,31}$", var.ansible_user)' in maas
