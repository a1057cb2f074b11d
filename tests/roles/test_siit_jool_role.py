"""roles/siit_jool over SSH: refused before any change where the kernel cannot load modules (the local lab
here); on the VM lab (Debian's kernel, Jool built for it) SIIT as in Lencse & Szilagyi 2024, Fig. 8:
a single NAT64 DUT and a dual NAT46 + NAT64 pair, every test frame counted at the far tester port."""

import os

import pytest

from trexlab.generators import create_generator
from trexlab.trial import TrialSpec

from labtools import (
    changed_count,
    changed_tasks,
    lab_env,
    lab_leftovers,
    node_state,
    notes_but_steal,
    playbook,
    read_tester_counters,
    run,
)

pytestmark = pytest.mark.lab
PLAY = "playbooks/dut-siit-jool.yml"
NETWORKS = 2
#: Environment variable that adds the dual-DUT Jool test on a second VM lab (make test leaves it out: time).
DUAL_OPT_IN = "TREXLAB_TEST_VM_DUAL"


@pytest.mark.unmeasured  # a refusal: no traffic
def test_refuses_before_any_change_where_modules_cannot_load(lab_factory):
    if os.path.exists("/proc/modules"):
        pytest.skip("this kernel loads modules: the refusal cannot be shown here")
    lab = lab_factory("tj", "single", 2)
    before = node_state(lab.duts[0])
    result = playbook(lab, PLAY, "-e", "siit_jool_networks=2")
    assert result.returncode != 0
    assert "cannot load modules" in result.stdout and "jool_siit" in result.stdout, result.stdout[-2000:]
    assert node_state(lab.duts[0]) == before


def apply(lab, *extra, check_first: bool = False):
    """The role applied; check_first: a --check run before, which must change nothing on the DUTs and report,
    task by task, each change the real run then makes (the apply script is raw, which check mode skipped)."""
    argv = ("-e", f"siit_jool_networks={NETWORKS}", *extra)
    if check_first:
        state = {dut.name: (node_state(dut), jool_modules(dut)) for dut in lab.duts}
        check = playbook(lab, PLAY, *argv, "--check")
        assert check.returncode == 0, check.stdout[-3000:]
        assert {dut.name: (node_state(dut), jool_modules(dut)) for dut in lab.duts} == state, "--check changed nothing"
    result = playbook(lab, PLAY, *argv)
    assert result.returncode == 0, result.stdout[-3000:]
    if check_first:
        assert changed_tasks(check.stdout) == changed_tasks(result.stdout), check.stdout[-3000:]
    return changed_count(result.stdout)


def translated(dut) -> int:
    """Packets Jool translated on a DUT (its JSTAT_SUCCESS counter)."""
    out = run(*dut.command(["jool_siit", "-i", "benchmarking", "stats", "display", "--all", "--csv"])).stdout
    return next(int(line.split(",")[1]) for line in out.splitlines() if line.startswith("JSTAT_SUCCESS,"))


def jool_modules(dut) -> str:
    return "".join(line for line in run(*dut.command(["cat", "/proc/modules"])).stdout.splitlines(True)
                   if line.startswith("jool"))


@pytest.mark.vm
@pytest.mark.parametrize(("name", "topology", "ip_version", "frame_size"), [
    ("vm1", "single", (6, 4), (84, 64)),  # IPv6 tester port 0 -> NAT64 DUT -> IPv4 port 1, and back
    # IPv4 -> NAT46 DUT -> IPv6 -> NAT64 DUT -> IPv4, and back. A second VM lab of two emulated DUTs costs
    # about 3 minutes under TCG, an eighth of make test's 25-minute budget, for the same jool_siit role and
    # translation code the single DUT runs (with the other pool6/EAMT direction): opt-in, and said so.
    pytest.param("vm2", "dual", (4, 4), (64, 64), marks=pytest.mark.skipif(
        os.environ.get(DUAL_OPT_IN) != "1",
        reason=f"the dual-DUT Jool lab (a second VM lab, ~3 min under TCG) runs with {DUAL_OPT_IN}=1")),
])
def test_jool_translates_every_frame_both_ways_and_absent_restores_the_duts(
        lab_factory, name, topology, ip_version, frame_size):
    lab = lab_factory(name, topology, NETWORKS, kind="vm")
    tester = lab.tester.netns
    before = {dut.name: (node_state(dut), jool_modules(dut)) for dut in lab.duts}
    try:
        assert apply(lab, check_first=True) > 0
        if topology == "single":
            assert apply(lab) == 0, "idempotent"
        counters = read_tester_counters(tester)
        jool_before = {dut.name: translated(dut) for dut in lab.duts}
        generator = create_generator("software", lab=lab)
        try:
            # Low rate, every destination network: this proves translation frame by frame, not capacity.
            result = generator.run_trial(TrialSpec(offered_load=1_000, duration=1.0, ip_version=ip_version,
                                                   frame_size=frame_size, destination_networks=NETWORKS,
                                                   receive_tail=0.5))
        finally:
            generator.close()
        after = read_tester_counters(tester)
        for direction, d in result.directions.items():
            assert d.frames_sent == 1_000 and d.frames_received == 1_000, (direction, d)
        # Counted by the tester's nftables at the far port, in the far port's family: port 0 sends IPv6 on
        # a single DUT and port 1 receives IPv4; on a dual one IPv4 arrives both ways through the IPv6 link.
        assert after[f"port1_ipv{ip_version[1]}"] - counters[f"port1_ipv{ip_version[1]}"] == 1_000
        assert after[f"port0_ipv{ip_version[0]}"] - counters[f"port0_ipv{ip_version[0]}"] == 1_000
        assert notes_but_steal(result) == [], result.notes
        for dut in lab.duts:
            assert translated(dut) - jool_before[dut.name] == 2_000, f"{dut.name}: Jool translated every frame"
    finally:
        assert apply(lab, "-e", "siit_jool_state=absent", check_first=True) > 0
    for dut in lab.duts:
        assert (node_state(dut), jool_modules(dut)) == before[dut.name], f"{dut.name} is as it was, module unloaded"
    if topology == "dual":  # this lab serves this test only: down now, and nothing of it is left
        run("scripts/lab.sh", "down", env={**lab_env(name, topology), "LAB": "vm"})
        assert lab_leftovers(name) == []
