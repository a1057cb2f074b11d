"""What adaptive repetitions and warm-started searches save, on simulated SUTs (trexlab.plan.adaptive).

1. Adaptive repetitions against a fixed 20. For each capacity noise, campaigns with several seeds
   run 20 repetitions of an RFC 2544 search; the target width is the median over those campaigns of the
   width of their 95 % CI of the median (order statistics, ranks 6 and 15 of 20). The same seeds then run
   adaptively (min 5, max 50, until the CI is narrower than that target): the repetitions each one used
   and the width it reached are printed beside the fixed 20.
2. Warm start. Each seed runs 20 repetitions with cold searches and 20 warm-started ones, same final trial
   duration (60 s), loss tolerance and resolution: the cost (sum of trial durations and receive tails, the
   lab time) of the warm campaign over the cold one, and the difference of their medians against the
   resolution, beside the difference between two cold campaigns of neighbouring seeds (what chance alone
   gives).

Simulated time costs no wall time: the whole benchmark takes a minute or so. Run:
    python benchmarks/repetitions_and_warm_start.py [--seeds N]

Measured 2026-11-25 (10 seeds, sim capacity 400,000 fps):

* adaptive vs fixed 20 at the fixed 20's median 95 % CI width: capacity noise 0.2 %: 14.7 repetitions on
  average (6-25), 26 % saved; 0.5 %: 18.9 (9-37), 6 % saved; 1 %: 23.2 (6-44), 16 % more. The savings come
  where the repetitions agree closely; where they scatter, stopping at the first narrow interval needs about
  as many repetitions as a fixed count (and sequential stopping makes the stated 95 % somewhat optimistic).
* warm start, 20 repetitions of 60 s trials, resolution 0.5 %: lab time 34 % of the cold campaign without
  noise, 34-35 % at 0.2 % noise, 39-46 % (mean 44 %) at 1 %. Medians: equal or within 54 fps (resolution
  1,995 fps) up to 0.2 % noise; at 1 % the warm medians lie 0 to 3,696 fps above the cold ones (mean of 6
  seeds 1,735 fps, within the resolution; two cold campaigns of other seeds differ by up to 1,951 fps). A cold
  search ends on the low end of a grid fixed by max_rate and min_rate, a warm one on a grid centred on the
  running median, which is the likely part of that difference.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from trexlab.generators.sim import create
from trexlab.plan.adaptive import RepetitionRule, median_ci
from trexlab.plan.repetition import repeat
from trexlab.procedures import throughput
from trexlab.results.store import read_json
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, "frame_size": [64, 64], "receive_tail": 0.5})
CAPACITY = 400_000.0
FIXED = 20


def campaign(noise: float, seed: int, repetitions, **params) -> list[dict]:
    """The results of one point's repetitions against a SUT with this capacity noise."""
    generator = create(capacity=CAPACITY, capacity_noise=noise, seed=seed)
    search = throughput.Params(max_rate=1e6, min_rate=1e3, **params)
    with tempfile.TemporaryDirectory() as where:
        repeat("throughput", generator, TRAFFIC, search, repetitions, where, {})
        return [read_json(p) for p in sorted(Path(where).glob("rep-*/result.json"))]


def width_percent(results: list[dict]) -> float:
    values = [r["throughput_fps"] for r in results]
    ci = median_ci(values)
    return (ci["high"] - ci["low"]) / statistics.median(values) * 100


def adaptive_against_fixed(seeds: int) -> None:
    print("1. adaptive repetitions (min 5, max 50) against a fixed 20, at the fixed 20's median CI width")
    print(f"{'capacity noise':>14} {'target %':>9} {'fixed reps':>10} {'adaptive reps: mean':>20} {'range':>8} "
          f"{'saved':>6} {'width % fixed / adaptive (median)':>34} {'at max':>6}")
    params = {"resolution_percent": 0.1, "trial_duration": 1.0}
    for noise in (0.002, 0.005, 0.01):
        fixed = [width_percent(campaign(noise, seed, FIXED, **params)) for seed in range(1, seeds + 1)]
        target = statistics.median(fixed)
        rule = RepetitionRule(5, 50, target)
        runs = [campaign(noise, seed + 1000, rule, **params) for seed in range(1, seeds + 1)]
        used = [len(r) for r in runs]
        reached = [width_percent(r) for r in runs]
        print(f"{noise:>13.1%} {target:9.3f} {FIXED:>10} {statistics.mean(used):>20.1f} "
              f"{min(used):>3}-{max(used):<4} {1 - statistics.mean(used) / FIXED:>6.0%} "
              f"{statistics.median(fixed):>17.3f} / {statistics.median(reached):<14.3f} "
              f"{sum(n == rule.maximum for n in used):>6}")


def warm_against_cold(seeds: int) -> None:
    print("\n2. warm start: 20 repetitions, 60 s trials, resolution 0.5 %, zero loss: warm campaign / cold campaign")
    print(f"{'capacity noise':>14} {'seed':>4} {'cold h':>7} {'warm h':>7} {'cost':>6} {'median cold':>12} "
          f"{'median warm':>12} {'warm-cold':>10} {'resolution':>10} {'cold-cold':>10}")
    params = {"resolution_percent": 0.5, "trial_duration": 60.0}
    for noise in (0.0, 0.002, 0.01):
        ratios = []
        for seed in range(1, seeds + 1):
            cold = campaign(noise, seed, FIXED, **params)
            warm = campaign(noise, seed, FIXED, warm_start=True, **params)
            other = campaign(noise, seed + 100, FIXED, **params)
            cost = [sum(r["trial_seconds"] + r["trials"] * TRAFFIC.receive_tail for r in c) for c in (cold, warm)]
            medians = [statistics.median(r["throughput_fps"] for r in c) for c in (cold, warm, other)]
            ratios.append(cost[1] / cost[0])
            print(f"{noise:>13.1%} {seed:>4} {cost[0] / 3600:7.2f} {cost[1] / 3600:7.2f} {ratios[-1]:6.0%} "
                  f"{medians[0]:12,.0f} {medians[1]:12,.0f} {medians[1] - medians[0]:10,.0f} "
                  f"{medians[0] * 0.005:10,.0f} {medians[2] - medians[0]:10,.0f}")
        print(f"{noise:>13.1%} mean cost ratio {statistics.mean(ratios):.0%}, worst {max(ratios):.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="campaigns per noise level (default 10)")
    args = parser.parse_args()
    adaptive_against_fixed(args.seeds)
    warm_against_cold(max(3, args.seeds // 2))


if __name__ == "__main__":
    main()
