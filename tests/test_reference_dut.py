"""The known-answer DUT (trexlab.reference_dut, roles/dut_reference): its declared loss-free rate, the exact
ruleset the role loads, the spec block that asks for it, and where campaigns apply and restore it."""

import pytest

from ansible_collections.trexlab.lab.plugins.filter.trexlab import reference_plan
from trexlab import impairment, reference_dut
from trexlab.params import InvalidParameter
from trexlab.plan.campaign import Campaign
from trexlab.reference_dut import PRIORITY, TABLE, ReferenceDut
from trexlab.spec import experiment
from trexlab.spec.experiment import InvalidExperiment, with_role_defaults

from labtools import role_defaults_changed

PORTS = [{"index": 0, "name": "left"}, {"index": 1, "name": "right"}]


def role(**given) -> dict:
    """A block's settings with the rest as roles/dut_reference has them (its argument specs' defaults), as the role
    hands them over."""
    return with_role_defaults("reference", given)


def reference(**given) -> ReferenceDut:
    return reference_dut.from_settings(role(**given))


def plan(settings: dict, ports: list[dict]) -> dict:
    return reference_dut.plan(role(**settings), ports)


def test_loss_free_rate_is_rate_plus_burst_over_trial_duration_at_the_kernels_token_cost():
    dut = reference(rate_fps=40_000, burst_frames=1_000)
    assert dut.loss_free_rate(3) == pytest.approx(40_000 + 1_000 / 3, abs=1e-9)  # 1e9 / 40000 is whole: exact
    # A rate that does not divide 1e9 ns: a frame costs floor(1e9 / R) ns, so the bucket refills slightly faster.
    assert reference(rate_fps=30_000).effective_rate == pytest.approx(1e9 / 33_333)
    assert reference(rate_fps=30_000, burst_frames=1_000).loss_free_rate(5) == pytest.approx(1e9 / 33_333 + 200)


def test_loss_ratio_of_every_nth_and_random_loss():
    assert reference(rate_fps=1000, burst_frames=100, loss_every_nth=10_000).loss_ratio == pytest.approx(1e-4)
    assert reference(rate_fps=1000, burst_frames=100, loss_percent=0.01).loss_ratio == pytest.approx(1e-4)


def nft_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_each_direction_is_one_named_bucket_shared_by_both_families_then_the_loss_of_what_it_passed():
    lines = nft_lines(plan({"rate_fps": 40_000, "burst_frames": 1_000, "loss_every_nth": 10_000}, PORTS)["nft"])
    assert "limit police_forward { rate over 40000/second burst 1000 packets }" in lines
    assert "limit police_reverse { rate over 40000/second burst 1000 packets }" in lines
    forward = [line for line in lines if line.startswith('oifname "right"')]
    v4, v6 = impairment.TEST_TRAFFIC["ipv4"], impairment.TEST_TRAFFIC["ipv6"]
    assert forward == [
        f'oifname "right" {v4} limit name "police_forward" counter drop comment "forward policer ipv4"',
        f'oifname "right" {v6} limit name "police_forward" counter drop comment "forward policer ipv6"',
        # Loss after the policer, the very rules roles/netem's nftables backend loads.
        *impairment.nft_rules(impairment.from_settings(with_role_defaults("impairment", {"loss_every_nth": 10_000})),
                              "nftables", "right"),
    ]
    assert f"type filter hook forward priority {PRIORITY}; policy accept;" in lines and PRIORITY < 0, \
        "before roles/netem's table (priority 0): the capacity applies first"
    assert lines[:3] == [f"table inet {TABLE} {{}}", f"delete table inet {TABLE}", f"table inet {TABLE} {{"], \
        "loading replaces the table atomically"


def test_one_direction_polices_only_its_egress_port_and_random_loss_is_numgen_random():
    lines = nft_lines(plan({"rate_fps": 5_000, "loss_percent": 0.01, "directions": ["reverse"]}, PORTS)["nft"])
    rules = [line for line in lines if line.startswith("oifname")]
    assert rules and all(line.startswith('oifname "left"') for line in rules)
    assert not any("police_forward" in line for line in lines)
    assert sum("numgen random mod 1000000 < 100 counter drop" in line for line in rules) == 2


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "rate_fps=None: allowed an integer >= 1 (the declared capacity"),
    ({"rate_fps": 0}, "rate_fps=0: allowed an integer >= 1"),
    ({"rate_fps": 1.5}, "rate_fps=1.5: allowed an integer"),
    ({"rate_fps": 1_000, "burst_frames": 0}, "burst_frames=0: allowed an integer >= 1"),
    ({"rate_fps": 1_000, "burst_frames": 1_000}, "burst_frames=1000: allowed <= 0.25 s x rate_fps (250)"),
    ({"rate_fps": 1_000, "burst_frames": 100, "loss_every_nth": 1}, "loss_every_nth=1: allowed 0 (off) or >= 2"),
    ({"rate_fps": 1_000, "burst_frames": 100, "loss_percent": 101}, "loss_percent=101: allowed >= 0 and <= 100"),
    ({"rate_fps": 1_000, "burst_frames": 100, "directions": ["up"]}, "directions='up': allowed forward, reverse"),
    ({"rate_fps": 1_000, "burst_frames": 100, "directions": []}, "directions=[]: allowed forward and/or reverse"),
])
def test_bad_declarations_are_refused_naming_the_setting(settings, message):
    with pytest.raises(InvalidParameter) as error:
        plan(settings, PORTS)
    assert str(error.value).startswith(message), str(error.value)
    # The role's filter reports the same line as its error, and plans nothing to load.
    planned = reference_plan(role(**settings), PORTS)
    assert planned["error"] == str(error.value) and planned["nft"] == ""


def test_role_filter_reads_extra_vars_as_numbers_and_absent_plans_nothing():
    planned = reference_plan(role(rate_fps="20000", burst_frames="1000"), PORTS)
    assert planned["error"] is None and "rate over 20000/second burst 1000 packets" in planned["nft"]
    assert planned["applied"] == {"nft": planned["nft"]}
    assert planned["gro_off"] == ["left", "right"]
    assert reference_plan({"rate_fps": 0}, PORTS, "absent") == {"error": None, "table": TABLE, "nft": "",
                                                                "gro_off": [], "applied": {"nft": ""}}


@pytest.mark.parametrize(("directions", "entered_by"), [
    (["forward", "reverse"], ["left", "right"]), (["forward"], ["left"]), (["reverse"], ["right"])])
def test_gro_goes_off_on_the_port_each_policed_direction_enters_by_as_netem_turns_it_off(directions, entered_by):
    """The bucket counts packets: with GRO on (a virtio port's default) a TCP flow's frames reach it merged into
    packets of up to 64 KB, and rate_fps would police those. GRO goes off where each policed direction comes in
    (forward frames by port 0, reverse ones by port 1), the ports roles/netem turns it off on for the same
    directions."""
    assert plan({"rate_fps": 5_000, "directions": directions}, PORTS)["gro_off"] == entered_by
    impaired = impairment.plan(with_role_defaults("impairment", {"loss_every_nth": 100, "directions": directions}),
                               PORTS, True)
    assert impaired["gro_off"] == entered_by


SPEC = {"name": "ref", "lab": {"kind": "local", "topology": "single"}, "generator": "software",
        "dut": {"reference": {"rate_fps": 40_000, "burst_frames": 1_000, "loss_every_nth": 10_000}},
        "procedure": {"name": "throughput", "params": {"trial_duration": 3}}}


def spec_with(**reference):
    return {**SPEC, "dut": {"reference": reference}}


def test_an_experiment_declares_the_reference_dut_and_its_answer_follows_from_the_spec():
    exp = experiment.validate(SPEC)
    dut, capacity = experiment.reference_declared(exp.spec)
    assert dut == ReferenceDut(40_000, 1_000, 0, 10_000, ("forward", "reverse")) and capacity == pytest.approx(
        40_333.33, 1e-6)
    assert experiment.reference_declared({"procedure": {"name": "throughput"}}) is None
    assert experiment.dut_role_vars("reference", SPEC["dut"]["reference"]) == {
        "dut_reference_rate_fps": 40_000, "dut_reference_burst_frames": 1_000, "dut_reference_loss_every_nth": 10_000}


def test_what_a_reference_block_leaves_out_is_its_role_s_default(monkeypatch):
    """A dut.reference block without burst_frames (or directions) is checked and answered with the role's (its
    meta/argument_specs.yml; here changed, to tell it from a copy): ReferenceDut had defaults of its own, so the
    checks refused a spec the role would run, and the declared answer was another DUT's."""
    role_defaults_changed(monkeypatch, "dut_reference", burst_frames=100, directions=["reverse"])
    spec = spec_with(rate_fps=1_000)
    experiment.validate(spec)  # 100 frames refill in 0.1 s; 1000 would not (<= 0.25 s x 1000 fps)
    dut, capacity = experiment.reference_declared(spec)
    assert (dut.burst_frames, dut.directions) == (100, ("reverse",)) and capacity == pytest.approx(1_000 + 100 / 3)


def test_the_answer_of_a_procedure_without_a_trial_duration_is_for_its_own_default_trials():
    """latency's trials are 120 s by default (RFC 8219's minimum), not throughput's 60 s: declared() took 60 s
    for any spec that gave none."""
    from trexlab.procedures import latency

    spec = {**spec_with(rate_fps=40_000, burst_frames=1_000), "procedure": {"name": "latency"}}
    _, capacity = experiment.reference_declared(spec)
    assert capacity == pytest.approx(40_000 + 1_000 / latency.TRIAL_DURATION) and latency.TRIAL_DURATION != 60


@pytest.mark.parametrize(("spec", "message"), [
    (spec_with(rate_fps=1000, bucket=5), "dut.reference.bucket: unknown; allowed burst_frames, directions"),
    (spec_with(rate_fps="40k"), "dut.reference.rate_fps: '40k' is not of type int"),
    (spec_with(rate_fps=1000, directions=["up"]), "dut.reference.directions: ['up'] is not allowed"),
    (spec_with(rate_fps=1000, state="absent"), "dut.reference.state: unknown"),
    (spec_with(burst_frames=10), "dut.reference.rate_fps=None: allowed an integer >= 1"),
    (spec_with(rate_fps=1000, burst_frames=1000), "dut.reference.burst_frames=1000: allowed <= 0.25 s"),
    ({**SPEC, "sweep": {"dut.reference.rate_fps": [40_000, 0]}}, "point 1 (rate_fps=0-"),
])
def test_bad_reference_blocks_are_refused_before_any_host_is_touched(spec, message):
    with pytest.raises(InvalidExperiment) as error:
        experiment.validate(spec)
    assert message in str(error.value) and "\n" not in str(error.value), str(error.value)


class _Lab:
    duts = ["dut1"]
    inventory = "hosts.yml"


def test_a_campaign_applies_the_capacity_before_impairments_and_restores_in_the_reverse_order():
    campaign = Campaign.__new__(Campaign)
    campaign.lab, campaign._based_on_networks = _Lab(), 1
    calls = []
    campaign.playbook = lambda name, extra: calls.append((name, extra))
    spec = {**SPEC, "dut": {"impairment": {"loss_percent": 1}, "reference": {"rate_fps": 1000, "burst_frames": 10}}}
    undo = campaign.configure_dut(spec)
    assert [(name, extra.get("dut_reference_state", extra.get("netem_state"))) for name, extra in calls] == [
        ("playbooks/dut-reference.yml", "present"), ("playbooks/dut-impairment.yml", "present")]
    assert calls[0][1]["dut_reference_rate_fps"] == 1000 and calls[0][1]["dut_reference_burst_frames"] == 10
    restore = list(reversed(undo))
    assert [(name, extra.get("dut_reference_state", extra.get("netem_state"))) for name, extra in restore] == [
        ("playbooks/dut-impairment.yml", "absent"), ("playbooks/dut-reference.yml", "absent")]
    assert {k: v for k, v in restore[1][1].items() if k != "dut_reference_state"} == {
        k: v for k, v in calls[0][1].items() if k != "dut_reference_state"}, "absent with the same settings"
