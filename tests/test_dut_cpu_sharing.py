"""DUTs sharing a CPU: the local dual lab on a host of two CPUs puts both DUTs on CPU 1 (terraform/labs/local), so
a dual-DUT figure there is two translators taking turns on one CPU, not the two devices the paper compared with one
(Lencse & Szilagyi 2024, section 5.2). The lab says so, and the report prints what the lab said beside the figures,
with the machines, kernels and tester they were measured on. (No lab needed: labs and campaigns made here.)"""

import json
from pathlib import Path

from test_analysis import sim_campaign

from trexlab.results import analysis
from trexlab.testbed.inventory import Lab, Node


def lab(*dut_cpus: tuple[int, ...], netns: bool = True) -> Lab:
    nodes = {"tester": Node("tester", "tester", "::1", netns="t-tester" if netns else None, cpus=(0,))}
    for i, cpus in enumerate(dut_cpus, 1):
        nodes[f"dut{i}"] = Node(f"dut{i}", "dut", "::1", netns=f"t-dut{i}" if netns else None, cpus=cpus)
    return Lab("t", "local" if netns else "static", "dual" if len(dut_cpus) > 1 else "single", nodes,
               Path("hosts.yml"))


def test_namespace_duts_on_one_cpu_are_named_in_a_warning():
    shared = lab((1,), (1,))
    assert [n.name for n in shared.duts_sharing_cpus()] == ["dut1", "dut2"]
    (warning,) = shared.warnings()
    assert "DUTs dut1, dut2 forward on the same CPU(s) 1 of this host" in warning
    assert shared.describe()["warnings"] == [warning], "kept in every run's provenance"


def test_duts_with_their_own_cpus_or_machines_give_no_warning():
    assert lab((1,), (2,)).warnings() == [] and lab((1,)).warnings() == []
    # Bare-metal DUTs number the CPUs of machines of their own: CPU 1 of each is not one CPU.
    assert lab((1,), (1,), netns=False).warnings() == []


def test_the_report_prints_the_lab_warnings_of_the_runs_beside_the_figures(tmp_path):
    # Any lab warning: the emulated VM DUT's existed before this one and was not in the report either.
    campaign = Path(sim_campaign(tmp_path, "siit-dual-dut", {"traffic.destination_networks": [1]}, repetitions=2))
    emulated = Node("dut1", "dut", "::1", cpus=(1,), extra={"trexlab_vm_accel": "tcg"})
    warnings = [*Lab("t", "vm", "single", {"dut1": emulated}, Path("hosts.yml")).warnings(), "DUTs share <CPU> 1"]
    for path in campaign.glob("*/rep-*/provenance.json"):  # as a run on such a lab records them
        recorded = json.loads(path.read_text())
        path.write_text(json.dumps({**recorded, "lab": {"name": "t", "warnings": warnings}}))
    disclosure = analysis.method_disclosure(campaign)
    lines = [line for line in disclosure.splitlines() if line.startswith("- ⚠ lab: ")]
    assert len(lines) == 2, "each once, however many runs recorded it"
    assert "describe the emulator\\, not a device" in lines[0], "as Markdown text: punctuation escaped"
    assert lines[1] == "- ⚠ lab: DUTs share \\<CPU\\> 1", "as text, never HTML"


def test_the_report_names_the_kernels_cpus_and_tester_the_figures_were_measured_on(tmp_path):
    # The paper's section 4.1 gives its tester's and DUTs' kernels, CPUs, clocks and RSS hash; the report gave the
    # generator's name and nothing of the machines, though every run's provenance.json records them.
    campaign = Path(sim_campaign(tmp_path, "siit-single-dut", {"traffic.destination_networks": [1]}, repetitions=2))
    tuning = {"kernel": "6.1.0-28-amd64", "cpu_model": "Xeon <E5>", "cpus": [1], "cpufreq": "left as is",
              "rss_4tuple": "skipped: no test port is a NIC (veth)"}
    for path in campaign.glob("*/rep-*/provenance.json"):
        recorded = json.loads(path.read_text())
        path.write_text(json.dumps({**recorded, "host": {"kernel": "6.1.0-28-amd64", "cpu_model": "Xeon <E5>",
                                                         "cpus": 2},
                                    "generator": {"generator": "software", "tester": "swtester",
                                                  "send_method": "sendmmsg", "tester_host": None},
                                    "lab": {"dut_facts": {"dut1": {"dut_tuning": tuning}}, "warnings": []}}))
    lines = [line.replace("\\", "") for line in analysis.method_disclosure(campaign).splitlines()
             if line.startswith("- measured on: ")]
    assert lines == ["- measured on: host kernel 6.1.0-28-amd64, Xeon <E5> (2 CPUs); tester swtester sending by "
                     "sendmmsg; dut1 kernel 6.1.0-28-amd64, Xeon <E5>, CPUs [1], RSS 4-tuple skipped: no test port "
                     "is a NIC (veth), CPU clock left as is"], "once for both runs, every part named"
    assert "Xeon \\<E5\\>" in analysis.method_disclosure(campaign), "as text, never HTML"
