"""Every shipped experiment at its CI scale on the local lab: it runs to the end and its report renders. One
that needs what this kernel lacks (sch_netem) is skipped, its reason naming where make test runs it instead, and
its refusal is checked: it stops early naming what is missing, with nothing changed."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from trexlab.plan.campaign import kernel_has_netem
from trexlab.results.report import render
from trexlab.spec.experiment import load

from labtools import REPO, VENV, node_state

pytestmark = pytest.mark.lab
# experiments/demo runs end to end, through make demo, in test_demo.py; http-download-loss, with its figures
# checked, in test_http_download.py.
OWN_TESTS = ("demo", "http-download-loss")
EXPERIMENTS = sorted(p.parent.name for p in (REPO / "experiments").glob("*/experiment.yml")
                     if p.parent.name not in OWN_TESTS)
LAB_NAMES = {"single": "ex1", "dual": "ex2", "loopback": "ex3"}
#: Single-DUT experiments on a second single-DUT lab, ex4: make test's workers then share the single-DUT ones
#: (about two and a half minutes on each lab) instead of one worker running them all.
ON_EX4 = ("siit-single-dut", "siit-single-dut-nat46", "siit-single-dut-nat46-latency", "siitperf-frame-sizes")


def spec(name: str) -> dict:
    return yaml.safe_load((REPO / "experiments" / name / "experiment.yml").read_text())


def topology(name: str) -> str:
    return spec(name)["lab"]["topology"]


def lab_name(name: str) -> str:
    return "ex4" if name in ON_EX4 else LAB_NAMES[topology(name)]


def campaign(name: str, lab, results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV / "bin" / "trexlab"), "campaign", f"experiments/{name}", "--scale", "ci",
                           # Its own ceilings: tester-selftest records them, never into the repo's results/.
                           "--results", str(results), "--ceilings", str(results / "tester-ceilings.json"),
                           "--inventory", str(lab.inventory)],
                          capture_output=True, text=True, timeout=900, cwd=REPO)


def lab_networks(lab: str) -> int:
    """The destination networks lab `lab` is configured for: those of the first CI point of the first experiment
    run on it, whose campaign then finds the lab configured so (configured.json) and does not apply
    playbooks/site.yml a second time (ex2, ex4: the SIIT experiments' 4 networks). A later experiment with
    other networks applies it itself, as before."""
    first = next(n for n in EXPERIMENTS if lab_name(n) == lab)
    point = load(REPO / "experiments" / first).scaled("ci").points()[0]
    return int((point.spec.get("traffic") or {}).get("destination_networks", 1))


def kernel_state(lab) -> dict:
    """What a campaign must give back: qdiscs, nftables and links of every node (routes follow the sweep)."""
    return {node.name: {k: v for k, v in node_state(node.netns).items() if k in ("tc", "nft", "links")}
            for node in (lab.tester, *lab.duts)}


#: The experiments that need netem on their DUT: on a kernel without sch_netem they stop before any change.
NEEDS_NETEM = [n for n in EXPERIMENTS if "sch_netem" in spec(n)["lab"].get("requires", [])]
#: Where make test runs the others' VM-lab counterparts: the campaigns that file starts.
VM_EXPERIMENTS = REPO / "tests" / "vm" / "test_vm_experiments.py"


def not_run_here(name: str) -> str:
    """Why experiment `name` cannot run to its end on this kernel, and where make test runs it instead (if at all):
    the reason its skip gives, so that the summary of make test shows which experiments ran nowhere."""
    elsewhere = (f"it runs to its end on the VM lab in {VM_EXPERIMENTS.relative_to(REPO)}"
                 if f'campaign("{name}"' in VM_EXPERIMENTS.read_text() else "no test of make test runs it to its end")
    return f"{name} needs sch_netem, which this kernel lacks (its refusal is checked here): {elsewhere}"


# Each assertion is about the run, not its figures (it ends, restores the DUTs, its report renders): no busy CPU
# changes them, so make test runs these beside other such tests, one worker per lab.
@pytest.mark.unmeasured
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"lab-{lab_name(n)}"))
                                  for n in EXPERIMENTS])
def test_shipped_experiment_runs_at_ci_scale(lab_factory, tmp_path, name):
    if name in NEEDS_NETEM and not kernel_has_netem():
        pytest.skip(not_run_here(name))
    lab = lab_factory(lab_name(name), topology(name), lab_networks(lab_name(name)))
    before = kernel_state(lab)
    result = campaign(name, lab, tmp_path)
    assert kernel_state(lab) == before, "the campaign restored every DUT"
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout)
    assert outcome["failed"] == [] and outcome["done"] == outcome["points"] > 0
    html = render(outcome["campaign"])
    text = html.read_text()
    assert "Traceback" not in text and "data:image/png" in text
    if lab.duts_sharing_cpus():  # the dual lab on a host of two CPUs: its figures are read with that said
        assert "forward on the same CPU(s)" in text, "the lab's warning is in the report"


@pytest.mark.unmeasured
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xdist_group(f"lab-{lab_name(n)}"))
                                  for n in NEEDS_NETEM])
def test_an_experiment_needing_netem_stops_naming_it_where_the_kernel_lacks_it(lab_factory, tmp_path, name):
    if kernel_has_netem():
        pytest.skip("this kernel has sch_netem: the refusal cannot be shown here (the experiments run instead)")
    lab = lab_factory(lab_name(name), topology(name), lab_networks(lab_name(name)))
    before = kernel_state(lab)
    result = campaign(name, lab, tmp_path)
    assert kernel_state(lab) == before, "the refused campaign changed nothing"
    assert result.returncode == 2, result.stderr[-2000:]
    assert "no sch_netem" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / name).exists(), "nothing ran, nothing was written"
