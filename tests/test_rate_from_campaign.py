"""Latency at the throughput rate of a stored throughput campaign (rate: {from: throughput, campaign: ...}): the rate is
that campaign's figure for the same set-up (RFC 8219: latency at the throughput rate of this DUT), its provenance
names which, and a campaign that is missing, incomplete or of another set-up is refused in one line."""

import copy
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from trexlab import cli
from trexlab.plan import estimate
from trexlab.plan.campaign import Campaign
from trexlab.plan.rate_from import setup_of, stored_rates
from trexlab.plan.runplan import plan_campaign, plan_cli
from trexlab.results.analysis import load_campaigns, method_disclosure
from trexlab.results.store import read_json, read_point_log
from trexlab.spec import experiment
from trexlab.spec.schema import experiment_schema

TRAFFIC = {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "forward", "receive_tail": 0}
SEARCH = {"max_rate": 1000000, "trial_duration": 1}
THROUGHPUT = {"name": "tp", "generator": "sim", "generator_options": {"capacity": 300000}, "traffic": TRAFFIC,
              "procedure": {"name": "throughput", "params": SEARCH},
              "sweep": {"generator_options.capacity": [300000, 600000]}, "repetitions": 3}
LATENCY = {"name": "lat", "generator": "sim", "generator_options": {"capacity": 300000}, "traffic": TRAFFIC,
           "procedure": {"name": "latency", "params": {
               "rate": {"from": "throughput", "campaign": {"experiment": "tp"}},
               "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}},
           "sweep": {"generator_options.capacity": [600000]}, "repetitions": 1}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A results root holding one finished throughput campaign of the simulated SUT (two capacities)."""
    root = tmp_path_factory.mktemp("results")
    outcome = Campaign(experiment.validate(copy.deepcopy(THROUGHPUT)), root).run()
    assert outcome["done"] == 2
    return root, outcome["campaign"]


@pytest.fixture
def root(stored, tmp_path):
    """A copy of the stored results root, for a test to change."""
    shutil.copytree(stored[0], tmp_path / "results")
    return tmp_path / "results"


def latency(change=lambda spec: None):
    spec = copy.deepcopy(LATENCY)
    change(spec)
    return experiment.validate(spec)


def rate_of(spec_change=lambda spec: None):
    return lambda spec: (spec["procedure"]["params"]["rate"].update(spec_change), None)[1]


def stored_point(campaign, capacity):
    point = next(p["point"] for p in read_json(f"{campaign}/campaign.json")["points"]
                 if p["values"]["generator_options.capacity"] == capacity)
    return point, read_json(f"{campaign}/{point}/summary.json")


def test_latency_is_measured_at_the_stored_campaigns_median_of_the_same_point_and_says_which(stored, tmp_path):
    root, campaign = stored
    point, summary = stored_point(campaign, 600000)
    results = tmp_path / "results"
    shutil.copytree(root, results)
    said = []
    outcome = Campaign(latency(), results, progress=said.append).run()
    assert outcome["done"] == 1
    measuring = [line for line in said if "measuring at" in line]
    assert len(measuring) == 1 and f"stored campaign tp/{Path(campaign).name}, its point {point}" in measuring[0]
    rep = next((results / "lat").glob("*/*/rep-001"))
    provenance = read_json(rep / "provenance.json")
    source = provenance["rate_source"]
    # RFC 8219: at the throughput rate: the figure the throughput campaign reports for this set-up, its median.
    assert provenance["params"]["rate"] == source["rate"] == summary["figures"]["throughput_fps"]["median"]
    assert source["statistic"] == f"median of {THROUGHPUT['repetitions']} repetition(s)"
    assert source["figure"] == "throughput_fps"
    manifest = read_json(f"{campaign}/campaign.json")
    assert source["campaign"] | {"params": None} == {
        "experiment": "tp", "id": manifest["campaign"], "point": point, "git_commit": manifest["git_commit"],
        "measured_on": None, "params": None}
    assert source["campaign"]["params"]["trial_duration"] == SEARCH["trial_duration"], "the stored search's params"
    assert not list((results / "lat").glob("*/*/throughput")), "no search run again"
    # The report's throughput beside the latency (load_campaigns' procedure): the stored repetitions the rate was
    # the median of, with that campaign's own columns.
    rates = load_campaigns(outcome["campaign"], procedure="throughput")
    assert list(rates["point"]) == [point] * 3 and set(rates["campaign"]) == {manifest["campaign"]}
    assert rates["throughput_fps"].median() == source["rate"] and set(rates["capacity"]) == {600000}
    disclosed = method_disclosure(outcome["campaign"]).replace("\\", "")
    assert f"(the throughput rate: median of 3 repetition(s) of throughput_fps in {results}/tp/" in disclosed


@pytest.mark.parametrize(("change", "refusal"), [
    (lambda s: s["traffic"].update(frame_size=[128, 128]),
     "no point of this set-up (its point capacity=600000-{}: traffic.frame_size [64, 64] there, [128, 128] here)"),
    (lambda s: s["sweep"].update({"generator_options.capacity": [500000]}),
     ": generator_options.capacity 300000.0 there, 500000.0 here)"),
    (rate_of({"campaign": {"experiment": "elsewhere"}}), "none with experiment elsewhere (run it first"),
    (rate_of({"campaign": {"experiment": "tp", "id": "c-none"}}), "none with experiment tp, id c-none"),
    (rate_of({"params": {**SEARCH, "loss_tolerance_percent": 0.01}}),
     "its search differs: rate.params.loss_tolerance_percent 0.0 there, 0.01 here"),
])
def test_a_stored_campaign_of_another_set_up_or_none_is_refused_in_one_line(stored, root, change, refusal):
    with pytest.raises(experiment.InvalidExperiment) as caught:
        plan_campaign(latency(change), root)
    message = str(caught.value)
    refusal = refusal.format(stored_point(stored[1], 600000)[0].rsplit("-", 1)[-1])
    assert refusal in message and "\n" not in message, message
    assert message.startswith("<spec>: procedure.params.rate.campaign=")


def test_the_stored_search_named_beside_the_campaign_is_accepted_when_it_is_the_one_run(root):
    plans = plan_campaign(latency(rate_of({"params": SEARCH})), root)
    assert plans[0].rate_source["campaign"]["experiment"] == "tp" and plans[0].rate_from is None


def test_a_stored_point_not_done_is_refused(stored, root):
    campaign = root / "tp" / stored[1].rsplit("/", 1)[-1]
    point, _ = stored_point(campaign, 600000)
    with open(campaign / "points.jsonl", "a") as log:  # its last attempt failed (a rerun would resume it)
        log.write(json.dumps({"point": point, "status": "failed", "error": "x"}) + "\n")
    assert read_point_log(campaign)[point]["status"] == "failed"
    with pytest.raises(experiment.InvalidExperiment, match=f"point {point} is not done \\(failed\\): finish that"):
        plan_campaign(latency(), root)


def test_a_stored_repetition_missing_is_refused(stored, root):
    campaign = root / "tp" / stored[1].rsplit("/", 1)[-1]
    point, _ = stored_point(campaign, 600000)
    (campaign / point / "rep-002" / "result.json").unlink()
    with pytest.raises(experiment.InvalidExperiment, match="repetition rep-002 of its 3 is not finished"):
        plan_campaign(latency(), root)


def test_two_stored_campaigns_that_fit_are_refused_unless_the_id_names_one(stored, root):
    campaign = stored[1].rsplit("/", 1)[-1]
    shutil.copytree(root / "tp" / campaign, root / "tp" / "again")
    with pytest.raises(experiment.InvalidExperiment, match="one stored campaign: 2 fit .*name it by experiment and id"):
        plan_campaign(latency(), root)
    plans = plan_campaign(latency(rate_of({"campaign": {"id": "again"}})), root)
    assert plans[0].rate_source["from"].startswith(str(root / "tp" / "again"))


def test_a_campaign_of_another_procedure_gives_no_rate(stored, root):
    campaign = root / "tp" / stored[1].rsplit("/", 1)[-1]
    manifest = read_json(campaign / "campaign.json")
    manifest["spec"]["procedure"]["name"] = "latency"
    (campaign / "campaign.json").write_text(json.dumps(manifest))
    with pytest.raises(experiment.InvalidExperiment, match="a latency campaign, not throughput"):
        plan_campaign(latency(), root)


def test_a_stored_campaign_of_another_lab_gives_no_rate(stored):
    """A rate measured on another lab (its campaign.json's measured_on) is not this DUT's throughput."""
    spec = latency().points()[0].spec
    request = {"from": "throughput", "params": None, "campaign": {"experiment": "tp"}}
    lab = {"name": "local", "kind": "local", "topology": "single", "controller": "here"}
    with pytest.raises(ValueError, match='no point of this set-up .*: lab null there, {"name": "local"'):
        stored_rates(stored[0], request, [("p", spec)], lab)
    assert stored_rates(stored[0], request, [("p", spec)], lab, compare_lab=False)["p"][0] > 0, "the dry run's"


def test_the_dut_configuration_is_part_of_the_set_up_as_its_role_applies_it():
    """dut: {siit: {}} is the role's defaults spelt out, and another ipv6_side is another DUT."""
    base = {"generator": "sim", "traffic": TRAFFIC}
    defaults = setup_of({**base, "dut": {"siit": {}}}, None)
    assert defaults == setup_of({**base, "dut": {"siit": dict(defaults["dut"]["siit"])}}, None)
    assert setup_of({**base, "dut": {"siit": {"ipv6_side": "right"}}}, None) != defaults
    assert setup_of(base, None) != defaults


def test_the_campaign_reference_is_validated_before_anything_runs():
    schema = experiment_schema()
    jsonschema.validate(copy.deepcopy(LATENCY), schema)  # the published schema takes the reference
    for reference in [{}, {"exp": "tp"}, {"id": "../up"}, {"id": "c\n"}, {"experiment": "Tp"}, "tp"]:
        with pytest.raises(experiment.InvalidExperiment, match=r"procedure\.params\.rate\.campaign"):
            latency(rate_of({"campaign": reference}))
        spec = copy.deepcopy(LATENCY)
        spec["procedure"]["params"]["rate"]["campaign"] = reference
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(spec, schema)


def test_a_stored_rate_costs_no_search_in_the_estimate_and_the_dry_run_names_it(root, tmp_path, capsys):
    searched = latency(lambda spec: spec["procedure"]["params"].update(rate={"from": "throughput", "params": SEARCH}))
    assert estimate.plan(latency())[0].cost.worst_s < estimate.plan(searched)[0].cost.worst_s
    spec = tmp_path / "lat.yml"
    spec.write_text(json.dumps(LATENCY))
    assert cli.main(["campaign", str(spec), "--results", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"point 1/1 {latency().points()[0].point_id}: rate " in out
    assert "fps, the median of 3 repetition(s) of throughput_fps of stored campaign tp/c-" in out


#: latency on the CLI with the stored campaign's traffic and its 600,000 fps point's simulated SUT.
CLI_LATENCY = ["latency", "--generator", "sim", "--generator-opt", "capacity=600000", "--frame-size", "64",
               "--ip-version", "4", "--directions", "forward", "--receive-tail", "0", "--trial-duration", "2",
               "--tag-delay", "1", "--tagged-frames", "500"]


def cli_plan(argv):
    return plan_cli(cli.build_parser().parse_args(argv), argv)


def test_cli_rate_from_a_stored_campaign_by_experiment_and_id_or_by_its_directory_is_its_point_of_this_set_up(
        stored, root, monkeypatch, capsys):
    # As the spec's rate: {from: throughput, campaign: {experiment, id}}: the median the campaign reports for its point
    # of this run's set-up (capacity 600,000), looked up in the CLI's results root. Its directory names the same
    # campaign, and the same point. Before, EXPERIMENT/ID was refused as no directory, and the directory gave the
    # median of every point's runs, or a refusal where their set-ups differ (here: capacity 300,000 beside it).
    monkeypatch.chdir(root.parent)
    campaign = stored[1].rsplit("/", 1)[-1]
    point, summary = stored_point(stored[1], 600000)
    for given in (f"tp/{campaign}", str(root / "tp" / campaign)):
        plan = cli_plan([*CLI_LATENCY, "--rate-from", given, "--results", str(root.parent / "lat")])
        assert plan.params.rate == plan.rate_source["rate"] == summary["figures"]["throughput_fps"]["median"]
        assert plan.rate_source["campaign"]["point"] == point and plan.rate_source["campaign"]["experiment"] == "tp"
    assert cli.main([*CLI_LATENCY, "--rate-from", f"tp/{campaign}", "--results", str(root.parent / "lat")]) == 0
    assert read_json(root.parent / "lat" / "rep-001" / "provenance.json")["rate_source"]["campaign"]["point"] == point
    # Said once, before the first trial, where a user needs it: it was said before the run (naming the point's
    # directory) and again after it (naming the campaign and point).
    err = capsys.readouterr().err
    assert err.count("measuring at") == 1, err
    before, first_trial, _ = err.partition("trial 1 at")
    assert first_trial and f"stored campaign tp/{campaign}, its point {point}" in before, err


#: The copy of a stored point two_points_of_one_set_up makes: a point directory's name (SweepPoint.point_id's form).
COPY = "again-000000"


def two_points_of_one_set_up(root, campaign, trial_duration=None):
    """The stored campaign with a copy of its 600,000 fps point beside it (its search's trial_duration changed)."""
    directory = root / "tp" / campaign
    point, _ = stored_point(directory, 600000)
    shutil.copytree(directory / point, directory / COPY)
    manifest = read_json(directory / "campaign.json")
    manifest["points"].append({**next(p for p in manifest["points"] if p["point"] == point), "point": COPY})
    (directory / "campaign.json").write_text(json.dumps(manifest))
    with open(directory / "points.jsonl", "a") as log:
        log.write(json.dumps({"point": COPY, "status": "done"}) + "\n")
    if trial_duration is not None:
        for rep in (directory / COPY).glob("rep-*"):
            facts = read_json(rep / "provenance.json")
            facts["spec"]["procedure"]["params"]["trial_duration"] = trial_duration
            (rep / "provenance.json").write_text(json.dumps(facts))
    return point


@pytest.mark.parametrize(("given", "refusal"), [
    ("tp/c-none", "allowed a directory with finished throughput runs, or EXPERIMENT/ID of a stored throughput "
                  "campaign in results: neither is there"),
    ("tp/{campaign}", "allowed one of a directory and EXPERIMENT/ID: both are there (tp/{campaign}, and the campaign "
                      "results/tp/{campaign}): name the one meant by a path that is no EXPERIMENT/ID (./tp/{campaign}, "
                      "or results/tp/{campaign})"),
    ("tp/{campaign}", "allowed a complete throughput campaign of this point's set-up (lab, generator, "
                      "generator_options, traffic, dut); results/tp/{campaign}: no point of this set-up (its point "
                      "{point}: traffic.frame_size [64, 64] there, [128, 128] here)"),
    ("tp/{campaign}", "allowed a complete throughput campaign of this point's set-up (lab, generator, "
                      "generator_options, traffic, dut); results/tp/{campaign}: one point of this set-up: 2 have it "
                      "({point}, {copy})"),
], ids=["nothing", "directory-and-campaign", "no-point", "two-points"])
def test_cli_rate_from_experiment_and_id_is_refused_in_one_line_naming_it_where_nothing_or_two_things_match(
        stored, root, monkeypatch, capsys, given, refusal):
    monkeypatch.chdir(root.parent)
    campaign = stored[1].rsplit("/", 1)[-1]
    point, _ = stored_point(stored[1], 600000)
    argv = [*CLI_LATENCY, "--results", str(root.parent / "lat")]
    if "both are there" in refusal:
        (root.parent / "tp" / campaign).mkdir(parents=True)  # a directory of that name where trexlab runs
    if "no point" in refusal:
        argv += ["--frame-size", "128"]
    if "2 have it" in refusal:
        two_points_of_one_set_up(root, campaign)
    given, refusal = (text.format(campaign=campaign, point=point, copy=COPY) for text in (given, refusal))
    assert cli.main([*argv, "--rate-from", given]) == 2
    assert capsys.readouterr().err.strip() == f"trexlab latency: rate-from='{given}': {refusal}"
    assert not (root.parent / "lat").exists()


def test_a_spec_takes_a_stored_campaigns_point_of_its_set_up_only_where_one_is_or_its_search_names_one(stored, root):
    # Two stored points of the latency point's set-up, differing in their search only. Before, the first was taken
    # whichever the spec meant; with rate.params naming the second, it was refused as "its search differs".
    campaign = stored[1].rsplit("/", 1)[-1]
    point = two_points_of_one_set_up(root, campaign, trial_duration=2)
    with pytest.raises(experiment.InvalidExperiment, match=rf"one point of this set-up: 2 have it \({point}, {COPY}\)"):
        plan_campaign(latency(), root)
    for search, taken in ((SEARCH, point), ({**SEARCH, "trial_duration": 2}, COPY)):
        plans = plan_campaign(latency(rate_of({"params": search})), root)
        assert plans[0].rate_source["campaign"]["point"] == taken
