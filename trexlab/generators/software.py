"""The software generator: swtester (swtester/, C over AF_PACKET) on the lab's tester node.

Each trial runs swtester once on the tester node: inside the tester's network
namespace on the local lab, over SSH on a remote tester (trexlab.testbed.inventory.Node.command).
The tester's nftables netdev-ingress counters (roles/tester_ports), which match
only test frames, are read before and after the trial as an independent count:
on a lossless trial sender, receiver and counter must agree, and any
disagreement is written into the trial's notes.

swtester sends through a PACKET_TX_RING where the kernel grants one, else with
sendmmsg (send_method auto); describe() asks it which (swtester --probe), so
provenance names the method, and a trial that sent otherwise says so in its notes.
Its receivers count the test frames they need not time in the kernel, where the
kernel allows it: at the port's tc ingress (tcx, Linux 6.6 and later) in a trial
that times no frame, else with an eBPF socket filter, else from their receive
ring (receive_method; provenance names the one a trial that times no frame takes,
receive_methods, and the one a trial that times frames takes, receive_methods_timed;
a trial that counted otherwise says so in its notes).

A namespace tester shares the host's kernel with the DUT, so every frame either
receives waits in the host's per-CPU receive backlog first: the frames it drops
(/proc/net/softnet_stat, read before and after each trial) are the host's loss,
counted as the DUT's. A trial with such drops is invalid (TrialResult.host_drops).
On a virtual machine the hypervisor also takes the tester's vCPUs now and then
(/proc/stat's steal, read the same way: TrialResult.host_steal), stalling its
senders at once: a trial so stretched is a host disturbance, not the tester's limit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import random
import re
import shlex
import subprocess
from pathlib import Path
from typing import NamedTuple

from trexlab.params import InvalidParameter, check_range
from trexlab.paths import paths
from trexlab.testbed.inventory import Lab, LabError, TestPort, load_lab
from trexlab.trial import (
    NANOSECOND,
    SEND_OVERRUN_TOLERANCE,
    Capabilities,
    DirectionResult,
    GeneratorError,
    Latency,
    TrialResult,
    TrialSpec,
    encode_histogram,
    format_seconds,
    restabilize,
)

#: The builds of swtester/Makefile (release, AddressSanitizer): the only programs the generator runs.
BUILDS = ("swtester", "swtester-asan")
#: Seconds a trial may take beyond duration + receive tail before it is ended as hung (and the longest a swtester
#: --probe or the identity login may take). Its own choice, not iperf3's (tcp.iperf.IPERF3_GRACE): another program
#: with other start-up work (sockets, rings, the SSH login to the tester), so either may change without the other.
SWTESTER_GRACE = 30.0
#: swtester --send-method: auto takes the transmit ring where the kernel grants one, else sendmmsg.
SEND_METHODS = ("auto", "tx_ring", "sendmmsg")
#: The host kernel's per-CPU receive statistics: one line per CPU, its second column (hex) the frames that CPU's
#: receive backlog dropped because it was full (net.core.netdev_max_backlog).
SOFTNET_STAT = Path("/proc/net/softnet_stat")
#: How many trial ids swtester tells apart: the id is the test payload's 16-bit field (swtester.c, bytes 12-13).
TRIAL_ID_SPACE = 1 << 16
#: swtester --trial-id of each trial this process runs, whatever generator runs it (a campaign makes one per point).
#: swtester tells its own trial's frames from any other's by this 16-bit id, and without one takes its clock and
#: pid: two trials in a row then share an id about once in 65,536, and frames of the one before (drained from a
#: DUT's queue after its tail) count as this trial's, a stale copy standing in for a frame the DUT lost. Counted up
#: from a random start, no two consecutive trials share one.
TRIAL_IDS = itertools.count(random.randrange(TRIAL_ID_SPACE))


def backlog_drops(path: Path) -> list[int] | None:
    """Per CPU, the frames the host's receive backlog dropped since boot (softnet_stat's second column); None
    when the file cannot be read."""
    try:
        lines = path.read_text().split("\n")
        return [int(line.split()[1], 16) for line in lines if line.strip()]
    except (OSError, ValueError, IndexError):
        return None


#: The host kernel's CPU time per CPU ("cpuN user nice system idle iowait irq softirq steal ..."): the eighth value
#: is the time the hypervisor ran something else while this vCPU had work (steal), in USER_HZ ticks.
PROC_STAT = Path("/proc/stat")
#: /proc/stat's tick (USER_HZ): 100 on every Linux architecture trexlab runs on, as the kernel reports it.
USER_HZ = os.sysconf("SC_CLK_TCK")


def cpu_steal(path: Path) -> dict[int, int] | None:
    """Per CPU number, the ticks the hypervisor stole from it since boot (/proc/stat's steal); None when the file
    cannot be read or has no steal column."""
    try:
        steal = {}
        for line in path.read_text().split("\n"):
            fields = line.split()
            if fields and fields[0].startswith("cpu") and fields[0] != "cpu":
                steal[int(fields[0][3:])] = int(fields[8])
        return steal or None
    except (OSError, ValueError, IndexError):
        return None


def steal_between(before: dict[int, int] | None, after: dict[int, int] | None, cpus: tuple[int, ...] = ()
                  ) -> float | None:
    """s the hypervisor stole from `cpus` (all CPUs when empty: an unpinned tester may run anywhere) from `before`
    to `after` (cpu_steal): the most any one of them lost, as a sender pinned to a CPU stalls for that CPU's steal.
    None when either was not read or a CPU is missing from it."""
    if before is None or after is None:
        return None
    wanted = cpus or tuple(before)
    if any(c not in before or c not in after for c in wanted):
        return None
    return max(max(0, after[c] - before[c]) for c in wanted) / USER_HZ


def drops_between(before: list[int] | None, after: list[int] | None) -> int | None:
    """Frames dropped from `before` to `after` (backlog_drops), over all CPUs; None when either was not read or
    the CPUs changed between them. Each CPU's count is 32 bits wide in the kernel and wraps."""
    if before is None or after is None or len(before) != len(after):
        return None
    return sum((later - earlier) % 2**32 for earlier, later in zip(before, after, strict=True))


def _peer_mac(port: TestPort) -> str:
    if port.peer_mac is None:
        raise LabError(f"tester port {port.name}: the inventory gives no peer_mac (swtester sends to it)")
    return port.peer_mac


class SoftwareGenerator:
    name = "software"
    # swtester --df sets the IPv4 Don't Fragment bit (TrialSpec.dont_fragment); --timeout drops late frames.
    capabilities = Capabilities(needs_lab=True, dont_fragment=True, frame_timeout=True, translated_frames=True)

    def __init__(self, lab: Lab, binary: str | None = None, cross_check: bool = True, send_method: str = "auto",
                 sender_threads: int = 1, softnet_stat: Path | None = SOFTNET_STAT,
                 proc_stat: Path | None = PROC_STAT):
        self.lab = lab
        self.tester = lab.tester
        # Only a namespace tester shares this host's kernel (and its receive backlog) with the DUT.
        self.softnet_stat = softnet_stat if self.tester.netns else None
        # ... and only its CPUs are this machine's, whose steal (a virtual machine's hypervisor) stalls its senders.
        self.proc_stat = proc_stat if self.tester.netns else None
        # A namespace tester runs this machine's swtester (trexlab.paths); an SSH tester the one on its PATH.
        local = paths().swtester
        if self.tester.netns and binary is None and local is None:
            raise LabError("swtester binary not found: run 'make swtester' in a checkout, or set TREXLAB_SWTESTER")
        # Not a spec's choice (trexlab.spec.schema.SoftwareOptions has no such option), and checked here as well since
        # it runs as root: only a build of swtester/Makefile where trexlab finds swtester (an SSH tester's PATH).
        if binary is not None:
            builds = ([str(local.parent / b) for b in BUILDS] if local else []) if self.tester.netns else list(BUILDS)
            if binary not in builds:
                raise InvalidParameter("generator_options.binary", binary, f"one of {', '.join(builds) or 'none'}")
        self.binary = binary or (str(local) if self.tester.netns else "swtester")
        if self.tester.netns and not os.access(self.binary, os.X_OK):
            raise LabError(f"swtester binary {self.binary} not found: run 'make swtester'")
        self.cross_check = cross_check
        if send_method not in SEND_METHODS:
            raise InvalidParameter("generator_options.send_method", send_method, ", ".join(SEND_METHODS))
        self.send_method = send_method
        check_range("generator_options.sender_threads", sender_threads, 1, 8, integer=True)
        self.sender_threads = int(sender_threads)
        self.probed: dict | None = None  # swtester --probe's answer, once describe() asked

    def describe(self) -> dict:
        ports = [self.tester.port(i) for i in (0, 1)]
        return {"generator": "software", "tester": "swtester", "binary": self.binary, "node": self.tester.name,
                "netns": self.tester.netns, "cpus": list(self.tester.cpus),
                "ports": [{"name": p.name, "mac": p.mac, "peer_mac": p.peer_mac} for p in ports],
                **self.build_and_host(),
                "send_method_option": self.send_method, "sender_threads": self.sender_threads,
                # The CPUs whose hypervisor steal each trial measures (TrialResult.host_steal; all: the tester is
                # not pinned), None when not measured (the tester does not share this machine).
                "host_steal_cpus": (list(self.tester.cpus) or "all") if self.proc_stat else None, **self.probe(),
                "lab": self.lab.describe()}

    def build_and_host(self) -> dict:
        """The swtester build that sends and counts the frames, by its SHA-256 (binary_sha256: its path alone names
        no build, make swtester rebuilds it in place, an SSH tester's PATH finds whatever is installed), and for an
        SSH tester the kernel and CPU model it runs on (tester_host; a namespace tester is this machine, whose host
        facts the provenance has). Values it cannot read are None."""
        if self.tester.netns:  # this machine's file
            try:
                digest: str | None = hashlib.sha256(Path(self.binary).read_bytes()).hexdigest()
            except OSError:
                digest = None
            return {"binary_sha256": digest, "tester_host": None}
        # One login, each answer on a line of its own that says what it is (an empty answer stays on its line).
        script = (f'echo "sha256 $(sha256sum "$(command -v {shlex.quote(self.binary)})" | cut -d" " -f1)"; '
                  'echo "kernel $(uname -r)"; echo "cpu $(sed -n "s/^model name[^:]*: //p" /proc/cpuinfo | head -n1)"')
        try:
            result = subprocess.run(self.tester.command(["sh", "-c", script]), capture_output=True, text=True,
                                    timeout=SWTESTER_GRACE)
            lines = result.stdout.splitlines() if result.returncode == 0 else []
        except (subprocess.TimeoutExpired, OSError):
            lines = []
        answers = {key: value for key, _, value in (line.partition(" ") for line in lines)}
        found = answers.get("sha256", "").strip()
        return {"binary_sha256": found if re.fullmatch(r"[0-9a-f]{64}", found) else None,
                "tester_host": {"kernel": answers.get("kernel", "").strip() or None,
                                "cpu_model": answers.get("cpu", "").strip() or None}}

    def probe(self) -> dict:
        """The send and receive methods swtester takes on the tester's ports (per direction, and the fallback's
        reason where auto fell back), from swtester --probe: it sets up the sockets as for a trial, sends nothing.
        Asked twice, for a trial that times no frame and for one that does: their receivers count differently."""
        report, timed = (self._probe(TrialSpec(offered_load=1000, duration=1.0, frame_timeout=timeout))
                         for timeout in (None, 1.0))
        if not report or not timed:
            self.probed = {}  # no answer: every trial's notes say which method it took
            return {"send_method": None}
        directions = report["directions"]
        self.probed = {"send_method": report["send_method"],
                       # ns: frames due within one quantum leave together (swtester.c, PACING_QUANTUM_NS)
                       "pacing_quantum_ns": report.get("pacing_quantum_ns"),
                       "send_methods": {name: {"method": d["send_method"], "fallback": d.get("send_method_fallback")}
                                        for name, d in directions.items()},
                       # how each receiver counts in a trial that times no frame, and in one that does
                       # (times_frames): auto takes tcx in the first where the kernel has it, bpf in the second
                       "receive_methods": receive_methods(directions),
                       "receive_methods_timed": receive_methods(timed["directions"])}
        return self.probed

    def _probe(self, spec: TrialSpec) -> dict:
        """swtester --probe's answer for the trials like spec, {} where there is none."""
        argv = self.tester.command([*self.argv(spec), "--probe"])
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=SWTESTER_GRACE)
            answer = json.loads(result.stdout) if result.returncode == 0 else None
        except (subprocess.TimeoutExpired, json.JSONDecodeError, OSError):
            answer = None
        # An answer without its methods (another program's JSON, an older swtester's) is no answer either, not a
        # traceback out of describe().
        report: dict = answer if isinstance(answer, dict) else {}
        directions = report.get("directions")
        if (not isinstance(directions, dict) or not isinstance(report.get("send_method"), str)
                or not all(isinstance(d, dict) and "send_method" in d for d in directions.values())):
            return {}
        return report

    def skip_trials(self, count: int) -> None:
        pass  # no random stream of its own: a replayed trial changes nothing here

    def close(self) -> None:
        pass

    def argv(self, spec: TrialSpec) -> list[str]:
        # Frame sizes below swtester's minimum per IP version never get here: TrialSpec refuses them.
        p0, p1 = self.tester.port(0), self.tester.port(1)
        argv = [self.binary, "--port0", p0.name, "--port1", p1.name, "--mac0", p0.mac, "--mac1", p1.mac,
                "--peer0", _peer_mac(p0), "--peer1", _peer_mac(p1),
                "--rate", repr(float(spec.offered_load)), "--duration", repr(float(spec.duration)),
                "--size0", str(spec.frame_size[0]), "--size1", str(spec.frame_size[1]),
                "--version0", str(spec.ip_version[0]), "--version1", str(spec.ip_version[1]),
                "--directions", {"bidirectional": "bi"}.get(spec.directions, spec.directions),
                "--networks", str(spec.destination_networks), "--tail", repr(float(spec.receive_tail)),
                "--latency", spec.latency_mode]
        # Only when not swtester's default: a tester's older swtester (an SSH tester's, until the tester_software
        # role builds the new one) runs the default trials as before.
        if self.send_method != "auto":
            argv += ["--send-method", self.send_method]
        if self.sender_threads != 1:
            argv += ["--threads", str(self.sender_threads)]
        for flag, port in (("--ip0", p0), ("--ip1", p1)):
            if port.ipv4_address:
                argv += [flag, port.ipv4_address]
            if port.ipv6_address:
                argv += [flag + "v6", port.ipv6_address]
        if spec.port_mode == "rfc4814":
            argv.append("--rfc4814")
        if spec.dont_fragment:
            argv.append("--df")
        if spec.latency_mode == "tagged":
            argv += ["--tagged", str(spec.latency_frames), "--tag-delay", repr(float(spec.tag_delay))]
        if spec.frame_timeout is not None:
            argv += ["--timeout", repr(float(spec.frame_timeout))]
        if self.tester.cpus:
            argv += ["--cpus", ",".join(str(c) for c in self.tester.cpus)]
        return argv

    def counters(self) -> dict[str, int] | None:
        """The tester's test-frame counters, or None where the table is missing."""
        argv = self.tester.command(["nft", "-j", "list", "counters", "table", "netdev", "trexlab_tester"])
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            return None
        try:
            return {item["counter"]["name"]: item["counter"]["packets"]
                    for item in json.loads(result.stdout)["nftables"] if "counter" in item}
        except (json.JSONDecodeError, KeyError, TypeError):  # not nft's JSON: read as no counters
            return None

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        argv = self.tester.command([*self.argv(spec), "--trial-id", str(next(TRIAL_IDS) % TRIAL_ID_SPACE)])
        limit = spec.duration + spec.receive_tail + SWTESTER_GRACE
        before = self.counters() if self.cross_check else None
        backlog_before = backlog_drops(self.softnet_stat) if self.softnet_stat else None
        steal_before = cpu_steal(self.proc_stat) if self.proc_stat else None
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise GeneratorError(f"swtester did not finish within {limit:.0f} s") from None
        host_drops = drops_between(backlog_before, backlog_drops(self.softnet_stat)) if self.softnet_stat else None
        host_steal = (steal_between(steal_before, cpu_steal(self.proc_stat), self.tester.cpus) if self.proc_stat
                      else None)
        if result.returncode != 0:
            message = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
            raise GeneratorError(message)
        try:
            report = json.loads(result.stdout)
        except json.JSONDecodeError:
            raise GeneratorError("swtester printed no JSON result") from None
        after = self.counters() if before is not None else None
        trial = trial_from_report(spec, report, self.name, before, after, self.probed, host_drops or 0,
                                  host_steal or 0.0)
        if self.softnet_stat and host_drops is None:
            trial = dataclasses.replace(trial, notes=(*trial.notes, f"host backlog drops not measured: "
                                                      f"{self.softnet_stat} unreadable or its CPUs changed"))
        if self.proc_stat and host_steal is None:
            trial = dataclasses.replace(trial, notes=(*trial.notes, f"hypervisor steal not measured: {self.proc_stat} "
                                                      "unreadable, without a steal column or without the tester's "
                                                      "CPUs"))
        restabilize(spec)
        return trial


def times_frames(spec: TrialSpec) -> bool:
    """Whether swtester times the trial's frames (latency, or a per-frame timeout): its receivers then need their
    receive socket, so auto counts with the eBPF socket filter (bpf), not at tc ingress (tcx). swtester.c's
    times_frames decides the same."""
    return spec.latency_mode != "none" or spec.frame_timeout is not None


def method_note(name: str, verb: str, taken: str | None, fallback: str | None, probed: str | None) -> str | None:
    """The note of a direction that sent or counted (verb) with another method than provenance names, else None."""
    if taken == probed:
        return None
    return (f"{name}: {verb} with {taken}" + (f" ({fallback})" if fallback else "")
            + (f", not {probed} as probed" if probed else ""))


def receive_methods(directions: dict) -> dict:
    """How each direction's receiver counts, from swtester's report: the method (tcx, bpf or ring; None from an
    older swtester, which has the ring only) and the reason where auto fell back."""
    return {name: {"method": d.get("receive_method"), "fallback": d.get("receive_method_fallback")}
            for name, d in directions.items()}


def trial_from_report(spec: TrialSpec, report: dict, generator: str = "software", before: dict | None = None,
                      after: dict | None = None, probed: dict | None = None, host_drops: int = 0,
                      host_steal: float = 0.0) -> TrialResult:
    """The trial contract's result of swtester's JSON report, with the tester's nftables counters before and after
    the trial (None: not read) compared with what its receivers counted, the send methods provenance names
    (SoftwareGenerator.probe; None: provenance was not asked, {}: it names none) with the ones the trial took, and
    the frames the host's receive backlog dropped during it and the s the hypervisor took from the tester's CPUs
    (a namespace tester's; 0 elsewhere)."""
    check_report(spec, report)
    directions, notes = {}, []
    if host_drops:
        notes.append(f"the host's receive backlog dropped {host_drops:,} frame(s) during the trial (softnet_stat, "
                     "all CPUs): the host's loss, not the DUT's, so the trial is invalid")
    receive_key = "receive_methods_timed" if times_frames(spec) else "receive_methods"
    for name, d in report["directions"].items():
        if probed is not None:  # each method provenance names for such a trial (or provenance names none)
            for verb, key, probed_key in (("sent", "send_method", "send_methods"),
                                          ("counted", "receive_method", receive_key)):
                if note := method_note(name, verb, d.get(key), d.get(key + "_fallback"),
                                       probed.get(probed_key, {}).get(name, {}).get("method")):
                    notes.append(note)
        latency = (latency_from_swtester(d["latency"], d["tags_lost_or_late"], spec.frame_timeout)
                   if spec.latency_mode != "none" else None)
        tags = {key: d[key] for key in ("tags_sent", "tags_received", "tags_lost_or_late")
                if spec.latency_mode != "none"}
        directions[name] = DirectionResult(
            direction=name, frames_intended=d["intended"], frames_sent=d["sent"],
            frames_received=d["received"], frames_late=d["late"], tester_drops=d["tester_drops"],
            duplicates=d["duplicates"], reordered=d["reordered"], send_duration=d["send_duration"],
            latency=latency, **tags, **pacing_fields(d))
        if d["tester_drops"]:  # swtester.c RX_RING_BYTES: a full receive ring drops frames before any count
            notes.append(f"{name}: swtester's receive ring dropped {d['tester_drops']:,} frame(s) (PACKET_STATISTICS "
                         f"tp_drops{ring_held(d)}): the tester's loss, not the DUT's, counted as lost, so the trial is "
                         "invalid")
        notes.extend(f"{name}: {d[count.key]:,} test frame(s) {count.note}" for count in CHANGED_COUNTS
                     if d.get(count.key))
        if d.get("foreign"):  # swtester.c receive_frame: a test frame, but not one of this direction of this trial
            notes.append(f"{name}: {d['foreign']:,} test frame(s) of another trial, of the other direction or beyond "
                         "this trial's frames arrived (foreign): not this trial's, so not counted (an earlier "
                         "trial's frames: the DUT held them beyond that trial's receive tail)")
        slipped = d.get("slip_ns", 0) * 1e-9 > SEND_OVERRUN_TOLERANCE * spec.duration  # a smaller slip: fields only
        if slipped:
            notes.append(slip_note(name, d, report.get("catch_up_limit")))
        if unsent := d["intended"] - d["sent"]:
            notes.append(f"{name}: {unsent:,} of its {d['intended']:,} frames were never sent (the sender was still "
                         "behind its schedule when swtester stops sending, past the duration): counted as lost, and "
                         "the trial is stretched")
        elif not slipped and d["send_duration"] > spec.duration * (1 + SEND_OVERRUN_TOLERANCE):
            notes.append(overrun_note(name, d, spec.duration))
        if throttled := throttle_note(name, d, report):
            notes.append(throttled)
        if before is not None and after is not None:
            port = 1 if name == "forward" else 0
            key = f"port{port}_ipv{spec.ip_version[port]}"
            counted = after.get(key, 0) - before.get(key, 0)
            arrived = frames_arrived(d)
            if counted != arrived:
                notes.append(f"{name}: nftables counted {counted} test frames on port {port}, "
                             f"the receiver {arrived}")
    if before is not None and after is None:  # read before the trial, not after: the check did not happen
        notes.append("the tester's nftables counters could not be read after the trial: the receivers' counts are "
                     "not cross-checked")
    trial = TrialResult(spec=spec, directions=directions, generator=generator, notes=tuple(notes),
                        host_drops=host_drops, host_steal=host_steal)
    # Steal is in every trial's host_steal; a note only where it may have stretched the trial (a paced trial's
    # steal was caught up and changed nothing).
    if host_steal and trial.stretched:
        trial = dataclasses.replace(trial, notes=(*trial.notes, (
            f"the hypervisor took {host_steal * 1000:.0f} ms of the tester's CPU during the trial (/proc/stat steal)"
            + (": a host disturbance, not the tester's limit" if trial.stolen else ""))))
    return trial


def ring_held(direction: dict) -> str:
    """How long swtester's receive ring holds frames at the trial's rate (its report's ring_seconds, swtester.c
    rx_ring_seconds): how long its receiver may be held up before the kernel drops frames (less where they arrive
    faster, in bursts). Said with the drops; "" where the report has no figure (tcx has no ring; older builds)."""
    seconds = direction.get("ring_seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return ""
    return f"; the ring holds {format_seconds(seconds)} of frames at the trial's rate"


#: The counts of each direction in swtester's report that the trial's figures are made of.
REPORT_COUNTS = ("intended", "sent", "received", "late", "duplicates", "reordered", "tester_drops")
REPORT_TAGS = ("tags_sent", "tags_received", "tags_lost_or_late")


class ChangedCount(NamedTuple):
    """A count in swtester's report of the trial's test frames that arrived changed by the DUT (swtester.c
    receive_frame): not the frames sent, so lost, and said in the trial's notes."""
    key: str
    #: Each arrived as one frame, which the tester's nftables counter counted once (the cross-check adds it to the
    #: frames received); a fragmented one it counted once per fragment.
    whole: bool
    #: The note's words after "<direction>: N test frame(s) ".
    note: str


#: Every such count, in the order of the notes: the one list the notes, the nftables cross-check and check_report
#: take them from (the cross-check had a sum of its own, which a new count could miss).
CHANGED_COUNTS = (
    ChangedCount("fragments", False, "arrived fragmented (their first fragment counted by swtester): not received "
                 "whole, so counted as lost (RFC 2544 counts the frames a DUT forwards)"),
    ChangedCount("wrong_length", True, "arrived with another length than they were sent with (translated, where a "
                 "SIIT DUT changes the IP version): padded or cut by the DUT (RFC 2544 section 10: the tester checks "
                 "each frame's length), not the frames sent, so counted as lost"),
    ChangedCount("zero_checksum", True, "arrived with a UDP checksum of zero over IPv6, which an IPv6 receiver "
                 "discards (RFC 8200 section 8.1; a translator that updates the checksum incrementally may write 0 "
                 "for 0xffff): not frames a host would take, so counted as lost"),
    ChangedCount("atomic_fragments", True, "arrived as IPv6 atomic fragments (a Fragment header, offset 0 and More "
                 "clear, 8 bytes longer than the frames sent; RFC 6145 translators added one where Don't Fragment "
                 "was clear, RFC 8021 deprecates them): not the frames sent, so counted as lost"),
    ChangedCount("ipv4_options", True, "arrived with IPv4 options the frames sent had not (forwarding adds none, "
                 "nor does a SIIT translator, RFC 7915 section 5.1): changed by the DUT, so counted as lost"),
    ChangedCount("bad_ipv4_header_checksum", True, "arrived with an IPv4 header checksum that does not verify, "
                 "which every receiver discards (RFC 1122 section 3.2.1.2, RFC 1812 section 5.2.2; a DUT that "
                 "rewrites the TTL or an address must update it, RFC 1624): not frames a host would take, so counted "
                 "as lost"),
    ChangedCount("bad_checksum", True, "arrived with a UDP checksum that does not verify over their pseudo-header "
                 "(the addresses they arrived with), UDP header and payload, which every receiver discards (RFC 768, "
                 "RFC 8200 section 8.1; a translator must update it for its new addresses, RFC 7915): not frames a "
                 "host would take, so counted as lost"),
)
#: Counts a report of an older swtester has not (an SSH tester's, until the tester_software role builds the new one):
#: those of the frames the DUT changed, all added after the first report.
REPORT_NEWER_COUNTS = tuple(count.key for count in CHANGED_COUNTS)


def frames_arrived(direction: dict) -> int:
    """The test frames of a direction of swtester's report that reached its receiving port whole, each of which the
    tester's nftables counter counted once: also those the receiver took for lost because the DUT changed them (not
    the fragments: nftables counts each fragment), and the foreign ones (the counter matches every test frame)."""
    return (direction["received"] + direction["late"] + direction["duplicates"] + direction.get("foreign", 0)
            + sum(direction.get(count.key, 0) for count in CHANGED_COUNTS if count.whole))


def check_report(spec: TrialSpec, report: object) -> None:
    """GeneratorError unless swtester's report holds every direction the trial ran and each of their counts as an
    integer >= 0 (a JSON that parses is not yet a whole report: one without the reverse direction gave a
    bidirectional trial of the forward direction's loss alone, a count missing or null a traceback, a negative one
    a loss above 100 %)."""
    directions = report.get("directions") if isinstance(report, dict) else None
    if not isinstance(directions, dict) or set(directions) != set(spec.active_directions):
        found = sorted(directions) if isinstance(directions, dict) else None
        raise GeneratorError(f"swtester's report has the directions {found}, the trial ran "
                             f"{list(spec.active_directions)}")
    for name, d in directions.items():
        keys = (*REPORT_COUNTS, *(REPORT_TAGS if spec.latency_mode != "none" else ()),
                *(key for key in REPORT_NEWER_COUNTS if isinstance(d, dict) and key in d))
        for key in keys:
            value = d.get(key) if isinstance(d, dict) else None
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GeneratorError(f"swtester's report: {name}.{key} is {value!r}, not a count")
        send_duration = d.get("send_duration")
        if isinstance(send_duration, bool) or not isinstance(send_duration, int | float) or not send_duration >= 0:
            raise GeneratorError(f"swtester's report: {name}.send_duration is {send_duration!r}, not a time")
        if spec.latency_mode != "none" and not isinstance(d.get("latency"), dict):
            raise GeneratorError(f"swtester's report: {name}.latency is {d.get('latency')!r}, not a histogram")


def pacing_fields(direction: dict) -> dict:
    """The trial contract's view of swtester's pacing (swtester.c, struct pacing): how far the sender fell behind
    its schedule. max_lag_ns (ns) -> send_lag_max (s); max_burst (frames) -> send_burst_max; slip_ns (ns) ->
    send_slip (s). An swtester without them (older builds) measured none: None and 0."""
    if "max_lag_ns" not in direction:
        return {}
    return {"send_lag_max": direction["max_lag_ns"] * 1e-9, "send_burst_max": direction["max_burst"],
            "send_slip": direction["slip_ns"] * 1e-9}


def start_lag_text(direction: dict, before: str = "", after: str = "") -> str:
    """How late swtester's sender sent its first frame (start_lag_ns: after the due time its senders are released
    for), between `before` and `after`, for the notes that give the sender's pacing figures; '' for an swtester
    without it (older builds). A late start is caught up as any later lag: a figure of those notes, not a note."""
    if "start_lag_ns" not in direction:
        return ""
    return f"{before}started {format_seconds(direction['start_lag_ns'] * 1e-9)} late{after}"


def slip_note(name: str, direction: dict, limit: int | None) -> str:
    """What the trial's notes say when swtester's sender slipped its schedule by more than the overrun tolerance."""
    behind = f"{limit} frames" if limit else "its catch-up limit"
    return (f"{name}: the sender fell more than {behind} behind its schedule {direction['slips']} time(s) (longest "
            f"lag {format_seconds(direction['max_lag_ns'] * 1e-9)}{start_lag_text(direction, before='; ')}): rather "
            f"than a catch-up burst above {behind} it moved its schedule {format_seconds(direction['slip_ns'] * 1e-9)} "
            "later, more than the overrun tolerance: the trial is stretched")


#: What overrun_note's note says first, after the direction's name: the name it is known by (tests that check a
#: trial's counts, not its pacing, pass over it: tests/labtools.py notes_but_steal).
OVERRUN_NOTE = "its last frame left late"


def overrun_note(name: str, direction: dict, duration: float) -> str:
    """What the trial's notes say when swtester's sender sent every frame, slipped its schedule by no more than the
    overrun tolerance, and still sent its last frame beyond it (send_duration, from the trial's start to the moment
    the last frame left, above duration * (1 + SEND_OVERRUN_TOLERANCE)): a stall of the sender near the trial's end,
    which no later frame could absorb, so the frames were offered over a longer time than the load asks."""
    figures = ""
    if "max_lag_ns" in direction:  # an swtester without them (older builds) measured none
        slip_ns = direction["slip_ns"]
        figures = (f" (the sender {start_lag_text(direction, after=', ')}lagged its schedule by up to "
                   f"{format_seconds(direction['max_lag_ns'] * 1e-9)}, "
                   f"caught up in bursts of up to {direction['max_burst']} frames and "
                   + (f"slipped {format_seconds(slip_ns * 1e-9)})" if slip_ns else "did not slip)"))
    send_duration = direction["send_duration"]
    return (f"{name}: {OVERRUN_NOTE}{figures}: sending took {format_seconds(send_duration)}, "
            f"{format_seconds(send_duration - duration)} beyond the trial's {format_seconds(duration)}, more than "
            f"the overrun tolerance ({SEND_OVERRUN_TOLERANCE:.1%}, {format_seconds(SEND_OVERRUN_TOLERANCE * duration)})"
            ": the DUT was offered its frames over a longer time than the load asks, so the trial is stretched")


#: What throttle_note's note says first, after the direction's name: the name it is known by (tests that check a
#: trial's counts, not its pacing, pass over it: tests/labtools.py notes_but_steal).
THROTTLE_NOTE = "the kernel's realtime throttling stalled the sender"


def throttle_note(name: str, direction: dict, report: dict) -> str | None:
    """What the trial's notes say when the kernel's realtime throttle stalled swtester's sender, else None.

    A realtime thread (swtester's, report["realtime"]) that keeps its CPU busy beyond sched_rt_runtime_us of each
    sched_rt_period_us (a sender near its ceiling does) is stopped with every realtime thread on that CPU for the
    rest of the period: a stall of up to period - runtime (50 ms of 1 s by default), the sender's pacing lag, which
    then slips its schedule. (Kernels from 6.12 on may instead run the normal class's waiting work on that CPU for
    its share by their fair server, 50 ms of 1 s by default: the same stall, from the same cause.) Named when the
    sender lagged at least half that window (a throttled thread resumes at the next period, so its stall is
    anything up to the window; the hypervisor's stalls of this project's VMs, 5-7 ms, are far shorter) and waited
    runnable at least as long (send_waited_ns, the scheduler's run_delay: a hypervisor's stall the guest counts as
    running, not waiting). An swtester without these figures, a kernel without the throttle (-1) or without
    schedstat (-1 waited): no note."""
    runtime, period, waited = report.get("rt_runtime_us"), report.get("rt_period_us"), direction.get("send_waited_ns")
    if not report.get("realtime") or not isinstance(runtime, int) or not isinstance(period, int) or not (
            0 <= runtime < period) or not isinstance(waited, int) or waited < 0:
        return None
    window_ns = (period - runtime) * 1000
    lag_ns = direction.get("max_lag_ns", 0)
    if lag_ns < window_ns / 2 or waited < window_ns / 2:
        return None
    slip_ns = direction.get("slip_ns", 0)
    caught = (f"its schedule slipped {format_seconds(slip_ns * 1e-9)}" if slip_ns else
              f"it caught up in bursts of up to {direction.get('max_burst', 0)} frames")
    return (f"{name}: {THROTTLE_NOTE} (sched_rt_runtime_us {runtime} of "
            f"sched_rt_period_us {period}: realtime threads that keep a CPU busy longer are stopped for the rest of "
            f"the period, up to {format_seconds(window_ns * 1e-9)}): it lagged its schedule by up to "
            f"{format_seconds(lag_ns * 1e-9)} and waited runnable {format_seconds(waited * 1e-9)} in all "
            f"(schedstat run_delay); {caught}. The tester's realtime threads kept that CPU busy: the stall is the "
            "tester's, not the DUT's")


def latency_from_swtester(histogram: dict, lost_or_late: int, timeout: float | None) -> Latency:
    """The standard HdrHistogram of swtester's delay histogram (swtester/hdr.h says why it is rebuilt here).

    swtester prints its layout and the lowest value and count of each non-empty bucket; recorded into a
    histogram of the same layout, each lands in its own bucket, so the counts are swtester's exactly.
    """
    try:
        return _latency_from_swtester(histogram, lost_or_late, timeout)
    except (KeyError, TypeError, ValueError, IndexError) as error:  # a traceback out of the trial otherwise
        raise GeneratorError(f"swtester's histogram is not one: {type(error).__name__} {error}") from None


def _latency_from_swtester(histogram: dict, lost_or_late: int, timeout: float | None) -> Latency:
    from hdrh.histogram import HdrHistogram  # imported lazily, as trexlab.trial does: the CLI starts without it

    if histogram["unit_ns"] * 1e-9 != NANOSECOND:
        raise GeneratorError(f"swtester histogram unit {histogram['unit_ns']} ns: expected 1 ns")
    recorded = HdrHistogram(histogram["lowest"], histogram["highest"], histogram["significant_digits"])
    for value, count in histogram["buckets"]:
        if not recorded.record_value(value, count):
            raise GeneratorError(f"swtester histogram value {value} ns is outside its own layout")
    if recorded.get_total_count() != histogram["total"]:
        raise GeneratorError(f"swtester histogram holds {recorded.get_total_count()} delays, it counted "
                             f"{histogram['total']}")
    return Latency(encode_histogram(recorded), NANOSECOND, lost_or_late, timeout)


def create(lab: Lab | None = None, inventory: str | None = None, binary: str | None = None,
           cross_check: str | bool = True, send_method: str = "auto", sender_threads: int = 1) -> SoftwareGenerator:
    if lab is None:
        lab = load_lab(inventory)
    if isinstance(cross_check, str):
        cross_check = cross_check.lower() not in ("0", "false", "no", "off")
    return SoftwareGenerator(lab, binary, cross_check, send_method, sender_threads)
