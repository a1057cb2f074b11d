"""Results store, repetition with resume, statistics and the CLI."""

import json
import math
import os
import stat
from pathlib import Path

import pytest

from trexlab import cli
from trexlab.generators import create_generator
from trexlab.media import max_frame_rate
from trexlab.plan import repetition
from trexlab.procedures import throughput
from trexlab.results import store
from trexlab.results.stats import dispersion_percent, summarize
from trexlab.trial import Latency, TrialSpec


def test_media_limits_rfc5180_a1():
    assert max_frame_rate(1e9, 64) == 1_488_095
    assert max_frame_rate(1e9, 1518) == 81_274
    assert max_frame_rate(10e9, 64) == 14_880_952


def test_dispersion_reproduces_siitperf_table_iii():
    # Lencse 2021, Table III, 64 B: median 880,381, min 826,610, max 883,850 -> 6.50 %
    assert round(dispersion_percent(880_381, 826_610, 883_850), 2) == 6.50
    # 128 B: 875,126 / 742,186 / 876,617 -> 15.36 %
    assert round(dispersion_percent(875_126, 742_186, 876_617), 2) == 15.36


def test_summary_statistics_one_by_one():
    values = list(range(1, 101))
    s = summarize(values)
    assert s["median"] == 50.5 and s["min"] == 1 and s["max"] == 100 and s["count"] == 100
    assert (s["p1"], s["p99"]) == (1, 99), "nearest rank: ceil(0.01 * 100) = 1, ceil(0.99 * 100) = 99"
    assert s["dispersion_percent"] == pytest.approx(99 / 50.5 * 100)


def test_missing_values_are_counted_not_read_as_zero():
    s = summarize([10.0, None, 30.0, float("nan")])
    assert s["count"] == 2 and s["missing"] == 2 and s["median"] == 20.0
    assert math.isnan(summarize([None])["median"])


def test_latency_percentiles_nearest_rank_with_histograms():
    samples = Latency.from_delays(range(1, 1001), unit=1.0)
    assert samples.percentile(50) == 500 and samples.percentile(99.9) == 999
    histogram = Latency.from_delays([1.0] * 500 + [2.0] * 499 + [3.0], unit=1.0)
    assert histogram.percentile(50) == 1.0 and histogram.percentile(99.9) == 2.0 and histogram.percentile(100) == 3


def test_trials_are_appended_as_they_end_and_a_cut_line_is_ignored(tmp_path):
    run = store.RunDir(tmp_path / "run", {"procedure": "throughput"})
    generator = create_generator("sim", capacity=1e5)
    for load in (1e4, 2e4):
        run.append_trial(generator.run_trial(TrialSpec(offered_load=load, duration=1)), {"phase": "x"})
    # Before finish() the trials are on disk already: a crash here loses nothing that ended.
    assert len(store.read_trials(tmp_path / "run")) == 2
    with open(tmp_path / "run" / store.TRIALS, "a") as f:
        f.write('{"seq": 3, "cut sh')
    assert len(store.read_trials(tmp_path / "run")) == 2
    assert not store.is_finished(tmp_path / "run")
    trials = store.load_trials(tmp_path)
    assert list(trials["spec.offered_load"]) == [1e4, 2e4]
    run.close()  # its trial log: not left to the garbage collector, which warns of it (a ResourceWarning)


def test_every_name_the_store_makes_is_fsynced_in_its_directory(tmp_path, monkeypatch):
    # A file's fsync keeps its data, not its name: a power cut could keep points.jsonl's "done" and lose the
    # result.json a repetition was renamed to (or a new run directory). Every name the store makes (mkdir, a
    # file created, a rename) must be followed by an fsync of the directory holding it.
    events = []
    real_fsync, real_replace, real_mkdir = os.fsync, os.replace, os.mkdir

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append(("fsync", os.fstat(fd).st_ino, None))
        real_fsync(fd)

    def named(path):
        path = Path(path)
        if not path.name.endswith(".tmp"):
            events.append(("name", os.stat(path.parent).st_ino, str(path)))

    def replace(src, dst):
        real_replace(src, dst)
        named(dst)

    def mkdir(path, *args, **kwargs):
        real_mkdir(path, *args, **kwargs)
        named(path)

    def opened(path, mode="r", *args, **kwargs):
        new = mode[0] in "wa" and not Path(path).exists()
        f = open(path, mode, *args, **kwargs)
        if new:
            named(path)
        return f

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(store, "open", opened, raising=False)
    campaign = tmp_path / "exp" / "c-1"
    repetition.repeat("throughput", create_generator("sim", capacity=4e5), TrialSpec(offered_load=1, duration=1),
                      _throughput_params(), 2, campaign / "point-0", {})
    store.append_point_record(campaign, {"point": "point-0", "status": "done"})
    store.write_columnar_tree(campaign)
    names = [(i, directory, name) for i, (kind, directory, name) in enumerate(events) if kind == "name"]
    assert len(names) >= 14, names  # 3 directories, 2 runs of 4 files, the point's summary, the point log, the tree's
    unsynced = [name for i, directory, name in names if ("fsync", directory, None) not in events[i + 1:]]
    assert unsynced == []


def test_a_point_record_after_a_line_cut_short_is_read(tmp_path):
    # A crash while a point's "failed" was appended leaves a line without its end; the next record (its "done" after
    # the rerun) was appended to it, one line that is no JSON, skipped like the cut one: the point read as never done.
    store.append_point_record(tmp_path, {"point": "a", "status": "done"})
    with open(tmp_path / store.POINTS, "a") as f:
        f.write('{"point": "b", "status": "fai')
    store.append_point_record(tmp_path, {"point": "b", "status": "done"})
    assert {point: r["status"] for point, r in store.read_point_log(tmp_path).items()} == {"a": "done", "b": "done"}


def _throughput_params():
    return throughput.Params(max_rate=1e6, resolution=1000, trial_duration=10)


def strict_json(text: str):
    """json.loads that refuses the NaN and Infinity tokens strict JSON parsers (jq, browsers) refuse."""
    def refuse(token):
        raise ValueError(f"non-JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_result_files_are_strict_json_and_infinities_read_back(tmp_path):
    import numpy as np

    data = {"none": math.nan, "lost": math.inf, "down": -math.inf, "f32": np.float32("nan"),
            "nested": [{"p99_9": math.inf}, (1.5, math.nan)], "text": "kept"}
    store.write_json_atomic(tmp_path / "r.json", data)
    written = strict_json((tmp_path / "r.json").read_text())
    assert written == {"none": None, "lost": "inf", "down": "-inf", "f32": None,
                       "nested": [{"p99_9": "inf"}, [1.5, None]], "text": "kept"}
    back = store.read_json(tmp_path / "r.json")
    assert back["lost"] == math.inf and back["down"] == -math.inf and back["nested"][0]["p99_9"] == math.inf
    assert store.loads('{"old": Infinity}')["old"] == math.inf, "files written before stay readable"


def test_a_summary_with_undefined_statistics_is_strict_json_and_says_why(tmp_path):
    # Every repetition below min_rate: no maximum, no dispersion (NaN in memory, null on disk).
    params = throughput.Params(max_rate=1e6, min_rate=100_000, trial_duration=1)
    summary = repetition.repeat("throughput", create_generator("sim", capacity=50),
                                TrialSpec(offered_load=1.0, duration=1.0), params, 2, tmp_path, {})
    assert math.isnan(summary["throughput_fps"]["dispersion_percent"])
    written = strict_json((tmp_path / repetition.SUMMARY).read_text())["figures"]["throughput_fps"]
    assert written["dispersion_percent"] is None and written["median"] == "< 100000"
    assert written["why"] == "below min_rate 100000: rep 1-2"
    for rep in tmp_path.glob("rep-*"):
        strict_json((rep / store.RESULT).read_text())
        [strict_json(line) for line in (rep / store.TRIALS).read_text().splitlines()]
    zero = summarize([0.0, 0.0, 0.0])
    assert math.isnan(zero["dispersion_percent"]) and zero["why"] == "dispersion undefined: median 0"


def test_repetition_resumes_without_losing_or_duplicating(tmp_path, monkeypatch):
    traffic = TrialSpec(offered_load=1, duration=1)
    calls = {"n": 0}
    real_run = throughput.run

    def crashing_run(context, params):  # the procedure protocol's signature, which the registry checks
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # killed in the middle of repetition 3
        return real_run(context, params)

    monkeypatch.setattr(throughput, "run", crashing_run)
    with pytest.raises(KeyboardInterrupt):
        repetition.repeat("throughput", create_generator("sim", capacity=4e5), traffic, _throughput_params(), 5,
                          tmp_path, {})
    assert sorted(p.name for p in tmp_path.glob("rep-*") if store.is_finished(p)) == ["rep-001", "rep-002"]
    monkeypatch.setattr(throughput, "run", real_run)
    before = (tmp_path / "rep-001" / store.RESULT).read_text()
    summary = repetition.repeat("throughput", create_generator("sim", capacity=4e5), traffic, _throughput_params(),
                                5, tmp_path, {})
    assert summary["throughput_fps"]["count"] == 5
    assert (tmp_path / "rep-001" / store.RESULT).read_text() == before, "finished repetitions are kept as they were"
    runs = store.load_runs(tmp_path)
    assert len(runs) == 5 and runs["finished"].all()
    assert sorted(runs["provenance.repetition"]) == [1, 2, 3, 4, 5]


def test_cli_sim_throughput_writes_a_result_directory(tmp_path, capsys):
    code = cli.main(["throughput", "--generator", "sim", "--generator-opt", "capacity=250000", "--max-rate", "1e6",
                     "--repeat", "2", "--results", str(tmp_path / "r"), "--json"])
    assert code == 0
    output = json.loads(capsys.readouterr().out)
    assert 249_000 <= output["summary"]["throughput_fps"]["median"] <= 250_000
    provenance = json.loads((tmp_path / "r" / "rep-001" / store.PROVENANCE).read_text())
    assert provenance["generator"]["sut"]["capacity"] == 250000
    assert provenance["params"]["loss_tolerance_percent"] == 0.0


def test_a_run_into_another_runs_directory_is_refused_and_default_directories_are_fresh(tmp_path, capsys,
                                                                                            monkeypatch):
    run = ["throughput", "--generator", "sim", "--max-rate", "1e6", "--trial-duration", "1", "--repeat", "1"]
    assert cli.main([*run, "--generator-opt", "capacity=100000", "--results", str(tmp_path / "r")]) == 0
    before = (tmp_path / "r" / "rep-001" / store.RESULT).read_text()
    capsys.readouterr()
    # Other flags into the same --results: its finished repetition was counted as this run's ("done earlier")
    # and its figure printed under this run's parameters.
    code = cli.main([*run, "--generator-opt", "capacity=300000", "--frame-size", "1518", "--results",
                     str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("trexlab throughput: traffic.frame_size=[1518, 1518]: allowed [64, 64], "
                                            f"as the repetitions already in {tmp_path / 'r'} were measured")
    assert (tmp_path / "r" / "rep-001" / store.RESULT).read_text() == before
    # The same flags resume it (nothing left to run).
    assert cli.main([*run, "--generator-opt", "capacity=100000", "--results", str(tmp_path / "r")]) == 0
    # Two runs started in the same second without --results: each its own directory.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("trexlab.plan.runplan.time.strftime", lambda fmt: "20261126-120000")
    capsys.readouterr()
    outputs = []
    for capacity in ("100000", "200000"):
        assert cli.main([*run, "--generator-opt", f"capacity={capacity}", "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out)["results"])
    assert outputs == ["results/cli/throughput-20261126-120000", "results/cli/throughput-20261126-120000-2"]


def test_the_cli_shows_the_last_repetition_of_this_run(tmp_path, capsys):
    # --repeat 3, then --repeat 2 into the same directory: the last repetition of this run is rep-002, not the
    # directory's last by name (nor rep-999 before rep-1000, by name).
    run = ["throughput", "--generator", "sim", "--generator-opt", "capacity=100000", "--generator-opt",
           "capacity_noise=0.05", "--max-rate", "1e6", "--trial-duration", "1", "--results", str(tmp_path), "--json"]
    assert cli.main([*run, "--repeat", "3"]) == 0
    capsys.readouterr()
    assert cli.main([*run, "--repeat", "2"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["summary"]["throughput_fps"]["count"] == 2
    assert output["result"] == store.read_json(tmp_path / "rep-002" / store.RESULT)
    assert output["result"] != store.read_json(tmp_path / "rep-003" / store.RESULT)


@pytest.mark.parametrize(("argv", "named"), [
    (["throughput", "--generator", "sim", "--max-rate", "-1"], "max_rate=-1.0"),
    (["throughput", "--generator", "sim", "--frame-size", "20"], "frame_size[0]=20"),
    (["throughput", "--generator", "sim", "--destination-networks", "300"], "destination_networks=300"),
    (["throughput", "--generator", "sim", "--repeat", "0"], "repeat=0"),
    # Beyond what a trial may ask (swtester's limit): refused here, not by swtester at the first trial.
    (["throughput", "--generator", "sim", "--frame-timeout", "4000"], "frame_timeout=4000.0: allowed > 0 and <= 3600"),
    (["latency", "--generator", "sim", "--rate", "1000", "--frame-timeout", "4000"], "frame_timeout=4000.0"),
    (["throughput", "--generator", "sim", "--generator-opt", "capacity=fast"], "capacity='fast'"),
    (["throughput", "--generator", "sim", "--generator-opt", "colour=red"], "colour='red': allowed the keys capacity"),
    (["latency", "--generator", "sim", "--rate", "1000", "--tagged-frames", "10"], "tagged_frames=10"),
    (["latency", "--generator", "sim"], "rate=None: allowed a rate > 0 frames/s: the throughput rate"),
    (["throughput", "--generator", "software", "--inventory", "/nonexistent.yml"], "inventory /nonexistent.yml"),
])
def test_cli_bad_input_is_one_line_exit_2_and_no_result_dir(tmp_path, capsys, argv, named):
    code = cli.main([*argv, "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and named in err
    assert not (tmp_path / "r").exists()


def test_ctrl_c_before_the_run_is_one_line_exit_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the CLI loads its procedures (seconds on a busy machine) ends with one line, not a traceback."""
    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "registry", interrupted)
    code = cli.main(["throughput", "--generator", "sim", "--results", str(tmp_path / "r")])
    assert code == 130 and capsys.readouterr().err == "trexlab: interrupted\n"
    assert not (tmp_path / "r").exists()
