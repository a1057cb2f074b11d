"""make demo, the README's first command, end to end: lab up, campaign, report, lab down, nothing left.

The demo measures a reference DUT (roles/dut_reference) with 0.01 % every-Nth loss: its report must show
RFC 2544's zero-loss throughput collapsed below 10 % of the declared capacity and the 0.011 % tolerant
result at the capacity, both in the table and the plot a reader sees."""

import json
import re
from pathlib import Path

import pytest

from trexlab import reference_dut

import browser
from labtools import REPO, lab_leftovers, run

pytestmark = pytest.mark.lab


def medians(campaign: Path) -> dict[float, float]:
    """Per loss tolerance (%), the median throughput over the campaign's repetitions."""
    found: dict[float, list[float]] = {}
    for path in campaign.glob("*/rep-*/result.json"):
        result = json.loads(path.read_text())
        found.setdefault(result["loss_tolerance_percent"], []).append(result["throughput_fps"] or 0.0)
    return {t: sorted(v)[len(v) // 2] for t, v in found.items()}


def test_demo_measures_the_reference_dut_and_its_report_shows_both_findings(tmp_path):
    env = {"DEMO_LAB_NAME": "edemo", "RESULTS": str(tmp_path / "results"), "SCALE": "ci"}
    result = run("scripts/demo.sh", env=env, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    match = re.search(r"open (\S+report\.html)", result.stdout)
    assert match, result.stdout[-2000:]
    html = Path(match.group(1))
    html = html if html.is_absolute() else REPO / html
    assert lab_leftovers("edemo") == [], "lab-down removed every namespace, link and process"
    assert "point 2/2" in result.stderr, "progress is shown"

    campaign = html.parent
    spec = json.loads((campaign / "campaign.json").read_text())["spec"]
    _, capacity = reference_dut.declared(spec)
    found = medians(campaign)
    assert set(found) == {0, 0.011}, found
    # Zero loss: bounded by the loss period whatever the noise (every 10,000th frame, 3 s trials: < 3,334 fps).
    assert 0 < found[0] < 0.1 * capacity, (found, capacity)
    # Tolerant: never above the capacity (the policer fails such trials); a stall of this shared machine
    # can only lower it, which make demo's full run reports (3 repetitions, the median within 1 %).
    assert 0.5 * capacity < found[0.011] <= 1.01 * capacity, (found, capacity)

    dom, bar_pixels = browser.render(html, tmp_path)
    assert "throughput (frames/s)" in dom and "dispersion_percent" in dom
    assert dom.count(">done<") >= 2, "both sweep points done"
    assert f"{capacity:,.0f} frames/s per direction" in dom, "the declared answer is shown"
    for criterion, median in (("zero loss (RFC 2544)", found[0]), ("0.011 % loss tolerance (disclosed)", found[0.011])):
        row = re.search(re.escape(criterion) + r"</td>\s*<td[^>]*>([\d,]+)</td>", dom)
        assert row and row.group(1) == f"{median:,.0f}", (criterion, median, row and row.group(0))
    assert bar_pixels > 5000, "the bar plot rendered"
