"""README.md, docs/ and the READMEs of the experiments and the collection against the code they describe: a new user
reads these first, and after many sessions of changes they had drifted where no test read them (a section the README
sent its reader to had been renamed; the collection's install line was one ansible-galaxy refuses; the playbooks a
campaign applies left one out). Every check reads the docs' text and the code's own declarations (the Makefile,
the CLI's parser, the spec's JSON Schema and validation, the package, experiments/, git's ignore rules), never a
list of its own, so a rename on either side fails here. Each checker also runs on a made-up text it must fault,
so that none of them passes by finding nothing."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import re
import shlex
import subprocess
from pathlib import Path

import yaml

from trexlab.cli import build_parser
from trexlab.results import store
from trexlab.spec import experiment, safeyaml
from trexlab.spec.schema import experiment_schema

REPO = Path(__file__).resolve().parent.parent
COLLECTION = REPO / "ansible_collections" / "trexlab" / "lab"
#: What a user reads: the README, docs/, and the READMEs the README sends them to (experiments', the collection's and
#: its roles'). terraform's READMEs have their own test (tests/terraform/test_terraform_readmes.py).
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "experiments").glob("*/README.md")),
        COLLECTION / "README.md", *sorted((COLLECTION / "roles").glob("*/README.md"))]
#: Spec keys the docs write dotted (`traffic.restabilize_wait`); `lab.` is left out, as `lab.warnings` and
#: `lab.nodes` in the docs are provenance's, not the spec's.
SPEC_KEYS = ("traffic", "dut", "endpoints", "generator_options", "procedure", "repetitions", "sweep", "scale")


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def in_docs(check) -> list[str]:
    """What check(text) finds in each document, each naming the document."""
    return [f"{rel(doc)}: {found}" for doc in DOCS for found in check(doc.read_text())]


#: Fences whose lines are commands a user types; other fenced blocks are YAML, HCL or diagrams.
SHELL_FENCES = ("```sh", "```bash", "```console")


def block_lines(text: str) -> list[str]:
    """The lines of shell code blocks (fenced as sh, or indented), continuation lines joined, comments cut."""
    lines, fence = [], None
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("```"):
            fence = None if fence else line.strip()
        elif fence in SHELL_FENCES or not fence and line.startswith("    ") and not line.lstrip().startswith(
                ("*", "-", "|")):
            lines.append(line.split(" #")[0].strip())
    return lines


def code_spans(text: str) -> list[str]:
    """The text of every inline code span outside code blocks (one may run over a line break), and the lines of the
    shell code blocks."""
    prose, fence = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            fence = None if fence else line.strip()
        elif not fence and not line.startswith("    "):
            prose.append(line)
    return block_lines(text) + re.findall(r"`([^`]+)`", " ".join(prose))


# --- Paths -------------------------------------------------------------------------------------------------------

def tracked_top_directories() -> set[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {line.split("/")[0] for line in listed.splitlines() if "/" in line}


def built(path: str) -> bool:
    """A build product: a path git ignores (swtester/ring_check), or one setup.py writes into the built package
    (trexlab/data, which its docstring names)."""
    return (subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO).returncode == 0
            or path in (REPO / "setup.py").read_text())


def missing_paths(text: str, tops: set[str]) -> list[str]:
    """Paths below the repository's tracked top-level directories that do not exist. `roles/<role>` is the
    collection's role (the docs' short name for ansible_collections/trexlab/lab/roles/<role>)."""
    found = []
    pattern = re.compile(r"(?<![\w/.~$<-])((?:" + "|".join(map(re.escape, sorted(tops | {"roles"}))) +
                         r")/[\w./-]*)")
    for match in pattern.finditer(text):
        path = match.group(1).rstrip(".-/")
        if re.search(r"[<{*]|\.\.\.", text[match.start():match.end() + 1]):
            continue
        where = COLLECTION / path if path.startswith("roles/") else REPO / path
        if not where.exists() and not built(str(where.relative_to(REPO))):
            found.append(path)
    return found


def test_paths_named_in_the_docs_exist():
    tops = tracked_top_directories()
    assert in_docs(lambda text: missing_paths(text, tops)) == []


def broken_links(doc: Path, text: str) -> list[str]:
    """Markdown links to files ([text](target)) whose target, relative to the document, is not there."""
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    return [t for t in targets if t and not (doc.parent / t).exists()]


def test_links_in_the_docs_lead_to_a_file():
    assert [f"{rel(doc)}: {t}" for doc in DOCS for t in broken_links(doc, doc.read_text())] == []
    assert broken_links(COLLECTION / "README.md", "[trexlab](../../../README.md), [x](../gone.md#part), "
                        "[web](https://example.org/x)") == ["../gone.md"]


def test_the_path_check_faults_a_path_that_is_gone():
    tops = tracked_top_directories()
    text = "see trexlab/plan/runplan.py, roles/netem and roles/nonesuch, swtester/ring_check, trexlab/gone.py."
    assert missing_paths(text, tops) == ["roles/nonesuch", "trexlab/gone.py"]


def test_the_collection_tarball_the_docs_install_is_the_version_galaxy_yml_builds():
    version = yaml.safe_load((COLLECTION / "galaxy.yml").read_text())["version"]
    named = {(rel(doc), v) for doc in DOCS for v in re.findall(r"trexlab-lab-(\d[\w.]*?)\.tar\.gz", doc.read_text())}
    assert named and all(v == version for _, v in named), (version, named)


def galaxy_refusals(text: str) -> list[str]:
    """ansible-galaxy collection install lines it refuses: a requirements file and a collection together ("The
    positional collection_name arg and --requirements-file are mutually exclusive", ansible-core 2.19)."""
    wrong = []
    for line in block_lines(text):
        if line.startswith("ansible-galaxy collection install"):
            words = shlex.split(line)[3:]
            given = [w for i, w in enumerate(words) if not w.startswith("-") and
                     (i == 0 or words[i - 1] not in ("-r", "--requirements-file", "-p", "--collections-path"))]
            if given and ({"-r", "--requirements-file"} & set(words)):
                wrong.append(line)
    return wrong


def test_the_docs_install_the_collection_as_ansible_galaxy_accepts():
    assert in_docs(galaxy_refusals) == []
    assert galaxy_refusals("```sh\nansible-galaxy collection install -r requirements.yml x.tar.gz\n```\n")


# --- Cross-references --------------------------------------------------------------------------------------------

def sections(doc: Path) -> list[str]:
    """A document's headings and the bold leads of its paragraphs and bullets (**Comparing campaigns.**)."""
    text = doc.read_text()
    return ([h.strip("` ") for h in re.findall(r"^#+ (.+)$", text, re.M)] +
            [b.rstrip(".") for b in re.findall(r"^(?:\* )?\*\*([^*]+)\*\*", text, re.M)])


def broken_references(text: str) -> list[str]:
    """(docs/architecture.md, "X") or (README, "X") whose X begins no heading or bold lead of that document."""
    targets = {"docs/architecture.md": REPO / "docs" / "architecture.md", "README": REPO / "README.md",
               "README.md": REPO / "README.md"}
    wrong = []
    for name, title in re.findall(r"(docs/architecture\.md|README(?:\.md)?), \"([^\"]+)\"", text.replace("\n", " ")):
        if not any(s.startswith(title) for s in sections(targets[name])):
            wrong.append(f"{name}, \"{title}\"")
    return wrong


def test_cross_references_name_a_section():
    assert in_docs(broken_references) == []
    assert broken_references('(docs/architecture.md, "Comparing\ncampaigns"; README, "The VM lab"; '
                             'docs/architecture.md, "No such part")') == ['docs/architecture.md, "No such part"']


# --- Experiments ---------------------------------------------------------------------------------------------------

def readme_experiments(text: str) -> set[str]:
    table = text.split("## Shipped experiments", 1)[1].split("\n#", 1)[0]
    return {name for row in re.findall(r"^\| (`[^|]+) \|", table, re.M) for name in re.findall(r"`([^`]+)`", row)}


def test_the_readme_lists_every_shipped_experiment_and_no_other():
    shipped = {p.parent.name for p in (REPO / "experiments").glob("*/experiment.yml")}
    assert readme_experiments((REPO / "README.md").read_text()) == shipped


def test_the_readme_names_each_dut_block_and_the_playbook_a_campaign_applies_it_with():
    """The paragraph on what a campaign configures per sweep point names every dut: block's playbook
    (experiment.DUT_CONFIG, which the campaign applies)."""
    paragraph = (REPO / "README.md").read_text().split("A campaign configures the DUT for each sweep point", 1)[1]
    paragraph = paragraph.split("\n\n", 1)[0]
    assert [playbook for playbook, _ in experiment.DUT_CONFIG.values() if playbook not in paragraph] == []


def test_the_readme_names_every_experiment_that_needs_netem_as_one_ci_runs_on_the_vm_lab():
    """'What is not here yet' says which experiments CI runs on the VM lab: those that need sch_netem, each a
    campaign of tests/vm/test_vm_experiments.py (gaming-selective-delay, run there, was left out)."""
    said = (REPO / "README.md").read_text().split("On the local lab the experiments that need netem", 1)[1]
    said = said.split("\n\n", 1)[0]
    run = (REPO / "tests" / "vm" / "test_vm_experiments.py").read_text()
    netem = sorted(p.parent.name for p in (REPO / "experiments").glob("*/experiment.yml")
                   if "sch_netem" in (yaml.safe_load(p.read_text()).get("lab") or {}).get("requires", []))
    assert netem and [n for n in netem if f"`{n}`" not in said or f'campaign("{n}"' not in run] == []


def test_the_inventory_example_has_the_local_labs_own_names():
    """docs/architecture.md's inventory of a local lab gives each namespace and tester port the name
    terraform/labs/local gives it (it showed tlx-tester and tlx-t0 where the lab makes tl-local-tester and port0)."""
    local = (REPO / "terraform" / "labs" / "local" / "main.tf").read_text()
    prefix = re.search(r'prefix\s*=\s*"([^"$]*)\$\{var\.lab_name\}"', local).group(1)
    ports = re.search(r'port_name\s*=\s*\{\s*tester\s*=\s*\[("[^]]+)\]', local).group(1)
    shape = (REPO / "docs" / "architecture.md").read_text().split("## Inventory shape", 1)[1].split("\n## ", 1)[0]
    lab = re.search(r"trexlab_lab: \{name: (\w+),", shape).group(1)
    host, netns, names = None, {}, {}
    for line in shape.splitlines():
        if match := re.fullmatch(r" {8}(\w+):", line):
            host = match.group(1)
        elif match := re.search(r"trexlab_netns: (\S+)", line):
            netns[host] = match.group(1)
        elif host == "tester" and (match := re.search(r"- \{index: \d, name: ([^,]+),", line)):
            names.setdefault(host, []).append(match.group(1))
    assert netns and netns == {h: f"{prefix}{lab}-{h}" for h in netns}
    assert names["tester"] == re.findall(r'"([^"]+)"', ports)


def test_the_capabilities_table_is_each_generators_own():
    """docs/architecture.md's table of what each generator can do (yes / no per Capabilities field) says what its
    class declares (trexlab.generators.capabilities)."""
    from dataclasses import fields

    from trexlab.generators import GENERATORS, capabilities
    text = (REPO / "docs" / "architecture.md").read_text()
    header = re.search(r"^\| generator \|(.+)\|$", text, re.M)
    columns = re.findall(r"`(\w+)`", header.group(1))
    rows = {line.split("|")[1].split()[0]: [c.split()[0] for c in line.split("|")[2:-1]]
            for line in text[header.end():].split("\n\n", 1)[0].splitlines()[2:]}
    assert columns == [f.name for f in fields(capabilities("sim"))] and set(rows) == set(GENERATORS)
    assert {g: dict(zip(columns, cells, strict=True)) for g, cells in rows.items()} == {
        g: {c: "yes" if getattr(capabilities(g), c) else "no" for c in columns} for g in GENERATORS}


def test_the_address_plan_table_is_the_topology_modules():
    """docs/architecture.md's address plan (the contract to "change here first, then everywhere") and the
    addresses terraform/modules/topology gives every lab kind's ports, both ways."""
    tf = (REPO / "terraform" / "modules" / "topology" / "main.tf").read_text()
    given = set(re.findall(r'"(\w+/\d)" = "([^"]+)"', tf)) | {
        (f"{node}/0", address) for node, v4, v6 in
        re.findall(r'(client|server) = \{[^}]*ipv4 = "([^"]+)", ipv6 = "([^"]+)"', tf) for address in (v4, v6)}
    ports = {"tester port 0": [["tester/0"]], "DUT (first) left port": [["dut1/0"]],
             "DUT (last) right port": [["dut1/1", "dut2/1"]], "tester port 1": [["tester/1"]],
             "dual: dut1 right <-> dut2 left": [["dut1/1"], ["dut2/0"]], "client": [["client/0"]],
             "server": [["server/0"]]}
    table = (REPO / "docs" / "architecture.md").read_text().split("| link | IPv4 | IPv6 |", 1)[1].split("\n\n", 1)[0]
    documented, wrong = set(), []
    for link, *cells in re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", table, re.M):
        keys = next(v for k, v in ports.items() if link.startswith(k))
        for cell in cells:
            addresses = [a.strip() for a in cell.split("<->")]
            addresses = [a if not a.startswith("::") else addresses[0].split("::")[0] + a + "/" +
                         addresses[0].split("/")[1] for a in addresses]
            for candidates, address in zip(keys, addresses, strict=True):
                found = [(k, address) for k in candidates if (k, address) in given]
                documented.update(found)
                wrong += [] if found else [f"{link}: {address}"]
    assert wrong == [] and given - documented == set()


def dry_run_hours(experiment_name: str, tmp_path: Path) -> tuple[str, str]:
    """The worst and expected lab time a dry run prints for a shipped experiment, in hours as it prints them."""
    from trexlab import cli
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["campaign", experiment_name, "--dry-run", "--results", str(tmp_path),
                  "--inventory", str(tmp_path / "no-lab.yml")])
    match = re.search(r"lab time: worst case ([\d.]+) h, expected (not known|[\d.]+ h)", out.getvalue())
    assert match, out.getvalue()
    return match.group(1), match.group(2).removesuffix(" h")


def test_the_lab_times_the_readme_quotes_are_the_dry_runs(tmp_path):
    """The README quotes the dry run's lab time of shipped campaigns: an estimate that changes (its simulation, a
    spec) changes them, and the quote must follow."""
    text = (REPO / "README.md").read_text().replace("\n", " ")
    quoted = re.findall(r"`([a-z0-9-]+)`: ([\d.]+) h worst, ([\d.]+) h expected", text)
    each = re.findall(r"`([a-z0-9-]+)` and `([a-z0-9-]+)`, plan ([\d.]+) h each", text)
    assert quoted and each
    for name, worst, expected in quoted:
        assert dry_run_hours(name, tmp_path) == (worst, expected), name
    for *names, worst in each:
        assert [float(dry_run_hours(n, tmp_path)[0]) for n in names] == [float(worst)] * len(names), names


# --- make ---------------------------------------------------------------------------------------------------------

def make_commands(text: str) -> list[list[str]]:
    """The goals and VAR=value arguments of every make command in a code span or block."""
    commands = []
    for span in code_spans(text):
        for match in re.finditer(r"(?:^|[\s;&(])make((?: [a-z][a-z-]*)+)((?: [A-Z][A-Z0-9_]*=[^\s`;&#)]+)*)", span):
            commands.append(match.group(1).split() + match.group(2).split())
    return commands


def front_door(args: list[str]) -> subprocess.CompletedProcess:
    variables = set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", make_help())) | {"EXP", "LAB", "TOPOLOGY", "NETWORKS"}
    env = {k: v for k, v in os.environ.items() if k not in variables and not k.startswith("MAKE")}
    return subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          env={**env, "VENV": str(REPO / ".venv")}, timeout=60)


@functools.cache
def make_help() -> str:
    return subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_every_make_command_in_the_docs_is_one_the_front_door_takes():
    """Its goals are the Makefile's, its variables ones make help names, its values ones the front door's checks
    accept (make -n: the checks run, no recipe does)."""
    goals = set(re.findall(r"^  make ([a-z-]+)", make_help(), re.M))
    variables = set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", make_help()))
    wrong, commands = [], {}
    for doc in DOCS:
        for command in make_commands(doc.read_text()):
            commands.setdefault(tuple(command), rel(doc))
    for command, doc in commands.items():
        bad = [w for w in command if ("=" in w and w.split("=")[0] not in variables) or
               ("=" not in w and w not in goals)]
        if bad:
            wrong.append(f"{doc}: make {' '.join(command)}: {', '.join(bad)} unknown")
        elif (result := front_door(list(command))).returncode != 0:
            wrong.append(f"{doc}: make {' '.join(command)}: {result.stderr.strip()}")
    assert len(commands) > 20 and wrong == []


def test_the_make_check_faults_an_unknown_goal_or_variable():
    assert make_commands("`make lab-up LAB=vm TOPOLOGY=dual`, and\n```sh\nmake run EXP=demo SCALE=ci   # x\n```\n") == [
        ["run", "EXP=demo", "SCALE=ci"], ["lab-up", "LAB=vm", "TOPOLOGY=dual"]]
    assert front_door(["run", "EXP=no-such-experiment"]).returncode == 2


# --- Playbooks ---------------------------------------------------------------------------------------------------

def playbook_problems(text: str) -> list[str]:
    """ansible-playbook commands whose playbook is not there, or whose -e variable neither a role the playbook
    applies declares (its meta/argument_specs.yml) nor the playbook itself reads: Ansible would take it silently."""
    wrong = []
    for line in block_lines(text):
        if not line.startswith("ansible-playbook "):
            continue
        words = shlex.split(line)
        playbook = next((w for w in words if w.startswith("playbooks/")), None)
        if playbook is None or not (REPO / playbook).is_file():
            wrong.append(f"{line}: no playbook {playbook}")
            continue
        read = (REPO / playbook).read_text()
        declared = {option for role in re.findall(r"role: trexlab\.lab\.(\w+)", read)
                    for option in yaml.safe_load((COLLECTION / "roles" / role / "meta" / "argument_specs.yml")
                                                 .read_text())["argument_specs"]["main"]["options"]}
        given = [w for i, w in enumerate(words) if i and words[i - 1] == "-e"]
        names = [n for g in given for n in (yaml.safe_load(g) if g.startswith("{") else {g.split("=")[0]: 0})]
        wrong += [f"{line}: {n} is read by neither {playbook} nor its roles" for n in names
                  if n not in declared and not re.search(rf"\b{n}\b", read)]
    return wrong


def test_every_playbook_command_in_the_docs_gives_variables_its_roles_read():
    assert in_docs(playbook_problems) == []
    assert playbook_problems("```sh\nansible-playbook -i x playbooks/dut-impairment.yml -e netem_delay_ms=100 "
                             "-e netem_dely_ms=1 -e '{\"trex_extra_args\": [1]}'\n```\n") == [
        "ansible-playbook -i x playbooks/dut-impairment.yml -e netem_delay_ms=100 -e netem_dely_ms=1 -e "
        "'{\"trex_extra_args\": [1]}': " + f"{n} is read by neither playbooks/dut-impairment.yml nor its roles"
        for n in ("netem_dely_ms", "trex_extra_args")]


# --- The CLI -------------------------------------------------------------------------------------------------------

def verbs() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def cli_problems(text: str) -> list[str]:
    """trexlab commands the CLI refuses: a command in a code block is parsed whole; a command mentioned in the
    prose only by its options (`trexlab selftest --frame-sizes 64,1518`) must name options its verb has."""
    parsers, wrong = verbs(), []
    verb = "|".join(map(re.escape, parsers))
    command = re.compile(r"(?:^|[\s(])(?:\.venv/bin/)?trexlab ((?:" + verb + r")(?: [^`#|&;)]*)?)")
    for line in block_lines(text):
        for match in command.finditer(line):
            words = [re.sub(r"<[^>]*>|\.\.\.$", "x", w) for w in shlex.split(match.group(1)) if w != "..."]
            err = io.StringIO()
            with contextlib.suppress(SystemExit), contextlib.redirect_stderr(err):
                build_parser().parse_args(words)
            if err.getvalue():
                wrong.append(f"trexlab {match.group(1).strip()}: {err.getvalue().strip().splitlines()[-1]}")
    for span in code_spans(text):
        for match in command.finditer(span):
            words = match.group(1).split()
            options = {o for a in parsers[words[0]]._actions for o in a.option_strings}
            wrong += [f"trexlab {words[0]} {w}: no such option" for w in words[1:]
                      if w.startswith("--") and w.split("=")[0] not in options]
    return wrong


def test_every_trexlab_command_in_the_docs_is_one_the_cli_takes():
    assert in_docs(cli_problems) == []


def test_the_cli_check_faults_an_option_that_is_gone():
    text = ("```sh\n.venv/bin/trexlab throughput --generator sim --max-rate 1e5 --repeat 3   # fine\n"
            ".venv/bin/trexlab latency --tag-wait 60\n```\nand `trexlab selftest --frame-sizes 64,1518 --sizes 64`.\n")
    assert cli_problems(text) == ["trexlab latency --tag-wait 60: trexlab: unrecognized arguments: --tag-wait 60",
                                  "trexlab latency --tag-wait: no such option",
                                  "trexlab selftest --sizes: no such option"]


# --- Spec keys -----------------------------------------------------------------------------------------------------

def schema_paths(node: object, prefix: str = "") -> set[str]:
    """Every key path the spec's JSON Schema (trexlab schema's, with the DUT blocks' options) declares, through its
    alternatives and per-procedure branches."""
    found: set[str] = set()
    if not isinstance(node, dict):
        return found
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            found |= schema_paths(sub, prefix)
    for key in ("then", "else"):
        found |= schema_paths(node.get(key), prefix)
    for name, sub in node.get("properties", {}).items():
        found |= {prefix + name} | schema_paths(sub, f"{prefix}{name}.")
    return found


@functools.cache
def declared_spec_keys() -> frozenset[str]:
    return frozenset(schema_paths(experiment_schema()))


def spec_problems(text: str) -> list[str]:
    """Spec keys the docs name that the spec does not have: dotted ones (`generator_options.send_method`,
    `dut.siit(_jool).networks` for both), and the keys of a block written out (`dut.reference: {rate_fps, ...}`).
    A block with values (`repetitions: {min: 5, ...}`) is read as a spec file is and validated as part of one."""
    declared, wrong = declared_spec_keys(), []
    base = {"name": "docs", "description": "d", "reproduces": "r", "generator": "sim",
            "generator_options": {"capacity": 1e5}, "procedure": {"name": "throughput", "params": {}}}
    for span in code_spans(text):
        match = re.fullmatch(r"((?:" + "|".join(SPEC_KEYS) + r")(?:\.[\w()]+)*)(?:: (\{.*\}))?", span)
        if not match:
            continue
        stems = [match.group(1)]
        while any("(" in s for s in stems):
            stems = [v for s in stems for v in (re.sub(r"\((\w+)\)", r"\1", s, count=1),
                                                re.sub(r"\(\w+\)", "", s, count=1))]
        try:
            block = safeyaml.loads(match.group(2)) if match.group(2) else None
        except safeyaml.YamlInputError:  # a shape with optional parts: {min, max, until: {median_ci_percent[, ...]}}
            block = None
        if isinstance(block, dict) and all(v is not None for v in block.values()):
            try:
                experiment.validate({**base, stems[0]: block})
            except experiment.InvalidExperiment as error:
                wrong.append(f"{span}: {error}")
            continue
        for stem in stems:
            keys = [stem] + [f"{stem}.{k}" for k in (block or {})]
            wrong += [f"{span}: {k} is no spec key" for k in keys if k not in declared]
    return wrong


def test_every_spec_key_the_docs_name_is_the_specs():
    assert in_docs(spec_problems) == []


def test_the_spec_check_faults_a_key_that_is_gone():
    text = ("`dut.reference: {rate_fps, burst_frame}`, `dut.siit(_jool).netwrks`, `traffic.restabilize_wait`, "
            "`repetitions: {min: 5, max: 50, until: {median_ci: 1}}`")
    found = spec_problems(text)
    assert [f.split(": ")[-1] for f in found[:3]] == ["dut.reference.burst_frame is no spec key",
                                                      "dut.siit_jool.netwrks is no spec key",
                                                      "dut.siit.netwrks is no spec key"], found
    assert len(found) == 4 and "repetitions.until" in found[3], found


# --- Python names --------------------------------------------------------------------------------------------------

def unresolved_names(text: str) -> list[str]:
    """trexlab.<module>[.<name>...] the package does not have. trexlab.lab.* is the collection's; the keys of
    trials.parquet's metadata (store's) are not Python names."""
    metadata = {store.RUNS_KEY.decode(), store.JSON_COLUMNS_KEY.decode()}
    wrong = []
    for name in sorted(set(re.findall(r"\btrexlab(?:\.[A-Za-z_]\w*)+", text))):
        if name == "trexlab.lab" or name.startswith("trexlab.lab.") or name in metadata:
            continue
        parts = name.split(".")
        for depth in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:depth]))
                break
            except ImportError:
                continue
        for part in parts[depth:]:
            if not hasattr(found, part):
                wrong.append(name)
                break
            found = getattr(found, part)
    return wrong


def test_every_trexlab_name_in_the_docs_exists():
    assert in_docs(unresolved_names) == []
    assert unresolved_names("trexlab.results.stats.summarize, trexlab.plan.runplan.RunPlan.nope, "
                            "trexlab.runs, trexlab.nowhere") == ["trexlab.nowhere", "trexlab.plan.runplan.RunPlan.nope"]


def test_the_architecture_table_names_every_module_of_the_package():
    """docs/architecture.md's table of the package's layers names each module (procedures: one per procedure)."""
    table = (REPO / "docs" / "architecture.md").read_text().split("## The data flow", 1)[1].split("\n## ", 1)[0]
    spans = " ".join(re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", table, flags=re.S)))
    procedures = REPO / "trexlab" / "procedures"
    modules = [m for m in (REPO / "trexlab").rglob("*.py") if "data" not in m.relative_to(REPO / "trexlab").parts
               and m.stem != "__init__" and not (m.parent == procedures and m.stem != "common")]
    assert [rel(m) for m in modules if not re.search(rf"(?<![\w]){m.stem}(\.py)?\b", spans)] == []

