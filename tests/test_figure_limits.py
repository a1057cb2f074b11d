"""Figures that show their limits (issue 16): MLRsearch's offered duration, the binary search's relative
resolution, censored and tester-bound repetitions in the statistics and everywhere they are shown."""

import dataclasses
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from trexlab.generators import create_generator
from trexlab.plan.campaign import Campaign
from trexlab.procedures import latency, mlrsearch, throughput
from trexlab.procedures.common import RunContext
from trexlab.results import analysis
from trexlab.results.report import render
from trexlab.results.stats import Observation, summarize
from trexlab.spec import experiment
from trexlab.trial import TrialSpec

import browser

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)


class EarlySender:
    """A paced sender that finishes one frame interval early, as a real one reports its measured send time."""

    name = "sim"

    def __init__(self, generator):
        self.generator = generator

    def run_trial(self, spec):
        result = self.generator.run_trial(spec)
        early = spec.duration - 1 / spec.offered_load
        directions = {k: dataclasses.replace(d, send_duration=early) for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions)

    def describe(self):
        return self.generator.describe()

    def close(self):
        pass


@pytest.mark.parametrize("goals", [(mlrsearch.NDR, mlrsearch.PDR), (mlrsearch.RFC2544,)], ids=["ndr-pdr", "rfc2544"])
def test_mlrsearch_a_sender_finishing_one_frame_early_costs_the_same_search(goals):
    params = mlrsearch.Params(max_rate=1e6, min_rate=10_000, goals=goals)
    exact = mlrsearch.run(RunContext(create_generator("sim", capacity=437_000, seed=5), TRAFFIC), params)
    early = mlrsearch.run(RunContext(EarlySender(create_generator("sim", capacity=437_000, seed=5)), TRAFFIC), params)
    sequence = [(t["offered_load"], t["duration"]) for t in exact.trial_log]
    assert [(t["offered_load"], t["duration"]) for t in early.trial_log] == sequence
    assert early.trial_seconds == exact.trial_seconds
    assert [g["conditional_throughput"] for g in early.goals] == [g["conditional_throughput"] for g in exact.goals]


@pytest.mark.parametrize("capacity", [20_000.0, 1_000_000.0])
def test_default_search_ends_within_half_a_percent_of_the_capacity(capacity):
    result = throughput.run(RunContext(create_generator("sim", capacity=capacity), TRAFFIC), throughput.Params())
    assert capacity * (1 - 0.005) <= result.throughput <= capacity
    data = result.to_dict()
    assert data["resolution_percent"] == 0.5 and data["stopping_rule"] == "0.5 % of the rate found"
    assert 0 < data["final_width_fps"] <= 0.005 * result.throughput


def test_an_absolute_resolution_stays_available_and_is_disclosed():
    params = throughput.Params(max_rate=1e6, resolution=20_000)
    data = throughput.run(RunContext(create_generator("sim", capacity=437_000), TRAFFIC), params).to_dict()
    assert 437_000 - 20_000 <= data["throughput_fps"] <= 437_000
    assert data["resolution"] == 20_000 and data["resolution_percent"] is None
    assert data["stopping_rule"] == "20000 fps"


# -- statistics: one percentile definition, censored and tester-bound repetitions ------------------------------

def test_percentiles_are_nearest_rank_values_some_repetition_produced():
    values = [150_625.0, 149_000.0, 180_250.0, 90_500.0, 151_000.0, 148_500.0, 200_125.0, 120_000.0, 160_000.0,
              155_500.0]
    s = summarize(values)
    assert s["p1"] in values and s["p99"] in values
    assert (s["p1"], s["p99"]) == (90_500.0, 200_125.0)
    assert s["median"] == (150_625.0 + 151_000.0) / 2, "an even count: the mean of the two middle values"
    assert summarize([3.0, 1.0, 2.0])["median"] == 2.0
    hundred = summarize([float(v) for v in range(1, 101)])
    assert (hundred["p1"], hundred["p99"]) == (1.0, 99.0)


def test_ten_repetitions_five_below_the_minimum_load():
    reps = [Observation(None, below=100.0, repetition=k) for k in (2, 4, 6, 8, 10)]
    reps += [Observation(v, repetition=k) for k, v in zip((1, 3, 5, 7, 9), (1000.0, 1100.0, 2000.0, 3000.0, 3050.0),
                                                          strict=True)]
    s = summarize(reps)
    assert (s["count"], s["missing"], s["below_minimum"]) == (5, 5, 5)
    # The two middle values: one below 100, and 1000: their mean is below 550 (not the survivors' 2000).
    assert s["median"] == "< 550"
    assert s["min"] == "< 100" and s["p1"] == "< 100" and s["max"] == 3050.0
    assert s["dispersion_percent"] == f"> {(3050 - 100) / 550 * 100:.2f}"
    # 550 is no measured figure: the reason says where the bound comes from.
    assert s["why"] == ("below min_rate 100: rep 2, 4, 6, 8, 10; "
                        "median < 550: mean of a repetition below min_rate 100 and 1000")


def test_a_censored_statistic_states_its_bound_exactly_never_rounded_below_it():
    """'< min_rate' was written to 6 significant digits: a search below min_rate 1,234,564 fps read '< 1.23456e+06',
    a claim that it lies below 1,234,560, which nothing measured; its reason and a censored median's bound too."""
    reps = [Observation(None, below=1234564.0, repetition=k) for k in (1, 2)] + [Observation(14880951.0, repetition=3),
                                                                                Observation(14880953.0, repetition=4)]
    s = summarize(reps)
    assert (s["min"], s["median"]) == ("< 1234564", f"< {(1234564 + 14880951) / 2:.1f}") == ("< 1234564", "< 8057757.5")
    assert s["why"] == ("below min_rate 1234564: rep 1-2; "
                        "median < 8057757.5: mean of a repetition below min_rate 1234564 and 14880951")
    assert analysis.numeric(s["median"]) != analysis.numeric(s["median"]), "still no number"


def test_a_majority_below_the_minimum_load_is_a_median_below_min_rate():
    s = summarize([Observation(None, below=100.0)] * 6 + [1000.0, 1100.0, 2000.0, 3000.0])
    assert s["median"] == "< 100" and s["missing"] == 6 and s["count"] == 4
    assert s["why"] == "below min_rate 100: 6 repetition(s)", "an order statistic below min_rate needs no more"


def test_tester_bound_repetitions_at_or_below_the_median_make_it_a_lower_bound():
    bound = ("stretched trials",)
    high = [Observation(v) for v in (10.0, 11.0, 12.0)] + [Observation(20.0, tester_bound=bound, repetition=4)]
    s = summarize(high)
    assert s["tester_bound"] == 1 and s["median_lower_bound"] is False, "raising the top one moves no median"
    low = [Observation(v) for v in (10.0, 11.0, 12.0)] + [Observation(9.0, tester_bound=bound, repetition=4)]
    s = summarize(low)
    assert s["median_lower_bound"] is True
    assert s["why"] == "tester-bound: stretched trials: rep 4"


def test_every_statistic_at_or_above_a_tester_bound_repetition_is_shown_as_a_lower_bound():
    # A tester-bound rate is a lower bound of the DUT's, never its figure. Raising one repetition can raise every
    # order statistic at or above it: the maximum whenever any repetition is tester-bound. Only the median was
    # marked: the CLI, the report and Lencse 2021's med/min/max table showed a tester-bound maximum as the DUT's.
    bound = ("near tester ceiling",)
    top = summarize([Observation(v) for v in (10.0, 12.0, 14.0)] + [Observation(20.0, tester_bound=bound,
                                                                                repetition=4)])
    assert {k: top[f"{k}_lower_bound"] for k in ("median", "min", "max", "p1", "p99")} == {
        "median": False, "min": False, "max": True, "p1": False, "p99": True}
    low = summarize([Observation(v) for v in (10.0, 11.0, 12.0)] + [Observation(9.0, tester_bound=bound,
                                                                               repetition=4)])
    assert all(low[f"{k}_lower_bound"] for k in ("median", "min", "max", "p1", "p99"))
    delay = summarize([Observation(v) for v in (10.0, 11.0)] + [Observation(20.0, tester_bound=bound)],
                      lower_bounds=False)
    assert not any(delay[f"{k}_lower_bound"] for k in ("median", "min", "max", "p1", "p99")), "a delay is no bound"
    from trexlab.plan.repetition import summary_lines

    [row] = [line for line in summary_lines({"throughput_fps": top}) if line.startswith("throughput_fps ")]
    assert row.split()[-4:] == ["10", ">=", "20", "76.92"], row
    assert any("LOWER BOUND" in line and "max" in line for line in summary_lines({"throughput_fps": top}))
    table = pd.DataFrame([{"destination_networks": 1, **top}])
    shown = analysis.styled(table, "throughput_fps").data.iloc[0]
    assert (shown["median"], shown["min"], shown["max"]) == ("13", "10", analysis.LOWER_BOUND_MARK + "20"), shown
    paper = analysis.paper_table(table, "destination_networks")
    assert [str(v) for v in paper.iloc[:3, 0]] == ["13.0", "10.0", analysis.LOWER_BOUND_MARK + "20"], paper


# -- tester-bound repetitions ----------------------------------------------------------------------------------

def test_a_search_held_down_by_the_tester_is_tester_bound_and_says_why():
    stretching = create_generator("sim", capacity=500_000, tester_ceiling=300_000)
    data = throughput.run(RunContext(stretching, TRAFFIC), throughput.Params(max_rate=1e6, trial_duration=1)).to_dict()
    assert data["tester_bound"] is True and data["tester_bound_reasons"] == ["stretched trials"]


def test_stretched_trials_above_a_load_the_dut_failed_do_not_bound_the_result():
    # The tester stretches above 300 kfps, but the DUT itself fails at every load above 100 kfps.
    slow_dut = create_generator("sim", capacity=100_000, tester_ceiling=300_000)
    data = throughput.run(RunContext(slow_dut, TRAFFIC), throughput.Params(max_rate=1e6, trial_duration=1)).to_dict()
    assert any(t["stretched"] for t in data["search"])
    assert data["tester_bound"] is False and data["tester_bound_reasons"] == []
    assert 99_500 <= data["throughput_fps"] <= 100_000


def test_a_result_near_the_tester_ceiling_is_tester_bound():
    params = throughput.Params(max_rate=1e6, trial_duration=1, tester_ceiling=420_000)
    data = throughput.run(RunContext(create_generator("sim", capacity=400_000), TRAFFIC), params).to_dict()
    assert data["tester_bound_reasons"] == ["near tester ceiling"]


def test_tester_drops_make_a_latency_result_tester_bound():
    class Dropping(EarlySender):
        def run_trial(self, spec):
            result = self.generator.run_trial(spec)
            directions = {k: dataclasses.replace(d, tester_drops=3) for k, d in result.directions.items()}
            return dataclasses.replace(result, directions=directions)

    params = latency.Params(rate=10_000, trial_duration=1, tag_delay=0.5, tagged_frames=500, rfc2544_trials=0)
    data = latency.run(RunContext(Dropping(create_generator("sim")), TRAFFIC), params).to_dict()
    assert data["tester_bound_reasons"] == ["tester drops"]
    assert any("tester's own receivers" in n for n in data["notes"])


def test_a_campaign_whose_repetitions_stretch_shows_it_in_the_cli_summary_json_and_the_report(tmp_path):
    """The tester stretches above 300 kfps: the 500 kfps DUT's median is a lower bound, the 100 kfps DUT's is
    not (its own losses bound its search), and a DUT below min_rate is '< 100' with every repetition missing."""
    spec = {"name": "stretching", "generator": "sim", "generator_options": {"tester_ceiling": 300_000},
            "traffic": {"receive_tail": 0},
            "procedure": {"name": "throughput", "params": {"max_rate": 1e6, "min_rate": 100, "trial_duration": 1}},
            "sweep": {"generator_options.capacity": [50, 100_000, 500_000]}, "repetitions": 3}
    lines = []
    outcome = Campaign(experiment.validate(spec), tmp_path, progress=lines.append,
                       ceilings=tmp_path / "no-ceilings.json").run()
    assert outcome["done"] == 3
    campaign = Path(outcome["campaign"])
    points = json.loads((campaign / "campaign.json").read_text())["points"]
    summaries = {p["values"]["generator_options.capacity"]: json.loads((campaign / p["point"] / "summary.json")
                                                                       .read_text()) for p in points}
    fast, slow, dead = (summaries[c]["figures"]["throughput_fps"] for c in (500_000, 100_000, 50))
    assert fast["median_lower_bound"] is True and fast["tester_bound"] == 3
    assert fast["why"] == "tester-bound: stretched trials: rep 1-3"
    assert slow["median_lower_bound"] is False and slow["tester_bound"] == 0
    assert dead["median"] == "< 100" and dead["missing"] == 3 and dead["why"] == "below min_rate 100: rep 1-3"
    assert summaries[50]["method"]["stopping_rule"] == "0.5 % of the rate found"

    text = "\n".join(lines)
    assert re.search(r"throughput_fps\s+3\s+0\s+3\s+>= 29\d,\d{3}", text), text
    assert re.search(r"throughput_fps\s+0\s+3\s+0\s+< 100", text), text
    assert "LOWER BOUND" in text and "resolution 0.5 % of the rate found; trial duration 1 s" in text

    dom, _ = browser.render(render(campaign), tmp_path)
    assert "lower bound at 1 point(s): tester-bound" in dom
    assert re.search(r"as measured at (every point \(3\)|points? [^:]*): RFC 2544 section 26\.1 throughput, "
                     r"binary search; loss tolerance 0 %; resolution 0\.5 % of the rate found", dom), dom
    assert "≥ 29" in dom and "tester-bound: stretched trials: rep 1-3" in dom
    assert "&lt; 100" in dom and "below min_rate 100: rep 1-3" in dom
    orange = tuple(int(analysis.LOWER_BOUND_COLOUR[i:i + 2], 16) for i in (1, 3, 5))
    marked = browser.pixels_of_colour(tmp_path / "report.png", orange)
    assert marked > 500, f"only {marked} pixels of the lower-bound colour: no marker on the plot"


def test_the_cli_summary_prints_the_method_beside_the_figure_and_marks_a_lower_bound(tmp_path, capsys):
    from trexlab import cli

    code = cli.main(["throughput", "--generator", "sim", "--generator-opt", "capacity=5e5",
                     "--generator-opt", "tester_ceiling=3e5", "--max-rate", "1e6", "--trial-duration", "2",
                     "--loss-tolerance-percent", "0.01", "--repeat", "2", "--results", str(tmp_path / "r"),
                     "--ceilings", str(tmp_path / "none.json")])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"throughput_fps\s+2\s+0\s+2\s+>= 29\d,\d{3}", out), out
    assert "loss tolerance 0.01 %; resolution 0.5 % of the rate found; trial duration 2 s" in out
    assert "tester-bound: stretched trials: rep 1-2" in out


def test_report_tables_rank_repetitions_below_the_minimum_load_and_export_them(tmp_path):
    values = [None, 1000.0, None, 1100.0, None, 2000.0, None, 3000.0, None, 3050.0]
    runs = pd.DataFrame([{"experiment": "e", "x": 1, "repetition": k, "throughput_fps": v,
                          "result.headline_below.throughput_fps": 100.0 if v is None else float("nan"),
                          "result.tester_bound_reasons": [], "sweep_keys": ("x",), "figure_keys": ("throughput_fps",)}
                         for k, v in enumerate(values, start=1)])
    row = analysis.summarize_points(runs, "throughput_fps").iloc[0]
    assert (row["count"], row["missing"], row["median"], row["min"]) == (5, 5, "< 550", "< 100")
    assert row["why"] == ("below min_rate 100: rep 1, 3, 5, 7, 9; "
                          "median < 550: mean of a repetition below min_rate 100 and 1000")
    table = analysis.summarize_points(runs, "throughput_fps")
    back = pd.read_parquet(analysis.export(table, tmp_path / "t.parquet"))
    assert back["median"].tolist() == ["< 550"] and back["max"].tolist() == [3050.0]


def test_results_written_before_headline_below_are_still_counted_below_the_minimum_load():
    runs = pd.DataFrame([{"experiment": "e", "x": 1, "repetition": k, "throughput_fps": v,
                          "result.below_minimum_load": v is None, "result.params.min_rate": 100.0,
                          "sweep_keys": ("x",), "figure_keys": ("throughput_fps",)}
                         for k, v in enumerate([None, None, 500.0], start=1)])
    row = analysis.summarize_points(runs, "throughput_fps").iloc[0]
    assert (row["median"], row["missing"], row["max"]) == ("< 100", 2, 500.0)


def test_a_report_heading_explains_a_lower_bound_maximum_too():
    # One tester-bound repetition above the median marks only the maximum '≥': the heading's note on what '≥' means
    # was given only where a median was marked, so that mark stood unexplained.
    bound = ("near tester ceiling",)
    top = summarize([Observation(v) for v in (10.0, 12.0, 14.0)] + [Observation(20.0, tester_bound=bound,
                                                                                repetition=4)])
    heading = analysis.figure_heading(pd.DataFrame([{"destination_networks": 1, **top}]), "throughput_fps")
    assert "lower bound at 1 point(s)" in heading and analysis.LOWER_BOUND_NOTE in heading, heading
    assert "maximum" in analysis.LOWER_BOUND_NOTE
