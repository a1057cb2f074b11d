"""Resume inside a search: a repetition killed mid-search replays its logged trials and ends as if never killed."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from trexlab import cli
from trexlab.generators.sim import create
from trexlab.plan.repetition import repeat
from trexlab.procedures import throughput
from trexlab.results import store
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, "frame_size": [64, 64], "receive_tail": 0})


def command(results: Path, wall_clock_factor: float) -> list[str]:
    return [sys.executable, "-m", "trexlab.cli", "throughput", "--generator", "sim",
            "--generator-opt", "capacity=400000", "--generator-opt", "capacity_noise=0.01",
            "--generator-opt", f"wall_clock_factor={wall_clock_factor}", "--max-rate", "1000000",
            "--resolution-percent", "0.1", "--trial-duration", "1", "--receive-tail", "0", "--repeat", "3",
            "--results", str(results), "--json"]


def trials(run: Path) -> list[dict]:
    """A run's trial records without their wall-clock time (the only thing a rerun may change)."""
    return [{k: v for k, v in json.loads(line).items() if k != "time"}
            for line in (run / "trials.jsonl").read_text().splitlines()]


def test_sim_is_deterministic_given_its_seed_and_skips_replayed_trials():
    specs = [dataclasses.replace(TRAFFIC, offered_load=load) for load in (390_000, 400_000, 410_000, 405_000)]
    runs = [[g.run_trial(spec).to_dict() for spec in specs]
            for g in (create(capacity=4e5, capacity_noise=0.01, random_loss=1e-4) for _ in range(2))]
    assert runs[0] == runs[1]
    skipping = create(capacity=4e5, capacity_noise=0.01, random_loss=1e-4)
    skipping.skip_trials(3)
    assert skipping.run_trial(specs[3]).to_dict() == runs[0][3]


def test_a_log_cut_short_is_replayed_and_the_search_goes_on_where_it_stopped(tmp_path):
    params = throughput.Params(max_rate=1e6, resolution_percent=0.1, trial_duration=1)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    repeat("throughput", create(capacity=4e5, capacity_noise=0.01), TRAFFIC, params, 1, whole, {})
    lines = (whole / "rep-001" / "trials.jsonl").read_text().splitlines()
    (cut / "rep-001").mkdir(parents=True)
    (cut / "rep-001" / "trials.jsonl").write_text("\n".join(lines[:4]) + "\n" + lines[4][:30])  # a torn last line
    generator = create(capacity=4e5, capacity_noise=0.01)
    seen = []
    repeat("throughput", generator, TRAFFIC, params, 1, cut, {}, progress=lambda phase, info: seen.append(phase))
    assert "resume" in seen and generator.trials == len(lines)  # 4 replayed (counted), the rest run
    assert trials(cut / "rep-001") == trials(whole / "rep-001")
    assert (cut / "rep-001" / "trials.jsonl").read_text().splitlines()[:4] == lines[:4]  # kept as logged
    assert json.loads((cut / "rep-001" / "result.json").read_text()) == json.loads(
        (whole / "rep-001" / "result.json").read_text())


def test_killed_mid_search_resumes_to_the_uninterrupted_result_and_trial_sequence(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    reference = tmp_path / "uninterrupted"
    assert cli.main(command(reference, 0)[3:]) == 0  # in this process: the same CLI, one interpreter start less
    killed = tmp_path / "killed"
    # 50 ms per simulated trial: the search of repetition 2 is under way for long enough to be caught in it.
    process = subprocess.Popen(command(killed, 0.05), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = killed / "rep-002" / "trials.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.is_file() and len(log.read_text().splitlines()) >= 3):
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    logged = len(log.read_text().splitlines())
    assert 3 <= logged < len(trials(reference / "rep-002")), "killed mid-search of repetition 2"
    assert not (killed / "rep-002" / "result.json").exists()
    earlier = json.loads((killed / "rep-002" / "provenance.json").read_text())
    resumed = subprocess.run(command(killed, 0), capture_output=True, text=True, env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed, {logged} logged trial(s) replayed" in resumed.stderr
    # The replayed trials were measured by the killed process: the repetition's provenance names it.
    before = {"started": earlier["started"], "git_commit": earlier["git_commit"],
              "trexlab_version": earlier["trexlab_version"], "hostname": earlier["host"]["hostname"]}
    assert json.loads((killed / "rep-002" / "provenance.json").read_text())["resumed"] == [
        {**before, "trials_logged": logged}]
    assert "resumed" not in json.loads((killed / "rep-001" / "provenance.json").read_text())
    for rep in ("rep-001", "rep-002", "rep-003"):
        assert trials(killed / rep) == trials(reference / rep), rep
        assert json.loads((killed / rep / "result.json").read_text()) == json.loads(
            (reference / rep / "result.json").read_text()), rep


class Interrupted(Exception):
    pass


def test_interrupted_while_replaying_the_next_resume_still_replays_every_logged_trial(tmp_path):
    # The log of a resumed repetition must survive its own replay: a crash after 2 of 6 logged trials were written
    # back used to leave a log of 2, and the next resume measured the other 4 again.
    params = throughput.Params(max_rate=1e6, resolution_percent=0.1, trial_duration=1)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    repeat("throughput", create(capacity=4e5, capacity_noise=0.01), TRAFFIC, params, 1, whole, {})
    lines = (whole / "rep-001" / "trials.jsonl").read_text().splitlines()
    logged = 6
    assert len(lines) > logged + 1
    (cut / "rep-001").mkdir(parents=True)
    (cut / "rep-001" / "trials.jsonl").write_text("\n".join(lines[:logged]) + "\n")
    generator = create(capacity=4e5, capacity_noise=0.01)
    skip = generator.skip_trials
    replayed = []

    def interrupted(count):  # the replay is cut off (crash, kill -9) once 2 records have been written back
        if len(replayed) == 2:
            raise Interrupted
        replayed.append(count)
        skip(count)

    generator.skip_trials = interrupted
    try:
        repeat("throughput", generator, TRAFFIC, params, 1, cut, {})
    except Interrupted:
        pass
    else:
        raise AssertionError("the replay was not interrupted")
    assert [r["seq"] for r in store.read_trials(cut / "rep-001")] == list(range(1, logged + 1))
    generator = create(capacity=4e5, capacity_noise=0.01)
    live = []
    run_trial = generator.run_trial
    generator.run_trial = lambda spec: live.append(spec) or run_trial(spec)
    seen = []
    repeat("throughput", generator, TRAFFIC, params, 1, cut, {}, progress=lambda phase, info: seen.append(info))
    assert {"repetition": 1, "replayed": logged} in seen
    assert len(live) == len(lines) - logged  # only the trials never logged were measured
    assert (cut / "rep-001" / "trials.jsonl").read_text().splitlines()[:logged] == lines[:logged]  # as logged
    assert trials(cut / "rep-001") == trials(whole / "rep-001")
    assert sorted(p.name for p in (cut / "rep-001").iterdir()) == sorted(p.name for p in (whole / "rep-001").iterdir())
