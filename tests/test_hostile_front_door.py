"""Hostile values at the front door (make variables, scripts/ arguments): each is refused with exit code 2 and
one line on stderr naming the variable, runs nothing it carries, and leaves what it could change as it was (the
checkout, and the labs it names: call_state).

No lab is needed: every refusal happens before anything is provisioned, configured or run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from trexlab.plan.runplan import default_campaign_id
from trexlab.rolevalues import LAB_NAME, STATE_ROOT
from trexlab.spec.experiment import load
from trexlab.testbed.lock import LabLock

from labtools import static_inventory

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "terraform" / "labs" / "local" / "scripts"))
import nslab  # noqa: E402  (the local lab's realiser, its record of each lab's owner: standard library only)

# The variables the front door reads; the tests set them explicitly, whatever the calling shell has.
FRONT_DOOR_VARIABLES = ("EXP", "SCALE", "LAB", "LAB_NAME", "TOPOLOGY", "NETWORKS", "RESULTS", "CAMPAIGN", "TFVARS",
                        "CEILINGS", "MEASURE_AGAIN", "DEMO_EXP", "DEMO_LAB_NAME")

# (make goal, variable, value); {mark} is a file the injected command would create.
MAKE_INPUTS = [
    ("run", "EXP", "x; touch {mark}"),
    ("run", "EXP", "demo; touch {mark}"),
    ("run", "EXP", "demo && touch {mark}"),
    ("run", "EXP", "demo | touch {mark}"),
    ("run", "EXP", "$(shell touch {mark})"),
    ("run", "EXP", "$$(touch {mark})"),
    ("run", "EXP", "`touch {mark}`"),
    ("run", "EXP", "demo'; touch {mark}; '"),
    ("run", "EXP", "demo\ntouch {mark}"),
    ("run", "EXP", "../../elsewhere"),
    ("run", "EXP", "../demo"),
    ("run", "EXP", "/etc"),
    ("run", "EXP", "demo/../demo"),
    ("run", "EXP", "no-such-experiment"),
    ("run", "EXP", ""),
    ("run", "EXP", " "),
    ("run", "EXP", "demo tester-selftest"),
    ("run", "EXP", "-h"),
    ("run", "EXP", "Demo"),
    ("run", "EXP", "demo#"),
    ("report", "EXP", "x; touch {mark}"),
    ("report", "EXP", "../../elsewhere"),
    ("run", "SCALE", "ci; touch {mark}"),
    ("run", "SCALE", "$(shell touch {mark})"),
    ("run", "SCALE", "../ci"),
    ("run", "SCALE", "ci --results /"),
    ("run", "LAB_NAME", "x;touch {mark}"),
    ("run", "LAB_NAME", "../x"),
    ("run", "LAB_NAME", "toolong"),
    ("run", "LAB_NAME", "ABC"),
    ("run", "LAB_NAME", ""),
    ("run", "LAB_NAME", "a b"),
    ("lab-up", "LAB_NAME", "$(touch {mark})"),
    ("lab-up", "LAB", "local; touch {mark}"),
    ("lab-up", "LAB", "kvm"),
    ("lab-up", "LAB", "local vm"),
    ("lab-up", "TOPOLOGY", "single; touch {mark}"),
    ("lab-up", "TOPOLOGY", "ring"),
    ("configure", "NETWORKS", "0"),
    ("configure", "NETWORKS", "257"),
    ("configure", "NETWORKS", "1; touch {mark}"),
    ("configure", "NETWORKS", "-1"),
    ("configure", "NETWORKS", "01"),
    ("configure", "NETWORKS", "1e3"),
    # Values the goal's script checks (scripts/common.sh): refused by it before any recipe runs, in one line too, not
    # with make's own "*** [Makefile:NN: run] Error 2" after it; and handed on as typed, never expanded by make.
    ("run", "CEILINGS", "-h"),
    ("run", "CEILINGS", "$(shell touch {mark})"),
    ("run", "CEILINGS", "results/c.json\nx"),
    ("run", "MEASURE_AGAIN", "0"),
    ("run", "RESULTS", "--scale"),
    ("run", "RESULTS", "-r'; touch {mark}; '"),
    ("report", "CAMPAIGN", "--notebook=/tmp/{mark}.ipynb"),
    ("report", "CAMPAIGN", "-$(shell touch {mark})"),
    ("report", "RESULTS", "-h"),
    ("demo", "DEMO_EXP", "../x"),
    ("demo", "DEMO_LAB_NAME", "toolong"),
    ("demo", "RESULTS", "-h"),
]

# (make goal, variables, the variable the one line must name): refused by the goal's script from what it finds (a lab
# that is not up, a TFVARS file) or from values together, before any recipe runs: one line, not the script's line
# and make's own "*** [Makefile:NN: configure] Error 2" after it.
MAKE_FOUND_INPUTS = [
    ("run", {"LAB_NAME": "nolab9"}, "LAB_NAME"),
    ("configure", {"LAB_NAME": "nolab9"}, "LAB_NAME"),
    ("lab-up", {"LAB": "static"}, "LAB"),
    ("lab-up", {"LAB": "maas", "TFVARS": "/nonexistent/{mark}.tfvars"}, "TFVARS"),
    ("lab-up", {"LAB": "vm", "TOPOLOGY": "loopback"}, "TOPOLOGY"),
]

# (make goal and variables, what the machine lacks, what the one line must say): what a goal needs of the machine is
# checked before any recipe too, so that its refusal is one line, not the script's and make's "*** [...] Error 1".
MAKE_MACHINE_INPUTS = [
    (["lab-up", "LAB_NAME=nolab9"], "terraform", "terraform not found on PATH"),
    (["lab-down", "LAB_NAME=nolab9"], "terraform", "terraform not found on PATH"),
    (["lab-up", "LAB_NAME=nolab9"], "root", "LAB=local needs root"),
    (["demo"], "root", "make demo needs root"),
    (["lab-up", "LAB=maas", "LAB_NAME=nolab9", "TFVARS={tfvars}"], "maas", "needs MAAS_API_URL and MAAS_API_KEY"),
    (["run", "EXP=demo"], "venv", "/bin/trexlab: run 'make setup' first"),
    (["report", "EXP=demo"], "venv", "/bin/trexlab: run 'make setup' first"),
    (["bench"], "venv", "no-venv: run 'make setup' first"),
    (["providers"], "go", "go not found"),
    (["lab-up", "LAB=vm", "LAB_NAME=nolab9"], "vm", "LAB=vm needs qemu-system-x86 and mmdebstrap"),
]

# (script and its arguments, extra environment); the scripts check the same values when run without make.
SCRIPT_INPUTS = [
    (["scripts/run-experiment.sh", "x; touch {mark}"], {}, "EXP"),
    (["scripts/run-experiment.sh", "../../elsewhere"], {}, "EXP"),
    (["scripts/run-experiment.sh", "/etc"], {}, "EXP"),
    (["scripts/run-experiment.sh", ""], {}, "EXP"),
    (["scripts/run-experiment.sh", "demo"], {"SCALE": "ci; touch {mark}"}, "SCALE"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "../../x"}, "LAB_NAME"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "$(touch {mark})"}, "LAB_NAME"),
    # A lab that is not up (make run LAB_NAME=nolab9): never stood in for by another lab (the local one) that is.
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9"}, "LAB_NAME"),
    (["scripts/lab.sh", "configure"], {"LAB_NAME": "nolab9"}, "LAB_NAME"),
    # CEILINGS= is a file a self-test rewrites: one outside the results root (someone's own JSON, replaced by a
    # ceilings file), an option, or lines, is refused. LAB_NAME=nolab9: nothing would run even were it not.
    (["scripts/run-experiment.sh", "tester-selftest"], {"LAB_NAME": "nolab9", "CEILINGS": "{mark}.json"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "CEILINGS": "results/../../x.json"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "CEILINGS": "results/.x.json"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "CEILINGS": "results/c.txt"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "CEILINGS": "-h"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "CEILINGS": "results/c.json\nx"}, "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "RESULTS": "r", "CEILINGS": "results/c.json"},
     "CEILINGS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "RESULTS": "--scale"}, "RESULTS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "RESULTS": "r\nx"}, "RESULTS"),
    (["scripts/run-experiment.sh", "demo"], {"LAB_NAME": "nolab9", "MEASURE_AGAIN": "0"}, "MEASURE_AGAIN"),
    (["scripts/report.sh", "demo"], {"CAMPAIGN": "--notebook=/tmp/{mark}.ipynb"}, "CAMPAIGN"),
    (["scripts/report.sh", "demo"], {"CAMPAIGN": "results/demo/c1\nx"}, "CAMPAIGN"),
    (["scripts/report.sh", "demo"], {"RESULTS": "-h"}, "RESULTS"),
    (["scripts/report.sh", "$(touch {mark})"], {}, "EXP"),
    (["scripts/report.sh", "../demo"], {}, "EXP"),
    (["scripts/lab.sh", "up; touch {mark}"], {}, "action"),
    (["scripts/lab.sh", "up"], {"LAB": "local;touch {mark}"}, "LAB"),
    (["scripts/lab.sh", "up"], {"LAB_NAME": "`touch {mark}`"}, "LAB_NAME"),
    (["scripts/lab.sh", "up"], {"TOPOLOGY": "$(touch {mark})"}, "TOPOLOGY"),
    (["scripts/lab.sh", "configure"], {"NETWORKS": "1 -e x=$(touch {mark})"}, "NETWORKS"),
    (["scripts/lab.sh", "up"], {"NETWORKS": "0257"}, "NETWORKS"),
    (["scripts/lab.sh", "up"], {"LAB": "static", "TFVARS": "/nonexistent/{mark}.tfvars"}, "TFVARS"),
]


# make demo's own variables, and those it hands on: (environment, the variable the one line must name).
DEMO_INPUTS = [
    ({"DEMO_EXP": "../x"}, "DEMO_EXP"),
    ({"DEMO_EXP": "demo; touch {mark}"}, "DEMO_EXP"),
    ({"DEMO_EXP": "no-such-experiment"}, "DEMO_EXP"),
    ({"DEMO_LAB_NAME": "toolong"}, "DEMO_LAB_NAME"),
    ({"DEMO_LAB_NAME": "$(touch {mark})"}, "DEMO_LAB_NAME"),
    ({"RESULTS": "-h"}, "RESULTS"),
    ({"SCALE": "ci; touch {mark}"}, "SCALE"),
]


def out(*argv: str, cwd: Path = REPO) -> str:
    if not shutil.which(argv[0]):
        return ""
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd).stdout


def checkout_state(root: Path = REPO) -> str:
    """Every file of the checkout git does not track, ignored ones included, but where make test's own builds and
    caches go (the venv, .cache, swtester's binaries, the providers' mirror) and Python's bytecode caches: a Python
    process on another worker (make test runs three beside this file) writes __pycache__/*.pyc of the checkout's
    modules it imports first, unless PYTHONDONTWRITEBYTECODE is set, which make test does not require."""
    return out("git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", ".", ":!.venv",
               ":!.cache", ":!swtester", ":!terraform/providers", ":(exclude,glob)**/__pycache__/**", cwd=root)


def tree(root: Path) -> list[str]:
    """Every path below root (none when it does not exist), the links not followed."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def lab_names(*names: str | None) -> list[str]:
    """The labs a call could make or change: those it names (LAB_NAME, DEMO_LAB_NAME; else LAB, whose name is the
    default one) and the default lab, local; a name the lab name's rule refuses can name no lab."""
    return sorted({n for n in (*names, "local") if n is not None and LAB_NAME.fullmatch(n)})


def call_state(labs: list[str]) -> dict:
    """What a refused call in this checkout must leave unchanged: the checkout, and of each lab it could make or
    change (lab_names) this checkout's state directory and, when that lab is this checkout's (the owner nslab.py
    records at lab-up), its namespaces, its processes and the roles' state on this host. Nothing else: the host's
    namespaces, ruleset and receive backlog change whenever another checkout's lab goes up or down, and such a lab
    is not the call's doing (nslab.py refuses a lab-up of a name that is up for another state directory)."""
    state = {"checkout": checkout_state()}
    for lab in labs:
        state_dir = REPO / ".cache" / "labs" / lab
        ours = nslab.recorded_owner(lab) == os.path.realpath(state_dir)
        state[lab] = {
            "state_dir": tree(state_dir),
            "owner": ours,
            "namespaces": [n for n in out("ip", "netns", "list").split() if n.startswith(f"tl-{lab}-")] if ours else [],
            # Its "/" as [/]: the pattern is then in no command line it matches (another worker's pgrep of it).
            "processes": out("pgrep", "-f", "".join(f"[{c}]" if c in "./+*?()[]{}|^$" else c
                                                    for c in f"{state_dir}/")).split(),
            "roles_state": tree(Path(STATE_ROOT) / lab) if ours else [],
        }
    return state


def front_door_env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in FRONT_DOOR_VARIABLES and not k.startswith("MAKE")}
    return {**env, "VENV": str(REPO / ".venv"), **extra}


def assert_refused(result: subprocess.CompletedProcess, variable: str, mark: Path, before: dict, after: dict) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{variable}=" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not mark.exists(), f"the injected command ran: {mark} exists"
    assert after == before


@pytest.mark.parametrize(("goal", "variable", "value"), MAKE_INPUTS,
                         ids=[f"{g}-{v}-{i}" for i, (g, v, _) in enumerate(MAKE_INPUTS)])
def test_make_refuses_a_hostile_variable(tmp_path, goal, variable, value):
    mark = tmp_path / "injected"
    labs = lab_names(value if variable in ("LAB_NAME", "DEMO_LAB_NAME") else None, "demo" if goal == "demo" else None)
    before = call_state(labs)
    result = subprocess.run(["make", "--no-print-directory", goal, f"{variable}={value.format(mark=mark)}"],
                            capture_output=True, text=True, cwd=REPO, env=front_door_env({}), timeout=60)
    assert_refused(result, variable, mark, before, call_state(labs))


@pytest.mark.parametrize(("goal", "variables", "variable"), MAKE_FOUND_INPUTS,
                         ids=[f"{g}-{v}" for g, _, v in MAKE_FOUND_INPUTS])
def test_make_refuses_what_the_script_finds_in_one_line(tmp_path, goal, variables, variable):
    mark = tmp_path / "injected"
    labs = lab_names(variables.get("LAB_NAME", variables.get("LAB")))
    before = call_state(labs)
    result = subprocess.run(["make", "--no-print-directory", goal,
                             *(f"{k}={v.format(mark=mark)}" for k, v in variables.items())],
                            capture_output=True, text=True, cwd=REPO, env=front_door_env({}), timeout=60)
    assert_refused(result, variable, mark, before, call_state(labs))


def test_make_n_checks_the_values_not_what_is_up():
    """make -n prints the recipes and runs none: it checks the values, not which labs are up or which files exist,
    so that its answer does not depend on the machine's state (make run LAB_NAME=nolab9 itself is refused)."""
    for goal, variables, _ in MAKE_FOUND_INPUTS[:3]:
        result = subprocess.run(["make", "-n", goal, *(f"{k}={v}" for k, v in variables.items())], capture_output=True,
                                text=True, cwd=REPO, env=front_door_env({}), timeout=60)
        assert result.returncode == 0, (goal, result.stderr)


@pytest.mark.parametrize(("argv", "lacks", "said"), MAKE_MACHINE_INPUTS,
                         ids=[f"{a[0]}-{lacks}" for a, lacks, _ in MAKE_MACHINE_INPUTS])
def test_make_refuses_what_the_machine_lacks_in_one_line(tmp_path, argv, lacks, said):
    """Simulated without changing the machine: a tool off PATH (each directory of PATH holding it stands in as
    one of links to everything else it holds), MAAS credentials and the venv off the environment, and `id` on PATH
    saying uid 1000 where root is lacking (uid 0 elsewhere, so that the test asks the same whoever runs it)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text(f"#!/bin/sh\necho {1000 if lacks == 'root' else 0}\n")
    (fake / "id").chmod(0o755)
    tools = {"terraform": ["terraform"], "go": ["go"], "vm": ["qemu-system-x86_64", "mmdebstrap"]}.get(lacks, [])
    path = []
    for i, directory in enumerate(os.environ["PATH"].split(os.pathsep)):
        if any((Path(directory) / tool).exists() for tool in tools):
            others = tmp_path / f"path{i}"
            others.mkdir()
            for entry in Path(directory).iterdir():
                if entry.name not in tools:
                    (others / entry.name).symlink_to(entry)
            directory = str(others)
        path.append(directory)
    env = {k: v for k, v in front_door_env({}).items() if not k.startswith("MAAS_")}
    env["PATH"] = os.pathsep.join([str(fake), *path])
    if lacks == "venv":
        env["VENV"] = str(tmp_path / "no-venv")
    tfvars = tmp_path / "machines.tfvars"
    tfvars.write_text("")
    variables = dict(a.split("=", 1) for a in argv if "=" in a)
    labs = lab_names(variables.get("LAB_NAME", variables.get("LAB")), "demo" if argv[0] == "demo" else None)
    before = call_state(labs)
    result = subprocess.run(["make", "--no-print-directory", *(a.format(tfvars=tfvars) for a in argv)],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
    assert call_state(labs) == before


@pytest.mark.parametrize(("argv", "env", "variable"), SCRIPT_INPUTS,
                         ids=[f"{Path(a[0]).stem}-{i}" for i, (a, _, _) in enumerate(SCRIPT_INPUTS)])
def test_script_refuses_a_hostile_value(tmp_path, argv, env, variable):
    mark = tmp_path / "injected"
    labs = lab_names(env.get("LAB_NAME", env.get("LAB")))
    before = call_state(labs)
    result = subprocess.run([a.format(mark=mark) for a in argv], capture_output=True, text=True, cwd=REPO,
                            env=front_door_env({k: v.format(mark=mark) for k, v in env.items()}), timeout=60)
    assert_refused(result, variable, mark, before, call_state(labs))


@pytest.mark.parametrize(("env", "variable"), DEMO_INPUTS, ids=[v for _, v in DEMO_INPUTS])
def test_demo_refuses_its_variables_before_its_first_step(tmp_path, env, variable):
    """make demo's steps are make setup, a loopback lab and a self-test, the DUT lab, the campaign: a value refused
    only by the script that reads it was refused after all of them. Run from a copy of the checkout whose steps
    only leave a mark, so that a refusal coming too late shows as that mark, never as a setup or a lab made."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("demo.sh", "common.sh"):
        shutil.copy(REPO / "scripts" / name, root / "scripts" / name)
    (root / "trexlab").mkdir()  # the lab name's rule, which common.sh reads
    shutil.copy(REPO / "trexlab" / "rolevalues.py", root / "trexlab" / "rolevalues.py")
    step = tmp_path / "a-step-ran"
    for name in ("setup.sh", "lab.sh", "run-experiment.sh", "report.sh"):
        (root / "scripts" / name).write_text(f"#!/bin/sh\ntouch '{step}'\n")
        (root / "scripts" / name).chmod(0o755)
    (root / "experiments").symlink_to(REPO / "experiments")
    mark = tmp_path / "injected"
    before = tree(root)  # its steps stand in for the checkout's: what it could write is in its copy
    result = subprocess.run([str(root / "scripts" / "demo.sh")], capture_output=True, text=True, cwd=root,
                            env=front_door_env({k: v.format(mark=mark) for k, v in env.items()}), timeout=60)
    assert_refused(result, variable, mark, before, tree(root))
    assert not step.exists(), "a step of make demo ran before the refusal"


def test_make_hands_a_command_line_value_on_as_typed(tmp_path):
    """make expanded each command-line variable once when it handed it to a recipe's environment: X='$(shell touch
    F)', read by no check, ran touch F whatever the goal (make help too)."""
    mark = tmp_path / "injected"
    result = subprocess.run(["make", "--no-print-directory", "help", f"X=$(shell touch {mark})"], capture_output=True,
                            text=True, cwd=REPO, env=front_door_env({}), timeout=60)
    assert result.returncode == 0, result.stderr
    assert not mark.exists(), f"the injected command ran: {mark} exists"


def test_make_accepts_the_names_it_documents():
    """The checks refuse only what is wrong: every experiment in the repo and the documented values pass."""
    for experiment in sorted(p.name for p in (REPO / "experiments").iterdir() if (p / "experiment.yml").exists()):
        result = subprocess.run(["make", "-n", "run", f"EXP={experiment}", "SCALE=ci", "LAB_NAME=local"],
                                capture_output=True, text=True, cwd=REPO, env=front_door_env({}), timeout=60)
        assert result.returncode == 0, result.stderr
    for variables in (["LAB=vm", "TOPOLOGY=dual", "NETWORKS=256", "LAB_NAME=abc123"], ["LAB=static"]):
        result = subprocess.run(["make", "-n", "lab-up", *variables], capture_output=True, text=True, cwd=REPO,
                                env=front_door_env({}), timeout=60)
        assert result.returncode == 0, result.stderr


def test_make_help_names_the_variables_each_goal_reads():
    """make help is the front door's own page: each goal's line names the variables its script reads (SCALE,
    LAB_NAME, RESULTS and CAMPAIGN were in the README only), and every variable the front door reads is named."""
    result = subprocess.run(["make", "--no-print-directory", "help"], capture_output=True, text=True, cwd=REPO,
                            env=front_door_env({}), timeout=60)
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("  make ")}
    reads = {"lab-up": ("LAB=", "TOPOLOGY=", "LAB_NAME=", "TFVARS="), "configure": ("NETWORKS=", "LAB_NAME="),
             "lab-down": ("LAB_NAME=",), "run": ("EXP=", "SCALE=", "LAB_NAME=", "RESULTS="),
             "report": ("EXP=", "CAMPAIGN=", "RESULTS=")}
    for goal, variables in reads.items():
        assert all(v in lines[goal] for v in variables), lines[goal]
    assert all(f"{v}=" in result.stdout for v in FRONT_DOOR_VARIABLES), result.stdout


def test_the_checkout_state_leaves_out_bytecode_caches_only(tmp_path):
    """A Python process of another worker writes __pycache__/*.pyc of a module it imports first into the checkout
    meanwhile (two of this file's comparisons failed so on three workers without PYTHONDONTWRITEBYTECODE): no
    change a refused input made. Any other file written there, ignored by git or not, still is one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    before = checkout_state(tmp_path)
    cache = tmp_path / "trexlab" / "__pycache__"
    cache.mkdir(parents=True)
    (cache / "campaign.cpython-311.pyc").write_bytes(b"")
    assert checkout_state(tmp_path) == before
    (tmp_path / "trexlab" / "campaign.pyc").write_bytes(b"")
    (tmp_path / "mark").write_text("")
    assert checkout_state(tmp_path).splitlines() == [*before.splitlines(), "?? mark", "!! trexlab/campaign.pyc"]


def test_configure_refuses_an_inventory_whose_groups_are_named_like_its_hosts(tmp_path):
    """Inventories written before the groups were the roles in the plural (group tester holding host tester, which
    made Ansible warn on every run) match none of site.yml's plays now: Ansible would only warn, configure no host
    and exit 0. make configure refuses one in one line, naming the lab-up that writes it again. The front door runs
    from a copy rooted in tmp_path (lab.sh's root is where it lies), so the checkout gets no inventory."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "terraform" / "labs" / "local").mkdir(parents=True)
    for script in ("lab.sh", "common.sh"):
        shutil.copy2(REPO / "scripts" / script, root / "scripts" / script)
    (root / "trexlab").mkdir()  # the lab name's rule, which common.sh reads
    shutil.copy2(REPO / "trexlab" / "rolevalues.py", root / "trexlab" / "rolevalues.py")
    # As terraform/modules/inventory writes it (yamlencode), before and after the groups' renaming.
    shape = ('"all":\n  "children":\n    "{dut}":\n      "hosts": {{}}\n    "{tester}":\n      "hosts":\n'
             '        "tester":\n          "ansible_host": "127.0.0.1"\n          "ansible_port": 1\n')
    shapes = {"old1": shape.format(dut="dut", tester="tester"), "new1": shape.format(dut="duts", tester="testers")}
    results = {}
    for name, text in shapes.items():
        (root / "inventory" / "generated" / name).mkdir(parents=True)
        (root / "inventory" / "generated" / name / "hosts.yml").write_text(text)
        # No ansible-playbook in this VENV: an inventory the check lets through stops right after it.
        results[name] = subprocess.run([str(root / "scripts" / "lab.sh"), "configure"], capture_output=True, text=True,
                                       env={**front_door_env({"LAB_NAME": name}), "VENV": str(tmp_path / "no-venv")},
                                       timeout=60)
    old, new = results["old1"], results["new1"]
    assert old.returncode == 2 and old.stderr.count("\n") == 1, (old.returncode, old.stdout, old.stderr)
    assert "LAB_NAME=old1: " in old.stderr and "run 'make lab-up LAB_NAME=old1' again" in old.stderr, old.stderr
    assert new.returncode == 1 and "ansible-playbook: run 'make setup' first" in new.stderr, new.stderr


def front_door_copy(root: Path) -> Path:
    """The front door (Makefile, scripts/lab.sh) rooted in a directory of the test's own: the labs it finds there are
    the test's, written by hand as lab-up leaves them, and the checkout gets none."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "Makefile", root / "Makefile")
    for name in ("lab.sh", "common.sh", "run-experiment.sh"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    (root / "trexlab").symlink_to(REPO / "trexlab")  # the lab name's rule, the campaign's checks (make run)
    (root / "experiments").mkdir()  # make's EXP check, whatever the goal
    (root / "experiments" / "demo").symlink_to(REPO / "experiments" / "demo")
    for kind in ("local", "vm", "static", "maas"):
        (root / "terraform" / "labs" / kind).mkdir(parents=True)
    # The local lab's realiser, which make lab-status asks what of a lab is down (it reads, changes nothing).
    (root / "terraform" / "labs" / "local" / "scripts").symlink_to(REPO / "terraform" / "labs" / "local" / "scripts")
    return root


def short_experiment(root: Path, name: str, head: str) -> None:
    """experiments/<name> of the copy: one short throughput point; head, its description and generator lines."""
    (root / "experiments" / name).mkdir()
    (root / "experiments" / name / "experiment.yml").write_text(
        f"name: {name}\n{head}"
        "traffic: {frame_size: [64, 64], ip_version: [4, 4], directions: bidirectional, receive_tail: 0}\n"
        "procedure: {name: throughput, params: {max_rate: 2000, trial_duration: 1}}\nrepetitions: 1\n")


def static_lab(root: Path, name: str) -> Path:
    """inventory/generated/<name>/hosts.yml of the copy: a static lab's, reached nowhere (labtools); returned."""
    inventory = root / "inventory" / "generated" / name / "hosts.yml"
    inventory.parent.mkdir(parents=True)
    inventory.write_text(static_inventory(name))
    return inventory


def ssh_stand_in(tmp_path: Path, body: str) -> dict:
    """The front door's environment with an ssh on PATH whose script is body (the static lab's nodes' ssh)."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "ssh").write_text(f"#!/bin/sh\n{body}\n")
    (fake / "ssh").chmod(0o755)
    return front_door_env({"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"})


@pytest.mark.parametrize(("made", "argv", "message"), [
    ("local", ["lab-up", "LAB=vm"],
     "LAB=vm: lab kind1 is a local lab: take it down first (make lab-down LAB=local LAB_NAME=kind1)"),
    ("local", ["configure", "LAB=vm"], "LAB=vm: lab kind1 is a local lab: make configure LAB=local LAB_NAME=kind1"),
    ("vm", ["configure"], "LAB=local: lab kind1 is a vm lab: make configure LAB=vm LAB_NAME=kind1"),
    ("vm", ["lab-down", "LAB=static"], "LAB=static: lab kind1 is a vm lab: make lab-down LAB=vm LAB_NAME=kind1"),
    # Its own kind passes that check, and stops at the next.
    ("vm", ["configure", "LAB=vm"], "no-venv/bin/ansible-playbook: run 'make setup' first"),
], ids=["up", "configure", "configure-default-lab", "down", "configure-its-own-kind"])
def test_make_refuses_a_lab_made_as_another_kind_in_one_line(tmp_path, made, argv, message):
    """make lab-up LAB=local LAB_NAME=x, then make configure LAB=vm LAB_NAME=x: configure ran site.yml on the local
    lab's namespaces as if it were the VM lab named (lab-up and lab-down refused another kind, scripts/lab.sh made_as;
    tests/terraform/test_lab_kind.py runs the script alone). Refused before any recipe, in one line."""
    root = front_door_copy(tmp_path / "checkout")
    state = root / ".cache" / "labs" / "kind1"
    state.mkdir(parents=True)
    (state / "kind").write_text(f"{made}\n")
    (state / "terraform.tfstate").write_text('{"version": 4, "resources": []}')
    (root / "inventory" / "generated" / "kind1").mkdir(parents=True)
    # No ansible-playbook in this VENV: a configure the check lets through stops at that, having run nothing.
    (root / "inventory" / "generated" / "kind1" / "hosts.yml").write_text('"all":\n  "children": {}\n')
    lab = sorted(p.relative_to(root) for p in root.rglob("*") if "experiments" not in p.parts)
    result = subprocess.run(["make", "--no-print-directory", *argv, "LAB_NAME=kind1"], capture_output=True, text=True,
                            cwd=root, env=front_door_env({"VENV": str(tmp_path / "no-venv")}), timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1 and message in output[0], (result.returncode, output)
    assert sorted(p.relative_to(root) for p in root.rglob("*") if "experiments" not in p.parts) == lab


def test_lab_status_of_a_lab_that_is_not_up_says_how_to_bring_it_up_and_is_not_zero(tmp_path):
    """make lab-status LAB_NAME=x of a lab that is not up printed "not up" and exited 0, as for a lab that is up: a
    script around it could not tell. scripts/lab.sh status exits 3 for it (as systemctl is-active for an inactive
    unit), its one line naming the lab-up that brings it up; 1 for a lab that is down. Through make each is that one
    line, before any recipe, and make's own exit 2 (GNU make exits 0 or 2, whatever a recipe returned)."""
    root = front_door_copy(tmp_path / "checkout")
    labs = root / ".cache" / "labs"
    (labs / "kind2").mkdir(parents=True)
    (labs / "kind2" / "kind").write_text("vm\n")  # a lab-up that failed before Terraform ran
    # A local lab in its Terraform state whose namespace is gone (tl-kind3-dut: no such namespace on this host).
    (labs / "kind3").mkdir()
    (labs / "kind3" / "kind").write_text("local\n")
    plan = {"topology": "single", "state_dir": str(labs / "kind3"), "nodes": {"dut": {"netns": "tl-kind3-dut"}}}
    (labs / "kind3" / "terraform.tfstate").write_text(json.dumps({"outputs": {"plan": {"value": plan}}}))
    for name, code, line in (
            ("nolab9", 3, "lab nolab9: not up (no Terraform state): make lab-up LAB_NAME=nolab9 brings it up"),
            ("kind2", 3, "lab kind2: not up (no Terraform state): make lab-up LAB=vm LAB_NAME=kind2 brings it up"),
            ("kind3", 1, f"lab kind3 (local, single, {labs / 'kind3'}): down: dut: namespace tl-kind3-dut is gone; no "
                         f"known_hosts in {labs / 'kind3'}; make lab-up LAB=local LAB_NAME=kind3 makes it again")):
        script = subprocess.run([str(root / "scripts" / "lab.sh"), "status"], capture_output=True, text=True,
                                env=front_door_env({"LAB_NAME": name}), timeout=60)
        assert (script.returncode, script.stdout, script.stderr) == (code, f"{line}\n", ""), script
        made = subprocess.run(["make", "--no-print-directory", "lab-status", f"LAB_NAME={name}"], capture_output=True,
                              text=True, cwd=root, env=front_door_env({}), timeout=60)
        output = (made.stdout + made.stderr).strip().splitlines()
        assert made.returncode == 2 and len(output) == 1 and line in output[0], (made.returncode, output)


def test_make_run_refuses_what_its_campaign_would_in_one_line(tmp_path):
    """make run EXP=demo with the default lab (local) not up, or SCALE= a scale the experiment does not declare: the
    campaign refused it in the recipe, its line and make's "*** [Makefile:NN: run] Error 2". The same refusals, by the
    campaign's own code, come before any recipe; an experiment whose generator is sim needs no lab and passes."""
    root = front_door_copy(tmp_path / "checkout")
    short_experiment(root, "simcheck", "description: a simulated DUT, no lab\ngenerator: sim\n"
                                       "generator_options: {capacity: 1000}\n")
    for argv, said in ((["EXP=demo"], "lab local is not up: run 'make lab-up' first"),
                       (["EXP=demo", "SCALE=nosuch"], "scale.nosuch: not declared in this experiment (declared: ci)")):
        result = subprocess.run(["make", "--no-print-directory", "run", *argv], capture_output=True, text=True,
                                cwd=root, env=front_door_env({}), timeout=60)
        output = (result.stdout + result.stderr).strip().splitlines()
        assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
    sim = subprocess.run([str(root / "scripts" / "run-experiment.sh"), "--check-only", "simcheck"], capture_output=True,
                         text=True, env=front_door_env({}), timeout=60)
    assert (sim.returncode, sim.stdout, sim.stderr) == (0, "", ""), sim
    assert not (root / "results").exists() and not (root / "inventory").exists()


def test_lab_status_without_lab_name_when_no_lab_of_the_checkout_is_up_is_not_zero(tmp_path):
    """make lab-status without LAB_NAME said "no lab in this checkout" and exited 0, as when every lab is up: a script
    around it could not tell. Now it exits 3, as for a lab named that is not up (through make: one line before any
    recipe, make's 2), its line naming the make lab-up that brings one up; labs whose lab-up failed before Terraform
    ran are named with theirs. A lab in its Terraform state (a bare-metal one, not probed: up for lab-status) is
    listed with the others, 0."""
    root = front_door_copy(tmp_path / "checkout")
    labs = root / ".cache" / "labs"
    empty = "no lab of this checkout is up (.cache/labs/ is empty): make lab-up brings up lab local"
    none = "no lab of this checkout is up (none in .cache/labs/ has a Terraform state): make lab-up brings up lab local"
    kind2 = "lab kind2: not up (no Terraform state): make lab-up LAB=vm LAB_NAME=kind2 brings it up"

    def status() -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
        script = subprocess.run([str(root / "scripts" / "lab.sh"), "status"], capture_output=True, text=True,
                                env=front_door_env({}), timeout=60)
        made = subprocess.run(["make", "--no-print-directory", "lab-status"], capture_output=True, text=True,
                              cwd=root, env=front_door_env({}), timeout=60)
        return script, made

    for lines in ([empty], [none, kind2]):
        if len(lines) > 1:  # a lab-up that failed before Terraform ran
            (labs / "kind2").mkdir(parents=True)
            (labs / "kind2" / "kind").write_text("vm\n")
        script, made = status()
        # Another checkout's labs up on this host follow, one line each.
        assert script.returncode == 3 and script.stdout.splitlines()[:len(lines)] == lines, script
        output = (made.stdout + made.stderr).strip().splitlines()
        assert made.returncode == 2 and len(output) == 1 and "; ".join(lines) in output[0], (made.returncode, output)
    (labs / "metal1").mkdir()
    (labs / "metal1" / "kind").write_text("static\n")
    (labs / "metal1" / "terraform.tfstate").write_text('{"version": 4, "resources": []}')
    (labs / "metal1" / "lab.tfvars").write_text('topology = "dual"\n')
    script, made = status()
    listed = [kind2, f"lab metal1 (static, dual, {labs / 'metal1'}): in its Terraform state (bare-metal machines are "
                     "not probed here)"]
    assert script.returncode == 0 and script.stdout.splitlines()[:2] == listed, script
    assert made.returncode == 0 and made.stdout.splitlines()[:2] == listed, made
    # A bare-metal lab whose lab.tfvars is gone (removed by hand) is listed with its topology unknown: sed's missing
    # file ended the script under set -e, exit 2 with no line for it or the labs after it.
    (labs / "metal2").mkdir()
    (labs / "metal2" / "kind").write_text("maas\n")
    (labs / "metal2" / "terraform.tfstate").write_text('{"version": 4, "resources": []}')
    script, made = status()
    listed.append(f"lab metal2 (maas, unknown topology, {labs / 'metal2'}): in its Terraform state (bare-metal "
                  "machines are not probed here)")
    assert script.returncode == 0 and script.stdout.splitlines()[:3] == listed, script


@pytest.mark.parametrize(("goal", "refused"), [("setup", "linked-venv"), ("setup", "terraform-too-old"),
                                              ("setup", "terraform-unknown-version"), ("demo", "linked-venv")])
def test_make_setup_refuses_in_one_line_before_installing_anything(tmp_path, goal, refused):
    """make setup's refusals (a venv linked from another checkout whose requirements differ, which it would reinstall
    from this one; a terraform older than the labs' modules require) were two lines through make, the script's and
    make's "*** [Makefile:NN: setup] Error 1", and came after Debian's packages were installed (the terraform one after
    the venv too). Now they are setup's --check-only, before any recipe: one line, nothing installed. Run from a copy
    of the front door, with a venv of the test's own and stand-ins for terraform, dpkg-query (every package installed)
    and id (not root: no apt-get), so that a check that lets it through installs nothing either. make demo, whose
    first step is make setup, checks setup's refusals before its own recipe too (as root, which it needs)."""
    root = front_door_copy(tmp_path / "checkout")
    for name in ("setup.sh", "demo.sh"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    for name in ("requirements.txt", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    (root / "terraform" / "labs" / "local" / "versions.tf").symlink_to(REPO / "terraform" / "labs" / "local" /
                                                                     "versions.tf")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(shutil.which("python3"))
    want = subprocess.run("sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1", shell=True,
                          cwd=root, capture_output=True, text=True, check=True).stdout
    (venv / ".requirements.sha256").write_text("another checkout's\n" if refused == "linked-venv" else want)
    linked = tmp_path / "linked-venv"
    linked.symlink_to(venv)
    fake = tmp_path / "bin"
    fake.mkdir()
    version = {"terraform-too-old": "1.5.7", "terraform-unknown-version": "(unknown)"}.get(refused, "1.10.0")
    stand_ins = {"terraform": f"""if [ "$2" = -json ]; then echo '{{"terraform_version": "{version}"}}'; """
                              f"else echo 'Terraform v{version}'; fi",
                 "dpkg-query": "printf 'install ok installed'", "id": f"echo {0 if goal == 'demo' else 1000}"}
    for name, body in stand_ins.items():
        (fake / name).write_text(f"#!/bin/sh\n{body}\n")
        (fake / name).chmod(0o755)
    env = front_door_env({"VENV": str(linked), "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"})
    said = {"linked-venv": f"{linked} links to {venv}, whose requirements differ from this checkout's: run make setup "
                           "in the checkout it belongs to",
            "terraform-too-old": f"terraform 1.5.7 ({fake / 'terraform'}) is too old: lab-up needs >= 1.6",
            "terraform-unknown-version": "its 'terraform version' names no version"}[refused]
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "experiments" not in p.parts)
    result = subprocess.run(["make", "--no-print-directory", goal], capture_output=True, text=True, cwd=root,
                            env=env, timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "experiments" not in p.parts) == files
    if goal == "setup" and refused == "linked-venv":  # the same requirements: the checkout's own worktree venv
        (venv / ".requirements.sha256").write_text(want)
        check = subprocess.run([str(root / "scripts" / "setup.sh"), "--check-only"], capture_output=True, text=True,
                               env=env, timeout=60)
        assert (check.returncode, check.stdout, check.stderr) == (0, "", ""), check


def test_make_run_refuses_a_lab_held_by_another_run_in_one_line(tmp_path):
    """make run on a lab another run holds (trexlab.testbed.lock): the campaign planned its points, then refused at
    its LabLock in the recipe, its line and make's "*** [Makefile:NN: run] Error 2". Asked before any recipe now
    (trexlab campaign --check: LabLock.check_free reads the kernel's flocks, never tries the lock), it is one line,
    and nothing is written; the lock let go, the same make run passes that check (a static lab's inventory, reached
    nowhere: --check touches no host)."""
    root = front_door_copy(tmp_path / "checkout")
    short_experiment(root, "lockchk", "description: a lab held by another run\ngenerator: software\n")
    inventory = static_lab(root, "held1")
    lab = types.SimpleNamespace(name="held1", inventory=inventory)
    argv = ["make", "--no-print-directory", "run", "EXP=lockchk", "LAB_NAME=held1"]
    files = tree(root)
    with LabLock(lab, "campaign lockchk/c-other"):  # its own lab.lock and lab.procs.json, which it removes
        result = subprocess.run(argv, capture_output=True, text=True, cwd=root, env=front_door_env({}), timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    said = f"lab held1 is in use by campaign lockchk/c-other (PID {os.getpid()}): one run per lab at a time"
    assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
    assert [f for f in tree(root) if not f.endswith("/lab.lock")] == files
    free = subprocess.run([str(root / "scripts" / "run-experiment.sh"), "--check-only", "lockchk"], capture_output=True,
                          text=True, env=front_door_env({"LAB_NAME": "held1"}), timeout=60)
    assert (free.returncode, free.stdout, free.stderr) == (0, "", ""), free
    # A refusal of the campaign's run() besides the lock's, asked the same way: its directory begun with another spec.
    begun = root / "results" / "lockchk" / default_campaign_id(load(root / "experiments" / "lockchk"))
    begun.mkdir(parents=True)
    (begun / "campaign.json").write_text(json.dumps({"spec": {"name": "lockchk", "repetitions": 2}}))
    result = subprocess.run(argv, capture_output=True, text=True, cwd=root, env=front_door_env({}), timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1 and f"campaign {begun.relative_to(root)} was begun with " \
        "another spec" in output[0], (result.returncode, output)


def test_make_report_refuses_what_its_report_would_in_one_line(tmp_path):
    """make report with no campaign of EXP under RESULTS, or a CAMPAIGN that is no campaign directory: trexlab report
    refused it in the recipe, its line and make's "*** [Makefile:NN: report] Error 2". Asked before any recipe now
    (trexlab report --check: render's checks, no notebook executed), it is one line and nothing is written; a
    campaign directory passes that check."""
    root = front_door_copy(tmp_path / "checkout")
    shutil.copy2(REPO / "scripts" / "report.sh", root / "scripts" / "report.sh")
    files = tree(root)
    for argv, said in (([], "trexlab report: no campaign of experiment 'demo' under results: run `make run EXP=demo`"),
                       ([f"CAMPAIGN={tmp_path}"], f"trexlab report: {tmp_path}: not a campaign directory")):
        result = subprocess.run(["make", "--no-print-directory", "report", "EXP=demo", *argv], capture_output=True,
                                text=True, cwd=root, env=front_door_env({}), timeout=60)
        output = (result.stdout + result.stderr).strip().splitlines()
        assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
        assert tree(root) == files
    campaign = root / "results" / "demo" / "c1"
    campaign.mkdir(parents=True)
    (campaign / "campaign.json").write_text(json.dumps({"experiment": "demo", "spec": {"name": "demo"}}))
    check = subprocess.run([str(root / "scripts" / "report.sh"), "--check-only", "demo"], capture_output=True,
                           text=True, env=front_door_env({}), timeout=60)
    assert (check.returncode, check.stdout, check.stderr) == (0, "", ""), check


@pytest.mark.parametrize(("ssh", "said"), [
    ("echo 'ssh: connect to host 127.0.0.1 port 1: Connection refused' >&2; exit 255",
     "DUT dut1: ssh failed: ssh: connect to host 127.0.0.1 port 1: Connection refused"),
    ("exit 1", "experiment netemchk needs netem delay, but the kernel of DUT dut1 has no sch_netem")],
    ids=["unreachable", "no-netem"])
def test_make_run_refuses_what_its_duts_tell_in_one_line(tmp_path, ssh, said):
    """make run of a spec that requires netem on a lab whose DUT is reached over SSH (a static lab's, here an ssh
    stand-in on PATH): the DUT checks before any trial (check_requirements: the roles' probes) ran in the recipe
    only, so that a DUT that cannot be reached, or lacks sch_netem, was refused in two lines, the campaign's and
    make's "*** [Makefile:NN: run] Error 2", after the run had taken the lab's lock (its lab.lock left behind). Asked
    by trexlab campaign --check now: one line, nothing written; a DUT that passes the probe passes that check."""
    root = front_door_copy(tmp_path / "checkout")
    short_experiment(root, "netemchk", "description: netem on a DUT reached over SSH\ngenerator: software\n"
                                       "lab: {requires: [sch_netem]}\n")
    static_lab(root, "ssh1")
    env = ssh_stand_in(tmp_path, ssh)
    files = tree(root)
    result = subprocess.run(["make", "--no-print-directory", "run", "EXP=netemchk", "LAB_NAME=ssh1"],
                            capture_output=True, text=True, cwd=root, env=env, timeout=60)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(output) == 1 and said in output[0], (result.returncode, output)
    assert tree(root) == files
    env = ssh_stand_in(tmp_path, "exit 0")
    passes = subprocess.run([str(root / "scripts" / "run-experiment.sh"), "--check-only", "netemchk"],
                            capture_output=True, text=True, env={**env, "LAB_NAME": "ssh1"}, timeout=60)
    assert (passes.returncode, passes.stdout, passes.stderr) == (0, "", ""), passes


def test_make_lab_status_with_a_lab_down_among_others_is_one_line_without_makes_error(tmp_path):
    """make lab-status (no LAB_NAME) with one lab of the checkout down among others up: the check before the recipe
    asked only whether any lab was in its Terraform state, so the recipe listed them, exited 1 and make added its
    "make: *** [Makefile:NN: lab-status] Error 1" after the listing. The listing's lines now come before any recipe,
    joined by "; " into make's one line (as a lab named that is down, or no lab up, already were), exit 2; all up,
    the recipe lists them one a line, 0."""
    root = front_door_copy(tmp_path / "checkout")
    labs = root / ".cache" / "labs"
    (labs / "metal1").mkdir(parents=True)  # a bare-metal lab in its Terraform state: listed, not probed
    (labs / "metal1" / "kind").write_text("static\n")
    (labs / "metal1" / "terraform.tfstate").write_text('{"version": 4, "resources": []}')
    (labs / "metal1" / "lab.tfvars").write_text('topology = "single"\n')
    metal1 = f"lab metal1 (static, single, {labs / 'metal1'}): in its Terraform state (bare-metal machines are not " \
             "probed here)"
    up = subprocess.run(["make", "--no-print-directory", "lab-status"], capture_output=True, text=True, cwd=root,
                        env=front_door_env({}), timeout=60)
    assert up.returncode == 0 and up.stdout.splitlines()[0] == metal1 and up.stderr == "", up
    # A local lab in its Terraform state whose namespace is gone (tl-down4-dut: no such namespace on this host).
    (labs / "down4").mkdir()
    (labs / "down4" / "kind").write_text("local\n")
    plan = {"topology": "single", "state_dir": str(labs / "down4"), "nodes": {"dut": {"netns": "tl-down4-dut"}}}
    (labs / "down4" / "terraform.tfstate").write_text(json.dumps({"outputs": {"plan": {"value": plan}}}))
    down4 = (f"lab down4 (local, single, {labs / 'down4'}): down: dut: namespace tl-down4-dut is gone; no known_hosts "
             f"in {labs / 'down4'}; make lab-up LAB=local LAB_NAME=down4 makes it again")
    files = tree(root)
    script = subprocess.run([str(root / "scripts" / "lab.sh"), "status"], capture_output=True, text=True,
                            env=front_door_env({}), timeout=60)
    assert script.returncode == 1 and script.stdout.splitlines()[:2] == [down4, metal1], script
    made = subprocess.run(["make", "--no-print-directory", "lab-status"], capture_output=True, text=True, cwd=root,
                          env=front_door_env({}), timeout=60)
    output = (made.stdout + made.stderr).strip().splitlines()
    assert made.returncode == 2 and len(output) == 1 and f"{down4}; {metal1}" in output[0], (made.returncode, output)
    assert "Error 1" not in made.stderr and tree(root) == files


def test_make_run_holds_the_lab_from_its_check_to_its_run(tmp_path):
    """make run's check (trexlab campaign --check, before any recipe) found the lab free, then another run took it
    before the recipe's run did: that run was refused in the recipe, its line and make's "*** [Makefile:NN: run]
    Error 2". The check now holds the lab for the recipe's run (trexlab.testbed.lock: hold_for_next_run, and the
    run's __enter__ takes the open file the lock is held on over a socket): another run trying it in between is
    refused, and the recipe's run gets the lab. Here the recipe's script first tries the lab's lock as another run
    would (flock), and holds it a while if it gets it; the campaign's tester is reached through an ssh stand-in
    that fails, so its one point fails at once once it has the lab."""
    root = front_door_copy(tmp_path / "checkout")
    short_experiment(root, "lockrace", "description: a lab taken between make run's check and its run\n"
                                       "generator: software\n")
    lock = static_lab(root, "race1").parent / "lab.lock"
    script = root / "scripts" / "run-experiment.sh"
    script.rename(root / "scripts" / "run-experiment.real.sh")
    other = tmp_path / "other-run"
    script.write_text(f"""#!/bin/sh
real="$(dirname "$0")/run-experiment.real.sh"
case "$1" in --check*) exec "$real" "$@";; esac
(if flock -n 9; then echo took >'{other}'; exec sleep 30; fi; echo refused >'{other}') 9>>'{lock}' &
echo $! >'{other}.pid'
while [ ! -s '{other}' ]; do sleep 0.05; done
exec "$real" "$@"
""")
    script.chmod(0o755)
    env = ssh_stand_in(tmp_path, "echo 'ssh: connect to host 192.0.2.10 port 22: refused' >&2; exit 255")
    try:
        result = subprocess.run(["make", "--no-print-directory", "run", "EXP=lockrace", "LAB_NAME=race1"],
                                capture_output=True, text=True, cwd=root, env=env, timeout=120)
    finally:  # the other run's stand-in, where it took the lab
        if (pid := tmp_path / "other-run.pid").exists() and os.path.exists(f"/proc/{pid.read_text().strip()}"):
            os.kill(int(pid.read_text()), signal.SIGTERM)
    assert other.read_text() == "refused\n", (other.read_text(), result.stderr)
    assert "is in use by" not in result.stderr, result.stderr
    assert "lockrace/" in result.stderr and "point(s)" in result.stderr, result.stderr
    assert lock.read_text() == ""


@pytest.mark.parametrize(("text", "said"), [
    ("{not json", "campaign.json: unreadable (Expecting property name enclosed in double quotes: line 1 column 2 "
                  "(char 1)): not a campaign.json trexlab writes"),
    ("[]", "campaign.json: not a campaign's record (a mapping with its experiment and spec)"),
    ('{"experiment": "demo"}', "campaign.json: not a campaign's record (a mapping with its experiment and spec)"),
    ('{"experiment": "demo", "spec": []}', "campaign.json: not a campaign's record"),
], ids=["not-json", "a-list", "no-spec", "spec-a-list"])
def test_make_report_refuses_a_damaged_campaign_json_in_one_line(tmp_path, text, said):
    """make report EXP=demo whose latest campaign (or CAMPAIGN=) has a campaign.json trexlab did not write (received,
    edited, cut short): trexlab report --check, and trexlab report itself, ended in a traceback (through make one
    long line of it). Now one line naming the file, through make and without it, and nothing written."""
    root = front_door_copy(tmp_path / "checkout")
    shutil.copy2(REPO / "scripts" / "report.sh", root / "scripts" / "report.sh")
    campaign = root / "results" / "demo" / "c1"
    campaign.mkdir(parents=True)
    (campaign / "campaign.json").write_text(text)
    files = tree(root)
    made = subprocess.run(["make", "--no-print-directory", "report", "EXP=demo"], capture_output=True, text=True,
                          cwd=root, env=front_door_env({}), timeout=60)
    output = (made.stdout + made.stderr).strip().splitlines()
    assert made.returncode == 2 and len(output) == 1 and f"{campaign}/{said}" in output[0], (made.returncode, output)
    assert "Traceback" not in made.stderr
    direct = subprocess.run([str(REPO / ".venv" / "bin" / "trexlab"), "report", "demo", "--campaign", str(campaign)],
                            capture_output=True, text=True, cwd=root, env=front_door_env({}), timeout=60)
    assert (direct.returncode, direct.stdout) == (2, ""), direct
    assert direct.stderr.count("\n") == 1 and f"{campaign}/{said}" in direct.stderr, direct.stderr
    assert tree(root) == files
