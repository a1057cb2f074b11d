"""trexlab.results.analysis: the statistics of repeated runs per sweep point, paper tables, comparisons, exports."""

import html
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from trexlab.plan.campaign import Campaign
from trexlab.results import analysis
from trexlab.results.report import render
from trexlab.results.stats import WHOLE, dispersion_percent
from trexlab.spec import experiment
from trexlab.trial import Latency

# Lencse 2021 (siitperf accuracy): (median, min, max, disp. %) per frame size, as printed.
SIITPERF_TABLES = {
    "II": [(885_643, 882_811, 887_696, 0.55), (878_256, 874_006, 880_860, 0.78), (857_575, 855_467, 859_631, 0.49),
           (779_410, 775_389, 781_746, 0.82), (779_503, 777_326, 781_861, 0.58), (779_982, 777_342, 781_251, 0.50),
           (779_194, 777_828, 780_274, 0.31), (779_035, 777_342, 779_663, 0.30)],
    "III": [(880_381, 826_610, 883_850, 6.50), (875_126, 742_186, 876_617, 15.36),
            (850_740, 749_999, 853_763, 12.20), (778_295, 757_807, 780_274, 2.89),
            (778_861, 765_624, 780_274, 1.88), (778_535, 734_374, 779_790, 5.83),
            (779_078, 749_693, 780_518, 3.96), (779_069, 749_968, 779_420, 3.78)],
    "V": [(549_297, 547_850, 550_782, 0.53), (522_413, 521_285, 524_610, 0.64), (452_930, 452_926, 452_960, 0.01),
          (234_986, 234_986, 234_990, 0.00), (158_652, 158_650, 158_667, 0.01), (119_752, 119_752, 119_767, 0.01),
          (96_173, 96_173, 96_178, 0.01), (81_294, 81_294, 81_301, 0.01)],
}


@pytest.mark.parametrize("table", sorted(SIITPERF_TABLES))
def test_dispersion_column_of_the_siitperf_tables_is_reproduced_from_median_min_max(table):
    for median, low, high, printed in SIITPERF_TABLES[table]:
        assert round(dispersion_percent(median, low, high), 2) == printed, (table, median)


def runs_frame(values_by_point: dict) -> pd.DataFrame:
    """A campaign table as load_campaigns returns it: one row per repetition."""
    rows = [{"experiment": "e", "destination_networks": point, "repetition": i + 1, "throughput_fps": v,
             "sweep_keys": ("destination_networks",), "figure_keys": ("throughput_fps",)}
            for point, values in values_by_point.items() for i, v in enumerate(values)]
    return pd.DataFrame(rows)


RUNS = runs_frame({1: [float(v) for v in range(1, 101)], 16: [10.0, None, 30.0]})


def one(figure_stat: str, point: int):
    table = analysis.summarize_points(RUNS, "throughput_fps")
    return table.set_index("destination_networks").loc[point, figure_stat]


def test_median_per_point():
    assert one("median", 1) == 50.5 and one("median", 16) == 20.0


def test_minimum_and_maximum_per_point():
    assert (one("min", 1), one("max", 1)) == (1.0, 100.0)
    assert (one("min", 16), one("max", 16)) == (10.0, 30.0)


def test_first_and_ninety_ninth_percentile_per_point():
    assert (one("p1", 1), one("p99", 1)) == (1.0, 99.0), "nearest rank: values that some repetition produced"


def test_dispersion_per_point():
    assert one("dispersion_percent", 1) == pytest.approx(99 / 50.5 * 100)
    assert one("dispersion_percent", 16) == pytest.approx(100.0)


def test_count_and_missing_per_point_a_missing_result_is_not_a_zero():
    assert (one("count", 16), one("missing", 16)) == (2, 1)
    assert one("min", 16) == 10.0


def test_paper_table_has_the_siitperf_layout():
    summary = pd.DataFrame({"frame_size": [(64, 64), (1518, 1518)], "median": [2.0, 1.0], "min": [1.0, 1.0],
                            "max": [3.0, 1.0], "dispersion_percent": [100.0, 0.0]})
    table = analysis.paper_table(summary, "frame_size")
    assert list(table.columns) == ["64 B", "1518 B"]
    assert list(table.index) == ["median", "min", "max", "disp. (%)"]
    assert table.loc["disp. (%)", "64 B"] == 100.0


def test_compare_puts_two_setups_side_by_side_with_their_ratio():
    single = runs_frame({1: [100.0, 110.0, 90.0], 16: [80.0]})
    dual = runs_frame({1: [50.0, 55.0, 45.0], 16: [40.0]})
    table = analysis.compare(single, dual, "throughput_fps", by="destination_networks").set_index(
        "destination_networks")
    assert table.loc[1, "single_median"] == 100.0 and table.loc[1, "dual_max"] == 55.0
    assert table.loc[1, "ratio"] == 0.5 and table.loc[16, "ratio"] == 0.5


def test_compare_refuses_two_setups_measured_with_other_traffic_but_not_the_siit_ports_own_sizes():
    # compare() checked the procedure and its parameters only: a single-DUT campaign of unidirectional traffic (or
    # fixed ports, or other frames) was set beside a bidirectional dual-DUT one and their ratio printed.
    def runs(sizes, versions, directions="bidirectional"):
        return runs_frame({1: [100.0, 90.0]}).assign(**{
            "provenance.procedure": "throughput", "provenance.traffic.frame_size": [sizes] * 2,
            "provenance.traffic.ip_version": [versions] * 2, "provenance.traffic.directions": directions})

    dual = runs([64, 64], [4, 4])
    nat64 = runs([84, 64], [6, 4])  # the same test frames: 64-byte IPv4 ones, 84 bytes as IPv6 (Lencse 2024, Fig. 11)
    assert analysis.compare(nat64, dual, "throughput_fps", by="destination_networks")["ratio"].tolist() == [1.0]
    with pytest.raises(ValueError, match=r"^destination_networks=1: single and dual measured differently "
                                         r"\(traffic\.directions \"unidirectional\" in single, \"bidirectional\" in "
                                         r"dual\)"):
        analysis.compare(runs([84, 64], [6, 4], "unidirectional"), dual, "throughput_fps", by="destination_networks")
    with pytest.raises(ValueError, match=r"\(traffic\.frame_size_as_ipv4 \[84, 84\] in single, \[64, 64\] in dual\)"):
        analysis.compare(runs([104, 84], [6, 4]), dual, "throughput_fps", by="destination_networks")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_round_trip(tmp_path, suffix):
    table = analysis.summarize_points(RUNS, "throughput_fps")
    path = analysis.export(table, tmp_path / f"t{suffix}")
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert back["median"].tolist() == table["median"].tolist()


def test_export_refuses_an_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="allowed suffixes .csv, .parquet"):
        analysis.export(pd.DataFrame(), tmp_path / "t.xlsx")


def sim_campaign(tmp_path, name, sweep, capacity=400000, trial_duration=1, repetitions=3, tester_ceiling=None,
                 **traffic):
    tester = {} if tester_ceiling is None else {"tester_ceiling": tester_ceiling}
    spec = {"name": name, "generator": "sim",
            "generator_options": {"capacity": capacity, "capacity_noise": 0.01, **tester},
            "traffic": {"frame_size": [64, 64], "directions": "bidirectional", "receive_tail": 0, **traffic},
            "procedure": {"name": "throughput", "params": {"max_rate": 1e6, "resolution": 5000,
                                                           "trial_duration": trial_duration}},
            "sweep": sweep, "repetitions": repetitions}
    return Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).run()["campaign"]


def test_load_campaigns_one_row_per_repetition_with_sweep_columns(tmp_path):
    path = sim_campaign(tmp_path, "load", {"traffic.destination_networks": [1, 16]})
    runs = analysis.load_campaigns(tmp_path)
    assert len(runs) == 6 and analysis.sweep_columns(runs) == ["destination_networks"]
    assert analysis.figure_columns(runs) == ["throughput_fps"]
    assert sorted(runs["destination_networks"].unique()) == [1, 16]
    status = analysis.point_status(path)
    assert status["status"].tolist() == ["done", "done"] and status["repetitions done"].tolist() == [3, 3]


def test_the_siitperf_notebook_prints_the_paper_table(tmp_path):
    path = sim_campaign(tmp_path, "siitperf-frame-sizes", {"traffic.frame_size": [[64, 64], [1518, 1518]]})
    text = render(path).read_text()
    assert "disp. (%)" in text and "1518 B" in text and "Traceback" not in text


def test_the_dual_dut_notebook_compares_with_the_single_dut_campaign(tmp_path):
    single = sim_campaign(tmp_path, "siit-single-dut", {"traffic.destination_networks": [1, 2]}, capacity=400000)
    dual = sim_campaign(tmp_path, "siit-dual-dut", {"traffic.destination_networks": [1, 2]}, capacity=200000)
    text = render(dual).read_text()
    assert "NAT64_median" in text and "ratio dual / NAT64" in text and "Traceback" not in text
    # As the latency report shows it (styled_setups): a lower bound is marked on its median and ratio, no True/False.
    assert "median_lower_bound" not in text
    assert "No campaign of <code>siit-single-dut-nat46</code>" in text, "the missing half of Fig. 11 is named"
    # The single-DUT figures printed beside come with their method, as the dual-DUT ones do.
    assert "The single-DUT campaigns beside it" in text and Path(single).name in text
    measured = r"as measured at (?:every point|points?) [^:]*: RFC 2544 section 26\.1 throughput"
    assert len(re.findall(measured, text)) >= 2
    ratios = [float(m) for m in re.findall(r">(0\.\d{3})<", text)]
    assert ratios and all(math.isclose(r, 0.5, abs_tol=0.05) for r in ratios), ratios


def test_the_dual_dut_notebook_sets_both_single_duts_beside_the_dual_one_as_fig_11(tmp_path):
    # Fig. 11 has three series: DUT3 alone as NAT64, DUT2 alone as NAT46, both together. The report had one single
    # DUT, NAT64.
    networks = {"traffic.destination_networks": [1, 2]}
    sim_campaign(tmp_path, "siit-single-dut", networks, capacity=400000, repetitions=1, frame_size=[84, 64],
                 ip_version=[6, 4])
    nat46 = sim_campaign(tmp_path, "siit-single-dut-nat46", networks, capacity=300000, repetitions=1,
                         frame_size=[64, 84], ip_version=[4, 6])
    dual = sim_campaign(tmp_path, "siit-dual-dut", networks, capacity=200000, repetitions=1)
    text = render(dual).read_text()
    assert "Traceback" not in text and "No campaign of" not in text and Path(nat46).name in text
    for label in ("NAT64", "NAT46"):
        assert f"{label}_median" in text and f"ratio dual / {label}" in text
    ratios = sorted(float(m) for m in re.findall(r">(0\.\d{3})<", text))
    assert len(ratios) == 4 and all(math.isclose(r, 0.5, abs_tol=0.05) for r in ratios[:2]), ratios
    assert all(math.isclose(r, 2 / 3, abs_tol=0.05) for r in ratios[2:]), ratios


def test_the_single_dut_half_of_a_comparison_is_one_measured_alike(tmp_path):
    # The notebook takes the last of sibling_campaigns: they were sorted by name (a spec hash), so a single-DUT
    # campaign of other trial durations (another scale) could be set beside the dual-DUT one, and compare() gave
    # their ratio.
    networks = {"traffic.destination_networks": [1]}
    alike = sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=1)
    other = sim_campaign(tmp_path, "siit-single-dut", networks, trial_duration=2, repetitions=1)
    dual = sim_campaign(tmp_path, "siit-dual-dut", networks, capacity=200000, repetitions=1)
    assert analysis.sibling_campaigns(dual, "siit-single-dut") == [Path(alike).resolve()]
    with pytest.raises(ValueError, match=r"^destination_networks=1: single and dual measured differently "
                                         r"\(params\.trial_duration 2\.0 in single, 1\.0 in dual\)"):
        analysis.compare(analysis.load_campaigns(other), analysis.load_campaigns(dual), "throughput_fps",
                         by="destination_networks")
    table = analysis.compare(analysis.load_campaigns(alike), analysis.load_campaigns(dual), "throughput_fps",
                             by="destination_networks")
    assert table["ratio"].iloc[0] == pytest.approx(0.5, abs=0.05)
    # The experiment's directory holds both single-DUT campaigns: one median over 1 s and 2 s trials is no figure.
    both = analysis.load_campaigns(tmp_path / "siit-single-dut")
    with pytest.raises(ValueError, match=r"^experiment=siit-single-dut, destination_networks=1: campaigns c-\w+ and "
                                         r"c-\w+ measured differently \(params\.trial_duration "):
        analysis.summarize_points(both, "throughput_fps")
    assert len(analysis.summarize_points(both, "throughput_fps", ["experiment", "campaign"])) == 2
    # Nor one of other test frames, run later: the report took it, and compare() refused the pair, failing the
    # report. The SIIT ports' own sizes are the same frames: 84/64 B (IPv6/IPv4) beside 64/64 B.
    nat64 = sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=1, frame_size=[84, 64], ip_version=[6, 4])
    sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=1, frame_size=[84, 64], ip_version=[6, 4],
                 directions="forward")
    assert analysis.sibling_campaigns(dual, "siit-single-dut") == [Path(alike).resolve(), Path(nat64).resolve()]


def test_the_single_dut_half_of_a_comparison_has_the_same_tester_and_repetitions(tmp_path):
    # Lencse & Szilagyi 2024, section 4.4: both set-ups measured by the same tester, 20 repetitions each, their
    # median, minimum and maximum side by side. A single-DUT campaign of fewer repetitions (its min-max range is
    # no range of 20), or of another tester (one sending half as fast), was set beside the dual-DUT one and its
    # ratio printed as the DUTs'.
    networks = {"traffic.destination_networks": [1]}
    alike = sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=2)
    fewer = sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=1)
    slower = sim_campaign(tmp_path, "siit-single-dut", networks, repetitions=2, tester_ceiling=900_000)
    dual = sim_campaign(tmp_path, "siit-dual-dut", networks, capacity=200000, repetitions=2)
    assert analysis.sibling_campaigns(dual, "siit-single-dut") == [Path(alike).resolve()]
    dual_runs = analysis.load_campaigns(dual)
    with pytest.raises(ValueError, match=r"^destination_networks=1: single and dual measured differently "
                                         r"\(setup\.repetitions 1 in single, 2 in dual\)"):
        analysis.compare(analysis.load_campaigns(fewer), dual_runs, "throughput_fps", by="destination_networks")
    with pytest.raises(ValueError, match=r"^destination_networks=1: single and dual measured differently "
                                         r"\(setup\.tester .*900000.* in single, .*null.* in dual\)"):
        analysis.compare(analysis.load_campaigns(slower), dual_runs, "throughput_fps", by="destination_networks")
    table = analysis.compare(analysis.load_campaigns(alike), dual_runs, "throughput_fps", by="destination_networks")
    assert table["ratio"].iloc[0] == pytest.approx(0.5, abs=0.05)


def test_a_latency_statistic_among_lost_tags_is_shown_as_beyond_the_timeout_never_inf():
    # A worst-case latency whose 99.9th percentile lies among lost tags is +inf in result.json's headline; the
    # report's tables, plots and the CLI's summary say "> timeout (lost)", and its dispersion is undefined.
    runs = runs_frame({1: [10e-6, 12e-6, 11e-6], 16: [10e-6, math.inf, math.inf]}).rename(
        columns={"throughput_fps": "forward_worst_case_s"})
    runs["figure_keys"] = [("forward_worst_case_s",)] * len(runs)
    table = analysis.summarize_points(runs, "forward_worst_case_s")
    shown = analysis.styled(table, "forward_worst_case_s").data.set_index("destination_networks")
    # The table's cells are HTML text (analysis.report_table): the page shows "> timeout (lost)".
    assert (shown.loc[16, "median"], shown.loc[16, "max"]) == (html.escape(analysis.LOST_TEXT),) * 2
    assert shown.loc[16, "min"] == "0.01000" and shown.loc[16, "dispersion_percent"] == "-"
    statistics = ["median", "min", "max", "p1", "p99", "dispersion_percent"]
    assert not any(re.search(r"\binf\b", v) for v in shown[statistics].to_numpy().ravel()), shown[statistics]
    assert "lost" in table.set_index("destination_networks").loc[16, "why"]
    from trexlab.plan.repetition import summary_lines
    from trexlab.results.stats import summarize

    lines = summary_lines({"forward_worst_case_s": summarize([10e-6, 10e-6, math.inf])})
    assert lines[2].split()[-1] == "-", "no dispersion, not '> timeout'"
    assert "disp. % = (max - min) / median" in lines[3], "the CLI's table says what its columns are"
    ax = analysis.bar_plot(table, "destination_networks", "ms", scale=1e3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "16"], "the point among lost tags keeps its place"
    assert analysis.LOST_TEXT in [t.get_text() for t in ax.texts]
    assert all(math.isfinite(v) for v in ax.get_ylim())


def test_a_delay_keeps_four_significant_digits_in_the_report_tables():
    # Latencies of microseconds in a table in ms: three decimals showed 11.360, 11.368 and 11.376 us all as 0.011,
    # beside a dispersion of 0.14 %; a 2.4 us DUT would read 0.002 (one digit).
    runs = runs_frame({1: [11.360e-6, 11.368e-6, 11.376e-6], 16: [2.449e-6] * 3, 64: [89.11] * 3}).rename(
        columns={"throughput_fps": "forward_typical_s"})
    runs["figure_keys"] = [("forward_typical_s",)] * len(runs)
    table = analysis.summarize_points(runs, "forward_typical_s")
    shown = analysis.styled(table, "forward_typical_s").data.set_index("destination_networks")
    assert list(shown.loc[1, ["min", "median", "max"]]) == ["0.01136", "0.01137", "0.01138"]
    assert shown.loc[16, "median"] == "0.002449" and shown.loc[64, "median"] == "89,110"


def test_a_tester_bound_delay_is_no_lower_bound_a_tester_bound_rate_is():
    # A tester that stalls, drops or adds its own delay holds a rate down (its throughput is a lower bound of the
    # DUT's) but raises a delay: a latency within reach of the tester's own floor is no "at least" figure.
    reasons = [["near tester latency floor"], [], []]
    rows = [{"experiment": "e", "destination_networks": 1, "repetition": i + 1, "forward_typical_s": v,
             "throughput_fps": f, "result.tester_bound_reasons": r, "sweep_keys": ("destination_networks",),
             "figure_keys": ("forward_typical_s", "throughput_fps")}
            for i, (v, f, r) in enumerate(zip([10e-6, 12e-6, 14e-6], [100.0, 120.0, 140.0], reasons, strict=True))]
    runs = pd.DataFrame(rows)
    delay = analysis.summarize_points(runs, "forward_typical_s").iloc[0]
    assert delay["tester_bound"] == 1 and not delay["median_lower_bound"]
    assert "tester-bound: near tester latency floor: rep 1" in delay["why"]
    assert analysis.summarize_points(runs, "throughput_fps").iloc[0]["median_lower_bound"]
    assert "lower bound" not in analysis.figure_heading(analysis.summarize_points(runs, "forward_typical_s"),
                                                        "forward_typical_s")


def test_every_report_that_explains_tester_bound_names_each_reason():
    """The reports' own words for a tester-bound repetition: each reason a procedure gives (trexlab.procedures.
    common.TrialRunner.tester_limits), not the three the first reports knew."""
    import nbformat

    for notebook in sorted((Path(__file__).parent.parent / "analysis").glob("*.ipynb")):
        text = " ".join(" ".join(cell.source.split()) for cell in nbformat.read(notebook, as_version=4).cells)
        if "tester-bound (" in text or "*tester-bound* when" in text:
            for reason in ("stretched", "receive backlog" if "*tester-bound* when" in text else "host backlog",
                           "steal", "10 %"):
                assert reason in text, f"{notebook.name} explains tester-bound without {reason!r}"


def test_each_method_line_as_measured_names_the_points_it_comes_from(tmp_path):
    """A method line carries inputs that differ from point to point (the offered load taken from each point's
    throughput, the tester ceiling): the report names the points each one comes from, or says it is every point's."""
    points = {"rate=a-1": 1000.0, "rate=b-2": 1000.0, "rate=c-3": 2500.0}
    spec = {"name": "x", "generator": "sim", "procedure": {"name": "latency"}}
    manifest = {"experiment": "x", "campaign": "c-1", "spec": spec,
                "points": [{"point": p, "index": i, "values": {}} for i, p in enumerate(points)]}
    (tmp_path / "campaign.json").write_text(json.dumps(manifest))
    for point, rate in points.items():
        (tmp_path / point).mkdir()
        (tmp_path / point / "summary.json").write_text(json.dumps({"method": {"method": "RFC 8219 latency",
                                                                              "rate": rate}}))
    lines = [line for line in analysis.method_disclosure(tmp_path).splitlines() if "as measured" in line]
    known = "\\; no tester ceiling known"
    assert lines == [f"- as measured at points `rate=a-1`, `rate=b-2`: RFC 8219 latency\\; offered load 1\\,000 fps"
                     f"{known}",
                     f"- as measured at point `rate=c-3`: RFC 8219 latency\\; offered load 2\\,500 fps{known}"], lines
    (tmp_path / "rate=c-3" / "summary.json").write_text(json.dumps({"method": {"method": "RFC 8219 latency",
                                                                                "rate": 1000.0}}))
    lines = [line for line in analysis.method_disclosure(tmp_path).splitlines() if "as measured" in line]
    assert lines == [f"- as measured at every point (3): RFC 8219 latency\\; offered load 1\\,000 fps{known}"], lines


def test_a_parameter_loaded_as_float_beside_a_campaign_without_it_is_the_same_integer():
    """A campaign's integer parameter reads 4550.0 where it was loaded with a campaign lacking it (the column is
    float then); compared with a campaign loaded alone (4550), the two were measured alike, not otherwise."""
    alone = pd.DataFrame({"provenance.procedure": ["rfc2544"], "provenance.params.resolution": [4550]})
    beside = pd.DataFrame({"provenance.procedure": ["rfc2544"] * 2, "provenance.params.resolution": [4550.0, 4550.0]})
    assert analysis.measured_otherwise(alone, beside) is None
    other = beside.assign(**{"provenance.params.resolution": [4550.5, 4550.5]})
    assert "resolution 4550 in A, 4550.5 in B" in analysis.measured_otherwise(alone, other)


@pytest.mark.parametrize(("figure", "value", "text"), [
    ("throughput_fps", 40173.8, "40,174"), ("forward_tags_lost_or_late", 3.0, "3"),
    ("download_tcp_throughput_bps", 105_923_456.7, "105,923,457"), ("bdp_bytes", 65536.0, "65,536"),
    ("download_transfer_time_ratio", 1.23456, "1.235"), ("forward_typical_s", 1.234567e-4, "0.1235")])
def test_a_count_is_written_whole_and_a_ratio_or_a_delay_is_not(figure, value, text):
    """A count of tags, bytes or bits per second read '3.000' and '105,923,456.700' in reports."""
    shown_as = analysis.figure_format(figure)
    scaled = value * analysis.figure_scale(figure)
    assert (shown_as(scaled) if callable(shown_as) else shown_as.format(scaled)) == text


def sim_latency_campaign(tmp_path, name, capacity, latency_base, **traffic):
    """A CI-like SIIT latency campaign on the sim: each point's throughput first, then latency at its median. The
    sim delays every frame by latency_base exactly (no spread), so each set-up's latency is known beforehand."""
    spec = {"name": name, "generator": "sim",
            "generator_options": {"capacity": capacity, "latency_base": latency_base, "latency_spread": 0},
            "traffic": {"frame_size": [64, 64], "directions": "bidirectional", "receive_tail": 0, **traffic},
            "procedure": {"name": "latency", "params": {
                "rate": {"from": "throughput", "params": {"max_rate": 1e6, "resolution": 5000, "trial_duration": 1}},
                "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}},
            "sweep": {"traffic.destination_networks": [1, 2]}, "repetitions": 1}
    return Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).run()["campaign"]


def test_the_dual_dut_latency_report_sets_figs_12_and_13_beside_the_throughput_they_were_measured_at(tmp_path):
    # Lencse & Szilagyi 2024, Figs. 12-13: typical latency forward and reverse of each single DUT and of both
    # together, which no report showed (the SIIT campaigns measured throughput only, Fig. 11). Each set-up's delay
    # is known: NAT64 10 us, NAT46 15 us, dual 20 us; its throughput rate 400, 300 and 200 kfps.
    nat64 = sim_latency_campaign(tmp_path, "siit-single-dut-latency", 400000, 10e-6, frame_size=[84, 64],
                                 ip_version=[6, 4])
    nat46 = sim_latency_campaign(tmp_path, "siit-single-dut-nat46-latency", 300000, 15e-6, frame_size=[64, 84],
                                 ip_version=[4, 6])
    dual = sim_latency_campaign(tmp_path, "siit-dual-dut-latency", 200000, 20e-6)
    text = render(dual).read_text()
    assert "Traceback" not in text and "No campaign of" not in text
    assert Path(nat64).name in text and Path(nat46).name in text, "the single-DUT campaigns beside, with their method"
    sections = re.split(r"<h2[^>]*>", text)
    def section(title):
        found = [s for s in sections if s.startswith(title)]
        assert len(found) == 1, f"one section {title!r}"
        return found[0]
    # Each delay as every latency figure reads it: the upper edge of its histogram bucket (Latency.percentile).
    single64, single46, both = (Latency.from_delays([delay]).percentile(50) for delay in (10e-6, 15e-6, 20e-6))
    for title in ("Fig. 12: typical latency, forward", "Fig. 13: typical latency, reverse",
                  "Worst-case latency (99.9th percentile), forward", "Worst-case latency (99.9th percentile), reverse"):
        part = section(title)
        # Medians in ms, each set-up's own delay at both points; the ratios dual / single of the medians.
        # Median, min and max alike (every frame delayed alike), at both points.
        counts = {part.count(f">{analysis.significant(delay * 1e3)}<") for delay in (single64, single46, both)}
        assert counts == {6}, title
        assert part.count(f">{both / single64:.3f}<") == part.count(f">{both / single46:.3f}<") == 2, title
        # Both translators in a row: the dual set-up's delay against the sum of the single ones, 20 / (10 + 15).
        assert part.count(f">{both / (single64 + single46):.3f}<") == 2, title
        assert "data:image/png" in part, f"{title}: plotted"
    # The rate each point's latency was measured at: its throughput median, measured first in the same campaign.
    ratios = [float(r) for r in re.findall(r">(0\.\d{3})<", section("Offered load: each point"))]
    assert len(ratios) == 4 and all(math.isclose(r, 0.5, abs_tol=0.05) for r in ratios[0::2]), ratios
    assert all(math.isclose(r, 2 / 3, abs_tol=0.05) for r in ratios[1::2]), ratios


def test_the_cli_summary_writes_the_figure_the_report_writes():
    """The CLI's and a campaign's summary table wrote every statistic to 6 significant digits: a 10GbE line rate of
    14,880,952 frames/s read '1.4881e+07' (14,881,000), its median 14,880,951.5 as well, where the report writes
    '14,880,952' and '14,880,951': two figures for one result. Counts (frames/s, bit/s, bytes) are whole in both, and
    the adaptive rule's interval, in the method line, no longer rounds its width away."""
    from trexlab.plan.adaptive import rule_text
    from trexlab.plan.repetition import summary_lines
    from trexlab.results.stats import summarize

    values = [14880951.0, 14880952.0, 14880950.0, 14880953.0]
    summary = summarize(values)
    [row] = [line for line in summary_lines({"throughput_fps": summary}) if line.startswith("throughput_fps")]
    report = analysis.styled(pd.DataFrame([{"experiment": "e", **summary}]), "throughput_fps").data.iloc[0]
    assert row.split()[4:7] == [report["median"], report["min"], report["max"]] == ["14,880,952", "14,880,950",
                                                                                    "14,880,953"], row
    rule = {"min": 5, "max": 50, "median_ci_percent": 1, "confidence": 0.95, "reached": 6, "stopped": "maximum "
            "reached", "intervals": {"throughput_fps": {"median": 14880951.5, "low": 14880000.0, "high": 14881500.0,
                                                        "ranks": [1, 6], "confidence": 0.969, "width_percent": 0.01}}}
    assert "median 14,880,952, CI 14,880,000..14,881,500" in rule_text(rule), rule_text(rule)
    # A delay keeps its digits, in its own unit (s): the CLI's table is in the figures' units.
    [row] = [line for line in summary_lines({"forward_typical_s": summarize([2.4e-6])}) if "forward" in line]
    assert row.split()[4] == "2.4e-06"


def test_a_ratio_of_a_lower_bound_median_is_marked_as_the_bound_it_is():
    """A dual-DUT median that a tester-bound repetition may hold down is a lower bound (marked ≥), and so is its
    ratio to an exact single-DUT median; over a lower-bound single-DUT median the ratio is an upper bound; over two
    lower bounds it is neither. The ratio was printed as a plain number beside the marked medians."""
    def runs(values, bound):
        return runs_frame({1: values}).assign(**{"result.tester_bound_reasons": [["stretched trials"] if bound
                                                                                 else [] for _ in values]})

    exact, bound = runs([100.0, 100.0, 100.0], False), runs([100.0, 100.0, 100.0], True)
    half, half_bound = runs([50.0, 50.0, 50.0], False), runs([50.0, 50.0, 50.0], True)
    cells = []
    for single, dual in ((exact, half_bound), (bound, half), (bound, half_bound), (exact, half)):
        table = analysis.setups_beside({"NAT64": single}, dual, "throughput_fps", by="destination_networks")
        cells.append(analysis.styled_setups(table, "throughput_fps").data["ratio dual / NAT64"].iloc[0])
    assert cells == [html.escape("≥ 0.500"), html.escape("≤ 0.500"), "- (both medians lower bounds)", "0.500"], cells


def test_the_paper_table_and_the_setups_table_say_how_many_repetitions_each_figure_rests_on():
    """Lencse 2021's layout (median, min, max, disp.) and Figs. 11-13's table gave no count: with adaptive
    repetitions (repetitions.until) each point stops at its own, and a reader could not tell 5 from 50."""
    runs = runs_frame({1: [100.0, 110.0, 90.0, 95.0, 105.0], 16: [80.0, 82.0, 81.0]})
    table = analysis.paper_table(analysis.summarize_points(runs, "throughput_fps"), "destination_networks")
    assert list(table.loc["repetitions"]) == [5, 3] and list(table.index)[:5] == [
        "median", "min", "max", "disp. (%)", "repetitions"]
    setups = analysis.setups_beside({"NAT64": runs}, runs_frame({1: [50.0] * 6, 16: [40.0] * 7}), "throughput_fps",
                                    by="destination_networks")
    shown = analysis.styled_setups(setups, "throughput_fps").data
    assert list(shown["NAT64_count"]) == ["5", "3"] and list(shown["dual_count"]) == ["6", "7"]


def test_the_method_line_writes_its_rates_as_the_tables_write_them():
    """The offered load a latency was measured at (a throughput median), the tester ceiling (a self-test's figure) and
    the first load of a frame loss rate curve read '1.4881e+07 fps' in the method line beside a table that writes the
    same figure '14,880,952': a ceiling 'at least 1.4881e+07' claimed 48 fps its self-test never carried."""
    from trexlab.plan.repetition import method_line

    line = method_line({"method": "RFC 8219 latency", "rate": 14880951.5, "rate_source": "given",
                        "tester_ceiling": 14880952.0})
    shown = analysis.shown(14880951.5, analysis.figure_format("throughput_fps"))
    assert f"offered load {shown} fps (given" in line and "tester ceiling 14,880,952 fps" in line, line
    line = method_line({"method": "x", "tester_ceiling": 14880952.0, "tester_ceiling_at_least": True,
                        "offered_loads": {"first_fps": 14880952.0, "step_percent": 10}})
    assert "tester ceiling at least 14,880,952 fps" in line and "offered loads from 14,880,952 fps down" in line, line


def test_fig_11s_bars_take_a_censored_minimum_down_to_zero_as_every_bar_plot_does():
    """A set-up whose repetition ended below min_rate has a minimum '< 40': compare() made it NaN, so Figs. 11-13's
    table read '-' as for a point not measured, and setups_plot drew no lower error bar (NaN filled with 0 as the
    whisker's length), as if no repetition lay below the median; bar_plot takes it down to 0: 'somewhere below'."""
    import matplotlib

    matplotlib.use("Agg")
    single = runs_frame({1: [100.0, 110.0, 90.0]})
    dual = runs_frame({1: [None, 55.0, 50.0]}).assign(**{"result.headline_below.throughput_fps": [40.0, None, None]})
    table = analysis.setups_beside({"NAT64": single}, dual, "throughput_fps", by="destination_networks")
    assert table["dual_min"].iloc[0] == "< 40", "kept as every table shows it, not made NaN"
    assert analysis.styled_setups(table, "throughput_fps").data["dual_min"].iloc[0] == html.escape("< 40"), "not '-'"
    ax = analysis.setups_plot(table, ["NAT64", "dual"], "destination_networks", "throughput_fps",
                              {"NAT64": "#4C72B0", "dual": "#DD8452"})
    whiskers = [segment for container in ax.containers if hasattr(container, "has_yerr")
                for segment in container.lines[2][0].get_segments()]
    bottoms = sorted(min(y for _, y in segment) for segment in whiskers)
    assert bottoms == [0.0, 90.0], bottoms  # the dual set-up's from 0, the single one's from its minimum


def test_the_frame_loss_rate_curve_is_in_the_cli_summary_and_the_campaign_report_alike(tmp_path, capsys):
    # RFC 2544 section 26.3 reports the frame loss rate per offered load (its X axis in percent of the media's
    # maximum); `trexlab flr` printed only the headline (the first load's loss) and the report no curve at all.
    from trexlab import cli
    sim = ["--generator", "sim", "--generator-opt", "capacity=650000", "--max-rate", "1e6", "--trial-duration", "1"]
    assert cli.main(["flr", *sim, "--results", str(tmp_path / "cli"),
                     "--ceilings", str(tmp_path / "ceilings.json")]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    result = json.loads((tmp_path / "cli" / "rep-001" / "result.json").read_text())
    assert len(result["points"]) > 2 and {"forward", "reverse"} <= set(result["points"][0]["directions"])

    def cells(point):
        return [f"{point['offered_load']:{WHOLE}}", f"{point['offered_load_percent']:.4g}",
                f"{point['frame_loss_rate_percent']:.4g}", *(f"{loss:.4g}" for loss in point["directions"].values())]

    rows = [line.split() for line in printed.splitlines()]
    for point in result["points"]:  # each load's row, in the order measured
        assert cells(point) + ["no"] in rows, (cells(point), printed)
    assert [row[0] for row in rows if row and row[-1] == "no"] == [cells(p)[0] for p in result["points"]]
    spec = {"name": "flr-curve", "generator": "sim", "generator_options": {"capacity": 650000,
                                                                            "capacity_noise": 0.05},
            "traffic": {"frame_size": [64, 64], "directions": "bidirectional"},
            "procedure": {"name": "flr", "params": {"max_rate": 1e6, "trial_duration": 1}}, "repetitions": 4}
    campaign = Campaign(experiment.validate(spec), tmp_path / "campaigns").run()["campaign"]
    report = analysis.loss_curves(campaign)
    # One table per point over its repetitions, not one per repetition (20 tables a point at the default count).
    assert report.count("**Frame loss rate per offered load") == 1 and "4 repetitions" in report, report
    stored = [json.loads(path.read_text()) for path in sorted(Path(campaign).glob("*/rep-*/result.json"))]
    assert len(stored) == 4
    by_load: dict = {}
    for result in stored:
        for point in result["points"]:
            by_load.setdefault(point["offered_load"], []).append(point)
    assert len({tuple(p["frame_loss_rate_percent"] for p in r["points"]) for r in stored}) > 1, "no spread to see"
    for load, points in by_load.items():  # the median of an even count is the mean of the middle two
        losses = sorted(point["frame_loss_rate_percent"] for point in points)
        middle = (losses[(len(losses) - 1) // 2] + losses[len(losses) // 2]) / 2
        row = [f"{load:{WHOLE}}", f"{points[0]['offered_load_percent']:.4g}", str(len(points)),
               f"{middle:.4g}", f"{losses[0]:.4g}", f"{losses[-1]:.4g}"]
        assert "| " + " | ".join(analysis.text(cell) for cell in row) + " | " in report, (row, report)


def test_a_campaign_whose_spec_leaves_repetitions_out_planned_the_default_as_one_that_says_20():
    # compare() refused a single-DUT campaign of a spec without `repetitions` (20 by default) beside a dual-DUT one
    # whose spec says 20, as measured with other repetitions (null against 20); sibling_campaigns took the default.
    from trexlab.spec.schema import DEFAULT_REPETITIONS

    implicit = pd.DataFrame([{"provenance.spec.name": "a", "provenance.generator.generator": "sim"}])
    explicit = implicit.assign(**{"provenance.spec.repetitions": DEFAULT_REPETITIONS})
    assert analysis.with_setup(implicit)["provenance.setup.repetitions"].tolist() == [DEFAULT_REPETITIONS]
    assert analysis.measured_otherwise(analysis.with_setup(implicit), analysis.with_setup(explicit),
                                       (analysis.SETUP,)) is None
    cli_run = pd.DataFrame([{"provenance.argv": "[]", "provenance.generator.generator": "sim"}])
    assert analysis.with_setup(cli_run)["provenance.setup.repetitions"].tolist() == [None], "no campaign, no plan"
