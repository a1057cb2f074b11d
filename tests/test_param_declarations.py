"""Every procedure parameter and generator option is declared once, with what it is, its unit and its range, and
shown from that declaration: in `trexlab <procedure> --help` and in `trexlab schema` (the JSON Schema editors
check specs with). The checks a run enforces (procedure_params, check_generator_options) are the other half: they
must refuse what the schema refuses, so that the schema never flags a spec a run would take, and refuse nothing
more except where the limit depends on another parameter (named below)."""

from __future__ import annotations

import dataclasses
import math
import re
import typing

import jsonschema
import pytest

from trexlab import cli
from trexlab.params import InvalidParameter
from trexlab.plan.runplan import check_generator_options, procedure_params
from trexlab.procedures import registry
from trexlab.spec.schema import LIST_ITEMS_MAX, Traffic, experiment_schema, generator_options_class
from trexlab.trial import TrialSpec

#: Parameters whose run-time limit depends on another parameter, which a per-key schema cannot say; each one's
#: help line names that other parameter.
CROSS_FIELD = {
    ("throughput", "max_rate"): "min_rate",  # > min_rate
    ("mlrsearch", "max_rate"): "min_rate",
    ("selftest", "max_rate"): "min_rate",
    ("throughput", "initial_rate"): "min_rate",  # min_rate..max_rate
    ("latency", "tag_delay"): "trial_duration",  # < trial_duration
    ("latency", "trial_duration"): "tag_delay",  # > tag_delay
    ("tcp", "bb_max_rate"): "bb_min_rate",  # > bb_min_rate
    ("tcp", "trex_server_port"): "one more per test",  # + one port per DSCP test must fit
    ("sim", "every_nth_loss"): "1 is refused",  # 0 (off) or >= 2
}
#: Values tried for every numeric key, beside each key's own bounds and their neighbours.
PROBES = (-1e12, -1.0, 0.0, 1e-9, 1e-6, 1e-3, 0.5, 1.0, 2.0, 63.0, 64.0, 100.0, 101.0, 576.0, 600.0, 1000.0,
          3600.0, 3601.0, 9018.0, 9019.0, 65535.0, 65536.0, 86400.0, 86401.0, 1e7, 1e9, 1.5e9, 1e12)
#: What a procedure needs besides the probed key (latency and pdv have no default rate).
BASE = {"latency": {"rate": 1000.0}, "pdv": {"rate": 1000.0}}


def _conditions(key: str) -> dict:
    """name -> the schema `trexlab schema` gives that procedure's params (key procedure) or generator's options."""
    found = {}
    for condition in experiment_schema()["allOf"]:
        test = condition["if"]["properties"]
        if key == "procedure" and "procedure" in test:
            name = test["procedure"]["properties"]["name"]["const"]
            found[name] = condition["then"]["properties"]["procedure"]["properties"]["params"]
        elif key == "generator" and "generator" in test:
            found[test["generator"]["const"]] = condition["then"]["properties"]["generator_options"]
    return found


def _numbers(prop: dict) -> dict | None:
    """The schema of a key's number (a rate is also {from: throughput}), or None when it takes no number."""
    for option in prop.get("anyOf", [prop]):
        if option.get("type") in ("number", "integer"):
            return option
    return None


def _probes(bounds: dict, integer: bool) -> list:
    values = set(PROBES)
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in bounds:
            bound = float(bounds[key])
            values |= {bound, bound - max(abs(bound) * 1e-9, 1e-12), bound + max(abs(bound) * 1e-9, 1e-12),
                       bound - 1, bound + 1}
    if integer:
        # 1000.0 is an integer to JSON Schema (and to every editor that checks a spec with it): a key the schema
        # types integer is probed with the integral floats too, which the run's checks must take alike.
        integral = {int(v) for v in values if v == int(v) and abs(v) < 1e15}
        return sorted(integral) + sorted(float(v) for v in integral)
    return sorted(values)


def _cases():
    """(owner, key, schema of the key, validator of {key: value})."""
    for name, schema in _conditions("procedure").items():
        def params_ok(values, name=name):
            procedure_params(name, {**BASE.get(name, {}), **values})
        for key, prop in schema["properties"].items():
            yield name, key, prop, params_ok
    for generator, schema in _conditions("generator").items():
        def options_ok(values, generator=generator):
            check_generator_options(generator, values)
        for key, prop in schema["properties"].items():
            yield generator, key, prop, options_ok


CASES = list(_cases())


def test_every_parameter_and_option_says_what_it_is_with_its_unit():
    undocumented = [f"{owner}.{key}" for owner, key, prop, _ in CASES if len(prop.get("description", "")) < 8]
    assert not undocumented, f"no description in trexlab schema: {', '.join(undocumented)}"
    for owner, key, prop, _ in CASES:
        number = _numbers(prop)
        text = prop.get("description", "")
        if number is not None and not any(b in number for b in ("minimum", "exclusiveMinimum")):
            pytest.fail(f"{owner}.{key}: a number without a declared lower bound")
        # A quantity names its unit: frames/s, s, bytes, bit/s, %, a ratio, or what it counts.
        if number is not None and not re.search(r"frames/s|\bs\b|bytes|bit/s|%|ratio|frames|connections|trials|"
                                                r"port|seed|every Nth", text):
            pytest.fail(f"{owner}.{key}: no unit in its description {text!r}")


@pytest.mark.parametrize("owner,key,prop,validate", [c for c in CASES if _numbers(c[2]) is not None
                                                     or c[2].get("type") == "array"],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_schema_refuses_what_a_run_refuses(owner, key, prop, validate):
    number = _numbers(prop)
    if number is None:  # a list: probe its items, and the empty list
        items = prop.get("items", {})
        if items.get("type") not in ("number", "integer") and "enum" not in items:
            pytest.skip("a list of mappings: each is checked by its own keys")
        values = [[]] + ([[v] for v in items["enum"]] + [["nosuch"]] if "enum" in items
                         else [[v] for v in _probes(items, items.get("type") == "integer")])
        valid = items["enum"][0] if "enum" in items else items.get("minimum", 1)
        values += [[valid] * LIST_ITEMS_MAX, [valid] * (LIST_ITEMS_MAX + 1)]  # a list's length is bounded too
    else:
        values = _probes(number, number.get("type") == "integer")
    validator = jsonschema.Draft202012Validator({"type": "object", "properties": {key: prop}})
    for value in values:
        schema_ok = validator.is_valid({key: value})
        try:
            validate({key: value})
            run_ok = True
        except InvalidParameter:
            run_ok = False
        if (owner, key) in CROSS_FIELD:
            assert CROSS_FIELD[owner, key] in prop["description"], f"{owner}.{key}: {prop['description']!r}"
        if schema_ok and not run_ok and (owner, key) not in CROSS_FIELD:
            pytest.fail(f"{owner}.{key}={value!r}: trexlab schema allows it, a run refuses it")
        if run_ok and not schema_ok:
            pytest.fail(f"{owner}.{key}={value!r}: a run takes it, trexlab schema refuses it")


@pytest.mark.parametrize("name", list(registry()))
def test_help_lists_each_parameter_with_its_unit_range_and_default(name):
    parser = cli.build_parser()
    sub = parser._subparsers._group_actions[0].choices[name]  # noqa: SLF001
    helps = {action.dest: action.help or "" for action in sub._actions}  # noqa: SLF001
    hints = typing.get_type_hints(registry()[name].Params)
    for field in dataclasses.fields(registry()[name].Params):
        text = helps.get(f"param_{field.name}")
        if text is None:  # structures (MLRsearch goals, start bounds) come from --config only
            assert typing.get_origin(hints[field.name]) is not None or hints[field.name] is tuple, field.name
            continue
        assert field.metadata["doc"].replace("%", "%%") in text, f"--{field.name}: {text!r}"
        shown = field.default
        if isinstance(shown, tuple):
            shown = ",".join(map(str, shown))
        assert text.endswith(f"(default {'none' if shown is None else shown})"), f"--{field.name}: {text!r}"
        bounds = field.metadata.get("schema", {})
        for bound in ("minimum", "maximum", "exclusiveMinimum"):
            if bound in bounds:
                assert f"{bounds[bound]:g}" in text, f"--{field.name}: {text!r} lacks its {bound}"
    for flag in ("frame_size", "ip_version", "directions", "port_mode", "destination_networks", "receive_tail"):
        assert "(default " in helps[flag], f"--{flag}: {helps[flag]!r}"
    for generator in ("sim", "software", "trex"):  # --generator-opt names each generator's options
        for option in dataclasses.fields(generator_options_class(generator)):
            assert re.search(rf"[ :]{option.name}[,;( ]", helps["generator_opt"]), (
                f"--generator-opt lacks {generator}'s {option.name}: {helps['generator_opt']!r}")


def test_the_traffic_defaults_shown_are_those_a_run_uses():
    """The schema and --help show Traffic's defaults; a trial is made by TrialSpec's."""
    made = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0})
    for field in dataclasses.fields(Traffic):
        assert getattr(made, field.name) == field.default, field.name


def test_the_spec_s_generator_options_description_names_each_option():
    text = experiment_schema()["properties"]["generator_options"]["description"]
    for generator in ("software", "trex"):
        for option in dataclasses.fields(generator_options_class(generator)):
            assert option.name in text, f"{generator}'s {option.name} missing from {text!r}"


def test_the_schema_gives_each_default():
    schema = experiment_schema()
    assert schema["properties"]["repetitions"]["default"] == 20
    assert schema["properties"]["traffic"]["properties"]["receive_tail"]["default"] == 2.0
    throughput = _conditions("procedure")["throughput"]["properties"]
    assert throughput["trial_duration"]["default"] == 60.0 and "default" not in throughput["max_rate"]
    sim = _conditions("generator")["sim"]["properties"]
    assert sim["capacity"]["default"] == 1e6 and "frames/s" in sim["capacity"]["description"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert math.isclose(generator_options_class("sim")().capacity, 1e6)


#: The DUT blocks' and the endpoints block's keys whose run-time limit depends on another key of the block, or is
#: one the schema cannot say: a decimal step (JSON Schema's multipleOf is float arithmetic: jsonschema refuses 0.3
#: as a multiple of 0.0001). Their descriptions say it instead.
ROLE_CROSS_FIELD = {("reference", "rate_fps"): "burst_frames", ("reference", "burst_frames"): "of the rate",
                    ("reference", "loss_every_nth"): "1 is refused", ("impairment", "loss_every_nth"): "1 is refused",
                    ("impairment", "selective_every_nth"): "1 is refused", ("impairment", "jitter_ms"): "delay_ms",
                    **{(block, key): "a multiple of 0.0001" for block, key in (
                        ("reference", "loss_percent"), ("impairment", "loss_percent"),
                        ("impairment", "selective_percent"))}}
#: What each block needs besides the probed key.
ROLE_BASE = {"reference": {"rate_fps": 40000}, "impairment": {"delay_ms": 1}}


def _role_cases():
    schema = experiment_schema()
    blocks = {**schema["properties"]["dut"]["properties"], "endpoints": schema["properties"]["endpoints"]}
    for block, block_schema in blocks.items():
        for key, prop in block_schema["properties"].items():
            if prop.get("type") in ("integer", "number") or prop.get("items", {}).get("type") == "integer":
                yield block, key, prop


@pytest.mark.parametrize("block,key,prop", list(_role_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_the_schema_refuses_what_a_dut_block_check_refuses(block, key, prop):
    """The DUT blocks' (and endpoints') numbers: the schema's ranges against the checks a spec meets before any
    host is touched (trexlab.spec.experiment: the role's types, then the planning modules' ranges)."""
    from trexlab.spec.experiment import InvalidExperiment, SweepPoint, _check_dut, _check_endpoints, whole_numbers

    integer = "integer" in (prop.get("type"), prop.get("items", {}).get("type"))
    bounds = prop.get("items", prop)
    values = [[v] for v in _probes(bounds, integer)] if prop.get("type") == "array" else _probes(bounds, integer)
    validator = jsonschema.Draft202012Validator({"type": "object", "properties": {key: prop}})
    for value in values:
        settings = {**ROLE_BASE.get(block, {}), key: value}
        # As validate() does: integral floats read as integers (whole_numbers), then the checks.
        spec = whole_numbers({"name": "x", "procedure": {"name": "http_download"},
                              **({"endpoints": settings} if block == "endpoints" else {"dut": {block: settings}})})
        try:
            if block == "endpoints":
                _check_endpoints(spec, "spec")
            else:
                _check_dut(SweepPoint(0, {}, spec), "spec")
            run_ok = True
        except InvalidExperiment:
            run_ok = False
        schema_ok = validator.is_valid({key: value})
        if (block, key) in ROLE_CROSS_FIELD:
            assert ROLE_CROSS_FIELD[block, key] in prop.get("description", ""), f"{block}.{key}: {prop}"
            if schema_ok and not run_ok:
                continue
        assert schema_ok == run_ok, f"{block}.{key}={value!r}: schema {schema_ok}, the spec's checks {run_ok}"


#: The spec's own integer keys (not a procedure's, generator's or role's), each with values on both sides of it.
SPEC_INTEGERS = {"traffic.destination_networks": (1, 1.0, 256.0, 257.0, 2.5),
                 "traffic.frame_size": (64, 64.0, [84.0, 64], [64.5, 64], 9019.0),
                 "traffic.ip_version": (4.0, [4.0, 4], 5.0, 6.5),  # 6 asks for 84-byte frames
                 "repetitions": (20, 20.0, 20.5, 1001.0, {"min": 3.0, "max": 5.0, "until": {"median_ci_percent": 5}},
                                 {"min": 3.5, "max": 5, "until": {"median_ci_percent": 5}})}


@pytest.mark.parametrize("path", list(SPEC_INTEGERS))
def test_the_schema_and_a_run_take_the_same_integers_of_the_spec_itself(path):
    """1000.0 is an integer to JSON Schema: a spec's checks take it as 1000 and refuse 1000.5, as the schema does
    (where the schema leaves a value to the checks, as the adaptive rule's counts, the checks still take 3.0)."""
    from trexlab.spec.experiment import InvalidExperiment, validate

    validator = jsonschema.Draft202012Validator(experiment_schema())
    for value in SPEC_INTEGERS[path]:
        spec = {"name": "x", "procedure": {"name": "throughput"}, "generator": "sim"}
        *parents, leaf = path.split(".")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
        try:
            validate(spec)
            run_ok = True
        except InvalidExperiment:
            run_ok = False
        whole = all(float(v).is_integer() for v in (value if isinstance(value, list) else
                                                    [value["min"]] if isinstance(value, dict) else [value]))
        assert run_ok == validator.is_valid(spec) or (isinstance(value, dict) and run_ok == whole), (
            f"{path}={value!r}: schema {validator.is_valid(spec)}, the spec's checks {run_ok}")


def test_an_integral_float_reaches_roles_and_points_as_the_integer():
    """A role writes what it is given into tc and nft lines: 1000.0 must reach it as 1000, swept or not."""
    from trexlab.spec.experiment import dut_role_vars, validate

    experiment = validate({"name": "x", "procedure": {"name": "throughput"}, "repetitions": 3.0,
                           "dut": {"impairment": {"limit": 1000.0, "delay_ms": 1.0}},
                           "sweep": {"traffic.destination_networks": [2.0], "dut.impairment.loss_every_nth": [10.0]}})
    assert experiment.repetitions == 3 and type(experiment.repetitions) is int
    point = experiment.points()[0].spec
    assert type(point["traffic"]["destination_networks"]) is int and point["traffic"]["destination_networks"] == 2
    role = dut_role_vars("impairment", point["dut"]["impairment"])
    assert role == {"netem_limit": 1000, "netem_delay_ms": 1.0, "netem_loss_every_nth": 10}
    assert type(role["netem_limit"]) is int and type(role["netem_loss_every_nth"]) is int


def test_each_dut_and_endpoints_default_is_shown_from_its_role():
    """A DUT block's (and the endpoints block's) default is its role's (meta/argument_specs.yml, which
    test_collection keeps equal to defaults/main.yml): trexlab schema shows it as procedure parameters' are, and the
    planning modules that check and disclose a block's settings (impairment.Impairment, reference_dut.ReferenceDut)
    have no defaults of their own to differ from it: what a block leaves out is filled from the role
    (experiment.with_role_defaults)."""
    from trexlab import impairment, reference_dut
    from trexlab.spec.experiment import DUT_CONFIG, ENDPOINTS_CONFIG, role_options

    schema = experiment_schema()
    blocks = {**{b: (r, schema["properties"]["dut"]["properties"][b]) for b, (_, r) in DUT_CONFIG.items()},
              "endpoints": (ENDPOINTS_CONFIG[1], schema["properties"]["endpoints"])}
    shown = 0
    for block, (role, block_schema) in blocks.items():
        for name, option in role_options(role).items():
            key = name.removeprefix(f"{role}_")
            if key not in block_schema["properties"]:
                continue
            prop = block_schema["properties"][key]
            default = option.get("default")
            if default is None or "{{" in str(default) or not jsonschema.Draft202012Validator(prop).is_valid(default):
                # none, a template (siit networks follow traffic.destination_networks), or a placeholder the role
                # refuses (dut_reference's rate_fps 0: required): no default to show
                assert "default" not in prop, f"{block}.{key}: {prop['default']!r} shown, the role has none"
                continue
            assert prop.get("default") == default, f"{block}.{key}: schema {prop.get('default')!r}, role {default!r}"
            shown += 1
    assert shown >= 15
    for cls in (impairment.Impairment, reference_dut.ReferenceDut):
        own = [f.name for f in dataclasses.fields(cls)
               if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
        assert not own, f"{cls.__name__} has defaults of its own for {own}: a second source beside its role's"
