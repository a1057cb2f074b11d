"""Running an experiment campaign: every sweep point, repeated, resumable, every trial kept.

    results/<experiment>/<campaign-id>/campaign.json     the expanded spec and its points
    results/<experiment>/<campaign-id>/points.jsonl      one line per point attempt: done / failed + error
    results/<experiment>/<campaign-id>/<point-id>/rep-<k>/   run directories (trexlab.results.store)

The campaign id defaults to a hash of the (scaled) spec, so running the same
experiment again resumes it: finished points and repetitions are skipped, the
interrupted repetition is redone. A failing point is recorded with its error
and the campaign goes on. For each point the DUT is configured through the
playbooks (routing for the point's destination networks, then the
experiment's impairment/SIIT blocks) and restored afterwards: after the point, or,
where the next point applies the same blocks to the same networks with roles that replace
what they applied (REPLACED_IN_PLACE), after the last such point.

The spec's ``order`` says when each repetition runs. sequential: all of a point's repetitions, then the next
point's. interleaved: in rounds, round r running repetition r of every point (repetitions_per_round n: its
repetitions (r-1)n+1 .. rn), the throughput runs a point's rate comes from first, in rounds of their own; the
points of each round in an order shuffled with a seed kept in campaign.json (round_order), no round beginning with
the point the last one ended with. A disturbance of the lab that lasts minutes (another job's load, a hypervisor's
steal) then lands on one round's repetitions of several points, where in sequence it lands on many repetitions of
one point and moves that point's median against the others. Each visit of a point configures the DUT for it, so
interleaving costs up to a configuration per point and round. A campaign interrupted mid-round resumes with the
round's points that had not run their repetitions, then the next rounds, in the same orders: no stored repetition
is run again, none is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import yaml

from trexlab import impairment, rolevalues
from trexlab.params import InvalidParameter
from trexlab.paths import paths
from trexlab.plan import estimate
from trexlab.plan.rate_from import measuring_line
from trexlab.plan.repetition import SUMMARY, next_repetition, order_text, summary_lines
from trexlab.plan.runplan import (
    RESULTS_ROOT,
    RunPlan,
    check_on_lab,
    default_campaign_id,
    execute,
    lab_identity,
    plan_campaign,
)
from trexlab.procedures import selftest
from trexlab.procedures.http_download import DownloadError
from trexlab.progress import trial_text
from trexlab.results.analysis import export_campaign
from trexlab.results.provenance import git_commit
from trexlab.results.store import (
    DamagedRecord,
    append_point_record,
    dumps,
    first_difference,
    loads,
    make_directories,
    read_json,
    read_point_log,
    write_json_atomic,
)
from trexlab.spec.experiment import (
    DUT_CONFIG,
    ENDPOINTS_CONFIG,
    Experiment,
    InvalidExperiment,
    dut_role_vars,
    procedure_needs_endpoints,
    role_vars,
    with_role_defaults,
)
from trexlab.testbed.endpoints import LabView
from trexlab.testbed.inventory import Lab, LabError, load_lab
from trexlab.testbed.lock import LabLock
from trexlab.trial import GeneratorError


class CampaignError(RuntimeError):
    """The campaign cannot run at all here (missing kernel feature, no lab); one line."""


class PlaybookError(RuntimeError):
    """A playbook the campaign applies to the lab (DUT configuration, TCP endpoints) failed; one line naming the
    playbook and its last failed task."""


def campaign_id(experiment: Experiment) -> str:
    return default_campaign_id(experiment)


NETEM_PROBE = paths().roles / "netem" / "files" / "has-netem.sh"
JOOL_PROBE = paths().roles / "siit_jool" / "files" / "can-load-jool.sh"


def kernel_has_netem() -> bool:
    """Whether this host's kernel has sch_netem: the probe roles/netem runs on a DUT, run here."""
    return subprocess.run(["sh", str(NETEM_PROBE)], capture_output=True).returncode == 0


def dut_passes(node, probe: Path) -> bool:
    """Run one of the roles' probes on a DUT (its namespace here, SSH elsewhere); True when it exits 0."""
    try:
        result = subprocess.run(node.command(["sh", "-c", probe.read_text()]), capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise CampaignError(f"DUT {node.name} did not answer within 120 s") from None
    if result.returncode == 255 and node.netns is None:  # ssh's own failure, not the probe's answer
        raise CampaignError(f"DUT {node.name}: ssh failed: {result.stderr.decode(errors='replace').strip()[:200]}")
    return result.returncode == 0


#: What each DUT configuration block's role keeps in the DUT's state directory while it is applied (rolevalues, their
#: one source). roles/siit_tayga's directory may be any below the DUT's state directory (a spec's dut.siit.dir): it
#: is known by the configuration the role writes there first, and names the device the role made in its record.
DUT_CONFIG_MARKERS = rolevalues.DUT_CONFIG_MARKERS
TAYGA_CONFIG, TAYGA_DEVICE_RECORD = rolevalues.TAYGA_CONFIG, rolevalues.TAYGA_DEVICE_RECORD


def dut_config_left(lab: Lab, state_root: str = rolevalues.STATE_ROOT) -> dict[str, list[tuple[str, dict]]]:
    """The DUT configuration blocks the lab's DUTs carry now, by block: per DUT it is applied on, (its name, the
    role's variables that remove it: for TAYGA its directory and recorded device, wherever a spec put them).

    A campaign's points run on the DUT as its spec configures it: one block applied from before (a playbook run
    by hand, as the README shows for playbooks/dut-reference.yml, or a campaign killed during a point) would be
    in every figure, unseen. One remote call per DUT."""
    found: dict[str, list[tuple[str, dict]]] = {}
    for node in lab.duts:
        own = rolevalues.node_state_dir(lab.name, node.name, state_root)
        names = " ".join(shlex.quote(m) for m in DUT_CONFIG_MARKERS.values())
        tayga = shlex.quote(DUT_CONFIG_MARKERS["siit"])
        # Each marker found, then per TAYGA directory (the default one, and any holding its configuration) a line
        # "siit<TAB>directory<TAB>recorded device".
        script = (f'cd {shlex.quote(own)} 2>/dev/null || exit 0; for f in {names}; do [ -e "$f" ] && echo "$f"; '
                  f'done; {{ [ -d {tayga} ] && echo ./{tayga}; find . -mindepth 2 -type f '
                  f'-name {shlex.quote(TAYGA_CONFIG)} -exec dirname {{}} + ; }} | sort -u | while read -r d; do '
                  f'printf "siit\t%s\t%s\n" "${{d#./}}" "$(cat "$d"/{TAYGA_DEVICE_RECORD} 2>/dev/null)"; '
                  'done; exit 0')
        try:
            result = subprocess.run(node.command(["sh", "-c", script]), capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise CampaignError(f"DUT {node.name} did not answer within 120 s") from None
        if result.returncode != 0:
            raise CampaignError(f"DUT {node.name}: could not read its state directory: "
                                f"{result.stderr.strip()[:200] or f'exit code {result.returncode}'}")
        lines = result.stdout.splitlines()
        for block, marker in DUT_CONFIG_MARKERS.items():
            if block != "siit" and marker in lines:
                found.setdefault(block, []).append((node.name, {}))
        for line in lines:
            if not line.startswith("siit\t"):
                continue
            _, directory, device = (line.split("\t") + [""])[:3]
            try:  # read from the DUT, passed to the role that removes them: held to the spec's own rules
                rolevalues.check_state_subdir("dir", f"{rolevalues.node_state_dir(lab.name, node.name)}/{directory}")
                removal = {"siit_tayga_dir": f"{own}/{directory}"}
                if device:
                    removal["siit_tayga_device"] = rolevalues.check_interface("device", device)
            except InvalidParameter as exc:
                raise CampaignError(f"DUT {node.name}: TAYGA's state in {own}/{directory}: {exc}") from None
            found.setdefault("siit", []).append((node.name, removal))
    return found


def check_requirements(experiment: Experiment, lab: Lab | None) -> None:
    """Fail before any point runs when the lab cannot give what the experiment needs.

    The kernel features are asked of each DUT's own kernel (the host's on the local lab, the guest's on
    the VM lab), with the same probes the roles use."""
    needs = set(experiment.spec.get("lab", {}).get("requires") or [])
    if procedure_needs_endpoints(experiment.spec["procedure"]["name"], experiment.spec["procedure"].get("params")):
        try:
            if lab is None:
                raise LabError(f"procedure {experiment.spec['procedure']['name']} needs a lab with client and "
                               f"server nodes; generator {experiment.generator} has none")
            lab.client, lab.server  # noqa: B018  (each raises LabError naming the missing node)
        except LabError as exc:
            raise CampaignError(f"experiment {experiment.name}: {exc}") from None
    if experiment.generator != "sim" and lab is not None:
        if lab.topology != experiment.topology:
            raise CampaignError(f"experiment {experiment.name} needs topology {experiment.topology}, "
                                f"the lab {lab.name} is {lab.topology}")
    if lab is None or not lab.duts:
        return
    if "sch_netem" in needs and (lacking := [d.name for d in lab.duts if not dut_passes(d, NETEM_PROBE)]):
        raise CampaignError(f"experiment {experiment.name} needs netem delay, but the kernel of DUT "
                            f"{', '.join(lacking)} has no sch_netem: run it on the VM lab (LAB=vm) or a DUT with "
                            "netem")
    if "jool" in needs and (lacking := [d.name for d in lab.duts if not dut_passes(d, JOOL_PROBE)]):
        raise CampaignError(f"experiment {experiment.name} needs the Jool kernel module, which the kernel of DUT "
                            f"{', '.join(lacking)} cannot load: run it on the VM lab (LAB=vm)")


def lab_kind_warning(experiment: Experiment, lab: Lab | None) -> str | None:
    """A warning when the lab is of another kind than the experiment declares (lab.kind), else None.

    Not an error: a spec made on the local lab runs as well on bare metal, where its figures may differ (other
    DUT, other tester ceiling): the reader must learn that the figures come from another kind of lab."""
    declared = experiment.lab_kind
    if lab is None or declared is None or lab.kind == declared:
        return None
    return (f"experiment {experiment.name} declares a {declared} lab (lab.kind), lab {lab.name} is {lab.kind}: "
            "its figures are not those of the declared set-up")


def configured_networks(lab: Lab) -> int | None:
    """The destination networks the lab's last complete playbooks/site.yml configured (its record beside the
    inventory), or None where there is no such record."""
    try:
        return int(json.loads((Path(lab.inventory).parent / "configured.json").read_text())["trexlab_networks"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def planned_endpoint_facts(lab: Lab, endpoints: dict) -> dict[str, dict]:
    """The facts roles/tcp_endpoints reports, by node name, once applied on the lab's server and client with these
    settings (the spec's endpoints block over the role's defaults): what a campaign's runs will find
    (LabView.endpoint_facts). LabError when the lab has no client or server node."""
    defaults = yaml.safe_load((paths().roles / ENDPOINTS_CONFIG[1] / "defaults" / "main.yml").read_text())
    want = {key: endpoints.get(key, defaults.get(f"{ENDPOINTS_CONFIG[1]}_{key}"))
            for key in ("http_file_mib", "http_port", "http_file", "iperf3_ports", "congestion_control",
                        "segmentation_offload")}
    # Both nodes' TCP: how the frames are cut is part of what the DUT's impairments act on (facts written before
    # the role capped the segments per packet lack it, and the role is applied again).
    tcp = {"congestion_control": want["congestion_control"] or None,
           "segmentation_offload": bool(want["segmentation_offload"])}
    return {lab.server.name: {"role": "server", "http_file_bytes": rolevalues.http_file_bytes(want["http_file_mib"]),
                              "http_port": int(want["http_port"]), "http_path": "/" + str(want["http_file"]),
                              "iperf3_ports": [int(p) for p in want["iperf3_ports"]], **tcp},
            lab.client.name: {"role": "client", **tcp}}


def endpoints_configured_as(lab: Lab, endpoints: dict) -> bool:
    """Whether roles/tcp_endpoints is applied on the lab's client and server with exactly these settings (the
    spec's endpoints block over the role's defaults), as the facts it keeps beside the inventory say."""
    try:
        planned = planned_endpoint_facts(lab, endpoints)
        return all(all((lab.node_facts(name).get("tcp_endpoints") or {}).get(key) == value
                       for key, value in facts.items()) for name, facts in planned.items())
    except (LabError, AttributeError, TypeError, ValueError):
        return False


#: DUT blocks whose role records what it applied and, applied again with other settings, removes that first and
#: applies the new settings as a whole (roles/netem: its recorded qdiscs and nftables table, made anew with their
#: counters at 0 where the settings differ; roles/siit_jool: Jool replaces the instance atomically). Between two
#: points with the same such blocks the campaign leaves the first point's configuration for the second to
#: replace, instead of removing it and applying again: on an emulated DUT (the VM lab) each playbook run costs
#: seconds to tens of seconds.
REPLACED_IN_PLACE = frozenset({"impairment", "siit_jool"})


def configured_blocks(spec: dict) -> tuple[str, ...]:
    """The DUT blocks a point applies, in order: an impairment block that impairs nothing (delay_ms 0 with
    selective_every_nth: a sweep's loss-free point) is left out, as if absent: its role run would apply nothing."""
    dut = spec.get("dut") or {}
    return tuple(block for block in DUT_CONFIG if dut.get(block) is not None and not (
        block == "impairment" and impairment.configures_nothing(with_role_defaults(block, dut[block]))))


def dut_config_key(spec: dict) -> tuple | None:
    """What a point's DUT configuration consists of (destination networks, blocks), or None where some block's
    role does not replace its own configuration (the point's configuration is then removed after it)."""
    blocks = configured_blocks(spec)
    if not blocks or not set(blocks) <= REPLACED_IN_PLACE:
        return None
    return (spec.get("traffic") or {}).get("destination_networks", 1), blocks


def difference_text(before, now, prefix: str) -> str | None:
    """The first difference of two JSON values (first_difference) in words; None when equal."""
    if (found := first_difference(before, now, prefix)) is None:
        return None
    key, then, later = found
    return f"{key}: {dumps(then)} then, {dumps(later)} now"


#: What fails one point (recorded with its error, the campaign going on); anything else stops the campaign.
POINT_ERRORS = (GeneratorError, PlaybookError, DownloadError, InvalidParameter, InvalidExperiment, LabError,
                subprocess.SubprocessError, OSError)

#: An interleaved campaign's stages: the throughput runs a point's rate comes from (RFC 8219: all of them before its
#: procedure's first repetition), then the procedure's repetitions.
RATE_STAGE, PROCEDURE_STAGE = 0, 1


def order_seed(campaign: str) -> int:
    """The seed of an interleaved campaign's round orders: from its id, so that a resumed campaign (same id) goes on
    in the orders it began with."""
    return int(hashlib.sha256(campaign.encode()).hexdigest()[:8], 16)


def round_order(seed: int, stage: int, round_: int, point_ids: list[str]) -> list[str]:
    """The order of one round of an interleaved campaign: every point of the campaign, shuffled by a generator
    seeded with (seed, stage, round) alone, so that each round's order is the same whichever points still have
    repetitions in it (a resumed campaign's); the round runs those that have, in this order (_run_interleaved
    swaps its first two where the first is the point the round before ended with)."""
    shuffled = list(point_ids)
    random.Random(f"{seed}/{stage}/{round_}").shuffle(shuffled)
    return shuffled


class Campaign:
    def __init__(self, experiment: Experiment, results_root: str | Path = RESULTS_ROOT, campaign: str | None = None,
                 inventory: str | None = None, progress: Callable[[str], None] | None = None,
                 ansible_playbook: str | None = None, ceilings: str | Path = selftest.CEILINGS_FILE):
        self.experiment = experiment
        self._report = progress or (lambda line: None)
        self.lab = None if experiment.generator == "sim" else load_lab(inventory)
        # Every point's plan, all valid, before anything else: nothing touches a host until they are.
        self._eta: estimate.Eta | None = None  # set when the campaign runs
        self.plans = plan_campaign(experiment, results_root, campaign, lab=self.lab, ceilings=ceilings)
        self.id = campaign if campaign is not None else campaign_id(experiment)
        self.dir = Path(results_root) / experiment.name / self.id
        # The ansible-playbook of the environment trexlab runs in (make setup's .venv).
        self.ansible_playbook = ansible_playbook or str(Path(sys.executable).parent / "ansible-playbook")
        self.points = experiment.points()
        self.ceilings = Path(ceilings)  # the tester's self-test ceilings (trexlab.procedures.selftest)
        self._based_on_networks = None  # destination networks site.yml last configured in this run
        # The removal a point left for the next one, which applies the same blocks (dut_config_key): done by the
        # campaign's end at the latest.
        self._pending_undo: list[tuple[str, dict]] = []
        self._dut_config_left_removed = False  # remove_dut_config_left ran (once, before the first configuration)
        self._pending_spec: dict = {}  # the spec of the point that left it
        #: How the repetitions are ordered: kept in campaign.json and in each repetition's provenance.
        self.order: dict = ({"order": "interleaved", "seed": order_seed(self.id),
                             "repetitions_per_round": experiment.repetitions_per_round}
                            if experiment.order == "interleaved" else {"order": "sequential"})
        # The repetitions this run ran or said were done earlier: an interleaved campaign visits each point once per
        # round, and each visit passes the point's finished repetitions again (said once, counted once by the ETA).
        self._said_skipped: set[tuple[str, str, int]] = set()

    # -- bookkeeping -----------------------------------------------------------------------
    def progress(self, line: str) -> None:
        """Show a progress line and keep it in <campaign dir>/campaign.log (the playbook entry shows no live output)."""
        self._report(line)
        if self.dir.is_dir():
            with open(self.dir / "campaign.log", "a") as log:
                # UTC with its offset, as provenance.json's times: a local time without one read as another
                # hour on a machine (or by a reader) in another zone, beside the run's own records.
                log.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}\n")

    def status(self) -> dict[str, dict]:
        """Last recorded outcome per point id."""
        try:
            return read_point_log(self.dir)
        except DamagedRecord as exc:
            raise CampaignError(f"{exc}: remove {self.dir} to measure anew") from None

    def record(self, point, status: str, error: str | None = None, seconds: float = 0.0) -> None:
        append_point_record(self.dir, {"point": point.point_id, "index": point.index, "values": point.values,
                                       "status": status, "error": error, "seconds": round(seconds, 3),
                                       "time": time.time()})

    # -- one point -------------------------------------------------------------------------
    def playbook(self, name: str, extra: dict, limit: str | None = None) -> None:
        if self.lab is None:  # a sim campaign configures nothing
            raise LabError(f"{name}: a playbook needs a lab, and this campaign has none (generator sim)")
        argv = [self.ansible_playbook, "-i", str(self.lab.inventory), str(paths().root / name), "-e", json.dumps(extra),
                *(["--limit", limit] if limit else [])]
        result = subprocess.run(argv, capture_output=True, text=True, cwd=paths().root,
                                env={**os.environ, "ANSIBLE_CONFIG": str(paths().ansible_cfg)})
        if result.returncode != 0:
            failed = [line for line in result.stdout.splitlines() if "fatal:" in line or "FAILED" in line]
            raise PlaybookError(f"{name} failed: {(failed or ['see ansible output'])[-1].strip()[:300]}")

    def configure_dut(self, spec: dict) -> list[tuple[str, dict]]:
        """Apply the point's DUT configuration; return what must be undone afterwards."""
        if self.lab is None or not self.lab.duts:
            return []
        networks = (spec.get("traffic") or {}).get("destination_networks", 1)
        # The base configuration (routing for the point's networks, tuning) changes only with the number of
        # networks: every point restores what it adds on top. Applying it again would change nothing but
        # costs half a minute per point on an emulated (VM lab) DUT.
        # The same holds for a lab whose last complete site.yml (make configure, or an earlier campaign)
        # recorded this number of networks: lab-up removes that record, and site.yml removes it first thing.
        if networks != self._based_on_networks:
            if configured_networks(self.lab) == networks:
                self.progress(f"the lab is configured for {networks} destination network(s) (configured.json "
                              "beside the inventory): playbooks/site.yml not applied again")
            else:
                self.playbook("playbooks/site.yml", {"trexlab_networks": networks})
            self._based_on_networks = networks
        undo = []
        for block in configured_blocks(spec):  # {} applies the role with its defaults
            playbook, role = DUT_CONFIG[block]
            extra = {**dut_role_vars(block, spec["dut"][block]), "trexlab_networks": networks}
            self.playbook(playbook, {**extra, f"{role}_state": "present"})
            undo.append((playbook, {**extra, f"{role}_state": "absent"}))
        return undo

    def remove_dut_config_left(self) -> None:
        """Before the campaign's first DUT configuration (after its first point's generator was made): DUT
        configuration applied from before this campaign is removed, each block named, so that the points' figures
        are those of the DUT their spec declares."""
        if self.lab is None or not self.lab.duts:
            return
        for block, applied in dut_config_left(self.lab).items():
            playbook, role = DUT_CONFIG[block]
            nodes = [node + "".join(f", {k.removeprefix(role + '_')} {v}" for k, v in removal.items())
                     for node, removal in applied]
            self.progress(f"the DUT configuration dut.{block} ({playbook}) is applied on {'; '.join(nodes)} from "
                          "before this run (by hand, or by a run killed during a point): removed, as it would be in "
                          "every figure")
            if not any(removal for _, removal in applied):
                self.playbook(playbook, {f"{role}_state": "absent"})
                continue
            for node, removal in applied:  # where it is on each DUT: each DUT's own
                self.playbook(playbook, {**removal, f"{role}_state": "absent"}, limit=node)
        self._dut_config_left_removed = True

    def undo_pending(self) -> None:
        """Remove what the last point left configured for a next one (in the reverse order of applying)."""
        undo, self._pending_undo = self._pending_undo, []
        for playbook, extra in reversed(undo):
            self.playbook(playbook, extra)

    def run_point(self, point, k: int, n: int, plan: RunPlan | None = None, next_spec: dict | None = None,
                  upto: int | None = None, stage: int = PROCEDURE_STAGE, order: dict | None = None) -> None:
        """One point: its generator first (it may fail without leaving the DUT configured), then the DUT's
        configuration, the plan's repetitions, and the DUT restored: at once, or, where next_spec (the point that
        runs next) applies the same blocks to the same networks (dut_config_key), by that point's configuration
        replacing it. An interleaved campaign's visit runs the repetitions up to upto (of the throughput runs for
        the rate at stage RATE_STAGE), with order (its round and place) in their provenance."""
        plan = plan or self.plans[point.index]
        key = dut_config_key(point.spec)
        generator = plan.create_generator()
        try:
            if not self._dut_config_left_removed:
                self.remove_dut_config_left()
            if self._pending_undo and key is not None and self._pending_spec == point.spec:
                # The same point again (an interleaved campaign's round of this point alone, after a round that
                # ended with it): the DUT is configured for it already.
                undo = self._pending_undo
                self.progress(f"point {k}/{n} {point.point_id}: the DUT is configured for it already (the point "
                              "before was the same)")
            else:
                if self._pending_undo and dut_config_key(self._pending_spec) != key:
                    self.undo_pending()
                undo = self.configure_dut(point.spec)
            self._pending_undo = []  # replaced by this point's configuration
            finished = False
            current = {"repetition": 0, "rate repetition": 0}  # the repetition whose trials run now
            try:
                # Each trial's end too (the CLI shows them): a repetition lasts minutes (siit-single-dut: 8 min
                # expected, dry run), which passed with no line on the terminal or in campaign.log.
                def trial_done(what: str, phase: str, info: dict) -> None:
                    if phase not in ("repetition", "resume") and info.get("done"):
                        self.progress(f"point {k}/{n} {point.point_id}: {what} {trial_text(phase, info)}")

                def said_before(phase: str, info: dict, which: str) -> bool:
                    """A finished repetition that an earlier visit of the point ran or said was done earlier."""
                    if phase != "repetition":
                        return False
                    said = (point.point_id, which, info["repetition"])
                    if info.get("skipped") and said in self._said_skipped:
                        return True
                    self._said_skipped.add(said)
                    return False

                def progress(phase: str, info: dict) -> None:
                    if said_before(phase, info, "procedure"):
                        return
                    if phase == "repetition":
                        current["repetition"] = info["repetition"]
                    trial_done(f"repetition {current['repetition']},", phase, info)
                    if phase == "repetition" and self._eta is not None:
                        (self._eta.repetition_skipped if info.get("skipped") else self._eta.repetition_started)(
                            point.point_id)
                    if phase == "resume":
                        self.progress(f"point {k}/{n} {point.point_id}: repetition {info['repetition']} resumed: "
                                      f"{info['replayed']} logged trial(s) replayed, not run again")
                    if phase == "repetition":
                        self.progress(f"point {k}/{n} {point.point_id}: repetition {info['repetition']}/"
                                      f"{info['repetitions']}{' (done earlier)' if info.get('skipped') else ''}"
                                      f"{self.eta()}")

                def rate_progress(phase: str, info: dict) -> None:
                    if said_before(phase, info, "rate"):
                        return
                    if phase == "repetition":
                        current["rate repetition"] = info["repetition"]
                    trial_done(f"throughput for the rate, repetition {current['rate repetition']},", phase, info)
                    if phase == "repetition":
                        done = " (done earlier)" if info.get("skipped") else ""
                        self.progress(f"point {k}/{n} {point.point_id}: throughput for the rate, repetition "
                                      f"{info['repetition']}/{info['repetitions']}{done}")

                def say(line: str) -> None:
                    self.progress(f"point {k}/{n} {point.point_id}: {line}")

                order = order or self.order
                if stage == RATE_STAGE and plan.rate_from is not None:
                    execute(plan.rate_from, generator, progress=rate_progress, say=say, upto=upto, order=order)
                else:
                    if plan.rate_source:  # a stored campaign's, known before the run (execute says a measured one)
                        say(measuring_line(plan.rate_source))
                    summary = execute(plan, generator, progress=progress, rate_progress=rate_progress, say=say,
                                      upto=upto, order=order)
                    if upto is None or next_repetition(plan.repetitions, plan.output) is None:
                        # The point's figures with their limits and method, as the procedure CLI prints them.
                        method = read_json(plan.output / SUMMARY).get("method")
                        for line in summary_lines(summary, method):
                            self.progress(f"point {k}/{n} {point.point_id}: {line}")
                finished = True
            finally:
                if finished and key is not None and next_spec is not None and dut_config_key(next_spec) == key:
                    self._pending_undo, self._pending_spec = undo, point.spec
                    self.progress(f"point {k}/{n} {point.point_id}: its DUT configuration is left for the next point "
                                  "to replace (the same blocks and networks)")
                else:
                    for playbook, extra in reversed(undo):
                        self.playbook(playbook, extra)
        finally:
            generator.close()

    @contextlib.contextmanager
    def tcp_endpoints(self, needed: bool):
        """The lab's client and server configured (roles/tcp_endpoints, with the spec's endpoints block) while the
        points run, when the procedure runs on them; removed again afterwards, as each point's DUT configuration is."""
        procedure = self.experiment.spec["procedure"]
        if not needed or self.lab is None or not procedure_needs_endpoints(procedure["name"], procedure.get("params")):
            yield
            return
        playbook, role = ENDPOINTS_CONFIG
        settings = role_vars(role, self.experiment.spec.get("endpoints") or {})
        if endpoints_configured_as(self.lab, self.experiment.spec.get("endpoints") or {}):
            # Nothing to change, so nothing to restore: they stay as found (half a minute each way saved).
            self.progress(f"the TCP endpoints are configured as this experiment needs them ({playbook} applied "
                          "earlier, its facts beside the inventory): left as they are")
            yield
            return
        self.progress(f"configuring the TCP endpoints ({playbook})")
        try:
            self.playbook(playbook, {**settings, f"{role}_state": "present"})
        except PlaybookError as exc:
            self.playbook(playbook, {**settings, f"{role}_state": "absent"})
            raise CampaignError(str(exc)) from None
        try:
            yield
        finally:
            self.playbook(playbook, {**settings, f"{role}_state": "absent"})

    # -- the whole campaign -------------------------------------------------------------
    def lab_view(self) -> LabView:
        """The lab as the points will find it: with the TCP endpoints this campaign configures (tcp_endpoints)
        before its first point, when its procedure runs on them."""
        procedure = self.experiment.spec["procedure"]
        if self.lab is None or not procedure_needs_endpoints(procedure["name"], procedure.get("params")):
            return LabView(self.lab)
        try:
            return LabView(self.lab, planned_endpoint_facts(self.lab, self.experiment.spec.get("endpoints") or {}))
        except LabError as exc:
            raise CampaignError(f"experiment {self.experiment.name}: {exc}") from None

    def check_points_on_lab(self) -> None:
        """Procedure.check_lab of every point still to run, before the campaign makes its directory or configures
        any host: a point the lab refuses, wherever it lies in the sweep, stops the campaign with nothing touched."""
        view = self.lab_view()
        done = {pid for pid, r in self.status().items() if r["status"] == "done"}
        for point in self.points:
            if point.point_id in done:
                continue  # not run again: what the lab is now does not concern it
            try:
                check_on_lab([self.plans[point.index]], view)
            except (InvalidParameter, LabError, GeneratorError) as exc:
                raise CampaignError(f"experiment {self.experiment.name}: point {point.index} ({point.point_id}): "
                                    f"{exc}") from None

    def eta(self) -> str:
        """The remaining lab time: the dry run's estimate, refined by the repetitions measured so far."""
        return "" if self._eta is None else self._eta.text()

    def check(self) -> None:
        """What run() refuses before it changes a host or writes anything, asked without doing either: the lab held
        by another run (LabLock.check_free), then _check_before_points. make run asks it before its recipe (trexlab
        campaign --check), so that through make a refusal is one line, not the campaign's and make's "*** [...]
        Error 2"; run() checks it all again, holding the lock. Passed, it holds the lab for make's recipe's run
        (LabLock.hold_for_next_run), so that no run takes it in between."""
        lock = None if self.lab is None else LabLock(self.lab, f"campaign {self.experiment.name}/{self.id}")
        if lock is not None:
            lock.check_free()
        self._check_before_points(say=lambda line: None)
        if lock is not None:
            lock.hold_for_next_run()

    def _check_before_points(self, say: Callable[[str], None]) -> list[estimate.PointPlan]:
        """_check_before_hosts, then what only the DUTs tell (check_requirements: the roles' probes, which change
        nothing, over SSH where a DUT is not a namespace here: a DUT that cannot be reached or lacks a kernel feature
        the spec requires) and every point's lab checks. Returns the lab time's basis."""
        estimates = self._check_before_hosts(say)
        check_requirements(self.experiment, self.lab)
        self.check_points_on_lab()
        return estimates

    def _check_before_hosts(self, say: Callable[[str], None]) -> list[estimate.PointPlan]:
        """The lab time (refused when it cannot be estimated; the ETA's basis, returned), a campaign directory begun
        with another spec or lab (its warnings to say), a damaged ceilings file (stops the campaign here, not at
        every point)."""
        estimates = estimate.checked_plan(self.experiment)
        self.check_resumable(say)
        try:
            selftest.read_ceilings(self.ceilings)
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
        return estimates

    def run(self) -> dict:
        if self.lab is None:
            return self._run()
        # One campaign per lab; what a crashed campaign left running is stopped before anything is configured.
        with LabLock(self.lab, f"campaign {self.experiment.name}/{self.id}", self.progress):
            return self._run()

    @contextlib.contextmanager
    def _undone_at_the_end(self):
        """What the points left configured for a next point is removed when the campaign ends, however it ends
        (a next point that failed before configuring, an interrupt), before the TCP endpoints are."""
        try:
            yield
        finally:
            self.undo_pending()

    def measured_on(self) -> dict | None:
        """The lab a campaign's points are measured on, as campaign.json keeps it (None: the simulated SUT): a
        resumed campaign must find the same one (check_resumable)."""
        return lab_identity(self.lab)

    def check_resumable(self, say: Callable[[str], None] | None = None) -> None:
        """Refuse to go on with a campaign directory that another spec or another lab began (--campaign ID names
        any directory; the default id is the spec's hash, not the lab's): its finished points would be kept and
        reported under this spec's method, mixed with points measured otherwise. Another trexlab commit is not
        refused (an interrupted campaign stays resumable after an update) but said, and each repetition's
        provenance names its own commit (method_disclosure lists them when they differ): said by say, default
        progress."""
        say = say or self.progress
        path = self.dir / "campaign.json"
        if not path.is_file():
            return
        try:
            manifest = read_json(path)
        except (OSError, ValueError) as exc:
            raise CampaignError(f"{path}: unreadable ({exc}): remove {self.dir} to measure anew") from None
        if not isinstance(manifest, dict):
            raise CampaignError(f"{path}: unreadable (not a mapping): remove {self.dir} to measure anew")
        how = f"run it into another campaign (--campaign ID) or remove {self.dir}"
        if (changed := difference_text(manifest.get("spec"), loads(dumps(self.experiment.spec)), "")) is not None:
            raise CampaignError(f"campaign {self.dir} was begun with another spec ({changed}): {how}")
        if "measured_on" in manifest and (changed := difference_text(
                manifest["measured_on"], self.measured_on(), "lab.")) is not None:
            raise CampaignError(f"campaign {self.dir} was begun on another lab ({changed}): {how}")
        if "git_commit" in manifest and manifest["git_commit"] != (commit := git_commit()):
            say(f"warning: campaign {self.dir} was begun by trexlab {manifest['git_commit']}, it goes on "
                          f"with {commit}: each repetition's provenance names the commit that measured it")

    def _run(self) -> dict:
        estimates = self._check_before_points(say=self.progress)  # before any host is changed
        make_directories(self.dir)
        earlier = read_json(self.dir / "campaign.json") if (self.dir / "campaign.json").is_file() else {}
        manifest = {"experiment": self.experiment.name, "campaign": self.id, "spec": self.experiment.spec,
                    "points": [{"point": p.point_id, "index": p.index, "values": p.values} for p in self.points],
                    # What the campaign was begun with (kept when it is resumed): check_resumable's reference.
                    "measured_on": earlier.get("measured_on", self.measured_on()),
                    "git_commit": earlier.get("git_commit", git_commit()),
                    # How the repetitions are ordered (the spec's order; its seed from the campaign id).
                    "order": self.order}
        write_json_atomic(self.dir / "campaign.json", manifest)
        done_before = {pid for pid, r in self.status().items() if r["status"] == "done"}
        todo = [p for p in self.points if p.point_id not in done_before]
        self._eta = estimate.Eta([p for p in estimates if p.point_id not in done_before])
        n = len(self.points)
        self.progress(f"campaign {self.experiment.name}/{self.id}: {n} point(s), {len(done_before)} done earlier, "
                      f"{self.experiment.repetition_rule.describe()} each, {order_text(self.order)} -> {self.dir}")
        for warning in [*(self.lab.warnings() if self.lab else ()), lab_kind_warning(self.experiment, self.lab)]:
            if warning:
                self.progress(f"warning: {warning}")
        with self.tcp_endpoints(bool(todo)), self._undone_at_the_end():
            (self._run_interleaved if self.order["order"] == "interleaved" else self._run_sequential)(todo, n)
        export_campaign(self.dir)  # summary.csv, trials.parquet: what other tools read
        return self._outcome(n)

    def _outcome(self, n: int) -> dict:
        status = self.status()
        return {"campaign": str(self.dir), "points": n,
                "done": sum(1 for r in status.values() if r["status"] == "done"),
                "failed": sorted(pid for pid, r in status.items() if r["status"] == "failed")}

    def _run_sequential(self, todo: list, n: int) -> None:
        """The points one after the other, each with all its repetitions; a point that fails is recorded."""
        for i, point in enumerate(todo):
            k = point.index + 1
            start = time.monotonic()
            try:
                self.run_point(point, k, n, self.plans[point.index],
                               next_spec=todo[i + 1].spec if i + 1 < len(todo) else None)
            except POINT_ERRORS as exc:
                self.record(point, "failed", f"{type(exc).__name__}: {exc}", time.monotonic() - start)
                self.progress(f"point {k}/{n} {point.point_id}: FAILED: {exc}")
            else:
                self.record(point, "done", None, time.monotonic() - start)
                self.progress(f"point {k}/{n} {point.point_id}: done in {time.monotonic() - start:.0f} s")
            if self._eta is not None:
                self._eta.point_finished(point.point_id)

    def next_visit(self, point) -> tuple[int, int]:
        """The round an interleaved campaign runs this point in next: (stage, round), the throughput runs for its
        rate first, round r holding repetitions (r-1)*n+1 .. r*n (n: the spec's repetitions_per_round);
        (PROCEDURE_STAGE, 0) where every repetition is finished but the point was not recorded done (interrupted in
        between): a visit then writes its summary."""
        plan, per_round = self.plans[point.index], self.experiment.repetitions_per_round
        if plan.rate_from is not None and (
                k := next_repetition(plan.rate_from.repetitions, plan.rate_from.output)) is not None:
            return RATE_STAGE, -(-k // per_round)
        k = next_repetition(plan.repetitions, plan.output)
        return PROCEDURE_STAGE, 0 if k is None else -(-k // per_round)

    def _run_interleaved(self, todo: list, n: int) -> None:
        """The points in rounds (the module's doc): each round runs the next repetitions of every point that is
        furthest behind, in round_order; a point that fails is recorded and left out of the rounds after."""
        left = {point.point_id: point for point in todo}
        seconds = dict.fromkeys(left, 0.0)
        everyone = [point.point_id for point in self.points]
        per_round = self.experiment.repetitions_per_round
        last = None  # the point visited last
        while left:
            due = {pid: self.next_visit(point) for pid, point in left.items()}
            stage, round_ = min(due.values())
            visits = [pid for pid in round_order(self.order["seed"], stage, round_, everyone)
                      if due.get(pid) == (stage, round_)]
            if len(visits) > 1 and visits[0] == last:
                # Not the point the last round ended with: its repetitions of both rounds would run back to back,
                # where one burst of load could slow them all.
                visits[0], visits[1] = visits[1], visits[0]
            what = "throughput for the rate, round" if stage == RATE_STAGE else "round"
            self.progress(f"{what} {round_ or 'of summaries'}: point(s) "
                          f"{', '.join(str(left[pid].index + 1) for pid in visits)}")
            for place, pid in enumerate(visits, start=1):
                point, last = left[pid], pid
                start = time.monotonic()
                # The next visit's point, or this one (the next round's first point is not known yet: it may be
                # this one); a configuration left for a point that turns out to differ is removed before it.
                following = left[visits[place]].spec if place < len(visits) else point.spec
                order = {**self.order, "stage": "rate" if stage == RATE_STAGE else "procedure",
                         "round": round_, "place": place, "points_in_round": len(visits)}
                try:
                    self.run_point(point, point.index + 1, n, self.plans[point.index], next_spec=following,
                                   upto=round_ * per_round or None, stage=stage, order=order)
                except POINT_ERRORS as exc:
                    seconds[pid] += time.monotonic() - start
                    self.record(point, "failed", f"{type(exc).__name__}: {exc}", seconds[pid])
                    self.progress(f"point {point.index + 1}/{n} {pid}: FAILED: {exc}")
                    del left[pid]
                else:
                    seconds[pid] += time.monotonic() - start
                    now = self.next_visit(point)
                    if now != (PROCEDURE_STAGE, 0):
                        if now <= (stage, round_):  # would be visited for it again and again
                            raise CampaignError(f"point {pid}: round {round_} did not finish its repetitions")
                        continue
                    self.record(point, "done", None, seconds[pid])
                    self.progress(f"point {point.index + 1}/{n} {pid}: done in {seconds[pid]:.0f} s of visits")
                    del left[pid]
                if self._eta is not None:
                    self._eta.point_finished(pid)
