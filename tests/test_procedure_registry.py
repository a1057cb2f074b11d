"""Procedures implement one written protocol (trexlab.procedures.Procedure) and are registered in one place; the
generators declare their capabilities (trexlab.trial.Capabilities), which the plan checks before any host is
touched."""

from __future__ import annotations

import ast
import pkgutil
import types
from pathlib import Path

import pytest

import trexlab
from trexlab import procedures
from trexlab.cli import build_parser
from trexlab.generators import GENERATORS, capabilities, generator_class
from trexlab.params import InvalidParameter
from trexlab.plan.runplan import plan_campaign, plan_cli
from trexlab.procedures import HELPERS, MODULES, Procedure, conformance, registry
from trexlab.trial import Capabilities, Generator

from labtools import static_inventory

PACKAGE = Path(trexlab.__file__).parent


def test_the_registry_lists_every_procedure_module_of_the_package():
    found = {m.name for m in pkgutil.iter_modules(procedures.__path__)} - set(HELPERS)
    assert found == set(MODULES), "a procedure module that is not registered (or a registered one that is gone)"
    assert sorted(m.__name__.rsplit(".", 1)[-1] for m in registry().values()) == sorted(MODULES)


@pytest.mark.parametrize("name", list(registry()))
def test_every_registered_procedure_has_every_member_of_the_protocol(name):
    module = registry()[name]
    assert conformance(module) == [] and isinstance(module, Procedure)
    assert module.NAME == name


def test_a_procedure_missing_a_member_fails(monkeypatch):
    from trexlab.procedures import throughput

    fake = types.ModuleType("fake")
    for member in ("NAME", "Params", "TAKES_RATE", "needs_tcp_endpoints", "check_lab", "headline_names", "cost",
                   "run"):
        setattr(fake, member, getattr(throughput, member))
    assert conformance(fake) == ["no check"]
    fake.check = lambda generator, params, traffic: None  # the old signature
    assert conformance(fake) == ["check(generator, params, traffic): expected check(plan)"]
    monkeypatch.delattr(throughput, "cost")
    registry.cache_clear()
    try:
        with pytest.raises(TypeError, match="procedure module trexlab.procedures.throughput: no cost"):
            registry()
    finally:
        monkeypatch.undo()
        registry.cache_clear()


def _name_lists(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines where procedure names are listed or compared: a literal tuple, list, set or dict (keys) holding two
    or more, or a comparison with one (`name == "tcp"`, `name in ("latency", "pdv")`)."""
    def named(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and sum(map(named, node.elts)) >= 2:
            lines.append(node.lineno)
        elif isinstance(node, ast.Dict) and sum(map(named, node.keys)) >= 2:
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(named(c) or (isinstance(c, ast.Tuple | ast.List | ast.Set)
                                                                and any(map(named, c.elts)))
                                                    for c in [node.left, *node.comparators]):
            lines.append(node.lineno)
    return lines


def test_no_second_list_of_procedure_names_in_the_package():
    names = set(registry())
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _name_lists(ast.parse(path.read_text()), names)
        if path == Path(procedures.__file__):  # MODULES: the registry itself (module names)
            lines = [n for n in lines if "MODULES = " not in path.read_text().splitlines()[n - 1]]
        found += [f"{path.relative_to(PACKAGE.parent)}:{n}" for n in lines]
    assert found == []


# -- generator capabilities ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GENERATORS))
def test_every_generator_declares_its_capabilities(name):
    cls = generator_class(name)
    assert isinstance(cls.capabilities, Capabilities) and cls.name == name
    for member in ("run_trial", "describe", "close", "skip_trials"):
        assert callable(getattr(cls, member)), member
    assert capabilities(name) is cls.capabilities


def test_the_simulated_sut_is_a_generator_of_the_protocol():
    from trexlab.generators import create_generator

    assert isinstance(create_generator("sim"), Generator)


INVENTORY = static_inventory("cx")


@pytest.fixture
def inventory(tmp_path) -> Path:
    path = tmp_path / "hosts.yml"
    path.write_text(INVENTORY)
    return path


def test_a_frame_timeout_the_generator_cannot_honour_fails_in_the_plan(tmp_path, inventory):
    """TRex cannot tell a late test frame from one in time: refused in the plan (one line), not in the first trial
    after the DUT was configured."""
    argv = ["throughput", "--generator", "trex", "--inventory", str(inventory), "--frame-timeout", "0.01",
            "--results", str(tmp_path / "r"), "--ceilings", str(tmp_path / "ceilings.json")]
    with pytest.raises(InvalidParameter) as err:
        plan_cli(build_parser().parse_args(argv))
    assert str(err.value) == ("frame_timeout=0.01: allowed none with generator trex (it cannot tell a late frame "
                              "from one in time)")
    plan_cli(build_parser().parse_args([a for a in argv if a not in ("--frame-timeout", "0.01")]))


@pytest.mark.parametrize("procedure", ["throughput", "latency", "pdv", "flr", "mlrsearch"])
def test_siit_traffic_with_a_generator_that_cannot_count_translated_frames_fails_in_the_plan(tmp_path, inventory,
                                                                                            procedure):
    """TRex marks each frame's pg_id in its IPv4 Identification or IPv6 Flow Label, which a SIIT translator does not
    carry over: every translated frame would count as lost, a DUT that forwards nothing. Refused in the plan."""
    def argv(generator):
        return [procedure, "--generator", generator, "--inventory", str(inventory), "--ip-version", "6,4",
                "--frame-size", "84,64", "--results", str(tmp_path / "r"),
                "--ceilings", str(tmp_path / "ceilings.json"),
                *(["--rate", "1000"] if procedure in ("latency", "pdv") else [])]

    with pytest.raises(InvalidParameter) as err:
        plan_cli(build_parser().parse_args(argv("trex")))
    assert str(err.value) == ("ip_version=(6, 4): allowed the same on both tester ports with generator trex (it "
                              "cannot count frames a translator turned into the other IP version)")
    plan_cli(build_parser().parse_args(argv("software")))  # swtester counts them


def test_a_campaign_asking_what_its_generator_cannot_do_is_refused_before_any_host(tmp_path, inventory):
    """A point whose request the generator cannot meet stops the whole campaign while it is planned: nothing is
    locked, probed or configured."""
    from trexlab.spec.experiment import InvalidExperiment

    spec = {"name": "cx", "lab": {"kind": "static", "topology": "single"}, "generator": "trex",
            "procedure": {"name": "latency", "params": {"rate": 1000, "trial_duration": 10, "tag_delay": 1}},
            "sweep": {"procedure.params.frame_timeout": [None, 0.01]}}
    with pytest.raises(InvalidExperiment) as err:
        plan_campaign(spec, tmp_path / "results", inventory=str(inventory), ceilings=tmp_path / "ceilings.json")
    assert "frame_timeout=0.01: allowed none with generator trex" in str(err.value)
    assert "\n" not in str(err.value) and not (tmp_path / "results").exists()
