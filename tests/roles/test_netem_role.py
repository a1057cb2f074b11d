"""roles/netem on a DUT over SSH, on both lab kinds.

The local lab's namespace DUT shares this host's kernel, which has no sch_netem: nftables gives exact
every-Nth and random loss, and delay is refused before any change. The VM lab's DUT runs Debian's own
kernel: the same role applies netem loss, delay, jitter and selective every-Nth delay under htb, measured
by the software tester. A test that needs what a DUT's kernel lacks is skipped, saying so.
"""

import json
import math
import re

import pytest

from trexlab.generators import create_generator
from trexlab.plan.campaign import NETEM_PROBE, dut_passes
from trexlab.trial import TrialSpec

from labtools import VENV, changed_count, changed_tasks, gro, node_state, playbook, run

pytestmark = pytest.mark.lab
PLAY = "playbooks/dut-impairment.yml"
# Lab per kind: ex1 is the end-to-end tests' namespace lab (tests/e2e); the VM lab vm1 is shared with the
# other VM tests (tests/vm, roles/siit_jool): 2 networks.
LABS = {"local": ("ex1", "single", 1, "local"), "vm": ("vm1", "single", 2, "vm")}


@pytest.fixture(scope="module", params=["local", pytest.param("vm", marks=pytest.mark.vm)])
def lab(request, lab_factory):
    return lab_factory(*LABS[request.param])


@pytest.fixture(scope="module")
def generator(lab):
    g = create_generator("software", lab=lab)
    yield g
    g.close()


@pytest.fixture(scope="module")
def has_netem(lab):
    return all(dut_passes(dut, NETEM_PROBE) for dut in lab.duts)


def apply(lab, *extra, check_first: bool = False):
    """The role applied; check_first: a --check run before, which must report each change the real run then makes."""
    check = playbook(lab, PLAY, *extra, "--check") if check_first else None
    result = playbook(lab, PLAY, *extra)
    assert result.returncode == 0, result.stdout[-3000:]
    if check is not None:
        assert changed_tasks(check.stdout) == changed_tasks(result.stdout), check.stdout[-3000:]
    return changed_count(result.stdout)


def own_root_qdisc(dut) -> str:
    """A tbf root qdisc, as a user may have set, on the DUT's forward egress port (far above any trial's rate)."""
    port = dut.port(1).name
    run(*dut.command(["tc", "qdisc", "replace", "dev", port, "root", "tbf", "rate", "10gbit", "burst", "1mb",
                      "latency", "100ms"]))
    return port


def forward_trial(generator, frames=20_000, rate=10_000):
    spec = TrialSpec(offered_load=rate, duration=frames / rate, receive_tail=0.5)
    return generator.run_trial(spec)


def test_every_hundredth_frame_is_lost_forward_only_idempotent_and_fully_reversed(lab, generator):
    if lab.kind == "vm":
        pytest.skip("every-Nth loss is the same nftables ruleset on every kernel: the local lab shows it")
    dut = lab.duts[0]
    # A root qdisc of the DUT's own on the impaired port (far above the trial's rate): nftables drops in the
    # forward hook and leaves it, and absent must too (node_state holds the qdiscs).
    port = own_root_qdisc(dut)
    try:
        before = node_state(dut)
        try:
            assert apply(lab, "-e", "netem_loss_every_nth=100", "-e", '{"netem_directions": ["forward"]}',
                         check_first=True) > 0
            assert apply(lab, "-e", "netem_loss_every_nth=100", "-e", '{"netem_directions": ["forward"]}') == 0
            # Its table taken away (a firewall reload flushes the ruleset; a reboot), the record left: applied
            # again, which the trial below measures.
            run(*dut.command(["nft", "delete", "table", "inet", "trexlab_impairment"]))
            assert apply(lab, "-e", "netem_loss_every_nth=100", "-e", '{"netem_directions": ["forward"]}') > 0
            result = forward_trial(generator)
            assert result.directions["forward"].frames_lost == 200, "exactly 1 in 100 of 20000 frames"
            assert result.directions["reverse"].frames_lost == 0, "the reverse direction is not impaired"
        finally:
            assert apply(lab, "-e", "netem_state=absent", check_first=True) > 0
        assert node_state(dut) == before, "absent leaves the DUT as it was"
        assert apply(lab, "-e", "netem_state=absent") == 0
    finally:
        run(*dut.command(["tc", "qdisc", "del", "dev", port, "root"]))


def test_a_root_qdisc_of_the_duts_own_is_refused_before_any_change(lab, has_netem):
    """netem replaces the root qdisc of the port it impairs and absent deletes it, which gives back the kernel's
    default: a tbf the user set was gone for good. Refused before any change instead, naming port and qdisc."""
    if not has_netem:
        pytest.skip("this DUT's kernel has no sch_netem (the local lab here): the role replaces no root qdisc "
                    "(nftables loss; the local every-Nth test keeps a tbf root), the VM lab runs this test")
    dut = lab.duts[0]
    port = own_root_qdisc(dut)
    try:
        before = node_state(dut)
        result = playbook(lab, PLAY, "-e", "netem_loss_percent=1", "-e", '{"netem_directions": ["forward"]}')
        assert result.returncode != 0, result.stdout[-2000:]
        assert f"test port {port} has a root qdisc of its own (tbf " in result.stdout, result.stdout[-2000:]
        assert node_state(dut) == before
    finally:
        run(*dut.command(["tc", "qdisc", "del", "dev", port, "root"]))


def test_absent_leaves_a_root_qdisc_that_replaced_the_roles_own(lab, has_netem):
    """netem's record names each port whose root qdisc it replaced, and absent deleted the root of each that was
    still of a kind the role puts there (netem, htb): a netem someone put there since went with it. Absent deletes
    only a root of the kind and handle read back when the role applied it, and says which it left. (A root of
    another kind, a tbf, goes through the same comparison: tests/test_collection.py.)"""
    if not has_netem:
        pytest.skip("this DUT's kernel has no sch_netem (the local lab here): the role replaces no root qdisc "
                    "(nftables loss), the VM lab runs this test")
    dut = lab.duts[0]
    before = node_state(dut)
    apply(lab, "-e", "netem_loss_percent=1", "-e", '{"netem_directions": ["forward"]}')
    port = dut.port(1).name
    # Someone's own netem over the role's: handle 5:, where the kernel numbers the role's from 8000: up.
    run(*dut.command(["tc", "qdisc", "replace", "dev", port, "root", "handle", "5:", "netem", "delay", "1ms"]))
    try:
        result = playbook(lab, PLAY, "-e", "netem_state=absent")
        assert result.returncode == 0, result.stdout[-3000:]
        said = " ".join(result.stdout.replace("''", "'").split())  # as the YAML callback wraps and quotes it
        left = re.search(rf"netem: left the root qdisc of {port} \(now netem 5:; netem's was netem ([0-9a-f]+:)\): "
                         "not the one netem put there", said)
        assert left and left[1] != "5:", said[-3000:]  # the role's handle, as the kernel numbered it
        roots = [(q["kind"], q["handle"]) for q in dut_json(dut, "tc", "-j", "qdisc", "show", "dev", port)
                 if q.get("root")]
        assert roots == [("netem", "5:")], roots
    finally:  # (nothing to delete where absent took it: that failure is the assertion's)
        run(*dut.command(["tc", "qdisc", "del", "dev", port, "root"]), check=False)
    assert node_state(dut) == before


def test_one_percent_random_loss_measures_as_such(lab, generator):
    """nftables numgen random on the local lab here, netem loss on the VM lab's kernel."""
    dut = lab.duts[0]
    before = node_state(dut)
    try:
        apply(lab, "-e", "netem_loss_percent=1")
        # An emulated DUT forwards some 20 kfps each way: 5 kfps keeps its own drops out of the count.
        result = forward_trial(generator, rate=5_000 if lab.kind == "vm" else 10_000)
    finally:
        apply(lab, "-e", "netem_state=absent")
    assert node_state(dut) == before
    for direction in result.directions.values():
        assert direction.frames_sent == 20_000, direction
        # Binomial(20000, 0.01): mean 200, sd 14; 5 sd either side fails a wrong rate, not chance.
        assert abs(direction.frames_lost - 200) < 5 * math.sqrt(20_000 * 0.01 * 0.99), direction.frames_lost


def test_delay_without_sch_netem_fails_before_any_change_naming_it(lab, has_netem):
    if has_netem:
        pytest.skip("this DUT's kernel has sch_netem: the refusal cannot be shown here (delay is tested instead)")
    dut = lab.duts[0]
    before = node_state(dut)
    result = playbook(lab, PLAY, "-e", "netem_delay_ms=100")
    assert result.returncode != 0
    assert "sch_netem" in result.stdout and "delay=100" in result.stdout, result.stdout[-2000:]
    assert node_state(dut) == before


def test_bad_input_is_refused_naming_the_variable(lab):
    if lab.kind == "vm":
        pytest.skip("the argument check is the same on every lab kind: the local lab shows it")
    before = node_state(lab.duts[0])
    result = playbook(lab, PLAY, "-e", "netem_backend=tbf")
    assert result.returncode != 0 and "netem_backend" in result.stdout
    assert node_state(lab.duts[0]) == before


def latency_cli(lab, results) -> dict:
    """RFC 8219 latency by the software tester, through the CLI a user runs: direction -> result."""
    result = run(str(VENV / "bin" / "trexlab"), "latency", "--generator", "software", "--inventory",
                 str(lab.inventory), "--rate", "1000", "--trial-duration", "2", "--tag-delay", "1",
                 "--tagged-frames", "500", "--receive-tail", "1", "--results", str(results), "--json",
                 check=False, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)["result"]["directions"]


def tagged_trial(generator, rate=1_000, seconds=2.0):
    spec = TrialSpec(offered_load=rate, duration=seconds, receive_tail=1.5, latency_mode="tagged",
                     latency_frames=500)
    return generator.run_trial(spec)


def dut_json(dut, *argv):
    return json.loads(run(*dut.command(list(argv))).stdout)


def test_delay_jitter_and_selective_delay_on_a_kernel_with_netem(lab, generator, has_netem, tmp_path):
    if not has_netem:
        pytest.skip("this DUT's kernel has no sch_netem (the local lab here): the VM lab runs this test")
    dut = lab.duts[0]
    before = node_state(dut)
    own_gro = gro(dut)
    # The VM lab's virtio ports merge received frames (GRO on), which is what the role must turn off while it
    # impairs: a DUT whose ports do no GRO could not show it.
    assert own_gro == {"left": "on", "right": "on"}, own_gro
    # The DUT's own latency, unimpaired: under emulation its median is 0.5-3.5 ms and moves by milliseconds from
    # trial to trial (a fresh clone measured a delayed median of 103.5 ms with a minimum of 90.8 ms), so the
    # delay's upper bound adds the 90th percentile of it rather than a fixed allowance.
    own = {direction: d.latency.percentile(90) for direction, d in tagged_trial(generator).directions.items()}
    assert all(latency < 0.020 for latency in own.values()), own
    # netem releases a delayed frame when its timer fires, which under emulation (TCG) comes milliseconds late on
    # a busy host, while an unimpaired frame waits for no timer: fresh clones measured delayed medians of 103.5
    # and 103.7 ms with the DUT's own 90th percentile at 0.5 ms. The median's upper bound allows that on TCG; the
    # lower bounds, and the minimum's upper bound (the jitter's low end reached), say the delay is 100 +- 10 ms.
    late_timers = 0.005 if dut.extra.get("trexlab_vm_accel") == "tcg" else 0.0
    try:
        # Every frame 100 +- 10 ms later (netem draws each frame's delay uniformly; one apply under emulation
        # costs 2-3 s, so delay and jitter are shown on the same configuration). Measured as the user would,
        # the latency procedure's median is the delay: the median of 500 uniform draws is 100 ms within 1 ms
        # (two standard errors), plus the DUT's own latency. The spread of the tagged frames is the jitter.
        apply(lab, "-e", "netem_delay_ms=100", "-e", "netem_jitter_ms=10")
        for direction, d in latency_cli(lab, tmp_path / "latency").items():
            assert 0.098 <= d["typical"] < 0.102 + own[direction] + late_timers, (direction, d, own)
            # The least of 500 draws from 90..110 ms lies within 0.4 ms of 90 but for a chance of 5e-5.
            assert 0.089 <= d["min"] < 0.0904 + own[direction] + late_timers, (direction, d, own)
        for direction, d in tagged_trial(generator).directions.items():
            # (No upper bound on the tail: an emulated DUT on a busy host stalls now and then.)
            assert d.latency.size >= 450, direction
            low, median = d.latency.percentile(1), d.latency.percentile(50)
            assert 0.089 <= low and 0.098 <= median < 0.102 + own[direction] + late_timers, (direction, low, median,
                                                                                             own)
            assert d.latency.percentile(90) - d.latency.percentile(10) > 0.010, "spread over +-10 ms"

        # Selective (Lencse et al. 2020, Figs. 4-6): every 10th frame through the htb class with netem.
        selective = ["-e", "netem_delay_ms=100", "-e", "netem_selective_every_nth=10"]
        apply(lab, *selective)
        # Each packet the marking rule counts is one frame as the tester sent it: GRO off on both ports (each
        # direction's way in).
        assert gro(dut) == {"left": "off", "right": "off"}
        assert apply(lab, *selective) == 0, "idempotent"
        # A root qdisc taken away (a reboot takes it), the record left: applied again, which the trial measures.
        run(*dut.command(["tc", "qdisc", "del", "dev", "right", "root"]))
        assert apply(lab, *selective) > 0, "a record without its qdisc is not an impairment"
        result = tagged_trial(generator)
        rules = nft_rules(dut)
        for direction, d in result.directions.items():
            port = "right" if direction == "forward" else "left"
            assert d.frames_lost == 0 and d.latency.percentile(50) < 0.020, direction
            assert d.latency.percentile(100) >= 0.100, f"{direction}: some tagged frames were delayed"
            netem = next(q for q in dut_json(dut, "tc", "-s", "-j", "qdisc", "show", "dev", port)
                         if q["kind"] == "netem")
            # Exactly every 10th IPv4 test frame leaving the port was marked, and the netem class sent those.
            counted = marked_packets(rules, port)
            assert counted == d.frames_sent // 10, (direction, counted, d.frames_sent)
            assert netem["parent"] == "1:20" and netem["packets"] == counted, (direction, netem)
    finally:
        apply(lab, "-e", "netem_state=absent")
    assert node_state(dut) == before, "absent removes exactly the qdiscs, classes, filters and rules it made"
    assert gro(dut) == own_gro, "absent gives each port its own GRO back"


def nft_rules(dut) -> list[dict]:
    table = dut_json(dut, "nft", "-j", "list", "table", "inet", "trexlab_impairment")["nftables"]
    return [item["rule"] for item in table if "rule" in item]


def marked_packets(rules: list[dict], port: str) -> int:
    """Packets counted by the IPv4 marking rule of the port (the trials send IPv4)."""
    for rule in rules:
        text = json.dumps(rule["expr"])
        if f'"{port}"' in text and '"ip"' in text and "mark" in text:
            return next(e["counter"]["packets"] for e in rule["expr"] if "counter" in e)
    raise AssertionError(f"no IPv4 marking rule for {port}")
