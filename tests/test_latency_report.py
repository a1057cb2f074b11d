"""The HTML report of a latency campaign shows a percentile plot per direction from the stored histograms."""

import json
from pathlib import Path

import pytest

from trexlab.plan.campaign import Campaign
from trexlab.results import latency_report
from trexlab.results.analysis import text
from trexlab.results.store import read_trials
from trexlab.spec import experiment

import browser

SPEC = {
    "name": "latency-report",
    "generator": "sim",
    "generator_options": {"capacity": 1000000, "random_loss": 0.002, "seed": 3},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional", "receive_tail": 0},
    "procedure": {"name": "latency",
                  "params": {"rate": 100000, "trial_duration": 2, "tag_delay": 1, "tagged_frames": 5000,
                             "frame_timeout": 0.01}},
    "sweep": {"generator_options.latency_spread": [2e-6, 20e-6]},
    "repetitions": 2,
}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> str:
    """SPEC's campaign, run once for both tests: they read it and write nothing into it but the report."""
    outcome = Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path_factory.mktemp("latency")).run()
    assert outcome["done"] == 2
    return outcome["campaign"]


def test_histograms_of_every_repetition_are_merged_per_point_and_direction(campaign):
    path = campaign
    found = latency_report.point_latencies(path)
    assert set(found) == {"latency_spread=2e-06", "latency_spread=2e-05"}
    manifest = json.loads((Path(path) / "campaign.json").read_text())
    point = next(p["point"] for p in manifest["points"] if p["values"]["generator_options.latency_spread"] == 2e-6)
    trials = [t for rep in ("rep-001", "rep-002") for t in read_trials(f"{path}/{point}/{rep}")]
    for direction in ("forward", "reverse"):
        merged = found["latency_spread=2e-06"][direction]
        assert merged.size == sum(t["directions"][direction]["tags_received"] for t in trials)
        assert merged.lost_or_late == sum(t["directions"][direction]["tags_lost_or_late"] for t in trials) > 0
    table = latency_report.merged_table(found)
    assert (f"| {text('latency_spread=2e-06')} | forward | {found['latency_spread=2e-06']['forward'].measured} |"
            in table)
    assert "> 10 ms (lost tags) |" in table, "0.3 % of the tags lost: the 99.9th percentile lies among them"
    # RFC 8219's TL and WCL are each repetition's own, their median over the repetitions reported: percentiles of
    # every repetition's tags pooled are other figures, and the table's header says which these are.
    assert "| median of the pooled delays | 99.9th percentile of the pooled delays |" in table.splitlines()[0]
    svg = latency_report.figure_svg("forward", {k: v["forward"] for k, v in found.items()})
    assert 'id="latency-percentiles-forward"' in svg and "99.9%" in svg and "&gt; 10 ms (lost tags)" in svg


def test_the_report_renders_the_percentile_plots_in_headless_chromium(campaign, tmp_path):
    from trexlab.results.report import render

    dom, _ = browser.render(render(campaign), tmp_path)
    assert "Latency percentiles per direction" in dom
    for direction in ("forward", "reverse"):
        assert f'id="latency-percentiles-{direction}"' in dom
    assert dom.count("&gt; 10 ms (lost tags)") >= 4, "each direction's curves end at the lost tags, labelled"
    assert "99.99%" in dom and "Traceback" not in dom
    assert "<td>latency_spread=2e-06</td>" in dom and "lost or late" in dom
