"""experiments/http-download-loss at CI scale on the local lab: curl downloads through a DUT dropping 0, 0.1 and
1 % of the frames towards the client take longer at 1 % loss, and the HTML report shows the median and the
1st/99th percentile per loss rate, as Lencse et al. 2020, Table III does."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from trexlab.results import analysis
from trexlab.results.report import render
from trexlab.spec.experiment import load

from browser import render as browse
from labtools import REPO, VENV, node_state, run

pytestmark = pytest.mark.lab
# The single-DUT lab of test_experiments.py, handed out again (lab_factory): its campaigns restore what they
# change, as this one does.
LAB = "ex1"
EXPERIMENT = "http-download-loss"
CI = load(REPO / "experiments" / EXPERIMENT).scaled("ci")
#: The least slowdown of the median download at 1 % loss that this lab shows (see below), with margin.
MIN_SLOWDOWN = 1.2


def lab_state(lab) -> dict:
    """What the campaign must give back: qdiscs, nftables, links of tester and DUT; everything of the endpoints."""
    state = {n.name: {k: v for k, v in node_state(n.netns).items() if k in ("tc", "nft", "links")}
             for n in (lab.tester, *lab.duts)}
    state.update({n.name: node_state(n.netns) for n in (lab.client, lab.server)})
    return state


def test_download_time_grows_with_dut_loss_and_the_report_shows_median_and_percentiles(lab_factory, tmp_path):
    lab = lab_factory(LAB, "single", 1)
    before = lab_state(lab)
    result = subprocess.run([str(VENV / "bin" / "trexlab"), "campaign", f"experiments/{EXPERIMENT}", "--scale", "ci",
                             "--results", str(tmp_path),
                             "--ceilings", str(tmp_path / "tester-ceilings.json"), "--inventory", str(lab.inventory)],
                            capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout)
    assert outcome["failed"] == [] and outcome["done"] == outcome["points"] == 3
    assert lab_state(lab) == before, "the campaign restored the DUT and removed the endpoints' configuration"
    left = run("ip", "netns", "pids", lab.server.netns).stdout.split()
    assert all(open(f"/proc/{pid}/comm").read().strip() == "sshd" for pid in left), "no iperf3 or nginx is left"

    runs = analysis.load_campaigns(outcome["campaign"])
    summary = analysis.summarize_points(runs, "download_time_s").set_index("loss_percent")
    medians = summary["median"]
    print(f"\nmedian download time by loss %: {medians.round(4).to_dict()}")
    assert list(summary.index) == [0, 0.1, 1] and (summary["count"] == CI.repetitions).all()
    # 1 % loss slows the download; 0.1 % stays within the run-to-run noise of this shared host, as it stayed
    # within the paper's 1st-99th percentile band (89.44 s vs 89.11 s), so only 1 % is ordered against it.
    # Not the paper's doubling: the namespaces' veths keep TSO/GSO, so the DUT drops 1 % of up-to-64 KB
    # super-frames (one loss event per some 4,500 segments, not per 100), and how much that costs depends on
    # how the CPU-bound, microsecond-RTT path compares with reno's window: on this shared host 1.33-3.95x the
    # lossless median over 10 sets of 5-9 downloads (CI 1.65x), 1.31-3.8x the 0.1 % one. The medians of
    # several downloads keep out a stall of the host (a lossless download once took 9x its median).
    assert medians[1] > MIN_SLOWDOWN * medians[0] and medians[1] > medians[0.1], medians.to_dict()
    trials = runs["run"].map(lambda run: json.loads(open(f"{run}/trials.jsonl").readline()))
    assert all(t["kind"] == "http download" and t["curl"]["http_code"] == 200 for t in trials)
    assert {t["curl"]["size_download"] for t in trials} == {CI.spec["endpoints"]["http_file_mib"] * 1048576}

    html = render(outcome["campaign"])
    dom, bar_pixels = browse(html, tmp_path)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    assert "Traceback" not in text and "Download time (s) per DUT impairment" in text
    table = text[text.index("Download time (s) per DUT impairment"):]
    for row in ("median (s)", "1st percentile (s)", "99th percentile (s)"):
        assert row in table
    assert "none loss 0.1 % loss 1 %" in table
    for loss in (0, 0.1, 1):
        assert f"{medians[loss]:,.3f}" in table, loss
    assert "Side by side with RFC 2544" in text
    assert bar_pixels > 1000, "the download-time bars are drawn"
