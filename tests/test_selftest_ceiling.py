"""The tester self-test's ceiling, recorded per machine and compared against automatically (issue 4).

On the sim generator, whose simulated tester cannot send above ``tester_ceiling``: ``trexlab selftest``
records the ceiling it finds, and later runs of the other procedures warn, without being told the ceiling,
when their result comes within 10 % of it, and say in their provenance which ceiling they compared against.
"""

import dataclasses
import json
from pathlib import Path

import pytest

from trexlab import cli
from trexlab.plan.repetition import method_line
from trexlab.procedures import selftest
from trexlab.testbed.inventory import Lab, Node
from trexlab.trial import TrialSpec

TESTER_CEILING = 800_000  # fps the simulated tester can send per direction


def sim_args(capacity: float) -> list[str]:
    return ["--generator", "sim", "--generator-opt", f"capacity={capacity}",
            "--generator-opt", f"tester_ceiling={TESTER_CEILING}"]


def run_cli(tmp_path: Path, capsys, procedure: str, *args: str) -> tuple[dict, dict, str]:
    """(result, provenance, stderr) of one repetition of a procedure run through the CLI."""
    runs = tmp_path / "runs"
    results = runs / f"{procedure}-{len(list(runs.iterdir())) if runs.is_dir() else 0}"
    code = cli.main([procedure, *args, "--ceilings", str(tmp_path / "ceilings.json"), "--results", str(results),
                     "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    rep = results / "rep-001"
    return json.loads((rep / "result.json").read_text()), json.loads((rep / "provenance.json").read_text()), err


@pytest.fixture
def selftest_run(tmp_path, capsys):
    """A self-test of the simulated tester (DUT capacity far above it, as with ports looped back)."""
    run_cli(tmp_path, capsys, "selftest", *sim_args(1e9), "--frame-sizes", "64", "--max-rate", "1e6",
            "--resolution", "1000", "--trial-duration", "1")
    return tmp_path


def near_ceiling(notes: list[str]) -> bool:
    return any("self-test ceiling" in note for note in notes)


def test_selftest_records_its_ceiling_with_when_and_which_run(selftest_run):
    [entry] = json.loads((selftest_run / "ceilings.json").read_text())["ceilings"]
    assert TESTER_CEILING - 1000 <= entry["ceiling_fps"] <= TESTER_CEILING
    assert entry["host"] == "sim" and entry["generator"] == "sim"
    assert entry["frame_size"] == 64 and entry["directions"] == "bidirectional"
    assert entry["selftest_run"] == str(selftest_run / "runs" / "selftest-0") and entry["measured"]


def test_selftest_discloses_its_loss_tolerance_and_resolution(tmp_path, capsys):
    """The ceiling's method, as a throughput figure's: a tolerance raises the ceiling every later run is held to."""
    from trexlab.plan.repetition import method_line

    result, _, _ = run_cli(tmp_path, capsys, "selftest", *sim_args(1e9), "--frame-sizes", "64", "--max-rate",
                           "1e6", "--resolution", "1000", "--trial-duration", "1", "--loss-tolerance-percent", "0.1")
    assert result["loss_tolerance_percent"] == 0.1 and result["stopping_rule"] == "1000 fps"
    method = json.loads((tmp_path / "runs" / "selftest-0" / "summary.json").read_text())["method"]
    assert "loss tolerance 0.1 %; resolution 1000 fps; trial duration 1 s" in method_line(method)
    assert "ceiling_64B_fps" not in result["headline_at_least"], "the search met the tester's limit"
    capped, _, _ = run_cli(tmp_path / "capped", capsys, "selftest", *sim_args(1e9), "--frame-sizes", "64",
                           "--max-rate", "2e5", "--trial-duration", "1")
    assert capped["headline_at_least"] == {"ceiling_64B_fps": 2e5}, "a max_rate below the tester's limit: a bound"
    # The latency floor figures' own trial, and no tester ceiling to compare with: the self-test measures it.
    assert ("latency floor: one trial of 1 s per frame size at 50 % of its ceiling, 1000 tagged frames"
            in method_line(method)) and "tester ceiling" not in method_line(method)


def test_throughput_near_the_ceiling_warns_without_being_told_it(selftest_run, capsys):
    result, provenance, err = run_cli(selftest_run, capsys, "throughput", *sim_args(780_000), "--max-rate", "1e6",
                                      "--resolution", "1000", "--trial-duration", "1")
    assert result["throughput_fps"] == pytest.approx(780_000, abs=1000)
    assert near_ceiling(result["notes"]), result["notes"]
    compared = provenance["tester_ceiling"]
    assert compared["selftest_run"] == str(selftest_run / "runs" / "selftest-0")
    assert compared["ceiling_fps"] == result["params"]["tester_ceiling"]
    assert "comparing results against tester ceiling" in err


def test_throughput_far_below_the_ceiling_does_not_warn(selftest_run, capsys):
    result, provenance, _ = run_cli(selftest_run, capsys, "throughput", *sim_args(200_000), "--max-rate", "1e6",
                                    "--resolution", "1000", "--trial-duration", "1")
    assert result["throughput_fps"] == pytest.approx(200_000, abs=1000)
    assert not near_ceiling(result["notes"])
    assert provenance["tester_ceiling"]["ceiling_fps"] > 700_000, "it compared, and found the result far below"


def test_mlrsearch_near_the_ceiling_warns(selftest_run, capsys):
    result, _, _ = run_cli(selftest_run, capsys, "mlrsearch", *sim_args(780_000), "--max-rate", "1e6")
    assert all(g["conditional_throughput"] > 720_000 for g in result["goals"])
    assert [near_ceiling(g["notes"]) for g in result["goals"]] == [True, True], "NDR and PDR both near the ceiling"


@pytest.mark.parametrize(("procedure", "args"), [
    ("latency", ["--rate", "790000", "--tagged-frames", "500", "--trial-duration", "1", "--tag-delay", "0.5"]),
    ("pdv", ["--rate", "790000", "--trial-duration", "1"]),
    ("flr", ["--max-rate", "850000", "--trial-duration", "1"]),
])
def test_procedures_measuring_at_a_load_near_the_ceiling_warn(selftest_run, capsys, procedure, args):
    result, _, _ = run_cli(selftest_run, capsys, procedure, *sim_args(1e9), *args)
    assert near_ceiling(result["notes"]), result["notes"]


def test_no_selftest_means_no_ceiling_and_the_run_says_so(tmp_path, capsys):
    result, provenance, err = run_cli(tmp_path, capsys, "throughput", *sim_args(780_000), "--max-rate", "1e6",
                                      "--resolution", "1000", "--trial-duration", "1")
    assert not near_ceiling(result["notes"])
    assert provenance["tester_ceiling"]["ceiling_fps"] is None
    assert "no tester ceiling" in err and "trexlab selftest" in err


def test_another_frame_size_finds_no_ceiling(selftest_run, capsys):
    result, provenance, _ = run_cli(selftest_run, capsys, "throughput", *sim_args(780_000), "--max-rate", "1e6",
                                    "--resolution", "1000", "--trial-duration", "1", "--frame-size", "1518")
    assert provenance["tester_ceiling"]["ceiling_fps"] is None and not near_ceiling(result["notes"])


def test_a_given_ceiling_wins_over_the_recorded_one(selftest_run, capsys):
    result, provenance, _ = run_cli(selftest_run, capsys, "throughput", *sim_args(780_000), "--max-rate", "1e6",
                                    "--resolution", "1000", "--trial-duration", "1", "--tester-ceiling", "5e6")
    assert not near_ceiling(result["notes"])
    assert provenance["tester_ceiling"] == {"ceiling_fps": 5e6, "source": "given as tester_ceiling"}


def test_a_second_selftest_replaces_the_first(selftest_run, capsys):
    run_cli(selftest_run, capsys, "selftest", *sim_args(1e9), "--frame-sizes", "64,1518", "--max-rate", "1e6",
            "--resolution", "1000", "--trial-duration", "1")
    entries = json.loads((selftest_run / "ceilings.json").read_text())["ceilings"]
    assert sorted(e["frame_size"] for e in entries) == [64, 1518]
    assert {e["selftest_run"] for e in entries} == {str(selftest_run / "runs" / "selftest-1")}


def test_a_corrupt_ceilings_file_is_one_line_and_nothing_runs(tmp_path, capsys):
    (tmp_path / "ceilings.json").write_text("{not json")
    code = cli.main(["throughput", *sim_args(1e6), "--ceilings", str(tmp_path / "ceilings.json"),
                     "--results", str(tmp_path / "tp")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "ceilings file" in err
    assert not (tmp_path / "tp").exists()


def namespace_lab(name: str, topology: str) -> Lab:
    tester = Node(name="tester", role="tester", ansible_host=f"2001:2:0:ff{len(name)}::3", netns=f"tl-{name}-tester",
                  cpus=(0,))
    return Lab(name=name, kind="local", topology=topology, nodes={"tester": tester},
               inventory=Path(f"inventory/generated/{name}/hosts.yml"))


def test_a_ceiling_from_the_loopback_lab_is_found_from_a_dut_lab_on_the_same_machine(tmp_path):
    """The self-test runs on another lab than the DUT: a namespace tester is this machine in both."""
    traffic = TrialSpec(offered_load=1, duration=1)
    result = {"ceilings_fps": {"64": 700_000.0}}
    selftest.record_ceilings([result], "results/x", "software", namespace_lab("bl", "loopback"), traffic,
                             tmp_path / "c.json")
    found = selftest.find_ceiling("software", namespace_lab("bdut", "single"), traffic, tmp_path / "c.json")
    assert found["ceiling_fps"] == 700_000.0 and found["lab"] == "bl"
    assert selftest.find_ceiling("trex", namespace_lab("bdut", "single"), traffic, tmp_path / "c.json") is None


def test_a_selftest_on_a_dut_lab_is_not_recorded(tmp_path):
    traffic = TrialSpec(offered_load=1, duration=1)
    message = selftest.record_selftest(tmp_path, 1, "software", namespace_lab("bdut", "single"), traffic,
                                       tmp_path / "c.json")
    assert "not recorded" in message and "loopback" in message
    assert not (tmp_path / "c.json").exists()


def test_campaigns_record_and_compare_against_the_ceiling_as_the_cli_does(tmp_path):
    """A selftest campaign records the ceiling; a throughput campaign then warns near it and says which one."""
    from trexlab.plan.campaign import Campaign
    from trexlab.spec import experiment

    ceilings = tmp_path / "ceilings.json"
    options = {"capacity": 1e9, "tester_ceiling": TESTER_CEILING}
    traffic = {"frame_size": [64, 64], "ip_version": [4, 4], "receive_tail": 0}
    own = experiment.validate({
        "name": "own", "generator": "sim", "generator_options": options, "traffic": traffic, "repetitions": 2,
        "procedure": {"name": "selftest", "params": {"frame_sizes": [64], "max_rate": 1e6, "resolution": 1000,
                                                      "trial_duration": 1}}})
    lines = []
    Campaign(own, tmp_path, ceilings=ceilings, progress=lines.append).run()
    [entry] = json.loads(ceilings.read_text())["ceilings"]
    assert TESTER_CEILING - 1000 <= entry["ceiling_fps"] <= TESTER_CEILING and entry["generator"] == "sim"
    assert any("tester ceilings recorded" in line for line in lines)

    dut = experiment.validate({
        "name": "dut", "generator": "sim", "generator_options": {**options, "capacity": 780_000},
        "traffic": traffic, "repetitions": 1,
        "procedure": {"name": "throughput", "params": {"max_rate": 1e6, "resolution": 1000, "trial_duration": 1}}})
    outcome = Campaign(dut, tmp_path, ceilings=ceilings).run()
    [rep] = Path(outcome["campaign"]).glob("*/rep-001")
    assert json.loads((rep / "provenance.json").read_text())["tester_ceiling"]["ceiling_fps"] == entry["ceiling_fps"]
    assert near_ceiling(json.loads((rep / "result.json").read_text())["notes"])


def test_a_ceiling_whose_search_never_failed_is_recorded_and_shown_as_a_lower_bound(tmp_path, capsys):
    """max_rate below what the tester sends: every trial passed, so the figure is max_rate's neighbourhood, not the
    tester's limit. The entry says so, and so do the self-test's line and every run that compares against it."""
    _, _, err = run_cli(tmp_path, capsys, "selftest", *sim_args(1e9), "--frame-sizes", "64",
                        "--max-rate", str(TESTER_CEILING // 2), "--resolution", "1000", "--trial-duration", "1")
    [entry] = json.loads((tmp_path / "ceilings.json").read_text())["ceilings"]
    assert entry["ceiling_at_least"] is True and entry["ceiling_fps"] <= TESTER_CEILING // 2
    assert f"64 B at least {entry['ceiling_fps']:,.0f} fps" in err, err
    _, provenance, err = run_cli(tmp_path, capsys, "throughput", *sim_args(1e5), "--frame-size", "64",
                                 "--max-rate", "1e6", "--resolution", "1000", "--trial-duration", "1")
    assert f"tester ceiling at least {entry['ceiling_fps']:,.0f} fps" in err, err
    assert provenance["tester_ceiling"]["ceiling_at_least"] is True
    # The method beside the figures (summary.json, the CLI's and the report's method line) says so too.
    [summary] = (tmp_path / "runs").glob("throughput-*/summary.json")
    method = json.loads(summary.read_text())["method"]
    assert method["tester_ceiling_at_least"] is True
    assert f"tester ceiling at least {entry['ceiling_fps']:,.0f} fps" in method_line(method), method_line(method)
    # A ceiling given beside that entry is the given one, no lower bound (the entry gives the latency floor only).
    _, provenance, err = run_cli(tmp_path, capsys, "throughput", *sim_args(1e5), "--frame-size", "64",
                                 "--max-rate", "1e6", "--resolution", "1000", "--trial-duration", "1",
                                 "--tester-ceiling", "300000")
    assert not provenance["tester_ceiling"].get("ceiling_at_least") and "ceiling at least" not in err, err


def test_a_ceiling_the_tester_failed_above_is_no_lower_bound(selftest_run, capsys):
    [entry] = json.loads((selftest_run / "ceilings.json").read_text())["ceilings"]
    assert entry["ceiling_at_least"] is False
    _, _, err = run_cli(selftest_run, capsys, "throughput", *sim_args(1e5), "--frame-size", "64",
                        "--max-rate", "1e6", "--resolution", "1000", "--trial-duration", "1")
    assert f"tester ceiling {entry['ceiling_fps']:,.0f} fps (64 B" in err, err
    [summary] = (selftest_run / "runs").glob("throughput-*/summary.json")
    method = json.loads(summary.read_text())["method"]
    assert "tester_ceiling_at_least" not in method and "ceiling at least" not in method_line(method), method


def test_make_demo_measures_its_tester_for_every_load_the_demo_offers():
    """make demo runs experiments/tester-selftest at scale demo first and the demo compares against that ceiling
    (scripts/demo.sh): the self-test must be looked up by the demo's traffic (same generator, frame size and
    directions) and carry every load the demo may offer with the ceiling margin to spare, or a demo result could
    be judged against a ceiling the check stopped short of."""
    from trexlab.plan.runplan import traffic_template
    from trexlab.procedures.common import CEILING_MARGIN
    from trexlab.spec import experiment

    [check] = [point.spec for point in experiment.load("experiments/tester-selftest/experiment.yml").scaled(
        "demo").points()]
    demo = experiment.load("experiments/demo/experiment.yml")
    for scale in (None, *demo.spec.get("scale", {})):
        spec = demo.scaled(scale).spec
        assert (check["generator"], check["lab"]["kind"]) == (spec["generator"], spec["lab"]["kind"]), scale
        measured, run = traffic_template(check["traffic"]), traffic_template(spec["traffic"])
        assert (measured.directions, measured.port_mode) == (run.directions, run.port_mode), scale
        assert (selftest.tester_options(check["generator"], check.get("generator_options"))
                == selftest.tester_options(spec["generator"], spec.get("generator_options"))), scale
        assert max(spec["traffic"]["frame_size"]) in check["procedure"]["params"]["frame_sizes"], scale
        offered = spec["procedure"]["params"]["max_rate"]
        assert check["procedure"]["params"]["max_rate"] >= offered / (1 - CEILING_MARGIN), (scale, offered)


def test_a_selftest_lower_bound_is_not_said_of_a_dut():
    """A self-test has no DUT: its lower-bound note (the summary's text table) speaks of the figure measured."""
    from trexlab.plan.repetition import summary_lines

    figures = {"ceiling_64B_fps": {"count": 1, "missing": 0, "tester_bound": 0, "median": 112_000.0,
                                   "median_lower_bound": True, "min": 112_000.0, "max": 112_000.0,
                                   "dispersion_percent": 0.0}}
    [bound] = [line for line in summary_lines(figures) if "LOWER BOUND" in line]
    assert "DUT" not in bound and "may be higher" in bound, bound


def test_a_given_ceiling_is_no_lower_bound_though_the_recorded_one_is(tmp_path):
    """Latency takes the floor from the recorded entry and the ceiling as given: the entry's 'at least' (its search
    met no failing load) belongs to its own ceiling, not to the given one."""
    from trexlab.procedures import latency

    traffic = TrialSpec(offered_load=1, duration=1)
    result = {"ceilings_fps": {"64": 112_000.0}, "headline_at_least": {"ceiling_64B_fps": True}}
    selftest.record_ceilings([result], "results/x", "software", namespace_lab("bl", "loopback"), traffic,
                             tmp_path / "c.json")
    params = latency.Params(rate=1000, tester_ceiling=300_000)
    _, record = selftest.ceiling_for(params, traffic, "software", namespace_lab("bdut", "single"), tmp_path / "c.json")
    assert record["ceiling_fps"] == 300_000 and record["ceiling_at_least"] is False, record


def test_a_file_of_another_tool_named_as_the_ceilings_file_is_left_as_it_was(tmp_path, capsys):
    """--ceilings (make run CEILINGS=) may name a file trexlab did not make: another tool's JSON is refused, not
    replaced by a ceilings file, and a file of the lock's name is not emptied."""
    traffic = TrialSpec(offered_load=1, duration=1)
    result = {"ceilings_fps": {"64": 700_000.0}}
    foreign = tmp_path / "config.json"
    foreign.write_text('{"auths": {"registry": "token"}}')
    lock = tmp_path / "new.json.lock"
    lock.write_text("someone's")
    with pytest.raises(ValueError, match="not a ceilings file"):
        selftest.record_ceilings([result], "results/x", "software", namespace_lab("bl", "loopback"), traffic, foreign)
    assert foreign.read_text() == '{"auths": {"registry": "token"}}'
    selftest.record_ceilings([result], "results/x", "software", namespace_lab("bl", "loopback"), traffic,
                             tmp_path / "new.json")
    assert lock.read_text() == "someone's"
    code = cli.main(["throughput", *sim_args(1e6), "--ceilings", str(foreign), "--results", str(tmp_path / "tp")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "not a ceilings file" in err, err
    assert not (tmp_path / "tp").exists()


def test_a_link_planted_beside_the_ceilings_file_is_not_written_through(tmp_path):
    """A results root received from someone else may hold links where the self-test writes beside its ceilings file
    (its .tmp, its .lock): the user's own file they point at was overwritten with the ceilings."""
    traffic = TrialSpec(offered_load=1, duration=1)
    result = {"ceilings_fps": {"64": 700_000.0}}
    mine = tmp_path / "bashrc"
    for planted in ("tester-ceilings.json.tmp", "tester-ceilings.json.lock"):
        mine.write_text("the user's own")
        root = tmp_path / planted
        root.mkdir()
        (root / planted).symlink_to(mine)
        with pytest.raises(OSError):
            selftest.record_ceilings([result], "results/x", "software", namespace_lab("bl", "loopback"), traffic,
                                     root / "tester-ceilings.json")
        assert mine.read_text() == "the user's own", planted


def test_loads_in_text_lines_are_written_as_the_report_writes_them():
    # A rate in a line a person reads (the ceiling's text, each repetition's relevant bounds under the summary) is
    # written as the tables and the method line write it (stats.WHOLE: 436,000), so one figure reads the same in
    # the terminal and in the report.
    from trexlab.plan.repetition import bounds_note

    assert selftest.ceiling_text({"ceiling_fps": 812345.0}) == "812,345 fps"
    assert selftest.ceiling_text({"ceiling_fps": 500000.0, "ceiling_at_least": True}).startswith(
        "at least 500,000 fps (")
    note = bounds_note("NDR_fps", {"repetitions": [
        {"repetition": 1, "relevant_lower_bound_fps": 436000.0, "relevant_upper_bound_fps": 437500.0}]})
    assert note == "NDR_fps: relevant lower bound - relevant upper bound, fps per direction: rep 1 436,000 - 437,500"


def test_a_ceiling_is_compared_against_only_on_the_tester_set_up_it_was_measured_with(selftest_run, capsys):
    """Lencse & Szilagyi 2024, section 4.2: the self-test ran the tester as the measurements did (64 B, both
    directions: 'we always generated 64 bytes long frames'). The ceiling was looked up by frame size and directions
    alone: a run of RFC 4814 pseudorandom ports (the sender draws two per frame) or of a simulated tester that sends
    half as fast was compared against the ceiling of fixed ports and of the faster tester, and not marked where its
    own tester held it down."""
    base = ("--max-rate", "1e6", "--resolution", "1000", "--trial-duration", "1")
    _, provenance, _ = run_cli(selftest_run, capsys, "throughput", *sim_args(200_000), *base)
    assert provenance["tester_ceiling"]["ceiling_fps"] > 700_000, "the set-up the self-test measured finds it"
    result, provenance, err = run_cli(selftest_run, capsys, "throughput", *sim_args(200_000), *base,
                                      "--port-mode", "rfc4814")
    assert provenance["tester_ceiling"]["ceiling_fps"] is None and "no tester ceiling" in err, provenance
    slower = ["--generator", "sim", "--generator-opt", "capacity=1e9", "--generator-opt",
              f"tester_ceiling={TESTER_CEILING // 2}"]
    result, provenance, err = run_cli(selftest_run, capsys, "throughput", *slower, *base)
    assert provenance["tester_ceiling"]["ceiling_fps"] is None, "another tester's ceiling is not this one's"
    assert provenance["tester_ceiling"]["looked_up"]["generator_options"] == {"tester_ceiling": TESTER_CEILING // 2}


def test_a_software_ceiling_holds_for_its_send_method_and_sender_threads_only(tmp_path):
    """swtester's sender threads and send method set how fast it sends: a ceiling of one sender thread is no ceiling
    of four (nor of four one of one). Options that leave the tester as it is (cross_check reads the DUT's counters)
    do not part a ceiling from a run."""
    traffic = TrialSpec(offered_load=1, duration=1)
    path = tmp_path / "c.json"
    selftest.record_ceilings([{"ceilings_fps": {"64": 700_000.0}}], "results/x", "software",
                             namespace_lab("bl", "loopback"), traffic, path, options={"sender_threads": 1})
    dut = namespace_lab("bdut", "single")
    assert selftest.find_ceiling("software", dut, traffic, path)["ceiling_fps"] == 700_000.0, "1 is the default"
    assert selftest.find_ceiling("software", dut, traffic, path, options={"cross_check": False}) is not None
    assert selftest.find_ceiling("software", dut, traffic, path, options={"sender_threads": 4}) is None
    assert selftest.find_ceiling("software", dut, traffic, path, options={"send_method": "sendmmsg"}) is None
    assert selftest.find_ceiling("software", dut, dataclasses.replace(traffic, port_mode="rfc4814"), path) is None


def test_every_tester_option_is_an_option_of_its_generator():
    from trexlab.generators import GENERATORS
    from trexlab.spec.schema import generator_options_class

    assert set(selftest.TESTER_OPTIONS) == set(GENERATORS)
    for generator, names in selftest.TESTER_OPTIONS.items():
        assert set(names) <= {f.name for f in dataclasses.fields(generator_options_class(generator))}, generator


def test_the_method_line_discloses_the_margin_a_figure_is_tester_bound_within():
    """The margin is trexlab's own choice (the papers give none: the paper's tester ran 3.6 times above its DUTs),
    so it goes beside every figure compared against a ceiling, as the loss tolerance does: the method line named the
    ceiling and not how near it a figure becomes a lower bound."""
    from trexlab.procedures.common import CEILING_MARGIN

    for method in ({"method": "x", "tester_ceiling": 800_000.0},
                   {"method": "x", "tester_ceiling": 800_000.0, "tester_ceiling_at_least": True}):
        line = method_line(method)
        assert f"a figure within {CEILING_MARGIN:.0%} of it is marked tester-bound" in line, line
    assert "tester-bound" not in method_line({"method": "x"}), "no ceiling, no margin"
