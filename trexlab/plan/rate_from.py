"""Latency and PDV at the throughput rate: the rate taken from a throughput result, with where it came from.

RFC 8219 measures latency and PDV at the rate the throughput test found. A
rate is therefore given explicitly or taken from throughput results: the
median ``throughput_fps`` of their repetitions (an even count averages the two
middle ones, as siitperf does). A repetition that found no throughput (below
the minimum load) is an observation below every found rate; when the median
falls among those there is no rate and the run stops with one line.

* CLI: ``trexlab latency --rate-from results/cli/throughput-...`` (a run
  directory, or a directory of repetitions ``rep-*``).
* Experiment: ``procedure.params.rate: {from: throughput, params: {...}}`` runs
  the throughput procedure (with those params and the experiment's traffic and
  repetitions) for each sweep point first, in ``<point>/throughput/``, and
  measures at the median of that point's repetitions.

The rate used and its source go into the provenance of every run (``rate_source``).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from trexlab.params import InvalidParameter
from trexlab.procedures import throughput

FIGURE = throughput.HEADLINE
#: The procedure that gives the rate (those that take one declare TAKES_RATE: trexlab.procedures.taking_rate).
GIVES_RATE = throughput.NAME
#: Where a point's throughput repetitions go, below the point's own directory.
SUBDIR = GIVES_RATE


def median_throughput(path: str | Path) -> tuple[float, dict]:
    """(rate, source) from the finished throughput runs at or below path."""
    from trexlab.plan.repetition import observation
    from trexlab.results.stats import held_down_by_tester, summarize
    from trexlab.results.store import RESULT, read_json, run_dirs  # pandas: only when a rate is looked up

    path = Path(path)
    runs = [run for run in run_dirs([path]) if (run / RESULT).is_file()]
    values: list[float] = []
    found = []
    for run in runs:
        result = read_json(run / RESULT)
        if result.get("procedure") != GIVES_RATE:
            continue
        value = (result.get("headline") or {}).get(FIGURE)
        values.append(-math.inf if value is None else float(value))
        found.append(observation(result, FIGURE, None))
    if not values:
        raise InvalidParameter("rate-from", str(path), f"a directory with finished {GIVES_RATE} runs")
    rate = statistics.median(values)
    if not rate > 0:
        raise InvalidParameter("rate-from", str(path), f"{GIVES_RATE} results whose median is a rate; "
                               f"{sum(v == -math.inf for v in values)} of {len(values)} found none")
    source = {"rate": rate, "from": str(path), "figure": FIGURE, "statistic": f"median of {len(values)} repetition(s)"}
    # A tester-bound repetition at or below the median, or one whose search met no failing load, makes the median a
    # lower bound of the DUT's throughput (the throughput summary's LOWER BOUND): the latency is then measured below
    # RFC 8219's throughput rate, and says why (trexlab.plan.repetition.method_of).
    summary = summarize(found, held_down_by_tester(FIGURE))
    if summary["median_lower_bound"]:
        source["lower_bound"] = summary["why"]
    return rate, source


def split_rate_from(params: dict) -> tuple[dict, dict | None]:
    """An experiment's procedure params without ``rate: {from: throughput, params: ...}``, and that request."""
    rate = params.get("rate")
    if not isinstance(rate, dict):
        return params, None
    unknown = sorted(set(rate) - {"from", "params"})
    if unknown:
        raise InvalidParameter("rate", rate, "a number, or {from: throughput, params: {...}}")
    if rate.get("from") != GIVES_RATE:
        raise InvalidParameter("rate.from", rate.get("from"), GIVES_RATE)
    if not isinstance(rate.get("params") or {}, dict):
        raise InvalidParameter("rate.params", rate.get("params"), f"the {GIVES_RATE} procedure's params")
    return {k: v for k, v in params.items() if k != "rate"}, {"from": GIVES_RATE, "params": rate.get("params") or {}}
