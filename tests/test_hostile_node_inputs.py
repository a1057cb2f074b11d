"""Values that reach a node's shell, nft rules, files or ssh (trexlab.node_inputs): refused with one line, never run.

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
from test_hostile_front_door import machine_state

from trexlab import impairment, reference_dut
from trexlab.generators.software import SoftwareGenerator
from trexlab.lab import LabError, load_lab
from trexlab.node_inputs import check_ifname, check_ssh_port, check_ssh_user, check_state_path
from trexlab.params import InvalidParameter

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("VENV", REPO / ".venv"))

BAD_IFNAMES = ["", "a" * 16, "eth0; reboot", "$(reboot)", "`id`", 'p0" accept #', "p0 p1", "-oProxyCommand=x",
               ".", "..", "../eth0", "eth0/1", "eth0:1", "eth\n0", "é0", None, 7, ["eth0"]]
GOOD_IFNAMES = ["eth0", "enp1s0f0", "ens3.100", "tl-local-t0", "a" * 15, "br_lan", "vlan-7"]
STATE = "/var/lib/trexlab/lab/dut1"


@pytest.mark.parametrize("name", GOOD_IFNAMES)
def test_interface_names_linux_takes_and_a_shell_cannot_misread_pass(name):
    assert check_ifname("port", name) == name


@pytest.mark.parametrize("name", BAD_IFNAMES, ids=repr)
def test_other_interface_names_are_refused_naming_the_field(name):
    with pytest.raises(InvalidParameter, match=r"^siit\.device=") as exc:
        check_ifname("siit.device", name)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("path", ["/", "/etc", STATE, STATE + "/", "/var/lib/trexlab/lab/dut2/tayga",
                                  STATE + "/../../../etc", STATE + "/a/../../x", STATE + "/./x", STATE + "/a b",
                                  STATE + "/$(id)", STATE + "/a;b", STATE + "x/tayga", "tayga", STATE + "//x",
                                  STATE + "/-rf", STATE + "/.hidden", 42])
def test_a_path_outside_the_nodes_state_directory_is_refused(path):
    with pytest.raises(InvalidParameter, match=r"^dut\.siit\.dir="):
        check_state_path("dut.siit.dir", path, STATE)


def test_a_path_inside_the_nodes_state_directory_passes():
    assert check_state_path("dir", STATE + "/tayga", STATE) == STATE + "/tayga"
    assert check_state_path("dir", STATE + "/tayga/run.d/", STATE) == STATE + "/tayga/run.d/"


@pytest.mark.parametrize("user", ["-oProxyCommand=touch x", "root -p 2", "root@host", "", "a" * 33, "Root", None,
                                  "root\n"])
def test_an_ssh_user_that_is_not_a_login_name_is_refused(user):
    with pytest.raises(InvalidParameter, match=r"^ansible_user="):
        check_ssh_user("ansible_user", user)


@pytest.mark.parametrize("port", ["22 -oProxyCommand=x", "-p22", 0, 65536, "²", True, 22.5, None, ""])
def test_an_ssh_port_that_is_not_a_tcp_port_is_refused(port):
    with pytest.raises(InvalidParameter, match=r"^ansible_port="):
        check_ssh_port("ansible_port", port)
    assert check_ssh_port("ansible_port", "2222") == 2222 and check_ssh_user("u", "trexlab") == "trexlab"


@pytest.mark.parametrize("name", ['right" accept; #', "right; reboot", "a" * 16])
def test_impairment_and_reference_rules_refuse_a_port_name_that_is_not_an_interface(name):
    ports = [{"index": 0, "name": "left"}, {"index": 1, "name": name}]
    with pytest.raises(InvalidParameter, match=r"^test_ports\[1\]\.name="):
        impairment.plan({"loss_every_nth": 10}, ports, kernel_has_netem=False)
    with pytest.raises(InvalidParameter, match=r"^test_ports\[1\]\.name="):
        reference_dut.plan({"rate_fps": 100_000}, ports)


def write_inventory(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def inventory(**tester: object) -> dict:
    host = {"ansible_host": "192.0.2.10", "test_ports": [
        {"index": 0, "name": "t0", "mac": "02:00:00:00:00:01"}, {"index": 1, "name": "t1", "mac": "02:00:00:00:00:02"}],
        **tester}
    return {"all": {"vars": {"trexlab_lab": {"name": "hx", "kind": "static", "topology": "loopback"}},
                    "children": {"tester": {"hosts": {"tester": host}}}}}


@pytest.mark.parametrize(("data", "key"), [
    ("- a\n- b\n", "(top level)"),
    ({"all": "tester"}, "all"),
    ({"all": {"children": ["tester"]}}, "all.children"),
    ({"all": {"vars": "x"}}, "all.vars"),
    ({"all": {"children": {"tester": {"hosts": ["t"]}}}}, "all.children.tester.hosts"),
    ({"all": {"children": {"tester": {"hosts": {"t": "x"}}}}}, "all.children.tester.hosts.t"),
    (inventory(ansible_user="-oProxyCommand=touch /tmp/x"), "all.children.tester.hosts.tester.ansible_user"),
    (inventory(ansible_port="22 -oProxyCommand=touch /tmp/x"), "all.children.tester.hosts.tester.ansible_port"),
    (inventory(test_ports=[{"index": 0, "name": "t0; reboot"}]), "all.children.tester.hosts.tester.test_ports[0]"),
    (inventory(test_ports="t0"), "all.children.tester.hosts.tester.test_ports"),
])
def test_a_hostile_or_malformed_inventory_is_one_line_naming_the_key(tmp_path, data, key):
    path = write_inventory(tmp_path, data)
    with pytest.raises(LabError) as exc:
        load_lab(path)
    message = str(exc.value)
    assert message.startswith(f"inventory {path}: {key}") and "\n" not in message, message


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
PLAY = """- name: Each host runs the role its group names, with its hostile value
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: "{{ group_names[0] }}"
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
    before = machine_state()
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
    assert machine_state() == before


def test_terraform_checks_test_port_names_and_ssh_users_by_the_same_rules():
    """Terraform cannot import Python: its copies of the rules must stay the rules of trexlab.node_inputs."""
    from trexlab import node_inputs

    topology = (REPO / "terraform/modules/topology/main.tf").read_text()
    static = (REPO / "terraform/labs/static/variables.tf").read_text()
    assert f'regex("^{node_inputs._IFNAME.pattern}$", p.name)' in topology
    assert f'regex("^{node_inputs._USER.pattern.replace(chr(92) + "$", "[$]")}$", m.ansible_user)' in static
