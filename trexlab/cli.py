"""`trexlab`: run a benchmarking procedure on a generator, repeated, into the results store.

    trexlab throughput --generator sim --generator-opt capacity=1e6 --max-rate 2e6
    trexlab latency --generator software --rate 100000 --repeat 20
    trexlab mlrsearch --config search.yml --json
    trexlab campaign experiments/demo --scale ci      # a declared, repeated, resumable campaign
    trexlab report demo                               # its analysis notebook as HTML

Procedure flags come from the procedure's Params dataclass, so each is
declared once. Everything is validated before any traffic is sent: a bad value
gives one line on stderr naming the parameter and what is allowed, exit
status 2, and no result directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import types
import typing
from pathlib import Path

import yaml

from trexlab import __version__
from trexlab.generators import GENERATORS, create_generator
from trexlab.lab import LabError, load_lab
from trexlab.params import InvalidParameter
from trexlab.procedures import PROCEDURES, selftest
from trexlab.procedures.http_download import DownloadError
from trexlab.progress import ProgressDisplay
from trexlab.provenance import provenance
from trexlab.rate_from import TAKES_RATE, median_throughput
from trexlab.repetition import DEFAULT_REPETITIONS, SUMMARY, procedure_module, repeat, summary_lines
from trexlab.store import dumps, read_json
from trexlab.trial import GeneratorError, TrialSpec, format_seconds

EXIT_BAD_INPUT = 2
TRAFFIC_FIELDS = ("frame_size", "ip_version", "directions", "port_mode", "destination_networks", "receive_tail")


class BadInput(Exception):
    """One line for the user; nothing has been changed."""


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
        shown = "none" if default is None else default
        if kind is bool:
            group.add_argument(flag, dest=f"param_{f.name}", action=argparse.BooleanOptionalAction, default=None,
                               help=f"(default {shown})")
        elif kind in (float, int, str):
            group.add_argument(flag, dest=f"param_{f.name}", type=kind, default=None, help=f"(default {shown})")
        elif typing.get_origin(kind) is tuple or kind is tuple:
            if default and all(isinstance(v, int) for v in default):
                group.add_argument(flag, dest=f"param_{f.name}", type=_int_list, default=None,
                                   help=f"comma-separated (default {','.join(map(str, default))})")
            elif default and all(isinstance(v, str) for v in default):
                group.add_argument(flag, dest=f"param_{f.name}", type=_str_list, default=None,
                                   help=f"comma-separated (default {','.join(default)})")


def add_ceilings_flag(parser) -> None:
    """--ceilings, the same for procedures and campaigns."""
    parser.add_argument("--ceilings", metavar="FILE", default=str(selftest.CEILINGS_FILE),
                        help="tester ceilings: a self-test on a loopback lab records them here, the other "
                             "procedures compare their results against the matching one (same tester, "
                             "generator, frame size, directions) unless a tester_ceiling is given "
                             "(default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trexlab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"trexlab {__version__}")
    subparsers = parser.add_subparsers(dest="procedure", required=True, metavar="COMMAND",
                                       help="a procedure (one run, repeated), or campaign / report")
    for name in PROCEDURES:
        module = procedure_module(name)
        sub = subparsers.add_parser(name, help=(module.__doc__ or "").split("\n")[0],
                                    description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        common = sub.add_argument_group("run")
        common.add_argument("--generator", choices=GENERATORS, help="traffic generator (default software)")
        common.add_argument("--generator-opt", action="append", default=[], metavar="KEY=VALUE",
                            help="generator option, repeatable (e.g. capacity=1e6 for sim)")
        common.add_argument("--inventory", help="generated inventory of the lab (software, trex generators)")
        common.add_argument("--config", help="YAML file: generator, generator_options, traffic, params, repeat")
        common.add_argument("--repeat", type=int, help=f"repetitions (default 1; campaigns use {DEFAULT_REPETITIONS})")
        common.add_argument("--results", help="result directory (default results/cli/<procedure>-<time>)")
        common.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
        add_ceilings_flag(common)
        traffic = sub.add_argument_group("traffic")
        traffic.add_argument("--frame-size", type=_per_port("frame-size"), help="bytes, or 'port0,port1' (SIIT)")
        traffic.add_argument("--ip-version", type=_per_port("ip-version"), help="4, 6, or 'port0,port1'")
        traffic.add_argument("--directions", choices=("bidirectional", "forward", "reverse"))
        traffic.add_argument("--port-mode", choices=("fixed", "rfc4814"))
        traffic.add_argument("--destination-networks", type=int, help="1..256")
        traffic.add_argument("--receive-tail", type=float, help="s of receiving after sending stops (default 2)")
        add_params_flags(sub, module.Params)
        if name in TAKES_RATE:
            sub.add_argument("--rate-from", metavar="DIR",
                             help="measure at the median throughput_fps of the throughput runs in DIR (RFC 8219: "
                                  "at the throughput rate); instead of --rate")
    add_campaign_parser(subparsers)
    add_report_parser(subparsers)
    return parser


def _config(path: str | None) -> dict:
    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise BadInput(f"--config {path}: {exc.strerror}") from None
    except yaml.YAMLError:
        raise BadInput(f"--config {path}: not valid YAML") from None
    allowed = {"generator", "generator_options", "traffic", "params", "repeat", "inventory"}
    if not isinstance(data, dict) or set(data) - allowed:
        extra = sorted(set(data) - allowed) if isinstance(data, dict) else [type(data).__name__]
        raise BadInput(f"--config {path}: unknown key {extra[0]}; allowed {', '.join(sorted(allowed))}")
    return data


def _generator_options(config: dict, pairs: list[str]) -> dict:
    options = dict(config.get("generator_options") or {})
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--generator-opt {pair!r}: allowed KEY=VALUE")
        options[key] = value
    return options


def prepare(args: argparse.Namespace) -> dict:
    """Everything a run needs, validated; raises BadInput or InvalidParameter before any traffic."""
    config = _config(args.config)
    module = procedure_module(args.procedure)
    traffic = dict(config.get("traffic") or {})
    for name in TRAFFIC_FIELDS:
        if getattr(args, name) is not None:
            traffic[name] = getattr(args, name)
    unknown = sorted(set(traffic) - set(TRAFFIC_FIELDS))
    if unknown:
        raise BadInput(f"traffic.{unknown[0]}: unknown; allowed {', '.join(TRAFFIC_FIELDS)}")
    template = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, **traffic})
    params = dict(config.get("params") or {})
    for f in dataclasses.fields(module.Params):
        value = getattr(args, f"param_{f.name}", None)
        if value is not None:
            params[f.name] = value
    if "goals" in params:
        params["goals"] = tuple(params["goals"])
    rate_source = None
    if getattr(args, "rate_from", None):
        if params.get("rate") is not None:
            raise BadInput("--rate and --rate-from: give one of them")
        params["rate"], rate_source = median_throughput(args.rate_from)
    try:
        procedure_params = module.Params(**params)
    except TypeError as exc:
        raise BadInput(f"params: {str(exc).split('(')[-1].rstrip(')')}") from None
    repetitions = args.repeat if args.repeat is not None else int(config.get("repeat", 1))
    if not 1 <= repetitions <= 1000:
        raise InvalidParameter("repeat", repetitions, "1..1000")
    generator_name = args.generator or config.get("generator") or "software"
    options = _generator_options(config, args.generator_opt)
    lab = None
    if generator_name != "sim":
        lab = load_lab(args.inventory or config.get("inventory"))
        options.setdefault("lab", lab)
    generator = create_generator(generator_name, **options)
    if hasattr(module, "check"):  # what a procedure can check before any traffic (e.g. the lab's TCP endpoints)
        module.check(generator, procedure_params, template)
    # The tester's own ceiling, from a self-test on a loopback lab, for the procedures that compare against it.
    procedure_params, ceiling = selftest.ceiling_for(procedure_params, template, generator_name, lab, args.ceilings)
    results = Path(args.results or f"results/cli/{args.procedure}-{time.strftime('%Y%m%d-%H%M%S')}")
    return {"template": template, "params": procedure_params, "repetitions": repetitions,
            "generator": generator, "generator_name": generator_name, "lab": lab, "results": results,
            "tester_ceiling": ceiling, "rate_source": rate_source}


def ceiling_line(ceiling: dict) -> str:
    """What a run compares its result against, in one line."""
    if ceiling["ceiling_fps"] is None:
        key = ceiling["looked_up"]
        return (f"no tester ceiling ({ceiling['source']} for {key['host']}, {key['generator']}, "
                f"{key['frame_size']} B, {key['directions']}): a result at the tester's own limit will not be "
                "flagged; run 'trexlab selftest' on a loopback lab to record one")
    floor = ceiling.get("latency_floor")
    floor_text = "" if not floor else (
        f"; tester latency floor median {format_seconds(floor['median_s'])}, 99.9th percentile "
        f"{format_seconds(floor['p99_9_s'] or math.inf)} at {floor['rate_fps']:.0f} fps")
    if "selftest_run" not in ceiling:
        return (f"comparing results against tester ceiling {ceiling['ceiling_fps']:.0f} fps ({ceiling['source']})"
                + floor_text)
    return (f"comparing results against tester ceiling {ceiling['ceiling_fps']:.0f} fps ({ceiling['frame_size']} B, "
            f"{ceiling['directions']}, self-test {ceiling['selftest_run']} of {ceiling['measured']})" + floor_text)


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
    parser.add_argument("--results", default="results", help="results root (default results/)")
    parser.add_argument("--inventory", help="generated inventory of the lab")
    add_ceilings_flag(parser)


def campaign_command(args: argparse.Namespace) -> int:
    from trexlab.campaign import Campaign, CampaignError, PlaybookError
    from trexlab.experiment import InvalidExperiment, load

    try:
        experiment = load(args.experiment).scaled(args.scale)
        campaign = Campaign(experiment, args.results, args.campaign, args.inventory,
                            progress=lambda line: print(line, file=sys.stderr, flush=True), ceilings=args.ceilings)
        outcome = campaign.run()
    except (InvalidExperiment, CampaignError, PlaybookError, LabError, InvalidParameter) as exc:
        print(f"trexlab campaign: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("trexlab campaign: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    print(dumps(outcome))
    return 0 if not outcome["failed"] else 1


def add_report_parser(subparsers) -> None:
    """trexlab report EXPERIMENT [--campaign DIR] [--results DIR] [--notebook FILE]"""
    parser = subparsers.add_parser("report", help="execute an experiment's analysis notebook, export HTML",
                                   description="Execute the experiment's analysis notebook, export HTML.")
    parser.set_defaults(command=report_command)
    parser.add_argument("experiment", help="experiment name (results/<experiment>/...)")
    parser.add_argument("--campaign", help="campaign directory (default: the experiment's latest)")
    parser.add_argument("--results", default="results", help="results root (default results/)")
    parser.add_argument("--notebook", help="notebook to execute (default analysis/<experiment>.ipynb or report)")


def report_command(args: argparse.Namespace) -> int:
    from trexlab.report import ReportError, latest_campaign, render

    try:
        campaign = Path(args.campaign) if args.campaign else latest_campaign(args.results, args.experiment)
        html = render(campaign, args.notebook)
    except ReportError as exc:
        print(f"trexlab report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(html)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if hasattr(args, "command"):  # campaign, report
        return args.command(args)
    try:
        run = prepare(args)
    except (BadInput, InvalidParameter, LabError, GeneratorError, ValueError) as exc:
        print(f"trexlab {args.procedure}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    generator, display = run["generator"], ProgressDisplay()
    for warning in run["lab"].warnings() if run["lab"] else ():
        print(f"trexlab {args.procedure}: warning: {warning}", file=sys.stderr)
    if run["tester_ceiling"]:
        print(f"trexlab {args.procedure}: {ceiling_line(run['tester_ceiling'])}", file=sys.stderr)
    facts = provenance(generator=generator.describe(), params=dataclasses.asdict(run["params"]),
                       traffic=run["template"].to_dict(), lab=run["lab"].describe() if run["lab"] else None,
                       argv=argv, tester_ceiling=run["tester_ceiling"],
                       **({"rate_source": run["rate_source"]} if run["rate_source"] else {}))
    if run["rate_source"]:
        source = run["rate_source"]
        print(f"trexlab {args.procedure}: measuring at {source['rate']:.0f} fps, the {source['statistic']} of "
              f"{source['figure']} in {source['from']}", file=sys.stderr)
    try:
        summary = repeat(args.procedure, generator, run["template"], run["params"], run["repetitions"],
                         run["results"], facts, progress=display)
    except KeyboardInterrupt:
        display.close()
        print(f"trexlab {args.procedure}: interrupted; finished repetitions are kept in {run['results']}; "
              "run the same command with --results to resume", file=sys.stderr)
        return 130
    # Found mid-run: before the traffic it concerns (RFC 6349 windows), or the tester, TRex server or curl failing.
    except (InvalidParameter, LabError, GeneratorError, DownloadError) as exc:
        display.close()
        print(f"trexlab {args.procedure}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        generator.close()
    display.close()
    if args.procedure == "selftest":
        line = selftest.record_selftest(run["results"], run["repetitions"], run["generator_name"], run["lab"],
                                       run["template"], args.ceilings)
        print(f"trexlab selftest: {line}", file=sys.stderr)
    for rep in sorted(run["results"].glob("rep-*/result.json")):  # latency and PDV near the tester's own floor
        for warning in (read_json(rep).get("tester_latency_floor") or {}).get("warnings", []):
            print(f"trexlab {args.procedure}: warning: {rep.parent.name}: {warning}", file=sys.stderr)
    if args.json:
        latest = sorted(run["results"].glob("rep-*/result.json"))[-1]
        print(dumps({"results": str(run["results"]), "summary": summary, "result": read_json(latest)}, indent=2))
    else:
        print_summary(args.procedure, summary, run["results"], sys.stdout)
        if args.procedure in TAKES_RATE:
            print_delays(read_json(sorted(run["results"].glob("rep-*/result.json"))[-1]), sys.stdout)
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
