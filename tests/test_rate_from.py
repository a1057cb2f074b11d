"""Latency and PDV at the measured throughput rate (RFC 8219): from a result directory or the same campaign."""

import json

import pytest

from trexlab import cli
from trexlab.plan.campaign import Campaign
from trexlab.results.analysis import load_campaigns, method_disclosure
from trexlab.spec import experiment

SIM = ["--generator", "sim", "--generator-opt", "capacity=200000"]


def test_cli_rate_from_a_throughput_result_uses_its_median_and_says_so(tmp_path, capsys):
    # One simulated DUT for both (--rate-from refuses another): 1 % random loss loses tags; its search allows 2 %.
    lossy = [*SIM, "--generator-opt", "random_loss=0.01"]
    assert cli.main(["throughput", *lossy, "--loss-tolerance-percent", "2", "--max-rate", "1e6", "--trial-duration",
                     "1", "--repeat", "3", "--results", str(tmp_path / "tp")]) == 0
    throughput = json.loads((tmp_path / "tp" / "summary.json").read_text())["figures"]["throughput_fps"]["median"]
    capsys.readouterr()
    assert cli.main(["latency", *lossy, "--rate-from", str(tmp_path / "tp"),
                     "--frame-timeout", "0.01", "--results", str(tmp_path / "lat")]) == 0
    out, err = capsys.readouterr()
    provenance = json.loads((tmp_path / "lat" / "rep-001" / "provenance.json").read_text())
    assert provenance["params"]["rate"] == throughput == provenance["rate_source"]["rate"]
    assert provenance["rate_source"]["from"] == str(tmp_path / "tp")
    assert provenance["rate_source"]["statistic"] == "median of 3 repetition(s)"
    assert f"measuring at {throughput:,.0f} fps" in err
    assert "worst_case > 10 ms (lost tags)" in out and "measured frames lost or late" in out
    worst = next(line for line in out.splitlines() if line.startswith("forward_worst_case_s"))
    assert "> timeout" in worst and "inf" not in worst, "the summary table never shows a number for lost tags"
    assert "1000 tagged frames after 60 s; frame timeout 10 ms" in out
    assert (f"offered load {throughput:,.0f} fps (the throughput rate: median of 3 repetition(s) of throughput_fps in "
            f"{tmp_path / 'tp'})") in out


def test_a_given_rate_is_disclosed_as_given(tmp_path, capsys):
    """RFC 8219 measures at the throughput rate: the method line says that a --rate is a number given to the run,
    not a throughput it took from results, in the CLI's summary and in summary.json."""
    assert cli.main(["pdv", *SIM, "--rate", "150000", "--trial-duration", "2", "--results", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert ("offered load 150,000 fps (given: not taken from throughput results; RFC 8219 measures at the "
            "throughput rate)") in out
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["method"]["rate_source"] == "given"


@pytest.mark.parametrize(("argv", "message"), [
    (["--rate", "1000", "--rate-from", "tp"], "--rate and --rate-from: give one of them"),
    (["--rate-from", "nowhere"], "rate-from='nowhere': allowed a directory with finished throughput runs, or "
                                 "EXPERIMENT/ID of a stored throughput campaign in results: neither is there"),
])
def test_cli_rate_from_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert cli.main(["pdv", *SIM, *argv, "--results", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == f"trexlab pdv: {message}"
    assert not (tmp_path / "r").exists()


SPEC = {
    "name": "latency-at-throughput",
    "generator": "sim",
    "generator_options": {"capacity": 300000},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "forward", "receive_tail": 0},
    "procedure": {"name": "latency",
                  "params": {"rate": {"from": "throughput", "params": {"max_rate": 1000000, "trial_duration": 1}},
                             "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}},
    "sweep": {"generator_options.capacity": [300000, 600000]},
    "repetitions": 2,
}


def test_a_campaign_measures_latency_at_each_points_median_throughput(tmp_path):
    outcome = Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path).run()
    assert outcome["done"] == 2
    runs = load_campaigns(outcome["campaign"])
    assert set(runs["provenance.procedure"]) == {"latency"} and len(runs) == 4, "the throughput runs are apart"
    for _, run in runs.iterrows():
        capacity = run["capacity"]
        source = run["provenance.rate_source.rate"]
        assert capacity * 0.99 <= source <= capacity and run["provenance.params.rate"] == source
        assert run["provenance.rate_source.statistic"] == "median of 2 repetition(s)"
        assert run["provenance.rate_source.from"].endswith(f"{run['point']}/throughput")
    disclosed = method_disclosure(outcome["campaign"]).replace("\\", "")  # Markdown's escapes
    assert disclosed.count("(the throughput rate: median of 2 repetition(s) of throughput_fps in ") == 2, disclosed


@pytest.mark.parametrize(("path", "value", "message"), [
    ("procedure.params.rate", {"from": "mlrsearch"}, "procedure.params.rate.from='mlrsearch': allowed throughput"),
    ("procedure.params.rate", {"from": "throughput", "params": {"max_rate": -1}},
     "procedure.params.rate.params.max_rate=-1"),
    ("procedure.params.rate", None, "procedure.params.rate=None: allowed a rate > 0 frames/s"),
])
def test_rate_from_is_validated_before_anything_runs(path, value, message):
    spec = json.loads(json.dumps(SPEC))
    spec["procedure"]["params"]["rate"] = value
    with pytest.raises(experiment.InvalidExperiment, match=message.replace("(", r"\(").replace(".", r"\.")):
        experiment.validate(spec)


def test_only_latency_and_pdv_take_a_rate_from_throughput():
    spec = json.loads(json.dumps(SPEC))
    spec["procedure"] = {"name": "flr", "params": {"rate": {"from": "throughput"}}}
    with pytest.raises(experiment.InvalidExperiment, match="only latency, pdv take a rate from throughput"):
        experiment.validate(spec)


def test_a_rate_taken_from_a_throughput_median_that_is_a_lower_bound_says_so(tmp_path):
    """RFC 8219 measures latency and PDV at the throughput rate. When the throughput repetitions' median is only a
    lower bound of the DUT's (a repetition at or below it was tester-bound, or its search met no load the DUT
    failed: max_rate below what the DUT forwards), the latency was measured below the DUT's throughput rate: the
    method line says so, as the throughput summary does ('LOWER BOUND'), rather than 'the throughput rate'."""
    from trexlab.generators import create_generator
    from trexlab.plan.rate_from import median_throughput
    from trexlab.plan.repetition import method_line, method_of, repeat
    from trexlab.procedures import throughput
    from trexlab.trial import TrialSpec

    traffic = TrialSpec(offered_load=1.0, duration=1.0, directions="forward")
    result = {"method": "RFC 8219 section 7.2", "params": {"rate": 1.0}}
    lines = {}
    for name, max_rate in (("capped", 1e5), ("found", 1e6)):  # the sim DUT forwards 200,000 fps
        repeat("throughput", create_generator("sim", capacity=2e5), traffic,
               throughput.Params(max_rate=max_rate, trial_duration=1), 3, tmp_path / name, {})
        rate, source = median_throughput(tmp_path / name)
        lines[name] = method_line(method_of({**result, "params": {"rate": rate}}, source))
    assert "a lower bound of the DUT's throughput" in lines["capped"], lines["capped"]
    assert "no failing load up to max_rate" in lines["capped"], "the reason is named"
    assert "lower bound" not in lines["found"], lines["found"]


@pytest.mark.parametrize(("flags", "difference"), [
    (["--frame-size", "128"], "traffic.frame_size [64, 64] there, [128, 128] here"),
    (["--generator-opt", "capacity=300000"], "generator_options.capacity 200000.0 there, 300000.0 here"),
])
def test_cli_rate_from_throughput_runs_of_another_set_up_is_refused_before_any_traffic(tmp_path, capsys, flags,
                                                                                         difference):
    """RFC 8219 measures at the DUT's throughput rate: --rate-from took the median of any throughput runs, measured
    with another frame size or another (simulated) DUT, as this run's rate. Compared as rate.campaign compares."""
    assert cli.main(["throughput", *SIM, "--max-rate", "1e6", "--trial-duration", "1",
                     "--results", str(tmp_path / "tp")]) == 0
    capsys.readouterr()
    assert cli.main(["latency", *SIM, *flags, "--rate-from", str(tmp_path / "tp"), "--frame-timeout", "0.01",
                     "--results", str(tmp_path / "lat")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"trexlab latency: rate-from='{tmp_path / 'tp'}': allowed throughput runs of this run's "
                           f"set-up (lab, generator, generator_options, traffic, dut); rep-001: {difference}")
    assert not (tmp_path / "lat").exists()


@pytest.mark.parametrize(("figures", "left_out"), [
    # A repetition with no figure and no bound below min_rate (a result written by hand, or by another tool): the
    # stats rule leaves it out, (100,000 + 200,000) / 2; the rate's own rule had ranked it below every figure and took
    # 100,000, a rate the throughput summary beside it does not report.
    ([None, 100_000.0, 200_000.0], 1),
    # Below min_rate: an observation below every figure under both rules, 100,000.
    (["below", 100_000.0, 200_000.0], 0),
])
def test_the_rate_from_throughput_runs_is_the_median_their_summary_reports(tmp_path, figures, left_out):
    from trexlab.plan.rate_from import median_throughput
    from trexlab.plan.repetition import observation
    from trexlab.results.stats import summarize

    results = []
    for k, figure in enumerate(figures, 1):
        run = tmp_path / f"rep-{k:03d}"
        run.mkdir()
        result = {"procedure": "throughput", "headline": {"throughput_fps": None if figure == "below" else figure},
                  "headline_below": {"throughput_fps": 50_000.0} if figure == "below" else {}}
        (run / "provenance.json").write_text("{}")
        (run / "result.json").write_text(json.dumps(result))
        results.append(result)
    rate, source = median_throughput(tmp_path)
    assert rate == summarize([observation(r, "throughput_fps") for r in results])["median"]
    assert rate == (150_000.0 if left_out else 100_000.0)
    assert source["statistic"] == ("median of 2 repetition(s) (1 without a figure left out)" if left_out
                                   else "median of 3 repetition(s)")
