"""RFC 2544 section 23 e: after each trial's receive tail the tester waits at least 5 s for the DUT to
restabilize. trexlab's trials followed each other at once, and no result said so. Now the wait is a trial
phase (traffic.restabilize_wait, --restabilize-wait), every generator waits it out (the simulated SUT in
simulated time), and a result whose wait is shorter than RFC 2544's discloses it beside its figures."""

import json

import pytest

from trexlab import cli
from trexlab.generators import create_generator
from trexlab.params import InvalidParameter
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import RFC2544_SETUP_PHASES, RunContext
from trexlab.trial import RFC2544_RESTABILIZE_WAIT, TrialSpec

WAIT = f"restabilize wait 0 s (RFC 2544: at least {RFC2544_RESTABILIZE_WAIT:g} s)"


def test_the_wait_is_part_of_the_simulated_trial():
    spec = TrialSpec(offered_load=1000, duration=1.0, receive_tail=0.5, restabilize_wait=5.0)
    generator = create_generator("sim")
    generator.run_trial(spec)
    assert generator.simulated_time == pytest.approx(6.5)


@pytest.mark.parametrize("wait", [-1, float("inf"), float("nan"), 61])
def test_a_wait_out_of_range_is_one_line_naming_it(wait):
    with pytest.raises(InvalidParameter, match="^restabilize_wait"):
        TrialSpec(offered_load=1000, duration=1.0, restabilize_wait=wait)


def test_a_result_without_the_wait_says_so_and_one_with_it_does_not():
    short = TrialSpec(offered_load=1.0, duration=1.0)
    assert WAIT in throughput.run(RunContext(create_generator("sim"), short),
                                  throughput.Params(max_rate=1e6)).to_dict()["deviations"]
    waited = TrialSpec(offered_load=1.0, duration=1.0, restabilize_wait=RFC2544_RESTABILIZE_WAIT)
    assert throughput.run(RunContext(create_generator("sim"), waited), throughput.Params(max_rate=1e6)).to_dict()[
        "deviations"] == RFC2544_SETUP_PHASES["sim"]
    assert WAIT in mlrsearch.run(RunContext(create_generator("sim"), short), mlrsearch.Params(max_rate=1e6)).to_dict()[
        "deviations"]


def test_the_cli_takes_the_wait(tmp_path, capsys):
    code = cli.main(["throughput", "--generator", "sim", "--restabilize-wait", "5", "--max-rate", "1e6",
                     "--trial-duration", "1", "--results", str(tmp_path / "r"), "--ceilings", str(tmp_path / "c.json"),
                     "--json"])
    assert code == 0, capsys.readouterr().err
    [trial] = [json.loads(line) for line in (tmp_path / "r" / "rep-001" / "trials.jsonl").read_text().splitlines()][:1]
    assert trial["spec"]["restabilize_wait"] == 5.0


def test_rfc6349s_lab_time_counts_each_mtu_trials_wait():
    """Its MTU trials wait too (TrialRunner, the generator): the estimate, whose worst case bounds a campaign at 30
    days, left the wait out, up to 60 s per MTU frame size per repetition."""
    from trexlab.procedures import rfc6349

    params = rfc6349.Params(bottleneck_bandwidth=1e8)  # the MTU trials and the TCP tests, no throughput search
    costs = [rfc6349.cost(params, TrialSpec(offered_load=1.0, duration=1.0, restabilize_wait=wait)).worst_s
             for wait in (0.0, RFC2544_RESTABILIZE_WAIT)]
    assert costs[1] - costs[0] == pytest.approx(rfc6349.mtu_trials(params.mtu_frame_sizes) * RFC2544_RESTABILIZE_WAIT)
