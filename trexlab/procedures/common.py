"""What every procedure does the same way: run one trial at a load, report it, note tester limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trexlab.params import InvalidParameter
from trexlab.results.stats import WHOLE
from trexlab.spec.schema import doc
from trexlab.trial import (
    MAX_FRAME_TIMEOUT,
    MAX_OFFERED_LOAD,
    MAX_TRIAL_DURATION,
    RFC2544_RECEIVE_TAIL,
    RFC2544_RESTABILIZE_WAIT,
    RFC2544_TRIAL_DURATION,
    Direction,
    Generator,
    TrialResult,
    TrialSpec,
)

if TYPE_CHECKING:
    from trexlab.plan.runplan import RunPlan
    from trexlab.testbed.endpoints import LabView

#: on_trial(result, context): a TrialResult, or what a TCP procedure measured instead (a TCP test, a download).
OnTrial = Callable[[Any, dict], None] | None
Progress = Callable[[str, dict], None] | None

#: Parameters several procedures take, each declared once: what it is with its unit, and its range (their --help
#: lines and the spec's JSON Schema come from these; the Params' own checks enforce the same ranges).
MAX_RATE_FIELD = doc("frames/s per direction, the highest offered load, above any min_rate; none: the medium's maximum "
                     "frame rate at the frame size", exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD)
MEDIA_FIELD = doc("the tester's link, for the default max_rate: 1g, 10g, 25g, 40g, 100g, or its bit/s")
FRAME_TIMEOUT_FIELD = doc("s: a frame received later than this after it was sent counts as lost; none: every frame "
                          "received before the receive tail ends counts (RFC 2544)",
                          exclusiveMinimum=0, maximum=MAX_FRAME_TIMEOUT)
TESTER_CEILING_FIELD = doc("frames/s per direction, the tester's own loss-free ceiling; none: the one its self-test "
                           "recorded (--ceilings); figures near it are marked tester-bound", exclusiveMinimum=0)
RATE_FIELD = doc("frames/s per direction, the throughput rate RFC 8219 measures at; required: give it, or take it "
                 "from throughput runs (rate: {from: throughput}, --rate-from)",
                 exclusiveMinimum=0, maximum=MAX_OFFERED_LOAD)
FLOOR_MEDIAN_FIELD = doc("s, the tester's own median latency from its self-test; none: the recorded one; figures "
                         "within 3x of it are flagged", exclusiveMinimum=0)
FLOOR_P99_9_FIELD = doc("s, the tester's own 99.9th percentile latency from its self-test; none: the recorded one; "
                        "figures within 3x of it are flagged", exclusiveMinimum=0)


#: The bounds a result may give beside a headline figure (result.json headline_bounds, each repetition of
#: summary.json, the report): an MLRsearch goal's relevant lower and upper bound, fps per direction as its figure
#: (draft-ietf-bmwg-mlrsearch-15 section 4.8.4.1: the report must show the lower, should show the upper).
FIGURE_BOUND_KEYS = ("relevant_lower_bound_fps", "relevant_upper_bound_fps")


def trial_duration_field(standard: str) -> dict:
    """A procedure's trial duration: s of sending per trial (at most an hour), with the standard's minimum."""
    return doc(f"s of sending per trial ({standard})", exclusiveMinimum=0, maximum=MAX_TRIAL_DURATION)


#: A DUT result (or the load it was measured at) within this share of the tester's own ceiling may be the tester's
#: limit: it is marked tester-bound (a rate then a lower bound of the DUT's), and the method line says so. The seed
#: papers give no margin (Lencse & Szilagyi 2024, section 4.2: a tester 3.6 times faster than its DUTs was "high
#: enough"), so this is trexlab's own, wider than the ceiling's known errors: the ceiling is the lowest repetition of
#: the tester alone on a loopback lab, while on a DUT lab a namespace tester shares the host's CPUs with the DUTs;
#: and a sender near its limit keeps its rate only on average, sending micro-bursts whose loss lowers a DUT's
#: throughput before the ceiling itself is reached (Lencse 2021, section III.A: "the median decreases").
CEILING_MARGIN = 0.10
#: A stretched trial in which the tester still sent every frame (its schedule slipped after the machine stalled
#: it, or it fell just short of the rate) tells nothing about the DUT at the offered load, and a stall is a
#: transient of a shared machine: such a trial is run again, up to this many times, and the last run is the
#: one the procedure sees (every run is logged). A trial with unsent frames (a tester well below the load) is not:
#: it would stretch again. Whatever run is last, procedures never count a stretched trial as a pass. A trial in
#: which the host's receive backlog dropped frames (TrialResult.host_drops: a stall of the shared host), or the
#: tester's own receivers did (TrialResult.tester_drops: a receiver held up, its ring full), is invalid in the same
#: way and run again the same way.
STRETCHED_RETRIES = 1
#: A stretched trial during which the hypervisor took the tester's CPU (TrialResult.stolen: a host disturbance, not
#: the tester's limit) is run up to this many times in all, the last run the one the procedure sees. Steal comes
#: from outside, independent of the trial: on this kind of machine ~1.7 % of a vCPU in 10-50 ms chunks, one of 20 ms
#: or more every ~6 s at busy times, so a 3 s trial catches one about a third of the time. With one repeat (as for
#: any stretched trial) ~1/9 of all trials would fail that way, a few in every demo run; three runs leave ~1/27,
#: at the cost of a repeat for a third of the trials and a second for a ninth. More would hide a hypervisor that
#: steals all the time, which the result then names (TrialRunner.tester_limits: "hypervisor steal (N ms)").
HOST_DISTURBANCE_RUNS = 3


def shorter_than(standard: str, checks: list[tuple[str, float, float]]) -> list[str]:
    """Each (what, value in s, the standard's minimum in s) that falls short, as a result discloses it
    ('deviations'): 'trial duration 1 s (RFC 2544: at least 60 s)'. A figure measured so is not the standard's,
    whatever method its result names (a CI-scale run; a shortened experiment), and says so beside the figures."""
    return [f"{what} {value:g} s ({standard}: at least {minimum:g} s)" for what, value, minimum in checks
            if value < minimum]


def fewer_repetitions(standard: str, count: int, minimum: int) -> list[str]:
    """A summary over fewer repetitions than the standard asks for, as its method discloses it ('deviations'):
    'repetitions 1 (RFC 8219: at least 20, the median of them reported)'. The standard's figure is the median over
    that many; a median over fewer (a CI-scale campaign, a CLI run's --repeat 1) is another figure."""
    return ([f"repetitions {count} ({standard}: at least {minimum}, the median of them reported)"]
            if count < minimum else [])


#: RFC 2544 section 23's phases before the traffic, which trexlab's trials run without (draft-ietf-bmwg-mlrsearch-15
#: section 4.4.3: a trial may deviate from section 23's description, and the report must describe how), by what
#: stands in their place. a: a router DUT gets a routing update on its input port, then 2 s for the routing to
#: settle; b: learning frames to its output port (for IP an ARP request from the frames' next hop, appendix
#: C.2.4.1), then 2 s. A lab's DUTs route by static routes and hold permanent neighbour entries for their next hops
#: (roles/dut_routing, applied by playbooks/site.yml: make configure, or a campaign before its first point): no
#: routing protocol runs, so no routing update exists to send, and no address is learned or times out between
#: trials, so learning frames would change nothing. The testers send no frame before a trial's traffic (the
#: software tester and TRex write the DUT port's MAC from the inventory as each frame's destination; TRex with
#: trex_addressing ip resolves it by its own ARP), and so wait for nothing.
RFC2544_SETTLE_WAIT = 2.0  # s after the routing update (a) and after the learning frames (b)
#: The start of RFC2544_SETUP_PHASES' item for a SUT that gets neither phase, before why.
_NEITHER_PHASE = (f"no routing update or learning frames before each trial (RFC 2544 section 23 a and b: each then "
                  f"{RFC2544_SETTLE_WAIT:g} s to settle): ")
RFC2544_SETUP_PHASES = {  # no comma inside an item: the method line lists a result's deviations comma-separated
    "dut": [f"no routing update before each trial (RFC 2544 section 23 a: an update then {RFC2544_SETTLE_WAIT:g} s "
            "to settle): not applicable as the DUT runs no routing protocol (its routes are static and set before "
            "the run by roles/dut_routing)",
            "no learning frames before each trial (RFC 2544 section 23 b: learning frames then "
            f"{RFC2544_SETTLE_WAIT:g} s to settle): the DUT's neighbour entries for its next hops (the tester's ports "
            "and in the dual topology the other DUT) are permanent and set before the run by roles/dut_routing so "
            "nothing is learned or times out between trials"],
    "loopback": [f"{_NEITHER_PHASE}no DUT (the tester's ports are cabled to each other)"],
    "sim": [f"{_NEITHER_PHASE}the simulated SUT has no routes or address tables to prime"],
    # A tester outside a trexlab lab (a TRex server given directly): its DUT is not one roles/dut_routing set up.
    "unknown": [f"{_NEITHER_PHASE}the tester sends none and the DUT is not a trexlab lab's (how it learns its routes "
                "and the tester's addresses is not known here)"],
}


def rfc2544_setup_phases(generator) -> list[str]:
    """What a trial does instead of RFC 2544 section 23's phases a and b (RFC2544_SETUP_PHASES), for the SUT
    `generator` measures: the simulated SUT, the tester's own ports (the loopback topology), a lab's DUTs, or a
    DUT outside any trexlab lab (a lab generator without a lab: a TRex server given directly, a test's stand-in)."""
    capabilities = getattr(generator, "capabilities", None)
    if capabilities is not None and not capabilities.needs_lab:
        return list(RFC2544_SETUP_PHASES["sim"])
    lab = getattr(generator, "lab", None)
    if lab is None:
        return list(RFC2544_SETUP_PHASES["unknown"])
    return list(RFC2544_SETUP_PHASES["loopback" if getattr(lab, "topology", None) == "loopback" else "dut"])


def rfc2544_trial_deviations(traffic: TrialSpec, frame_timeout: float | None, generator) -> list[str]:
    """Where a trial falls short of RFC 2544 section 23's phases, as a result discloses it ('deviations'): the
    waits of phases d and e (rfc2544_wait_checks), then what stands in place of phases a and b
    (rfc2544_setup_phases). The one list of them for every procedure built on RFC 2544's trials (throughput, frame
    loss rate, MLRsearch)."""
    return [*shorter_than("RFC 2544", rfc2544_wait_checks(traffic, frame_timeout)), *rfc2544_setup_phases(generator)]


def rfc2544_wait_checks(traffic: TrialSpec, frame_timeout: float | None) -> list[tuple[str, float, float]]:
    """A trial's waits against RFC 2544 section 23's (d: the receive tail, 2 s; e: the wait for the DUT to
    restabilize, 5 s), as shorter_than's checks.

    The receive tail counts only without a frame timeout shorter than it: with one, a frame later than the
    timeout is lost before the tail ends, so a shorter tail loses no frame the timeout would have counted."""
    checks = []
    if frame_timeout is None or frame_timeout > traffic.receive_tail:
        checks.append(("receive tail", traffic.receive_tail, RFC2544_RECEIVE_TAIL))
    checks.append(("restabilize wait", traffic.restabilize_wait, RFC2544_RESTABILIZE_WAIT))
    return checks


def rfc2544_deviations(trial_duration: float, traffic: TrialSpec, frame_timeout: float | None,
                       generator, procedure: Sequence[str] = ()) -> list[str]:
    """What an RFC 2544 trial-based procedure (throughput, frame loss rate) does short of RFC 2544's trials: its
    trial duration (section 24), what the procedure itself does otherwise (procedure: FLR's first load), then each
    trial's phases (rfc2544_trial_deviations)."""
    return [*shorter_than("RFC 2544", [("trial duration", trial_duration, RFC2544_TRIAL_DURATION)]),
            *procedure, *rfc2544_trial_deviations(traffic, frame_timeout, generator)]


@dataclass(frozen=True)
class RunContext:
    """What a procedure's run gets besides its Params (trexlab.procedures.Procedure.run)."""

    generator: Generator
    #: The trial template: the procedure replaces each trial's load and duration.
    traffic: TrialSpec
    #: on_trial(result, context): called the moment each trial (or TCP test, download) ends.
    on_trial: OnTrial = None
    #: progress(phase, info): human-facing progress.
    progress: Progress = None

    def runner(self, procedure: str, traffic: TrialSpec | None = None) -> TrialRunner:
        """A TrialRunner for this run (of another template: e.g. the self-test's per frame size)."""
        return TrialRunner(self.generator, traffic or self.traffic, self.on_trial, self.progress, procedure)

    def with_traffic(self, traffic: TrialSpec) -> RunContext:
        return dataclasses.replace(self, traffic=traffic)


def check_frame_timeout(plan: RunPlan, frame_timeout: float | None) -> None:
    """A frame timeout only with a generator that can count late frames as lost (Capabilities.frame_timeout)."""
    if frame_timeout is not None and not plan.capabilities.frame_timeout:
        raise InvalidParameter("frame_timeout", frame_timeout, f"none with generator {plan.generator} (it cannot "
                                                               "tell a late frame from one in time)")


def check_plan_frame_timeout(plan) -> None:
    """check(plan) of a procedure whose one plan-time condition is its Params' frame_timeout (plan: a RunPlan whose
    params have one: untyped, as RunPlan.params is any procedure's Params)."""
    check_frame_timeout(plan, plan.params.frame_timeout)


def no_lab_checks(plan: RunPlan, lab: LabView) -> None:
    """check_lab(plan, lab) of a procedure whose traffic is all the generator's: its plan told everything (the
    generator itself refuses a tester it cannot use when it is made)."""


def frame_timeout_override(frame_timeout: float | None) -> dict:
    """TrialRunner.run's override for a procedure's frame_timeout: none when unset (the template's stays)."""
    return {"frame_timeout": frame_timeout} if frame_timeout else {}


def generator_traffic_only(params: Mapping) -> bool:
    """needs_tcp_endpoints(params) of a procedure whose traffic is all the generator's: it never runs on the lab's
    client and server nodes."""
    return False


class SimulationTooLong(Exception):
    """A lab time estimate's simulation did the most work it was allowed (simulated_cost's work_max)."""

    def __init__(self, work_max: int, capacities: int):
        super().__init__(f"more than {work_max} of simulated work over {capacities} DUT capacities")
        self.work_max, self.capacities = work_max, capacities


def simulated_cost(name: str, params, traffic: TrialSpec, work_max: int | None = None):
    """A trial-based procedure's cost: it runs against simulated SUTs (trexlab.plan.estimate.simulated_cost); more
    than work_max of work over them all raises SimulationTooLong."""
    from trexlab.plan.estimate import simulated_cost as simulate

    return simulate(name, params, traffic, work_max)


def simulated_cost_of(name: str) -> Callable[[Any, TrialSpec], Any]:
    """cost(params, traffic) of the trial-based procedure `name` (simulated_cost)."""

    def cost(params, traffic: TrialSpec):
        return simulated_cost(name, params, traffic)

    return cost


class TrialRunner:
    """Runs trials for one procedure: fills in the load, hands each result on, keeps the log."""

    def __init__(self, generator: Generator, traffic: TrialSpec, on_trial: OnTrial = None,
                 progress: Progress = None, procedure: str = ""):
        self.generator = generator
        self.traffic = traffic
        self.on_trial = on_trial
        self.progress = progress
        self.procedure = procedure
        self.log: list[TrialResult] = []  # every trial run, an invalid one that was run again included
        self.seen: list[TrialResult] = []  # the trials the procedure saw (each run again replaced by its repeat)
        self.run_again = 0  # stretched trials run again (STRETCHED_RETRIES): in the log, not seen by the procedure
        self.run_again_host_drops = 0  # trials with host backlog drops (and not stretched) run again
        self.run_again_tester_drops = 0  # trials with tester drops (and neither of the above) run again
        self.run_again_steal = 0  # trials stretched by the hypervisor's steal run again (HOST_DISTURBANCE_RUNS)
        self.steal_run_again = 0.0  # s the hypervisor took from the tester's CPUs in the trials run again for it
        self.trial_seconds = 0.0  # sum of trial durations: the cost of the procedure

    def run(self, load: float, duration: float, phase: str, **overrides) -> TrialResult:
        spec = dataclasses.replace(self.traffic, offered_load=load, duration=duration, **overrides)
        result = self.run_once(spec, phase)
        runs, retries = 1, 0  # runs in all; repeats for a stall of the tester or the host backlog (STRETCHED_RETRIES)
        while True:
            if result.stolen:  # a host disturbance: its own bound, the tester's stall retries left for the tester
                if runs >= HOST_DISTURBANCE_RUNS:
                    break
                self.run_again_steal += 1
                self.steal_run_again += result.host_steal
                again = f"again: the hypervisor took {result.host_steal * 1000:.0f} ms of the tester's CPU"
            elif retries < STRETCHED_RETRIES and retry_stretched(result):
                retries += 1
                self.run_again += 1
                again = "again: the tester stalled"
            elif retries < STRETCHED_RETRIES and retry_drops(result.host_drops, result):
                retries += 1
                self.run_again_host_drops += 1
                again = "again: the host's receive backlog dropped frames"
            elif retries < STRETCHED_RETRIES and retry_drops(result.tester_drops, result):
                retries += 1
                self.run_again_tester_drops += 1
                again = "again: the tester's receivers dropped frames"
            else:
                break
            runs += 1
            result = self.run_once(spec, f"{phase} ({again})")
        self.seen.append(result)
        return result

    def run_once(self, spec: TrialSpec, phase: str) -> TrialResult:
        load, duration = spec.offered_load, spec.duration
        self.say(phase, offered_load=load, duration=duration, trial=len(self.log) + 1)
        result = self.generator.run_trial(spec)
        self.log.append(result)
        self.trial_seconds += duration
        context = {"procedure": self.procedure, "phase": phase, "trial": len(self.log)}
        if self.on_trial:
            self.on_trial(result, context)
        self.say(phase, offered_load=load, loss_ratio=result.loss_ratio, stretched=result.stretched,
                 host_drops=result.host_drops, host_steal=result.host_steal, trial=len(self.log), done=True)
        return result

    def say(self, phase: str, **info) -> None:
        if self.progress:
            self.progress(phase, info)

    @property
    def stretched_trials(self) -> int:
        """Stretched trials the procedure saw (those run again left out: each was replaced by its repeat), those the
        hypervisor stretched (stolen_trials) left out."""
        return sum(1 for r in self.seen if r.stretched and not r.stolen)

    @property
    def stolen_trials(self) -> int:
        """Trials the procedure saw stretched by the hypervisor's steal after HOST_DISTURBANCE_RUNS runs."""
        return sum(1 for r in self.seen if r.stolen)

    @property
    def stolen_steal(self) -> float:
        """s the hypervisor took from the tester's CPUs in the trials of stolen_trials."""
        return sum(r.host_steal for r in self.seen if r.stolen)

    @property
    def host_drops(self) -> int:
        """Frames the host's receive backlog dropped in the trials the procedure saw (TrialResult.host_drops)."""
        return sum(r.host_drops for r in self.seen)

    @property
    def tester_drops(self) -> int:
        """Frames the tester's own receivers dropped in the trials the procedure saw (TrialResult.tester_drops)."""
        return sum(r.tester_drops for r in self.seen)

    @property
    def tester_drops_unknown(self) -> dict[Direction, int]:
        """Per direction, the trials the procedure saw whose tester drops the generator could not read
        (TrialResult.tester_drops_unknown): unknown, never counted as none."""
        counts: dict[Direction, int] = {}
        for r in self.seen:
            for direction in r.tester_drops_unknown:
                counts[direction] = counts.get(direction, 0) + 1
        return counts

    def notes(self, stretched_bearing: int | None = None) -> list[str]:
        """What the reader must know about the tester; `stretched_bearing`: how many stretched trials can hold
        the result down (None: all of them)."""
        notes = []
        if self.stretched_trials and stretched_bearing == 0:
            notes.append(f"{self.stretched_trials} trial(s) stretched, all at loads above one the DUT failed with "
                         "the tester keeping up: they do not hold the result down")
        elif self.stretched_trials:
            notes.append(f"{self.stretched_trials} trial(s) stretched: the tester could not send the offered "
                         "load; their unsent frames counted as loss, so the result is a lower bound")
        if self.stolen_trials:
            notes.append(f"{self.stolen_trials} trial(s) still stretched after {HOST_DISTURBANCE_RUNS} runs, the "
                         f"hypervisor taking {self.stolen_steal * 1000:.0f} ms of the tester's CPU in their last runs: "
                         "counted as failed, so the result may be a lower bound")
        if self.tester_drops:
            trials = sum(1 for r in self.seen if r.tester_drops)
            notes.append(f"{self.tester_drops} frame(s) dropped by the tester's own receivers in {trials} trial(s): "
                         "the tester's loss, counted as loss, and those trials as failed, so the result may be a "
                         "lower bound")
        for direction, trials in self.tester_drops_unknown.items():
            notes.append(f"tester drops unknown on port {1 - self.traffic.sender_port(direction)} ({direction} "
                         f"direction's receiver) in {trials} trial(s): the generator gave no count of the frames the "
                         "tester dropped itself, so loss in those trials may be the tester's, not the DUT's")
        if self.host_drops:
            trials = sum(1 for r in self.seen if r.host_drops)
            notes.append(f"{self.host_drops} frame(s) dropped by the host's receive backlog (net.core."
                         f"netdev_max_backlog) in {trials} trial(s): the host's loss, counted as loss, and those "
                         "trials as failed, so the result may be a lower bound")
        return notes + self.repeat_notes()

    def repeat_notes(self) -> list[str]:
        """What the reader must know about the trials run again (only the repeat counts): facts of the whole run,
        which a procedure reporting several figures keeps result-wide while it says per figure what bears on it."""
        notes = []
        if self.run_again:
            notes.append(f"{self.run_again} trial(s) stretched with every frame sent (the tester's schedule slipped, "
                         "or its last frame left late: the machine stalled it) were run again; only the repeat counts, "
                         "both are logged")
        if self.run_again_host_drops:
            notes.append(f"{self.run_again_host_drops} trial(s) in which the host's receive backlog dropped frames "
                         "were run again; only the repeat counts, both are logged")
        if self.run_again_tester_drops:
            notes.append(f"{self.run_again_tester_drops} trial(s) in which the tester's own receivers dropped frames "
                         "were run again; only the repeat counts, both are logged")
        if self.run_again_steal:
            notes.append(f"{self.run_again_steal} trial(s) stretched while the hypervisor took "
                         f"{self.steal_run_again * 1000:.0f} ms of the tester's CPU (a host disturbance, not the "
                         f"tester's limit) were run again, up to {HOST_DISTURBANCE_RUNS} runs in all; only the last "
                         "counts, all are logged")
        return notes

    def tester_limits(self, ceiling: float | None, *rates: float | None, stretched_bearing: int | None = None,
                      host_drops_bearing: int | None = None, steal_bearing: float | None = None,
                      tester_drops_bearing: int | None = None,
                      tester_drops_unknown_bearing: int | None = None) -> list[str]:
        """Why the procedure's result may be the tester's limit rather than the DUT's (empty: it is not), in a
        table's words: a stretched trial (those that can hold the result down, `stretched_bearing`; None: any),
        tester drops (those in trials that can hold the result down, `tester_drops_bearing`; None: all), tester drops
        unknown (trials that lost frames with their tester drops unknown; those that can hold the result down,
        `tester_drops_unknown_bearing`; None: all: a trial without loss had no frame dropped), frames the
        host's receive backlog dropped (their count; those in trials that can hold the result down,
        `host_drops_bearing`; None: all), or one of `rates` (the result, or the load it was measured
        at) within CEILING_MARGIN of the tester's ceiling. Trials the hypervisor stretched (TrialResult.stolen)
        are named by the steal in them (s; those that can hold the result down, `steal_bearing`; None: all), not as
        stretched trials (`stretched_bearing` counts the others)."""
        return tester_limit_reasons(
            ceiling, *rates,
            stretched=self.stretched_trials if stretched_bearing is None else stretched_bearing,
            steal=self.stolen_steal if steal_bearing is None else steal_bearing,
            tester_drops=self.tester_drops if tester_drops_bearing is None else tester_drops_bearing,
            tester_drops_unknown=(sum(1 for r in self.seen if r.tester_drops_unknown and r.frames_lost)
                                  if tester_drops_unknown_bearing is None else tester_drops_unknown_bearing),
            host_drops=self.host_drops if host_drops_bearing is None else host_drops_bearing)


def tester_limit_reasons(ceiling: float | None, *rates: float | None, stretched: int, steal: float,
                         tester_drops: int, tester_drops_unknown: int, host_drops: int) -> list[str]:
    """The tester-bound reasons, in a table's words, of the trials that can hold a figure down: `stretched` trials
    (the hypervisor's left out), the `steal` (s) in the trials it stretched, `tester_drops` (frames), trials that lost
    frames with their `tester_drops_unknown`, `host_drops` (frames), and one of `rates` (the figure, or the load it
    was measured at) within CEILING_MARGIN of the tester's `ceiling`. The one wording of them (TrialRunner.
    tester_limits; an MLRsearch goal's from its trial log, mlrsearch.bearing_reasons)."""
    reasons = []
    if stretched:
        reasons.append("stretched trials")
    if steal:
        reasons.append(f"hypervisor steal ({steal * 1000:.0f} ms)")
    if tester_drops:
        reasons.append("tester drops")
    if tester_drops_unknown:
        reasons.append("tester drops unknown")
    if host_drops:
        reasons.append(f"host backlog drops ({host_drops:,} frames)")
    if any(ceiling_warning(rate, ceiling) for rate in rates):
        reasons.append("near tester ceiling")
    return reasons


def retry_stretched(result: TrialResult) -> bool:
    """Whether a trial is run again (STRETCHED_RETRIES): stretched, yet every frame was sent."""
    return result.stretched and result.all_sent


def retry_drops(drops: int, result: TrialResult) -> bool:
    """Whether a trial is run again (STRETCHED_RETRIES) for `drops`, frames the host's receive backlog or the
    tester's own receivers dropped: a stall of the shared host or of a receiver is a transient, as a stretched
    trial's is."""
    return drops > 0 and result.all_sent


#: A delay figure of fewer steps of the generator's delay resolution than this is flagged (10 steps: 10 % error).
DELAY_STEPS = 10


def coarse_delay_note(direction: str, figure: str, value: float, unit: float,
                      resolution: str = "the generator's delay resolution") -> str | None:
    """A note when a delay figure (s) spans fewer than DELAY_STEPS steps of the delays' resolution (unit, s per
    step: TRex reports whole microseconds; or a histogram bucket's width, Latency.resolution): RFC 8219's figures
    are per-frame delays, and at a few steps a step is a large part of the figure. None for a figure of enough
    steps, zero or infinite."""
    if not (0 < value < DELAY_STEPS * unit):
        return None
    return (f"{direction}: {figure} {value * 1e6:.4g} us is fewer than {DELAY_STEPS} steps of {resolution} "
            f"({unit * 1e6:.4g} us): it carries up to {unit / value:.0%} error")


def near_floor(floor: dict | None) -> list[str]:
    """The tester-bound reason of a latency figure within reach of the tester's own latency floor."""
    return ["near tester latency floor"] if floor and floor.get("warnings") else []


def tester_bound_fields(reasons: list[str]) -> dict:
    """What every repetition's result.json says about its tester limits."""
    return {"tester_bound": bool(reasons), "tester_bound_reasons": list(reasons)}


def ceiling_warning(rate: float | None, ceiling: float | None, what: str = "result") -> str | None:
    """A warning when a DUT result (or the load it was measured at) comes within 10 % of the tester's own
    self-test ceiling, or above it."""
    if rate is None or not ceiling:
        return None
    if rate >= ceiling * (1 - CEILING_MARGIN):
        return (f"{what} {rate:{WHOLE}} fps is within {CEILING_MARGIN:.0%} of the tester's self-test ceiling "
                f"{ceiling:{WHOLE}} fps (or above it): it may measure the tester, not the DUT")
    return None
