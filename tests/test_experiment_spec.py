"""Experiment specs are validated completely, with one-line errors, before any host is touched."""

import copy

import pytest
import yaml

from trexlab.spec import experiment
from trexlab.spec.experiment import InvalidExperiment

GOOD = {
    "name": "gaming-table2",
    "description": "zero loss vs 0.011 % tolerance under 0.01 % random loss",
    "lab": {"kind": "local", "topology": "single"},
    "generator": "software",
    "dut": {"impairment": {"loss_percent": 0.01}},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional"},
    "procedure": {"name": "throughput", "params": {}},
    "sweep": {"dut.impairment.loss_percent": [0, 0.01], "traffic.destination_networks": [1, 4]},
    "repetitions": 3,
}


def with_(path, value):
    spec = copy.deepcopy(GOOD)
    node = spec
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[key]
    if value is experiment:  # sentinel: delete the key
        del node[leaf]
    else:
        node[leaf] = value
    return spec


def test_good_spec_expands_into_the_sweep_matrix():
    exp = experiment.validate(copy.deepcopy(GOOD))
    points = exp.points()
    assert len(points) == 4
    assert {(p.spec["dut"]["impairment"]["loss_percent"], p.spec["traffic"]["destination_networks"])
            for p in points} == {(0, 1), (0, 4), (0.01, 1), (0.01, 4)}
    assert len({p.point_id for p in points}) == 4, "point ids must be unique directory names"
    assert exp.repetitions == 3


def test_point_ids_are_stable_across_loads():
    first = [p.point_id for p in experiment.validate(copy.deepcopy(GOOD)).points()]
    second = [p.point_id for p in experiment.validate(copy.deepcopy(GOOD)).points()]
    assert first == second


def test_default_repetitions_is_twenty():
    assert experiment.validate(with_("repetitions", experiment)).repetitions == 20


def test_scale_overrides_merge_into_the_spec():
    spec = copy.deepcopy(GOOD)
    spec["scale"] = {"ci": {"repetitions": 2, "procedure": {"params": {"trial_duration": 1}}}}
    exp = experiment.validate(spec).scaled("ci")
    assert exp.repetitions == 2
    assert exp.spec["procedure"]["params"]["trial_duration"] == 1
    assert exp.spec["procedure"]["name"] == "throughput"


@pytest.mark.parametrize(("overrides", "message"), [
    ({"repetitions": 0}, "<spec> (scale ci): repetitions: 0 is less than the minimum of 1"),
    ({"procedure": {"params": {"trial_duration": -1}}},
     "<spec> (scale ci): point 0 (loss_percent=0_destination_networks=1-07ee7d): procedure.params.trial_duration="
     "-1.0: allowed > 0 and <= 3600"),
])
def test_a_spec_is_checked_with_each_scale_it_declares(overrides, message):
    """A dry run (or a full-scale campaign) of a shared spec checks its CI scale too: it used to pass a spec whose
    `--scale ci` was refused only when someone ran it."""
    spec = copy.deepcopy(GOOD)
    spec["scale"] = {"ci": overrides}
    with pytest.raises(InvalidExperiment) as refused:
        experiment.validate(spec)
    assert str(refused.value) == message


MALFORMED = [
    ("not a mapping", ["a", "list"], "must be a mapping"),
    ("missing name", with_("name", experiment), "'name' is a required property"),
    ("bad name", with_("name", "Bad Name!"), "name: 'Bad Name!' does not match"),
    ("missing procedure", with_("procedure", experiment), "'procedure' is a required property"),
    ("unknown top-level key", {**GOOD, "sweeps": {}}, "unknown key sweeps"),
    ("unknown lab kind", with_("lab.kind", "cloud"), "lab.kind: 'cloud' is not allowed; allowed local"),
    ("unknown topology", with_("lab.topology", "triple"), "lab.topology: 'triple' is not allowed"),
    ("unknown lab key", with_("lab.nodes", 3), "lab: unknown key nodes"),
    ("unknown requirement", with_("lab.requires", ["dpdk"]), "lab.requires.0: 'dpdk' is not allowed"),
    ("unknown generator", with_("generator", "ixia"), "generator: 'ixia' is not allowed"),
    ("unknown dut block", with_("dut.firewall", {}), "dut: unknown key firewall"),
    ("dut block not a mapping", with_("dut.impairment", "1%"), "dut.impairment: '1%' is not of type 'object'"),
    ("unknown procedure", with_("procedure.name", "rfc9999"), "procedure.name: 'rfc9999' is not allowed"),
    ("procedure without name", with_("procedure.name", experiment), "'name' is a required property"),
    ("repetitions zero", with_("repetitions", 0), "repetitions: 0 is less than the minimum of 1"),
    ("repetitions not integer", with_("repetitions", "20"), "repetitions: '20' is not of type 'integer'"),
    ("sweep not a list", with_("sweep", {"traffic.destination_networks": 4}), "is not of type 'array'"),
    ("empty sweep list", with_("sweep", {"traffic.destination_networks": []}), "should be non-empty"),
    ("sweep key not dotted", with_("sweep", {"loss": [1]}), "sweep: 'loss' does not match"),
    ("sweep outside spec", with_("sweep", {"lab.topology": ["dual"]}), "sweep.lab.topology: allowed roots"),
    ("sweep procedure name", with_("sweep", {"procedure.name": ["flr"]}), "only procedure.params.* can be swept"),
    ("frame size too small", with_("traffic.frame_size", [32, 32]), "traffic.frame_size[0]=32: allowed 64..9018"),
    ("bad ip version", with_("traffic.ip_version", [4, 5]), "traffic.ip_version[1]=5: allowed 4 or 6"),
    ("ipv6 frame too small", with_("traffic.ip_version", [4, 6]),
     "traffic.frame_size[1]=64: allowed 84..9018 bytes for IPv6 test frames"),
    ("bad directions", with_("traffic.directions", "both"),
     "traffic.directions: 'both' is not allowed; allowed bidirectional"),
    ("unknown traffic key", with_("traffic.vlan", 10), "traffic: unknown key vlan"),
    ("swept networks out of range", with_("sweep", {"traffic.destination_networks": [1, 512]}),
     "traffic.destination_networks=512: allowed 1..256"),
    ("unknown scale", {**GOOD, "scale": {"nightly": {}}}, "scale: unknown key nightly"),
    ("unknown impairment", with_("dut.impairment.loss", 1), "dut.impairment.loss: unknown; allowed backend, delay_ms"),
    ("impairment of wrong type", with_("dut.impairment.delay_ms", "10ms"),
     "dut.impairment.delay_ms: '10ms' is not of type float"),
    ("impairment direction", with_("dut.impairment.directions", ["up"]),
     "dut.impairment.directions: ['up'] is not allowed; allowed forward, reverse"),
    ("role state is not a setting", with_("dut.impairment.state", "absent"), "dut.impairment.state: unknown"),
    # A shared spec must not delete a root qdisc someone else put on the DUT's port (the role may, told by hand).
    ("a spec replacing a foreign root qdisc", with_("dut.impairment.replace_root", True),
     "dut.impairment.replace_root: not settable from a spec: it deletes a root qdisc another put on the DUT's port"),
    ("swept impairment of wrong type", with_("sweep", {"dut.impairment.loss_percent": [0, "1%"]}),
     "point 1 (loss_percent=1_-"),
    ("dut with the sim generator", {**GOOD, "generator": "sim"}, "with generator sim declare the simulated SUT"),
]


@pytest.mark.parametrize(("spec", "expected"), [(s, e) for _, s, e in MALFORMED],
                         ids=[name for name, _, _ in MALFORMED])
def test_malformed_spec_gets_one_line_error_naming_the_problem(spec, expected):
    with pytest.raises(InvalidExperiment) as info:
        experiment.validate(spec, "exp.yml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("exp.yml")
    assert expected in message


def test_there_are_at_least_twenty_malformed_cases():
    assert len(MALFORMED) >= 20


def test_load_reports_yaml_syntax_errors_with_the_line(tmp_path):
    path = tmp_path / "experiment.yml"
    path.write_text("name: x\nprocedure: {name: throughput\n")
    with pytest.raises(InvalidExperiment, match=r"experiment.yml: line \d+ not valid YAML"):
        experiment.load(path)


def test_load_reads_a_directory(tmp_path):
    (tmp_path / "experiment.yml").write_text(yaml.safe_dump(GOOD))
    assert experiment.load(tmp_path).name == "gaming-table2"


def test_missing_file_is_one_line():
    with pytest.raises(InvalidExperiment, match="no such experiment spec"):
        experiment.load("/nonexistent/experiment.yml")


def test_a_number_in_exponent_notation_yaml_1_1_reads_as_text_is_refused_saying_so(tmp_path):
    """Specs are read as YAML 1.1 (PyYAML's, as Ansible's): 100e6 is the string '100e6' there, though the CLI's
    --bottleneck-bandwidth 100e6 and an editor's YAML 1.2 read a number, and the README's own spec block wrote it
    so. The refusal said only "allowed a number or null"; it says why, and the form that is read as a number."""
    spec = tmp_path / "experiment.yml"
    block = "procedure: {name: tcp, params: {engine: trex, mtu: 1500, bottleneck_bandwidth: %s}}\n"
    spec.write_text("name: tcp-trex\ngenerator: trex\n" + block % "100e6")
    with pytest.raises(InvalidExperiment) as refused:
        experiment.load(spec)
    assert str(refused.value).endswith("bottleneck_bandwidth='100e6': allowed a number or null (YAML 1.1, which "
                                       "reads specs, takes 100e6 as text: write 100.0e+6)"), str(refused.value)
    spec.write_text("name: tcp-trex\ngenerator: trex\n" + block % "100.0e+6")
    assert experiment.load(spec).spec["procedure"]["params"]["bottleneck_bandwidth"] == 1e8
