"""MLRsearch against its specification (draft-ietf-bmwg-mlrsearch-15, published as RFC 9971; sections are the
draft's): what a goal result is (regular or irregular, section 4.8.4) and what the test report must disclose.
Simulated SUTs: each search takes well under a second."""

import dataclasses
from pathlib import Path

import pytest

from trexlab.generators import create_generator
from trexlab.plan.repetition import summarize_headlines, summary_lines
from trexlab.procedures import mlrsearch
from trexlab.procedures.common import RFC2544_SETUP_PHASES, RunContext
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)
#: One 1 s trial decides a load (duration sum = final trial duration, exceed ratio 0): the shortest search.
QUICK = {"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.0, "relative_width": 0.005,
         "initial_trial_duration": 1.0, "final_trial_duration": 1.0, "duration_sum": 1.0}


def sim(**sut):
    return create_generator("sim", **sut)


def test_a_regular_goal_result_has_both_relevant_bounds_within_the_goal_width():
    result = mlrsearch.run(RunContext(sim(capacity=437_000), TRAFFIC), mlrsearch.Params(max_rate=1e6, goals=(QUICK,)))
    goal = result.goals[0]
    lower, upper = goal["relevant_lower_bound"], goal["relevant_upper_bound"]
    assert lower < 437_000 <= upper and upper - lower <= QUICK["relative_width"] * upper
    assert goal["regular"] is True and goal["irregular"] is None
    assert result.to_dict()["headline_irregular"] == {}


def test_max_load_classified_a_lower_bound_at_the_mediums_limit_is_an_irregular_result_and_marked():
    # No relevant upper bound: the goal result is irregular (draft-15 section 4.8.4.2), and a figure taken from it
    # must be clearly marked as such, even where max load is the medium's own limit and the figure cannot be higher.
    result = mlrsearch.run(RunContext(sim(capacity=1e9), TRAFFIC), mlrsearch.Params(media="1g", goals=(QUICK,)))
    goal = result.goals[0]
    assert goal["relevant_upper_bound"] is None and goal["conditional_throughput"] > 0
    assert goal["regular"] is False and "no relevant upper bound" in goal["irregular"]
    found = result.to_dict()
    assert found["headline_irregular"] == {"NDR_fps": goal["irregular"]}
    assert found["headline_at_least"] == {}, "the medium's limit: no higher load exists, not a lower bound"
    assert any(note.startswith("irregular goal result") for note in goal["notes"]), "the goal's own notes say so"
    lines = "\n".join(summary_lines(summarize_headlines([found])))
    assert f"irregular goal result: {goal['irregular']}: rep 1" in lines


def test_min_load_classified_an_upper_bound_is_an_irregular_result():
    result = mlrsearch.run(RunContext(sim(capacity=437_000, random_loss=1e-3, seed=3), TRAFFIC),
                           mlrsearch.Params(max_rate=1e6, goals=(QUICK,)))
    goal = result.goals[0]
    assert goal["below_minimum_load"] and goal["regular"] is False and "no relevant lower bound" in goal["irregular"]
    assert result.to_dict()["headline_irregular"] == {}, "no figure to mark: it is censored (headline_below)"


def test_a_search_out_of_time_reports_the_bounds_it_has_as_irregular_results_not_a_traceback():
    # search_time_max: 'wall-clock s after which the search stops with the bounds it has'. The reference
    # implementation raises instead; a goal not finished by then is irregular (draft-15 section 4.8.4.2), one that
    # finished keeps its regular result. A tiny search_time_max lets only the initial trials run.
    noisy = sim(capacity=437_000, capacity_noise=0.05, seed=1)
    two = (QUICK, {**QUICK, "name": "PDR", "loss_ratio": 0.005, "relative_width": 0.0001})
    result = mlrsearch.run(RunContext(noisy, TRAFFIC), mlrsearch.Params(max_rate=1e6, goals=two, search_time_max=1e-9))
    goals = {g["name"]: g for g in result.goals}
    assert result.trials >= 1
    unfinished = [g for g in goals.values() if not g["regular"]]
    assert unfinished, "with no time for the main loop, some goal cannot have met its width"
    for goal in unfinished:
        assert goal["irregular"].startswith("search_time_max 1e-09 s ran out")
        assert not goal["below_minimum_load"], "min load was never classified: not 'below minimum load'"
        assert not goal["no_upper_bound"], "max load was not shown to pass: not 'no failing load up to max_rate'"
    assert any("search_time_max 1e-09 s ran out" in note for note in result.notes)
    found = result.to_dict()
    assert set(found["headline_irregular"]) == {f"{g['name']}_fps" for g in unfinished
                                                if g["conditional_throughput"] is not None}


def test_a_shorter_receive_tail_than_rfc2544s_is_disclosed_as_a_deviation():
    # Draft-15 section 4.4.3: a trial may deviate from RFC 2544 section 23's (e.g. shorter waits, phase d's 2 s for
    # residual frames), but every deviation must be described in the test report.
    # Phase e: at least 5 s for the DUT to restabilize.
    short = TrialSpec(offered_load=1.0, duration=1.0, receive_tail=0.5)
    result = mlrsearch.run(RunContext(sim(capacity=437_000), short), mlrsearch.Params(max_rate=1e6, goals=(QUICK,)))
    assert result.to_dict()["deviations"] == ["receive tail 0.5 s (RFC 2544: at least 2 s)",
                                              "restabilize wait 0 s (RFC 2544: at least 5 s)",
                                              *RFC2544_SETUP_PHASES["sim"]]
    waited = dataclasses.replace(TRAFFIC, restabilize_wait=5.0)
    standard = mlrsearch.run(RunContext(sim(capacity=437_000), waited), mlrsearch.Params(max_rate=1e6, goals=(QUICK,)))
    assert standard.to_dict()["deviations"] == RFC2544_SETUP_PHASES["sim"], "phases a and b: none to prime"


def test_the_trial_log_tells_the_trials_the_search_classified_loads_with_from_the_warm_up():
    # The warm-up before the search (draft-15 section 5.3.4) is not a trial of the search: the reference
    # implementation drops it from its measurement database. A reader who classifies loads from trial_log
    # (appendix A) must be able to leave it out, and to count an invalid trial as the search did: all lost.
    result = mlrsearch.run(RunContext(sim(capacity=437_000), TRAFFIC),
                           mlrsearch.Params(max_rate=1e6, warmup_duration=2.0, goals=(QUICK,)))
    warmup, *searched = result.trial_log
    assert (warmup["offered_load"], warmup["duration"], warmup["searched"]) == (1e6, 2.0, False)
    assert searched and all(t["searched"] and t["valid"] for t in searched)
    assert result.trials == len(result.trial_log), "every trial run is still counted and logged"


def test_the_method_line_says_what_the_figure_is_and_how_the_width_loss_and_durations_are_measured():
    # Beside the figures the report states: the units and which interfaces a load is of (draft-15 sections 4.3,
    # 4.5.2), the quantity used as goal width (4.6.5), how the trial effective duration is computed when it is not
    # the trial duration (4.5.8), and every goal attribute applied, defaults included (4.9.3).
    from trexlab.plan.repetition import method_line, method_of

    result = mlrsearch.run(RunContext(sim(capacity=437_000), TRAFFIC), mlrsearch.Params(max_rate=1e6, goals=(QUICK,)))
    line = method_line(method_of(result.to_dict()))
    assert "each goal's figure is its conditional throughput in frames/s per direction" in line
    assert "goal width: (relevant upper bound - relevant lower bound) / relevant upper bound" in line
    assert "trial effective duration: the longer of the trial duration and the sender's measured sending time" in line
    assert "trial loss ratio: frames intended but not received over frames intended, all directions summed" in line
    assert "NDR: loss ratio 0, exceed ratio 0, width 0.5 %, initial trials 1 s, final trials 1 s" in line


@pytest.mark.parametrize("seed", [1, 2])
def test_bounds_and_conditional_throughput_are_the_specs_from_the_trials_logged(seed):
    # The figures are the spec's: each goal's relevant bounds (sections 4.8.1-4.8.2) and conditional throughput
    # (4.8.3) recomputed here from trial_log's searched trials, short trials (1 s, final 4 s) and exceed ratios
    # included, on a noisy SUT whose trials disagree, by the load classification and quantile trexlab itself
    # reads the trials with (mlrsearch.load_class, quantile_loss: which disturbed trials bear on a figure).
    goals = ({"name": "NDR", "loss_ratio": 0.0, "exceed_ratio": 0.5, "relative_width": 0.01,
              "initial_trial_duration": 1.0, "final_trial_duration": 4.0, "duration_sum": 8.0},
             {"name": "PDR", "loss_ratio": 0.005, "exceed_ratio": 0.25, "relative_width": 0.01,
              "initial_trial_duration": 1.0, "final_trial_duration": 4.0, "duration_sum": 12.0})
    result = mlrsearch.run(RunContext(sim(capacity=437_000, capacity_noise=0.02, seed=seed), TRAFFIC),
                           mlrsearch.Params(max_rate=1e6, goals=goals))
    by_load: dict[float, list[dict]] = {}
    for t in result.trial_log:
        if t["searched"]:  # sim: the sender takes the trial duration, the effective duration
            by_load.setdefault(t["offered_load"], []).append(
                (t["duration"], t["effective_duration"], t["loss_ratio"] if t["valid"] else 1.0))
    assert any(duration < 4.0 for ts in by_load.values() for duration, _, _ in ts), "short trials took part"
    for goal, found in zip(goals, result.goals, strict=True):
        classes = {load: mlrsearch.load_class(trials, goal) for load, trials in by_load.items()}
        upper = min((load for load, c in classes.items() if c == mlrsearch.UPPER_BOUND), default=None)
        lower = max((load for load, c in classes.items()
                     if c == mlrsearch.LOWER_BOUND and (upper is None or load < upper)), default=None)
        assert (found["relevant_lower_bound"], found["relevant_upper_bound"]) == (lower, upper), goal["name"]
        assert found["regular"], found["irregular"]
        throughput = lower * (1.0 - mlrsearch.quantile_loss(by_load[lower], goal))
        assert found["conditional_throughput"] == pytest.approx(throughput, rel=1e-12), goal["name"]


def test_the_reports_tables_mark_a_figure_from_an_irregular_result_too():
    import pandas as pd

    from trexlab.results import analysis

    why = "no relevant upper bound: max load is a lower bound (the medium's limit)"
    row = {"experiment": "x", "NDR_fps": 1488095.0, "result.headline_irregular.NDR_fps": why, "repetition": 1}
    table = analysis.summarize_points(pd.DataFrame([row, {**row, "repetition": 2}]), "NDR_fps", by=["experiment"])
    assert table["why"].tolist() == [f"irregular goal result: {why}: rep 1-2"]


def test_each_goals_relevant_bounds_are_beside_its_figure_in_summary_json_and_the_reports(tmp_path):
    # Draft-15 section 4.8.4.1: the test report must display each goal's relevant lower bound, and should display its
    # relevant upper bound. result.json had them in its goals; summary.json, the CLI's table and the campaign
    # report showed only the conditional throughput. Two repetitions of two goals, each checked against its result.
    import json

    from trexlab.plan.campaign import Campaign
    from trexlab.results import analysis
    from trexlab.spec import experiment

    pdr = {**QUICK, "name": "PDR", "loss_ratio": 0.005}
    spec = {"name": "bounds", "description": "MLRsearch on a simulated SUT", "generator": "sim",
            "generator_options": {"capacity": 437_000, "capacity_noise": 0.01},
            "traffic": {"receive_tail": 0}, "repetitions": 2,
            "procedure": {"name": "mlrsearch", "params": {"max_rate": 1e6, "goals": [QUICK, pdr]}}}
    campaign = Path(Campaign(experiment.validate(spec), tmp_path).run()["campaign"])
    [summary_file] = campaign.rglob("summary.json")
    figures = json.loads(summary_file.read_text())["figures"]
    runs = analysis.load_campaigns(campaign)
    lines = "\n".join(summary_lines(figures))
    for name in ("NDR", "PDR"):
        figure, shown = f"{name}_fps", []
        for entry in figures[figure]["repetitions"]:
            result = json.loads((summary_file.parent / f"rep-{entry['repetition']:03d}" / "result.json").read_text())
            [goal] = [g for g in result["goals"] if g["name"] == name]
            lower, upper = goal["relevant_lower_bound"], goal["relevant_upper_bound"]
            assert lower < upper and goal["regular"], goal
            assert (entry.get("relevant_lower_bound_fps"), entry.get("relevant_upper_bound_fps")) == (lower, upper)
            table = analysis.bounds_table(runs, figure)
            html = analysis.styled_bounds(table).to_html()
            [row] = table[table["repetition"] == entry["repetition"]].to_dict("records")
            assert (row[analysis.BOUND_COLUMNS[0]], row[analysis.BOUND_COLUMNS[1]]) == (lower, upper)
            assert row["goal result"] == "regular"
            assert f"{lower:,.0f}" in html and f"{upper:,.0f}" in html
            shown.append(f"rep {entry['repetition']} {lower:,.0f} - {upper:,.0f}")
        assert f"{figure}: relevant lower bound - relevant upper bound, fps per direction: {', '.join(shown)}" in lines


def test_the_bounds_of_an_irregular_goal_result_are_marked_so_in_the_summary_and_the_report():
    # Draft-15 section 4.8.4.2: an irregular result's values shown in a report are clearly marked as such. Max load
    # (the medium's limit) a lower bound: no relevant upper bound.
    import pandas as pd

    from trexlab.results import analysis

    found = mlrsearch.run(RunContext(sim(capacity=1e9), TRAFFIC), mlrsearch.Params(media="1g", goals=(QUICK,)))
    found = found.to_dict()
    lower = found["goals"][0]["relevant_lower_bound"]
    lines = "\n".join(summary_lines(summarize_headlines([found])))
    assert f"NDR_fps: relevant lower bound - relevant upper bound, fps per direction: rep 1 {lower:,.0f} - none " \
           "(irregular goal result)" in lines
    row = {"experiment": "x", "repetition": 1, "figure_keys": ("NDR_fps",), "NDR_fps": found["headline"]["NDR_fps"],
           **{f"result.headline_bounds.NDR_fps.{k}": v for k, v in found["headline_bounds"]["NDR_fps"].items()},
           "result.headline_irregular.NDR_fps": found["headline_irregular"]["NDR_fps"]}
    [goal] = analysis.bounds_table(pd.DataFrame([row]), "NDR_fps")["goal result"]
    assert goal == f"irregular: {found['goals'][0]['irregular']}"


class DuplicatingReverse:
    """The simulated SUT, losing 100 frames forward and delivering 100 copies of test frames reverse, counted as
    received by a generator that cannot tell a copy (the trial contract does not forbid received > sent)."""

    name = "sim"

    def __init__(self):
        self.generator = sim(capacity=1e6)

    def run_trial(self, spec):
        result = self.generator.run_trial(spec)
        changed = {"forward": -100, "reverse": +100}
        return dataclasses.replace(result, directions={
            k: dataclasses.replace(d, frames_received=d.frames_received + changed[k])
            for k, d in result.directions.items()})

    def describe(self):
        return {}

    def close(self):
        pass


def test_a_directions_copies_never_offset_another_directions_loss_in_the_searchs_loss_count():
    # The search's loss count summed sent - received over the directions: 100 lost forward and 100 copies reverse
    # read as no loss (an NDR pass), where the trial's own loss ratio (DirectionResult.frames_lost) clamps each
    # direction at zero and counts the 100.
    from trexlab.procedures.common import TrialRunner

    runner = TrialRunner(DuplicatingReverse(), dataclasses.replace(TRAFFIC, directions="bidirectional"))
    measured = mlrsearch._Measurer(runner, warmup=False).measure(1.0, 50_000)
    assert measured.loss_count == 100 == runner.log[-1].frames_lost, measured
