"""Figures that show their limits (issue 16): MLRsearch's offered duration, the binary search's relative
resolution, censored and tester-bound repetitions in the statistics and everywhere they are shown."""

import dataclasses

import pytest

from trexlab.generators import create_generator
from trexlab.procedures import mlrsearch
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
