"""`trexlab`: run a benchmarking procedure on a generator, repeated, into the results store.

    trexlab throughput --generator sim --generator-opt capacity=1e6 --max-rate 2e6
    trexlab latency --generator software --rate 100000 --repeat 20
    trexlab mlrsearch --config search.yml --json
    trexlab campaign experiments/demo --scale ci      # a declared, repeated, resumable campaign
    trexlab report demo                               # its analysis notebook as HTML
    trexlab compare results/demo/c-aaaa results/demo/c-bbbb --html cmp.html   # B against A, per sweep point

Procedure flags come from the procedure's Params dataclass, so each is
declared once. Everything is validated before any traffic is sent: a bad value
gives one line on stderr naming the parameter and what is allowed, exit
status 2, and no result directory.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import types
import typing
from pathlib import Path

from trexlab import __version__
from trexlab.addressing import MAX_NETWORKS
from trexlab.generators import GENERATORS
from trexlab.params import InvalidParameter
from trexlab.plan.rate_from import measuring_line
from trexlab.plan.repetition import SUMMARY, repetition_dir, summary_lines
from trexlab.plan.runplan import CONFIG_KEYS, RESULTS_ROOT, PlanError, check_on_lab, execute, plan_cli
from trexlab.procedures import procedure, registry, selftest
from trexlab.procedures.http_download import DownloadError
from trexlab.progress import ProgressDisplay
from trexlab.results.stats import WHOLE
from trexlab.results.store import dumps, read_json
from trexlab.spec.schema import (
    DEFAULT_REPETITIONS,
    REPETITIONS_MAX,
    Traffic,
    field_help,
    generator_options_class,
    range_text,
)
from trexlab.testbed.inventory import DEFAULT_INVENTORY, LabError
from trexlab.testbed.lock import LabLock
from trexlab.trial import (
    MAX_FRAME_SIZE,
    MAX_RECEIVE_TAIL,
    MAX_RESTABILIZE_WAIT,
    MIN_FRAME_SIZE,
    RFC2544_RECEIVE_TAIL,
    RFC2544_RESTABILIZE_WAIT,
    GeneratorError,
    format_seconds,
)

EXIT_BAD_INPUT = 2
#: Where a run looks for the lab when --inventory is not given (trexlab.testbed.inventory.load_lab).
INVENTORY_DEFAULT = f"default $TREXLAB_INVENTORY, else {DEFAULT_INVENTORY}"


def _per_port(name: str):
    """'64' -> (64, 64); '84,64' -> (84, 64): a value for each tester port."""

    def parse(text: str) -> tuple[int, int]:
        try:
            values = tuple(int(v) for v in str(text).split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: a number or two numbers 'port0,port1'") from None
        if len(values) == 1:
            values = values * 2
        if len(values) != 2:
            raise argparse.ArgumentTypeError(f"{name}: one value or two 'port0,port1'")
        return values

    return parse


def _str_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of integers") from None


def _generator_options_help() -> str:
    """--generator-opt's help: each generator's option names (their units and ranges: trexlab schema)."""
    fields = {generator: dataclasses.fields(generator_options_class(generator)) for generator in GENERATORS}
    names = "; ".join(f"{generator}: " + ", ".join(f.name for f in options) for generator, options in fields.items())
    return (f"generator option, repeatable (e.g. capacity=1e6 for sim): {names} (each with its unit, range and "
            "default in trexlab schema, generator_options)")


def _traffic_help(name: str, text: str) -> str:
    """A traffic flag's help: what it is, and the default a spec's traffic block has (trexlab.spec.schema.Traffic)."""
    default = next(f.default for f in dataclasses.fields(Traffic) if f.name == name)
    if isinstance(default, tuple):
        default = default[0] if len(set(default)) == 1 else ",".join(map(str, default))
    return f"{text} (default {default})"


def _number(kind: type, allowed: str):
    """An argparse type: kind (int or float) of the text, else one line saying what is allowed (argparse names the
    flag): '--max-rate: 'abc' is not a number; allowed > 0 and <= 1e+09', not 'invalid float value'."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            if kind is int and not text.strip().lstrip("+-").isdigit():  # 1e3 is a count too, as in a spec
                number = float(text)
                if number.is_integer():
                    return int(number)
            return kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}" + (f"; allowed {allowed}" if allowed else "")
                                             ) from None

    return parse


def _base_type(annotation):
    """The scalar type behind an annotation like float | None (resolved: typing.get_type_hints)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = args[0]
    return annotation


def add_params_flags(parser: argparse.ArgumentParser, params_class) -> None:
    """One flag per Params field; lists of goals and other structures come from --config only."""
    group = parser.add_argument_group(f"{params_class.__module__.rsplit('.', 1)[-1]} parameters")
    # The procedures' modules postpone annotations (strings); their own globals resolve them.
    hints = typing.get_type_hints(params_class)
    for f in dataclasses.fields(params_class):
        kind = _base_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        # What it is, its unit, its range and its default: the field's own declaration (as in trexlab schema).
        text = field_help(f).replace("%", "%%")  # argparse formats help with %
        if kind is bool:
            group.add_argument(flag, dest=f"param_{f.name}", action=argparse.BooleanOptionalAction, default=None,
                               help=text)
        elif kind in (float, int, str):
            bounds: typing.Mapping[str, typing.Any] = f.metadata.get("schema", {}) if f.metadata else {}
            parse = _number(kind, range_text(bounds)) if kind in (float, int) else kind
            group.add_argument(flag, dest=f"param_{f.name}", type=parse, default=None, help=text)
        elif typing.get_origin(kind) is tuple or kind is tuple:
            if isinstance(default, tuple) and default and all(isinstance(v, int) for v in default):
                group.add_argument(flag, dest=f"param_{f.name}", type=_int_list, default=None,
                                   help=f"comma-separated: {text}")
            elif isinstance(default, tuple) and default and all(isinstance(v, str) for v in default):
                group.add_argument(flag, dest=f"param_{f.name}", type=_str_list, default=None,
                                   help=f"comma-separated: {text}")


def add_ceilings_flag(parser) -> None:
    """--ceilings, the same for procedures and campaigns."""
    parser.add_argument("--ceilings", metavar="FILE", default=str(selftest.CEILINGS_FILE),
                        help="tester ceilings: a self-test on a loopback lab records them here, the other "
                             "procedures compare their results against the matching one (same tester, "
                             "generator and its tester options, frame size, directions, port mode) unless a "
                             "tester_ceiling is given "
                             "(default %(default)s)")


class OneLineErrors(argparse.ArgumentParser):
    """argparse with its errors as every other bad input's: one line naming the flag, exit status 2 (--help
    still shows the usage). Its subcommands' parsers are of the same class."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {' '.join(message.split())}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(prog="trexlab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"trexlab {__version__}")
    subparsers = parser.add_subparsers(dest="procedure", required=True, metavar="COMMAND",
                                       help="a procedure (one run, repeated), or campaign / report / compare / schema")
    for name, module in registry().items():
        sub = subparsers.add_parser(name, help=(module.__doc__ or "").split("\n")[0],
                                    description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        common = sub.add_argument_group("run")
        common.add_argument("--generator", choices=tuple(GENERATORS), help="traffic generator (default software)")
        common.add_argument("--generator-opt", action="append", default=[], metavar="KEY=VALUE",
                            help=_generator_options_help())
        common.add_argument("--inventory",
                            help=f"generated inventory of the lab (software, trex generators; {INVENTORY_DEFAULT})")
        common.add_argument("--config", help=f"YAML file: {', '.join(CONFIG_KEYS)} (flags given beside it win)")
        common.add_argument("--repeat", type=_number(int, f"1..{REPETITIONS_MAX}"),
                            help=f"repetitions (default 1; campaigns use {DEFAULT_REPETITIONS})")
        common.add_argument("--results", help=f"result directory (default {RESULTS_ROOT}/cli/<procedure>-<time>)")
        common.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
        add_ceilings_flag(common)
        traffic = sub.add_argument_group("traffic")
        traffic.add_argument("--frame-size", type=_per_port("frame-size"),
                             help=_traffic_help("frame_size", f"bytes per frame with FCS, {MIN_FRAME_SIZE}.."
                                                              f"{MAX_FRAME_SIZE}, or 'port0,port1' (SIIT)"))
        traffic.add_argument("--ip-version", type=_per_port("ip-version"),
                             help=_traffic_help("ip_version", "4, 6, or 'port0,port1'"))
        traffic.add_argument("--directions", choices=("bidirectional", "forward", "reverse"),
                             help=_traffic_help("directions", "forward: port 0 to port 1; reverse: port 1 to port 0"))
        traffic.add_argument("--port-mode", choices=("fixed", "rfc4814"),
                             help=_traffic_help("port_mode", "UDP ports: fixed, or RFC 4814 pseudorandom"))
        traffic.add_argument("--destination-networks", type=_number(int, f"1..{MAX_NETWORKS}"),
                             help=_traffic_help("destination_networks",
                                                f"destination networks per direction, 1..{MAX_NETWORKS}"))
        traffic.add_argument("--receive-tail", type=_number(float, f"0..{MAX_RECEIVE_TAIL:g}"),
                             help=_traffic_help("receive_tail", "s of receiving after sending stops (RFC 2544: "
                                                f"{RFC2544_RECEIVE_TAIL:g} s), 0..{MAX_RECEIVE_TAIL:g}"))
        traffic.add_argument("--restabilize-wait", type=_number(float, f"0..{MAX_RESTABILIZE_WAIT:g}"),
                             help=_traffic_help("restabilize_wait", "s the tester sends nothing after each trial's "
                                                "receive tail, for the DUT to restabilize (RFC 2544: at least "
                                                f"{RFC2544_RESTABILIZE_WAIT:g} s), 0..{MAX_RESTABILIZE_WAIT:g}"))
        add_params_flags(sub, module.Params)
        if module.TAKES_RATE:
            sub.add_argument("--rate-from", metavar="DIR|EXPERIMENT/ID",
                             help="measure at the median throughput_fps of the throughput runs in DIR, or of the "
                                  "point of this run's set-up in the stored throughput campaign EXPERIMENT/ID under "
                                  f"{RESULTS_ROOT}/ (RFC 8219: at the throughput rate); instead of --rate. Refused "
                                  "unless they ran with this run's lab, generator, generator options and traffic")
    add_campaign_parser(subparsers)
    add_report_parser(subparsers)
    add_compare_parser(subparsers)
    schema = subparsers.add_parser("schema", help="print the experiment spec's JSON Schema (for editors)",
                                   description="Print the experiment spec's JSON Schema, generated from its types.")
    schema.set_defaults(command=schema_command)
    return parser


def schema_command(args: argparse.Namespace) -> int:
    from trexlab.spec.schema import experiment_schema

    print(dumps(experiment_schema(), indent=2))
    return 0


def ceiling_line(ceiling: typing.Mapping) -> str:
    """What a run compares its result against, in one line."""
    if ceiling["ceiling_fps"] is None:
        key = ceiling["looked_up"]
        return (f"no tester ceiling ({ceiling['source']} for {key['host']}, {key['generator']}, "
                f"{selftest.setup_text(key)}): a result at the tester's own limit will not be flagged; run "
                "'trexlab selftest' on a loopback lab with this set-up to record one")
    floor = ceiling.get("latency_floor")
    floor_text = "" if not floor else (
        f"; tester latency floor median {format_seconds(floor['median_s'])}, 99.9th percentile "
        f"{format_seconds(floor['p99_9_s'] or math.inf)} at {floor['rate_fps']:{WHOLE}} fps")
    if "selftest_run" not in ceiling:
        return (f"comparing results against tester ceiling {ceiling['ceiling_fps']:{WHOLE}} fps ({ceiling['source']})"
                + floor_text)
    return (f"comparing results against tester ceiling {selftest.ceiling_text(ceiling)} "
            f"({selftest.setup_text(ceiling)}, self-test {ceiling['selftest_run']} of {ceiling['measured']})"
            + floor_text)


def print_summary(procedure: str, summary: dict, results: Path, stream) -> None:
    """The figures with their limits and, beside them, how they were measured (from summary.json)."""
    print(f"\n{procedure}: results in {results}", file=stream)
    written = Path(results) / SUMMARY
    method = read_json(written).get("method") if written.is_file() else None
    for line in summary_lines(summary, method):
        print(line, file=stream)


def add_campaign_parser(subparsers) -> None:
    """trexlab campaign EXPERIMENT [--scale ci] [--campaign ID] [--results DIR] [--inventory FILE]"""
    parser = subparsers.add_parser("campaign", help="run (or resume) an experiment campaign",
                                   description="Run (or resume) an experiment campaign.")
    parser.set_defaults(command=campaign_command)
    parser.add_argument("experiment", help="experiments/<name> or a spec file")
    parser.add_argument("--scale", help="a scale declared by the experiment, e.g. ci (short trials)")
    parser.add_argument("--campaign", help="campaign id (default: a hash of the spec, so a rerun resumes)")
    parser.add_argument("--measure-again", action="store_true",
                        help="without --campaign: resume this spec's interrupted campaign if there is one, else start "
                             "a new one (<hash>-2, -3, ...) rather than resume a complete one (make demo)")
    parser.add_argument("--results", default=str(RESULTS_ROOT), help=f"results root (default {RESULTS_ROOT}/)")
    parser.add_argument("--inventory", help=f"generated inventory of the lab ({INVENTORY_DEFAULT})")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate the experiment and print its points, repetitions and an estimate of the lab "
                             "time (worst case and expected); touches no host")
    parser.add_argument("--check", action="store_true",
                        help="what the campaign refuses before it starts (its plan, the lab held by another run, a "
                             "campaign directory begun otherwise, the ceilings file, a DUT that cannot be reached or "
                             "lacks what the spec requires), asked without changing a host (the DUTs get the roles' "
                             "probes only) or writing: nothing printed and exit 0, or its refusal and exit 2 (make "
                             "run, before its recipe, which holds the lab for its recipe's run: TREXLAB_LAB_HELD_FOR)")
    add_ceilings_flag(parser)


def campaign_command(args: argparse.Namespace) -> int:
    from trexlab.plan.campaign import Campaign, CampaignError, PlaybookError
    from trexlab.spec.experiment import InvalidExperiment, load

    try:
        experiment = load(args.experiment).scaled(args.scale)
        if args.measure_again and not args.campaign:
            from trexlab.plan.runplan import measure_again_campaign_id

            args.campaign, why = measure_again_campaign_id(experiment, args.results)
            if not args.check:
                print(f"trexlab campaign: {why}", file=sys.stderr, flush=True)
        if args.check:
            Campaign(experiment, args.results, args.campaign, args.inventory, ceilings=args.ceilings).check()
            return 0
        if args.dry_run:
            print("\n".join(dry_run(experiment, args)))
            return 0
        campaign = Campaign(experiment, args.results, args.campaign, args.inventory,
                            progress=lambda line: print(line, file=sys.stderr, flush=True), ceilings=args.ceilings)
        outcome = campaign.run()
    except (InvalidExperiment, PlanError, CampaignError, PlaybookError, LabError, InvalidParameter) as exc:
        print(f"trexlab campaign: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("trexlab campaign: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    print(dumps(outcome))
    return 0 if not outcome["failed"] else 1


def dry_run(experiment, args: argparse.Namespace) -> list[str]:
    """What the campaign would run and how long, every point's plan validated (trexlab.plan.runplan), no host
    touched: the lab is read from its inventory when there is one; without one, everything else is still checked."""
    from pathlib import Path

    from trexlab.plan import estimate
    from trexlab.plan import runplan as plan
    from trexlab.procedures import selftest

    try:
        plans = plan.plan_campaign(experiment, args.results, args.campaign, inventory=args.inventory,
                                   ceilings=args.ceilings)
        checked = "every point's plan valid" + ("" if experiment.generator == "sim" else ", with the lab's inventory")
        unseen = ""
    except LabError as exc:
        root = Path(args.results)
        campaign = plan.check_campaign_id(args.campaign) if args.campaign else plan.default_campaign_id(experiment)
        plans = plan.plan_points(experiment, campaign, root / experiment.name / campaign, root, None,
                                 Path(args.ceilings or selftest.CEILINGS_FILE))
        checked = f"every point's plan valid without a lab ({exc})"
        unseen = "; its lab not compared (no lab here)"
    stored = [(k, p.rate_source) for k, p in enumerate(plans, start=1)
              if p.rate_source and "campaign" in p.rate_source]
    rates = [f"point {k}/{len(plans)} {plans[k - 1].facts['point']}: rate {source['rate']:{WHOLE}} fps, the "
             f"{source['statistic']} of {source['figure']} of stored campaign {source['campaign']['experiment']}/"
             f"{source['campaign']['id']}, its point {source['campaign']['point']}{unseen}" for k, source in stored]
    return [*estimate.plan_lines(experiment, estimate.checked_plan(experiment)), *rates,
            f"dry run: {checked}; nothing run"]


def add_report_parser(subparsers) -> None:
    """trexlab report EXPERIMENT [--campaign DIR] [--results DIR] [--notebook FILE]"""
    parser = subparsers.add_parser("report", help="execute an experiment's analysis notebook, export HTML",
                                   description="Execute the experiment's analysis notebook, export HTML.")
    parser.set_defaults(command=report_command)
    parser.add_argument("experiment", help="experiment name (results/<experiment>/...)")
    parser.add_argument("--campaign", help="campaign directory (default: the experiment's latest)")
    parser.add_argument("--results", default=str(RESULTS_ROOT), help=f"results root (default {RESULTS_ROOT}/)")
    parser.add_argument("--notebook", help="notebook to execute (default: the one the spec names, notebook:, else "
                                           "analysis/<experiment>.ipynb, else analysis/report.ipynb)")
    parser.add_argument("--check", action="store_true",
                        help="what the report refuses before it executes the notebook (no campaign, a directory that "
                             "is none), asked without executing or writing: nothing printed and exit 0, or its refusal "
                             "and exit 2 (make report, before its recipe)")


def report_command(args: argparse.Namespace) -> int:
    from trexlab.results.report import ReportError, checked_render, latest_campaign, render

    try:
        campaign = Path(args.campaign) if args.campaign else latest_campaign(args.results, args.experiment)
        if args.check:
            checked_render(campaign, args.notebook)
            return 0
        html = render(campaign, args.notebook)
    except ReportError as exc:
        print(f"trexlab report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(html)
    return 0


def add_compare_parser(subparsers) -> None:
    """trexlab compare A B [--figure NAME] [--json] [--html FILE] [--results DIR]"""
    from trexlab.results.stats import SHIFT_CONFIDENCE

    parser = subparsers.add_parser(
        "compare", help="compare two campaigns per sweep point: B lower, higher, no significant difference or "
                         "undecided",
        description="B against A per matching sweep point and headline figure: both medians, the Hodges-Lehmann "
                    f"shift with its distribution-free {SHIFT_CONFIDENCE * 100:g} % (Mann-Whitney) confidence "
                    "interval, and a verdict (lower / higher / no significant difference; undecided where "
                    "repetitions below min_rate or lower bounds could undo it).")
    parser.set_defaults(command=compare_command)
    parser.add_argument("a", metavar="A", help="the baseline: a campaign directory, or an experiment (its latest "
                                               "campaign under --results)")
    parser.add_argument("b", metavar="B", help="the campaign compared with A (same forms)")
    parser.add_argument("--figure", action="append", help="a headline figure to compare, repeatable (default: "
                                                          "every figure both measured)")
    parser.add_argument("--results", default=str(RESULTS_ROOT),
                        help=f"results root for experiment names (default {RESULTS_ROOT}/)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")
    parser.add_argument("--html", metavar="FILE", help="also write an HTML report (table and plots) to FILE")


def compare_command(args: argparse.Namespace) -> int:
    from trexlab.results.compare import CompareError, as_json, compare_campaigns, resolve, text_lines
    from trexlab.results.report import ReportError, render_compare

    try:
        a, b = resolve(args.a, args.results), resolve(args.b, args.results)
        table = compare_campaigns(a, b, args.figure)
        html = render_compare([a, b], args.html) if args.html else None
    except (CompareError, ReportError) as exc:
        print(f"trexlab compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(dumps(as_json(table, a, b), indent=2))
    else:
        print("\n".join(text_lines(table, a, b)))
    if html:
        print(f"trexlab compare: report in {html}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C outside the runs, which say what they kept (campaign, run_plan): while the procedures load (seconds
        # on a busy machine), the plan is checked, the lab lock is taken or the summary printed: one line, no traceback.
        print("trexlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (trexlab schema | head): one line on stderr, not a traceback, and stdout
        # pointed at /dev/null so that the interpreter's own flush at exit does not fail again. What a run had
        # written and restored is as after any other stop; 141 is the status a shell gives a SIGPIPE death.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        print("trexlab: stdout closed by its reader; stopped", file=sys.stderr)
        return 141


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(args, "command"):  # campaign, report, compare, schema
        return args.command(args)
    name = args.procedure
    try:
        plan = plan_cli(args, argv)  # everything checked; nothing touched yet
    except (PlanError, InvalidParameter, LabError, GeneratorError, ValueError) as exc:
        print(f"trexlab {name}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    with contextlib.ExitStack() as held:
        if plan.lab is not None:  # one run per lab, a campaign's or this one (trexlab.testbed.lock)
            try:
                held.enter_context(LabLock(plan.lab, f"trexlab {name}",
                                           lambda line: print(f"trexlab {name}: {line}", file=sys.stderr)))
            except LabError as exc:
                print(f"trexlab {name}: {exc}", file=sys.stderr)
                return EXIT_BAD_INPUT
        return run_plan(name, plan, args)


def run_plan(name: str, plan, args: argparse.Namespace) -> int:
    """A CLI verb's plan run: its lab checks, its generator, the repetitions, the summary printed."""
    try:  # what only the lab can tell (Procedure.check_lab), before any run directory or generator
        check_on_lab([plan])
        # the generator before anything is printed or configured: it may be missing (TRex client)
        generator = plan.create_generator()
    except (InvalidParameter, LabError, GeneratorError, ValueError, OSError) as exc:
        print(f"trexlab {name}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in plan.lab.warnings() if plan.lab else ():
        print(f"trexlab {name}: warning: {warning}", file=sys.stderr)
    if plan.tester_ceiling:
        print(f"trexlab {name}: {ceiling_line(plan.tester_ceiling)}", file=sys.stderr)
    if plan.rate_source:  # taken from stored results: said here, before the run, once (execute does not say it)
        print(f"trexlab {name}: {measuring_line(plan.rate_source)}", file=sys.stderr)
    display = ProgressDisplay()
    news: list[str] = []
    try:
        summary = execute(plan, generator, progress=display, say=news.append)
    except KeyboardInterrupt:
        display.close()
        print(f"trexlab {name}: interrupted; finished repetitions are kept in {plan.output}; "
              "run the same command with --results to resume", file=sys.stderr)
        return 130
    # Found mid-run: what the run measured refuses (RFC 6349's BDP window), or the tester, TRex server or curl fail.
    except (InvalidParameter, LabError, GeneratorError, DownloadError) as exc:
        display.close()
        print(f"trexlab {name}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        generator.close()
    display.close()
    for line in news:  # e.g. what the self-test recorded
        print(f"trexlab {name}: {line}", file=sys.stderr)
    # This run's repetitions, 1..n as summary.json counts them: by name, rep-1000 sorts before rep-101, and a
    # directory may hold more repetitions than this run took (an earlier --repeat 5, now 3).
    results = [repetition_dir(plan.output, k) / "result.json"
               for k in range(1, read_json(plan.output / SUMMARY)["repetitions"] + 1)]
    for rep in results:  # latency and PDV near the tester's own floor
        for warning in (read_json(rep).get("tester_latency_floor") or {}).get("warnings", []):
            print(f"trexlab {name}: warning: {rep.parent.name}: {warning}", file=sys.stderr)
    if args.json:
        print(dumps({"results": str(plan.output), "summary": summary, "result": read_json(results[-1])}, indent=2))
    else:
        print_summary(name, summary, plan.output, sys.stdout)
        if procedure(name).TAKES_RATE:
            print_delays(read_json(results[-1]), sys.stdout)
        if curve_lines := getattr(procedure(name), "curve_lines", None):  # frame loss rate: RFC 2544's curve
            last = read_json(results[-1])
            print(f"last repetition ({last['method']}):", file=sys.stdout)
            for line in curve_lines(last):
                print(f"  {line}", file=sys.stdout)
    return 0


def print_delays(result: dict, stream) -> None:
    """The last repetition's delays per direction, lost tags shown as such ('> 10 ms (lost tags)'), never as inf."""
    print(f"last repetition ({result['method']}):", file=stream)
    for direction, d in result["directions"].items():
        figures = ", ".join(f"{key} {_delay(d[key])}" for key in ("typical", "worst_case", "pdv", "min", "p99_9", "max")
                            if key in d)
        lost = d.get("tags_lost_or_late", d.get("lost_or_late", 0))
        measured = d.get("tags_sent", d.get("samples", 0) + lost)
        print(f"  {direction}: {figures}; {lost} of {measured} measured frames lost or late", file=stream)


def _delay(value) -> str:
    return value if isinstance(value, str) else "-" if value is None else f"{value * 1e6:.1f} us"


if __name__ == "__main__":
    sys.exit(main())
