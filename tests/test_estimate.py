"""`trexlab campaign --dry-run`: points, repetitions and lab time of every shipped experiment, no host touched."""

import json
import math
import subprocess
import time

import pytest

from trexlab import cli
from trexlab.paths import paths
from trexlab.plan import estimate
from trexlab.spec.experiment import InvalidExperiment, load, validate

SHIPPED = sorted(p.name for p in paths().experiments.iterdir() if (p / "experiment.yml").is_file())


@pytest.fixture
def no_host(monkeypatch):
    """Any subprocess (ansible-playbook, ip netns, ssh) or lab inventory read fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"dry run touched a host: {args[:1]}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("trexlab.testbed.inventory.load_lab", refuse)
    monkeypatch.setattr("trexlab.plan.campaign.load_lab", refuse, raising=False)


@pytest.mark.parametrize("name", SHIPPED)
def test_dry_run_of_every_shipped_experiment_prints_its_estimate_fast_and_touches_nothing(name, no_host, capsys,
                                                                                         tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start, wall = time.process_time(), time.perf_counter()
    assert cli.main(["campaign", name, "--dry-run"]) == 0
    # CPU time: up to 8 helpers share 2 vCPUs here, so the wall clock measures them; it gets a looser bound.
    elapsed, wall = time.process_time() - start, time.perf_counter() - wall
    out = capsys.readouterr().out
    assert elapsed < 2.0 and wall < 10.0, f"{name}: dry run took {elapsed:.2f} s of CPU, {wall:.2f} s"
    assert f"experiment {name}:" in out and "lab time: worst case" in out and "how:" in out
    assert list(tmp_path.iterdir()) == [], "a dry run writes no results"


#: 9 points of 1000 repetitions, each a binary search of 60 s trials: every value within its bound, 1,860 h of lab
#: time worst case together (the search's 12.4 min per repetition is test_binary_search_worst_case's path).
LONG = {"name": "long", "generator": "sim", "generator_options": {"capacity": 300000},
        "traffic": {"receive_tail": 2},
        "procedure": {"name": "throughput", "params": {"max_rate": 1e6, "resolution": 1e3, "trial_duration": 60}},
        "sweep": {"generator_options.capacity": [100000 * k for k in range(1, 10)]}, "repetitions": 1000}


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_campaign_planning_more_than_30_days_of_lab_time_is_refused_before_it_starts(tmp_path, capsys, dry_run):
    """Each value of a spec is bounded, their product was not: 1000 points of 1000 repetitions of an hour each ran.
    Refused in one line naming the keys and the planned time, nothing written."""
    spec, err = _refused(tmp_path, capsys, LONG, dry_run)
    assert err == (f"trexlab campaign: {spec}: sweep (9 point(s)) x repetitions (1000) x the trials of "
                   "procedure.params (up to 12.4 min per repetition) plan 1860.0 h of lab time, worst case: at most "
                   "720.0 h (30 days) per campaign; split it into campaigns"), err


def _refused(tmp_path, capsys, spec_values: dict, dry_run: bool):
    """(the spec file, the one line of error) of `trexlab campaign` (--dry-run) refusing it: exit 2, nothing
    written."""
    spec = tmp_path / "spec.yml"
    spec.write_text(json.dumps(spec_values))
    results = tmp_path / "results"
    argv = ["campaign", str(spec), "--results", str(results), "--ceilings", str(tmp_path / "c.json")]
    assert cli.main(argv + (["--dry-run"] if dry_run else [])) == 2
    assert not results.exists()
    return spec, capsys.readouterr().err.strip()


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_campaign_whose_lab_time_cannot_be_estimated_is_refused_naming_why(tmp_path, capsys, monkeypatch, dry_run):
    """The 30-day bound is checked from the estimate: a campaign whose estimate fails is refused in one line naming
    why, as its dry run is, never run unchecked (it ran with a warning)."""
    from trexlab.params import InvalidParameter

    def fails(name, raw_params, traffic):
        raise InvalidParameter("procedure.params.trial_duration", 60.0, "a duration the estimate can simulate")

    monkeypatch.setattr(estimate, "repetition_cost", fails)
    spec, err = _refused(tmp_path, capsys, {**LONG, "sweep": {}, "repetitions": 1, "procedure": {
        "name": "throughput", "params": {"trial_duration": 1}}}, dry_run)
    assert err == (f"trexlab campaign: {spec}: no lab time estimate (procedure.params.trial_duration=60.0: allowed a "
                   "duration the estimate can simulate): a campaign's length, at most 720.0 h (30 days) of lab time "
                   "worst case, is checked from it"), err


def test_the_campaign_length_bound_is_its_worst_case_lab_time():
    experiment = validate(json.loads(json.dumps(LONG)))
    cost = estimate.Cost(3600.0, 1800.0, 10, 5.0, "test")  # an hour per repetition, worst case
    at_most = [estimate.PointPlan(f"p{k}", {}, 360, 360, cost) for k in range(2)]  # 720 h
    estimate.check_length(experiment, at_most)
    over = [*at_most, estimate.PointPlan("p2", {}, 1, 1, estimate.Cost(1.0, 1.0, 1, 1.0, "test"))]
    with pytest.raises(InvalidExperiment, match=r"plan 720\.0 h of lab time"):
        estimate.check_length(experiment, over)


def test_binary_search_worst_case_is_its_longest_path():
    # 1 trial at the maximum, then halvings of 999,000 fps until <= 1,000 fps (10), then the minimum-load check.
    traffic = {"frame_size": [64, 64], "directions": "bidirectional", "receive_tail": 0.5}
    cost = estimate.repetition_cost("throughput", {"max_rate": 1e6, "min_rate": 1e3, "resolution": 1e3,
                                                   "trial_duration": 60}, traffic)
    halvings = math.ceil(math.log2((1e6 - 1e3) / 1e3))
    assert cost.worst_trials == 1 + halvings + 1
    assert cost.worst_s == pytest.approx(cost.worst_trials * 60.5)
    assert cost.expected_trials < cost.worst_trials


def test_rate_from_throughput_adds_the_throughput_search_to_each_repetition():
    traffic = {"frame_size": [64, 64], "receive_tail": 1}
    search = {"max_rate": 1e5, "min_rate": 1e3, "resolution": 1e3, "trial_duration": 10}
    alone = estimate.repetition_cost("latency", {"rate": 5e4, "trial_duration": 120, "tag_delay": 60}, traffic)
    assert alone.worst_s == 121 and alone.worst_trials == 1
    both = estimate.repetition_cost("latency", {"rate": {"from": "throughput", "params": search},
                                                "trial_duration": 120, "tag_delay": 60}, traffic)
    searched = estimate.repetition_cost("throughput", search, traffic)
    assert both.worst_s == searched.worst_s + 121


def test_adaptive_repetitions_estimate_their_maximum_and_say_their_minimum():
    spec = {"name": "a", "generator": "sim", "procedure": {"name": "throughput", "params": {"trial_duration": 1}},
            "repetitions": {"min": 6, "max": 40, "until": {"median_ci_percent": 1}}}
    experiment = validate(spec)
    plans = estimate.plan(experiment)
    assert plans[0].repetitions == 40 and plans[0].min_repetitions == 6
    text = "\n".join(estimate.plan_lines(experiment, plans))
    assert "6 to 40 repetitions" in text and "if every point stops at 6 repetitions" in text


def test_the_dry_run_says_the_order_and_the_visits_an_interleaved_campaign_makes():
    """Each visit of a point configures its DUT (a playbook run the estimate leaves out): the dry run says how many
    an interleaved campaign makes (its rounds, the rate's throughput rounds first), beside the sequential count."""
    spec = {"name": "a", "generator": "sim", "procedure": {"name": "throughput", "params": {"trial_duration": 1}},
            "sweep": {"generator_options.capacity": [1e5, 2e5, 3e5]}, "repetitions": 8, "order": "interleaved",
            "repetitions_per_round": 3}
    text = "\n".join(estimate.plan_lines(validate(spec), estimate.plan(validate(spec))))
    assert "per round: up to 3 round(s), 9 visit(s) of the points, a DUT configuration each (sequential: 3)" in text
    assert "up to 6 round(s), 18 visit(s)" in estimate.order_line(validate({**spec, "procedure": {
        "name": "latency", "params": {"rate": {"from": "throughput", "params": {"trial_duration": 1}},
                                      "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}}}), 3, 8)
    assert estimate.order_line(validate({**spec, "order": "sequential", "repetitions_per_round": 1}), 3, 8) == (
        "  order: sequential, one visit of each point (3 visit(s), a DUT configuration each)")


def test_eta_is_the_estimate_until_repetitions_are_measured_then_scaled_by_them(monkeypatch):
    cost = estimate.Cost(100.0, 80.0, 9, 8.0, "test")
    plans = [estimate.PointPlan("p1", {}, 3, 3, cost), estimate.PointPlan("p2", {}, 3, 3, cost)]
    eta = estimate.Eta(plans)
    assert eta.seconds() == 6 * 80
    now = [1000.0]
    monkeypatch.setattr(estimate.time, "monotonic", lambda: now[0])
    eta.repetition_started("p1")
    now[0] += 160  # the lab takes twice the estimate
    eta.repetition_started("p1")
    assert eta.factor == pytest.approx(2.0)
    assert eta.seconds() == pytest.approx(2.0 * 5 * 80)  # the running repetition still counts as remaining
    assert "measured 2.00 x estimate" in eta.text()
    now[0] += 160
    eta.point_finished("p1")  # p1's third repetition never ran (adaptive stop): nothing of p1 remains
    assert eta.seconds() == pytest.approx(2.0 * 3 * 80)


def test_campaign_eta_starts_from_the_estimate_and_is_refined_by_measured_repetitions(tmp_path):
    from trexlab.plan.campaign import Campaign

    spec = {"name": "eta", "generator": "sim", "generator_options": {"capacity": 400000, "wall_clock_factor": 0.01},
            "traffic": {"frame_size": [64, 64], "receive_tail": 0},
            "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "resolution": 50000,
                                                           "trial_duration": 1}},
            "repetitions": 3}
    lines = []
    Campaign(validate(spec), tmp_path, progress=lines.append).run()
    etas = [line.split(", ETA ")[1] for line in lines if ", ETA " in line]
    assert len(etas) == 3 and etas[0].endswith("(estimate)")
    assert all("x estimate)" in eta for eta in etas[1:]), etas


def test_a_sweep_over_destination_networks_is_estimated_once(monkeypatch):
    """A repetition's cost is the same for any number of destination networks (estimate.COST_FREE_TRAFFIC): a sweep
    over them (siitperf's 1..256) is simulated once, not once per point (256 points of throughput kept a dry run
    busy for 46 s, 1000 of long MLRsearch goals for hours)."""
    spec = {"name": "n", "generator": "sim", "procedure": {"name": "throughput", "params": {"max_rate": 1e6}},
            "traffic": {"frame_size": [64, 64], "receive_tail": 0},
            "sweep": {"traffic.destination_networks": [1, 16, 256]}, "repetitions": 1}
    calls = []
    real = estimate.repetition_cost
    monkeypatch.setattr(estimate, "repetition_cost", lambda *args: calls.append(args) or real(*args))
    plans = estimate.plan(validate(spec))
    assert len(plans) == 3 and len(calls) == 1 and len({p.cost for p in plans}) == 1
    monkeypatch.setattr(estimate, "repetition_cost", real)
    # What that rests on, for every procedure a shipped experiment runs: its cost does not read the field.
    seen = set()
    for path in sorted(paths().experiments.glob("*/experiment.yml")):
        experiment = load(path)
        point = next(iter(experiment.scaled("ci" if "ci" in (experiment.spec.get("scale") or {}) else None).points()))
        procedure = point.spec["procedure"]
        if procedure["name"] in seen:
            continue
        seen.add(procedure["name"])
        params = procedure.get("params") or {}
        if procedure["name"] == "selftest":  # one of its searches will do (each frame size's is alike)
            params = {**params, "frame_sizes": params.get("frame_sizes", [64])[:1]}
        costs = [estimate.repetition_cost(procedure["name"], params,
                                          {**(point.spec.get("traffic") or {}), **dict.fromkeys(
                                              estimate.COST_FREE_TRAFFIC, networks)}) for networks in (1, 256)]
        assert costs[0] == costs[1], procedure["name"]
    assert len(seen) >= 4, seen


def test_mlrsearch_goals_whose_estimate_would_simulate_without_bound_are_refused_after_bounded_work(monkeypatch):
    """The lab time estimate runs a search against some 30 simulated DUTs: goals a spec may declare made it take
    minutes or more per sweep point (16 goals of width 1e-9: still running after 120 s; eight 1000-trial goals 12 s).
    Past mlrsearch.ESTIMATE_WORK_MAX it is refused in one line naming the goals. Counted here in simulated trials,
    with the bound lowered so that the refusal comes quickly (at the real bound it takes seconds)."""
    from trexlab.generators.sim import SimGenerator
    from trexlab.params import InvalidParameter
    from trexlab.procedures import mlrsearch

    trials = []
    run_trial = SimGenerator.run_trial

    def counted(self, spec):
        trials.append(spec.offered_load)
        assert len(trials) <= 5000, "the estimate simulated 5000 trials and went on"
        return run_trial(self, spec)

    monkeypatch.setattr(SimGenerator, "run_trial", counted)
    monkeypatch.setattr(mlrsearch, "ESTIMATE_WORK_MAX", 40_000, raising=False)
    goals = [{**mlrsearch.NDR, "name": f"g{i}", "loss_ratio": i / 1000, "duration_sum": 1000.0} for i in range(8)]
    with pytest.raises(InvalidParameter) as refused:
        estimate.repetition_cost("mlrsearch", {"goals": goals}, {})
    assert str(refused.value).startswith("goals='8 goals': allowed ") and "\n" not in str(refused.value)
    # Each trial costs at least TRIAL_WORK of the bound, shared by the goals.
    assert 0 < len(trials) <= 40_000 // 8 // estimate.TRIAL_WORK + 1


def test_a_campaigns_points_together_may_simulate_at_most_campaign_work_max(monkeypatch):
    """Each point's estimate is bounded (mlrsearch.ESTIMATE_WORK_MAX), but up to 1000 points of different traffic are
    each simulated: 1000 frame sizes of MLRsearch goals inside their own bound kept a dry run busy for over an hour.
    Past estimate.CAMPAIGN_WORK_MAX in all the campaign is refused in one line; here with the bound set between one
    point's work and three's."""
    spent = []
    spend = estimate._SimulationBudget.spend

    def counted(self, load):
        before = self.work
        spend(self, load)
        spent.append(self.work - before)

    monkeypatch.setattr(estimate._SimulationBudget, "spend", counted)
    spec = {"name": "n", "generator": "sim", "procedure": {"name": "throughput", "params": {"max_rate": 1e6}},
            "traffic": {"receive_tail": 0}, "sweep": {"traffic.frame_size": [[64, 64]]}, "repetitions": 1}
    estimate.plan(validate(spec))
    one_point = sum(spent)
    monkeypatch.setattr(estimate, "CAMPAIGN_WORK_MAX", one_point * 5 // 2, raising=False)
    sweep = {**spec, "sweep": {"traffic.frame_size": [[64, 64], [128, 128], [256, 256]]}}
    with pytest.raises(InvalidExperiment) as refused:
        estimate.plan(validate(sweep))
    assert "sweep (3 point(s))" in str(refused.value) and "by point 3" in str(refused.value), refused.value
    assert "\n" not in str(refused.value)
    assert len(estimate.plan(validate({**sweep, "sweep": {"traffic.frame_size": [[64, 64], [128, 128]]}}))) == 2
