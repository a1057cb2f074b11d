"""Adaptive repetitions (stop when the median's CI is narrow) and warm-started searches, on the sim generator."""

import json
from pathlib import Path

import jsonschema
import pytest

from trexlab.generators.sim import create
from trexlab.paths import paths
from trexlab.plan import adaptive
from trexlab.plan.campaign import Campaign
from trexlab.plan.repetition import SUMMARY, repeat, summary_lines
from trexlab.procedures import throughput
from trexlab.procedures.common import RunContext
from trexlab.spec import experiment, safeyaml
from trexlab.spec.experiment import InvalidExperiment
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec.from_dict({"offered_load": 1.0, "duration": 1.0, "frame_size": [64, 64], "receive_tail": 0})


def test_median_interval_ranks_are_the_binomial_order_statistics():
    assert adaptive.median_ci_ranks(5) is None  # 2 / 2^5 = 6.25 % > 5 %: no 95 % interval from 5 values
    assert adaptive.median_ci_ranks(6) == (1, 6)  # coverage 1 - 2/64 = 96.9 %
    assert adaptive.median_ci_ranks(20) == (6, 15)  # the textbook pair for n = 20 (95.9 %)
    ci = adaptive.median_ci([float(v) for v in range(1, 21)])
    assert (ci["low"], ci["high"]) == (6.0, 15.0) and ci["confidence"] == pytest.approx(0.9586, abs=1e-4)
    for n in range(6, 60):  # l is the largest rank with coverage >= 95 %
        low, high = adaptive.median_ci_ranks(n)
        assert 1 - 2 * adaptive.binomial_cdf(low - 1, n) >= 0.95 > 1 - 2 * adaptive.binomial_cdf(low, n)
        assert high == n + 1 - low


SPEC = {
    "name": "adaptive",
    "generator": "sim",
    "generator_options": {"capacity": 400000, "capacity_noise": 0.002},
    "traffic": {"frame_size": [64, 64], "directions": "bidirectional", "receive_tail": 0},
    "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "resolution_percent": 0.1,
                                                   "trial_duration": 1}},
    "repetitions": {"min": 5, "max": 50, "until": {"median_ci_percent": 1}},
}


def test_adaptive_point_stops_once_the_median_interval_is_narrow_and_says_so(tmp_path):
    outcome = Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path).run()
    point = next(p for p in Path(outcome["campaign"]).iterdir() if p.is_dir())
    reps = sorted(point.glob("rep-*/result.json"))
    written = json.loads((point / SUMMARY).read_text())
    rule = written["method"]["repetition_rule"]
    assert rule["reached"] == len(reps) == written["repetitions"] == 6  # the first count with an interval at all
    assert rule["stopped"] == "every interval narrow enough"
    interval = rule["intervals"]["throughput_fps"]
    assert interval["width_percent"] < 1 and interval["ranks"] == [1, 6]
    results = [json.loads(r.read_text()) for r in reps]
    values = sorted(r["headline"]["throughput_fps"] for r in results)
    assert (interval["low"], interval["high"]) == (values[0], values[-1])
    text = "\n".join(summary_lines(written["figures"], written["method"]))
    assert "adaptive repetitions 5..50" in text and "6 run, every interval narrow enough" in text
    schema = json.loads((paths().root / "docs" / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(written, schema)  # the published layout, repetition_rule included


def test_adaptive_point_that_never_narrows_runs_to_its_maximum(tmp_path):
    generator = create(capacity=400000, capacity_noise=0.05)
    params = throughput.Params(max_rate=1e6, resolution_percent=0.1, trial_duration=1)
    rule = adaptive.RepetitionRule(5, 9, 0.01)
    repeat("throughput", generator, TRAFFIC, params, rule, tmp_path, {})
    written = json.loads((tmp_path / SUMMARY).read_text())
    assert written["repetitions"] == 9 and written["method"]["repetition_rule"]["stopped"] == "maximum reached"
    assert not rule.done([json.loads(p.read_text()) for p in sorted(tmp_path.glob("rep-*/result.json"))][:8])


def test_adaptive_stop_is_the_first_count_whose_interval_is_narrow(tmp_path):
    generator = create(capacity=400000, capacity_noise=0.01, seed=7)
    params = throughput.Params(max_rate=1e6, resolution_percent=0.1, trial_duration=1)
    rule = adaptive.RepetitionRule(5, 60, 1.0)
    repeat("throughput", generator, TRAFFIC, params, rule, tmp_path, {})
    results = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rep-*/result.json"))]
    assert 6 < len(results) < 60
    assert rule.done(results) and not any(rule.done(results[:n]) for n in range(len(results)))


@pytest.mark.parametrize("repetitions, expected", [
    ({"min": 5, "max": 50}, "repetitions.until"),
    ({"min": 9, "max": 5, "until": {"median_ci_percent": 1}}, "repetitions.min=9: allowed <= repetitions.max (5)"),
    ({"min": 5, "max": 50, "until": {"median_ci_percent": 0}}, "repetitions.until.median_ci_percent=0"),
    ({"min": 5, "max": 50, "until": {"median_ci_percent": 1}, "step": 2}, "repetitions='step'"),
])
def test_bad_adaptive_rule_is_one_line_naming_the_key(repetitions, expected):
    spec = {**json.loads(json.dumps(SPEC)), "repetitions": repetitions}
    with pytest.raises(InvalidExperiment) as info:
        experiment.validate(spec, "exp.yml")
    assert expected in str(info.value) and "\n" not in str(info.value)


# -- warm start ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("figures", [[100e3, 200e3, 300e3, 400e3], [1e5, 2e5, 3e5, 4e5, 5e5, 6e5, 7e5, 8e5]])
def test_the_warm_bounds_take_the_median_and_quartiles_by_the_projects_one_rank_rule(figures):
    # warm_bounds ranked its quartiles by index arithmetic of its own ((n - 1) // 4 and 3n // 4): of 4
    # repetitions the minimum and the maximum, where the project's percentile (nearest rank, ceil(q / 100 * n):
    # trexlab.results.stats) gives ranks 1 and 3. One rule for every order statistic of repetitions.
    import math

    n = len(figures)
    q1, q3 = figures[math.ceil(n / 4) - 1], figures[math.ceil(3 * n / 4) - 1]
    median = (figures[(n + 1) // 2 - 1] + figures[n // 2]) / 2
    previous = [{"headline": {throughput.HEADLINE: value}} for value in reversed(figures)]
    params = throughput.Params(max_rate=1e6, resolution=1.0)
    assert adaptive.warm_bounds(previous, params) == (median - (q3 - q1) / 2, median + (q3 - q1) / 2)


def search(capacity: float, **params):
    generator = create(capacity=capacity)
    result = throughput.run(RunContext(generator, TRAFFIC), throughput.Params(max_rate=1e6, min_rate=1e3,
                                                                              resolution=1e3, trial_duration=1,
                                                                              **params))
    return result


@pytest.mark.parametrize("capacity", [150_000, 398_000, 420_000, 900_000, 2_000_000, 500])
def test_warm_search_verifies_its_bounds_and_finds_what_a_cold_one_finds(capacity):
    cold = search(capacity)
    warm = search(capacity, start_bounds=(395_000, 405_000))
    assert warm.search[0]["offered_load"] == 405_000  # the upper bound is a full trial, first
    if capacity >= 405_000 or capacity < 395_000:  # a bound that did not hold was widened, then bisected
        assert len(warm.search) > 2
    else:
        assert warm.search[1]["offered_load"] == 395_000 and len(warm.search) < len(cold.search)
    if cold.throughput is None:
        assert warm.throughput is None and warm.below_minimum
    else:
        assert warm.throughput <= capacity < warm.throughput + 1e3 or warm.throughput == 1e6
        assert abs(warm.throughput - cold.throughput) <= 1e3


def test_warm_start_campaign_starts_later_repetitions_near_the_median_and_discloses_it(tmp_path):
    generator = create(capacity=400000, capacity_noise=0.002)
    params = throughput.Params(max_rate=1e6, resolution_percent=0.5, trial_duration=1, warm_start=True)
    repeat("throughput", generator, TRAFFIC, params, 4, tmp_path, {})
    results = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rep-*/result.json"))]
    assert results[0]["params"]["start_bounds"] is None
    for k, result in enumerate(results[1:], start=1):
        low, high = result["params"]["start_bounds"]
        median = sorted(r["throughput_fps"] for r in results[:k])[(k - 1) // 2: k // 2 + 1]
        assert low < sum(median) / len(median) < high
        assert result["search"][0]["offered_load"] == high and result["trials"] < results[0]["trials"]
    written = json.loads((tmp_path / SUMMARY).read_text())
    assert "warm start" in "\n".join(summary_lines(written["figures"], written["method"]))


def test_the_schema_declares_the_adaptive_rule_that_validation_takes():
    """trexlab schema gave the adaptive rule no keys ({"type": "object"}): an editor offered none and passed any,
    and the description left out until.figures. It declares trexlab.plan.adaptive's, and refuses what that
    refuses."""
    from trexlab.params import InvalidParameter
    from trexlab.spec.schema import experiment_schema
    validator = jsonschema.Draft202012Validator(experiment_schema()["properties"]["repetitions"])
    until = {"median_ci_percent": 1}
    good = [{"min": 5, "max": 50, "until": until},
            {"min": 1, "max": 1000, "until": {"median_ci_percent": 100, "figures": ["throughput_fps"]}}]
    bad = [{"mni": 5, "max": 50, "until": until}, {"min": 5, "max": 50}, {"min": 0, "max": 50, "until": until},
           {"min": 5, "max": 1001, "until": until}, {"min": 5, "max": 50, "until": {"median_ci_percen": 1}},
           {"min": 5, "max": 50, "until": {"median_ci_percent": 0}},
           {"min": 5, "max": 50, "until": {"median_ci_percent": 101}},
           {"min": 5, "max": 50, "until": {"median_ci_percent": 1, "figures": "throughput_fps"}}]
    for rule in good:
        assert validator.is_valid(rule) and adaptive.rule_from_mapping(rule), rule
    for rule in bad:
        with pytest.raises(InvalidParameter):
            adaptive.rule_from_mapping(rule)
        assert not validator.is_valid(rule), rule
    assert "figures" in validator.schema["description"]


# -- until.figures: only the figures the procedure reports ---------------------------------------------------------

def test_a_misspelt_until_figure_is_refused_naming_it_and_the_allowed_ones():
    """until.figures took any name: a misspelt one never narrowed, so the point silently ran max repetitions
    ("without a figure (missing or censored)"). validate refuses it, naming what the procedure reports."""
    spec = json.loads(json.dumps(SPEC))
    spec["repetitions"]["until"]["figures"] = ["throughput_pfs"]
    with pytest.raises(InvalidExperiment) as info:
        experiment.validate(spec, "exp.yml")
    message = str(info.value)
    assert message.startswith("exp.yml: repetitions.until.figures='throughput_pfs': allowed ")
    assert message.endswith(" throughput_fps") and "\n" not in message
    spec["repetitions"]["until"]["figures"] = ["throughput_fps"]
    assert experiment.validate(spec, "exp.yml").repetition_rule.figures == ("throughput_fps",)


def test_a_figure_one_sweep_point_does_not_report_is_refused_at_that_point():
    spec = {**json.loads(json.dumps(SPEC)), "procedure": {"name": "pdv", "params": {"rate": 1000,
                                                                                     "trial_duration": 1}},
            "sweep": {"traffic.directions": ["bidirectional", "forward"]}}
    spec["repetitions"]["until"]["figures"] = ["reverse_pdv_s"]
    with pytest.raises(InvalidExperiment) as info:
        experiment.validate(spec, "exp.yml")
    assert "point 1 " in str(info.value) and "allowed forward_pdv_s" in str(info.value)


def test_until_figures_null_means_every_figure_to_the_schema_as_to_the_code():
    """The schema refused figures: null, which the code reads as every headline figure; both take it now."""
    from trexlab.spec.schema import experiment_schema
    rule = {"min": 5, "max": 50, "until": {"median_ci_percent": 1, "figures": None}}
    assert jsonschema.Draft202012Validator(experiment_schema()["properties"]["repetitions"]).is_valid(rule)
    assert experiment.validate({**json.loads(json.dumps(SPEC)), "repetitions": rule}).repetition_rule.figures == ()


def test_every_shipped_experiment_validates_with_until_naming_each_figure_it_reports():
    """No shipped experiment declares until.figures yet: each, given a rule naming every figure its procedure
    reports at all its points (procedure.headline_names), still validates; the test below compares those names
    with what runs report."""
    from trexlab.plan.runplan import procedure_params, traffic_template
    from trexlab.procedures import procedure
    specs = sorted((paths().root / "experiments").glob("*/experiment.yml"))
    assert specs
    for path in specs:
        spec = safeyaml.load(path)
        reported = None
        for point in experiment.Experiment(spec, path).points():  # validated below, with the rule
            name, params = point.spec["procedure"]["name"], dict(point.spec["procedure"].get("params") or {})
            if isinstance(params.get("rate"), dict):  # rate: {from: throughput}: any rate names the same figures
                params["rate"] = 1.0
            names = procedure(name).headline_names(procedure_params(name, params),
                                                   traffic_template(point.spec.get("traffic")))
            reported = [n for n in (names if reported is None else reported) if n in names]
        assert reported, path
        rule = {"min": 2, "max": 3, "until": {"median_ci_percent": 5, "figures": reported}}
        assert experiment.validate({**spec, "repetitions": rule}, str(path), path).repetition_rule.figures \
            == tuple(reported), path


@pytest.mark.parametrize("name, params, directions", [
    ("throughput", {"max_rate": 1e6, "resolution_percent": 1, "trial_duration": 1}, "bidirectional"),
    ("mlrsearch", {"max_rate": 1e6, "goals": [{"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.5,
                                               "relative_width": 0.05, "initial_trial_duration": 1.0,
                                               "final_trial_duration": 1.0, "duration_sum": 1.0},
                                              {"loss_ratio": 0.005, "relative_width": 0.05,
                                               "final_trial_duration": 1.0, "duration_sum": 1.0}]},
     "bidirectional"),
    ("flr", {"max_rate": 1e6, "trial_duration": 1}, "forward"),
    ("latency", {"rate": 100_000, "trial_duration": 1, "tag_delay": 0.5, "rfc2544_trials": 0}, "bidirectional"),
    ("latency", {"rate": 100_000, "trial_duration": 1, "tag_delay": 0.5, "rfc2544_trials": 0}, "reverse"),
    ("pdv", {"rate": 100_000, "trial_duration": 1}, "bidirectional"),
    ("selftest", {"frame_sizes": [64, 1518], "max_rate": 1e6, "resolution": 10_000, "trial_duration": 1},
     "bidirectional"),
    ("selftest", {"frame_sizes": [128], "max_rate": 1e6, "resolution": 10_000, "trial_duration": 1,
                  "floor_load_percent": 0}, "bidirectional"),
])
def test_headline_names_are_what_a_sim_run_reports(name, params, directions):
    """The names validate allows in until.figures (procedure.headline_names) are the headline of a real run on the
    sim generator, so the two cannot drift apart (rfc6349 and http_download: in tests/test_rfc6349.py)."""
    from trexlab.plan.runplan import procedure_params
    from trexlab.procedures import procedure
    module = procedure(name)
    built = procedure_params(name, params)
    traffic = TrialSpec.from_dict({**TRAFFIC.to_dict(), "directions": directions})
    result = module.run(RunContext(create(capacity=400000), traffic), built).to_dict()
    assert list(result["headline"]) == list(module.headline_names(built, traffic))


def test_a_count_the_rule_chose_says_its_intervals_confidence_is_a_fixed_counts():
    """A point stops at the first count whose interval is narrow: the count depends on the widths, so the interval it
    stopped on covers the median less often than the exact confidence of a fixed count, which the method line gave as
    the interval's ('95.9 %') with no word. It now says so; a point that ran to its maximum, or a fixed count, did
    not stop on its widths and says nothing."""
    rule = {"min": 5, "max": 50, "median_ci_percent": 1, "confidence": 0.95, "reached": 6,
            "stopped": "every interval narrow enough",
            "intervals": {"throughput_fps": {"median": 400000.0, "low": 399000.0, "high": 401000.0, "ranks": [1, 6],
                                             "confidence": 0.96875, "width_percent": 0.5}}}
    text = adaptive.rule_text(rule)
    assert "(ranks 1-6, 96.9 %" in text.replace("96.9%", "96.9 %")
    assert adaptive.STOPPED_ON_WIDTH in text, text
    assert adaptive.STOPPED_ON_WIDTH not in adaptive.rule_text({**rule, "reached": 50, "stopped": "maximum reached"})
