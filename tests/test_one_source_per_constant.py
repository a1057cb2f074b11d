"""One source per constant: a bound that has a name (MAX_NETWORKS, MAX_FRAME_SIZE, MAX_TRIAL_DURATION, ...) is
written nowhere else as its number. A copy agrees today and drifts tomorrow: 256 beside addressing.MAX_NETWORKS in
TrialSpec's check and the schema, 9018 in media and selftest beside trial.MAX_FRAME_SIZE, 1000 in the adaptive
repetitions beside REPETITIONS_MAX."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import trexlab
from trexlab import addressing, params, reference_dut, rolevalues, trial
from trexlab.procedures import http_download, latency, mlrsearch
from trexlab.spec import schema
from trexlab.tcp import iperf

#: The named bounds: a number equal to one of them where a bound is written (a check_range limit, a schema
#: minimum or maximum, a comparison, an 'a..b' in a message) is a copy of it, or a different bound that wants a
#: name of its own.
NAMED = {"addressing.MAX_NETWORKS": addressing.MAX_NETWORKS, "trial.MIN_FRAME_SIZE": trial.MIN_FRAME_SIZE,
         "trial.MAX_FRAME_SIZE": trial.MAX_FRAME_SIZE, "trial.MAX_TRIAL_DURATION": trial.MAX_TRIAL_DURATION,
         "trial.MAX_FRAME_TIMEOUT": trial.MAX_FRAME_TIMEOUT, "trial.MAX_RECEIVE_TAIL": trial.MAX_RECEIVE_TAIL,
         "trial.MAX_OFFERED_LOAD": trial.MAX_OFFERED_LOAD, "schema.REPETITIONS_MAX": schema.REPETITIONS_MAX,
         "schema.SWEEP_POINTS_MAX": schema.SWEEP_POINTS_MAX, "schema.LIST_ITEMS_MAX": schema.LIST_ITEMS_MAX,
         "iperf.MAX_STREAMS": iperf.MAX_STREAMS, "rolevalues.HTTP_FILE_MIB_MAX": rolevalues.HTTP_FILE_MIB_MAX,
         "reference_dut.MAX_RATE_FPS": reference_dut.MAX_RATE_FPS,
         "latency.MAX_TAGGED_FRAMES": latency.MAX_TAGGED_FRAMES, "mlrsearch.MAX_SEARCH_TIME": mlrsearch.MAX_SEARCH_TIME,
         "mlrsearch.MAX_FINAL_TRIALS": mlrsearch.MAX_FINAL_TRIALS,
         "iperf.MAX_TEST_DURATION": iperf.MAX_TEST_DURATION, "iperf.MAX_OMIT": iperf.MAX_OMIT,
         "iperf.MAX_DSCP": iperf.MAX_DSCP, "iperf.MAX_INTERVAL": iperf.MAX_INTERVAL,
         "http_download.MAX_TIMEOUT": http_download.MAX_TIMEOUT,
         "latency.MAX_RFC2544_TRIALS": latency.MAX_RFC2544_TRIALS, "params.MAX_PORT": params.MAX_PORT}
_BOUND_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}


def _numbers(node: ast.AST) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) in (int, float)]


def _bounds(tree: ast.AST) -> list[tuple[int, float | int | str]]:
    """(line, number) of each number written where a bound is."""
    found: list[ast.Constant] = []
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if getattr(node.func, "id", getattr(node.func, "attr", "")) == "check_range":
                found += [n for arg in node.args[2:] for n in _numbers(arg)]
            found += [n for k in node.keywords if k.arg in (*_BOUND_KEYS, "low", "high") for n in _numbers(k.value)]
        elif isinstance(node, ast.Dict):
            found += [n for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value in _BOUND_KEYS for n in _numbers(v)]
        elif isinstance(node, ast.Compare) and not all(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
            found += [c for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)
                      and type(c.value) in (int, float)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts += [(node.lineno, int(n)) for m in re.finditer(r"\b(\d+)\.\.(\d+)\b", node.value) for n in m.groups()]
    return [(n.lineno, n.value) for n in found] + texts


def test_no_named_bound_is_written_again_as_its_number():
    values = {}
    for name, value in NAMED.items():
        values.setdefault(value, []).append(name)
    copies = []
    package = Path(trexlab.__file__).parent
    for path in sorted(package.rglob("*.py")):
        for line, value in _bounds(ast.parse(path.read_text(), str(path))):
            if value in values and value not in (0, 1):
                copies.append(f"{path.relative_to(package.parent)}:{line}: {value!r} ({' or '.join(values[value])})")
    assert not copies, "a named bound written as its number:\n" + "\n".join(sorted(set(copies)))


def test_no_constant_is_defined_again_in_another_module():
    """DEFAULT_REPETITIONS = 20 stood in trexlab.spec.experiment, plan.adaptive and plan.repetition, beside the
    spec's own default (schema.ExperimentSpec.repetitions): one of them changed, and a spec without repetitions
    would run one count, print another and show a third in the schema. Two choices that happen to share a value
    take names that say which each is (iperf.IPERF3_GRACE and software.SWTESTER_GRACE; the stop rule's
    schema.MEDIAN_CI_CONFIDENCE and stats.SHIFT_CONFIDENCE), so one name is one choice: no exceptions."""
    package = Path(trexlab.__file__).parent
    defined: dict[tuple[str, object], list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.isupper() and isinstance(node.value, ast.Constant)
                    and type(node.value.value) in (int, float)):  # a number (a procedure's TAKES_RATE is its own)
                defined.setdefault((node.targets[0].id, node.value.value), []).append(
                    f"{path.relative_to(package.parent)}:{node.lineno}")
    again = [f"{name} = {value!r}: {', '.join(places)}" for (name, value), places in defined.items()
             if len(places) > 1]
    assert not again, "a constant defined in more than one module:\n" + "\n".join(again)


def test_the_standard_s_trial_duration_and_receive_tail_are_defaults_by_name():
    """RFC 2544's 60 s trials and 2 s receive tail are named once (trial.RFC2544_TRIAL_DURATION,
    RFC2544_RECEIVE_TAIL: the deviations of a shorter run are measured against them); a parameter whose default
    is the standard's takes it by that name, not as a 60.0 or 2.0 of its own."""
    standard = {"trial_duration": trial.RFC2544_TRIAL_DURATION, "receive_tail": trial.RFC2544_RECEIVE_TAIL}
    package = Path(trexlab.__file__).parent
    copies = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and node.target.id in standard and node.value is not None):
                continue
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                value = next((k.value for k in value.keywords if k.arg == "default"), value)
            if isinstance(value, ast.Constant) and value.value == standard[node.target.id]:
                copies.append(f"{path.relative_to(package.parent)}:{node.lineno}: {node.target.id} = {value.value!r}")
    assert not copies, "the standard's value written as a number:\n" + "\n".join(copies)


def test_no_role_writes_a_named_bound_as_its_number():
    """The roles' checks are Jinja, out of the scan above: roles/tcp_endpoints compared with 65535 and 1048576 of
    its own (params.MAX_PORT, rolevalues.HTTP_FILE_MIB_MAX) and said '1..65535' in its message, three roles 256
    (addressing.MAX_NETWORKS). A number equal to a named bound after a comparison or in an 'a..b' of a role's tasks
    or templates is a copy. (Argument specs are documentation that ansible-doc shows as written: out of scope.)"""
    values = {value: name for name, value in NAMED.items() if value not in (0, 1)}
    roles = Path(trexlab.__file__).parent.parent / "ansible_collections" / "trexlab" / "lab" / "roles"
    bound = re.compile(r"(?:(?<=\s)[<>]=?\s*|\b\d+\.\.)(\d+(?:\.\d+)?)\b|\b(\d+(?:\.\d+)?)\.\.\d")
    copies = []
    for path in sorted(p for p in roles.rglob("*") if p.suffix in (".yml", ".j2") and p.is_file()
                       and p.parent.name in ("tasks", "templates", "handlers")):
        for number, line in ((n, i) for i, text in enumerate(path.read_text().splitlines(), 1)
                             for m in bound.finditer(text) for n in m.groups() if n):
            if float(number) in values:
                copies.append(f"{path.relative_to(roles)}:{line}: {number} ({values[float(number)]})")
    assert not copies, "a named bound written as its number in a role:\n" + "\n".join(copies)


def test_no_text_restates_a_named_confidence_level():
    """plan/adaptive.py's and results/compare.py's module docstrings said "95 %" (and "5 %", its tail) where the
    level is a name (schema.MEDIAN_CI_CONFIDENCE, stats.SHIFT_CONFIDENCE): a changed level would leave them stating
    the old one. No string of the package (docstring, message, help) writes a named level as a number (95 %, 95%,
    0.95); a module that uses the name does not write its tail (5 %, 0.05) either (elsewhere 5 % may mean another
    thing: a noise, a share of a test)."""
    package = Path(trexlab.__file__).parent
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(package.rglob("*.py"))}
    levels = {node.targets[0].id: node.value.value for tree in trees.values() for node in tree.body
              if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id.endswith("CONFIDENCE") and isinstance(node.value, ast.Constant)}
    assert set(levels) >= {"MEDIAN_CI_CONFIDENCE", "SHIFT_CONFIDENCE"}  # the scan finds the levels it is about

    def written(value: float) -> re.Pattern:
        return re.compile(rf"(?<![\d.])(?:{re.escape(f'{value * 100:g}')}\s?%|{re.escape(repr(value))}(?!\d))")

    names: dict[float, list[str]] = {}
    for name, value in levels.items():
        names.setdefault(value, []).append(name)
    copies = []
    for path, tree in trees.items():
        used = {value for name, value in levels.items() if name in path.read_text()}
        forms = [(" or ".join(these), written(value)) for value, these in names.items()]
        forms += [(f"1 - {' or '.join(names[value])}", written(round(1 - value, 12))) for value in used]
        copies += [f"{path.relative_to(package.parent)}:{node.lineno}: {m.group()!r} ({name})"
                   for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   for name, form in forms for m in form.finditer(node.value)]
    assert not copies, "a named confidence level written as its number:\n" + "\n".join(sorted(set(copies)))


def test_every_rate_a_person_reads_whole_is_written_with_stats_whole():
    """A rate written whole in a line a person reads (a ceiling, a bound, a note, progress) was written two ways:
    '436000 fps' (.0f) and '436,000 fps' (the report's and the tables'). One figure must read the same in the
    terminal and in the report: stats.WHOLE is the one form. A refusal (InvalidParameter) keeps a number as a spec
    would write it (YAML reads 1,000 as text), and so do deviations, which the method line lists comma-separated."""
    package = Path(trexlab.__file__).parent
    other = re.compile(r"\{[^{}]*:(?:,?\.0f)\}\s*fps")
    copies = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        refusals = {line for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", "")) == "InvalidParameter"
                    for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
        copies += [f"{path.relative_to(package.parent)}:{number}: {line.strip()}"
                   for number, line in enumerate(text.splitlines(), 1) if other.search(line) and number not in refusals]
    assert not copies, "a rate written whole without stats.WHOLE:\n" + "\n".join(copies)


def _root_copies(tree: ast.AST, root: str) -> list[tuple[int, str]]:
    """(line, text) of each place the default results root is written as text where a default or a path is made:
    a parameter's default, a default= keyword (argparse), a Path(...) argument, a help= text saying 'default
    <root>/'. (Docstrings and examples may name results/ as they show it.)"""
    def written(node) -> bool:
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and (node.value == root or node.value.startswith(f"{root}/")))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            found += [d for d in (*node.defaults, *node.kw_defaults) if d is not None and written(d)]
        elif isinstance(node, ast.Call):
            found += [k.value for k in node.keywords if k.arg == "default" and written(k.value)]
            if getattr(node.func, "id", getattr(node.func, "attr", "")) == "Path":
                found += [a for a in node.args if written(a)]
            found += [n for k in node.keywords if k.arg == "help" for n in ast.walk(k.value)
                      if isinstance(n, ast.Constant) and isinstance(n.value, str) and f"default {root}/" in n.value]
    return [(n.lineno, n.value) for n in found]


def _definition_line(package: Path) -> int:
    """The line of RESULTS_ROOT = ... in runplan.py."""
    text = (package / "plan" / "runplan.py").read_text().splitlines()
    return next(k for k, line in enumerate(text, 1) if line.startswith("RESULTS_ROOT = "))


def test_the_default_results_root_is_written_once():
    """The default results root is runplan.RESULTS_ROOT: the campaign, report and compare commands' --results,
    plan_campaign's, Campaign's and compare.resolve's defaults and the tester ceilings' file wrote "results" of
    their own, so a changed root would have moved the CLI's runs and not the campaigns (nor where --rate-from
    EXPERIMENT/ID looks). The only Path("results") is the constant's own."""
    from trexlab.plan import runplan

    root = str(runplan.RESULTS_ROOT)
    package = Path(trexlab.__file__).parent
    copies = [f"{path.relative_to(package.parent)}:{line}: {text!r}" for path in sorted(package.rglob("*.py"))
              for line, text in _root_copies(ast.parse(path.read_text(), str(path)), root)]
    definition = f"trexlab/plan/runplan.py:{_definition_line(package)}: {root!r}"
    assert definition in copies, "the scan finds the constant's own definition"
    copies.remove(definition)
    assert not copies, "the default results root written again:\n" + "\n".join(copies)


def test_the_scripts_default_results_root_is_the_cli_s():
    """make run, report and demo pass --results explicitly, from RESULTS, by default a root of their own (shell):
    it must be the one the CLI's verbs and --rate-from EXPERIMENT/ID use (runplan.RESULTS_ROOT), and the ceilings
    file they default to the self-test's name in it."""
    from trexlab.plan import runplan
    from trexlab.procedures import selftest

    scripts = Path(trexlab.__file__).parent.parent / "scripts"
    defaults = {path.name: re.findall(r"\$\{RESULTS:-([^}]*)\}", path.read_text()) for path in scripts.glob("*.sh")}
    passing = {name: found for name, found in defaults.items() if found}
    assert {"run-experiment.sh", "report.sh", "demo.sh"} <= set(passing), defaults
    assert all(found == [str(runplan.RESULTS_ROOT)] for found in passing.values()), passing
    ceilings = re.findall(r"\$\{CEILINGS:-([^}]*)\}", (scripts / "run-experiment.sh").read_text())
    assert ceilings == [f"$results/{selftest.CEILINGS_FILE.relative_to(runplan.RESULTS_ROOT)}"], ceilings
