"""Cost and accuracy of MLRsearch (NDR and PDR in one search) against two RFC 2544 binary searches.

Cost = sum of trial durations (simulated time: what the searches would take on
a real lab). Both methods use the same final trial duration and the same
width, on a set of simulated SUTs. Prints one row per SUT and goal set.
"""

from __future__ import annotations

from trexlab.generators import create_generator
from trexlab.procedures import mlrsearch, throughput
from trexlab.procedures.common import RunContext
from trexlab.trial import TrialSpec

TRAFFIC = TrialSpec(offered_load=1.0, duration=1.0)
MAX_RATE = 2_000_000.0
WIDTH = 0.005  # relative, both methods

SUTS = {
    "well-behaved": {"capacity": 1_234_567},
    "noisy (1 % capacity noise)": {"capacity": 1_234_567, "capacity_noise": 0.01},
    "random loss 1e-5": {"capacity": 1_234_567, "random_loss": 1e-5},
    "duration-dependent (buffer)": {"capacity": 1_234_567, "buffer_frames": 200_000},
}


def binary_searches(sut: dict, final_duration: float, loss_percents: list[float]) -> tuple[float, list]:
    """One RFC 2544 binary search per loss tolerance (NDR, PDR), the way a legacy tester does it."""
    cost, found = 0.0, []
    for loss in loss_percents:
        params = throughput.Params(max_rate=MAX_RATE, min_rate=10_000, resolution=MAX_RATE * WIDTH / 2,
                                   trial_duration=final_duration, loss_tolerance_percent=loss)
        result = throughput.run(RunContext(create_generator("sim", **sut, seed=11), TRAFFIC), params)
        cost += result.trial_seconds
        found.append(result.throughput)
    return cost, found


def mlr(sut: dict, goals: tuple) -> tuple[float, list]:
    params = mlrsearch.Params(max_rate=MAX_RATE, min_rate=10_000, goals=goals)
    result = mlrsearch.run(RunContext(create_generator("sim", **sut, seed=11), TRAFFIC), params)
    return result.trial_seconds, [g["relevant_lower_bound"] for g in result.goals]


def main() -> None:
    rfc_goal = dict(mlrsearch.RFC2544, relative_width=WIDTH)
    goal_sets = {
        "RFC 2544-compliant goal (60 s final trials)": ((rfc_goal,), [0.0], 60.0),
        "NDR+PDR, 60 s final trials": (
            (dict(rfc_goal, name="NDR"), dict(rfc_goal, name="PDR", loss_ratio=0.005)), [0.0, 0.5], 60.0),
        "NDR+PDR, draft defaults (1 s final)": ((mlrsearch.NDR, mlrsearch.PDR), [0.0, 0.5], 1.0),
    }
    print(f"{'SUT':30} {'goals':45} {'MLR s':>9} {'binary s':>9} {'ratio':>7}  bounds MLR / binary [fps]")
    for sut_name, sut in SUTS.items():
        for goals_name, (goals, losses, final) in goal_sets.items():
            mlr_cost, mlr_found = mlr(sut, goals)
            bin_cost, bin_found = binary_searches(sut, final, losses)
            found = ", ".join(f"{m or 0:,.0f}/{b or 0:,.0f}" for m, b in zip(mlr_found, bin_found, strict=True))
            print(f"{sut_name:30} {goals_name:45} {mlr_cost:9.0f} {bin_cost:9.0f} {mlr_cost / bin_cost:7.1%}  {found}")


if __name__ == "__main__":
    main()
