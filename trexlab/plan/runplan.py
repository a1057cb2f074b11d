"""One validated run plan: what a CLI verb or one point of a campaign will run, checked before any host is touched.

    CLI verb  --plan_cli-->      RunPlan --check_on_lab--> --execute--> repetitions in plan.output
    campaign  --plan_campaign--> [RunPlan, ...] --check_on_lab (every point's)--> --execute--> (each point)

A RunPlan holds everything a run needs, validated: the procedure and its parameters, the trial template,
the generator and its options (typed: trexlab.spec.schema), the lab, the DUT configuration (its values that reach
a host checked by trexlab.rolevalues), the tester ceiling it compares against, what identifies the run in
its provenance, and its output directory inside the results root. Making a plan reads local files only
(the spec, the inventory, the ceilings file). Once the lab is known (and held: trexlab.testbed.lock),
``check_on_lab`` asks each plan's procedure what only the lab can tell (Procedure.check_lab: reads nodes,
changes nothing) before any run directory is made or any host configured; then the generator is made from the
plan (``create_generator``) before any DUT is configured, and ``execute`` runs it — the CLI and campaigns alike,
so both write the same provenance and results for the same procedure and parameters.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from trexlab import impairment, rolevalues
from trexlab.params import InvalidParameter, check_range
from trexlab.plan.adaptive import RepetitionRule
from trexlab.spec.schema import REPETITIONS_MAX, Traffic, check_fields, generator_options_class
from trexlab.testbed.inventory import Lab, LabError, load_lab
from trexlab.trial import Capabilities, TrialSpec

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from trexlab.testbed.endpoints import LabView

#: The results root by default (relative to where trexlab runs): the CLI's verbs' runs go to <root>/cli/, a
#: --rate-from EXPERIMENT/ID is looked up in it, campaigns, reports and compare find experiments in it (the commands'
#: default --results), the tester ceilings are kept there (selftest.CEILINGS_FILE).
RESULTS_ROOT = Path("results")
#: Campaign ids name a directory below results/<experiment>/: nothing that could leave it.
CAMPAIGN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z"


class PlanError(ValueError):
    """A run cannot be planned; str() is one line naming the input (file or flag) and the key."""


@dataclass(frozen=True)
class RunPlan:
    """A run (repeated procedure), fully validated. See the module's docstring."""

    procedure: str
    #: The procedure's Params; with rate_from, its rate stands in for the one the throughput runs will measure.
    params: DataclassInstance
    #: The trial template: the procedure sets each trial's load and duration.
    traffic: TrialSpec
    generator: str
    #: The generator's options, typed and checked (trexlab.spec.schema; never a program to run).
    generator_options: Mapping[str, object]
    lab: Lab | None
    #: A count, or adaptive repetitions (trexlab.plan.adaptive.RepetitionRule: at most its maximum).
    repetitions: int | RepetitionRule
    #: The run's directory (its rep-<k>/ below), inside the results root.
    output: Path
    #: The tester ceilings file (trexlab.procedures.selftest) and the ceiling looked up there.
    ceilings: Path
    tester_ceiling: Mapping | None
    #: What identifies the invocation in provenance: argv for the CLI; experiment, campaign, point, sweep, spec.
    facts: Mapping[str, object] = field(default_factory=dict)
    #: The DUT configuration, (block, settings) in the order applied (trexlab.spec.experiment.DUT_CONFIG).
    dut: tuple[tuple[str, Mapping], ...] = ()
    #: Destination networks the DUT is routed for.
    networks: int = 1
    #: Campaigns: the throughput runs whose median rate this procedure measures at (RFC 8219).
    rate_from: RunPlan | None = None
    #: CLI --rate-from, or a campaign's stored throughput campaign (rate.campaign): the rate and where it came from.
    rate_source: Mapping | None = None

    @property
    def capabilities(self) -> Capabilities:
        """What the plan's generator can do (its class's declaration): the procedure's check asks it."""
        from trexlab.generators import capabilities

        return capabilities(self.generator)

    def create_generator(self):
        """The generator (for the lab's tester): made before any DUT is configured."""
        from trexlab.generators import create_generator

        options = dict(self.generator_options)
        if self.lab is not None:
            options["lab"] = self.lab
        return create_generator(self.generator, **options)


# -- the checks every plan makes --------------------------------------------------------------------------------


def check_generator_options(generator: str, options: object, from_text: bool = False,
                            prefix: str = "generator_options.") -> dict:
    """A generator's options, typed by its options class; InvalidParameter names the key. from_text: the CLI's
    KEY=VALUE strings, parsed by the option's type."""
    from trexlab.generators import GENERATORS

    if generator not in GENERATORS:
        raise InvalidParameter("generator", generator, ", ".join(GENERATORS))
    cls = generator_options_class(generator)
    values = check_fields(cls, options if options is not None else {}, from_text, prefix=prefix)
    if generator == "sim":  # the simulated SUT's own range checks (no host: it is all in this process)
        from trexlab.generators.sim import SimulatedSUT

        sut = {k: v for k, v in values.items() if k != "wall_clock_factor"}
        try:
            SimulatedSUT(**sut)
        except InvalidParameter as exc:
            raise InvalidParameter(f"{prefix}{exc.name}", exc.value, exc.allowed) from None
        check_range(f"{prefix}wall_clock_factor", values.get("wall_clock_factor", 0.0), 0, 1)
    else:
        try:
            cls(**values)
        except InvalidParameter as exc:
            raise InvalidParameter(f"{prefix}{exc.name}", exc.value, exc.allowed) from None
    return values


def traffic_template(traffic: object, prefix: str = "traffic.") -> TrialSpec:
    """The trial template from a traffic mapping (spec or --config plus flags): typed, then TrialSpec's checks."""
    values = check_fields(Traffic, traffic if traffic is not None else {}, prefix=prefix)
    for key in ("frame_size", "ip_version"):
        if isinstance(values.get(key), int):  # one value for both tester ports
            values[key] = (values[key], values[key])
    try:
        return TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, **values})
    except InvalidParameter as exc:
        raise InvalidParameter(f"{prefix}{exc.name}", exc.value, exc.allowed) from None


def procedure_params(procedure: str, raw: object, prefix: str = "params."):
    """A procedure's Params from a mapping: types by its fields, ranges by its own checks."""
    from trexlab.procedures import procedure as procedure_of

    params_class = procedure_of(procedure).Params
    values = check_fields(params_class, raw if raw is not None else {}, prefix=prefix)
    try:
        return params_class(**values)
    except InvalidParameter as exc:
        raise InvalidParameter(f"{prefix}{exc.name}", exc.value, exc.allowed) from None
    except (TypeError, ValueError, AttributeError) as exc:  # a check the procedure did not anticipate
        raise InvalidParameter(prefix.rstrip("."), raw, f"valid {procedure} parameters ({str(exc).splitlines()[0]})"
                               ) from None


def check_output_dir(path: Path, label: str) -> Path:
    """A directory a run may create: it, or its nearest existing parent, is a writable directory."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link: where would the run write?
            raise PlanError(f"{label}: {existing} is a dangling symbolic link")
        existing = existing.parent
    if not existing.is_dir():
        raise PlanError(f"{label}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PlanError(f"{label}: {existing} is not writable")
    return path


def inside(path: Path, root: Path, label: str) -> Path:
    """path, which must lie inside root once both are resolved (no '..', no link out)."""
    resolved, base = path.resolve(), root.resolve()
    if resolved != base and base not in resolved.parents:
        raise PlanError(f"{label}: {path} is outside the results root {root}")
    return path


def check_campaign_id(value: object) -> str:
    if not isinstance(value, str) or not re.match(CAMPAIGN_ID_PATTERN, value) or ".." in value:
        raise PlanError(f"--campaign {value!r}: allowed 1-64 characters A-Z a-z 0-9 _ . - (a directory name)")
    return value


def checked(plan: RunPlan) -> RunPlan:
    """The plan, once its procedure checked it (Procedure.check: the generator's capabilities, the lab's nodes) and
    its traffic is one the generator can count (Capabilities.translated_frames: SIIT's two IP versions)."""
    from trexlab.procedures import procedure

    procedure(plan.procedure).check(plan)
    versions = plan.traffic.ip_version
    if versions[0] != versions[1] and not plan.capabilities.translated_frames:
        raise InvalidParameter("ip_version", versions, f"the same on both tester ports with generator "
                                                       f"{plan.generator} (it cannot count frames a translator "
                                                       "turned into the other IP version)")
    return plan


def check_on_lab(plans: Sequence[RunPlan], lab: LabView | None = None) -> None:
    """Procedure.check_lab of every plan and of the throughput plan its rate comes from, on the lab as the runs
    will find it (lab; default: each plan's lab, its TCP endpoints as configured now). Reads the nodes, changes
    nothing; InvalidParameter, LabError or GeneratorError (a node that cannot be read), one line. The run path
    calls it before any run directory is made or any host configured (trexlab.cli, trexlab.plan.campaign)."""
    from trexlab.procedures import procedure
    from trexlab.testbed.endpoints import LabView

    for plan in plans:
        view = lab if lab is not None else LabView(plan.lab)
        current: RunPlan | None = plan
        while current is not None:
            procedure(current.procedure).check_lab(current, view)
            current = current.rate_from


def needs_lab(generator: str) -> bool:
    from trexlab.generators import capabilities

    return capabilities(generator).needs_lab


def _ceiling(params, traffic, generator, options, lab, ceilings, label):
    from trexlab.procedures import selftest

    try:
        return selftest.ceiling_for(params, traffic, generator, lab, ceilings, options)
    except ValueError as exc:  # a damaged ceilings file
        raise PlanError(f"{label}: {str(exc).splitlines()[0]}") from None


# -- campaigns --------------------------------------------------------------------------------------------------


def plan_campaign(experiment, results_root: str | Path = RESULTS_ROOT, campaign: str | None = None,
                  lab: Lab | None = None, inventory: str | None = None, ceilings: str | Path | None = None
                  ) -> list[RunPlan]:
    """Every point's RunPlan, all valid, or the first error (InvalidExperiment, PlanError, LabError): one line.

    experiment: a validated Experiment (trexlab.spec.experiment), or a spec mapping (validated here). Touches no
    host: reads the inventory (when the generator needs a lab and none is given) and the ceilings file."""
    from trexlab.spec.experiment import Experiment, validate

    if not isinstance(experiment, Experiment):
        experiment = validate(experiment)
    if not needs_lab(experiment.generator):
        lab = None
    elif lab is None:
        lab = load_lab(inventory)
    campaign_id = check_campaign_id(campaign) if campaign is not None else default_campaign_id(experiment)
    root = Path(results_root)
    check_output_dir(root, "--results")
    directory = inside(root / experiment.name / campaign_id, root, "campaign")
    from trexlab.results.store import first_link

    if (link := first_link(directory)) is not None:
        raise PlanError(f"campaign {directory}: {link} is a symbolic link (the campaign writes there: remove it)")
    from trexlab.procedures import selftest

    ceilings = Path(ceilings if ceilings is not None else selftest.CEILINGS_FILE)
    return plan_points(experiment, campaign_id, directory, root, lab, ceilings)


def plan_points(experiment, campaign_id: str, directory: Path, root: Path, lab: Lab | None,
                ceilings: Path) -> list[RunPlan]:
    """Every point's RunPlan (plan_point), their rates from the stored throughput campaign the spec names, if it
    names one (trexlab.plan.rate_from.stored_rates: one campaign for all points). lab None where the generator needs
    one: a dry run without an inventory, which compares the stored campaign's set-up without the lab."""
    from trexlab.plan.rate_from import split_rate_from, stored_rates
    from trexlab.spec.experiment import InvalidExperiment

    points = experiment.points()
    stored: dict = {}
    try:
        _, request = split_rate_from(experiment.spec["procedure"].get("params") or {})
        if request is not None and "campaign" in request:
            stored = stored_rates(root, request, [(p.point_id, p.spec) for p in points], lab_identity(lab),
                                  compare_lab=lab is not None or not needs_lab(experiment.generator))
    except InvalidParameter as exc:
        raise InvalidExperiment(f"{experiment.path or '<spec>'}: {exc}") from None
    return [plan_point(experiment, point, campaign_id, directory, root, lab, ceilings, stored.get(point.point_id))
            for point in points]


def lab_identity(lab: Lab | None) -> dict | None:
    """The lab a campaign's points are measured on, as campaign.json keeps it (measured_on; None: no lab, the
    simulated SUT): a resumed campaign must find the same one, and a rate from a stored campaign must come from it."""
    if lab is None:
        return None
    import platform

    return {"name": lab.name, "kind": lab.kind, "topology": lab.topology, "controller": platform.node()}


def default_campaign_id(experiment) -> str:
    """A hash of the (scaled) spec, so running the same experiment again resumes it."""
    import hashlib
    import json

    digest = hashlib.sha1(json.dumps(experiment.spec, sort_keys=True, default=str).encode()).hexdigest()
    return f"c-{digest[:10]}"


def measure_again_campaign_id(experiment, results_root: str | Path) -> tuple[str, str]:
    """The campaign a run that must measure anew (make demo, trexlab campaign --measure-again) goes to, and why.

    An interrupted campaign of this spec (a point not done: a crash, a kill, a failed point) is resumed, as a
    plain rerun resumes it; when every campaign of the spec is complete, a new one starts: the spec's hash for
    the first campaign, then <hash>-2, <hash>-3, ... So a rerun never hands back an old measurement as a new
    one, and a crash still costs at most the trial that was running.
    """
    from trexlab.results.store import DamagedRecord, read_point_log

    base = default_campaign_id(experiment)
    root = Path(results_root) / experiment.name
    points = {p.point_id for p in experiment.points()}
    complete: list[str] = []
    for k in range(1, 10_000):
        cid = base if k == 1 else f"{base}-{k}"
        directory = root / cid
        if not (directory / "campaign.json").is_file():
            if complete:
                return cid, (f"the earlier campaign(s) of this spec are complete ({', '.join(complete[-3:])}): "
                             f"measuring anew in {cid}")
            return cid, f"a new campaign {cid}"
        try:
            status = read_point_log(directory)
        except DamagedRecord as exc:
            raise PlanError(f"{exc}: remove {directory} to measure anew") from None
        if not all(status.get(p, {}).get("status") == "done" for p in points):
            done = sum(1 for p in points if status.get(p, {}).get("status") == "done")
            return cid, (f"resuming the interrupted campaign {cid} ({done} of {len(points)} point(s) done); "
                         f"to measure from scratch instead, remove {directory}")
        complete.append(cid)
    raise PlanError(f"{root}: 9,999 campaigns of this spec: remove some")


def plan_point(experiment, point, campaign_id: str, directory: Path, root: Path, lab: Lab | None,
               ceilings: Path, stored_rate: tuple[float, Mapping] | None = None) -> RunPlan:
    """One sweep point's RunPlan (see plan_campaign); stored_rate: its (rate, source) from the stored throughput
    campaign the spec names (plan_points)."""
    from trexlab.plan.rate_from import GIVES_RATE, split_rate_from
    from trexlab.plan.rate_from import SUBDIR as RATE_SUBDIR
    from trexlab.spec.experiment import DUT_CONFIG, InvalidExperiment, with_role_defaults

    source = str(experiment.path) if experiment.path else "<spec>"
    where = f"{source}: point {point.index} ({point.point_id})" if point.values else source
    spec = point.spec
    name = spec["procedure"]["name"]
    output = inside(directory / point.point_id, root, where)
    facts = {"experiment": experiment.name, "campaign": campaign_id, "point": point.point_id,
             "sweep": point.values, "spec": spec}
    allow = bool(lab and lab.allow_non_benchmarking_addresses)
    try:
        traffic = traffic_template(spec.get("traffic"))
        options = check_generator_options(experiment.generator, spec.get("generator_options"))
        raw, rate_from = split_rate_from(spec["procedure"].get("params") or {})
        rate_plan, rate_source = None, None
        if rate_from is not None and "campaign" in rate_from:  # RFC 8219: at a stored campaign's throughput
            if stored_rate is None:
                raise InvalidParameter("procedure.params.rate.campaign", rate_from["campaign"],
                                       "a stored campaign looked up for every point (plan_points)")
            rate, rate_source = stored_rate
            raw = {**raw, "rate": rate}
        elif rate_from is not None:  # RFC 8219: latency and PDV at the point's measured throughput
            rate_params = procedure_params(GIVES_RATE, rate_from["params"], "procedure.params.rate.params.")
            rate_params, rate_ceiling = _ceiling(rate_params, traffic, experiment.generator, options, lab, ceilings,
                                                 where)
            # An adaptive rule's figures are the point's procedure's: the rate's throughput stops on its own median.
            rate_rule = dataclasses.replace(experiment.repetition_rule, figures=())
            rate_plan = checked(RunPlan(GIVES_RATE, rate_params, traffic, experiment.generator, options, lab,
                                        rate_rule, output / RATE_SUBDIR, ceilings, rate_ceiling,
                                        {**facts, "purpose": f"the rate of the point's {name} runs"}))
            raw = {**raw, "rate": 1.0}  # stands for the measured rate until it is measured
        params = procedure_params(name, raw, "procedure.params.")
        check_trex_servers(lab, {"generator_options.server": options.get("server"),
                                 "procedure.params.trex_server": getattr(params, "trex_server", None)})
        dut = []
        for block in DUT_CONFIG:
            settings = (spec.get("dut") or {}).get(block)
            if settings is not None:
                try:
                    rolevalues.check_dut_block(block, settings, lab, allow)
                except InvalidParameter as exc:
                    raise InvalidParameter(f"dut.{block}.{exc.name}", exc.value, exc.allowed) from None
                dut.append((block, dict(settings)))
                if block == "impairment":  # the emulator's settings its block leaves at their defaults, disclosed
                    facts = {**facts, "impairment_emulator": impairment.disclosure(with_role_defaults(block, settings))}
        if spec.get("endpoints"):
            try:
                rolevalues.check_endpoints_block(spec["endpoints"])
            except InvalidParameter as exc:
                raise InvalidParameter(f"endpoints.{exc.name}", exc.value, exc.allowed) from None
        params, ceiling = _ceiling(params, traffic, experiment.generator, options, lab, ceilings, where)
        return checked(RunPlan(name, params, traffic, experiment.generator, options, lab, experiment.repetition_rule,
                               output, ceilings, ceiling, facts, tuple(dut), traffic.destination_networks, rate_plan,
                               rate_source))
    except InvalidParameter as exc:
        raise InvalidExperiment(f"{where}: {exc}") from None
    except LabError as exc:
        raise InvalidExperiment(f"{where}: {exc}") from None


def check_trex_servers(lab: Lab | None, named: Mapping[str, object]) -> None:
    """A spec's TRex servers (generator_options.server, tcp's trex_server): the lab's own only, its tester's
    trexlab_trex_server or the tester itself, as the defaults are. A TRex server sends the test traffic out of its
    own ports: one a shared spec names could be any host's, on any network, not the lab the user brought up (the
    lab, in its inventory, says which TRex it has; a user at the CLI may still name any with --trex-server)."""
    if all(server is None for server in named.values()):
        return
    own = set() if lab is None else {str(v) for v in (lab.tester.extra.get("trexlab_trex_server"),
                                                      lab.tester.ansible_host) if v}
    for key, server in named.items():
        if server is not None and str(server) not in own:
            raise InvalidParameter(key, server, f"the lab's own TRex server ({', '.join(sorted(own))}), or none"
                                   if own else "none: the lab's own TRex server is the default, and there is no lab")


# -- the CLI ----------------------------------------------------------------------------------------------------

#: The keys of a --config file.
CONFIG_KEYS = ("generator", "generator_options", "traffic", "params", "repeat", "inventory")
TRAFFIC_FIELDS = tuple(f.name for f in dataclasses.fields(Traffic))


def read_config(path: str | None) -> dict:
    """A --config file (safe YAML: trexlab.spec.safeyaml), its keys checked."""
    from trexlab.spec import safeyaml

    if not path:
        return {}
    try:
        data = safeyaml.load(path, f"--config {path}")
    except safeyaml.YamlInputError as exc:
        raise PlanError(str(exc)) from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise PlanError(f"--config {path}: a mapping of {', '.join(CONFIG_KEYS)}, got {type(data).__name__}")
    extra = sorted(str(k) for k in set(data) - set(CONFIG_KEYS))
    if extra:
        raise PlanError(f"--config {path}: unknown key {extra[0]}; allowed {', '.join(sorted(CONFIG_KEYS))}")
    return data


def plan_cli(args, argv: list[str] | None = None) -> RunPlan:
    """A CLI verb's RunPlan from its parsed arguments (trexlab.cli); PlanError / InvalidParameter / LabError.

    A value that came from the --config file (and no flag) is refused naming the file, the others name the
    key as their flag does (--dscp: dscp=...)."""
    from_config: set[str] = set()
    try:
        return _plan_cli(args, argv, from_config)
    except InvalidParameter as exc:
        if args.config and re.split(r"[\[]", exc.name)[0] in from_config:
            raise PlanError(f"--config {args.config}: {exc}") from None
        raise


def _plan_cli(args, argv: list[str] | None, from_config: set[str]) -> RunPlan:
    from trexlab.generators import GENERATORS
    from trexlab.plan.rate_from import cli_rate
    from trexlab.procedures import procedure, selftest

    config = read_config(args.config)
    label = f"--config {args.config}: " if args.config else ""
    module = procedure(args.procedure)
    traffic = config.get("traffic") or {}
    if not isinstance(traffic, dict):
        raise PlanError(f"{label}traffic: a mapping, got {type(traffic).__name__}")
    flags = {name: getattr(args, name) for name in TRAFFIC_FIELDS if getattr(args, name, None) is not None}
    from_config.update(f"traffic.{key}" for key in set(traffic) - set(flags))
    from_config.add("traffic")
    traffic = {**traffic, **flags}
    template = traffic_template(traffic)
    params = config.get("params") or {}
    if not isinstance(params, dict):
        raise PlanError(f"{label}params: a mapping, got {type(params).__name__}")
    params = dict(params)
    from_config.update(str(key) for key in params)
    for f in dataclasses.fields(module.Params):
        value = getattr(args, f"param_{f.name}", None)
        if value is not None:
            params[f.name] = value
            from_config.discard(f.name)
    rate_from = getattr(args, "rate_from", None)
    if rate_from and params.get("rate") is not None:
        raise PlanError("--rate and --rate-from: give one of them")
    # Named as their flags are (--dscp: dscp=...), the same keys as in the --config file's params. A rate from
    # throughput runs is looked up below, once the set-up they must share (generator, options, lab) is known.
    procedure_parameters = procedure_params(args.procedure, params, prefix="") if not rate_from else None
    if args.repeat is None and "repeat" in config:
        from_config.add("repeat")
    repetitions = args.repeat if args.repeat is not None else config.get("repeat", 1)
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or not 1 <= repetitions <= REPETITIONS_MAX:
        raise InvalidParameter("repeat", repetitions, f"1..{REPETITIONS_MAX}")
    generator = args.generator or config.get("generator") or "software"
    if generator not in GENERATORS:
        raise PlanError(f"{label}generator: {generator!r}: allowed {', '.join(GENERATORS)}")
    options = config.get("generator_options") or {}
    if not isinstance(options, dict):
        raise PlanError(f"{label}generator_options: a mapping, got {type(options).__name__}")
    from_config.update(f"generator_options.{key}" for key in options)
    options = check_generator_options(generator, options)
    for pair in args.generator_opt:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise PlanError(f"--generator-opt {pair!r}: allowed KEY=VALUE")
        try:
            options.update(check_generator_options(generator, {key: value}, from_text=True, prefix=""))
        except InvalidParameter as exc:
            raise PlanError(f"--generator-opt {pair!r}: {exc}") from None
        from_config.discard(f"generator_options.{key}")
    options = check_generator_options(generator, options)  # the options together (e.g. the SUT's own checks)
    lab = None
    if needs_lab(generator):
        inventory = args.inventory or config.get("inventory")
        if inventory is not None and not isinstance(inventory, str):
            raise PlanError(f"{label}inventory: a file name")
        lab = load_lab(inventory)
    rate_source = None
    if rate_from:
        params["rate"], rate_source = cli_rate(
            rate_from, RESULTS_ROOT, {"generator": generator, "generator_options": options, "traffic": traffic}, lab)
        procedure_parameters = procedure_params(args.procedure, params, prefix="")
    assert procedure_parameters is not None
    output = Path(args.results) if args.results else fresh_output(args.procedure)
    check_output_dir(output, "--results")
    ceilings = Path(args.ceilings if args.ceilings is not None else selftest.CEILINGS_FILE)
    procedure_parameters, ceiling = _ceiling(procedure_parameters, template, generator, options, lab, ceilings,
                                             f"--ceilings {ceilings}")
    return checked(RunPlan(args.procedure, procedure_parameters, template, generator, options, lab, repetitions,
                           output, ceilings, ceiling, {"argv": list(argv) if argv is not None else None}, (),
                           template.destination_networks, None, rate_source))


def fresh_output(procedure: str) -> Path:
    """A CLI run's default directory, results/cli/<procedure>-<local time>, one not there yet: a second run started in
    the same second gets <...>-2, not the first's directory, whose finished repetitions it would count as its own."""
    base = f"{RESULTS_ROOT}/cli/{procedure}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, k = Path(base), 2
    while path.exists():
        path, k = Path(f"{base}-{k}"), k + 1
    return path


# -- running a plan ---------------------------------------------------------------------------------------------


def execute(plan: RunPlan, generator, progress: Callable[[str, dict], None] | None = None,
            say: Callable[[str], None] | None = None,
            rate_progress: Callable[[str, dict], None] | None = None, upto: int | None = None,
            order: Mapping | None = None) -> dict:
    """Run (or finish) the plan's repetitions with a generator made from it; the summary of their figures.

    progress receives the procedure's progress (repetitions, trials); say one line of news (the rate measured,
    the self-test's record); rate_progress the progress of the throughput runs a rate comes from. upto: run no
    repetition beyond this one (an interleaved campaign's round: the throughput runs of a rate are all finished
    by then); order: how the campaign orders its repetitions, kept in their provenance."""
    from trexlab.plan.rate_from import measuring_line, median_throughput
    from trexlab.plan.repetition import next_repetition, repeat
    from trexlab.procedures import selftest
    from trexlab.results.provenance import provenance

    say = say or (lambda line: None)
    params, rate_source = plan.params, plan.rate_source
    if plan.rate_from is not None:
        execute(plan.rate_from, generator, rate_progress, say, order=order)
        rate, rate_source = median_throughput(plan.rate_from.output)
        say(measuring_line(rate_source))
        params = dataclasses.replace(params, rate=rate)
        # The plan's checks that waited for the rate (latency's tags, every trial's frames), before the first trial.
        checked(dataclasses.replace(plan, params=params, rate_from=None))
    facts = provenance(**plan.facts, generator=generator.describe(), generator_options=dict(plan.generator_options),
                       params=dataclasses.asdict(params),
                       traffic=plan.traffic.to_dict(), lab=plan.lab.describe() if plan.lab else None,
                       tester_ceiling=plan.tester_ceiling,
                       **({"rate_source": dict(rate_source)} if rate_source else {}),
                       **({"order": dict(order)} if order else {}))
    summary = repeat(plan.procedure, generator, plan.traffic, params, plan.repetitions, plan.output, facts,
                     progress=progress, upto=upto)
    # A self-test's ceilings are recorded from all its repetitions: not after an interleaved round that left some.
    if plan.procedure == selftest.NAME and (upto is None or next_repetition(plan.repetitions, plan.output) is None):
        count = plan.repetitions.maximum if isinstance(plan.repetitions, RepetitionRule) else plan.repetitions
        say(selftest.record_selftest(plan.output, count, plan.generator, plan.lab, plan.traffic, plan.ceilings,
                                     plan.generator_options))
    return summary


__all__ = ["RunPlan", "PlanError", "plan_campaign", "plan_point", "plan_cli", "check_on_lab", "execute",
           "check_generator_options", "traffic_template", "procedure_params", "LabError"]
