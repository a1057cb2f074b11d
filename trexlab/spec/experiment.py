"""Experiments as code: a declared, validated sweep of benchmark runs.

An experiment spec (YAML in ``experiments/``) names the lab it needs, how the
DUT is configured, the traffic, the procedure with its parameters, a sweep
matrix and the number of repetitions.  Sweep keys are dotted paths into the
spec itself (``dut.impairment.loss_percent``, ``procedure.params.loss_tolerance``,
``traffic.destination_networks``), so anything that can be declared can be
swept, and nothing is swept that was not declared.

The whole spec is checked before any host is touched: every error is one line
naming the key and what is allowed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from trexlab import impairment, reference_dut, rolevalues
from trexlab.params import InvalidParameter
from trexlab.paths import paths
from trexlab.plan.rate_from import GIVES_RATE, split_rate_from
from trexlab.spec import safeyaml
from trexlab.spec.schema import (
    DEFAULT_ORDER,
    NOT_FROM_SPECS,
    SWEEP_POINTS_MAX,
    experiment_schema,
    role_defaults,
    spec_option,
)

LAB_KINDS = ("local", "vm", "static", "maas")
TOPOLOGIES = ("single", "dual", "loopback")
#: DUT configuration blocks of a spec: the playbook applying each and the role whose variables its keys
#: name (dut.impairment.loss_percent -> netem_loss_percent). Routing follows traffic.destination_networks.
#: Applied in this order (a reference DUT's capacity before impairments), restored in the reverse.
DUT_CONFIG = {"reference": ("playbooks/dut-reference.yml", "dut_reference"),
              "impairment": ("playbooks/dut-impairment.yml", "netem"),
              "siit": ("playbooks/dut-siit.yml", "siit_tayga"),
              "siit_jool": ("playbooks/dut-siit-jool.yml", "siit_jool")}
DUT_BLOCKS = tuple(DUT_CONFIG)
#: The lab's TCP endpoints (client, server nodes): applied once around a campaign whose procedure runs on them
#: (its needs_tcp_endpoints), with the spec's endpoints block as role variables (endpoints.http_file_mib ->
#: tcp_endpoints_http_file_mib).
ENDPOINTS_CONFIG = ("playbooks/tcp-endpoints.yml", "tcp_endpoints")



@functools.cache
def schema() -> dict:
    """The schema specs are validated with first, generated from their types (trexlab.spec.schema); ``trexlab schema``
    prints the detailed one editors use."""
    return experiment_schema(detailed=False)


@functools.cache
def _detailed_schema() -> dict:
    return experiment_schema()


def whole_numbers(spec: dict) -> dict:
    """The spec with each integral float (1000.0) at a key the schema types integer made that integer (1000).

    JSON Schema takes 1000.0 for an integer, and so do trexlab schema and every editor checking a spec with it;
    the checks here and everything after them (role variables, the campaign's routing) read it as the integer it
    is, so that the schema and a run take the same specs and 1000.0 never reaches a role as '1000.0'."""
    return _integers(spec, _detailed_schema())


def _branches(schema: Mapping, value: object):
    """schema and the subschemas that apply to value with it: its anyOf options, allOf's then where the if holds."""
    yield schema
    for option in schema.get("anyOf", ()):
        yield from _branches(option, value)
    for condition in schema.get("allOf", ()):
        if "if" not in condition or jsonschema.Draft202012Validator(condition["if"]).is_valid(value):
            yield from _branches(condition.get("then", condition), value)


def _integers(value: Any, schema: Mapping) -> Any:
    branches = list(_branches(schema, value))
    if isinstance(value, float) and value.is_integer() and any(b.get("type") == "integer" for b in branches):
        return int(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            for branch in branches:
                sub = branch.get("properties", {}).get(key, branch.get("additionalProperties"))
                if isinstance(sub, Mapping):
                    item = _integers(item, sub)
            out[key] = item
        return out
    if isinstance(value, list):
        out_list = []
        for index, item in enumerate(value):
            for branch in branches:
                prefix = branch.get("prefixItems", [])
                sub = prefix[index] if index < len(prefix) else branch.get("items")
                if isinstance(sub, Mapping):
                    item = _integers(item, sub)
            out_list.append(item)
        return out_list
    return value


class InvalidExperiment(ValueError):
    """A spec error; str() is one line naming the file, the key and what is allowed."""


#: A sweep point's directory name, as SweepPoint.point_id makes it: one directory of its campaign (a stored campaign's
#: campaign.json, which may be someone else's, is read only where its points are named so: trexlab.plan.rate_from).
POINT_ID_PATTERN = r"^(point-0|[A-Za-z0-9=._-]{1,80}-[0-9a-f]{6})\Z"
POINT_ID_FORM = "point-0, or 1-80 characters A-Z a-z 0-9 = . _ - then - and 6 hex digits"


@dataclass(frozen=True)
class SweepPoint:
    """One combination of sweep values, with the spec it produces."""

    index: int
    values: dict  # dotted path -> value
    spec: dict  # the experiment spec with these values filled in

    @property
    def point_id(self) -> str:
        """A stable directory name: readable values plus a short hash of all of them."""
        if not self.values:
            return "point-0"
        parts = [f"{path.rsplit('.', 1)[-1]}={_short(v)}" for path, v in self.values.items()]
        digest = hashlib.sha1(json.dumps(self.values, sort_keys=True).encode()).hexdigest()[:6]
        readable = re.sub(r"[^A-Za-z0-9=._-]+", "_", ",".join(parts))[:80]
        return f"{readable}-{digest}"


def _has_float(value: object) -> bool:
    return isinstance(value, float) or (isinstance(value, list | tuple) and any(map(_has_float, value)))


def _short(value: object) -> str:
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Experiment:
    spec: dict
    path: Path | None

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def repetitions(self) -> int:
        """The most repetitions a point runs (adaptive repetitions may stop earlier: repetition_rule)."""
        return self.repetition_rule.maximum

    @property
    def repetition_rule(self):
        """A count, or adaptive repetitions (trexlab.plan.adaptive.RepetitionRule)."""
        from trexlab.plan.adaptive import repetition_rule

        return repetition_rule(self.spec)

    @property
    def order(self) -> str:
        """The order the points' repetitions run in: sequential or interleaved (trexlab.plan.campaign)."""
        return self.spec.get("order", DEFAULT_ORDER)

    @property
    def repetitions_per_round(self) -> int:
        """The repetitions an interleaved campaign runs of a point per round (1 in a sequential one's terms)."""
        return self.spec.get("repetitions_per_round", 1)

    @property
    def lab_kind(self) -> str | None:
        """The kind of lab the experiment was made and checked on (lab.kind), or None when it declares none.
        A campaign on another kind runs, with a warning (lab_kind_warning in trexlab.plan.campaign): the kernel
        features it needs are checked on the DUTs themselves (lab.requires)."""
        return (self.spec.get("lab") or {}).get("kind")

    @property
    def topology(self) -> str:
        return self.spec.get("lab", {}).get("topology", "single")

    @property
    def generator(self) -> str:
        return self.spec.get("generator", "software")

    def points(self) -> list[SweepPoint]:
        sweep = self.spec.get("sweep") or {}
        source = str(self.path) if self.path else "<spec>"
        check_sweep_size(sweep, source)
        paths = list(sweep)
        points = []
        for index, combo in enumerate(itertools.product(*(sweep[p] for p in paths))):
            values = dict(zip(paths, combo, strict=True))
            spec = copy.deepcopy(self.spec)
            spec.pop("sweep", None)
            for path, value in values.items():
                _set_path(spec, path, value, f"{source}: sweep.{path}")
            if any(_has_float(value) for value in values.values()):  # a swept 2.0 for an integer key: 2
                spec = whole_numbers(spec)
            points.append(SweepPoint(index, values, spec))
        return points

    def scaled(self, scale: str | None) -> Experiment:
        """The spec with a named scale's overrides (e.g. short CI trials) merged in."""
        if not scale:
            return self
        overrides = (self.spec.get("scale") or {}).get(scale)
        if overrides is None:
            declared = ", ".join(self.spec.get("scale") or {}) or "none"
            raise InvalidExperiment(f"{self.path}: scale.{scale}: not declared in this experiment (declared: "
                                    f"{declared})")
        if not isinstance(overrides, dict):
            raise InvalidExperiment(f"{self.path}: scale.{scale}: a mapping of overrides")
        spec = copy.deepcopy(self.spec)
        for path, value in _flatten(overrides).items():
            _set_path(spec, path, value, f"{self.path or '<spec>'}: scale.{scale}.{path}")
        # The merged spec is checked as a whole again: an override may set anything the spec may, no more
        # (a name that leaves the results root, zero repetitions, a hostile DUT block).
        source = f"{self.path or '<spec>'} (scale {scale})"
        return validate(spec, source, path=self.path, scales=False)  # its scale block is this one


def _flatten(tree: dict, prefix: str = "") -> dict:
    """{'procedure': {'params': {'a': 1}}} -> {'procedure.params.a': 1}; lists and sweeps stay whole."""
    flat = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and key != "sweep" and value:
            flat.update(_flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def _set_path(spec: dict, path: str, value: object, label: str) -> None:
    """Set the spec's value at a dotted path (label: the sweep or scale key, in an error)."""
    node = spec
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise InvalidExperiment(f"{label}: {key} is not a mapping; allowed a dotted path of mappings to the "
                                    "key set")
    node[leaf] = value


def check_sweep_size(sweep: dict, source: str) -> int:
    """The number of sweep points, refused above SWEEP_POINTS_MAX before anything is expanded."""
    total = 1
    for values in sweep.values():
        total *= len(values) if isinstance(values, list) else 1
    if total > SWEEP_POINTS_MAX:
        sizes = " x ".join(str(len(v)) for v in sweep.values() if isinstance(v, list))
        raise InvalidExperiment(f"{source}: sweep: {total} points ({sizes}); allowed at most {SWEEP_POINTS_MAX}")
    return total


_SWEEP_ROOTS = ("dut", "traffic", "procedure", "generator_options")


def validate(spec: object, source: str = "<spec>", path: Path | None = None, scales: bool = True) -> Experiment:
    """Check a parsed spec completely, each scale it declares merged in too (scales: the declared scales; off for
    a spec that is one of them merged); raise InvalidExperiment with one line on the first error."""
    if not isinstance(spec, dict):
        raise InvalidExperiment(f"{source}: the spec must be a mapping, got {type(spec).__name__}")
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(spec),
                    key=lambda e: list(e.absolute_path))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise InvalidExperiment(f"{source}: {where}: {_message(error)}")
    spec = whole_numbers(spec)
    for swept in spec.get("sweep") or {}:
        root = swept.split(".", 1)[0]
        if root not in _SWEEP_ROOTS:
            raise InvalidExperiment(
                f"{source}: sweep.{swept}: allowed roots {', '.join(_SWEEP_ROOTS)}")
        if root == "procedure" and not swept.startswith("procedure.params."):
            raise InvalidExperiment(f"{source}: sweep.{swept}: only procedure.params.* can be swept")
    if isinstance(spec.get("sweep"), dict):
        check_sweep_size(spec["sweep"], source)
        for swept, values in spec["sweep"].items():
            # A point is its values, and its directory is named by them: a value twice (or 2 and 2.0) was two points
            # of one directory, or the same point measured twice under two names.
            for index, value in enumerate(values):
                if value in values[:index]:
                    raise InvalidExperiment(f"{source}: sweep.{swept}: {value!r} twice; allowed each value once")
    if spec.get("repetitions_per_round", 1) != 1 and spec.get("order", DEFAULT_ORDER) != "interleaved":
        raise InvalidExperiment(f"{source}: repetitions_per_round: {spec['repetitions_per_round']}: allowed 1 with "
                                f"order {spec.get('order', DEFAULT_ORDER)} (rounds are an interleaved campaign's)")
    experiment = Experiment(spec, path if path is not None else Path(source) if source != "<spec>" else None)
    try:
        figures = experiment.repetition_rule.figures  # raises on a bad adaptive rule
    except InvalidParameter as exc:
        raise InvalidExperiment(f"{source}: {exc}") from None
    _check_endpoints(spec, source)
    for point in experiment.points():
        _check_dut(point, source)
        _check_point(point, source, figures)
        _check_rate_campaign(spec, point, source)
    # A shared spec's CI scale is part of it: a dry run, or a campaign at full scale, that passed the spec while
    # `--scale ci` would be refused (zero repetitions, a trial_duration of -1 in its overrides) checked half of it.
    for name, overrides in (spec.get("scale") or {}).items() if scales else ():
        if overrides is not None:
            experiment.scaled(name)
    return experiment


def _check_endpoints(spec: dict, source: str) -> None:
    """An endpoints block: options of roles/tcp_endpoints, for a procedure that runs on the endpoints."""
    if "endpoints" not in spec:
        return
    if not procedure_needs_endpoints(spec["procedure"]["name"], spec["procedure"].get("params")):
        raise InvalidExperiment(f"{source}: endpoints: procedure {spec['procedure']['name']} does not run on the "
                                "lab's TCP endpoints (tcp with engine iperf3 and http_download do)")
    _check_role_settings(source, "endpoints", ENDPOINTS_CONFIG[1], spec["endpoints"])
    try:
        rolevalues.check_endpoints_block(spec["endpoints"])
    except InvalidParameter as exc:
        raise InvalidExperiment(f"{source}: endpoints.{exc}") from None


def procedure_needs_endpoints(name: str, params: dict | None = None) -> bool:
    """Whether a procedure, with these params, runs on the lab's client and server nodes (roles/tcp_endpoints):
    its needs_tcp_endpoints (RFC 6349's iperf3 engine does, its trex engine does not)."""
    from trexlab.procedures import registry

    return name in registry() and registry()[name].needs_tcp_endpoints(params or {})


def _message(error: jsonschema.ValidationError) -> str:
    # iter_errors sets these on every error it yields (the stubs also allow the "unset" of a hand-made one).
    instance: Any = error.instance
    expected: Any = error.validator_value
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {})
        extra = sorted(set(instance) - set(allowed))
        return f"unknown key {', '.join(extra)}; allowed {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{instance!r} is not allowed; allowed {', '.join(map(str, expected))}"
    if error.validator == "pattern" and isinstance(instance, str):
        return f"{instance!r} does not match {expected}"
    if error.validator == "anyOf" and all("type" in option for option in expected):
        # e.g. repetitions: a count or an adaptive rule; say which types, not "not valid under any schema".
        kinds = " or ".join(repr(option["type"]) for option in expected)
        return f"{instance!r} is not of type {kinds}"
    return error.message


def role_options(role: str) -> dict:
    """The options a role declares in its meta/argument_specs.yml (name -> spec)."""
    specs = yaml.safe_load((paths().roles / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"]


def with_role_defaults(block: str, settings: dict) -> dict:
    """A spec's dut.<block> settings with what they leave out as the block's role takes it (schema.role_defaults,
    from the role's meta/argument_specs.yml). trexlab.impairment and trexlab.reference_dut have no defaults of their
    own: they are also the collection's plugin_utils, where the role hands them every variable and they cannot read
    the role's files; here, before a role runs (checks, disclosure, the campaign's plan), this fills them."""
    return {**copy.deepcopy(role_defaults(DUT_CONFIG[block][1])), **settings}


def reference_declared(spec: dict) -> tuple[reference_dut.ReferenceDut, float] | None:
    """(the reference DUT, its loss-free rate for the spec's trial duration) of an experiment spec, or None. The
    trial duration is the spec's, else its procedure's default (latency's is not throughput's)."""
    from trexlab.procedures import procedure

    settings = (spec.get("dut") or {}).get("reference")
    if settings is None:
        return None
    dut = reference_dut.from_settings(with_role_defaults("reference", settings))
    name = spec["procedure"]["name"]
    duration = (spec["procedure"].get("params") or {}).get("trial_duration")
    if duration is None:
        duration = {f.name: f.default for f in dataclasses.fields(procedure(name).Params)}.get("trial_duration")
    if not isinstance(duration, int | float):
        raise InvalidExperiment(f"procedure {name}: no trial_duration, which a reference DUT's loss-free rate needs")
    return dut, dut.loss_free_rate(float(duration))


def dut_role_vars(block: str, settings: dict) -> dict:
    """A spec's dut.<block> settings as the variables of the role that applies them."""
    return role_vars(DUT_CONFIG[block][1], settings)


def role_vars(role: str, settings: dict) -> dict:
    """A block's settings as the variables of its role (loss_percent -> netem_loss_percent)."""
    return {f"{role}_{key}": value for key, value in settings.items()}


def _check_dut(point: SweepPoint, source: str) -> None:
    """A point's DUT blocks configure a DUT it has (a swept dut.* key too: the campaign configures none without one, and
    the point's figures, named by the block, were the bare path's); each dut.<block> key must be an option of its role,
    of the declared type and choices."""
    where = f"{source}: point {point.index} ({point.point_id})" if point.values else source
    if point.spec.get("dut") and point.spec.get("generator") == "sim":
        raise InvalidExperiment(f"{where}: dut: configures a lab's DUT; with generator sim declare the simulated SUT "
                                "in generator_options")
    if point.spec.get("dut") and (point.spec.get("lab") or {}).get("topology") == "loopback":
        raise InvalidExperiment(f"{where}: dut: configures a lab's DUT; topology loopback has none (the tester's ports "
                                "are looped back): allowed no dut block")
    for block, settings in (point.spec.get("dut") or {}).items():
        _check_role_settings(where, f"dut.{block}", DUT_CONFIG[block][1], settings)
        try:  # the strings that reach the DUT: names, paths, addresses (the lab's own rules: trexlab.plan.runplan)
            rolevalues.check_dut_block(block, settings)
        except InvalidParameter as exc:
            raise InvalidExperiment(f"{where}: dut.{block}.{exc}") from None
    reference = (point.spec.get("dut") or {}).get("reference")
    if reference is not None:  # its values' ranges, as the role would refuse them (before any host is touched)
        try:
            reference_dut.from_settings(with_role_defaults("reference", reference))
        except InvalidParameter as exc:
            raise InvalidExperiment(f"{where}: dut.reference.{exc}") from None
    impaired = (point.spec.get("dut") or {}).get("impairment")
    if impaired is not None:  # the same for roles/netem's values (trexlab.impairment.Impairment)
        try:
            impairment.disclosure(with_role_defaults("impairment", impaired))
        except InvalidParameter as exc:
            raise InvalidExperiment(f"{where}: dut.impairment.{exc}") from None


def _check_role_settings(where: str, label: str, role: str, settings: dict) -> None:
    """Each key of a block (dut.<block>, endpoints) must be an option of its role, of its type and choices."""
    kinds: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, float), "str": str, "bool": bool,
                                                 "list": list, "dict": dict}
    options = role_options(role)
    for key, value in settings.items():
        name = f"{role}_{key}"
        if name in NOT_FROM_SPECS:
            raise InvalidExperiment(f"{where}: {label}.{key}: not settable from a spec: {NOT_FROM_SPECS[name]}")
        if name not in options or not spec_option(role, name):
            allowed = sorted(o.removeprefix(f"{role}_") for o in options if spec_option(role, o))
            raise InvalidExperiment(f"{where}: {label}.{key}: unknown; allowed {', '.join(allowed)}")
        option = options[name]
        kind = kinds.get(option.get("type", "str"))
        if kind and (not isinstance(value, kind) or (isinstance(value, bool) and option.get("type") != "bool")):
            raise InvalidExperiment(f"{where}: {label}.{key}: {value!r} is not of type {option['type']}")
        choices = option.get("choices")
        values = value if isinstance(value, list) else [value]
        if choices and any(v not in choices for v in values):
            raise InvalidExperiment(f"{where}: {label}.{key}: {value!r} is not allowed; allowed "
                                    f"{', '.join(map(str, choices))}")


def _check_point(point: SweepPoint, source: str, figures: tuple[str, ...] = ()) -> None:
    """Build the traffic template and procedure parameters of a point: their own checks apply; and the figures an
    adaptive rule names (until.figures) must be ones the point's procedure reports: another would never narrow, and
    the point would run its maximum repetitions."""
    from trexlab.plan.runplan import check_generator_options, procedure_params, traffic_template
    from trexlab.procedures import names, procedure, taking_rate

    spec = point.spec
    where = f"{source}: point {point.index} ({point.point_id})" if point.values else source
    name = spec["procedure"]["name"]
    if name not in names():
        raise InvalidExperiment(f"{source}: procedure.name: {name!r} is not allowed; "
                                f"allowed {', '.join(names())}")
    try:
        traffic = traffic_template(spec.get("traffic"))
        check_generator_options(spec.get("generator", "software"), spec.get("generator_options"))
    except InvalidParameter as exc:
        raise InvalidExperiment(f"{where}: {exc}") from None
    params = spec["procedure"].get("params") or {}
    try:
        params, rate_from = split_rate_from(params)
        if rate_from is not None:  # the rate comes from the point's throughput repetitions: check their params
            if not procedure(name).TAKES_RATE:
                raise InvalidParameter("procedure.params.rate", {"from": GIVES_RATE}, f"a number (only "
                                       f"{', '.join(taking_rate())} take a rate from {GIVES_RATE})")
            if rate_from["params"] is not None:  # None: a stored campaign's, whatever they were
                procedure_params(GIVES_RATE, rate_from["params"], "procedure.params.rate.params.")
            params = {**params, "rate": 1.0}  # stands for the measured (or stored) rate in this check only
        built = procedure_params(name, params, "procedure.params.")
    except InvalidParameter as exc:
        if exc.name == "rate" or exc.name.startswith("rate."):  # split_rate_from's own names
            raise InvalidExperiment(f"{where}: procedure.params.{exc}") from None
        raise InvalidExperiment(f"{where}: {exc}") from None
    reported = procedure(name).headline_names(built, traffic)
    for figure in figures:
        if figure not in reported:
            refused = InvalidParameter("repetitions.until.figures", figure, ", ".join(reported))
            raise InvalidExperiment(f"{where}: {refused}")


def _check_rate_campaign(spec: dict, point: SweepPoint, source: str) -> None:
    """A stored throughput campaign gives every point's rate (rate.campaign, and the search params beside it: one
    campaign, trexlab.plan.rate_from.stored_rates): a point that names another, swept, measured at the spec's."""
    ours = split_rate_from(spec["procedure"].get("params") or {})[1] or {}
    theirs = split_rate_from(point.spec["procedure"].get("params") or {})[1] or {}
    if ("campaign" in ours or "campaign" in theirs) and ours != theirs:
        swept = next((key for key in point.values if key.startswith("procedure.params.rate")), "procedure.params.rate")
        raise InvalidExperiment(f"{source}: sweep.{swept}: one stored campaign gives every point's rate; allowed "
                                "procedure.params.rate with its campaign unswept")


def procedure_params_class(name: str):
    """A procedure's Params class (trexlab.plan.runplan.procedure_params builds one from a mapping, checked)."""
    from trexlab.procedures import procedure

    return procedure(name).Params


def load(path: str | Path) -> Experiment:
    """Load and validate an experiment spec file (or experiments/<name>/experiment.yml).

    A name, or experiments/<name>, that is not a path from here is one of trexlab's own experiments (an
    installed trexlab carries them, see trexlab.paths)."""
    path = Path(path)
    own = paths().experiments / path.name
    if not path.exists() and len(path.parts) <= 2 and path.parts[:-1] in ((), ("experiments",)) and own.exists():
        path = own
    if path.is_dir():
        path = path / "experiment.yml"
    if not path.is_file():
        raise InvalidExperiment(f"{path}: no such experiment spec")
    try:
        spec = safeyaml.load(path)
    except safeyaml.YamlInputError as exc:
        raise InvalidExperiment(str(exc)) from None
    return validate(spec, str(path))
