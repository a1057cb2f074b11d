"""The local namespace lab end to end: lab-up, configure over SSH, traffic across the DUT(s), lab-down."""

import json
import sys
import time
from pathlib import Path

import pytest

from trexlab.addressing import destination
from trexlab.rolevalues import LAB_NAME_MAX
from trexlab.testbed.inventory import load_lab

from labtools import (
    BACKLOG_STATE,
    BACKLOG_SYSCTL,
    REPO,
    backlog_and_holders,
    backlog_holders,
    changed_count,
    lab_env,
    lab_leftovers,
    read_tester_counters,
    run,
    send_frames,
)

sys.path.insert(0, str(REPO / "terraform" / "labs" / "local" / "scripts"))
from nslab import BACKLOG  # noqa: E402  (the local lab's realiser: standard library only, not a package)

# Configuration and frame counts at low rates, nothing that a busy CPU changes: make test runs it beside
# other such tests (the `unmeasured` marker).
pytestmark = [pytest.mark.lab, pytest.mark.unmeasured]


def configure(env: dict) -> str:
    result = run("scripts/lab.sh", "configure", env=env, check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return result.stdout


#: Topologies whose site.yml idempotence (NETWORKS=2) another test checks: tests/roles/test_base_roles.py.
IDEMPOTENCE_ELSEWHERE = ("dual",)


@pytest.mark.parametrize(("topology", "networks"), [("single", 4), ("dual", 2)])
def test_frames_cross_the_duts_port0_to_port1_only(topology, networks):
    name = {"single": "ls", "dual": "ld"}[topology]  # not test_siit_tayga_role's ts/td: both run in one phase
    env = lab_env(name, topology, networks)
    start = time.monotonic()
    try:
        run("scripts/lab.sh", "up", env=env)
        first = configure(env)
        print(f"\n{topology}: lab-up + configure took {time.monotonic() - start:.1f} s")
        assert changed_count(first) > 0
        # A second configure must change nothing. On the dual lab it is test_base_roles' own check (site.yml with
        # the same networks on a dual lab of the same kind), so it runs once in make test's phase 2, not twice.
        if topology not in IDEMPOTENCE_ELSEWHERE:
            assert changed_count(configure(env)) == 0, "a second configure must change nothing"
        lab = load_lab(f"inventory/generated/{name}/hosts.yml")
        # The record campaigns read to skip the base configuration when it is already in place.
        record = json.loads((Path(lab.inventory).parent / "configured.json").read_text())
        assert record == {"trexlab_networks": networks}
        assert lab.topology == topology and len(lab.duts) == {"single": 1, "dual": 2}[topology]
        tester = lab.tester
        port0 = {k: getattr(tester.port(0), k) for k in ("name", "mac", "ipv4", "ipv6", "peer_mac")}
        port1 = {k: getattr(tester.port(1), k) for k in ("name", "mac", "ipv4", "ipv6", "peer_mac")}
        before = read_tester_counters(tester.netns)
        for x in range(networks):
            forward = destination(x, "forward")
            send_frames(tester.netns, port0, 4, forward["ipv4_host"], 100)
            send_frames(tester.netns, port0, 6, forward["ipv6_host"], 100)
        reverse = destination(networks - 1, "reverse")
        send_frames(tester.netns, port1, 4, reverse["ipv4_host"], 50)
        time.sleep(0.2)
        after = read_tester_counters(tester.netns)
        delta = {k: after[k] - before.get(k, 0) for k in after}
        assert delta == {"port1_ipv4": 100 * networks, "port1_ipv6": 100 * networks,
                         "port0_ipv4": 50, "port0_ipv6": 0}
    finally:
        run("scripts/lab.sh", "down", env=env, check=False)
    assert lab_leftovers(name) == []


#: The loopback lab's name is as long as a lab name may be (rolevalues.LAB_NAME_MAX): make lab-up took such a name
#: and load_lab then refused its tester's namespace tl-<name>-tester, one character over an interface name's 15.
LOOPBACK = ("tl" + "x" * LAB_NAME_MAX)[:LAB_NAME_MAX]


def test_loopback_topology_joins_the_tester_ports():
    env = lab_env(LOOPBACK, "loopback")
    try:
        run("scripts/lab.sh", "up", env=env)
        configure(env)
        lab = load_lab(f"inventory/generated/{LOOPBACK}/hosts.yml")
        assert lab.duts == [] and lab.tester.port(0).peer_mac == lab.tester.port(1).mac
        # An SSH session (each Ansible task) starts above shell level 1, where bash reads no ~/.bashrc of the host.
        level = run(*lab.tester.ssh(), "echo $SHLVL").stdout.strip()
        assert int(level) >= 2, f"SHLVL={level}: bash read the host user's ~/.bashrc for the session"
    finally:
        run("scripts/lab.sh", "down", env=env, check=False)
    assert lab_leftovers(LOOPBACK) == []


def test_lab_up_recovers_after_an_interrupted_lab_down_and_rebuilds_a_lab_of_another_topology():
    env = lab_env("tr", "single")
    dual = {**env, "TOPOLOGY": "dual"}
    try:
        run("scripts/lab.sh", "up", env=env)
        # An interrupted lab-down: the namespaces are gone, the Terraform state still says 'created'.
        run("ip", "netns", "delete", "tl-tr-dut1")
        run("scripts/lab.sh", "up", env=env)
        assert "tl-tr-dut1" in run("ip", "netns", "list").stdout
        # The same lab asked for with another topology is that lab (the inventory's second DUT exists), not the
        # old one under a new inventory.
        run("scripts/lab.sh", "up", env=dual)
        assert {"tl-tr-dut1", "tl-tr-dut2"} <= set(run("ip", "netns", "list").stdout.split())
        # Its inventory is the dual lab's: each node has the test ports it names, with their MACs, and answers SSH
        # as it says (host key included), which is what site.yml, run here before, needed of it. (site.yml itself on
        # a dual lab: test_frames_cross_the_duts_port0_to_port1_only, and test_base_roles.)
        lab = load_lab("inventory/generated/tr/hosts.yml")
        assert lab.topology == "dual" and [d.name for d in lab.duts] == ["dut1", "dut2"]
        for node in (lab.tester, *lab.duts):
            links = json.loads(run("ip", "-n", node.netns, "-j", "link", "show").stdout)
            macs = {link["ifname"]: link.get("address") for link in links}
            assert len(node.test_ports) == 2 and {p.name: p.mac for p in node.test_ports} == {
                p.name: macs.get(p.name) for p in node.test_ports}, (node.name, macs)
            assert run(*node.ssh(), "echo reached", check=False).stdout.strip() == "reached", node.name
    finally:
        run("scripts/lab.sh", "down", env=dual, check=False)
    assert lab_leftovers("tr") == []


def test_a_second_lab_on_the_same_management_block_is_refused_and_the_first_keeps_working():
    # Two names whose SHA-1 gives the same 23-bit management block (found by search): rare, never shared.
    first, second = lab_env("cawr", "loopback"), lab_env("ccdw", "loopback")
    try:
        run("scripts/lab.sh", "up", env=first)
        refused = run("scripts/lab.sh", "up", env=second, check=False)
        assert refused.returncode != 0
        assert "lab ccdw: its management address" in refused.stdout + refused.stderr
        assert "tlcawrm1 (another lab's); choose another lab name" in refused.stdout + refused.stderr
        assert lab_leftovers("ccdw") == []
        # SSH still reaches the first lab's own node over its management block. (A login proves it; site.yml on a
        # loopback lab, which this ran here too, is test_loopback_topology_joins_the_tester_ports' configure.)
        tester = load_lab("inventory/generated/cawr/hosts.yml").tester
        assert run(*tester.ssh(), "echo reached", check=False).stdout.strip() == "reached"
    finally:
        run("scripts/lab.sh", "down", env=second, check=False)
        run("scripts/lab.sh", "down", env=first, check=False)
    assert lab_leftovers("cawr") == [] and lab_leftovers("ccdw") == []


@pytest.mark.parametrize(("env", "message"), [
    ({"TOPOLOGY": "triple"}, "TOPOLOGY=triple: allowed single, dual, loopback"),
    ({"NETWORKS": "0"}, "NETWORKS=0: allowed 1..256"),
    ({"NETWORKS": "257"}, "NETWORKS=257: allowed 1..256"),
    ({"LAB": "cloud"}, "LAB=cloud: allowed local, vm, static, maas"),
    ({"LAB_NAME": "Bad-Name"}, "LAB_NAME=Bad-Name: allowed"),
])
def test_bad_input_is_one_line_and_changes_nothing(env, message):
    name = env.get("LAB_NAME", "tb")
    result = run("scripts/lab.sh", "up", env={**lab_env("tb"), **env}, check=False)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    # Only this lab's pieces: make test's parallel phase brings other labs up and down meanwhile, and a whole
    # `ip netns list` compared before and after failed on their namespaces (and on an nsid shown on one of them).
    assert lab_leftovers(name) == []


def test_missing_terraform_is_named():
    # terraform lives in /usr/local/bin: a PATH without it finds none.
    result = run("scripts/lab.sh", "up", env={**lab_env("tb"), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, check=False)
    assert result.returncode != 0
    assert "terraform not found on PATH" in result.stderr and result.stderr.strip().count("\n") == 0


def backlog() -> int:
    return int(BACKLOG_SYSCTL.read_text())


def test_the_receive_backlog_is_raised_while_any_lab_is_up_and_restored_after_the_last():
    """nslab.py raises net.core.netdev_max_backlog while a lab is up (the host's backlog drops would count as the
    DUT's loss) and puts it back when the last lab is down, a lab whose namespaces vanished counting as down. Other
    workers' labs may be up meanwhile (make test): the value is the one from before the first lab while none is."""
    labs = {name: lab_env(name, "loopback") for name in ("bk1", "bk2", "bk3")}
    try:
        run("scripts/lab.sh", "up", env=labs["bk1"])
        original = json.loads(BACKLOG_STATE.read_text())["original"]
        assert backlog() == max(original, BACKLOG) and "bk1" in backlog_holders()
        run("scripts/lab.sh", "up", env=labs["bk2"])
        run("scripts/lab.sh", "down", env=labs["bk1"])
        assert backlog() == max(original, BACKLOG), "kept while another lab is up"
        assert "bk1" not in backlog_holders() and "bk2" in backlog_holders()
        run("ip", "netns", "delete", "tl-bk2-tester")  # lab bk2 crashed: its namespace is gone, its hold not
        run("scripts/lab.sh", "up", env=labs["bk3"])
        assert set(backlog_holders()) & set(labs) == {"bk3"}, "the crashed lab no longer holds the raise"
        run("scripts/lab.sh", "down", env=labs["bk3"])
        # Both at one moment: another worker's lab may go up or down meanwhile.
        value, others = backlog_and_holders()
        assert value == (max(original, BACKLOG) if others else original), others
    finally:
        for env in labs.values():
            run("scripts/lab.sh", "down", env=env, check=False)
    assert all(lab_leftovers(name) == [] for name in labs)
