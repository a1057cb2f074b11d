"""The HTTP download tables: download time per DUT impairment in the paper's layout, and side by side with
the RFC 2544 figures other experiments measured under the same impairment (Lencse et al. 2020, Tables I-IV)."""

import math
import warnings

import pandas as pd
import pytest

from trexlab.results import analysis

IMPAIRMENT = "provenance.spec.dut.impairment."


def http_runs(times_by_loss: dict) -> pd.DataFrame:
    rows = [{"experiment": "http-download-loss", "loss_percent": loss, f"{IMPAIRMENT}loss_percent": loss,
             f"{IMPAIRMENT}directions": ["reverse"], "repetition": i + 1, "download_time_s": t,
             "sweep_keys": ("loss_percent",), "figure_keys": ("download_time_s",)}
            for loss, times in times_by_loss.items() for i, t in enumerate(times)]
    return pd.DataFrame(rows)


def rfc2544_runs() -> pd.DataFrame:
    """gaming-loss-tolerance: 0.01 % loss, swept over the loss tolerance (Table II and its 0.011 % run)."""
    rows = [{"experiment": "gaming-loss-tolerance", "loss_tolerance_percent": tol, f"{IMPAIRMENT}loss_percent": 0.01,
             "repetition": i + 1, "throughput_fps": fps, "sweep_keys": ("loss_tolerance_percent",),
             "figure_keys": ("throughput_fps",)}
            for tol, values in {0: [900, 1000, 1100], 0.011: [81_000, 81_274, 81_274]}.items()
            for i, fps in enumerate(values)]
    return pd.DataFrame(rows)


RUNS = http_runs({0: [89.10, 89.11, 89.13], 0.01: [89.11, 89.14, 89.15], 1: [180.6, 188.7, 197.5]})


def test_download_table_has_median_and_percentiles_per_impairment_in_order():
    table = analysis.download_table(RUNS)
    assert list(table.columns) == ["none", "loss 0.01 %", "loss 1 %"]
    assert list(table.index) == ["median (s)", "1st percentile (s)", "99th percentile (s)", "downloads"]
    assert table.loc["median (s)", "loss 1 %"] == 188.7
    # Nearest rank over 3 downloads: the 1st percentile is the fastest, the 99th the slowest.
    assert table.loc["1st percentile (s)", "loss 1 %"] == 180.6
    assert table.loc["99th percentile (s)", "none"] == 89.13


def test_side_by_side_joins_rfc2544_figures_of_the_same_dut_impairment():
    table = analysis.side_by_side(RUNS, rfc2544_runs()).set_index("DUT impairment")
    zero = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent=0.0]"
    tolerant = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent=0.011]"
    assert table.loc["loss 0.01 %", "download time median (s)"] == 89.14
    assert table.loc["loss 0.01 %", zero] == 1000 and table.loc["loss 0.01 %", tolerant] == 81_274
    assert math.isnan(table.loc["none", zero]) and math.isnan(table.loc["loss 1 %", tolerant])


def test_side_by_side_counts_rfc2544_repetitions_below_min_rate_as_observations_below_it():
    # Table II's zero-loss searches end below the minimum load (result.json: no figure, headline_below min_rate):
    # two of three here. Their median is "< 1000", as in every other table: left out, they made it 1,100.
    runs = rfc2544_runs().astype({"throughput_fps": object})
    zero = runs["loss_tolerance_percent"] == 0
    runs.loc[zero, "throughput_fps"] = [None, None, 1100]
    runs.loc[zero, "result.headline_below.throughput_fps"] = [1000, 1000, None]
    table = analysis.side_by_side(RUNS, runs).set_index("DUT impairment")
    column = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent=0.0]"
    assert table.loc["loss 0.01 %", column] == "< 1000"
    assert table.loc["loss 0.01 %", "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent=0.011]"] \
        == 81_274


def test_side_by_side_marks_a_rate_median_a_tester_bound_repetition_holds_down():
    """Only a tester-bound rate is a lower bound, and only at or below the median: the cell reads '≥ 81,274' as
    every other table would show it. A delay is not held down by the tester: its median stays a number."""
    runs = rfc2544_runs()
    runs["figure_keys"] = [("throughput_fps", "forward_typical_s")] * len(runs)
    runs["forward_typical_s"] = [1e-3, 2e-3, 3e-3] * 2
    # Tester-bound: the tolerant search's lowest result (below its median), the zero-loss one's highest (above).
    runs["result.tester_bound_reasons"] = [[], [], ["stretched trials"], ["stretched trials"], [], []]
    table = analysis.side_by_side(RUNS, runs).set_index("DUT impairment")
    rate = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent={}]"
    assert table.loc["loss 0.01 %", rate.format(0.011)] == f"{analysis.LOWER_BOUND_MARK}81,274"
    assert table.loc["loss 0.01 %", rate.format(0.0)] == 1000
    delay = "gaming-loss-tolerance: forward typical (ms) [loss_tolerance_percent={}]"
    assert table.loc["loss 0.01 %", delay.format(0.011)] == table.loc["loss 0.01 %", delay.format(0.0)] == 2.0


def test_side_by_side_leads_with_the_loss_free_rfc2544_figure_the_downloads_did_not_measure():
    """gaming-selective-throughput measures each every-Nth value with delay 0 too (nothing delayed): its loss-free
    throughput heads the selective-delay report's table, though no download ran without impairment there."""
    downloads = pd.DataFrame([{"experiment": "http-download-selective-delay", f"{IMPAIRMENT}delay_ms": 1000,
                               f"{IMPAIRMENT}selective_every_nth": nth, "repetition": 1, "download_time_s": t,
                               "sweep_keys": ("selective_every_nth",), "figure_keys": ("download_time_s",)}
                              for nth, t in ((100, 1.1), (10, 2.4))])
    searches = pd.DataFrame([{"experiment": "gaming-selective-throughput", f"{IMPAIRMENT}delay_ms": delay,
                              f"{IMPAIRMENT}selective_every_nth": nth, "repetition": 1, "throughput_fps": fps,
                              "sweep_keys": ("delay_ms", "selective_every_nth"), "figure_keys": ("throughput_fps",)}
                             for delay, nth, fps in ((0, 100, 7887.5), (0, 10, 6775), (1000, 100, 4550),
                                                     (1000, 10, 5662.5))])
    table = analysis.side_by_side(downloads, searches).set_index("DUT impairment")
    column = "gaming-selective-throughput: throughput (frames/s)"
    assert list(table.index) == ["none", "every 100th delay 1000 ms", "every 10th delay 1000 ms"]
    assert table.loc["none", column] == (7887.5 + 6775) / 2  # both loss-free points: their median
    assert math.isnan(table.loc["none", "download time median (s)"])
    assert table.loc["every 10th delay 1000 ms", column] == 5662.5
    # Without a loss-free RFC 2544 point, no such row.
    assert "none" not in set(analysis.side_by_side(downloads, searches[searches[f"{IMPAIRMENT}delay_ms"] > 0])
                             ["DUT impairment"])


def test_side_by_side_sets_each_experiment_beside_with_its_own_sweep_and_figures():
    """A results root holds RFC 2544 experiments of other sweeps and procedures: each one's columns are headed by
    its own sweep values and hold its own figures. Over all experiments' sweeps, the others' headings read
    'frame_size=nan', a column was left empty for every figure an experiment never measured, and pandas sorted
    NaN beside frame sizes (tuples) by a fallback it deprecates (a Pandas4Warning at trexlab's call)."""
    sizes = pd.DataFrame([{"experiment": "latency-frame-sizes", "frame_size": size, "repetition": 1,
                           "forward_typical_s": delay, "sweep_keys": ("frame_size",),
                           "figure_keys": ("forward_typical_s",)} for size, delay in (((64, 64), 1e-3),
                                                                                     ((1518, 1518), 2e-3))])
    table = analysis.side_by_side(RUNS, pd.concat([sizes, rfc2544_runs()], ignore_index=True))
    rate = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent={}]"
    delay = "latency-frame-sizes: forward typical (ms) [frame_size={}]"
    assert list(table.columns[4:]) == [delay.format((64, 64)), delay.format((1518, 1518)), rate.format(0.0),
                                       rate.format(0.011)]
    table = table.set_index("DUT impairment")
    assert table.loc["none", delay.format((1518, 1518))] == 2 and table.loc["loss 0.01 %", rate.format(0.0)] == 1000
    assert math.isnan(table.loc["none", rate.format(0.0)]) and math.isnan(table.loc["loss 1 %", delay.format((64, 64))])


def test_side_by_side_without_rfc2544_campaigns_is_the_download_time_alone():
    table = analysis.side_by_side(RUNS, pd.DataFrame())
    assert list(table.columns) == ["DUT impairment", "download time median (s)", "download time 1st percentile (s)",
                                   "download time 99th percentile (s)"]


@pytest.mark.parametrize(("settings", "label"), [
    ({}, "none"), ({"loss_percent": 0.1}, "loss 0.1 %"), ({"delay_ms": 1000}, "delay 1000 ms"),
    ({"delay_ms": 100, "selective_every_nth": 100}, "every 100th delay 100 ms"),
    ({"delay_ms": 10, "jitter_ms": 2}, "delay 10 ± 2 ms"), ({"loss_every_nth": 1000}, "every 1000th lost"),
])
def test_impairment_labels(settings, label):
    row = pd.DataFrame([{f"{IMPAIRMENT}{k}": v for k, v in settings.items()} | {"x": 1}])
    assert analysis.impairment_labels(row).iloc[0] == label


def test_side_by_side_refuses_one_median_over_campaigns_measured_otherwise():
    # Every campaign under the results root is read: a CI-scale campaign (1 s trials) beside a full one (60 s).
    runs = rfc2544_runs()
    runs["campaign"] = ["c-ci", "c-full", "c-full"] * 2
    runs["provenance.params.trial_duration"] = [1.0, 60.0, 60.0] * 2
    with pytest.raises(ValueError, match=r"^gaming-loss-tolerance, impairment loss 0\.01 %, loss_tolerance_percent=0"
                                         r"\.0: campaigns c-ci and c-full measured differently \(params\.trial_duration"
                                         r" 1\.0 in c-ci, 60\.0 in c-full\)"):
        analysis.side_by_side(RUNS, runs)
    runs["provenance.params.trial_duration"] = 60.0
    assert len(analysis.side_by_side(RUNS, runs)) == 3, "campaigns measured alike are one figure"


def test_the_rfc2544_figures_beside_the_downloads_come_with_their_method(tmp_path):
    """The side-by-side table prints another campaign's RFC 2544 figures: their method (tolerance, durations,
    what falls short of RFC 2544) is disclosed with them, for the campaigns the table shows and no other."""
    import json

    from trexlab.plan.campaign import Campaign
    from trexlab.spec import experiment

    def campaign(name, tolerance):
        spec = {"name": name, "generator": "sim", "generator_options": {"capacity": 100000},
                "traffic": {"receive_tail": 0},
                "procedure": {"name": "throughput", "params": {"max_rate": 200000, "trial_duration": 1,
                                                               "loss_tolerance_percent": tolerance}},
                "repetitions": 1}
        return Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).run()["campaign"]

    shown, other = campaign("gaming-loss-tolerance", 0.011), campaign("mlrsearch-ndr-pdr", 0)
    table = analysis.side_by_side(RUNS, rfc2544_runs())
    text = analysis.disclosure_beside([shown, other], table).replace("\\", "")  # Markdown's escapes
    assert text.startswith("## How the figures beside these were measured\n\n## gaming") and "mlrsearch" not in text
    assert "loss tolerance 0.011 %" in text and "trial duration 1 s (RFC 2544: at least 60 s)" in text
    assert analysis.disclosure_beside([other], table) == ""


def test_a_download_time_is_disclosed_with_its_file_size_congestion_control_and_frames(tmp_path):
    """What a download time depends on besides the DUT: the file's size, the TCP congestion control (reno here
    where the paper had CUBIC) and whether the frames the DUT's impairment counts are wire-sized. The method line
    says them, and no tester ceiling (no tester takes part); the report's disclosure shows the spec's endpoints
    block."""
    import json

    from trexlab.plan.repetition import method_line, method_of
    from trexlab.procedures import http_download

    download = http_download.Download("http://198.19.0.3/file", 8 << 30, {"time_total": 90.5}, "reno", False)
    line = method_line(method_of(http_download.DownloadResult(http_download.Params(), download).to_dict()))
    assert "a file of 8,589,934,592 bytes, TCP congestion control reno" in line and "tester ceiling" not in line
    # How the frames the DUT's impairment counts were cut (roles/tcp_endpoints), and nothing where a run's
    # endpoints did not record it.
    assert "the server's TCP sends frames of at most the MTU (one segment per packet)" in line
    kept = http_download.Download("http://198.19.0.3/file", 8 << 30, {"time_total": 90.5}, "reno", True)
    assert "super-frames of up to 64 KB" in method_line(method_of(http_download.DownloadResult(
        http_download.Params(), kept).to_dict()))
    older = http_download.Download("http://198.19.0.3/file", 8 << 30, {"time_total": 90.5}, "reno")
    assert "TSO" not in method_line(method_of(http_download.DownloadResult(http_download.Params(), older).to_dict()))
    campaign = tmp_path / "c-1"
    campaign.mkdir()
    spec = {"name": "http-download-loss", "procedure": {"name": "http_download"},
            "endpoints": {"http_file_mib": 8192, "congestion_control": "reno"}}
    (campaign / "campaign.json").write_text(json.dumps({"experiment": spec["name"], "campaign": "c-1", "spec": spec,
                                                        "points": []}))
    disclosed = analysis.method_disclosure(campaign).replace("\\", "")  # Markdown's escapes
    assert '- TCP endpoints (client, server): {"congestion_control": "reno", "http_file_mib": 8192}' in disclosed


def test_a_pandas_warning_at_a_call_in_trexlab_fails_the_test():
    """pyproject.toml's filterwarnings: pandas attributes its PerformanceWarning to the first caller outside pandas,
    here trexlab.results.analysis (side_by_side adds a column to the table it is given), which the filter makes an
    error. The inserts that fragment the table are this module's, not trexlab's: a warning only (ignored here)."""
    fragmented = rfc2544_runs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)  # this module's inserts: not trexlab's code
        for i in range(101):  # pandas warns at an insert into more than 100 blocks
            fragmented[f"result.extra_{i}"] = float(i)
    with pytest.raises(pd.errors.PerformanceWarning, match="highly fragmented"):
        analysis.side_by_side(RUNS, fragmented)
    assert len(analysis.side_by_side(RUNS, fragmented.copy())) == 3  # copy() consolidates the blocks


def test_the_rfc2544_campaigns_of_a_results_root_side_by_side_in_one_unfragmented_table(tmp_path):
    """campaigns_beside reads every other campaign of the download campaign's results root: RFC 2544 campaigns of
    several procedures and sweeps, whose columns differ (175 here, 257 for the VM lab's three). load_campaigns set
    each campaign's columns one at a time and concatenated the campaigns' tables, which left 110 blocks of other
    types than text here (the VM lab's three: 115): above pandas' 100, so side_by_side's impairment column raised
    its PerformanceWarning, an error under the project's filterwarnings (pyproject.toml)."""
    import json

    from trexlab.plan.campaign import Campaign
    from trexlab.spec import experiment

    def campaign(name, procedure, params, sweep):
        spec = {"name": name, "generator": "sim", "generator_options": {"capacity": 100000, "capacity_noise": 0.01},
                "traffic": {"frame_size": [64, 64], "directions": "bidirectional", "receive_tail": 0},
                "procedure": {"name": procedure, "params": params}, "sweep": sweep,
                "repetitions": 2}
        return Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).run()["campaign"]

    frame_sizes = {"traffic.frame_size": [[64, 64], [1518, 1518]]}
    campaign("gaming-loss-tolerance", "throughput", {"max_rate": 200000, "resolution": 5000, "trial_duration": 1},
             {"procedure.params.loss_tolerance_percent": [0, 0.011]})
    campaign("latency-frame-sizes", "latency", {"rate": 50000, "trial_duration": 1, "tagged_frames": 1000,
                                                "tag_delay": 0.5}, frame_sizes)
    campaign("pdv-frame-sizes", "pdv", {"rate": 50000, "trial_duration": 1}, frame_sizes)
    campaign("flr-frame-sizes", "flr", {"max_rate": 200000, "trial_duration": 1}, frame_sizes)
    runs = analysis.load_campaigns(tmp_path)
    assert runs.groupby("experiment").size().to_dict() == {
        "flr-frame-sizes": 4, "gaming-loss-tolerance": 4, "latency-frame-sizes": 4, "pdv-frame-sizes": 4}
    beside = analysis.side_by_side(RUNS, runs).set_index("DUT impairment").loc["none"]
    shown = [column for column, value in beside.items() if ": " in column and value == value]  # not NaN
    # Each campaign's medians (the procedures' own figures, per point) are beside the downloads without impairment.
    assert sorted({column.split(": ")[0] for column in shown}) == sorted(runs["experiment"].unique())
    assert len(shown) == sum(len(analysis.figure_columns(group)) * group["point"].nunique()
                             for _, group in runs.groupby("experiment"))


def test_the_download_table_says_how_many_downloads_each_column_rests_on_and_what_its_percentiles_are():
    """Table I's layout gave median, 1st and 99th percentile, and not of how many downloads: a failed one (no time)
    was left out unseen, and of 20 downloads the '1st percentile' is the fastest one (nearest rank), which the
    http-download report did not say."""
    runs = http_runs({0: [89.10, 89.11, 89.13], 1: [180.6, None, 197.5]})
    table = analysis.download_table(runs)
    assert list(table.index) == [*analysis.DOWNLOAD_ROWS, "downloads", "failed (left out)"]
    assert list(table.loc["downloads"]) == [3, 2] and list(table.loc["failed (left out)"]) == [0, 1]
    assert list(analysis.download_table(RUNS).index) == [*analysis.DOWNLOAD_ROWS, "downloads"], "none failed"
    note = analysis.percentile_note([20, 20, 3], "downloads")
    assert "nearest rank" in note
    assert ("of 20 downloads the 1st percentile is the 1st smallest (the minimum), the 99th the 20th smallest (the "
            "maximum)") in note and "of 3 downloads" in note
    assert "of 200 downloads the 1st percentile is the 2nd smallest, the 99th the 198th smallest" in \
        analysis.percentile_note([200], "downloads")


def with_server_tcp(runs: pd.DataFrame, counters: list) -> pd.DataFrame:
    """runs with each download's server TCP counters as load_campaigns flattens result.json's server_tcp: a dict of
    trexlab.testbed.endpoints.TCP_COUNTERS (segments sent, retransmitted, D-SACK duplicates, timeouts), or None
    where the download did not read them (its columns NaN)."""
    from trexlab.testbed.endpoints import TCP_COUNTERS

    return runs.assign(**{f"result.server_tcp.{key}": [math.nan if c is None else c[i] for c in counters]
                          for i, key in enumerate(TCP_COUNTERS)})


def test_the_download_table_shows_the_server_tcp_counters_beside_the_time_and_how_many_downloads_they_rest_on():
    """A download time alone does not say that the DUT's loss or delay reached the transfer (on a busy host it is
    as long without it); the server's TCP counters over each download do (http_download's server_tcp). The table
    gave the time only: now each column has, per counter, the median (1st-99th percentile) over the downloads that
    recorded them, written whole (stats.WHOLE) but a median halfway between two counts, and a count row where they
    rest on other downloads than the times."""
    runs = with_server_tcp(RUNS, [(46_000, 0, 0, 0), (46_100, 2, 2, 0), (46_050, 1, 0, 1),
                                  (46_010, 40, 1, 0), (46_020, 46, 2, 0), None,
                                  (46_350, 457, 3, 1), (46_300, 500, 4, 2), (46_400, 401, 2, 3)])
    table = analysis.download_table(runs)
    assert list(table.index) == [*analysis.DOWNLOAD_ROWS, "downloads", analysis.SERVER_TCP_COUNT,
                                 *analysis.SERVER_TCP_ROWS]
    retransmitted, timeouts = analysis.SERVER_TCP_ROWS[1], analysis.SERVER_TCP_ROWS[3]
    assert retransmitted == "retransmitted segments: median (1st–99th percentile)"
    assert table.loc[retransmitted, "loss 1 %"] == "457 (401–500)"
    assert table.loc[timeouts, "loss 1 %"] == "2 (1–3)"
    assert table.loc[analysis.SERVER_TCP_ROWS[0], "loss 1 %"] == "46,350 (46,300–46,400)", "whole, as every count"
    # Two downloads of 0.01 % recorded them: the median is the mean of the two middle ones.
    assert table.loc[retransmitted, "loss 0.01 %"] == "43 (40–46)"
    assert list(table.loc[analysis.SERVER_TCP_COUNT]) == [3, 2, 3] and list(table.loc["downloads"]) == [3, 3, 3]
    halves = with_server_tcp(http_runs({1: [180.6, 188.7]}), [(10, 1, 0, 0), (10, 1, 0, 1)])
    table = analysis.download_table(halves)
    assert table.loc[timeouts, "loss 1 %"] == "0.5 (0–1)", "half the downloads met a timeout: not '0'"
    assert analysis.SERVER_TCP_COUNT not in table.index, "every download's counters: 'downloads' counts them"
    # A point none of whose downloads recorded them: '-'; a campaign none of whose did (written before they were
    # kept): the times alone.
    none = with_server_tcp(http_runs({0: [89.1], 1: [180.6]}), [None, (10, 1, 0, 0)])
    assert analysis.download_table(none).loc[retransmitted].tolist() == ["-", "1 (1–1)"]
    assert list(analysis.download_table(RUNS).index) == [*analysis.DOWNLOAD_ROWS, "downloads"]


def download_campaign(root, notebook: str | None = "analysis/http-download.ipynb"):
    """An http-download-loss campaign written as one is under root: loss 0 and 1 %, three downloads each (the lossy
    point's second failed: no time), each with the server's TCP counters but the lossless point's first; its spec
    names the notebook given, or none (the campaign report, analysis/report.ipynb)."""
    import json

    campaign = root / "http-download-loss" / "c-1"
    spec = {"name": "http-download-loss", "procedure": {"name": "http_download"}, "repetitions": 3,
            "sweep": {"dut.impairment.loss_percent": [0, 1]}} | ({"notebook": notebook} if notebook else {})
    points = [{"point": f"p-{i}", "values": {"dut.impairment.loss_percent": loss}} for i, loss in enumerate((0, 1))]
    for point, times in zip(points, ([89.10, 89.11, 89.13], [180.6, None, 197.5]), strict=True):
        loss = point["values"]["dut.impairment.loss_percent"]
        for k, time in enumerate(times, start=1):
            run = campaign / point["point"] / f"rep-{k:03d}"
            run.mkdir(parents=True)
            (run / "provenance.json").write_text(json.dumps({
                "procedure": "http_download", "point": point["point"], "repetition": k,
                "sweep": {"dut.impairment.loss_percent": loss},
                "spec": {"dut": {"impairment": {"loss_percent": loss}}}}))
            counters = {"segments_sent": 700 + k, "retransmitted_segments": 10 * loss + k,
                        "duplicate_segments_reported": 0, "retransmission_timeouts": loss}
            (run / "result.json").write_text(json.dumps({"headline": {"download_time_s": time},
                                                         "server_tcp": None if k == 1 and not loss else counters}))
    (campaign / "campaign.json").write_text(json.dumps({"experiment": spec["name"], "campaign": "c-1", "spec": spec,
                                                        "points": points}))
    return campaign


def test_the_http_download_report_shows_the_counts_and_what_its_percentiles_are(tmp_path):
    """The report (analysis/http-download.ipynb, rendered elsewhere only on the VM lab) over a campaign written as
    one is: its table's counts whole, and the percentiles' ranks said under it; the server's TCP counters beside
    the times, and what they are."""
    import json

    from trexlab.results.report import render

    campaign = download_campaign(tmp_path)
    # An RFC 2544 campaign under the same root and impairment: its throughput beside the downloads, written whole.
    beside = tmp_path / "gaming-loss-tolerance" / "c-2"
    for k, fps in enumerate((81273.0, 81274.0, 81275.0), start=1):
        run = beside / "p-0" / f"rep-{k:03d}"
        run.mkdir(parents=True)
        (run / "provenance.json").write_text(json.dumps({"procedure": "throughput", "point": "p-0", "repetition": k,
                                                         "spec": {"dut": {"impairment": {"loss_percent": 1}}}}))
        (run / "result.json").write_text(json.dumps({"headline": {"throughput_fps": fps}}))
    (beside / "campaign.json").write_text(json.dumps({
        "experiment": "gaming-loss-tolerance", "campaign": "c-2", "points": [{"point": "p-0", "values": {}}],
        "spec": {"name": "gaming-loss-tolerance", "procedure": {"name": "throughput"}}}))
    text = render(campaign).read_text()
    assert "Traceback" not in text and "Download time (s) per DUT impairment" in text
    assert ">81,274<" in text and "81,274.000" not in text, "the RFC 2544 figure beside, as every table writes it"
    assert ">downloads</th>" in text and ">failed (left out)</th>" in text and ">3.000<" not in text
    assert "of 3 downloads the 1st percentile is the 1st smallest (the minimum)" in text
    assert "of 2 downloads the 1st percentile" in text
    # Beside the times, the server's TCP counters per point (the lossless point's first download did not record
    # them), and what they are.
    assert ">retransmitted segments: median (1st–99th percentile)</th>" in text
    assert ">2.5 (2–3)<" in text and ">12 (11–13)<" in text
    assert ">downloads with server TCP counters</th>" in text and "Server TCP counters</strong>" in text


def test_the_campaign_report_shows_a_download_campaigns_server_tcp_counters_per_point(tmp_path, monkeypatch):
    """An http_download campaign whose spec names no notebook is reported by analysis/report.ipynb: it showed the
    download time per point and nothing of the TCP counters. Now a table per point, how many downloads they rest
    on, their percentiles' ranks, and what they are."""
    from test_hostile_reports import executed_in_process

    from trexlab.paths import paths

    page = executed_in_process(paths().notebooks / "report.ipynb", [str(download_campaign(tmp_path, None))],
                               monkeypatch)
    assert "Server TCP counters over the downloads" in page and ">2.5 (2–3)<" in page and ">12 (11–13)<" in page
    assert ">downloads with server TCP counters</th>" in page and "of 2 downloads the 1st percentile" in page
    assert "Server TCP counters</strong>" in page


def test_the_campaign_report_says_what_its_percentiles_are_as_the_download_report_does():
    """analysis/report.ipynb said its percentiles are 'nearest rank (always a value some repetition produced)';
    the HTTP download report (analysis.percentile_note) gives the rank, ceil(q / 100 × n). Both now in the same
    words, and what follows for the usual 20 repetitions."""
    import nbformat

    from trexlab.paths import paths

    opening = nbformat.read(paths().notebooks / "report.ipynb", as_version=4).cells[0].source
    assert f"Percentiles are {analysis.NEAREST_RANK}" in opening
    assert f"Percentiles are {analysis.NEAREST_RANK}: of 20" in analysis.percentile_note([20])
    assert "of fewer than 100 repetitions the 1st percentile is the minimum and the 99th the maximum" in opening


def test_the_side_by_side_table_writes_each_rfc2544_figure_as_every_table_does():
    """The HTTP report wrote the whole table with pandas' precision=3: RFC 2544 throughput '1,000.000' frames/s and
    a 2.4 us typical latency (gaming-selective-delay's, in ms) '0.002', where every other table writes '1,000' and
    '0.002400' (analysis.figure_format)."""
    latency = pd.DataFrame([{"experiment": "gaming-selective-delay", f"{IMPAIRMENT}loss_percent": 0.01,
                             "repetition": i + 1, "forward_typical_s": 2.4e-6, "sweep_keys": (),
                             "figure_keys": ("forward_typical_s",)} for i in range(3)])
    table = analysis.side_by_side(RUNS, pd.concat([rfc2544_runs(), latency], ignore_index=True))
    shown = analysis.styled_side_by_side(table).data.set_index("DUT impairment")
    zero = "gaming-loss-tolerance: throughput (frames/s) [loss_tolerance_percent=0.0]"
    typical = "gaming-selective-delay: forward typical (ms)"
    assert (shown.loc["loss 0.01 %", zero], shown.loc["loss 0.01 %", typical]) == ("1,000", "0.002400")
    assert shown.loc["loss 0.01 %", "download time median (s)"] == "89.140" and shown.loc["none", zero] == "-"
