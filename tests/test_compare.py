"""trexlab compare: B against A per sweep point, with a distribution-free interval and a verdict."""

import copy
import json
import math
import re
from math import comb
from pathlib import Path

import pandas as pd
import pytest

from trexlab import cli
from trexlab.plan.campaign import Campaign
from trexlab.results.compare import (
    CompareError,
    _compare_point,
    compare_campaigns,
    critical_count,
    shift_interval,
    text_lines,
    u_distribution,
)
from trexlab.spec import experiment

# A noisy simulated SUT (1 % capacity noise from trial to trial), binary searches of 0.25 % resolution,
# 20 repetitions: what a lab's regression question looks like, in simulated time.
SPEC = {
    "name": "regression",
    "description": "a noisy simulated DUT, throughput repeated",
    "generator": "sim",
    "generator_options": {"capacity": 400000, "capacity_noise": 0.01},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional", "receive_tail": 0},
    "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "resolution": 1000, "trial_duration": 1}},
    "repetitions": 20,
}


def campaign(root, capacity: float, seed: int, **changes) -> str:
    spec = copy.deepcopy(SPEC)
    spec["generator_options"].update(capacity=capacity, seed=seed)
    spec.update(changes)
    return Campaign(experiment.validate(spec), root).run()["campaign"]


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    return {"a": campaign(root / "a", 400000, seed=1),
            "lower": campaign(root / "lower", 396000, seed=2),  # 1 % less capacity, other noise
            "same": campaign(root / "same", 400000, seed=5)}  # the same SUT, other noise


def test_u_distribution_is_the_exact_mann_whitney_null():
    # m = 3, n = 2: of the 10 orderings, 1 1 2 2 2 1 1 have U = 0 .. 6 (enumerated by hand).
    assert [round(p * comb(5, 2)) for p in u_distribution(3, 2)] == [1, 1, 2, 2, 2, 1, 1]
    # Two-sided 5 % critical values of U from the published tables: 2 for 5 and 5, 127 for 20 and 20 (the
    # interval's order c is one more); 4 and 4 reach 1 - 2/70 at best; 3 and 3 no 95 % interval at all.
    assert critical_count(5, 5)[0] == 3 and critical_count(20, 20)[0] == 128
    assert critical_count(4, 4) == (1, pytest.approx(1 - 2 / 70))
    assert critical_count(3, 3)[0] == 0
    assert 0.95 <= critical_count(20, 20)[1] < 0.96


def test_shift_interval_brackets_a_known_shift():
    a = [float(v) for v in range(10, 30)]
    b = [v - 5 for v in a]
    found = shift_interval(a, b)
    assert found["shift"] == -5 and found["ci_low"] < -5 < found["ci_high"] < 0


def test_worst_case_latencies_among_lost_tags_compare_as_ties_and_print_as_beyond_the_timeout():
    # A worst-case latency among lost tags is +inf in result.json (an infinite delay): two such repetitions are a
    # tie, never inf - inf = NaN, which made the shift NaN and sorted to the top of the differences.
    a = [10e-6] * 8 + [math.inf] * 2
    b = [20e-6] * 8 + [math.inf] * 2
    found = shift_interval(a, b)
    assert found["shift"] == pytest.approx(10e-6) and found["ci_low"] == pytest.approx(10e-6)
    runs = {label: pd.DataFrame([{"experiment": "e", "repetition": i + 1, "forward_worst_case_s": v}
                                 for i, v in enumerate(values)]) for label, values in (("a", a), ("b", b + b))}
    runs["b"]["forward_worst_case_s"] = [math.inf] * 20  # every repetition of B among lost tags
    row = _compare_point(runs["a"], runs["b"], "forward_worst_case_s", 0.95)
    assert row["b_median"] == math.inf and math.isnan(row["difference_percent"]), "no difference of medians"
    assert "B's median among lost or late frames: no difference of medians" in row["notes"]
    line = text_lines(pd.DataFrame([{"figure": "forward_worst_case_s", **row}]), Path("a"), Path("b"))[-2]
    assert "> timeout" in line and not re.search(r"\binf\b", line), line


def test_a_side_whose_searches_met_no_failing_load_is_noted_as_lower_bounds():
    """A campaign capped by its max_rate below the DUT's throughput measured bounds, not figures: a shift against
    them says little, and the row says so (as for tester-bound repetitions)."""
    capped = pd.DataFrame([{"experiment": "e", "repetition": i + 1, "throughput_fps": 5e5,
                            "result.headline_at_least.throughput_fps": 5e5} for i in range(5)])
    found = capped.assign(**{"throughput_fps": [6e5] * 5, "result.headline_at_least.throughput_fps": [None] * 5})
    row = _compare_point(capped, found, "throughput_fps", 0.95)
    assert "A: 5 with no failing load up to max_rate (lower bounds)" in row["notes"] and "B:" not in row["notes"]


def test_one_percent_less_capacity_is_lower_with_an_interval_excluding_zero(campaigns):
    table = compare_campaigns(campaigns["a"], campaigns["lower"])
    row = table.iloc[0]
    assert len(table) == 1 and row["figure"] == "throughput_fps"
    assert row["verdict"] == "lower"
    assert row["ci_low"] <= row["shift"] <= row["ci_high"] < 0
    assert row["a_count"] == row["b_count"] == 20 and row["confidence"] >= 0.95
    assert -2 < row["shift_percent"] < 0


def test_the_same_sut_twice_is_no_significant_difference(campaigns):
    row = compare_campaigns(campaigns["a"], campaigns["same"]).iloc[0]
    assert row["verdict"] == "no significant difference"
    assert row["ci_low"] <= 0 <= row["ci_high"]


def test_cli_compare_json_and_html_report(campaigns, tmp_path, capsys):
    html = tmp_path / "compare.html"
    code = cli.main(["compare", campaigns["a"], campaigns["lower"], "--json", "--html", str(html)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"][0]["verdict"] == "lower" and out["confidence"] == 0.95
    assert "Hodges-Lehmann" in out["method"]
    text = html.read_text()
    assert "lower" in text and "B − A" in text and "data:image/png;base64" in text


def test_campaigns_of_other_sweeps_or_no_campaign_are_one_line_errors(campaigns, tmp_path, capsys):
    swept = campaign(tmp_path, 400000, seed=1, repetitions=1,
                     sweep={"traffic.frame_size": [[64, 64], [128, 128]]})
    with pytest.raises(CompareError, match="B sweeps frame_size"):
        compare_campaigns(campaigns["a"], swept)
    assert cli.main(["compare", campaigns["a"], str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nothing" in err


def test_campaigns_measured_with_another_frame_size_or_tolerance_are_refused_and_other_testers_noted(campaigns,
                                                                                                      tmp_path):
    # The same sweep (none) and figure, but 1518-byte frames: a shift between them is not the DUT's.
    other_size = campaign(tmp_path / "size", 400000, seed=1, repetitions=4,
                          traffic={**SPEC["traffic"], "frame_size": [1518, 1518]})
    with pytest.raises(CompareError, match=r"^the point: A and B measured differently \(traffic\.frame_size "
                                           r"\[64, 64\] in A, \[1518, 1518\] in B\)"):
        compare_campaigns(campaigns["a"], other_size)
    tolerant = campaign(tmp_path / "tolerance", 400000, seed=1, repetitions=4, procedure={
        "name": "throughput", "params": {**SPEC["procedure"]["params"], "loss_tolerance_percent": 0.01}})
    with pytest.raises(CompareError, match=r"params\.loss_tolerance_percent 0\.0 in A, 0\.01 in B"):
        compare_campaigns(campaigns["a"], tolerant)
    # Another tester ceiling (another tester, or the same after another self-test): compared, and said.
    ceiling = campaign(tmp_path / "ceiling", 400000, seed=1, repetitions=4, procedure={
        "name": "throughput", "params": {**SPEC["procedure"]["params"], "tester_ceiling": 2000000}})
    row = compare_campaigns(campaigns["a"], ceiling).iloc[0]
    assert row["verdict"] == "no significant difference"
    assert "tester ceiling (fps): null in A, 2000000.0 in B" in row["notes"], row["notes"]


def test_latency_campaigns_compared_against_other_tester_floors_are_compared(tmp_path):
    # The tester's latency floor is looked up in the ceilings file like its ceiling: another tester, or a self-test
    # in between, gives another one; the DUT's latency is still measured the same way.
    def latency(root, floor):
        params = {"rate": 50000, "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500,
                  **({"tester_floor_median": floor, "tester_floor_p99_9": floor * 2} if floor else {})}
        return campaign(root, 100000, seed=1, repetitions=1, traffic={**SPEC["traffic"], "directions": "forward"},
                        procedure={"name": "latency", "params": params})

    table = compare_campaigns(latency(tmp_path / "a", None), latency(tmp_path / "b", 1e-6))
    assert "forward_typical_s" in set(table["figure"])


def _throughputs(values, **columns) -> pd.DataFrame:
    """Repetitions of a throughput point as load_campaigns reads them: None for a search without a figure."""
    return pd.DataFrame([{"experiment": "e", "repetition": i + 1, "throughput_fps": v,
                          **{k: c[i] for k, c in columns.items()}} for i, v in enumerate(values)])


def test_repetitions_below_min_rate_left_out_never_decide_against_their_own_side():
    """A's 10 searches that ended below min_rate lie below every figure: left out, A's 10 figures at 1000 fps make
    B's 900 look lower, although A's median ('< 550') is below B's. The verdict the left-out repetitions could undo is
    withheld; the one they cannot (B higher than A's figures, so higher than A's all) stands."""
    below = [100.0] * 10 + [None] * 10
    a = _throughputs([None] * 10 + [1000.0] * 10, **{"result.headline_below.throughput_fps": below})
    row = _compare_point(a, _throughputs([900.0] * 20), "throughput_fps", 0.95)
    assert row["a_median"] == "< 550" and row["ci_high"] < 0, "the figures alone exclude 0"
    assert row["verdict"] == "undecided", row
    assert "verdict lower withheld: A's 10 left out below min_rate lie below every figure" in row["notes"]
    # B above A's figures is above A's censored repetitions too.
    row = _compare_point(a, _throughputs([1100.0] * 20), "throughput_fps", 0.95)
    assert row["verdict"] == "higher"
    # B's own censored repetitions could make B lower than its figures: B higher is withheld, B lower stands.
    b = _throughputs([None] * 2 + [1100.0] * 18, **{"result.headline_below.throughput_fps": [100.0] * 2 + [None] * 18})
    assert _compare_point(_throughputs([1000.0] * 20), b, "throughput_fps", 0.95)["verdict"] == "undecided"
    b = b.assign(throughput_fps=[None] * 2 + [900.0] * 18)
    assert _compare_point(_throughputs([1000.0] * 20), b, "throughput_fps", 0.95)["verdict"] == "lower"


def test_lower_bounds_never_decide_against_their_own_side():
    """A tester-bound rate (or one whose search met no failing load) is a lower bound of the DUT's: B's tester-bound
    900 fps against A's 1000 says nothing of B's DUT being lower; A's lower bounds nothing of B's being higher."""
    free = _throughputs([1000.0] * 20)
    bound = {"result.tester_bound_reasons": [["stretched trials"]] * 20}
    row = _compare_point(free, _throughputs([900.0] * 20, **bound), "throughput_fps", 0.95)
    assert row["ci_high"] < 0 and row["verdict"] == "undecided", row
    assert "verdict lower withheld: B's 20 lower bound(s) may be higher" in row["notes"]
    assert _compare_point(free, _throughputs([1100.0] * 20, **bound), "throughput_fps", 0.95)["verdict"] == "higher"
    capped = {"result.headline_at_least.throughput_fps": [900.0] * 20}
    assert _compare_point(_throughputs([900.0] * 20, **capped), _throughputs([1000.0] * 20), "throughput_fps",
                          0.95)["verdict"] == "undecided"
    # A delay is no lower bound: its tester-bound repetitions leave the verdict as it is.
    delays = pd.DataFrame([{"experiment": "e", "repetition": i + 1, "forward_typical_s": 2e-5,
                            "result.tester_bound_reasons": ["stretched trials"]} for i in range(20)])
    faster = delays.assign(forward_typical_s=1e-5)
    assert _compare_point(delays, faster, "forward_typical_s", 0.95)["verdict"] == "lower"


def test_the_report_writes_each_figure_as_every_table_does():
    """compare.styled wrote every figure but frames/s to 3 decimals in its display unit: a 2.4 us latency read
    '0.002' ms beside a 2.5 us one, also '0.002', and a TCP rate '105,923,456.700' bit/s. It writes each as the
    campaign report does (analysis.figure_format)."""
    from trexlab.results import analysis
    from trexlab.results.compare import styled

    delays = _compare_point(pd.DataFrame([{"experiment": "e", "repetition": i + 1, "forward_typical_s": 2.4e-6}
                                          for i in range(5)]),
                            pd.DataFrame([{"experiment": "e", "repetition": i + 1, "forward_typical_s": 2.5e-6}
                                          for i in range(5)]), "forward_typical_s", 0.95)
    rates = _compare_point(pd.DataFrame([{"experiment": "e", "repetition": 1, "tcp_throughput_bps": 105923456.7}]),
                           pd.DataFrame([{"experiment": "e", "repetition": 1, "tcp_throughput_bps": 105923457.2}]),
                           "tcp_throughput_bps", 0.95)
    table = pd.DataFrame([{"figure": "forward_typical_s", **delays}, {"figure": "tcp_throughput_bps", **rates}])
    shown = styled(table).data
    assert list(shown["A median"]) == [analysis.shown(2.4e-6, analysis.figure_format("forward_typical_s"), 1e3),
                                       analysis.shown(105923456.7, analysis.figure_format("tcp_throughput_bps"))]
    assert list(shown["A median"]) == ["0.002400", "105,923,457"] and shown["B median"][0] == "0.002500"
