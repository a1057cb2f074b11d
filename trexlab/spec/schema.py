"""The experiment spec as types: frozen dataclasses whose fields carry their documentation and units.

The JSON Schema editors use (``trexlab schema``) and the one trexlab validates specs with
(trexlab.spec.experiment) are generated from these types, so a key is declared once. Values a type alone cannot
bound are checked where they are used: procedure parameters by each procedure's ``Params``, DUT blocks by
their role's ``meta/argument_specs.yml`` and the run plan (trexlab.plan.runplan), traffic by ``TrialSpec``.

``check_fields`` is the one type check of a mapping against a dataclass (spec traffic, procedure params,
generator options, CLI values): each error is one line naming the key.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Final, Literal

from trexlab import impairment, reference_dut, rolevalues
from trexlab.addressing import MAX_NETWORKS
from trexlab.params import LIST_ITEMS_MAX, MAX_PORT, InvalidParameter, check_range
from trexlab.trial import (
    MAX_FRAME_SIZE,
    MAX_RECEIVE_TAIL,
    MAX_RESTABILIZE_WAIT,
    MIN_FRAME_SIZE,
    MIN_FRAME_SIZE_BY_VERSION,
    MIN_SIIT_IPV6_FRAME_SIZE,
    RFC2544_RECEIVE_TAIL,
    RFC2544_RESTABILIZE_WAIT,
)

#: Where a whole-value pattern ends: at the value's end. Python's $ (jsonschema's re.search, and re.match) also
#: matches before a final newline, so "demo\n" passed for a name and a campaign made a directory of it; (?!\n)
#: refuses that, and changes nothing in JSON Schema's own (ECMA-262) patterns, whose $ is the end already.
END = r"(?!\n)$"
#: An experiment's name: its results directory, so nothing that could leave the results root.
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}" + END
#: A spec's report notebook: one of the tree's own analysis notebooks (the report executes it).
NOTEBOOK_PATTERN = r"^analysis/[A-Za-z0-9_.-]+\.ipynb" + END
#: A host name or address given as an option (it reaches a connection, never a shell or ssh option).
HOST_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}" + END
#: The sweep keys: dotted paths into the spec.
SWEEP_KEY_PATTERN = r"^[a-z_][a-z0-9_]*(\.[a-z0-9_]+)+" + END
#: Repetitions of each point when a spec gives none: siitperf's authors repeat 20 times.
DEFAULT_REPETITIONS = 20
REPETITIONS_MAX = 1000
#: The order of the points' repetitions when a spec gives none (ExperimentSpec.order says why it is an option).
DEFAULT_ORDER: Final = "sequential"
#: The confidence of the median's interval in adaptive repetitions' stop rule (trexlab.plan.adaptive): part of what a
#: spec's until: {median_ci_percent} means, so it is the spec's, and its own choice, not the comparison's
#: (results.stats.SHIFT_CONFIDENCE, a verdict's level chosen when campaigns are compared): changing that must not
#: change when the campaigns of existing specs stop.
MEDIAN_CI_CONFIDENCE = 0.95
#: Sweep points one experiment may expand to: the product of the sweep's lengths is refused above it before
#: anything is expanded (a campaign of more points would not finish in any lab's lifetime).
SWEEP_POINTS_MAX = 1000


def doc(text: str, **schema) -> dict:
    """A field's documentation (with its unit) and extra JSON Schema keywords (minimum, pattern ...)."""
    return {"doc": text, "schema": schema}


@dataclass(frozen=True)
class LabRequirement:
    """What the experiment needs of the lab it runs on."""

    kind: Literal["local", "vm", "static", "maas"] | None = field(default=None, metadata=doc(
        "the kind of lab the experiment was made and checked on; another kind runs it with a warning"))
    topology: Literal["single", "dual", "loopback"] = field(default="single", metadata=doc(
        "DUTs between the tester ports: single, dual (two DUTs in a row) or loopback (none: tester self-test)"))
    requires: tuple[Literal["sch_netem", "jool"], ...] = field(default=(), metadata=doc(
        "kernel features every DUT must have, probed on the DUTs before any point runs"))


@dataclass(frozen=True)
class Traffic:
    """The test frames of every trial (RFC 2544 / RFC 8219 test frames); the procedure sets load and duration."""

    frame_size: tuple[int, int] | int = field(default=(64, 64), metadata=doc(
        f"bytes per frame with FCS, one value per tester port [port0, port1] (SIIT: e.g. [84, 64]), or one for "
        f"both; {MIN_FRAME_SIZE}..{MAX_FRAME_SIZE} (IPv6: from {MIN_FRAME_SIZE_BY_VERSION[6]}, the IPv6 side of "
        f"SIIT from {MIN_SIIT_IPV6_FRAME_SIZE})",
        minimum=MIN_FRAME_SIZE, maximum=MAX_FRAME_SIZE,
        items={"minimum": MIN_FRAME_SIZE, "maximum": MAX_FRAME_SIZE}))
    ip_version: tuple[int, int] | int = field(default=(4, 4), metadata=doc(
        "IP version sent from each tester port [port0, port1], 4 or 6, or one for both",
        # 4 or 6 and nothing between: an integer of 4..6 that is a multiple of 2 (an enum would not be an integer,
        # and whole_numbers in trexlab.spec.experiment reads 6.0 as 6 only where the schema says integer).
        minimum=4, maximum=6, multipleOf=2, items={"minimum": 4, "maximum": 6, "multipleOf": 2}))
    directions: Literal["bidirectional", "forward", "reverse"] = field(default="bidirectional", metadata=doc(
        "forward: port 0 to port 1; reverse: port 1 to port 0"))
    port_mode: Literal["fixed", "rfc4814"] = field(default="fixed", metadata=doc(
        "UDP ports: fixed, or RFC 4814 pseudorandom source and destination ports"))
    destination_networks: int = field(default=1, metadata=doc(
        f"destination networks per direction, 1..{MAX_NETWORKS} (198.19.x.0/24 forward, 198.18.x.0/24 reverse)",
        minimum=1, maximum=MAX_NETWORKS))
    receive_tail: float = field(default=RFC2544_RECEIVE_TAIL, metadata=doc(
        f"s of receiving after sending stops (RFC 2544: {RFC2544_RECEIVE_TAIL:g} s), at most {MAX_RECEIVE_TAIL:g}",
        minimum=0, maximum=MAX_RECEIVE_TAIL))
    restabilize_wait: float = field(default=0.0, metadata=doc(
        f"s the tester sends nothing after each trial's receive tail, for the DUT to restabilize (RFC 2544 section "
        f"23 e: at least {RFC2544_RESTABILIZE_WAIT:g} s; a shorter wait is disclosed), at most "
        f"{MAX_RESTABILIZE_WAIT:g}", minimum=0, maximum=MAX_RESTABILIZE_WAIT))


@dataclass(frozen=True)
class Procedure:
    """The benchmarking procedure each repetition runs."""

    name: str = field(metadata=doc("the procedure (trexlab --help lists them)"))
    params: dict = field(default_factory=dict, metadata=doc(
        "the procedure's parameters (its Params: trexlab <procedure> --help); latency and pdv take "
        "rate: {from: throughput, params: {...}}"))


@dataclass(frozen=True)
class DutBlocks:
    """DUT configuration applied around each point (through its role; keys are the role's options)."""

    reference: dict | None = field(default=None, metadata=doc(
        "a known-answer DUT: each direction policed to rate_fps (roles/dut_reference)"))
    impairment: dict | None = field(default=None, metadata=doc(
        "loss, delay and selective delay of forwarded frames (roles/netem)"))
    siit: dict | None = field(default=None, metadata=doc("SIIT with TAYGA (roles/siit_tayga)"))
    siit_jool: dict | None = field(default=None, metadata=doc("SIIT with Jool (roles/siit_jool)"))


@dataclass(frozen=True)
class ScaleOverrides:
    """Overrides merged into the spec with --scale NAME (re-validated as a whole spec)."""

    ci: dict | None = field(default=None, metadata=doc("short trials for CI and demonstrations"))
    demo: dict | None = field(default=None, metadata=doc(
        "what make demo runs of an experiment other than the demo's own (tester-selftest: a short look at the tester)"))


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment: the lab it needs, the DUT configuration, the traffic, the procedure, a sweep, repetitions."""

    name: str = field(metadata=doc("the experiment's name and results directory", pattern=NAME_PATTERN))
    procedure: Procedure = field(metadata=doc("the procedure each repetition runs"))
    description: str = field(default="", metadata=doc("what the experiment shows"))
    reproduces: str = field(default="", metadata=doc("the paper, table or figure it reproduces"))
    lab: LabRequirement = field(default_factory=LabRequirement, metadata=doc("what it needs of the lab"))
    generator: Literal["sim", "software", "trex"] = field(default="software", metadata=doc(
        "the traffic generator: sim (simulated SUT, no lab), software (swtester) or trex"))
    generator_options: dict = field(default_factory=dict, metadata=doc(
        "the generator's options (sim: the simulated SUT's capacity, loss and delays; software: cross_check, "
        "send_method, sender_threads; trex: server, sync_port, warmup), each described for its generator below"))
    dut: DutBlocks = field(default_factory=DutBlocks, metadata=doc("DUT configuration"))
    traffic: Traffic = field(default_factory=Traffic, metadata=doc("the test frames"))
    endpoints: dict = field(default_factory=dict, metadata=doc(
        "options of roles/tcp_endpoints, for procedures run on the lab's client and server (tcp, http_download)"))
    notebook: str | None = field(default=None, metadata=doc(
        "the report's notebook (default analysis/<name>.ipynb, else analysis/report.ipynb)",
        pattern=NOTEBOOK_PATTERN))
    sweep: dict[str, list] = field(default_factory=dict, metadata=doc(
        f"dotted path -> values; every combination is a point (at most {SWEEP_POINTS_MAX})",
        propertyNames={"pattern": SWEEP_KEY_PATTERN}))
    repetitions: int | dict = field(default=DEFAULT_REPETITIONS, metadata=doc(
        "repetitions of each point (siitperf's authors repeat 20 times), or adaptive: {min, max, until: "
        f"{{median_ci_percent[, figures]}}}} stops a point once the {MEDIAN_CI_CONFIDENCE * 100:g} % CI of its "
        "median (of each headline figure, or of those in figures) is that narrow (trexlab.plan.adaptive)",
        minimum=1, maximum=REPETITIONS_MAX))
    order: Literal["sequential", "interleaved"] = field(default=DEFAULT_ORDER, metadata=doc(
        "the order the points' repetitions run in: sequential (every repetition of the first point, then of the "
        "second ...), or interleaved (round r runs repetition r of every point, in an order shuffled per round with "
        "a seed recorded in campaign.json and in each repetition's provenance), so that a disturbance of the lab "
        "lasting minutes falls on one repetition of several points, not on all of one point's; it costs a DUT "
        "configuration per point and round instead of per point"))
    repetitions_per_round: int = field(default=1, metadata=doc(
        "with order interleaved: the repetitions each point runs per round (round r runs its repetitions "
        "(r-1)*n+1 .. r*n), fewer DUT configurations for repetitions of seconds, where each configuration costs "
        "more than they do; a disturbance then falls on at most one round's repetitions of a point",
        minimum=1, maximum=REPETITIONS_MAX))
    scale: ScaleOverrides = field(default_factory=ScaleOverrides, metadata=doc("named overrides"))


# -- generator options -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftwareOptions:
    """Options of the software generator (swtester). The program it runs is never an option: it is the
    checkout's build or TREXLAB_SWTESTER, chosen by whoever runs trexlab, not by a shared spec."""

    cross_check: bool = field(default=True, metadata=doc(
        "compare each trial's counts with the DUT's nftables counters"))
    send_method: Literal["auto", "tx_ring", "sendmmsg"] = field(default="auto", metadata=doc(
        "how swtester hands frames to the kernel: auto (a PACKET_TX_RING where the kernel grants one, else "
        "sendmmsg), or one of them; the method used is recorded in provenance"))
    sender_threads: int = field(default=1, metadata=doc(
        "sender threads per direction (each with its own socket, CPU, UDP source port and share of the sequence "
        "numbers): more than one where one sender cannot reach the rate and the tester has CPUs for them",
        minimum=1, maximum=8))

    def __post_init__(self) -> None:
        check_range("sender_threads", self.sender_threads, 1, 8, integer=True)


@dataclass(frozen=True)
class TRexOptions:
    """Options of the TRex generator."""

    server: str | None = field(default=None, metadata=doc(
        "the TRex host name or address (default: the tester's trexlab_trex_server, else through SSH to the tester); "
        "in an experiment only the lab's own (one of those two)",
        pattern=HOST_PATTERN))
    sync_port: int = field(default=4501, metadata=doc("TRex's RPC port", minimum=2, maximum=MAX_PORT))
    warmup: bool = field(default=True, metadata=doc("a short warm-up trial before the first measured one"))

    def __post_init__(self) -> None:
        if self.server is not None and not re.match(HOST_PATTERN, self.server):
            raise InvalidParameter("server", self.server, "a host name or address")
        check_range("sync_port", self.sync_port, 2, MAX_PORT, integer=True)


@functools.cache
def sim_options_class():
    """The sim generator's options: its simulated SUT plus wall_clock_factor (a class made from the SUT's, once:
    each check of a spec's options asks for it)."""
    from trexlab.generators.sim import SimulatedSUT

    return _sim_options(SimulatedSUT)


@typing.no_type_check
def _sim_options(sut):
    return dataclasses.make_dataclass("SimOptions", [
        *((f.name, typing.get_type_hints(sut)[f.name], field(default=f.default, metadata=f.metadata))
          for f in dataclasses.fields(sut)),
        ("wall_clock_factor", float, field(default=0.0, metadata=doc(
            "wall s waited per simulated s of trial (0: none)", minimum=0, maximum=1)))], frozen=True)


def generator_options_class(generator: str):
    makers: dict[str, typing.Callable[[], typing.Any]] = {
        "sim": sim_options_class, "software": lambda: SoftwareOptions, "trex": lambda: TRexOptions}
    return makers[generator]()


# -- checking a mapping against a dataclass -------------------------------------------------------------------


def _union_args(hint) -> tuple | None:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return None


def _describe(hint) -> str:
    if hint is type(None):
        return "null"
    if (args := _union_args(hint)) is not None:
        return " or ".join(_describe(a) for a in args)
    origin = typing.get_origin(hint)
    if origin is Literal:
        return ", ".join(map(str, typing.get_args(hint)))
    if hint is tuple or origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_describe(args[0])}"
        if args:
            return f"a list of {len(args)} ({', '.join(_describe(a) for a in args)})"
        return "a list"
    if hint is dict or origin is dict:
        return "a mapping"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


#: A number in exponent notation as YAML 1.2 writes it and YAML 1.1 does not read (100e6, 1e-3, 2.5E6).
_EXPONENT_TEXT = re.compile(r"([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))[eE]([-+]?)([0-9]+)")


def _allowed(value, hint) -> str:
    """What hint allows, and, for a number in exponent notation given where a number is allowed, why it is text:
    specs are read as YAML 1.1 (PyYAML's, as Ansible's), whose floats want a dot and a signed exponent, so 100e6
    is the string '100e6' (an editor's YAML 1.2 reads a number), and "allowed a number" alone was a riddle."""
    allowed = _describe(hint)
    match = _EXPONENT_TEXT.fullmatch(value) if isinstance(value, str) else None
    if match and {int, float} & set(_union_args(hint) or (hint,)):
        mantissa, sign, exponent = match.groups()
        written = f"{mantissa if '.' in mantissa else mantissa + '.0'}e{sign or '+'}{exponent}"
        return f"{allowed} (YAML 1.1, which reads specs, takes {value} as text: write {written})"
    return allowed


def convert(name: str, value, hint, from_text: bool = False):
    """value as the type hint asks (from_text: a CLI string, parsed), or InvalidParameter naming name."""
    if (args := _union_args(hint)) is not None:
        if value is None and type(None) in args:
            return None
        if from_text and value in ("none", "null") and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return convert(name, value, arg, from_text)
            except InvalidParameter:
                continue
        raise InvalidParameter(name, value, _allowed(value, hint))
    origin = typing.get_origin(hint)
    if origin is Literal:
        if value in typing.get_args(hint):
            return value
        raise InvalidParameter(name, value, _allowed(value, hint))
    if hint is bool:
        if isinstance(value, bool):
            return value
        if from_text and str(value).lower() in (*_TRUE, *_FALSE):
            return str(value).lower() in _TRUE
        raise InvalidParameter(name, value, "true or false")
    if hint in (int, float):
        if from_text and isinstance(value, str):
            try:
                number = float(value)  # 1e6 is a count too
                value = number if hint is float else int(number) if number.is_integer() else value
            except (ValueError, OverflowError):
                raise InvalidParameter(name, value, _allowed(value, hint)) from None
        if hint is int and isinstance(value, float) and value.is_integer():
            # 1000.0 is an integer to JSON Schema, so to trexlab schema and every editor checking a spec with it:
            # taken as the integer, or the schema would pass a spec a run refuses.
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int if hint is int else (int, float)):
            raise InvalidParameter(name, value, _allowed(value, hint))
        # 300000 in a spec and 300000 from a flag are one value: the same provenance whichever way it came.
        return float(value) if hint is float else value
    if hint is str:
        if not isinstance(value, str):
            raise InvalidParameter(name, value, "a string")
        return value
    if hint is tuple or origin is tuple:
        if from_text and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            raise InvalidParameter(name, value, _describe(hint))
        args = typing.get_args(hint)
        variable = not args or (len(args) == 2 and args[1] is Ellipsis)
        if variable and len(value) > LIST_ITEMS_MAX:
            raise InvalidParameter(name, f"<{len(value)} values>", f"at most {LIST_ITEMS_MAX} values")
        if not args:
            return tuple(value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(f"{name}[{i}]", v, args[0], from_text) for i, v in enumerate(value))
        if len(value) != len(args):
            raise InvalidParameter(name, value, _describe(hint))
        return tuple(convert(f"{name}[{i}]", v, a, from_text) for i, (v, a) in enumerate(zip(value, args, strict=True)))
    if hint is dict or origin is dict:
        if not isinstance(value, dict):
            raise InvalidParameter(name, value, "a mapping")
        return value
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise InvalidParameter(name, value, "a mapping")
        return value
    return value


def check_fields(cls, values: object, from_text: bool = False, prefix: str = "") -> dict:
    """values (a mapping) checked and converted by the types of cls's fields: unknown keys and wrong types
    raise InvalidParameter naming the key; ranges are the class's own checks (construct it with the result)."""
    if not isinstance(values, dict):
        raise InvalidParameter(prefix.rstrip(".") or "(the mapping)", values, "a mapping")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    converted = {}
    for key, value in values.items():
        if key not in names:
            raise InvalidParameter(f"{prefix}{key}", value, f"the keys {', '.join(names)}")
        converted[key] = convert(f"{prefix}{key}", value, hints[key], from_text)
    return converted


# -- JSON Schema from the types ---------------------------------------------------------------------------------


def schema_of(hint) -> dict:
    """The JSON Schema of a type hint (dataclasses: objects with their fields documented)."""
    if (args := _union_args(hint)) is not None:
        return {"anyOf": [schema_of(a) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    origin = typing.get_origin(hint)
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if hint is tuple or origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:  # a list of any length: at most LIST_ITEMS_MAX, as convert()
            return {"type": "array", "items": schema_of(args[0]), "maxItems": LIST_ITEMS_MAX}
        if args:
            return {"type": "array", "prefixItems": [schema_of(a) for a in args], "minItems": len(args),
                    "maxItems": len(args)}
        return {"type": "array", "maxItems": LIST_ITEMS_MAX}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_of(typing.get_args(hint)[1])}
    if hint is dict:
        return {"type": "object"}
    if hint is list:
        return {"type": "array", "minItems": 1}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        properties = {}
        for f in dataclasses.fields(hint):
            field_hint = hints[f.name]
            if f.default is None and (args := _union_args(field_hint)) is not None:
                # None stands for "not given": the key is left out, not written as null.
                rest = tuple(a for a in args if a is not type(None))
                field_hint = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
            prop = schema_of(field_hint)
            meta: typing.Mapping[str, typing.Any] = f.metadata or {}
            for key, value in meta.get("schema", {}).items():
                # A list's bounds are its items': merged into the item schema the type gave.
                prop[key] = {**prop[key], **value} if key == "items" and key in prop else value
            if meta.get("doc"):
                prop["description"] = meta["doc"]
            if (default := json_default(f)) is not None:
                prop["default"] = default
            properties[f.name] = prop
        required = [f.name for f in dataclasses.fields(hint)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        out = {"type": "object", "additionalProperties": False, "properties": properties}
        if hint.__doc__ and not hint.__doc__.startswith(hint.__name__ + "("):
            out["description"] = " ".join(hint.__doc__.split())
        if required:
            out["required"] = required
        return out
    raise TypeError(f"no JSON Schema for {hint!r}")


def json_default(f: dataclasses.Field) -> typing.Any:
    """A field's default as JSON (tuples as lists), or None where it has none to show (none, or made by a
    factory)."""
    default = f.default
    if default is dataclasses.MISSING or default is None:
        return None
    if isinstance(default, tuple):
        return [dict(v) if isinstance(v, dict) else v for v in default]
    return default


def range_text(bounds: typing.Mapping[str, typing.Any]) -> str:
    """A field's declared bounds (its JSON Schema keywords) in words: '> 0 and <= 3600'."""
    parts = []
    for key, sign in (("exclusiveMinimum", ">"), ("minimum", ">="), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in bounds:
            parts.append(f"{sign} {bounds[key]:g}")
    return " and ".join(parts)


def field_help(f: dataclasses.Field) -> str:
    """A parameter's help line, from its declaration: what it is with its unit, its range, its default."""
    meta: typing.Mapping[str, typing.Any] = f.metadata or {}
    bounds = meta.get("schema", {})
    limits = range_text(bounds) or range_text(bounds.get("items", {}))
    default = json_default(f)
    shown = ("none" if default is None and f.default_factory is dataclasses.MISSING else
             ",".join(map(str, default)) if isinstance(default, list) else default)
    text = meta.get("doc", "")
    return "; ".join(x for x in (text, limits and f"allowed {limits}") if x) + f" (default {shown})"


def experiment_schema(detailed: bool = True) -> dict:
    """The experiment spec's JSON Schema: the types above, the procedures' Params, the generators' options and
    the DUT roles' options (their meta/argument_specs.yml), each declared once where it is used.

    detailed=False leaves the procedure's params, the generator's options and the role blocks as plain
    mappings: trexlab.spec.experiment validates with that schema first and then checks those by their own types
    (Params, the options classes, the roles' specs), whose one-line errors say more than a schema's would."""
    from trexlab.plan.adaptive import rule_schema
    from trexlab.plan.rate_from import GIVES_RATE
    from trexlab.procedures import registry
    from trexlab.spec.experiment import DUT_CONFIG, ENDPOINTS_CONFIG, role_options

    schema: dict[str, typing.Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                     "title": "trexlab experiment spec",
              **schema_of(ExperimentSpec)}
    props = schema["properties"]
    props["procedure"]["properties"]["name"]["enum"] = list(registry())
    # A wrong type under sweep still reads "not an array" rather than a bare anyOf.
    props["sweep"]["additionalProperties"] = {"type": "array", "minItems": 1}
    if not detailed:
        for block in DUT_CONFIG:
            props["dut"]["properties"][block] = {"type": "object"}
        props["endpoints"] = {"type": "object"}
        for key in ("frame_size", "ip_version"):  # their ranges: TrialSpec's checks, whose errors name the port
            for bound in ("minimum", "maximum", "multipleOf", "items"):
                props["traffic"]["properties"][key].pop(bound, None)
        return schema
    conditions: list[dict] = []
    for name, module in registry().items():
        params = schema_of(module.Params)
        params.pop("required", None)
        if module.TAKES_RATE:  # rate: a number, or {from: throughput, params, campaign} (trexlab.plan.rate_from)
            rate = params["properties"]["rate"]
            params["properties"]["rate"] = {"description": rate.pop("description"), "anyOf": [rate, {
                "type": "object", "additionalProperties": False, "required": ["from"],
                "properties": {"from": {"const": GIVES_RATE}, "params": {
                    "type": "object", "description": f"the {GIVES_RATE} search: run for each point first, in the "
                    "campaign; beside campaign, the search the stored campaign must have run"},
                    "campaign": rate_campaign_schema()}}]}
        conditions.append({"if": {"properties": {"procedure": {"properties": {"name": {"const": name}}}}},
                           "then": {"properties": {"procedure": {"properties": {"params": params}}}}})
    for generator in ("sim", "software", "trex"):
        options = schema_of(generator_options_class(generator))
        conditions.append({"if": {"properties": {"generator": {"const": generator}}},
                           "then": {"properties": {"generator_options": options}}})
    for block, (_playbook, role) in DUT_CONFIG.items():
        props["dut"]["properties"][block] = {**_role_schema(role, role_options(role)),
                                             "description": props["dut"]["properties"][block]["description"]}
    props["endpoints"] = {**_role_schema(ENDPOINTS_CONFIG[1], role_options(ENDPOINTS_CONFIG[1])),
                          "description": props["endpoints"]["description"]}
    # The adaptive rule's keys (validation checks it with trexlab.plan.adaptive's own one-line errors).
    props["repetitions"]["anyOf"] = [alternative if alternative.get("type") != "object" else rule_schema()
                                     for alternative in props["repetitions"]["anyOf"]]
    schema["allOf"] = conditions
    return schema


#: The ranges of a DUT block's or the endpoints block's numbers, which the roles' argument specs cannot say: the
#: checks that enforce them before any host is touched are the planning modules' (reference_dut.ReferenceDut,
#: impairment.Impairment, rolevalues); tests/test_param_declarations.py keeps the two in agreement.
ROLE_BOUNDS: dict[str, dict[str, dict]] = {
    "dut_reference": {"rate_fps": {"minimum": 1, "maximum": reference_dut.MAX_RATE_FPS}, "burst_frames": {"minimum": 1},
                      "loss_percent": {"minimum": 0, "maximum": 100},
                      "loss_every_nth": {"minimum": 0, "maximum": impairment.U32_MAX}},
    "netem": {"loss_percent": {"minimum": 0, "maximum": 100},
              "loss_every_nth": {"minimum": 0, "maximum": impairment.U32_MAX},
              "delay_ms": {"minimum": 0, "maximum": impairment.MAX_DELAY_MS},
              "jitter_ms": {"minimum": 0, "maximum": impairment.MAX_DELAY_MS},
              "selective_every_nth": {"minimum": 0, "maximum": impairment.U32_MAX},
              "selective_percent": {"minimum": 0, "maximum": 100},
              "limit": {"minimum": 1, "maximum": impairment.U32_MAX}},
    "siit_tayga": {"networks": {"minimum": 1, "maximum": MAX_NETWORKS}},
    "siit_jool": {"networks": {"minimum": 1, "maximum": MAX_NETWORKS}},
    "tcp_endpoints": {"http_file_mib": {"minimum": 1, "maximum": rolevalues.HTTP_FILE_MIB_MAX},
                      "http_port": {"minimum": 1, "maximum": MAX_PORT},
                      # One iperf3 server per port on the server node, one per concurrent test: rfc6349 runs at most
                      # as many as its dscp list holds (LIST_ITEMS_MAX); 60,000 ports started 60,000 servers.
                      "iperf3_ports": {"items": {"type": "integer", "minimum": 1, "maximum": MAX_PORT},
                                       "maxItems": LIST_ITEMS_MAX, "uniqueItems": True}},
}

_ROLE_TYPES = {"int": {"type": "integer"}, "float": {"type": "number"}, "str": {"type": "string"},
               "path": {"type": "string"}, "bool": {"type": "boolean"}, "list": {"type": "array"},
               "dict": {"type": "object"}}


def rate_campaign_schema() -> dict:
    """rate.campaign: the stored throughput campaign a latency or PDV point takes its rate from (trexlab.plan.rate_from:
    its checks, whose one-line errors validation gives)."""
    from trexlab.plan.rate_from import CAMPAIGN_KEYS, FIGURE
    from trexlab.plan.runplan import CAMPAIGN_ID_PATTERN

    return {"type": "object", "additionalProperties": False, "minProperties": 1,
            "description": "a stored throughput campaign in the same results root (its experiment, its id, or both) "
                           "whose point of the same lab, generator, traffic and DUT configuration gives each point's "
                           f"rate: the median of its repetitions' {FIGURE}, instead of a search in this campaign",
            "properties": dict(zip(CAMPAIGN_KEYS, (
                {"type": "string", "pattern": NAME_PATTERN, "description": "the stored campaign's experiment name"},
                {"type": "string", "pattern": CAMPAIGN_ID_PATTERN.removesuffix(r"\Z") + END,
                 "description": "the stored campaign's id (its directory below results/<experiment>/)"}), strict=True))}


def _valid(schema: dict, value: typing.Any) -> bool:
    import jsonschema

    return jsonschema.Draft202012Validator(schema).is_valid(value)


def role_defaults(role: str) -> dict:
    """What a block of this role (a dut.<block>, endpoints) takes for a key it leaves out, as `trexlab schema` shows
    it: the role's default (its meta/argument_specs.yml, the one source), not a template nor a placeholder the role
    refuses (those a block must give, or the role resolves)."""
    from trexlab.spec.experiment import role_options

    properties = _role_schema(role, role_options(role))["properties"]
    return {key: prop["default"] for key, prop in properties.items() if "default" in prop}


#: Role options a spec may not set, and why: what reaches beyond the benchmark a spec declares. Replacing a root
#: qdisc someone else put on the DUT's port deletes it, and absent cannot make it again: that is the call of whoever
#: owns the DUT, by hand (-e netem_replace_root=true), never of a shared spec. So is which Debian packages are
#: installed on the DUT: apt runs their maintainer scripts as root, starts their services, and removes whatever
#: installed package they conflict with; absent removes none of it.
NOT_FROM_SPECS = {"netem_replace_root": "it deletes a root qdisc another put on the DUT's port, which nothing puts "
                                        "back; set netem_replace_root by hand (-e) if that is what you want",
                  "siit_jool_packages": "it installs Debian packages on the DUT as root (apt removes any installed "
                                        "package they conflict with), which absent does not undo; set "
                                        "siit_jool_packages by hand (-e) if Jool's packages have other names there"}


def spec_option(role: str, name: str) -> bool:
    """Whether a spec's block for `role` may set its option `name`: not the campaign's own (state: it applies and
    reverses each role; state_dir: where the role keeps what it puts back), nor one of NOT_FROM_SPECS."""
    return name.startswith(f"{role}_") and not name.endswith(("_state", "_state_dir")) and name not in NOT_FROM_SPECS


def _role_schema(role: str, options: dict) -> dict:
    """A spec block's schema from its role's argument specs: the options a spec may set (spec_option)."""
    properties = {}
    for name, option in options.items():
        if not spec_option(role, name):
            continue
        prop: dict[str, typing.Any] = dict(_ROLE_TYPES.get(option.get("type", "str"), {}))
        if option.get("choices"):
            if prop.get("type") == "array":
                prop["items"] = {"enum": option["choices"]}
            else:
                prop["enum"] = option["choices"]
        if option.get("description"):
            prop["description"] = option["description"]
        prop.update(ROLE_BOUNDS.get(role, {}).get(name.removeprefix(f"{role}_"), {}))
        # The role's default is the one (defaults/main.yml equals it: tests/test_collection.py), shown as a
        # procedure parameter's is; not a template (siit networks follow traffic.destination_networks) nor a
        # placeholder the role refuses (dut_reference's rate_fps 0: required).
        default = option.get("default")
        if default is not None and "{{" not in str(default) and _valid(prop, default):
            prop["default"] = default
        properties[name.removeprefix(f"{role}_")] = prop
    return {"type": "object", "additionalProperties": False, "properties": properties}
