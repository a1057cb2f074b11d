"""make demo, the README's first command, end to end: lab up, campaign, report, lab down, nothing left."""

import re
from pathlib import Path

import pytest

import browser
from labtools import REPO, lab_leftovers, run

pytestmark = pytest.mark.lab


def test_demo_runs_the_main_job_and_its_report_shows_the_table_and_the_plot(tmp_path):
    env = {"DEMO_LAB_NAME": "edemo", "RESULTS": str(tmp_path / "results"), "SCALE": "ci"}
    result = run("scripts/demo.sh", env=env, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    match = re.search(r"open (\S+report\.html)", result.stdout)
    assert match, result.stdout[-2000:]
    html = Path(match.group(1))
    html = html if html.is_absolute() else REPO / html
    assert lab_leftovers("edemo") == [], "lab-down removed every namespace, link and process"
    assert "point 2/2" in result.stderr, "progress is shown"

    dom, bar_pixels = browser.render(html, tmp_path)
    assert "throughput (frames/s)" in dom and "dispersion_percent" in dom
    assert dom.count(">done<") >= 2, "both sweep points done"
    assert bar_pixels > 5000, "the bar plot rendered"
