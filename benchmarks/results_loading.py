"""Reading trial results back: the JSON-lines log against the columnar (Parquet) copies.

Generates a synthetic results store in a temporary directory: RUNS run directories of TRIALS trials each,
every trial a real sim trial record (trexlab.generators.sim, bidirectional, loads around the capacity)
written as trexlab.results.store writes it (trials.jsonl, then trials.parquet by store.write_columnar, then
result.json), and the one file of all of them a campaign writes when it ends (store.write_columnar_tree).
Each loading path then runs in a fresh child process, which prints its wall time:

    json      every run's log (as for unfinished runs and stores written before Parquet)
    runs      every run's own trials.parquet
    campaign  the campaign's trials.parquet

The parent reads the child's peak resident memory (ru_maxrss from wait4), so the figures are those of a
user's process, interpreter and imports included (an idle child with the same imports is measured beside).
A child's ru_maxrss starts at its parent's resident size when forked, so the store is generated in another
child and this process stays small.

    python benchmarks/results_loading.py                    # 1,000 runs x 1,000 trials; 200 runs for json
    python benchmarks/results_loading.py --json-runs 1000   # the JSON baseline on the whole store (~8 GB)

The JSON path reads a subset by default: on the whole store it needs gigabytes (issue 19 measured 7.5 GB),
too much beside other work on a shared machine; its rows/s and bytes per row are what scale.
Goal (issue 19): 1,000,000 rows into a DataFrame in under 3 s and under 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trexlab.generators import create_generator
from trexlab.results import store
from trexlab.trial import TrialSpec

GOAL_SECONDS = 3.0
GOAL_BYTES = 1.5e9
CAPACITY = 400_000.0  # fps per direction of the simulated SUT the template trials come from


POOL = 5000  # distinct sim trials the synthetic runs draw from (a sim trial costs more than writing one)


def trial_pool(count: int) -> list[dict]:
    """Trial results of a noisy simulated SUT at loads around its capacity, as the store logs them."""
    generator = create_generator("sim", capacity=CAPACITY, capacity_noise=0.01, seed=1)
    loads = np.random.default_rng(1).uniform(0.5, 1.5, count) * CAPACITY
    return [generator.run_trial(TrialSpec(offered_load=float(load), duration=60, frame_size=(64, 64))).to_dict()
            for load in loads]


def write_store(root: Path, runs: int, trials: int) -> None:
    pool = trial_pool(POOL)
    rng = np.random.default_rng(2)
    for k in range(runs):
        run = root / f"point-{k // 20:03d}" / f"rep-{k % 20 + 1:03d}"
        run.mkdir(parents=True)
        store.write_json_atomic(run / store.PROVENANCE, {"procedure": "throughput", "repetition": k % 20 + 1})
        with open(run / store.TRIALS, "w") as f:
            for seq, i in enumerate(rng.integers(0, POOL, trials), start=1):
                record = {"seq": seq, "time": 1.8e9 + k * 6e4 + seq * 60.0,
                          "context": {"procedure": "throughput", "phase": "binary search", "trial": seq}, **pool[i]}
                f.write(json.dumps(record) + "\n")
        store.write_columnar(run)
        store.write_json_atomic(run / store.RESULT, {"procedure": "throughput"})


CHILD = """
import sys, time
from pathlib import Path
from trexlab.results import store
runs = sorted(Path(p).parent for p in Path(sys.argv[2]).glob("point-*/rep-*/provenance.json"))[:int(sys.argv[3])]
frame, seconds, cpu = [], 0.0, 0.0
if sys.argv[1] != "idle":  # idle: the imports alone
    start, cpu_start = time.perf_counter(), time.process_time()
    if sys.argv[1] == "campaign":  # the campaign's trials.parquet (store.write_columnar_tree)
        frame = store.load_trials(sys.argv[2])
    else:  # json: every run's log (unfinished runs, stores written before Parquet); runs: each run's Parquet
        frame = store.load_trials(runs, columnar=sys.argv[1] == "runs")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
print(len(frame), seconds, cpu, len(getattr(frame, "columns", [])))
"""


def measure(path: str, root: Path, runs: int) -> tuple[int, float, float, int, int]:
    """(rows, wall seconds, CPU seconds, columns, peak RSS bytes) of one loading path in a fresh child process."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(root), str(runs)], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        raise SystemExit(f"{path} loading failed (status {status})")
    rows, seconds, cpu, columns = out.split()
    return int(rows), float(seconds), float(cpu), int(columns), usage.ru_maxrss * 1024  # Linux: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=1000, help="trials per run")
    parser.add_argument("--json-runs", type=int, default=200, help="runs the JSON-lines path reads (see above)")
    parser.add_argument("--store", help="keep the synthetic store in this directory, reuse it when it exists "
                                        "(default: a temporary one, deleted)")
    parser.add_argument("--generate", nargs=3, metavar=("RUNS", "TRIALS", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        runs, trials, root = int(args.generate[0]), int(args.generate[1]), Path(args.generate[2])
        start = time.perf_counter()
        write_store(root, runs, trials)
        print(f"generated {runs} runs x {trials} trials in {time.perf_counter() - start:.0f} s under {root}")
        start = time.perf_counter()
        store.write_columnar_tree(root)  # what a campaign writes when it ends
        print(f"campaign trials.parquet written in {time.perf_counter() - start:.1f} s", flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="trexlab-loading-") as tmp:
        root = Path(args.store or tmp)
        if not (root / store.TRIALS_COLUMNAR).is_file():
            # In a child: a child's ru_maxrss starts from its parent's resident size at fork, so this process
            # stays small (the store's generation holds the trial pool and a run's records).
            subprocess.run([sys.executable, __file__, "--generate", str(args.runs), str(args.trials), str(root)],
                           check=True)
        *_, idle = measure("idle", root, 0)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time under contention: "
              "compare the CPU seconds)")
        print(f"{'path':10} {'runs':>6} {'rows':>10} {'columns':>7} {'seconds':>8} {'CPU s':>7} {'rows/s':>11} "
              f"{'peak RSS':>9} {'over idle':>9}")
        figures = {}
        for path, runs in (("json", min(args.json_runs, args.runs)), ("runs", args.runs), ("campaign", args.runs)):
            rows, seconds, cpu, columns, peak = measure(path, root, runs)
            figures[path] = (rows, seconds, peak)
            print(f"{path:10} {runs:>6} {rows:>10,} {columns:>7} {seconds:>8.2f} {cpu:>7.2f} {rows / seconds:>11,.0f} "
                  f"{peak / 1e9:>7.2f} GB {(peak - idle) / 1e9:>6.2f} GB", flush=True)
        print(f"idle child (imports only): peak RSS {idle / 1e9:.2f} GB")
        rows, seconds, peak = figures["campaign"]
        json_rows, json_seconds, json_peak = figures["json"]
        print(f"the campaign file is {(rows / seconds) / (json_rows / json_seconds):.0f}x the JSON path's rows/s; "
              f"JSON path extrapolated to {rows:,} rows: {json_seconds * rows / json_rows:.0f} s, "
              f"{(idle + (json_peak - idle) * rows / json_rows) / 1e9:.1f} GB")
        verdict = "met" if seconds < GOAL_SECONDS and peak < GOAL_BYTES else "MISSED"
        print(f"goal {rows:,} rows < {GOAL_SECONDS:g} s and < {GOAL_BYTES / 1e9:g} GB: {verdict} "
              f"({seconds:.2f} s, {peak / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
