"""Columnar trials: a finished run's trials.parquet and a campaign's one file give what the JSON-lines log holds."""

import json
import os

import pandas as pd
import pyarrow.parquet as pq

from trexlab.generators import create_generator
from trexlab.results import store
from trexlab.trial import TrialSpec


def write_run(path, loads, latency=False, finish=True, **sut):
    run = store.RunDir(path, {"procedure": "throughput"})
    generator = create_generator("sim", capacity=1e5, **sut)
    for i, load in enumerate(loads):
        # Latency: the delayed frames are late in the first trial (1 ms timeout), in time in the next (1 s).
        spec = TrialSpec(offered_load=load, duration=1, **({"latency_mode": "tagged", "latency_frames": 50,
                                                            "frame_timeout": 1e-3 if i == 0 else 1.0}
                                                           if latency else {}))
        run.append_trial(generator.run_trial(spec), {"phase": "search", "trial": i + 1})
    if finish:
        run.finish({"procedure": "throughput"})
    run.close()
    return path


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The same rows and values (NaN and None alike), whatever the dtypes; lists compared as lists."""
    a, b = a.assign(run=a["run"].astype(str)), b.assign(run=b["run"].astype(str))
    a = a.sort_values(["run", "seq"]).reset_index(drop=True)
    b = b.sort_values(["run", "seq"]).reset_index(drop=True)
    assert list(a.columns) == list(b.columns)
    for column in a:
        for x, y in zip(a[column].tolist(), b[column].tolist(), strict=True):
            assert x == y or (pd.isna(x) if not isinstance(x, list) else False) and pd.isna(y), (column, x, y)


def test_a_finished_run_reads_from_parquet_with_the_logs_columns_and_values(tmp_path):
    # Latency trials: the maximum delay is a string in one ("> 1 ms (lost tags)"), a number in the other.
    write_run(tmp_path / "a", [5e4, 2e5], latency=True, delay=2e-3, delay_every_nth=10)
    write_run(tmp_path / "b", [5e4, 9e4, 1.5e5])
    assert (tmp_path / "a" / store.TRIALS_COLUMNAR).is_file()
    json_columns = json.loads(pq.read_schema(tmp_path / "a" / store.TRIALS_COLUMNAR).metadata[store.JSON_COLUMNS_KEY])
    assert json_columns, "the mixed number/string delay columns are stored as JSON text"
    from_log = store.load_trials(tmp_path, columnar=False)
    from_parquet = store.load_trials(tmp_path)
    assert len(from_parquet) == 5
    same(from_parquet, from_log)
    assert from_parquet["spec.frame_size"].iloc[0] == [64, 64]


def test_unfinished_runs_are_read_from_their_log(tmp_path):
    write_run(tmp_path / "done", [5e4])
    write_run(tmp_path / "running", [5e4, 6e4], finish=False)
    assert not (tmp_path / "running" / store.TRIALS_COLUMNAR).exists()
    trials = store.load_trials(tmp_path)
    assert sorted(trials["run"].astype(str).map(os.path.basename)) == ["done", "running", "running"]


def test_a_campaign_file_holds_its_runs_until_one_is_rewritten(tmp_path):
    for k in range(3):
        write_run(tmp_path / "point" / f"rep-{k + 1:03d}", [4e4 + k, 8e4 + k])
    assert store.write_columnar_tree(tmp_path).name == store.TRIALS_COLUMNAR
    held = pq.read_table(tmp_path / store.TRIALS_COLUMNAR).column("run").cast("string").unique().to_pylist()
    assert sorted(held) == ["point/rep-001", "point/rep-002", "point/rep-003"]
    same(store.load_trials(tmp_path), store.load_trials(tmp_path, columnar=False))
    # A run redone after the file was written (deleted, run again): its own trials count, not the file's.
    rewritten = tmp_path / "point" / "rep-002"
    write_run(rewritten, [1e3, 2e3, 3e3])
    os.utime(rewritten / store.RESULT, ns=(1, 1))  # another result.json than the file was made from
    trials = store.load_trials(tmp_path)
    mine = trials[trials["run"].astype(str) == str(rewritten)]
    assert sorted(mine["spec.offered_load"]) == [1e3, 2e3, 3e3]
    assert len(trials) == 7
    assert list(store.load_trials(tmp_path, columns=["spec.offered_load"]).columns) == ["run", "spec.offered_load"]
