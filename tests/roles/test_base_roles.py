"""playbooks/site.yml's roles (dut_routing, dut_tuning, tester_ports) on a lab that was only brought up:
RPS on the DUT's CPUs, facts reported for provenance, idempotent, and absent restores every node exactly."""


import os
from pathlib import Path

import pytest

from trexlab.results.provenance import host_facts
from trexlab.rolevalues import STATE_ROOT
from trexlab.testbed.inventory import load_lab

from labtools import changed_count, changed_tasks, lab_env, node_state, playbook, run

# Configuration and frame counts at low rates, nothing that a busy CPU changes: make test runs it beside
# other such tests (the `unmeasured` marker).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]
ABSENT = ["-e", "dut_routing_state=absent", "-e", "dut_tuning_state=absent", "-e", "tester_ports_state=absent"]


@pytest.fixture(scope="module")
def bare_lab():
    env = lab_env("br", "dual", 2)
    run("scripts/lab.sh", "up", env=env)
    try:
        yield load_lab("inventory/generated/br/hosts.yml")
    finally:
        run("scripts/lab.sh", "down", env=env, check=False)


def sysctls(netns: str, ports: list[str]) -> dict:
    def read(path: str) -> str:
        return run("ip", "netns", "exec", netns, "cat", path).stdout.strip()

    values = {k: read(f"/proc/sys/net/{k}") for k in ("ipv4/ip_forward", "ipv6/conf/all/forwarding")}
    values |= {f"rps {p}": read(f"/sys/class/net/{p}/queues/rx-0/rps_cpus") for p in ports}
    return values


def state(lab) -> dict:
    return {node.name: {**node_state(node.netns), **sysctls(node.netns, [p.name for p in node.test_ports])}
            for node in (lab.tester, *lab.duts)}


def test_configure_applies_rps_reports_facts_and_absent_restores_every_node(bare_lab):
    lab = bare_lab
    before = state(lab)
    # Check mode reports and changes nothing (dut_tuning's driver probe is the facts, not a shell check mode skips).
    check = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", "--check")
    assert check.returncode == 0, check.stdout[-3000:]
    assert state(lab) == before, "check mode changed a node"
    first = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2")
    assert first.returncode == 0, first.stdout[-3000:]
    assert changed_count(first.stdout) > 0
    assert changed_tasks(check.stdout) == changed_tasks(first.stdout), "check mode reports what the run changes"
    # The dual lab's idempotence check of make test (tests/lab/test_local_lab.py's dual lab relies on it).
    again = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2")
    assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]

    for dut in lab.duts:
        mask = f"{sum(1 << c for c in dut.cpus):x}"
        assert all(v.lstrip("0,") == mask for k, v in sysctls(dut.netns, [p.name for p in dut.test_ports]).items()
                   if k.startswith("rps")), "RPS of the DUT's ports on the DUT's CPUs"
        facts = load_lab(lab.inventory).describe()["dut_facts"][dut.name]["dut_tuning"]
        assert facts["rps_mask"] == mask and facts["flow_control"] == "left as is"
        assert facts["rss_4tuple"] == "skipped: no test port is a NIC (virtual)", facts
        assert [(p["name"], p["nic"]) for p in facts["ports"]] == [(p.name, False) for p in dut.test_ports]
        # A namespace DUT runs on this machine: its kernel and CPU are this one's (on a VM or bare metal, its own).
        assert (facts["kernel"], facts["cpu_model"]) == (os.uname().release, host_facts()["cpu_model"])

    # The tester's counters gone (a firewall reload, a reboot) while its rendered ruleset stays: check mode must
    # report the load a real run makes.
    run("ip", "netns", "exec", lab.tester.netns, "nft", "delete", "table", "netdev", "trexlab_tester")
    check = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", "--limit", "tester", "--check")
    reload = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", "--limit", "tester")
    assert reload.returncode == 0 and changed_count(reload.stdout) > 0, reload.stdout[-3000:]
    assert changed_tasks(check.stdout) == changed_tasks(reload.stdout), check.stdout[-3000:]

    check = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", *ABSENT, "--check")
    gone = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", *ABSENT)
    assert gone.returncode == 0, gone.stdout[-3000:]
    assert changed_tasks(check.stdout) == changed_tasks(gone.stdout), "check mode reports what absent changes"
    # As on a static or MAAS lab, where no lab-down cleans up after the roles: their state directories
    # (/var/lib/trexlab/<lab>/<node>), and the lab's, are gone with what they kept.
    assert not Path(STATE_ROOT, lab.name).exists(), sorted(Path(STATE_ROOT, lab.name).rglob("*"))
    assert load_lab(lab.inventory).describe()["dut_facts"] == {}, "a restored DUT claims no tuning"
    after = state(lab)
    for node in before:
        assert after[node] == before[node], f"{node} is as it was before configure"
    again = playbook(lab, "playbooks/site.yml", "-e", "trexlab_networks=2", *ABSENT)
    assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]
