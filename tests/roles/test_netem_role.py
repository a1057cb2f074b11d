"""roles/netem on a namespace DUT over SSH: exact every-Nth loss, random loss, clean refusal of delay, reversal."""

import math

import pytest

from trexlab.campaign import kernel_has_netem
from trexlab.generators import create_generator
from trexlab.trial import TrialSpec

from labtools import changed_count, node_state, playbook

pytestmark = pytest.mark.lab
PLAY = "playbooks/dut-impairment.yml"


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("nm", "single", 1)


@pytest.fixture(scope="module")
def generator(lab):
    g = create_generator("software", lab=lab)
    yield g
    g.close()


def apply(lab, *extra):
    result = playbook(lab, PLAY, *extra)
    assert result.returncode == 0, result.stdout[-3000:]
    return changed_count(result.stdout)


def forward_trial(generator, frames=20_000):
    spec = TrialSpec(offered_load=10_000, duration=frames / 10_000, receive_tail=0.5)
    return generator.run_trial(spec)


def test_every_hundredth_frame_is_lost_forward_only_idempotent_and_fully_reversed(lab, generator):
    ns = lab.duts[0].netns
    before = node_state(ns)
    try:
        assert apply(lab, "-e", "netem_loss_every_nth=100", "-e", '{"netem_directions": ["forward"]}') > 0
        assert apply(lab, "-e", "netem_loss_every_nth=100", "-e", '{"netem_directions": ["forward"]}') == 0
        result = forward_trial(generator)
        assert result.directions["forward"].frames_lost == 200, "exactly 1 in 100 of 20000 frames"
        assert result.directions["reverse"].frames_lost == 0, "the reverse direction is not impaired"
    finally:
        assert apply(lab, "-e", "netem_state=absent") > 0
    assert node_state(ns) == before, "absent leaves the DUT as it was"
    assert apply(lab, "-e", "netem_state=absent") == 0


def test_one_percent_random_loss_measures_as_such(lab, generator):
    ns = lab.duts[0].netns
    before = node_state(ns)
    try:
        apply(lab, "-e", "netem_loss_percent=1")
        result = forward_trial(generator)
    finally:
        apply(lab, "-e", "netem_state=absent")
    assert node_state(ns) == before
    for direction in result.directions.values():
        # Binomial(20000, 0.01): mean 200, sd 14; 5 sd either side fails a wrong rate, not chance.
        assert abs(direction.frames_lost - 200) < 5 * math.sqrt(20_000 * 0.01 * 0.99), direction.frames_lost


def test_delay_without_sch_netem_fails_before_any_change_naming_it(lab):
    if kernel_has_netem():
        pytest.skip("this kernel has sch_netem: the refusal cannot be shown here (the VM lab tests delay itself)")
    ns = lab.duts[0].netns
    before = node_state(ns)
    result = playbook(lab, PLAY, "-e", "netem_delay_ms=100")
    assert result.returncode != 0
    assert "sch_netem" in result.stdout and "delay=100" in result.stdout, result.stdout[-2000:]
    assert node_state(ns) == before


def test_bad_input_is_refused_naming_the_variable(lab):
    before = node_state(lab.duts[0].netns)
    result = playbook(lab, PLAY, "-e", "netem_backend=tbf")
    assert result.returncode != 0 and "netem_backend" in result.stdout
    assert node_state(lab.duts[0].netns) == before
