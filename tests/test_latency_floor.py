"""The tester's own latency floor (issue 21): measured by the self-test, named and compared against by latency
and PDV results, shown in the CLI, the JSON result and the HTML report's disclosure.

On the sim generator with a declared tester floor: the simulated path's base delay stands for a tester whose
receive path adds half a millisecond (TRex in low_end mode, measured on the local lab), looped back in the
self-test; a DUT run whose delay is near it is flagged, one far above it is not.
"""

import json
import math
from pathlib import Path

import pytest

from trexlab import cli
from trexlab.procedures import selftest
from trexlab.results import analysis

TESTER_FLOOR = 500e-6  # s: the declared tester's own one-way delay (sim latency_base on the loopback)
SPREAD = 2e-6


def sim_args(latency_base: float) -> list[str]:
    return ["--generator", "sim", "--generator-opt", "capacity=1e9", "--generator-opt", "tester_ceiling=100000",
            "--generator-opt", f"latency_base={latency_base}", "--generator-opt", f"latency_spread={SPREAD}"]


def run_cli(tmp_path: Path, capsys, procedure: str, *args: str) -> tuple[dict, dict, str]:
    results = tmp_path / "runs" / f"{procedure}-{len(list((tmp_path / 'runs').glob('*')))}"
    code = cli.main([procedure, *args, "--ceilings", str(tmp_path / "ceilings.json"), "--results", str(results),
                     "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rep = results / "rep-001"
    return json.loads((rep / "result.json").read_text()), json.loads(captured.out), captured.err


@pytest.fixture
def floor_recorded(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    result, _, err = run_cli(tmp_path, capsys, "selftest", *sim_args(TESTER_FLOOR), "--frame-sizes", "64",
                             "--max-rate", "200000", "--resolution", "1000", "--trial-duration", "1")
    assert "(latency floor: median 50" in err, err
    return tmp_path, result


def test_selftest_records_the_latency_floor_beside_the_ceiling(floor_recorded):
    tmp_path, result = floor_recorded
    floor = result["latency_floors"]["64"]
    assert floor["median_s"] == pytest.approx(TESTER_FLOOR + SPREAD * math.log(2), rel=0.01)
    assert TESTER_FLOOR < floor["p99_9_s"] < TESTER_FLOOR + 30 * SPREAD
    ceiling = result["ceilings_fps"]["64"]
    assert floor["rate_fps"] == pytest.approx(ceiling / 2)  # floor_load_percent 50 of the ceiling found
    assert result["headline"]["latency_floor_64B_median_s"] == floor["median_s"]
    [entry] = json.loads((tmp_path / "ceilings.json").read_text())["ceilings"]
    assert entry["latency_floor"] == floor and entry["ceiling_fps"] == ceiling


@pytest.mark.parametrize("procedure", ["latency", "pdv"])
def test_a_figure_near_the_floor_warns_in_cli_json_and_report(floor_recorded, capsys, procedure):
    tmp_path, _ = floor_recorded
    # The DUT adds 100 us to the tester's 500 us: the figure is mostly the tester's.
    tags = ["--tagged-frames", "1000", "--tag-delay", "0.5"]
    flags = ["--rate", "10000", "--trial-duration", "1"] + (tags if procedure == "latency" else [])
    result, printed, err = run_cli(tmp_path, capsys, procedure, *sim_args(TESTER_FLOOR + 100e-6), *flags)
    floor = result["tester_latency_floor"]
    assert floor["median_s"] == pytest.approx(TESTER_FLOOR, rel=0.01) and floor["factor"] == selftest.FLOOR_FACTOR
    assert floor["warnings"] and all("tester's own latency floor" in w for w in floor["warnings"])
    assert set(floor["warnings"]) <= set(result["notes"])
    assert printed["result"]["tester_latency_floor"] == floor
    assert f"trexlab {procedure}: warning: rep-001: forward" in err
    assert "tester latency floor median" in err  # the floor that applies is named before the run
    if procedure == "latency":
        assert any(w.startswith("forward typical") for w in floor["warnings"])
    # The report's disclosure shows the floor and the flagged figures.
    campaign = tmp_path / "campaign"
    rep = campaign / "p1" / "rep-001"
    rep.mkdir(parents=True)
    (rep / "result.json").write_text(json.dumps(result))
    (campaign / "campaign.json").write_text(json.dumps({"points": [{"point": "p1", "values": {}}]}))
    text = analysis.latency_floor_disclosure(campaign)
    assert "**Tester latency floor**" in text and "median 50" in text and "⚠ p1 rep-001: forward" in text


def test_a_figure_far_above_the_floor_does_not_warn(floor_recorded, capsys):
    tmp_path, _ = floor_recorded
    result, _, err = run_cli(tmp_path, capsys, "latency", *sim_args(5e-3), "--rate", "10000", "--trial-duration",
                             "1", "--tag-delay", "0.5", "--tagged-frames", "1000")
    assert result["tester_latency_floor"]["median_s"] and result["tester_latency_floor"]["warnings"] == []
    assert "warning: rep-001" not in err


def test_without_a_recorded_floor_the_result_says_so(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    result, _, _ = run_cli(tmp_path, capsys, "latency", *sim_args(TESTER_FLOOR), "--rate", "10000",
                           "--trial-duration", "1", "--tag-delay", "0.5", "--tagged-frames", "1000")
    assert result["tester_latency_floor"] is None
    assert any(n.startswith("no tester latency floor to compare against") for n in result["notes"])
