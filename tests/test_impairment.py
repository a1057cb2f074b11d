"""The exact configuration roles/netem applies (trexlab.impairment), including what this kernel cannot run."""

import pytest

from trexlab import impairment
from trexlab.impairment import MARK
from trexlab.params import InvalidParameter
from trexlab.plan.runplan import plan_campaign
from trexlab.spec.experiment import load, with_role_defaults

from labtools import REPO, role_defaults_changed, static_inventory

PORTS = [{"index": 0, "name": "left"}, {"index": 1, "name": "right"}]


def plan(settings: dict, ports: list[dict], kernel_has_netem: bool) -> dict:
    """impairment.plan of a block's settings with the rest as roles/netem has them (its argument specs' defaults),
    as the role hands them over."""
    return impairment.plan(with_role_defaults("impairment", settings), ports, kernel_has_netem)


def test_delay_with_jitter_and_loss_is_one_netem_qdisc_per_egress_port_with_a_large_limit():
    p = plan({"delay_ms": 10, "jitter_ms": 2, "loss_percent": 0.1}, PORTS, kernel_has_netem=True)
    assert p["backend"] == "netem" and p["nft"] == ""
    assert p["tc"] == ["tc qdisc replace dev right root netem delay 10ms 2ms loss 0.1% limit 100000",
                       "tc qdisc replace dev left root netem delay 10ms 2ms loss 0.1% limit 100000"]
    assert p["devices"] == ["right", "left"]
    assert p["gro_off"] == ["left", "right"], "each direction's ingress port: both"


def test_selective_delay_of_every_nth_frame_marks_them_into_an_htb_netem_class():
    p = plan({"delay_ms": 1000, "selective_every_nth": 100, "directions": ["forward"]}, PORTS, True)
    assert p["tc"] == [
        "tc qdisc replace dev right root handle 1: htb default 10",
        "tc class replace dev right parent 1: classid 1:10 htb rate 100gbit",
        "tc class replace dev right parent 1: classid 1:20 htb rate 100gbit",
        "tc qdisc replace dev right parent 1:20 handle 20: netem delay 1000ms limit 100000",
        f"tc filter replace dev right parent 1: protocol all prio 1 handle {MARK:#x} fw flowid 1:20",
    ]
    assert p["gro_off"] == ["left"], "forward frames enter by port 0: GRO merged them there"
    marks = [line.strip() for line in p["nft"].splitlines() if "mark set" in line]
    assert marks == ['oifname "right" ip daddr 198.18.0.0/15 meta l4proto { tcp, udp } numgen inc mod 100 0 '
                     f"meta mark set {MARK:#x} counter",
                     'oifname "right" ip6 daddr 2001:2::/48 meta l4proto { tcp, udp } numgen inc mod 100 0 '
                     f"meta mark set {MARK:#x} counter"]


def test_loss_without_netem_is_nftables_in_the_forward_hook_on_test_traffic_only():
    p = plan({"loss_percent": 0.01, "loss_every_nth": 1000}, PORTS, kernel_has_netem=False)
    assert p["backend"] == "nftables" and p["tc"] == [] and p["devices"] == []
    rules = [line.strip() for line in p["nft"].splitlines() if "drop" in line]
    assert len(rules) == 8  # 2 ports x 2 families x (every-nth, random)
    assert all("198.18.0.0/15" in r or "2001:2::/48" in r for r in rules)
    assert ('oifname "right" ip daddr 198.18.0.0/15 meta l4proto { tcp, udp } numgen random mod 1000000 < 100 '
            'counter drop comment "ipv4 random"') in rules
    assert "type filter hook forward priority 0" in p["nft"]


def test_every_nth_loss_uses_nftables_even_with_netem():
    p = plan({"loss_every_nth": 100}, PORTS, kernel_has_netem=True)
    assert "numgen inc mod 100 0 counter drop" in p["nft"] and p["tc"] == []


@pytest.mark.parametrize("settings", [{"delay_ms": 100}, {"delay_ms": 1, "selective_every_nth": 10},
                                      {"loss_percent": 1, "backend": "netem"}])
def test_what_needs_netem_fails_on_a_kernel_without_it_naming_sch_netem(settings):
    with pytest.raises(InvalidParameter, match="sch_netem"):
        plan(settings, PORTS, kernel_has_netem=False)


@pytest.mark.parametrize(("settings", "names"), [
    ({"loss_percent": 101}, "loss_percent"), ({"loss_every_nth": 1}, "loss_every_nth"),
    ({"jitter_ms": 5}, "jitter_ms"),
    ({"delay_ms": 5, "selective_every_nth": 10, "selective_percent": 5}, "selective_percent"),
    ({"directions": ["sideways"]}, "directions"), ({"backend": "tbf"}, "backend"), ({"limit": 0}, "limit"),
])
def test_bad_settings_are_one_line_naming_the_setting(settings, names):
    with pytest.raises(InvalidParameter) as err:
        plan(settings, PORTS, kernel_has_netem=True)
    assert names in str(err.value) and "\n" not in str(err.value)


def test_no_impairment_plans_nothing():
    assert plan({}, PORTS, True) == {"backend": "none", "devices": [], "nft": "", "tc": [], "gro_off": []}


@pytest.mark.parametrize("selection", [{"selective_every_nth": 10}, {"selective_percent": 1}])
def test_selection_without_delay_is_the_loss_free_control_and_plans_nothing(selection):
    """gaming-selective-throughput sweeps delay_ms over 0 and 1000 ms: its 0 ms points are the loss-free figure
    measured with the same method, beside the impaired ones; even on a kernel without sch_netem."""
    for kernel_has_netem in (True, False):
        assert plan({"delay_ms": 0, **selection}, PORTS, kernel_has_netem) == {
            "backend": "none", "devices": [], "nft": "", "tc": [], "gro_off": []}


def test_every_emulator_setting_that_shapes_the_figures_is_in_each_runs_provenance(tmp_path, monkeypatch):
    """A spec's dut.impairment block names what it sets; netem's queue limit and the queues frames wait in are
    defaults it leaves out, yet they decide what the DUT drops (netem's own default limit, 1000 frames, would
    drop the late frames of every 10th at 10 kfps): every run's provenance records them all, as the role has them
    (its meta/argument_specs.yml: here changed, to tell them from any copy; trexlab.impairment had its own)."""
    role_defaults_changed(monkeypatch, "netem", limit=123_456, directions=["forward"])
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(static_inventory("imp"))
    experiment = load(REPO / "experiments" / "gaming-selective-throughput").scaled("ci")
    plans = plan_campaign(experiment, tmp_path / "results", inventory=str(inventory), ceilings=tmp_path / "c.json")
    emulator = {p.facts["sweep"]["dut.impairment.delay_ms"]: p.facts["impairment_emulator"] for p in plans}
    assert emulator[1000]["limit"] == 123_456 and emulator[1000]["directions"] == ["forward"]
    assert "netem of limit 123456 frames" in emulator[1000]["queues"] and "htb" in emulator[1000]["queues"]
    assert emulator[0]["queues"].startswith("none"), "delay 0: nothing configured, the loss-free control"
    # Per frame, not per GRO-merged packet (plan's gro_off): said where it is done, and only there.
    assert "GRO off on the port each impaired direction enters by" in emulator[1000]["queues"]
    assert "GRO" not in emulator[0]["queues"]


def test_tc_is_given_every_digit_of_the_delay_jitter_and_loss_the_spec_declares():
    # ':g' kept six significant digits: 1234.5678 ms was applied as 1234.57 ms while the provenance disclosed the
    # spec's 1234.5678.
    p = plan({"delay_ms": 1234.5678, "jitter_ms": 0.1234567, "loss_percent": 12.3456}, PORTS, kernel_has_netem=True)
    assert p["tc"][0] == ("tc qdisc replace dev right root netem delay 1234.5678ms 0.1234567ms loss 12.3456% "
                          "limit 100000")


@pytest.mark.parametrize("name", ["loss_percent", "selective_percent"])
@pytest.mark.parametrize("value", [0.00004, 0.12345678])
def test_a_percentage_finer_than_nftables_per_million_draw_is_refused_not_rounded(name, value):
    # nftables' random loss is numgen random mod 1000000 < ppm: 0.00004 % was round(0.4) = 0 ppm, no loss at all, and
    # 0.12345678 % was 1235 ppm, both unsaid.
    settings = {name: value, **({"delay_ms": 10} if name == "selective_percent" else {})}
    with pytest.raises(InvalidParameter) as info:
        plan(settings, PORTS, kernel_has_netem=False)
    assert str(info.value).startswith(f"{name}=") and "1 per million" in str(info.value), str(info.value)
    assert plan({**settings, name: 0.0001}, PORTS, kernel_has_netem=True)  # the finest that is exact
