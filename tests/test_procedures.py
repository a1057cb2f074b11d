"""Procedures against simulated SUTs whose answers are known (issue 3 acceptance)."""

import dataclasses
import statistics

import pytest

from trexlab.generators import create_generator
from trexlab.params import InvalidParameter
from trexlab.procedures import flr, latency, mlrsearch, pdv, selftest, throughput
from trexlab.procedures.common import RFC2544_SETUP_PHASES, RunContext
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)
ONE_WAY = TrialSpec(offered_load=1.0, duration=1.0, directions="forward")


def sim(**sut):
    return create_generator("sim", **sut)


@pytest.mark.parametrize("capacity", [12_345.0, 437_000.0, 999_000.0])
def test_throughput_finds_the_capacity_within_the_resolution(capacity):
    params = throughput.Params(max_rate=1e6, resolution=1000)
    result = throughput.run(RunContext(sim(capacity=capacity), TRAFFIC), params)
    assert capacity - 1000 <= result.throughput <= capacity
    assert result.to_dict()["loss_tolerance_percent"] == 0.0


def test_throughput_reports_full_rate_when_the_first_trial_passes():
    result = throughput.run(RunContext(sim(capacity=2e6), TRAFFIC), throughput.Params(max_rate=1e6))
    assert result.throughput == 1e6
    assert result.trials == 1


def test_gaming_paper_table2_effect_zero_loss_vs_tolerance():
    """0.01 % random loss: zero-loss throughput is low and scattered; 0.011 % tolerance gives full rate."""
    zero, tolerant = [], []
    for seed in range(20):
        params = throughput.Params(max_rate=1e6, min_rate=100, trial_duration=60)
        lossy = RunContext(sim(capacity=2e6, random_loss=1e-4, seed=seed), TRAFFIC)
        zero.append(throughput.run(lossy, params).throughput or 0)
        params = throughput.Params(max_rate=1e6, min_rate=100, trial_duration=60, loss_tolerance_percent=0.011)
        lossy = RunContext(sim(capacity=2e6, random_loss=1e-4, seed=seed), TRAFFIC)
        tolerant.append(throughput.run(lossy, params).throughput)
    assert all(t == 1e6 for t in tolerant)
    # 1e6 fps * 60 s * 1e-4 = 6000 lost frames per trial at full rate: zero loss needs a tiny load.
    assert statistics.median(zero) < 0.01 * 1e6
    assert max(zero) > 2 * min(zero), "the zero-loss results scatter widely"


def test_every_tenth_frame_delayed_rfc8219_worst_case_sees_it_rfc2544_is_luck():
    generator = sim(delay=1.0, delay_every_nth=10, latency_base=10e-6, latency_spread=1e-6, seed=7)
    params = latency.Params(rate=100_000, tagged_frames=1000, rfc2544_trials=20)
    result = latency.run(RunContext(generator, ONE_WAY), params)
    forward = result.directions["forward"]
    assert forward["worst_case"] == pytest.approx(1.0, abs=0.01)
    assert forward["typical"] < 1e-3
    single = result.rfc2544["forward"]["values"]
    hits = sum(1 for v in single if v > 0.5)
    assert 0 < hits < 20, "whether a single tagged frame meets a delayed one is luck"
    average = result.rfc2544["forward"]["average"]
    assert average == pytest.approx(hits / 20 * 1.0, abs=0.01)


def test_frame_timeout_below_the_delay_turns_delayed_frames_into_loss():
    generator = sim(capacity=2e6, delay=1.0, delay_every_nth=100)
    spec = TrialSpec(offered_load=10_000, duration=10, directions="forward", frame_timeout=0.5)
    result = generator.run_trial(spec)
    forward = result.directions["forward"]
    assert forward.frames_late == 1000
    assert forward.loss_ratio == pytest.approx(0.01)
    params = throughput.Params(max_rate=1e6, frame_timeout=0.5, trial_duration=10)
    assert throughput.run(RunContext(sim(capacity=2e6, delay=1.0, delay_every_nth=100), ONE_WAY), params).below_minimum
    without = throughput.run(RunContext(sim(capacity=2e6, delay=1.0, delay_every_nth=100), ONE_WAY),
                             throughput.Params(max_rate=1e6, trial_duration=10))
    assert without.throughput == 1e6, "without a frame timeout RFC 2544 cannot see the delay"


def test_unsent_frames_count_as_loss_and_flag_the_trial():
    generator = sim(capacity=2e6, tester_ceiling=300_000)
    result = generator.run_trial(TrialSpec(offered_load=500_000, duration=10, directions="forward"))
    assert result.stretched
    assert result.loss_ratio == pytest.approx(0.4)
    search = throughput.run(RunContext(sim(capacity=2e6, tester_ceiling=300_000), ONE_WAY),
                            throughput.Params(max_rate=1e6, resolution=1000, trial_duration=10))
    assert search.throughput <= 300_000, "the tester's limit is never credited to the DUT"


def test_mlrsearch_ndr_below_minimum_while_pdr_is_found():
    params = mlrsearch.Params(max_rate=1e6, min_rate=10_000)
    result = mlrsearch.run(RunContext(sim(capacity=500_000, random_loss=1e-3, seed=3), TRAFFIC), params)
    goals = {g["name"]: g for g in result.to_dict()["goals"]}
    assert goals["NDR"]["below_minimum_load"] and goals["NDR"]["conditional_throughput"] is None
    assert goals["PDR"]["conditional_throughput"] == pytest.approx(500_000, rel=0.02)
    assert any("below minimum load" in n for n in goals["NDR"]["notes"]) and not any(
        "below minimum load" in n for n in goals["PDR"]["notes"] + result.notes), "NDR's own notes say so, none else"


def test_mlrsearch_rfc2544_goal_is_expressible_and_agrees_with_binary_search():
    params = mlrsearch.Params(max_rate=1e6, goals=(mlrsearch.RFC2544,))
    result = mlrsearch.run(RunContext(sim(capacity=437_000), TRAFFIC), params)
    goal = result.goals[0]
    assert goal["final_trial_duration"] == 60.0 and goal["exceed_ratio"] == 0.0
    assert goal["relevant_lower_bound"] <= 437_000 <= goal["relevant_upper_bound"] * 1.001
    assert goal["relevant_lower_bound"] >= 437_000 * (1 - 0.006)


def test_every_trial_reaches_on_trial():
    seen = []
    result = mlrsearch.run(RunContext(sim(capacity=437_000), TRAFFIC, on_trial=lambda r, c: seen.append(c)),
                           mlrsearch.Params(max_rate=1e6))
    assert len(seen) == result.trials > 0
    assert all(c["procedure"] == "mlrsearch" for c in seen)


def test_frame_loss_rate_steps_down_until_two_lossless_trials():
    result = flr.run(RunContext(sim(capacity=650_000), TRAFFIC), flr.Params(max_rate=1e6, trial_duration=10))
    loads = [p["offered_load"] for p in result.points]
    assert loads == pytest.approx([1e6, 9e5, 8e5, 7e5, 6e5, 5e5])
    assert [p["loss_ratio"] == 0 for p in result.points][-2:] == [True, True]
    assert result.points[0]["frame_loss_rate_percent"] == pytest.approx(35.0, abs=0.01)
    # Its headline figure is the loss at the first load: the method line says which load, and the step.
    from trexlab.plan.repetition import method_line, method_of

    assert "offered loads from 1,000,000 fps down in steps of 10 % of it, until two trials in a row lose no frame" in (
        method_line(method_of(result.to_dict())))


def test_frame_loss_rate_gives_each_load_in_percent_of_the_media_maximum_and_a_lower_first_load_is_a_deviation():
    # RFC 2544 section 26.3: the first trial SHOULD run at 100 % of the maximum rate for the frame size on the input
    # media, and the X axis of its graph MUST be the input rate as a percent of that theoretical rate (Lencse et al.
    # 2021 and 2024 likewise: "starting from the (theoretical) maximum frame rate for the media"). A run from a given
    # max_rate started below it, and neither the points nor the deviations said by how much.
    from trexlab.media import max_frame_rate, media_speed
    from trexlab.plan.repetition import method_line, method_of

    medium = max_frame_rate(media_speed("1g"), max(TRAFFIC.frame_size))
    full = flr.run(RunContext(sim(capacity=0.45 * medium), TRAFFIC), flr.Params(media="1g", trial_duration=10))
    percents = [p["offered_load_percent"] for p in full.points]
    assert percents == pytest.approx([100, 90, 80, 70, 60, 50, 40, 30]), "down to two lossless trials below 45 %"
    assert not any("first offered load" in d for d in full.to_dict()["deviations"])
    given = flr.run(RunContext(sim(capacity=0.45 * medium), TRAFFIC),
                    flr.Params(max_rate=medium / 2, media="1g", trial_duration=10)).to_dict()
    assert [p["offered_load_percent"] for p in given["points"]] == pytest.approx([50, 45, 40, 35])
    [first] = [d for d in given["deviations"] if "first offered load" in d]
    assert f"{medium / 2:g} fps: 50 % of the 1g medium's maximum for {max(TRAFFIC.frame_size)}-byte frames" in first
    assert "RFC 2544 section 26.3" in first and "," not in first, "the method line lists deviations comma-separated"
    assert first in method_line(method_of(given))


def test_frame_loss_rate_gives_each_directions_loss_beside_the_total():
    # A SIIT DUT translates one way faster than the other: a bidirectional point losing 40 % of one direction and
    # none of the other read 20 % (the loss over both, as siitperf's script sums their received frames), and no
    # figure said which direction lost. Each point now gives each direction's loss too, as latency and PDV do.
    class OneWayLoss:
        """The sim, its reverse direction forwarding every frame."""

        def __init__(self):
            self.sim = sim(capacity=600_000)

        def __getattr__(self, name):
            return getattr(self.sim, name)

        def run_trial(self, spec):
            result = self.sim.run_trial(spec)
            reverse = result.directions["reverse"]
            whole = dataclasses.replace(reverse, frames_received=reverse.frames_intended)
            return dataclasses.replace(result, directions={**result.directions, "reverse": whole})

    first = flr.run(RunContext(OneWayLoss(), TRAFFIC), flr.Params(max_rate=1e6, trial_duration=1)).points[0]
    assert first["directions"] == pytest.approx({"forward": 40.0, "reverse": 0.0})
    assert first["frame_loss_rate_percent"] == pytest.approx(20.0)


def test_pdv_is_the_999th_percentile_minus_the_minimum():
    generator = sim(latency_base=20e-6, latency_spread=5e-6, delay=0.01, delay_fraction=0.01, seed=2)
    result = pdv.run(RunContext(generator, ONE_WAY), pdv.Params(rate=100_000, trial_duration=10))
    forward = result.directions["forward"]
    assert forward["pdv"] == pytest.approx(forward["p99_9"] - forward["min"])
    assert forward["pdv"] == pytest.approx(0.01, rel=0.05), "1 % of frames 10 ms late sit at the 99.9th percentile"
    assert forward["samples"] >= 100_000 - 1


def test_selftest_finds_the_ceiling_and_procedures_warn_near_it():
    generator = sim(capacity=1e9, tester_ceiling=800_000)
    result = selftest.run(RunContext(generator, TRAFFIC),
                          selftest.Params(frame_sizes=(64, 128), max_rate=1e6, resolution=1000))
    assert all(790_000 <= c <= 800_000 for c in result.ceilings.values())
    near = throughput.run(RunContext(sim(capacity=760_000), TRAFFIC),
                          throughput.Params(max_rate=1e6, resolution=1000, tester_ceiling=result.ceilings[64]))
    assert any("self-test ceiling" in n for n in near.notes)
    far = throughput.run(RunContext(sim(capacity=300_000), TRAFFIC),
                         throughput.Params(max_rate=1e6, resolution=1000, tester_ceiling=result.ceilings[64]))
    assert not any("self-test ceiling" in n for n in far.notes)


@pytest.mark.parametrize(("make", "name"), [
    (lambda: throughput.Params(min_rate=0), "min_rate"),
    (lambda: throughput.Params(max_rate=1e3, min_rate=1e4), "min_rate"),
    (lambda: throughput.Params(loss_tolerance_percent=101), "loss_tolerance_percent"),
    (lambda: throughput.Params(trial_duration=0), "trial_duration"),
    (lambda: throughput.Params(media="3g"), "media"),
    (lambda: latency.Params(rate=1e4, tagged_frames=499), "tagged_frames"),
    (lambda: latency.Params(), "rate=None"),
    (lambda: pdv.Params(), "rate=None"),
    (lambda: latency.Params(rate=1e4, trial_duration=2), "tag_delay=60.0"),
    (lambda: flr.Params(step_percent=11), "step_percent"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "loss_ratio": 1.5},)), "goals[0].loss_ratio"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "exceed_ratio": 1},)), "goals[0].exceed_ratio"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "relative_width": 0},)), "goals[0].relative_width"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "relative_width": 1e-17},)), "goals[0].relative_width"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "initial_trial_duration": 0},)), "goals[0].initial_trial_duration"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "initial_trial_duration": 2, "final_trial_duration": 1},)),
     "goals[0].final_trial_duration"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "final_trial_duration": 30, "duration_sum": 20},)),
     "goals[0].duration_sum"),
    (lambda: mlrsearch.Params(goals=({"name": "x", "speed": 1},)), "goals[0].speed"),
    # More goals than MAX_GOALS: the search, and the lab time estimate's simulation of it, weigh each trial against
    # every goal (64 goals kept a dry run busy for 35 s per sweep point).
    (lambda: mlrsearch.Params(goals=tuple({"name": f"g{i}"} for i in range(mlrsearch.MAX_GOALS + 1))),
     f"goals='{mlrsearch.MAX_GOALS + 1} goals': allowed 1..{mlrsearch.MAX_GOALS} goals"),
    (lambda: selftest.Params(frame_sizes=(32,)), "frame_sizes"),
])
def test_bad_parameters_name_themselves_in_one_line(make, name):
    with pytest.raises(InvalidParameter) as info:
        make()
    assert str(info.value).startswith(name)
    assert "\n" not in str(info.value)


def test_what_falls_short_of_the_standards_durations_is_disclosed_beside_the_figures():
    # RFC 2544 sections 23-24: trials of at least 60 s, 2 s of receiving after them; RFC 8219 section 7.2: 120 s
    # with tags after 60 s, section 7.3: PDV over at least 60 s. A CI-scale run is none of these: it says so.
    from trexlab.plan.repetition import method_line, method_of

    tail = TrialSpec(offered_load=1.0, duration=1.0, receive_tail=0.5)
    short = throughput.run(RunContext(sim(capacity=5e5), tail), throughput.Params(max_rate=1e6, trial_duration=1))
    # Section 23 e: at least 5 s for the DUT to restabilize after each trial; none unless asked for, and said.
    # Phases a and b (routing update, learning frames): what stands in their place, after the durations.
    assert short.to_dict()["deviations"] == ["trial duration 1 s (RFC 2544: at least 60 s)",
                                             "receive tail 0.5 s (RFC 2544: at least 2 s)",
                                             "restabilize wait 0 s (RFC 2544: at least 5 s)",
                                             *RFC2544_SETUP_PHASES["sim"]]
    assert "short of the standard: trial duration 1 s (RFC 2544: at least 60 s), receive tail 0.5 s" in method_line(
        method_of(short.to_dict()))
    full = TrialSpec(offered_load=1.0, duration=1.0, receive_tail=2.0, restabilize_wait=5.0)
    assert throughput.run(RunContext(sim(capacity=5e5), full), throughput.Params(max_rate=1e6)).to_dict()[
        "deviations"] == RFC2544_SETUP_PHASES["sim"]
    timed = throughput.Params(max_rate=1e6, trial_duration=60, frame_timeout=0.01)
    waited = dataclasses.replace(tail, restabilize_wait=5.0)
    assert throughput.run(RunContext(sim(capacity=5e5), waited), timed).to_dict()["deviations"] == \
        RFC2544_SETUP_PHASES["sim"], \
        "a 10 ms frame timeout decides before the 0.5 s tail ends: the tail loses nothing RFC 2544 counts"
    assert flr.run(RunContext(sim(capacity=9e5), tail), flr.Params(max_rate=1e6, trial_duration=1)).to_dict()[
        "deviations"][0] == "trial duration 1 s (RFC 2544: at least 60 s)"
    lat = latency.run(RunContext(sim(), ONE_WAY), latency.Params(rate=10_000, trial_duration=2, tag_delay=1,
                                                                 tagged_frames=500)).to_dict()
    assert lat["deviations"] == ["trial duration 2 s (RFC 8219: at least 120 s)",
                                 "tag delay 1 s (RFC 8219: at least 60 s)"]
    assert latency.run(RunContext(sim(), ONE_WAY), latency.Params(rate=10_000)).to_dict()["deviations"] == []
    assert pdv.run(RunContext(sim(), ONE_WAY), pdv.Params(rate=1000, trial_duration=10)).to_dict()[
        "deviations"] == ["trial duration 10 s (RFC 8219: at least 60 s)"]


def test_fewer_rfc2544_single_frame_trials_than_it_asks_are_disclosed_and_lost_tags_not_blamed_on_it():
    # RFC 2544 section 26.2 repeats its one-tag latency trial at least 20 times and reports the average; it says
    # nothing of a tag that never arrives. A run with fewer trials discloses it beside the durations; the block's
    # label must not claim that RFC 2544 leaves lost tags out (trexlab does, and says so).
    short = latency.Params(rate=1000, trial_duration=2, tag_delay=1, tagged_frames=500,
                           rfc2544_trials=latency.RFC2544_TRIALS - 1)
    result = latency.run(RunContext(sim(), ONE_WAY), short).to_dict()
    assert (f"RFC 2544 single-frame latency trials {latency.RFC2544_TRIALS - 1} (RFC 2544: at least "
            f"{latency.RFC2544_TRIALS})") in result["deviations"], result["deviations"]
    assert "as RFC 2544 does" not in result["rfc2544_single_frame_latency"]["forward"]["label"]
    enough = latency.Params(rate=1000, trial_duration=2, tag_delay=1, tagged_frames=500,
                            rfc2544_trials=latency.RFC2544_TRIALS)
    assert not any("single-frame" in d for d in latency.LatencyResult(enough, {}, {}, 0, 0.0).to_dict()[
        "deviations"]), "20 trials are RFC 2544's count"
    assert not any("single-frame" in d for d in latency.LatencyResult(
        latency.Params(rate=1000), {}, {}, 0, 0.0).to_dict()["deviations"]), "no RFC 2544 trials asked: none short"


def test_the_method_line_says_when_no_frame_timeout_was_applied():
    # RFC 2544 has no per-frame timeout (Lencse et al. 2020): a run without one counts a frame until the receive
    # tail ends, so a DUT holding every frame for a second still passes; the method line must say which it was.
    from trexlab.plan.repetition import method_line, method_of

    def line(**params) -> str:
        result = throughput.run(RunContext(sim(capacity=5e5), TRAFFIC), throughput.Params(max_rate=1e6, **params))
        return method_line(method_of(result.to_dict()))

    assert "no frame timeout (a frame counts until the receive tail ends, as in RFC 2544)" in line()
    timed = line(frame_timeout=0.01)
    assert "frame timeout 10 ms" in timed and "no frame timeout" not in timed


def test_a_latency_or_pdv_summary_over_fewer_repetitions_than_rfc8219_asks_says_so(tmp_path):
    # RFC 8219 sections 7.2 and 7.3: the test is repeated at least 20 times and the median of the repetitions'
    # TL, WCL or PDV is the reported value. A CI-scale campaign (repetitions: 1) or a CLI run (--repeat 1) is not
    # that figure: its method line must say so beside it, as it does for a shortened trial. RFC 2544's throughput
    # asks for no repetition, so its summary has nothing to disclose on that count.
    from trexlab.plan.repetition import SUMMARY, method_line, repeat
    from trexlab.results.store import read_json

    wanted = f"repetitions 1 (RFC 8219: at least {latency.MIN_REPETITIONS}, the median of them reported)"
    short = latency.Params(rate=1000, trial_duration=2, tag_delay=1, tagged_frames=500)
    runs = {"latency": short, "pdv": pdv.Params(rate=1000, trial_duration=1),
            "throughput": throughput.Params(max_rate=1e6, trial_duration=1)}
    for name, params in runs.items():
        repeat(name, sim(capacity=5e5), ONE_WAY, params, 1, tmp_path / name, {})
        method = read_json(tmp_path / name / SUMMARY)["method"]
        if name == "throughput":
            assert not any(d.startswith("repetitions") for d in method["deviations"]), method["deviations"]
        else:
            assert wanted in method["deviations"], (name, method["deviations"])
            assert "short of the standard: trial duration" in method_line(method)
            assert wanted in method_line(method)
    assert latency.repetition_deviations(latency.MIN_REPETITIONS) == []
    assert latency.repetition_deviations(latency.MIN_REPETITIONS - 1) == [
        f"repetitions {latency.MIN_REPETITIONS - 1} (RFC 8219: at least {latency.MIN_REPETITIONS}, the median of "
        "them reported)"]


def test_more_tags_than_frames_after_the_tag_delay_are_refused_before_any_trial():
    # 100 fps for the 1 s after the tag delay are 100 frames: they cannot carry 500 tags (siitperf refuses the
    # same). The sim reported 500 tags sent and received, swtester failed mid-run, TRex sent fewer.
    from types import SimpleNamespace

    from trexlab.generators import capabilities

    few = latency.Params(rate=100, trial_duration=2, tag_delay=1, tagged_frames=500)
    plan = SimpleNamespace(params=few, rate_from=None, capabilities=capabilities("sim"))
    with pytest.raises(InvalidParameter, match=r"^tagged_frames=500: allowed at most 100, the frames sent in the "
                                               r"1 s after tag_delay at 100 fps$"):
        latency.check(plan)
    latency.check(SimpleNamespace(**plan.__dict__ | {"rate_from": object()}))  # the rate is not measured yet
    trials = []
    with pytest.raises(InvalidParameter, match="^tagged_frames=500"):
        latency.run(RunContext(sim(), ONE_WAY, on_trial=lambda *a: trials.append(a)), few)
    assert trials == [], "refused before the first trial"
    latency.check(SimpleNamespace(**plan.__dict__ | {"params": latency.Params(rate=500, trial_duration=2, tag_delay=1,
                                                                            tagged_frames=500)}))


def test_latency_states_which_rfc_1242_definition_its_figures_follow():
    # RFC 8219 section 7.2, reporting format: the report MUST state which definition of latency (RFC 1242) was used.
    from trexlab.plan.repetition import method_line, method_of

    result = latency.run(RunContext(sim(), ONE_WAY), latency.Params(rate=10_000, trial_duration=2, tag_delay=1,
                                                                    tagged_frames=500)).to_dict()
    assert "RFC 1242" in result["latency_definition"] and "store and forward" in result["latency_definition"]
    assert f"latency definition: {result['latency_definition']}" in method_line(method_of(result))


def test_a_trial_without_frames_passes_nothing():
    """A DUT that loses every frame, searched down to a min_rate whose 1 s trials carry no frame (0.4 fps): those
    trials passed with 0 of 0 lost, and the search reported a throughput of 0.499 fps instead of below min_rate.
    Such a search is now refused before its first trial (tests/test_run_plan.py), such a trial by TrialSpec itself
    (tests/test_trial_frames.py), and a generator's result of no frame still fails."""
    from trexlab.trial import DirectionResult, TrialResult

    with pytest.raises(InvalidParameter, match=r"offered_load x duration=0\.4: allowed 1\.\.4294967296 frames"):
        TrialSpec(offered_load=0.4, duration=1.0)
    nothing = {d: DirectionResult(d, 0, 0, 0) for d in TRAFFIC.active_directions}
    assert not TrialResult(TRAFFIC, nothing, "sim").passes(0.0)
    params = throughput.Params(min_rate=0.4, max_rate=1000, trial_duration=1.0)
    with pytest.raises(InvalidParameter, match="min_rate x trial_duration=0.4: allowed 1..4294967296 frames"):
        throughput.run(RunContext(sim(random_loss=1.0), TRAFFIC), params)


def test_a_loss_exactly_at_the_disclosed_tolerance_passes():
    # 11 of 100,000 frames lost is a loss ratio of exactly 0.011 %, within a 0.011 % tolerance (Lencse et al. 2020's
    # 0.011 %); 0.011 / 100 in floating point is 0.00010999999999999999, below 11 / 100000, and failed the trial.
    from trexlab.trial import DirectionResult, TrialResult

    class ExactLoss:
        name, lab = "stub", None
        capabilities = sim().capabilities

        def run_trial(self, spec):
            n = spec.frames_per_direction
            return TrialResult(spec, {d: DirectionResult(d, n, n, n - n * 11 // 100_000, send_duration=spec.duration)
                                      for d in spec.active_directions}, self.name)

    params = throughput.Params(max_rate=100_000, min_rate=1000, trial_duration=1, loss_tolerance_percent=0.011)
    result = throughput.run(RunContext(ExactLoss(), TRAFFIC), params)
    assert result.throughput == 100_000 and result.trials == 1


def test_a_search_that_met_no_failing_load_reports_a_lower_bound():
    """RFC 2544's throughput is the highest load the DUT forwards without loss: a search whose every trial passed,
    up to a max_rate below the medium's limit, never met it. The figure is a lower bound, shown '>=' and named, as
    a tester-bound one is; a DUT that forwards the medium's own limit has exactly that throughput."""
    import pandas as pd

    from trexlab.plan.repetition import summarize_headlines, summary_lines
    from trexlab.results import analysis

    capped = throughput.run(RunContext(sim(capacity=1e6), TRAFFIC), throughput.Params(max_rate=5e5, trial_duration=1))
    result = capped.to_dict()
    assert result["headline_at_least"] == {"throughput_fps": 5e5}
    assert "its throughput is at least" in result["notes"][-1]
    figures = summarize_headlines([result, result])
    assert figures["throughput_fps"]["median_lower_bound"]
    lines = summary_lines(figures)
    assert ">= 500,000" in lines[2]
    assert "no failing load up to max_rate (the figure is a lower bound): rep 1-2" in "\n".join(lines)
    row = {"experiment": "x", "throughput_fps": 5e5, "result.headline_at_least.throughput_fps": 5e5, "repetition": 1}
    runs = pd.DataFrame([row, {**row, "repetition": 2}])
    table = analysis.summarize_points(runs, "throughput_fps", by=["experiment"])
    assert table["median_lower_bound"].tolist() == [True], "the report's tables mark it too"
    media = throughput.run(RunContext(sim(capacity=1e9), TRAFFIC), throughput.Params(trial_duration=1)).to_dict()
    assert media["headline_at_least"] == {} and media["throughput_fps"] == pytest.approx(14_880_952, rel=1e-6)
    # MLRsearch's goals likewise: no relevant upper bound up to a max_rate below the medium's limit.
    goals = mlrsearch.run(RunContext(sim(capacity=1e6), TRAFFIC), mlrsearch.Params(max_rate=5e5)).to_dict()
    assert set(goals["headline_at_least"]) == {"NDR_fps", "PDR_fps"}
    found = mlrsearch.run(RunContext(sim(capacity=1e5), TRAFFIC), mlrsearch.Params(max_rate=5e5)).to_dict()
    assert found["headline_at_least"] == {}
