"""roles/dut_reference on the local lab: the DUT forwards exactly its declared loss-free rate (rate x T +
burst frames per direction in a trial of T s), loses exactly every Nth policed frame when asked, is
idempotent, and absent leaves the DUT as it was. A few seconds of traffic."""

import json

import pytest

from trexlab import rolevalues
from trexlab.generators import create_generator
from trexlab.reference_dut import from_settings
from trexlab.spec.experiment import with_role_defaults
from trexlab.trial import TrialSpec

from labtools import changed_count, changed_tasks, gro, node_state, playbook, run, set_gro

pytestmark = pytest.mark.lab
PLAY = "playbooks/dut-reference.yml"
DUT = from_settings(with_role_defaults("reference", {"rate_fps": 5_000, "burst_frames": 500, "loss_every_nth": 1_000}))
SECONDS = 2.0


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("ex1", "single", 1)  # the shared lab of the end-to-end tests (tests/e2e)


def apply(lab, check_first: bool = False, **settings) -> int:
    """The role applied with these settings; check_first: a --check run before, which must report each change the
    real run then makes."""
    argv = ("-e", json.dumps({f"dut_reference_{k}": v for k, v in settings.items()}))
    check = playbook(lab, PLAY, *argv, "--check") if check_first else None
    result = playbook(lab, PLAY, *argv)
    assert result.returncode == 0, result.stdout[-3000:]
    if check is not None:
        assert changed_tasks(check.stdout) == changed_tasks(result.stdout), check.stdout[-3000:]
    return changed_count(result.stdout)


def trial(lab, rate: float):
    generator = create_generator("software", lab=lab)
    try:
        return generator.run_trial(TrialSpec(offered_load=rate, duration=SECONDS, receive_tail=0.5))
    finally:
        generator.close()


def test_the_dut_forwards_its_declared_loss_free_rate_loses_every_nth_and_absent_restores_it(lab):
    dut = lab.duts[0]
    before = node_state(dut.netns)
    declared = {"rate_fps": DUT.rate_fps, "burst_frames": DUT.burst_frames, "loss_every_nth": DUT.loss_every_nth}
    # The bucket counts packets: GRO, on by default on a virtio port or a NIC (a veth does none unless asked), would
    # hand it a TCP flow's frames merged. On here on both ports, for the role to turn off (each direction's way in)
    # and absent to put back.
    lab_own = gro(dut)
    set_gro(dut, dict.fromkeys(lab_own, "on"))
    try:
        check_gro_and_policing(lab, declared)
    finally:
        set_gro(dut, lab_own)
    assert node_state(dut.netns) == before, "absent leaves the DUT as it was"
    assert apply(lab, state="absent") == 0


def check_gro_and_policing(lab, declared: dict) -> None:
    """The role applied on a DUT whose ports have GRO on: GRO off while it polices (each direction's way in), the
    declared loss-free rate and every-Nth loss measured, and each port's GRO on again after absent."""
    dut = lab.duts[0]
    try:
        assert apply(lab, check_first=True, **declared) > 0
        assert set(gro(dut).values()) == {"off"}, gro(dut)
        assert apply(lab, **declared) == 0, "idempotent"
        # Its table taken away (a firewall reload flushes the ruleset; a reboot), the record left: applied again.
        run("ip", "netns", "exec", dut.netns, "nft", "delete", "table", "inet", "trexlab_reference")
        assert apply(lab, **declared) > 0, "a record without its table is not a policer"
        # Twice the capacity: each direction's bucket passes rate x T + burst frames, then every 1000th is lost.
        over = trial(lab, 2 * DUT.loss_free_rate(SECONDS))
        passed = DUT.loss_free_rate(SECONDS) * SECONDS
        for name, direction in over.directions.items():
            assert direction.frames_sent == round(2 * passed), (name, direction)
            # T is the time the frames took to arrive: a sender stalled beyond its catch-up moves its schedule later
            # by send_slip, and the bucket refills for that long too (28 ms slipped once on a busy machine: 140
            # frames more, beyond the 1 %).
            expected = (passed + DUT.effective_rate * direction.send_slip) * (1 - DUT.loss_ratio)
            assert abs(direction.frames_received - expected) <= 0.01 * expected, (name, direction, expected)
        # Below the capacity only the every-Nth loss: 8000 frames, exactly 8 lost whatever the counter's phase.
        under = trial(lab, 4_000)
        for name, direction in under.directions.items():
            assert (direction.frames_sent, direction.frames_lost) == (8_000, 8), (name, direction)
    finally:
        assert apply(lab, check_first=True, state="absent") > 0
    assert set(gro(dut).values()) == {"on"}, "absent gives each port its own GRO back"


def test_gro_stays_off_while_netem_or_the_reference_dut_still_acts_per_packet_in_either_order(lab):
    """roles/netem and this role each turn GRO off on the DUT's ports, each with its own record (trexlab.lab.netconf).
    The second one applied found GRO off and recorded nothing, so removing the first turned GRO on under the second,
    silently (campaigns nest the two; by hand either order happens). Both orders: netem first and removed first,
    then (netem applied again over the reference DUT) the reference DUT removed first; GRO stays off until the last
    goes, then each port's own (on) is back and the DUT as it was. No traffic: the per-packet rules are the other
    tests'. netem is given a state directory of its own, as one may by hand: netconf finds the other holder only
    beside its record, so both GRO records lie in the node's state directory whatever each role's state_dir says."""
    dut = lab.duts[0]
    netem = ("playbooks/dut-impairment.yml", "-e", "netem_loss_every_nth=1000",
             "-e", f"netem_state_dir={rolevalues.node_state_dir(lab.name, dut.name)}/netem")
    reference = (PLAY, "-e", json.dumps({"dut_reference_rate_fps": DUT.rate_fps,
                                         "dut_reference_burst_frames": DUT.burst_frames}))
    lab_own = gro(dut)
    set_gro(dut, dict.fromkeys(lab_own, "on"))
    before = node_state(dut.netns)
    seen = []
    try:
        for step in (netem, reference, (*netem, "-e", "netem_state=absent"), netem, (*reference, "-e",
                     "dut_reference_state=absent"), (*netem, "-e", "netem_state=absent")):
            result = playbook(lab, *step)
            assert result.returncode == 0, result.stdout[-3000:]
            seen.append(sorted(set(gro(dut).values())))
        assert seen == [["off"]] * 5 + [["on"]], seen
        assert node_state(dut.netns) == before, "the last one gone: the DUT as it was"
    except BaseException:
        # Only after a failure (each a playbook run, seconds): both removed, for the other tests of this lab.
        playbook(lab, *netem, "-e", "netem_state=absent")
        playbook(lab, PLAY, "-e", "dut_reference_state=absent")
        raise
    finally:
        set_gro(dut, lab_own)


def test_a_bucket_that_cannot_refill_between_trials_is_refused_before_any_change(lab):
    before = node_state(lab.duts[0].netns)
    result = playbook(lab, PLAY, "-e", json.dumps({"dut_reference_rate_fps": 1000, "dut_reference_burst_frames": 1000}))
    assert result.returncode != 0 and "burst_frames=1000: allowed <= 0.25 s x rate_fps" in result.stdout
    result = playbook(lab, PLAY, "-e", "dut_reference_directions=sideways")
    assert result.returncode != 0 and "dut_reference_directions" in result.stdout
    assert node_state(lab.duts[0].netns) == before
