"""Campaigns on the sim generator: resumable, failures recorded, killed mid-run without loss or duplicates."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from trexlab.plan.campaign import Campaign, CampaignError
from trexlab.results.store import read_point_log
from trexlab.spec import experiment

import browser

SPEC = {
    "name": "resume",
    "description": "two simulated SUTs, throughput repeated",
    "generator": "sim",
    "generator_options": {"capacity": 400000, "capacity_noise": 0.01},
    "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "directions": "bidirectional", "receive_tail": 0},
    "procedure": {"name": "throughput",
                  "params": {"max_rate": 1000000, "resolution": 20000, "trial_duration": 1}},
    "sweep": {"generator_options.capacity": [300000, 600000]},
    "repetitions": 4,
}


def finished_reps(campaign: Path) -> dict[str, list[Path]]:
    return {point.name: sorted(r for r in point.glob("rep-*") if (r / "result.json").is_file())
            for point in campaign.iterdir() if point.is_dir()}


def test_campaign_runs_every_point_and_a_rerun_skips_them(tmp_path):
    exp = experiment.validate(json.loads(json.dumps(SPEC)))
    first = Campaign(exp, tmp_path).run()
    assert first["done"] == 2 and first["failed"] == []
    reps = finished_reps(Path(first["campaign"]))
    assert sorted(len(v) for v in reps.values()) == [4, 4]
    stamps = {r: (r / "result.json").stat().st_mtime_ns for v in reps.values() for r in v}
    lines = []
    second = Campaign(exp, tmp_path, progress=lines.append).run()
    assert second == first
    assert "2 done earlier" in lines[0] and len(lines) == 1, "a finished campaign runs nothing again"
    assert {r: (r / "result.json").stat().st_mtime_ns for r in stamps} == stamps


def test_campaign_log_times_carry_their_utc_offset(tmp_path, monkeypatch):
    """campaign.log's times are UTC with their offset, as provenance.json's "started": a local time without one
    read as another hour beside the run's records wherever the zone differs (here one 5 h 30 off UTC)."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        before = datetime.now(UTC).replace(microsecond=0)
        spec = {**json.loads(json.dumps(SPEC)), "repetitions": 1, "sweep": {"generator_options.capacity": [300000]}}
        result = Campaign(experiment.validate(spec), tmp_path).run()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    lines = (Path(result["campaign"]) / "campaign.log").read_text().splitlines()
    started = json.loads(next(Path(result["campaign"]).glob("*/rep-001/provenance.json")).read_text())["started"]
    stamps = [datetime.fromisoformat(line.split(" ", 1)[0]) for line in lines]
    assert lines and all(stamp.utcoffset() == timedelta(0) for stamp in stamps), lines[:3]
    assert all(before <= stamp <= datetime.now(UTC) for stamp in stamps), (before, lines[:3])
    assert started[19:] == lines[0].split(" ", 1)[0][19:] == "+00:00", (started, lines[0])


@pytest.mark.parametrize("order", ["sequential", "interleaved"])
def test_a_failing_point_is_recorded_and_the_campaign_goes_on(tmp_path, order):
    # Latency at each point's measured throughput: the second point's SUT forwards less than the search's
    # minimum rate, so its throughput runs find no rate and the point fails when it is run (every plan was valid).
    # Interleaved, every point's throughput runs go first, in rounds; the failed point is left out of the latency
    # rounds after.
    spec = {"name": "fails", "generator": "sim", "generator_options": {"capacity": 300000}, "order": order,
            "traffic": {"directions": "forward", "receive_tail": 0},
            "procedure": {"name": "latency", "params": {
                "rate": {"from": "throughput", "params": {"max_rate": 1000000, "min_rate": 20000,
                                                         "trial_duration": 1}},
                "trial_duration": 2, "tag_delay": 1, "tagged_frames": 500}},
            "sweep": {"generator_options.capacity": [600000, 5000]}, "repetitions": 1}
    outcome = Campaign(experiment.validate(spec), tmp_path).run()
    assert outcome["done"] == 1 and len(outcome["failed"]) == 1
    log = read_point_log(outcome["campaign"])
    error = log[outcome["failed"][0]]["error"]
    assert "found none" in error and "\n" not in error
    # summary.csv, what other tools read, has the failed point's rows, with its status and error (not one point fewer).
    summary = pd.read_csv(Path(outcome["campaign"]) / "summary.csv")
    failed = summary[summary["point"] == outcome["failed"][0]]
    assert set(summary["point"]) == {p.point_id for p in experiment.validate(spec).points()}
    assert len(failed) == len(summary) / 2 and set(failed["status"]) == {"failed"} and set(failed["count"]) == {0}
    assert set(failed["error"]) == {error} and set(failed["capacity"]) == {5000}
    assert set(summary[summary["point"] != outcome["failed"][0]]["status"]) == {"done"}
    good = next(point for point in log if point not in outcome["failed"])
    latency = (Path(outcome["campaign"]) / good / "rep-001" / "result.json").stat().st_mtime_ns
    throughputs = [p.stat().st_mtime_ns for p in Path(outcome["campaign"]).glob("*/throughput/rep-*/result.json")]
    # In sequence the first point's throughput and latency ran before the second point's throughput; in rounds
    # every point's throughput ran before any latency repetition.
    assert len(throughputs) == 2 and (max(throughputs) < latency) == (order == "interleaved")


def test_a_point_that_cannot_be_planned_stops_the_campaign_before_any_point_runs(tmp_path):
    spec = json.loads(json.dumps(SPEC))
    spec["sweep"] = {"generator_options.capacity": [600000, 0]}  # capacity 0: no valid simulated SUT
    with pytest.raises(experiment.InvalidExperiment, match=r"point 1 .*generator_options.capacity=0"):
        Campaign(experiment.validate(spec), tmp_path)
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_killed_campaign_resumes_with_no_repetition_lost_or_duplicated(tmp_path):
    spec = json.loads(json.dumps(SPEC))
    # Trials take 10 % of their simulated time on the wall clock, so the campaign can be killed mid-run.
    spec["generator_options"]["wall_clock_factor"] = 0.1
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "experiment.yml").write_text(yaml.safe_dump(spec))
    argv = [sys.executable, "-m", "trexlab.cli", "campaign", str(tmp_path / "exp"), "--results", str(tmp_path)]
    runner = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    campaign_dir = tmp_path / "resume" / Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).id
    deadline = time.monotonic() + 120
    try:
        # Kill it in the middle of the first point's third repetition.
        while time.monotonic() < deadline:
            if campaign_dir.is_dir() and sum(len(v) for v in finished_reps(campaign_dir).values()) >= 2:
                break
            assert runner.poll() is None, runner.stderr.read().decode()
            time.sleep(0.05)
        time.sleep(0.3)
        os.killpg(runner.pid, signal.SIGKILL)
    finally:
        runner.wait(10)
        runner.stdout.close()  # not left to the garbage collector, which warns of each pipe (a ResourceWarning)
        runner.stderr.close()
    before = {r: (r / "result.json").read_bytes() for v in finished_reps(campaign_dir).values() for r in v}
    assert 2 <= len(before) < 8, "killed mid-campaign"

    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["done"] == 2
    after = finished_reps(campaign_dir)
    assert sorted(len(v) for v in after.values()) == [4, 4]
    for point, reps in after.items():
        assert [r.name for r in reps] == ["rep-001", "rep-002", "rep-003", "rep-004"], point
        assert {p.name for p in (campaign_dir / point).glob("rep-*")} == {r.name for r in reps}, "no stray runs"
    # What finished before the kill was kept as it was, not measured again.
    assert all(path.read_bytes() == content for path, content in ((p / "result.json", c) for p, c in before.items()))
    assert "done earlier" in rerun.stderr


def results_in_run_order(campaign: Path) -> list[tuple[str, str]]:
    """(point, repetition) of every finished repetition, in the order their results were written."""
    done = [r for reps in finished_reps(campaign).values() for r in reps]
    return [(r.parent.name, r.name) for r in sorted(done, key=lambda r: (r / "result.json").stat().st_mtime_ns)]


def test_an_interleaved_campaign_runs_in_seeded_rounds_and_resumes_mid_round_as_if_never_stopped(tmp_path,
                                                                                                 monkeypatch):
    """order: interleaved runs repetition r of every point in round r, the round's points in the order its seed
    gives (campaign.json, each repetition's provenance): a burst of load on the host then falls on one repetition of
    several points, not on one point's median. Stopped in the middle of a repetition of round 2, it goes on with
    that repetition (its logged trials replayed) and the rest of round 2, in the same order, and ends with the
    results of an uninterrupted run: none lost, none run twice."""
    spec = {**json.loads(json.dumps(SPEC)), "order": "interleaved", "repetitions": 3,
            "sweep": {"generator_options.capacity": [300000, 600000, 450000]}}
    exp = experiment.validate(spec)
    from trexlab.plan.campaign import round_order
    from trexlab.results.store import RunDir

    ids = [p.point_id for p in exp.points()]
    whole = Path(Campaign(exp, tmp_path / "whole").run()["campaign"])
    manifest = json.loads((whole / "campaign.json").read_text())
    seed = manifest["order"]["seed"]
    assert manifest["order"] == {"order": "interleaved", "seed": seed, "repetitions_per_round": 1}
    rounds: list[list[str]] = []
    for r in (1, 2, 3):  # each round in its seed's order, not beginning with the point the last one ended with
        rounds.append(round_order(seed, 1, r, ids))
        if r > 1 and rounds[-1][0] == rounds[-2][-1]:
            rounds[-1][:2] = rounds[-1][1::-1]
    assert rounds != [ids] * 3, "the seed shuffles some round"
    expected = [(pid, f"rep-{r:03d}") for r, order in enumerate(rounds, start=1) for pid in order]
    assert results_in_run_order(whole) == expected
    for pid, rep in expected:
        order = json.loads((whole / pid / rep / "provenance.json").read_text())["order"]
        assert order == {**manifest["order"], "stage": "procedure", "round": int(rep[4:]),
                         "place": rounds[int(rep[4:]) - 1].index(pid) + 1, "points_in_round": 3}

    # Stopped (as by a crash) as the third trial of round 2's second repetition is logged.
    trials_before = sum(len((whole / p / r / "trials.jsonl").read_text().splitlines()) for p, r in expected[:4])
    append_trial, count = RunDir.append_trial, [0]

    def crashing(self, *args, **kwargs):
        count[0] += 1
        if count[0] == trials_before + 3:
            raise KeyboardInterrupt
        return append_trial(self, *args, **kwargs)

    monkeypatch.setattr(RunDir, "append_trial", crashing)
    with pytest.raises(KeyboardInterrupt):
        Campaign(exp, tmp_path / "stopped").run()
    monkeypatch.setattr(RunDir, "append_trial", append_trial)
    stopped = tmp_path / "stopped" / whole.relative_to(tmp_path / "whole")
    kept = {(p, r): (stopped / p / r / "result.json").read_bytes() for p, r in results_in_run_order(stopped)}
    assert list(kept) == expected[:4]
    lines: list[str] = []
    assert Campaign(exp, tmp_path / "stopped", progress=lines.append).run()["done"] == 3
    assert results_in_run_order(stopped) == expected, "round 2 finished in its order, then round 3"
    assert all((stopped / p / r / "result.json").read_bytes() == kept[p, r] for p, r in kept), "not run again"
    assert any(f"{expected[4][0]}: repetition 2 resumed: 2 logged trial(s) replayed" in line for line in lines)
    for p, r in expected:  # no repetition and no trial lost or duplicated
        assert (stopped / p / r / "result.json").read_bytes() == (whole / p / r / "result.json").read_bytes()
        assert len((stopped / p / r / "trials.jsonl").read_text().splitlines()) == len(
            (whole / p / r / "trials.jsonl").read_text().splitlines())
    assert {d.name for p in ids for d in (stopped / p).glob("rep-*")} == {"rep-001", "rep-002", "rep-003"}


def test_run_experiment_playbook_runs_the_campaign_and_logs_its_progress(tmp_path):
    """playbooks/run-experiment.yml is the Ansible spelling of make run: same campaign, same store."""
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "experiment.yml").write_text(yaml.safe_dump(SPEC))
    repo = Path(__file__).parent.parent
    play = [str(Path(sys.executable).parent / "ansible-playbook"), "playbooks/run-experiment.yml",
            "-e", f"results={tmp_path}"]
    env = {**os.environ, "ANSIBLE_CONFIG": str(repo / "ansible.cfg")}
    done = subprocess.run([*play, "-e", f"experiment={tmp_path / 'exp'}"], capture_output=True, text=True,
                          cwd=repo, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    campaign_dir = tmp_path / "resume" / Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path).id
    assert sorted(len(v) for v in finished_reps(campaign_dir).values()) == [4, 4]
    log = (campaign_dir / "campaign.log").read_text()
    assert "point 2/2" in log and "repetition 4/4" in log
    assert "repetition 4, binary search: trial 1 at 1,000,000 fps, loss ratio" in log, "each trial's end is shown"

    missing = subprocess.run([*play, "-e", f"experiment={tmp_path / 'nope'}"], capture_output=True, text=True,
                             cwd=repo, env=env, timeout=300)
    assert missing.returncode != 0 and "nope" in missing.stdout

    # The campaign runs on the lab of the inventory given with -i (here one that is no trexlab lab, which the
    # campaign names), never on the default lab's.
    inventory = tmp_path / "elsewhere" / "hosts.yml"
    inventory.parent.mkdir()
    inventory.write_text("all:\n  hosts: {}\n")
    other = subprocess.run([*play, "-i", str(inventory), "-e", "experiment=gaming-loss-tolerance"],
                           capture_output=True, text=True, cwd=repo, env=env, timeout=300)
    assert other.returncode != 0 and f"inventory {inventory}:" in other.stdout, other.stdout[-3000:]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, str, dict]:
    """SPEC's campaign and its HTML report, made once for the tests that read it (the notebook's run is 5-10 s of
    CPU and the report the same each time), with what the render wrote to stderr, its kernel's lines included, and
    the kernel's connection as its manager wrote it (with the mode and owner of the directory of an ipc kernel's
    sockets, taken while they exist)."""
    from jupyter_client.manager import KernelManager

    from trexlab.results.report import render

    outcome = Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path_factory.mktemp("report")).run()
    connection: dict = {}
    write = KernelManager.write_connection_file

    def recorded(manager, **kwargs):
        write(manager, **kwargs)
        connection.update(manager.get_connection_info(session=False))
        if manager.transport == "ipc":
            where = os.stat(os.path.dirname(os.path.abspath(manager.ip)))
            connection.update(directory_mode=where.st_mode & 0o777, directory_uid=where.st_uid)

    with tempfile.TemporaryFile() as stderr, pytest.MonkeyPatch.context() as patch:
        patch.setattr(KernelManager, "write_connection_file", recorded)
        saved = os.dup(2)  # the kernel inherits file descriptor 2
        os.dup2(stderr.fileno(), 2)
        try:
            html = render(outcome["campaign"])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        stderr.seek(0)
        return html, stderr.read().decode(errors="replace"), connection


@pytest.fixture(scope="module")
def report(rendered) -> Path:
    return rendered[0]


def test_a_report_runs_its_kernel_with_encrypted_channels(rendered):
    """The kernel's sockets were TCP on localhost: without the kernel manager's CurveZMQ keys the notebook's code
    and outputs crossed them in plain text, and the kernel warned so on every `make report`. TCP ports are also
    found by binding port 0 and closing it before the kernel binds, so another process could take one in between:
    the kernel's channels are unix sockets (transport ipc) in a directory of this user's only, at an absolute path
    (a relative one is the manager's cwd for the client and the notebook's for the kernel), still with CurveZMQ keys."""
    _, stderr, connection = rendered
    assert "without encryption" not in stderr, stderr
    assert connection.get("transport") == "ipc", connection
    assert os.path.isabs(connection["ip"]), connection["ip"]
    assert connection["directory_mode"] == 0o700 and connection["directory_uid"] == os.getuid(), connection
    assert connection.get("curve_secretkey"), "the manager gave the kernel no CurveZMQ keys"


def test_report_of_a_campaign_is_html_with_its_table_and_plots(report):
    html = report
    text = html.read_text()
    assert html.name == "report.html" and html.with_suffix(".ipynb").is_file()
    assert "repetitions per point: 4" in text, "the method is disclosed"
    assert text.count("data:image/png") >= 2, "bar plot and repetition plot embedded"
    assert "throughput (frames/s)" in text and "Traceback" not in text


def test_report_renders_in_headless_chromium_with_table_and_plot(report, tmp_path):
    """The report as a reader sees it: Chromium's DOM has the summary table, its screenshot the bars."""
    dom, bar_pixels = browser.render(report, tmp_path)
    assert "dispersion_percent" in dom and "300000" in dom and "600000" in dom
    assert bar_pixels > 5000, f"only {bar_pixels} pixels of the bars' colour: the plot did not render"


def test_the_screenshot_pixel_count_takes_each_channel_within_the_tolerance_only(tmp_path):
    """browser.pixels_of_colour, which the rendering tests read the plots' pixels with: 11 off in every channel
    counts, 12 off in any one does not, above or below the colour (no unsigned wrap-around), nor does another
    colour."""
    from PIL import Image

    base = browser.BAR_RGB
    shades = [tuple(c + d for c in base) for d in (0, 11, -11)]
    shades += [tuple(c + (d if i == k else 0) for i, c in enumerate(base)) for k in range(3) for d in (12, -12)]
    shades += [(255, 255, 255), (0, 0, 0)]
    image = Image.new("RGB", (len(shades), 2))
    for x, rgb in enumerate(shades):
        image.putpixel((x, 0), rgb)
        image.putpixel((x, 1), (255, 255, 255))
    image.save(tmp_path / "shot.png")
    assert browser.pixels_of_colour(tmp_path / "shot.png", base) == 3


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parent.parent / "experiments").iterdir()
                                        if (p / "experiment.yml").is_file()))
def test_shipped_experiments_are_valid_at_every_scale(name):
    exp = experiment.load(Path(__file__).parent.parent / "experiments" / name)
    assert exp.points(), name
    for scale in (exp.spec.get("scale") or {}):
        assert exp.scaled(scale).points()
    assert (Path(__file__).parent.parent / "experiments" / name / "README.md").is_file(), f"{name} has no README"


def test_site_yml_is_applied_only_where_its_record_names_other_networks(tmp_path):
    """A lab whose last complete playbooks/site.yml recorded the point's number of destination networks is not
    configured again (half a minute per campaign on an emulated DUT); no record, or another number, applies it."""
    from trexlab.plan.campaign import Campaign, configured_networks

    class Lab:
        duts = ["dut1"]
        inventory = str(tmp_path / "hosts.yml")

    def applied(record) -> list[str]:
        if record is None:
            (tmp_path / "configured.json").unlink(missing_ok=True)
        else:
            (tmp_path / "configured.json").write_text(record)
        campaign = Campaign.__new__(Campaign)
        campaign.lab, campaign._based_on_networks, campaign._report, calls = Lab(), None, lambda line: None, []
        campaign.dir = tmp_path / "no-campaign-yet"
        campaign.playbook = lambda name, extra: calls.append((name, extra["trexlab_networks"]))
        campaign.configure_dut({"traffic": {"destination_networks": 2}})
        campaign.configure_dut({"traffic": {"destination_networks": 2}})  # the next point: nothing again
        return calls

    assert applied(None) == [("playbooks/site.yml", 2)]
    assert applied('{"trexlab_networks": 1}\n') == [("playbooks/site.yml", 2)]
    assert applied("{not json") == [("playbooks/site.yml", 2)]
    assert applied('{"trexlab_networks": 2}\n') == []
    assert configured_networks(Lab()) == 2


def test_endpoints_configured_with_the_same_settings_are_left_as_found(tmp_path):
    """A campaign configures the TCP endpoints and removes them again, unless roles/tcp_endpoints is already
    applied with exactly the experiment's settings (its facts beside the inventory): then it changes nothing."""
    from trexlab.plan.campaign import endpoints_configured_as
    from trexlab.testbed.inventory import Lab, Node
    from trexlab.testbed.inventory import TestPort as Port

    nodes = {n: Node(n, n, "::1", test_ports=(Port(0, "tcp0", f"02:00:00:00:00:0{i}"),))
             for i, n in enumerate(("tester", "client", "server"))}
    lab = Lab("kx", "vm", "single", nodes, inventory=tmp_path / "hosts.yml")
    (tmp_path / "facts").mkdir()

    def facts(mib=1, cc="reno", offload: bool | None = False):
        # offload None: facts of the role before it capped the segments per packet (no such key).
        tcp = {"congestion_control": cc} | ({} if offload is None else {"segmentation_offload": offload})
        server = {"role": "server", "address": {}, "iperf3_ports": [5201, 5202, 5203, 5204, 5205],
                  "http_port": 80, "http_path": "/download.bin", "http_file_bytes": mib * 1048576, **tcp}
        (tmp_path / "facts" / "server.json").write_text(json.dumps({"tcp_endpoints": server}))
        (tmp_path / "facts" / "client.json").write_text(json.dumps(
            {"tcp_endpoints": {"role": "client", "address": {}, **tcp}}))

    spec = {"http_file_mib": 1, "congestion_control": "reno"}
    assert not endpoints_configured_as(lab, spec), "no facts: not configured"
    facts(offload=None)
    assert not endpoints_configured_as(lab, spec), "applied with super-frames: applied again"
    facts()
    assert endpoints_configured_as(lab, spec)
    assert not endpoints_configured_as(lab, {**spec, "segmentation_offload": True})
    assert not endpoints_configured_as(lab, {**spec, "http_file_mib": 16})
    assert not endpoints_configured_as(lab, {"http_file_mib": 1}), "the kernel's congestion control wanted"
    assert not endpoints_configured_as(lab, {**spec, "iperf3_ports": [5201]})
    facts(mib=1024, cc=None)
    assert endpoints_configured_as(lab, {}), "the role's defaults"


def test_measure_again_starts_a_new_campaign_after_a_complete_one_and_resumes_an_interrupted_one(tmp_path, capsys):
    """make demo's rule (trexlab campaign --measure-again): a rerun measures anew; only an interrupted campaign of
    the same spec is resumed, and the line says which and how to start from scratch."""
    from trexlab import cli

    spec = {**SPEC, "sweep": {"generator_options.capacity": [300000]}, "repetitions": 1}
    path = tmp_path / "spec.yml"
    path.write_text(yaml.safe_dump(spec))
    argv = ["campaign", str(path), "--measure-again", "--results", str(tmp_path / "r"),
            "--ceilings", str(tmp_path / "none.json")]

    def run() -> tuple[Path, str]:
        assert cli.main(argv) == 0
        out, err = capsys.readouterr()
        return Path(json.loads(out)["campaign"]), err.splitlines()[0]

    first, said = run()
    assert said == f"trexlab campaign: a new campaign {first.name}" and not first.name.endswith("-2")
    second, said = run()
    assert second.name == f"{first.name}-2" and "are complete" in said and f"measuring anew in {second.name}" in said
    # Interrupted: the point of the second campaign never recorded as done (a crash before its record).
    (second / "points.jsonl").write_text("")
    resumed, said = run()
    assert resumed == second
    assert said == (f"trexlab campaign: resuming the interrupted campaign {second.name} (0 of 1 point(s) done); "
                    f"to measure from scratch instead, remove {second}")
    assert len(list(second.glob("*/rep-001/result.json"))) == 1, "the finished repetition was kept, not redone"
    third, _ = run()
    assert third.name == f"{first.name}-3"


def test_points_with_the_same_replaceable_dut_blocks_leave_their_configuration_to_the_next_one(tmp_path, monkeypatch):
    """Between points that apply the same impairment block to the same networks, the next point's netem run
    replaces the configuration (one playbook run instead of three on an emulated DUT); a point that fails, a
    point with other networks or blocks, and the campaign's end still remove it at once."""
    from types import SimpleNamespace

    import trexlab.plan.campaign as module

    class Lab:
        duts = ["dut1"]
        inventory = str(tmp_path / "hosts.yml")

    calls = []
    campaign = Campaign.__new__(Campaign)
    campaign.lab, campaign._based_on_networks, campaign._report = Lab(), 1, lambda line: None
    campaign.dir, campaign._eta, campaign._pending_undo, campaign._pending_spec = tmp_path / "none", None, [], {}
    campaign._dut_config_left_removed = True  # the DUT carried nothing from before (dut_config_left)
    campaign.order, campaign._said_skipped = {"order": "sequential"}, set()
    campaign.playbook = lambda name, extra: calls.append(
        (Path(name).stem, extra.get("netem_state") or extra.get("siit_tayga_state"), extra.get("netem_delay_ms")))

    def execute(plan, generator, **kwargs):
        if plan.fails:
            raise module.GeneratorError("the point failed")
        return {}

    monkeypatch.setattr(module, "execute", execute)
    monkeypatch.setattr(module, "read_json", lambda path: {})
    monkeypatch.setattr(module, "summary_lines", lambda summary, method: [])

    def point(delay_ms=None, networks=1, siit=False):
        dut = {"impairment": {"delay_ms": delay_ms}} if delay_ms is not None else {}
        if siit:
            dut["siit"] = {}
        return SimpleNamespace(spec={"dut": dut, "traffic": {"destination_networks": networks}}, point_id="p", index=0)

    def run(points, fails=(), no_generator=()):
        calls.clear()
        campaign._based_on_networks = 1
        with campaign._undone_at_the_end():
            for i, p in enumerate(points):
                plan = SimpleNamespace(output=tmp_path, fails=i in fails, rate_source=None, create_generator=(
                    (lambda: (_ for _ in ()).throw(OSError("no generator"))) if i in no_generator
                    else (lambda: SimpleNamespace(close=lambda: None))))
                with contextlib.suppress(module.GeneratorError, OSError):
                    campaign.run_point(p, i + 1, len(points), plan,
                                       next_spec=points[i + 1].spec if i + 1 < len(points) else None)
        return calls

    assert run([point(100), point(1000), point(10)]) == [
        ("dut-impairment", "present", 100), ("dut-impairment", "present", 1000), ("dut-impairment", "present", 10),
        ("dut-impairment", "absent", 10)]
    # A failed point is restored at once; the next configures afresh.
    assert run([point(100), point(1000), point(10)], fails={1}) == [
        ("dut-impairment", "present", 100), ("dut-impairment", "present", 1000), ("dut-impairment", "absent", 1000),
        ("dut-impairment", "present", 10), ("dut-impairment", "absent", 10)]
    # Other networks (site.yml between them) or another kind of block: removed before the next point.
    assert run([point(100), point(100, networks=2), point(100, networks=2, siit=True)]) == [
        ("dut-impairment", "present", 100), ("dut-impairment", "absent", 100), ("site", None, None),
        ("dut-impairment", "present", 100), ("dut-impairment", "absent", 100),
        ("dut-impairment", "present", 100), ("dut-siit", "present", None), ("dut-siit", "absent", None),
        ("dut-impairment", "absent", 100)]
    # A point whose impairment impairs nothing (delay 0: a sweep's loss-free point) runs no netem role: before the
    # impaired points none, between them the earlier point's configuration is removed, as for a point without one.
    assert run([point(0), point(0), point(1000), point(10)]) == [
        ("dut-impairment", "present", 1000), ("dut-impairment", "present", 10), ("dut-impairment", "absent", 10)]
    assert run([point(100), point(0), point(100)]) == [
        ("dut-impairment", "present", 100), ("dut-impairment", "absent", 100), ("dut-impairment", "present", 100),
        ("dut-impairment", "absent", 100)]
    # The last configured point's successor never got to configure (its generator failed): the end removes it.
    assert run([point(100), point(1000)], no_generator={1}) == [
        ("dut-impairment", "present", 100), ("dut-impairment", "absent", 100)]


def test_a_campaign_begun_with_another_spec_or_on_another_lab_is_not_resumed(tmp_path, monkeypatch):
    spec = json.loads(json.dumps(SPEC))
    spec["repetitions"] = 1
    Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path, "mine").run()
    manifest = json.loads((tmp_path / "resume" / "mine" / "campaign.json").read_text())
    # Another frame size into the same campaign id: its finished points would be reported as 1518-byte figures.
    spec["traffic"]["frame_size"] = [1518, 1518]
    with pytest.raises(CampaignError, match=r"^campaign \S+/mine was begun with another spec \(traffic\.frame_size: "
                                             r"\[64, 64\] then, \[1518, 1518\] now\): run it into another campaign"):
        Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path, "mine").run()
    assert json.loads((tmp_path / "resume" / "mine" / "campaign.json").read_text()) == manifest, "left as it was"
    # The same spec begun on another lab (what a lab-less sim campaign records as None).
    spec["traffic"]["frame_size"] = [64, 64]
    manifest["measured_on"] = {"name": "other", "kind": "static", "topology": "single", "controller": "elsewhere"}
    (tmp_path / "resume" / "mine" / "campaign.json").write_text(json.dumps(manifest))
    with pytest.raises(CampaignError, match=r"was begun on another lab \(lab: .*\"other\".* then, null now\)"):
        Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path, "mine").run()


def test_a_campaign_resumed_by_another_trexlab_commit_says_so_and_its_report_discloses_it(tmp_path, monkeypatch):
    from trexlab.plan import campaign as campaign_module
    from trexlab.results import analysis, provenance

    spec = json.loads(json.dumps(SPEC))
    spec["repetitions"] = 1
    first = Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path).run()
    # The second point is lost (as if the campaign had been interrupted before it) and measured again after an update.
    directory = Path(first["campaign"])
    point = sorted(p for p in directory.iterdir() if p.is_dir())[1]
    subprocess.run(["rm", "-r", str(point)], check=True)
    (directory / "points.jsonl").write_text((directory / "points.jsonl").read_text().splitlines()[0] + "\n")
    monkeypatch.setattr(provenance, "git_commit", lambda: "f" * 40)
    monkeypatch.setattr(campaign_module, "git_commit", lambda: "f" * 40, raising=False)
    lines = []
    Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path, progress=lines.append).run()
    assert any(line.startswith(f"warning: campaign {directory} was begun by trexlab ") and "f" * 40 in line
               for line in lines), lines
    disclosed = analysis.method_disclosure(directory)
    assert "measured by different trexlab commits" in disclosed and f"{'f' * 40} (1 repetition(s))" in disclosed


class StateNode(SimpleNamespace):
    def command(self, argv):  # a DUT whose shell is this one (a namespace DUT's is, through ip netns exec)
        return argv


def test_dut_configuration_from_before_the_campaign_is_found_and_removed_first(tmp_path, monkeypatch):
    """A block applied from before the campaign (playbooks/dut-reference.yml run by hand, as the README shows, or a
    campaign killed during a point) would be in every figure: each DUT's state directory is read for the blocks'
    records, and the campaign removes what it finds before its first point, naming it."""
    from trexlab.plan import campaign as module

    lab = SimpleNamespace(name="lab1", duts=[StateNode(name="dut1"), StateNode(name="dut2")])
    (tmp_path / "lab1" / "dut1").mkdir(parents=True)
    (tmp_path / "lab1" / "dut1" / "dut_reference.json").write_text("{}")
    (tmp_path / "lab1" / "dut1" / "dut_routing.json").write_text("{}")  # the base configuration: not a block
    (tmp_path / "lab1" / "dut2" / "tayga").mkdir(parents=True)
    tayga = {"siit_tayga_dir": f"{tmp_path}/lab1/dut2/tayga"}
    assert module.dut_config_left(lab, str(tmp_path)) == {"reference": [("dut1", {})], "siit": [("dut2", tayga)]}
    assert module.dut_config_left(SimpleNamespace(name="lab2", duts=lab.duts), str(tmp_path)) == {}

    lines: list[str] = []
    campaign = Campaign(experiment.validate(json.loads(json.dumps(SPEC))), tmp_path / "r", progress=lines.append)
    campaign.lab = lab
    applied = []
    monkeypatch.setattr(campaign, "playbook", lambda name, extra, limit=None: applied.append((name, extra, limit)))
    found = module.dut_config_left
    monkeypatch.setattr(module, "dut_config_left", lambda lab: found(lab, str(tmp_path)))
    campaign.remove_dut_config_left()
    assert applied == [("playbooks/dut-reference.yml", {"dut_reference_state": "absent"}, None),
                       ("playbooks/dut-siit.yml", {**tayga, "siit_tayga_state": "absent"}, "dut2")]
    assert "dut.reference (playbooks/dut-reference.yml) is applied on dut1 from before this run" in lines[0]


def test_tayga_left_in_the_directory_and_device_a_spec_named_is_found_with_them(tmp_path):
    """dut.siit.dir puts TAYGA's directory anywhere below the DUT's state directory and dut.siit.device names its
    device: a campaign killed during such a point left TAYGA running there, which only the default directory was
    looked for, and the removal (the role's defaults) would have missed the device (so its routes) had it been."""
    from trexlab.plan import campaign as module

    lab = SimpleNamespace(name="lab1", duts=[StateNode(name="dut1")])
    own = tmp_path / "lab1" / "dut1" / "siit" / "run7"
    own.mkdir(parents=True)
    (own / "tayga.conf").write_text("tun-device siit7\n")
    (own / "device").write_text("siit7\n")
    assert module.dut_config_left(lab, str(tmp_path)) == {
        "siit": [("dut1", {"siit_tayga_dir": str(own), "siit_tayga_device": "siit7"})]}
    # What the DUT's files say goes to the role as the spec's own values would: a device no interface name is not.
    (own / "device").write_text("siit7; reboot\n")
    with pytest.raises(CampaignError, match=r"^DUT dut1: TAYGA's state in .*/run7: device='siit7; reboot'"):
        module.dut_config_left(lab, str(tmp_path))
