"""Every load a procedure may offer carries 1..2^32 frames per direction per trial (the software tester's 32-bit
sequence numbers; a trial of no frame measures nothing), refused when the plan is made: swtester refused such a
trial only at the first one, mid-campaign, and the sim and TRex generators ran a zero-frame trial, which FLR and
MLRsearch counted lossless."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import yaml

from trexlab import cli
from trexlab.generators import create_generator
from trexlab.media import max_frame_rate, media_speed
from trexlab.params import InvalidParameter
from trexlab.plan.campaign import Campaign
from trexlab.procedures import flr, rfc6349
from trexlab.procedures.common import RunContext
from trexlab.spec import experiment
from trexlab.trial import MAX_FRAMES_PER_DIRECTION, TrialSpec

BASE = {"name": "frames", "generator": "sim", "generator_options": {"capacity": 300000},
        "traffic": {"frame_size": [64, 64], "ip_version": [4, 4], "receive_tail": 0}, "repetitions": 1}
ALLOWED = f"allowed 1..{MAX_FRAMES_PER_DIRECTION} frames per direction per trial"


@pytest.mark.parametrize(("procedure", "params", "refused"), [
    ("throughput", {"min_rate": 0.4, "max_rate": 1000, "trial_duration": 1}, "min_rate x trial_duration=0.4"),
    ("throughput", {"max_rate": 1e8, "trial_duration": 3600}, "max_rate x trial_duration=360000000000"),
    # The default max_rate: 100GbE's 148.8 Mfps of 64-byte frames for the default 60 s.
    ("throughput", {"media": "100g"},
     f"media x trial_duration={math.ceil(float(max_frame_rate(media_speed('100g'), 64)) * 60)}"),
    ("mlrsearch", {"min_rate": 0.5, "max_rate": 1000}, "min_rate x goals[0].initial_trial_duration=0.5"),
    ("mlrsearch", {"max_rate": 1e7, "min_rate": 1e6, "warmup_duration": 3600},
     "max_rate x warmup_duration=36000000000"),
    # 100 % down to 10 % of 5 fps in 1 s trials: the last load is half a frame.
    ("flr", {"max_rate": 5, "trial_duration": 1},
     "the lowest load (9 steps of step_percent below the first) x trial_duration=0.5"),
    ("latency", {"rate": 1e7, "trial_duration": 3600}, "rate x trial_duration=36000000000"),
    ("pdv", {"rate": 0.5, "trial_duration": 1}, "rate x trial_duration=0.5"),
    ("selftest", {"min_rate": 1, "max_rate": 1000, "trial_duration": 1},
     "min_rate x floor_load_percent x trial_duration=0.5"),
])
def test_a_spec_whose_trials_carry_no_frame_or_more_than_2_32_is_refused_by_its_dry_run(
        procedure, params, refused, tmp_path, capsys):
    path = tmp_path / "experiment.yml"
    path.write_text(yaml.safe_dump({**BASE, "procedure": {"name": procedure, "params": params}}))
    assert cli.main(["campaign", str(path), "--dry-run", "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{refused}: {ALLOWED}" in err, err


def test_a_cli_run_whose_trials_carry_no_frame_is_refused_before_it_starts(tmp_path, capsys):
    assert cli.main(["throughput", "--generator", "sim", "--min-rate", "0.4", "--max-rate", "1000",
                     "--trial-duration", "1", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"trexlab throughput: min_rate x trial_duration=0.4: {ALLOWED} (0.4 fps for 1 s; the testers "
                   "number frames in 32 bits)")
    assert not (tmp_path / "r").exists()


def test_rfc6349s_mtu_trials_and_bottleneck_search_are_checked_with_its_plan():
    traffic = TrialSpec(offered_load=1.0, duration=1.0)
    plan = SimpleNamespace(traffic=traffic, generator="software", capabilities=SimpleNamespace(dont_fragment=True))
    for params, refused in [({"mtu_trial_rate": 0.5}, "mtu_trial_rate x mtu_trial_duration=0.5"),
                            ({"mtu": 1500, "bb_min_rate": 0.1, "bb_trial_duration": 5},
                             "bb_min_rate x bb_trial_duration=0.5")]:
        plan.params = rfc6349.Params(**params)
        with pytest.raises(InvalidParameter, match=refused.replace(".", r"\.")):
            rfc6349.check(plan)


def test_a_rate_from_throughput_is_checked_once_measured_before_the_first_trial(tmp_path):
    """The throughput runs find 2 Mfps: 3600 s latency trials at it would be 7.2e9 frames."""
    spec = {**BASE, "generator_options": {"capacity": 3e6}, "traffic": {**BASE["traffic"], "directions": "forward"},
            "procedure": {"name": "latency", "params": {
                "rate": {"from": "throughput", "params": {"max_rate": 2e6, "trial_duration": 1}},
                "trial_duration": 3600, "tag_delay": 1, "tagged_frames": 500}}}
    campaign = Campaign(experiment.validate(json.loads(json.dumps(spec))), tmp_path)
    outcome = campaign.run()
    assert outcome["done"] == 0 and len(outcome["failed"]) == 1
    status = json.dumps(campaign.status())
    assert f"rate x trial_duration=7200000000: {ALLOWED}" in status, status
    point = next(tmp_path.glob("frames/*/point-0"))
    assert [p.name for p in point.iterdir()] == ["throughput"], "no latency repetition began"


def test_flr_steps_down_to_its_last_step_not_to_a_float_remainder():
    """100 % less 100 float steps of 1 % of 14880952.38 fps left 1.9e-9 fps, a trial of no frame that a DUT losing
    every frame passed as lossless; the loads are 100 % down to 1 %."""
    params = flr.Params(max_rate=14880952.38, step_percent=1.0, trial_duration=1.0)
    generator = create_generator("sim", capacity=1.0, wall_clock_factor=0.0)
    result = flr.run(RunContext(generator, TrialSpec(offered_load=1.0, duration=1.0, directions="forward")), params)
    loads = [p["offered_load"] for p in result.points]
    assert len(loads) == 100 and loads[-1] == pytest.approx(148809.5238)
    assert all(p["loss_ratio"] > 0 for p in result.points)


@pytest.mark.parametrize(("changes", "refused"), [
    ({"frame_size": (100.5, 64)}, "frame_size[0]=100.5: allowed 64..9018 bytes (an integer)"),
    ({"frame_size": (64, True)}, "frame_size[1]=True: allowed 64..9018 bytes (an integer)"),
    ({"ip_version": (4, 6.0), "frame_size": (64, 84)}, "ip_version[1]=6.0: allowed 4 or 6"),
    ({"destination_networks": 2.5}, "destination_networks=2.5: allowed 1..256 (an integer)"),
    ({"latency_mode": "tagged", "latency_frames": 2.5},
     "latency_frames=2.5: allowed >= 1 with latency_mode=tagged (an integer)"),
    ({"duration": 0.4}, f"offered_load x duration=0.4: {ALLOWED}"),
    ({"offered_load": 1e9, "duration": 3600}, f"offered_load x duration=3600000000000: {ALLOWED}"),
])
def test_trial_spec_refuses_a_fraction_of_a_count_and_a_trial_of_no_frame_in_one_line(changes, refused):
    """TrialSpec is the trial contract every generator is handed (a plan's template, a replayed log's specs): a spec
    or the CLI refuses a fractional frame size by its schema, TrialSpec did not (swtester was then asked for
    --size0 100.5 and refused it mid-run, the sim ran it), nor a trial of no frame (a generator other than swtester
    ran it with 0 frames, loss ratio 0)."""
    with pytest.raises(InvalidParameter) as error:
        TrialSpec(**{"offered_load": 1.0, "duration": 1.0, **changes})
    assert str(error.value).splitlines() == [str(error.value)] and str(error.value).startswith(refused), error.value
