"""One run plan (issue 17): the CLI verbs and campaigns build the same RunPlan and execute it the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from trexlab import cli
from trexlab.plan.campaign import Campaign
from trexlab.plan.runplan import RunPlan, plan_campaign
from trexlab.results.store import read_json
from trexlab.spec import experiment
from trexlab.trial import GeneratorError

#: What identifies the invocation, not the run: the CLI records its argv, a campaign its point and the order of its
#: repetitions.
INVOCATION = {"started", "argv", "experiment", "campaign", "point", "sweep", "spec", "order"}


def test_a_campaign_and_the_cli_verb_write_the_same_provenance_and_results(tmp_path, capsys):
    ceilings = tmp_path / "ceilings.json"
    assert cli.main(["throughput", "--generator", "sim", "--generator-opt", "capacity=300000",
                     "--generator-opt", "random_loss=0.001", "--max-rate", "1000000", "--trial-duration", "1",
                     "--receive-tail", "0", "--repeat", "2", "--results", str(tmp_path / "cli"),
                     "--ceilings", str(ceilings)]) == 0
    spec = {"name": "same", "generator": "sim", "generator_options": {"capacity": 300000, "random_loss": 0.001},
            "traffic": {"receive_tail": 0},
            "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "trial_duration": 1}},
            "repetitions": 2}
    (tmp_path / "same.yml").write_text(yaml.safe_dump(spec))
    assert cli.main(["campaign", str(tmp_path / "same.yml"), "--results", str(tmp_path / "results"),
                     "--ceilings", str(ceilings)]) == 0
    capsys.readouterr()
    point = next((tmp_path / "results" / "same").glob("*/point-0"))
    for rep in ("rep-001", "rep-002"):
        by_cli, by_campaign = tmp_path / "cli" / rep, point / rep
        ours = {k: v for k, v in read_json(by_cli / "provenance.json").items() if k not in INVOCATION}
        theirs = {k: v for k, v in read_json(by_campaign / "provenance.json").items() if k not in INVOCATION}
        assert ours == theirs
        assert read_json(by_cli / "result.json") == read_json(by_campaign / "result.json")
        assert trials(by_cli) == trials(by_campaign)
    assert read_json(tmp_path / "cli" / "summary.json") == read_json(point / "summary.json")


def trials(run: Path) -> list[dict]:
    """A run's trials without the wall-clock time each ended at."""
    return [{k: v for k, v in json.loads(line).items() if k != "time"}
            for line in (run / "trials.jsonl").read_text().splitlines()]


def test_planning_a_campaign_touches_nothing_and_gives_every_point_its_plan(tmp_path):
    spec = {"name": "plans", "generator": "sim", "generator_options": {"capacity": 300000},
            "procedure": {"name": "throughput", "params": {"max_rate": 1000000}},
            "sweep": {"generator_options.capacity": [100000, 200000, 300000], "traffic.destination_networks": [1, 4]},
            "repetitions": 3}
    plans = plan_campaign(experiment.validate(spec), tmp_path / "results", ceilings=tmp_path / "c.json")
    assert len(plans) == 6 and all(isinstance(p, RunPlan) for p in plans)
    assert {(p.generator_options["capacity"], p.traffic.destination_networks) for p in plans} == {
        (c, n) for c in (100000.0, 200000.0, 300000.0) for n in (1, 4)}
    assert all(p.output.parent.parent == tmp_path / "results" / "plans" for p in plans)
    assert all(getattr(p.repetitions, "maximum", p.repetitions) == 3 and p.params.max_rate == 1000000 for p in plans)
    assert list(tmp_path.iterdir()) == [], "planning wrote nothing"
    with pytest.raises(AttributeError, match="cannot assign"):
        plans[0].repetitions = 1


def test_a_sweep_too_large_is_refused_with_its_count_before_it_is_expanded():
    spec = {"name": "big", "generator": "sim", "procedure": {"name": "throughput"},
            "sweep": {f"generator_options.{k}": list(range(1, 101))
                      for k in ("seed", "buffer_frames", "delay_every_nth")}}
    with pytest.raises(experiment.InvalidExperiment, match=r"sweep: 1000000 points \(100 x 100 x 100\)"):
        experiment.validate(spec)


INVENTORY = """
all:
  vars: {trexlab_lab: {name: order, kind: static, topology: single}}
  children:
    testers:
      hosts:
        tester:
          ansible_host: 192.0.2.10
          test_ports:
            - {index: 0, name: p0, mac: "02:00:00:00:00:01", ipv4: 198.18.0.2/24}
            - {index: 1, name: p1, mac: "02:00:00:00:00:02", ipv4: 198.19.0.2/24}
    duts:
      hosts:
        dut1:
          ansible_host: 192.0.2.20
          test_ports:
            - {index: 0, name: d0, mac: "02:00:00:00:01:00", ipv4: 198.18.0.1/24}
            - {index: 1, name: d1, mac: "02:00:00:00:01:01", ipv4: 198.19.0.1/24}
"""


def test_a_point_whose_generator_cannot_be_made_never_configures_the_dut(tmp_path, monkeypatch):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    log = tmp_path / "playbooks.log"
    fake = tmp_path / "ansible-playbook"
    fake.write_text(f"#!/bin/sh\necho \"$3\" >> {log}\n")
    fake.chmod(0o755)

    def no_generator(self):
        raise GeneratorError("the tester is not there")

    monkeypatch.setattr(RunPlan, "create_generator", no_generator)
    spec = {"name": "order", "generator": "software", "dut": {"impairment": {"loss_percent": 1}},
            "procedure": {"name": "throughput"}, "repetitions": 1}
    outcome = Campaign(experiment.validate(spec), tmp_path / "results", inventory=str(inventory),
                       ansible_playbook=str(fake), ceilings=tmp_path / "c.json").run()
    assert outcome["done"] == 0 and len(outcome["failed"]) == 1
    assert not log.exists(), f"a playbook ran before the generator existed: {log.read_text()}"


def test_the_schema_editors_use_is_generated_and_accepts_every_shipped_experiment(capsys):
    import jsonschema

    assert cli.main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    shipped = sorted(Path(__file__).parent.parent.glob("experiments/*/experiment.yml"))
    assert shipped
    for path in shipped:
        spec = yaml.safe_load(path.read_text())
        assert not list(validator.iter_errors(spec)), path
        for scale in spec.get("scale") or {}:
            assert not list(validator.iter_errors(experiment.load(path).scaled(scale).spec)), (path, scale)
    # The documented fields come from the types: a field's unit is in its description.
    assert "frames/s" in schema["properties"]["dut"]["properties"]["reference"]["properties"]["rate_fps"][
        "description"]
    assert "bytes" in schema["properties"]["traffic"]["properties"]["frame_size"]["description"]
    # A hostile spec is refused by the editors' schema too.
    assert list(validator.iter_errors({"name": "x", "procedure": {"name": "throughput"}, "generator": "software",
                                       "generator_options": {"binary": "/bin/sh"}}))
