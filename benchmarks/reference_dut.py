"""RFC 2544 throughput and MLRsearch against the known answer of a reference DUT (roles/dut_reference).

    .venv/bin/python benchmarks/reference_dut.py [--inventory inventory/generated/<single-DUT lab>/hosts.yml] \
        [--rate 40000] [--burst B] [--trial-duration 1] [--repetitions 20] \
        [--every-nth N | --loss-percent P] [--no-mlrsearch]

Makes the lab's DUT a reference DUT (each direction policed to --rate frames/s plus a --burst-frame bucket,
optionally lossy), runs the software tester's RFC 2544 throughput search with a 0.011 % loss tolerance
--repetitions times and one MLRsearch (goal: loss ratio 0 on a lossless DUT, else the same 0.011 %, final
trials as long as the binary search's), then restores the DUT. It prints the declared loss-free rate
(R + B/T) beside the median, minimum, maximum and dispersion of the found rates, and MLRsearch's
conditional throughput with its relevant bounds and width. A benchmark, not a test: it never fails on a
figure. Without --inventory (as make bench runs it) it brings up its own local single-DUT lab (LAB_NAME bref)
and takes it down again. Run it under the lab-test lock on a shared machine: another lab's traffic is noise here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from trexlab.generators import create_generator
from trexlab.generators.software import PROC_STAT, SOFTNET_STAT, backlog_drops, cpu_steal, drops_between, steal_between
from trexlab.plan.repetition import cell
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import RunContext
from trexlab.reference_dut import ReferenceDut, from_settings
from trexlab.results.stats import Observation, summarize
from trexlab.spec.experiment import with_role_defaults
from trexlab.testbed.inventory import load_lab
from trexlab.trial import TrialSpec

REPO = Path(__file__).resolve().parent.parent
TOLERANCE_PERCENT = 0.011
#: The lab it brings up when given no inventory (a LAB_NAME: trexlab.rolevalues.LAB_NAME).
LOCAL_LAB = "bref"


def role(inventory: str, dut: ReferenceDut, state: str) -> None:
    settings = {"dut_reference_rate_fps": dut.rate_fps, "dut_reference_burst_frames": dut.burst_frames,
                "dut_reference_loss_percent": dut.loss_percent, "dut_reference_loss_every_nth": dut.loss_every_nth,
                "dut_reference_state": state}
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", inventory,
            str(REPO / "playbooks" / "dut-reference.yml"), "-e", json.dumps(settings)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    if done.returncode != 0:
        raise SystemExit(f"reference_dut: playbooks/dut-reference.yml ({state}) failed:\n{done.stdout[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inventory", help="generated inventory of a single-DUT lab (default: a local lab of its own)")
    parser.add_argument("--rate", type=int, default=40_000, help="policer rate, frames/s per direction")
    parser.add_argument("--burst", type=int, help="policer bucket, frames (default: roles/dut_reference's)")
    parser.add_argument("--trial-duration", type=float, default=1.0, help="s (default 1)")
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--every-nth", type=int, default=0, help="exactly every Nth policed frame lost (0: off)")
    parser.add_argument("--loss-percent", type=float, default=0.0, help="random loss of policed frames, %%")
    parser.add_argument("--mlrsearch", action=argparse.BooleanOptionalAction, default=True,
                        help="also run MLRsearch (default: yes)")
    args = parser.parse_args()
    if args.inventory:
        return measure(args.inventory, args)
    with local_lab(LOCAL_LAB) as inventory:
        return measure(inventory, args)


@contextlib.contextmanager
def local_lab(name: str):
    """A local single-DUT lab up and configured (make lab-up, make configure), taken down whatever happens."""
    env = {**os.environ, "LAB": "local", "LAB_NAME": name, "TOPOLOGY": "single", "NETWORKS": "1"}
    try:
        for action in ("up", "configure"):
            done = subprocess.run(["scripts/lab.sh", action], cwd=REPO, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"reference_dut: scripts/lab.sh {action} (LAB_NAME={name}) failed:\n"
                                 f"{done.stderr[-2000:]}")
        yield str(REPO / "inventory" / "generated" / name / "hosts.yml")
    finally:
        subprocess.run(["scripts/lab.sh", "down"], cwd=REPO, env=env, capture_output=True)


def measure(inventory: str, args) -> int:
    lab = load_lab(inventory)
    if lab.topology != "single":
        print(f"reference_dut: --inventory {inventory}: topology {lab.topology}, needs single", file=sys.stderr)
        return 2
    given = {"rate_fps": args.rate, "loss_every_nth": args.every_nth, "loss_percent": args.loss_percent}
    if args.burst is not None:
        given["burst_frames"] = args.burst
    dut = from_settings(with_role_defaults("reference", given))
    duration = args.trial_duration
    declared = dut.loss_free_rate(duration)
    traffic = TrialSpec(offered_load=1.0, duration=1.0, frame_size=(64, 64), ip_version=(4, 4),
                        directions="bidirectional", receive_tail=0.5)
    # The search brackets the answer from 1.4x above; the resolution is 0.25 % of it (a result within 1 %
    # needs no finer one). Declared, as every figure's method is.
    params = throughput.Params(max_rate=round(1.4 * declared), min_rate=500, resolution=declared / 400,
                               loss_tolerance_percent=TOLERANCE_PERCENT, trial_duration=duration)
    goal_loss = 0.0 if dut.loss_ratio == 0 else TOLERANCE_PERCENT / 100
    goal = {"name": "NDR" if goal_loss == 0 else "goal", "loss_ratio": goal_loss, "exceed_ratio": 0.5,
            "relative_width": 0.005, "initial_trial_duration": min(1.0, duration),
            "final_trial_duration": duration, "duration_sum": 3 * duration}
    mlr_params = mlrsearch.Params(goals=(goal,), max_rate=params.max_rate, min_rate=params.min_rate,
                                  search_time_max=600)
    print(f"reference DUT: {dut.describe(duration)}", flush=True)
    print(f"RFC 2544 binary search: {TOLERANCE_PERCENT} % loss tolerance, {duration:g} s trials, max_rate "
          f"{params.max_rate:,.0f}, resolution {params.resolution:,.0f} frames/s, 64 B, bidirectional", flush=True)
    generator = create_generator("software", lab=lab)
    # The host's receive backlog (raised while a local lab is up: nslab.py) and the frames it drops over the run:
    # each trial with such drops is run again, then counts as failed and its repetition as tester-bound.
    backlog = Path("/proc/sys/net/core/netdev_max_backlog").read_text().strip()
    host_before = backlog_drops(SOFTNET_STAT)
    # The hypervisor's steal of the tester's CPUs over the run: a trial it stretched is run again (up to
    # HOST_DISTURBANCE_RUNS), then counts as failed and names the steal.
    steal_before = cpu_steal(PROC_STAT)
    role(inventory, dut, "present")
    try:
        found: list[Observation] = []
        for k in range(args.repetitions):
            result = throughput.run(RunContext(generator, traffic), params)
            # Tester-bound as the campaign statistics count it (trials that held the result down, tester drops,
            # near the ceiling), not any note: stretched trials above a load the DUT failed bound nothing.
            reasons = tuple(result.tester_bound_reasons)
            found.append(Observation(result.throughput, params.min_rate if result.below_minimum else None,
                                     reasons, k + 1))
            print(f"  repetition {k + 1:2d}: {result.throughput or 0:10,.0f} frames/s ({result.trials} trials)"
                  + (f"  tester-bound: {', '.join(reasons)}" if reasons else "")
                  + f"  load average {os.getloadavg()[0]:.1f}", flush=True)
        mlr = mlrsearch.run(RunContext(generator, traffic), mlr_params).goals[0] if args.mlrsearch else None
    finally:
        generator.close()
        role(inventory, dut, "absent")
    host_drops = drops_between(host_before, backlog_drops(SOFTNET_STAT))
    print(f"\nhost receive backlog: net.core.netdev_max_backlog {backlog}, {host_drops} frame(s) dropped over the "
          "run (softnet_stat, all CPUs)")
    steal = steal_between(steal_before, cpu_steal(PROC_STAT), lab.tester.cpus)
    print("hypervisor steal of the tester's CPU(s) over the run: "
          + (f"{steal * 1000:,.0f} ms (/proc/stat)" if steal is not None else "not measured"))
    print(f"\n{'':40} {'frames/s':>10} {'vs declared':>12}")
    print(f"{'declared loss-free rate R + B/T':40} {declared:10,.0f}")
    free = [o for o in found if not o.tester_bound]
    for label, observations in (("all repetitions", found), ("not tester-bound", free)):
        s = summarize(observations)
        print(f"{label} ({s['count']} with a figure, {s['missing']} missing, {s['tester_bound']} tester-bound)"
              + (f": {s['why']}" if s["why"] else ""))
        for name in ("median", "min", "max"):
            value = s[name]
            vs = f"{(value / declared - 1) * 100:+11.2f}%" if isinstance(value, float) and value == value else ""
            print(f"  {'throughput ' + name:38} {cell(value, ',.0f'):>10} {vs}")
        print(f"  {'dispersion (max-min)/median':38} {cell(s['dispersion_percent'], '.2f'):>9}%")
    if mlr is None:
        return 0
    lower, upper = mlr.get("relevant_lower_bound"), mlr.get("relevant_upper_bound")
    ndr, width = mlr.get("conditional_throughput"), goal["relative_width"]
    agrees = bool(lower and upper and lower * (1 - width) <= declared <= upper * (1 + width))
    print(f"{'MLRsearch ' + goal['name'] + ' (conditional throughput)':40} {ndr or 0:10,.0f} "
          f"{((ndr or 0) / declared - 1) * 100:+11.2f}%  relevant bounds [{lower or 0:,.0f}, {upper or 0:,.0f}], "
          f"width {width * 100:g} %; declared rate within the bounds widened by the width: {agrees}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
