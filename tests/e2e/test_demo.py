"""make demo, the README's first command, end to end: the tester's self-test, lab up, campaign, report, lab
down, nothing left.

The demo measures a reference DUT (roles/dut_reference) with 0.01 % every-Nth loss: its report must show
RFC 2544's zero-loss throughput collapsed below 10 % of the declared capacity and the 0.011 % tolerant
result at the capacity, both in the table and the plot a reader sees."""

import json
import math
import re
import warnings
from pathlib import Path

import pytest

from trexlab.spec.experiment import reference_declared

import browser
from labtools import REPO, lab_leftovers, run

pytestmark = pytest.mark.lab


def strict_json(path: Path) -> dict:
    """A file as strict JSON parsers (jq, browsers) read it: no NaN or Infinity tokens."""
    def refuse(token):
        raise ValueError(f"{path}: non-JSON token {token}")
    return json.loads(path.read_text(), parse_constant=refuse)


def points(campaign: Path) -> dict[float, dict]:
    """Per loss tolerance (%), the point's throughput statistics from its summary.json."""
    found = {}
    for path in campaign.glob("*/summary.json"):
        figures = strict_json(path)["figures"]["throughput_fps"]
        tolerance = {strict_json(r)["loss_tolerance_percent"] for r in path.parent.glob("rep-*/result.json")}
        assert len(tolerance) == 1, (path, tolerance)
        found[tolerance.pop()] = figures
    return found


#: How far below the declared capacity a failed trial counts: the send time a trial is measured over is not
#: exactly its duration, so the policer's answer R + B/T is exact only to about this.
SLACK = 1e-3


def disturbed(campaign: Path, tolerance: float, capacity: float, nth: int) -> list[float]:
    """Loads below the declared capacity where a tolerant trial failed with more loss than the DUT's every-Nth
    loss (ceil(sent / N) frames per direction), or was stretched: the reference DUT forwards every other frame
    there, so such a failure is the shared machine stalling tester or DUT (as the report counts them)."""
    loads = []
    for path in campaign.glob("*/rep-*/result.json"):
        if strict_json(path)["loss_tolerance_percent"] != tolerance:
            continue
        for line in (path.parent / "trials.jsonl").read_text().splitlines():
            trial = json.loads(line)
            directions = trial["directions"].values()
            failed = any(d["loss_ratio"] * 100 > tolerance for d in directions)
            excess = any(d["frames_lost"] > math.ceil(d["frames_sent"] / nth) for d in directions)
            if trial["spec"]["offered_load"] >= (1 - SLACK) * capacity:
                continue
            # Stretched: the tester's schedule slipped after a stall (never a pass).
            if trial["stretched"] or failed and excess:
                loads.append(trial["spec"]["offered_load"])
    return loads


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
    dut, capacity = reference_declared(spec)
    found = points(campaign)
    assert set(found) == {0, 0.011}, found
    assert [f["tester_bound"] for f in found.values()] == [0, 0], "no repetition tester-bound: the demo's premise"
    # The demo measured its tester first (tester-selftest at scale demo, on a loopback lab) and compared every
    # repetition against that ceiling: "none tester-bound" above is a finding, not the default of an unknown one.
    ceilings = tmp_path / "results" / "demo-selftest" / "tester-ceilings.json"
    for path in campaign.glob("*/rep-*/provenance.json"):
        ceiling = strict_json(path)["tester_ceiling"]
        assert ceiling["source"] == str(ceilings) and ceiling["ceiling_fps"] > capacity, (path, ceiling)
    lower_bound = "at least " if ceiling["ceiling_at_least"] else ""
    median = {t: f["median"] for t, f in found.items()}
    # Zero loss: bounded by the loss period whatever the noise (every 10,000th frame, 3 s trials: < 3,334 fps).
    assert 0 < median[0] < 0.1 * capacity, (median, capacity)
    # Tolerant: never above the capacity (the policer fails such trials), within 1 % of it unless the shared
    # machine stalled tester or DUT during a trial below it (only lowers the result; then at least half).
    assert median[0.011] <= 1.01 * capacity, (median, capacity)
    if stalls := disturbed(campaign, 0.011, capacity, dut.loss_every_nth):
        warnings.warn(f"tolerant trials failed below the declared capacity {capacity:,.0f} at {stalls}: "
                      f"the machine is too busy to check 'within 1 %' (median {median[0.011]:,.0f})", stacklevel=1)
        assert median[0.011] > 0.5 * capacity, (median, capacity)
    else:
        assert median[0.011] >= 0.99 * capacity, (median, capacity)

    dom, bar_pixels = browser.render(html, tmp_path)
    assert "throughput (frames/s)" in dom and "dispersion_percent" in dom
    assert dom.count(">done<") >= 2, "both sweep points done"
    assert f"{capacity:,.0f} frames/s per direction" in dom, "the declared answer is shown"
    for criterion, value in (("zero loss (RFC 2544)", median[0]),
                             ("0.011 % loss tolerance (disclosed)", median[0.011])):
        row = re.search(re.escape(criterion) + r"</td>\s*<td[^>]*>([\d,]+)</td>", dom)
        assert row and row.group(1) == f"{value:,.0f}", (criterion, value, row and row.group(0))
    assert bar_pixels > 5000, "the bar plot rendered"
    assert f"tester ceiling {lower_bound}{ceiling['ceiling_fps']:,.0f} fps" in dom, "the method names the ceiling"
    stalls = disturbed(campaign, 0.011, capacity, dut.loss_every_nth)
    assert f"Trials this machine disturbed: {len(stalls)} of" in dom, "the report says which trials a stall failed"
