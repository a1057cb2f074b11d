"""Figures that show their limits (issue 16): MLRsearch's offered duration, the binary search's relative
resolution, censored and tester-bound repetitions in the statistics and everywhere they are shown."""

import dataclasses

import pytest

from trexlab.generators import create_generator
from trexlab.procedures import mlrsearch, throughput
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)


class EarlySender:
    """A paced sender that finishes one frame interval early, as a real one reports its measured send time."""

    name = "sim"

    def __init__(self, generator):
        self.generator = generator

    def run_trial(self, spec):
        result = self.generator.run_trial(spec)
        early = spec.duration - 1 / spec.offered_load
        directions = {k: dataclasses.replace(d, send_duration=early) for k, d in result.directions.items()}
        return dataclasses.replace(result, directions=directions)

    def describe(self):
        return self.generator.describe()

    def close(self):
        pass


@pytest.mark.parametrize("goals", [(mlrsearch.NDR, mlrsearch.PDR), (mlrsearch.RFC2544,)], ids=["ndr-pdr", "rfc2544"])
def test_mlrsearch_a_sender_finishing_one_frame_early_costs_the_same_search(goals):
    params = mlrsearch.Params(max_rate=1e6, min_rate=10_000, goals=goals)
    exact = mlrsearch.run(create_generator("sim", capacity=437_000, seed=5), TRAFFIC, params)
    early = mlrsearch.run(EarlySender(create_generator("sim", capacity=437_000, seed=5)), TRAFFIC, params)
    sequence = [(t["offered_load"], t["duration"]) for t in exact.trial_log]
    assert [(t["offered_load"], t["duration"]) for t in early.trial_log] == sequence
    assert early.trial_seconds == exact.trial_seconds
    assert [g["conditional_throughput"] for g in early.goals] == [g["conditional_throughput"] for g in exact.goals]


@pytest.mark.parametrize("capacity", [20_000.0, 1_000_000.0])
def test_default_search_ends_within_half_a_percent_of_the_capacity(capacity):
    result = throughput.run(create_generator("sim", capacity=capacity), TRAFFIC, throughput.Params())
    assert capacity * (1 - 0.005) <= result.throughput <= capacity
    data = result.to_dict()
    assert data["resolution_percent"] == 0.5 and data["stopping_rule"] == "0.5 % of the rate found"
    assert 0 < data["final_width_fps"] <= 0.005 * result.throughput


def test_an_absolute_resolution_stays_available_and_is_disclosed():
    params = throughput.Params(max_rate=1e6, resolution=20_000)
    data = throughput.run(create_generator("sim", capacity=437_000), TRAFFIC, params).to_dict()
    assert 437_000 - 20_000 <= data["throughput_fps"] <= 437_000
    assert data["resolution"] == 20_000 and data["resolution_percent"] is None
    assert data["stopping_rule"] == "20000 fps"
