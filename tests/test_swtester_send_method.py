"""swtester's send and receive methods in the trial contract: provenance names the methods swtester --probe found,
and a trial that sent or counted otherwise (auto fell back to sendmmsg, say the kernel refused a transmit ring
mid-campaign, or counted with bpf where tcx was probed) says so in its notes. No lab: swtester's JSON is faked
here; tests/swtester/test_software_generator.py probes the real one."""

import hashlib
import subprocess
from pathlib import Path

import yaml

from trexlab.generators.software import SoftwareGenerator, trial_from_report
from trexlab.testbed.inventory import load_lab
from trexlab.trial import TrialSpec

SPEC = TrialSpec(offered_load=1_000, duration=1.0, directions="forward", receive_tail=0.5)
PROBED = {"send_method": "tx_ring", "send_methods": {"forward": {"method": "tx_ring", "fallback": None}}}
REFUSED = "PACKET_TX_RING refused on port0: Cannot allocate memory"


def report(method: str, fallback: str | None = None, counted: str | None = None, why: str | None = None) -> dict:
    forward = {"intended": 1_000, "sent": 1_000, "received": 1_000, "late": 0, "duplicates": 0, "reordered": 0,
               "tester_drops": 0, "foreign": 0, "send_duration": 0.999, "send_cpu": 0.01, "valid": True,
               "tags_sent": 0, "tags_received": 0, "tags_lost_or_late": 0, "send_method": method,
               "send_method_fallback": fallback, "threads": 1, "latency": None,
               **({"receive_method": counted, "receive_method_fallback": why} if counted else {})}
    return {"tester": "swtester", "version": "0.1", "send_method": method, "directions": {"forward": forward}}


def test_a_trial_sent_as_probed_has_no_note():
    assert trial_from_report(SPEC, report("tx_ring"), probed=PROBED).notes == ()


def test_a_trial_that_fell_back_says_how_it_sent_and_why():
    result = trial_from_report(SPEC, report("sendmmsg", REFUSED), probed=PROBED)
    assert result.notes == (f"forward: sent with sendmmsg ({REFUSED}), not tx_ring as probed",)


def test_provenance_without_a_method_leaves_every_trial_naming_its_own():
    assert trial_from_report(SPEC, report("tx_ring"), probed={}).notes == ("forward: sent with tx_ring",)


def test_a_report_read_without_provenance_has_no_note():
    assert trial_from_report(SPEC, report("sendmmsg", REFUSED)).notes == ()


def loopback_lab(tmp_path, netns: bool):
    """A loopback lab whose tester is this machine's namespace (netns) or a machine reached over SSH."""
    ports = [{"index": i, "name": f"port{i}", "mac": f"02:00:00:00:00:0{i + 1}", "peer_mac": f"02:00:00:00:00:0{2 - i}"}
             for i in (0, 1)]
    tester = {"ansible_host": "192.0.2.10", "test_ports": ports, **({"trexlab_netns": "tl-sm-tester"} if netns else {})}
    inventory = {"all": {"vars": {"trexlab_lab": {"name": "sm", "kind": "local" if netns else "static",
                                                  "topology": "loopback"}},
                         "children": {"testers": {"hosts": {"tester": tester}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return load_lab(str(tmp_path / "hosts.yml"))


def test_provenance_names_the_swtester_build_by_its_hash_and_an_ssh_testers_kernel_and_cpu(tmp_path, monkeypatch):
    # make swtester rebuilds the binary in place: its path names no build, its hash does.
    generator = SoftwareGenerator(loopback_lab(tmp_path, netns=True), cross_check=False)
    monkeypatch.setattr(generator, "probe", dict)
    described = generator.describe()
    assert described["binary_sha256"] == hashlib.sha256(Path(generator.binary).read_bytes()).hexdigest()
    assert described["tester_host"] is None, "a namespace tester is this machine: the provenance's host facts"
    # An SSH tester's swtester (on its PATH) is hashed there, and its kernel and CPU read, in one login: the host
    # facts are the controller's.
    remote = SoftwareGenerator(loopback_lab(tmp_path, netns=False), cross_check=False)
    asked = []

    def run(argv, **_):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, f"sha256 {'ab' * 32}\nkernel 6.1.0-28-amd64\ncpu AMD EPYC 7302P\n",
                                           "")

    monkeypatch.setattr("trexlab.generators.software.subprocess.run", run)
    assert remote.build_and_host() == {"binary_sha256": "ab" * 32,
                                       "tester_host": {"kernel": "6.1.0-28-amd64", "cpu_model": "AMD EPYC 7302P"}}
    assert len(asked) == 1 and asked[0][0] == "ssh" and "command -v swtester" in asked[0][-1]
    # No swtester there, no cpuinfo model line: None, not a misread line.
    monkeypatch.setattr("trexlab.generators.software.subprocess.run",
                        lambda argv, **_: subprocess.CompletedProcess(argv, 0, "sha256 \nkernel 6.1.0\ncpu \n", ""))
    assert remote.build_and_host() == {"binary_sha256": None, "tester_host": {"kernel": "6.1.0", "cpu_model": None}}


# A trial that times frames (a per-frame timeout here) needs its receive socket: auto counts with bpf there.
TIMED = TrialSpec(offered_load=1_000, duration=1.0, directions="forward", receive_tail=0.5, frame_timeout=0.5)
COUNTING = {**PROBED, "receive_methods": {"forward": {"method": "tcx", "fallback": None}},
            "receive_methods_timed": {"forward": {"method": "bpf", "fallback": None}}}
TCX_REFUSED = "tcx: BPF_LINK_CREATE (tcx ingress) refused: Invalid argument"


def test_a_trial_counted_as_probed_for_its_kind_has_no_note():
    assert trial_from_report(SPEC, report("tx_ring", counted="tcx"), probed=COUNTING).notes == ()
    assert trial_from_report(TIMED, report("tx_ring", counted="bpf"), probed=COUNTING).notes == ()


def test_a_trial_that_counted_otherwise_says_how_and_why():
    result = trial_from_report(SPEC, report("tx_ring", counted="bpf", why=TCX_REFUSED), probed=COUNTING)
    assert result.notes == (f"forward: counted with bpf ({TCX_REFUSED}), not tcx as probed",)
    # tcx in a trial that times frames: not what a timed trial takes.
    result = trial_from_report(TIMED, report("tx_ring", counted="tcx"), probed=COUNTING)
    assert result.notes == ("forward: counted with tcx, not bpf as probed",)
