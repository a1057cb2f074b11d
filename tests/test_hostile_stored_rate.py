"""A shared spec's rate from a stored throughput campaign (rate: {from: throughput, campaign: ...}) reads that
campaign's files, which may come from someone else's results directory: whatever they hold, the rate comes from
inside the results root or the spec is refused in one line (exit 2) before anything runs, not after a traceback,
a hang or a rate read from elsewhere on the machine."""

import copy
import json
import os
import shutil

import pytest

from trexlab import cli
from trexlab.plan.campaign import Campaign
from trexlab.results.store import read_json
from trexlab.spec import experiment

TRAFFIC = {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "forward", "receive_tail": 0}
THROUGHPUT = {"name": "tp", "generator": "sim", "generator_options": {"capacity": 300000}, "traffic": TRAFFIC,
              "procedure": {"name": "throughput", "params": {"max_rate": 1000000, "trial_duration": 1}},
              "repetitions": 2}
LATENCY = {"name": "lat", "generator": "sim", "generator_options": {"capacity": 300000}, "traffic": TRAFFIC,
           "procedure": {"name": "latency", "params": {
               "rate": {"from": "throughput", "campaign": {"experiment": "tp"}},
               "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}},
           "repetitions": 1}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A results root holding one finished throughput campaign of the simulated SUT (one point, two repetitions)."""
    root = tmp_path_factory.mktemp("results")
    outcome = Campaign(experiment.validate(copy.deepcopy(THROUGHPUT)), root).run()
    assert outcome["done"] == 1
    return root


@pytest.fixture
def case(stored, tmp_path):
    """(results root, its stored campaign directory, that campaign's point directory): a copy to change."""
    root = tmp_path / "results"
    shutil.copytree(stored, root)
    campaign = next((root / "tp").iterdir())
    point = campaign / read_json(campaign / "campaign.json")["points"][0]["point"]
    return root, campaign, point


def dry_run(root, tmp_path, capsys) -> str:
    """The latency spec's dry run against root: its one line of stderr, once it refused (exit 2)."""
    spec = tmp_path / "lat.yml"
    spec.write_text(json.dumps(LATENCY))
    code = cli.main(["campaign", str(spec), "--results", str(root), "--ceilings", str(tmp_path / "c.json"),
                     "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (code, err)
    assert "procedure.params.rate.campaign" in err, err
    return err


def test_a_swept_stored_campaign_is_refused(case, tmp_path, capsys):
    """One stored campaign gives every point's rate: with its id swept, the point naming another campaign (here one
    that does not exist) was measured at this one's rate, and said 'id=c-none' in its name."""
    root, campaign, _ = case
    spec = copy.deepcopy(LATENCY)
    spec["sweep"] = {"procedure.params.rate.campaign.id": [campaign.name, "c-none"]}
    (tmp_path / "lat.yml").write_text(json.dumps(spec))
    code = cli.main(["campaign", str(tmp_path / "lat.yml"), "--results", str(root), "--ceilings",
                     str(tmp_path / "c.json"), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, (code, err)
    assert "sweep.procedure.params.rate.campaign.id: one stored campaign gives every point's rate" in err, err


def edit(path, change) -> None:
    data = read_json(path)
    change(data)
    path.write_text(json.dumps(data))


def test_the_stored_campaign_gives_a_rate(case, tmp_path, capsys):
    """The cases below are refused for what they change only."""
    root, _, _ = case
    spec = tmp_path / "lat.yml"
    spec.write_text(json.dumps(LATENCY))
    assert cli.main(["campaign", str(spec), "--results", str(root), "--ceilings", str(tmp_path / "c.json"),
                     "--dry-run"]) == 0
    assert "the median of 2 repetition(s) of throughput_fps of stored campaign tp/" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["../../../outside/point-0", "/outside/point-0", "..", "point-0/../../x"])
def test_a_stored_point_outside_its_campaign_is_refused(case, tmp_path, capsys, name):
    """campaign.json names each point's directory: a name with '/' or '..' read the rate (and the set-up it is
    compared by) from any directory of the machine, here a copy of the point outside the results root."""
    root, campaign, point = case
    outside = tmp_path / "outside"
    shutil.copytree(point, outside / "point-0")
    name = name.replace("/outside", str(outside)) if name.startswith("/") else name
    edit(campaign / "campaign.json", lambda manifest: manifest["points"][0].update(point=name))
    with open(campaign / "points.jsonl", "a") as log:
        log.write(json.dumps({"point": name, "status": "done"}) + "\n")
    err = dry_run(root, tmp_path, capsys)
    assert "campaign.json" in err and "point" in err and "a point directory's name" in err, err


@pytest.mark.parametrize("where", ["campaign", "experiment", "result"])
def test_a_stored_campaign_through_a_symbolic_link_is_refused(case, tmp_path, capsys, where):
    """A campaign directory, its experiment's directory or a file in it linked elsewhere: the rate was read from
    outside the results root (the report and a campaign's own directory refuse links too: store.first_link)."""
    root, campaign, point = case
    outside = tmp_path / "outside"
    outside.mkdir()
    if where == "campaign":
        shutil.move(campaign, outside / campaign.name)
        os.symlink(outside / campaign.name, campaign)
    elif where == "experiment":
        shutil.move(root / "tp", outside / "tp")
        os.symlink(outside / "tp", root / "tp")
    else:
        result = point / "rep-001" / "result.json"
        shutil.move(result, outside / "result.json")
        os.symlink(outside / "result.json", result)
    err = dry_run(root, tmp_path, capsys)
    assert "symbolic link" in err or "outside the results root" in err, err


@pytest.mark.timeout(60)  # 10^10 ran out of memory, or for hours, before
@pytest.mark.parametrize("repetitions", ["x", 1e300, [1], 0, True, 10**10])
def test_a_stored_summarys_repetitions_not_a_count_is_refused(case, tmp_path, capsys, repetitions):
    """summary.json's repetitions is the count of run directories read: text, a float or a list was a traceback,
    10^10 a list of 10^10 paths made (the dry run never ended)."""
    root, _, point = case
    edit(point / "summary.json", lambda summary: summary.update(repetitions=repetitions))
    err = dry_run(root, tmp_path, capsys)
    assert "summary.json" in err and "repetitions" in err and "1..1000" in err, err


@pytest.mark.parametrize("figure", ["x", {"a": 1}, [1], True])
def test_a_stored_throughput_not_a_number_is_refused(case, tmp_path, capsys, figure):
    root, _, point = case
    for rep in ("rep-001", "rep-002"):
        edit(point / rep / "result.json", lambda result: result["headline"].update(throughput_fps=figure))
    err = dry_run(root, tmp_path, capsys)
    assert "result.json" in err and "throughput_fps" in err, err


@pytest.mark.parametrize("points", [{"point-0": {}}, ["point-0"], "point-0", [{"point": 7}]])
def test_a_stored_campaigns_points_not_a_list_of_points_is_refused(case, tmp_path, capsys, points):
    root, campaign, _ = case
    edit(campaign / "campaign.json", lambda manifest: manifest.update(points=points))
    err = dry_run(root, tmp_path, capsys)
    assert "campaign.json" in err, err


@pytest.mark.parametrize("line", ["[1]", "{}", '{"point": ["x"]}', "7"])
def test_a_stored_point_log_line_not_a_record_is_refused(case, tmp_path, capsys, line):
    root, campaign, _ = case
    with open(campaign / "points.jsonl", "a") as log:
        log.write(line + "\n")
    err = dry_run(root, tmp_path, capsys)
    assert "points.jsonl" in err, err


@pytest.mark.parametrize("values", [{}, {"generator_options.capacity": 300000}, {"a.b": "..", "c.d": "/" * 200},
                                    {"traffic.frame_size": [84, 64], "procedure.params.x": 0.5, "e.f": None}])
def test_every_point_id_is_a_point_directory_name(values):
    """The names a stored campaign's points are read by are those SweepPoint makes, whatever its values."""
    import re

    assert re.match(experiment.POINT_ID_PATTERN, experiment.SweepPoint(0, values, {}).point_id)
