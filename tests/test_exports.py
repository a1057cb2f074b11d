"""A campaign's exports (summary.csv, trials.parquet) and the published JSON Schemas (docs/schemas), checked
against what real sim runs write."""

import functools
import json
from pathlib import Path

import jsonschema
import pandas as pd
import pyarrow.parquet as pq
import pytest

from trexlab.generators import create_generator
from trexlab.plan import repetition
from trexlab.plan.campaign import Campaign
from trexlab.procedures import flr, latency, mlrsearch, pdv, selftest
from trexlab.results import store
from trexlab.results.stats import summarize
from trexlab.spec import experiment
from trexlab.trial import TrialSpec

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"

SPEC = {
    "name": "exports",
    "description": "a simulated SUT, throughput at two frame sizes",
    "generator": "sim",
    "generator_options": {"capacity": 300000, "capacity_noise": 0.01},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional", "receive_tail": 0},
    "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "resolution": 5000, "trial_duration": 1}},
    "sweep": {"traffic.frame_size": [[64, 64], [128, 128]]},
    "repetitions": 3,
}


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """A throughput campaign, and latency and MLRsearch runs repeated: every kind of record they write."""
    root = tmp_path_factory.mktemp("exports")
    campaign = Path(Campaign(experiment.validate(json.loads(json.dumps(SPEC))), root).run()["campaign"])
    traffic = TrialSpec(offered_load=1, duration=1)
    sim = {"capacity": 1e5, "delay": 2e-3, "delay_every_nth": 10}
    repetition.repeat("latency", create_generator("sim", **sim), traffic,
                      latency.Params(rate=5e4, trial_duration=2, tag_delay=1, tagged_frames=500, frame_timeout=1e-3),
                      2, root / "latency", {})
    repetition.repeat("mlrsearch", create_generator("sim", capacity=1e5), traffic,
                      mlrsearch.Params(max_rate=2e5, min_rate=1e4), 1, root / "mlrsearch", {})
    repetition.repeat("pdv", create_generator("sim", **sim), traffic, pdv.Params(rate=5e4, trial_duration=1), 1,
                      root / "pdv", {})
    repetition.repeat("flr", create_generator("sim", capacity=1e5), traffic,
                      flr.Params(max_rate=2e5, trial_duration=1), 1, root / "flr", {})
    repetition.repeat("selftest", create_generator("sim", capacity=1e5), traffic,
                      selftest.Params(max_rate=2e5, trial_duration=1), 1, root / "selftest", {})
    return root, campaign


def test_result_summary_and_trial_records_match_the_published_schemas(outputs):
    root, _ = outputs
    checked = {"result": 0, "summary": 0, "trial": 0}
    procedures = set()
    for run in store.run_dirs([root]):
        result = json.loads((run / store.RESULT).read_text())
        validator("result").validate(result)
        procedures.add(result["procedure"])
        checked["result"] += 1
        for record in store.read_trials(run):
            validator("trial").validate(record)
            checked["trial"] += 1
    for summary in root.rglob(repetition.SUMMARY):
        validator("summary").validate(json.loads(summary.read_text()))
        checked["summary"] += 1
    assert procedures == {"throughput", "latency", "mlrsearch", "pdv", "flr", "selftest"}
    assert checked["result"] == 12 and checked["summary"] == 7 and checked["trial"] > 12


def _declared(schema: dict, procedure: str) -> set[str]:
    """The top-level keys a schema declares for a record of this procedure: its own and its allOf branch's."""
    keys = set(schema.get("properties", {}))
    for branch in schema.get("allOf", []):
        test = branch["if"]["properties"]["procedure"]
        if procedure == test.get("const") or procedure in test.get("enum", ()):
            keys |= set(branch["then"].get("properties", {}))
    return keys


def test_every_field_the_runs_write_is_declared_in_the_published_schemas(outputs):
    """The schemas leave room for later fields, so validation alone passes a field nobody documented (FLR's points,
    the self-test's ceilings, summary.json's method keys were such): each one written must be declared, with
    its meaning and unit."""
    root, _ = outputs
    result_schema = json.loads((SCHEMAS / "result.schema.json").read_text())
    method_keys = set(json.loads((SCHEMAS / "summary.schema.json").read_text())["properties"]["method"]["properties"])
    undeclared = set()
    for run in store.run_dirs([root]):
        result = json.loads((run / store.RESULT).read_text())
        undeclared |= {f"{result['procedure']} result.json {key}" for key in
                       set(result) - _declared(result_schema, result["procedure"])}
    for summary in root.rglob(repetition.SUMMARY):
        written = json.loads(summary.read_text())
        undeclared |= {f"{written['procedure']} summary.json method.{key}" for key in
                       set(written["method"]) - method_keys}
    assert not undeclared, sorted(undeclared)


def test_the_schemas_reject_what_they_promise_to(outputs):
    root, campaign = outputs
    run = store.run_dirs([campaign])[0]
    result = json.loads((run / store.RESULT).read_text())
    trial = store.read_trials(run)[0]
    with pytest.raises(jsonschema.ValidationError, match="throughput_fps"):
        validator("result").validate({k: v for k, v in result.items() if k != "throughput_fps"})
    with pytest.raises(jsonschema.ValidationError):
        validator("trial").validate({**trial, "directions": {"sideways": trial["directions"]["forward"]}})


def test_a_campaign_writes_summary_csv_and_trials_parquet(outputs):
    _, campaign = outputs
    summary = pd.read_csv(campaign / "summary.csv")
    assert len(summary) == 2 and set(summary["figure"]) == {"throughput_fps"}
    assert {"experiment", "campaign", "point", "frame_size", "median", "min", "max", "dispersion_percent"} <= set(
        summary.columns)
    for _, row in summary.iterrows():  # the statistics of each point's summary.json
        figures = json.loads((campaign / row["point"] / repetition.SUMMARY).read_text())["figures"]
        assert row["median"] == pytest.approx(figures["throughput_fps"]["median"])
        values = [r["value"] for r in figures["throughput_fps"]["repetitions"]]
        assert row["max"] == pytest.approx(summarize(values)["max"])
    trials = pq.read_table(campaign / store.TRIALS_COLUMNAR)
    logged = sum(len(store.read_trials(run)) for run in store.run_dirs([campaign]))
    assert trials.num_rows == logged
    assert {r.split("/")[-1] for r in trials.column("run").cast("string").to_pylist()} == {"rep-001", "rep-002",
                                                                                            "rep-003"}


def test_an_http_download_result_matches_and_declares_every_field():
    """No lab here to download through: the result as the procedure writes it, from one download."""
    from trexlab.procedures import http_download

    download = http_download.Download("http://198.19.0.3/file", 1 << 20, {"time_total": 1.5}, "reno")
    result = http_download.DownloadResult(http_download.Params(), download).to_dict()
    validator("result").validate(result)
    schema = json.loads((SCHEMAS / "result.schema.json").read_text())
    assert set(result) <= _declared(schema, "http_download"), set(result) - _declared(schema, "http_download")
