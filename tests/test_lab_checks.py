"""Procedure.check_lab (issue 17): what only the lab can tell (RFC 6349's declared window against the nodes' kernel
limit, the TCP endpoints' configuration, the tester ports' MTU) is checked on the run path once the lab is known,
before any run directory is made, any generator made or any host configured; a campaign checks every point
before its first. No lab needed: the lab's refusal is a procedure's check_lab, or a node's kernel files read
from a table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trexlab import cli
from trexlab.params import InvalidParameter
from trexlab.plan import campaign as campaign_module
from trexlab.plan.campaign import Campaign, CampaignError, planned_endpoint_facts
from trexlab.plan.runplan import RunPlan, check_on_lab, plan_cli
from trexlab.procedures import rfc6349, throughput
from trexlab.spec import experiment
from trexlab.testbed import endpoints as endpoints_module
from trexlab.testbed.endpoints import LabView
from trexlab.testbed.inventory import LabError, load_lab

from labtools import static_inventory

#: A static lab with client and server nodes beside the tester's ports (reached nowhere).
WITH_ENDPOINTS = static_inventory("klc") + """
    clients:
      hosts:
        client:
          ansible_host: 192.0.2.30
          test_ports:
            - {index: 0, name: tcp0, mac: "02:00:00:00:00:03", ipv4: 198.18.0.3/24, peer_mac: "02:00:00:00:01:00"}
    servers:
      hosts:
        server:
          ansible_host: 192.0.2.40
          test_ports:
            - {index: 0, name: tcp0, mac: "02:00:00:00:00:04", ipv4: 198.19.0.3/24, peer_mac: "02:00:00:00:01:01"}
"""


def refuse_when(monkeypatch, condition):
    """throughput's check_lab refuses the plans condition(plan) names, as a lab would; every call is kept."""
    calls: list[RunPlan] = []

    def check_lab(plan, lab):
        calls.append(plan)
        if condition(plan):
            raise InvalidParameter("max_rate", plan.params.max_rate, "what this lab allows")
    monkeypatch.setattr(throughput, "check_lab", check_lab, raising=False)
    return calls


@pytest.fixture
def generators(monkeypatch):
    """The generators the run path makes (none may be made before the lab checks pass)."""
    made = []
    original = RunPlan.create_generator

    def create(plan):
        made.append(plan)
        return original(plan)
    monkeypatch.setattr(RunPlan, "create_generator", create)
    return made


def test_the_cli_refuses_on_the_lab_before_any_run_directory_or_generator(monkeypatch, tmp_path, capsys,
                                                                          generators):
    calls = refuse_when(monkeypatch, lambda plan: True)
    results = tmp_path / "r"
    code = cli.main(["throughput", "--generator", "sim", "--max-rate", "100000", "--trial-duration", "0.1",
                     "--results", str(results), "--ceilings", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT and len(calls) == 1
    assert err.startswith("trexlab throughput: max_rate=100000.0: allowed what this lab allows")
    assert err.count("\n") == 1 and not results.exists() and generators == []


def sweep_spec(tmp_path: Path) -> Path:
    spec = {"name": "labcheck", "generator": "sim", "generator_options": {"capacity": 300000},
            "traffic": {"receive_tail": 0},
            "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "trial_duration": 0.1}},
            "sweep": {"procedure.params.max_rate": [1000000, 900000, 800000]}, "repetitions": 1}
    path = tmp_path / "labcheck.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_campaign_whose_middle_point_the_lab_refuses_touches_nothing(monkeypatch, tmp_path, generators):
    calls = refuse_when(monkeypatch, lambda plan: plan.params.max_rate == 900000)
    results = tmp_path / "results"
    campaign = Campaign(experiment.load(sweep_spec(tmp_path)), results, ceilings=tmp_path / "c.json")
    with pytest.raises(CampaignError) as err:
        campaign.run()
    assert "point 1 (" in str(err.value) and "max_rate=900000" in str(err.value) and "\n" not in str(err.value)
    # Every point before the refused one was checked, none run: no directory, no generator.
    assert [p.params.max_rate for p in calls] == [1000000, 900000]
    assert not results.exists() and generators == []


def test_a_campaign_checks_every_point_before_its_first_runs(monkeypatch, tmp_path):
    events: list[str] = []
    calls = refuse_when(monkeypatch, lambda plan: events.append("check") and False)
    monkeypatch.setattr(RunPlan, "create_generator",
                        lambda plan, original=RunPlan.create_generator: events.append("run") or original(plan))
    outcome = Campaign(experiment.load(sweep_spec(tmp_path)), tmp_path / "results",
                       ceilings=tmp_path / "c.json").run()
    assert outcome["done"] == 3 and len(calls) == 3
    assert events == ["check"] * 3 + ["run"] * 3


def tcp_plan(tmp_path, *flags):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(WITH_ENDPOINTS)
    argv = ["tcp", "--inventory", str(inventory), "--results", str(tmp_path / "r"), "--ceilings",
            str(tmp_path / "c.json"), *flags]
    return plan_cli(cli.build_parser().parse_args(argv), argv)


@pytest.fixture
def kernel(monkeypatch):
    """The nodes' kernel files, from a table (nothing is reached): rmem/wmem_max and the tester ports' MTU; and the
    smallest socket buffers their kernels give (SO_SNDBUF, SO_RCVBUF: a 6.x kernel's on x86-64)."""
    table = {"/proc/sys/net/core/rmem_max": 212992, "/proc/sys/net/core/wmem_max": 212992}
    read = []

    def read_number(node, path):
        read.append((node.name, path))
        return table.get(path, 1500 if path.endswith("/mtu") else None)

    def socket_buffer_floors(node):
        read.append((node.name, "socket buffer floors"))
        return 4608, 2304
    monkeypatch.setattr(endpoints_module, "read_number", read_number)
    monkeypatch.setattr(endpoints_module, "socket_buffer_floors", socket_buffer_floors)
    return read


def test_rfc6349_refuses_a_declared_window_beyond_the_kernel_limit_on_the_endpoints_a_campaign_will_apply(
        tmp_path, kernel):
    plan = tcp_plan(tmp_path, "--window-bytes", "8388608")
    lab = load_lab(plan.lab.inventory)
    planned = LabView(lab, planned_endpoint_facts(lab, {}))
    with pytest.raises(InvalidParameter) as err:
        check_on_lab([plan], planned)
    assert str(err.value).startswith("window_bytes=8388608: allowed <= 212992 bytes (net.core.rmem_max on node")
    assert ("server", "/proc/sys/net/core/rmem_max") in kernel
    check_on_lab([tcp_plan(tmp_path, "--window-bytes", "212992")], planned)


def test_rfc6349_refuses_endpoints_not_configured_and_too_few_server_ports(tmp_path, kernel):
    plan = tcp_plan(tmp_path)
    with pytest.raises(LabError, match="the TCP endpoints are not configured: run ansible-playbook"):
        check_on_lab([plan])  # the CLI configures nothing: nothing beside the inventory says they are
    lab = load_lab(plan.lab.inventory)
    with pytest.raises(InvalidParameter, match=r"dscp=\(46, 10, 12, 14, 0\): allowed at most 2 values"):
        check_on_lab([plan], LabView(lab, planned_endpoint_facts(lab, {"iperf3_ports": [5201, 5202]})))


def test_rfc6349_refuses_mtu_frame_sizes_the_tester_ports_cannot_send(tmp_path, kernel):
    plan = tcp_plan(tmp_path, "--mtu-frame-sizes", "4018,9018")
    lab = load_lab(plan.lab.inventory)
    with pytest.raises(InvalidParameter, match=r"mtu_frame_sizes=\(4018, 9018\): allowed at least one size <= 1518"):
        rfc6349.check_lab(plan, LabView(lab, planned_endpoint_facts(lab, {})))


def test_a_campaign_checks_rfc6349_points_against_the_endpoints_it_will_configure(tmp_path, kernel,
                                                                                 monkeypatch):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(WITH_ENDPOINTS)
    spec = {"name": "tcpcheck", "generator": "software", "lab": {"topology": "single"},
            "procedure": {"name": "tcp", "params": {"mtu": 1500, "bottleneck_bandwidth": 1e9}},
            "endpoints": {"iperf3_ports": [5201]},
            "sweep": {"procedure.params.window_bytes": [65536, 8388608]}, "repetitions": 1}
    path = tmp_path / "tcpcheck.yml"
    path.write_text(yaml.safe_dump(spec))
    playbooks: list[str] = []
    monkeypatch.setattr(Campaign, "playbook", lambda self, name, extra: playbooks.append(name))
    monkeypatch.setattr(campaign_module, "check_requirements", lambda experiment, lab: None)
    campaign = Campaign(experiment.load(path), tmp_path / "results", inventory=str(inventory),
                        ceilings=tmp_path / "c.json")
    with pytest.raises(CampaignError) as err:
        campaign.run()
    # The spec's one iperf3 port, not the role's five nor facts beside the inventory: what the campaign applies.
    assert "point 0 (" in str(err.value) and "dscp=(46, 10, 12, 14, 0): allowed at most 1 values" in str(err.value)
    assert playbooks == [] and not (tmp_path / "results").exists()


@pytest.mark.parametrize(("procedure", "flags"), [("throughput", ["--min-rate", "2e7"]),
                                                  ("mlrsearch", ["--min-rate", "2e7"]),
                                                  ("selftest", ["--min-rate", "2e7", "--frame-sizes", "1518"])])
def test_a_search_range_the_media_does_not_allow_is_refused_by_the_plan(tmp_path, procedure, flags):
    argv = [procedure, "--generator", "sim", "--frame-size", "1518", "--results", str(tmp_path / "r"),
            "--ceilings", str(tmp_path / "c.json"), *flags]
    with pytest.raises(InvalidParameter, match=r"min_rate=20000000.0: allowed < max_rate \(812743\)"):
        plan_cli(cli.build_parser().parse_args(argv), argv)
    assert not (tmp_path / "r").exists()


def test_http_download_checks_the_endpoints_as_the_run_will_find_them(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(WITH_ENDPOINTS)
    argv = ["http_download", "--inventory", str(inventory), "--results", str(tmp_path / "r"), "--ceilings",
            str(tmp_path / "c.json")]
    plan = plan_cli(cli.build_parser().parse_args(argv), argv)
    with pytest.raises(LabError, match="the TCP endpoints are not configured"):
        check_on_lab([plan])
    lab = load_lab(inventory)
    check_on_lab([plan], LabView(lab, planned_endpoint_facts(lab, {})))  # what a campaign applies first
    argv6 = [*argv, "--ip-version", "6", "--frame-size", "84"]
    with pytest.raises(LabError, match="server node server has no IPv6 test address"):
        check_on_lab([plan_cli(cli.build_parser().parse_args(argv6), argv6)],
                     LabView(lab, planned_endpoint_facts(lab, {})))
