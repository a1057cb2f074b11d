"""Aggregating campaigns into paper-style tables and plots (used by the notebooks in analysis/).

    runs = load_campaigns(["results/demo"])              # one row per repetition
    table = summarize_points(runs, "throughput_fps")     # one row per sweep point: median, min, max, ...
    compare(runs_single, runs_dual, "throughput_fps", by="destination_networks")
    export(table, "out.csv") / export(table, "out.parquet")

Statistics come from trexlab.results.stats (median, min, max, 1st/99th percentile,
dispersion = (max - min) / median): the same numbers the CLI prints. Each
repetition is read with what limits it (trexlab.plan.repetition.observation): a
search that ended below the minimum load is a censored observation ("< 100"),
a tester-bound repetition (stretched trials, tester drops, near the tester's
ceiling) may hold the median down, which the tables and plots then show as a
lower bound.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import numbers
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from trexlab.plan.repetition import LOOKED_UP, SUMMARY, method_line, order_text
from trexlab.procedures.common import FIGURE_BOUND_KEYS
from trexlab.results.stats import (
    ORDER_STATISTICS,
    WHOLE,
    WHOLE_FIGURES,
    Observation,
    held_down_by_tester,
    is_censored,
    nearest_rank,
    numeric,
    summarize,
)
from trexlab.results.store import PROVENANCE, dumps, read_json, read_point_log, run_rows, write_columnar_tree
from trexlab.spec.schema import DEFAULT_REPETITIONS, Traffic
from trexlab.testbed.endpoints import TCP_COUNTERS
from trexlab.trial import SIIT_SIZE_DELTA, format_seconds

STAT_COLUMNS = ["count", "missing", "tester_bound", "median", "min", "max", "p1", "p99", "dispersion_percent",
                *(f"{name}_lower_bound" for name in ORDER_STATISTICS), "why"]
#: Colour of what may be the tester's limit in the plots (lower-bound bars, tester-bound repetitions).
LOWER_BOUND_COLOUR = "#F28E2B"
#: How a median held down by a tester-bound repetition is marked in tables.
LOWER_BOUND_MARK = "≥ "
#: How a ratio over such a median (the divisor) is marked: the true ratio may be lower.
UPPER_BOUND_MARK = "≤ "
#: A ratio of two such medians, each maybe higher: no bound either way, so no figure.
NO_RATIO = "- (both medians lower bounds)"
#: How a statistic among lost or late frames (+inf: a latency or PDV percentile beyond the frame timeout,
#: trexlab.trial.Latency) is shown in tables and plots: never as a number.
LOST_TEXT = "> timeout (lost)"


def campaign_dirs(paths: Iterable[str | Path] | str | Path) -> list[Path]:
    """Campaign directories (holding campaign.json) at or below the given paths."""
    if isinstance(paths, str | Path):
        paths = [paths]
    found = set()
    for path in map(Path, paths):
        if (path / "campaign.json").is_file():
            found.add(path)
        found.update(p.parent for p in path.rglob("campaign.json"))
    return sorted(found)


def load_campaigns(paths: Iterable[str | Path] | str | Path, procedure: str | None = None) -> pd.DataFrame:
    """One row per finished repetition of every campaign found.

    Columns: experiment, campaign, point, repetition, one column per sweep key
    (its last dotted part, e.g. destination_networks), and the procedure's
    headline figures (e.g. throughput_fps, forward_typical_s).

    procedure: the runs of that procedure instead of the campaign's own, e.g. the
    throughput runs a latency campaign measured each point's rate with
    (trexlab.plan.rate_from), whose figure is the throughput that latency was
    measured at; where it took its rates from a stored throughput campaign
    (rate_source.campaign), that campaign's repetitions of the points it took
    them from, as their summaries count them (its experiment, campaign and sweep
    columns: the runs are its own).
    """
    # One table built at once from every campaign's rows. Columns set one at a time on each campaign's table,
    # then the tables concatenated over campaigns whose columns differ, left it in about a block per column (115
    # besides the text columns for the VM lab's three RFC 2544 campaigns beside a download campaign): every later
    # operation paid for them, and the next column a caller added raised pandas' PerformanceWarning. Each
    # column's type is now inferred once over its rows (a parameter null in one campaign and a number in another:
    # float, NaN where null; no longer object).
    rows: list[dict] = []
    repetitions: list[int | None] = []
    columns: dict[str, None] = {}  # each campaign's, in order: what concatenating the campaigns' tables gave
    stored: set[Path] = set()  # the stored campaigns' points a campaign's rates came from
    for campaign in campaign_dirs(paths):
        manifest = json.loads((campaign / "campaign.json").read_text())
        runs = run_rows(campaign)
        if not runs:
            continue
        flat = dict.fromkeys(name for run in runs for name in run)  # load_runs' columns, of unfinished runs too
        wanted = procedure or (manifest.get("spec") or {}).get("procedure", {}).get("name")
        finished = [run for run in runs if run["finished"]]
        if wanted and "provenance.procedure" in flat:  # a latency campaign's rate runs are throughput's, and apart
            finished = [run for run in finished if run.get("provenance.procedure") == wanted]
        if procedure and not finished:  # its rates from a stored campaign: that campaign's points (rate_source.from)
            stored.update(Path(run["provenance.rate_source.from"]) for run in runs
                          if _present(run.get("provenance.rate_source.campaign.point")))
        sweep = sorted({k for p in manifest["points"] for k in p["values"]})
        swept = {key.rsplit(".", 1)[-1]: f"provenance.sweep.{key}" for key in sweep
                 if f"provenance.sweep.{key}" in flat}
        renamed = {name: name.removeprefix("result.headline.") for name in flat}
        sweep_keys = tuple(k.rsplit(".", 1)[-1] for k in sweep)
        figure_keys = tuple(renamed[name] for name in flat if name.startswith("result.headline."))
        for run in finished:
            row = {renamed[name]: value for name, value in run.items()}
            row.update(experiment=manifest["experiment"], campaign=manifest["campaign"],
                       point=run.get("provenance.point", math.nan))
            row.update({short: _hashable(run[column]) for short, column in swept.items() if column in run})
            row.update(sweep_keys=sweep_keys, figure_keys=figure_keys)
            rows.append(row)
            repetitions.append(_repetition(run.get("provenance.repetition"), run["run"]))
        columns.update(dict.fromkeys([*renamed.values(), "experiment", "campaign", "point", "repetition", *swept,
                                      "sweep_keys", "figure_keys"]))
    if not columns:
        return pd.DataFrame(columns=["experiment", "campaign", "point", "repetition"])
    table = pd.DataFrame(rows, columns=list(columns))
    # A whole number or None (a run without one): inferred, None would make every repetition a float.
    table["repetition"] = pd.Series(repetitions, index=table.index, dtype=object)
    if stored:  # the repetitions each stored point's median was taken over: 1 .. its summary's count
        taken = load_campaigns(sorted({point.parent for point in stored}), procedure)
        counted = {(point.parent.name, point.name): json.loads((point / "summary.json").read_text())["repetitions"]
                   for point in stored}
        keep = [(c, p) in counted and r is not None and r <= counted[(c, p)]
                for c, p, r in zip(taken["campaign"], taken["point"], taken["repetition"], strict=True)]
        taken = taken[keep].reset_index(drop=True)
        table = taken if table.empty else pd.concat([table, taken], ignore_index=True)
    return table


def _repetition(value, run: str) -> int | None:
    """A run's repetition number from its provenance.json, None where it has none. The file may be a received
    directory's: the reports show the number in their text and count with it, so anything but a whole number >= 1
    is refused (ValueError, one line naming the file) rather than shown or made one by float()."""
    if not _present(value):
        return None
    whole = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 1:
        raise ValueError(f"{Path(run) / PROVENANCE}: repetition: {value!r} is not a whole number >= 1")
    return int(value)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def _union(runs: pd.DataFrame, column: str) -> list[str]:
    names: list[str] = []
    for keys in runs.get(column, []):
        names.extend(k for k in keys if k not in names)
    return names


def sweep_columns(runs: pd.DataFrame) -> list[str]:
    """The sweep variables present in a loaded campaign table."""
    return _union(runs, "sweep_keys")


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _number(value) -> float | None:
    return float(value) if _present(value) else None


def observations(runs: pd.DataFrame, figure: str) -> list[Observation]:
    """Each repetition's value of a figure with what limits it (the columns load_campaigns flattened from
    result.json: headline_below, headline_tester_bound or else tester_bound_reasons; below_minimum_load for results
    written before them)."""
    found = []
    for _, row in runs.iterrows():
        value = row.get(figure)
        below = row.get(f"result.headline_below.{figure}")
        old = row.get("result.below_minimum_load")  # results written before headline_below
        if not _present(below) and figure == "throughput_fps" and _present(old) and bool(old):
            below = row.get("result.params.min_rate")
        # A figure's own reasons where the result gives them per figure (headline_tester_bound), else the result's.
        reasons = row.get(f"result.headline_tester_bound.{figure}")
        if not isinstance(reasons, list | tuple):
            reasons = row.get("result.tester_bound_reasons")
        repetition = row.get("repetition")
        number = _number(repetition)
        at_least = _present(row.get(f"result.headline_at_least.{figure}"))  # no trial failed: a lower bound
        irregular = row.get(f"result.headline_irregular.{figure}")  # an MLRsearch goal result without both bounds
        found.append(Observation(_number(value), _number(below),
                                 tuple(reasons) if isinstance(reasons, list | tuple) else (),
                                 None if number is None else int(number), at_least,
                                 irregular if isinstance(irregular, str) else ""))
    return found


def summarize_points(runs: pd.DataFrame, figure: str, by: list[str] | None = None) -> pd.DataFrame:
    """Per sweep point: the statistics of one headline figure over its repetitions, censored and tester-bound
    repetitions counted (STAT_COLUMNS; a censored statistic is a string such as '< 100')."""
    by = by if by is not None else (["experiment", *sweep_columns(runs)])
    if figure not in runs:
        raise KeyError(f"figure {figure!r} not in the campaign table; have {', '.join(figure_columns(runs))}")
    rows = []
    for key, group in runs.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        check_pooled(group, ", ".join(f"{k}={v}" for k, v in zip(by, key, strict=True)))
        rows.append({**dict(zip(by, key, strict=True)),
                     **summarize(observations(group, figure), held_down_by_tester(figure))})
    return pd.DataFrame(rows, columns=[*by, *STAT_COLUMNS])


def check_pooled(group: pd.DataFrame, where: str) -> None:
    """Repetitions of several campaigns summarised as one (load_campaigns of an experiment's directory reads all of
    its campaigns) must have been measured alike: a median over 1 s and 60 s trials, or over 64- and 1518-byte
    frames, is no figure. ValueError, one line naming both campaigns and the first difference."""
    if "campaign" not in group or group["campaign"].nunique() < 2:
        return
    (first, runs), *others = group.groupby("campaign", sort=True)
    for other, other_runs in others:
        if (differs := measured_otherwise(runs, other_runs, CONDITIONS, (str(first), str(other)))) is not None:
            raise ValueError(f"{where}: campaigns {first} and {other} measured differently ({differs}): summarise "
                             "them apart (by=[..., 'campaign']) or load one of them")


def figure_columns(runs: pd.DataFrame) -> list[str]:
    """The procedures' headline figures present (throughput_fps, NDR_fps, forward_typical_s, ...)."""
    return _union(runs, "figure_keys")


#: How a figure was measured (each repetition's provenance): the procedure and its parameters (METHOD), and the
#: traffic (CONDITIONS adds it). Repetitions that differ in any of these (frame size, loss tolerance, trial
#: duration, resolution, ...) measured different things: no difference between them is the DUT's. Not among them:
#: what the procedure sets per trial (the template's load and duration) and what was looked up in the ceilings
#: file for the tester (another tester, or a self-test in between, records other values).
METHOD = ("provenance.procedure", "provenance.params.")
CONDITIONS = (*METHOD, "provenance.traffic.")
NOT_CONDITIONS = ("provenance.traffic.offered_load", "provenance.traffic.duration",
                  *(f"provenance.params.{name}" for name in LOOKED_UP))


def values_of(runs: pd.DataFrame, column: str) -> set[str]:
    """A column's distinct values as JSON text (NaN as null)."""
    return {dumps(None if isinstance(v, float) and math.isnan(v) else v) for v in runs[column]}


def differ(a: pd.DataFrame, b: pd.DataFrame, column: str) -> bool:
    """Whether a column's distinct values differ between a and b, a whole float being the integer it is: a column of
    integers is float where a campaign loaded beside it lacks the value, and its 4550.0 is then the other's 4550."""
    def distinct(runs: pd.DataFrame) -> set[str]:
        return {dumps(None if math.isnan(v) else int(v) if v.is_integer() else v) if isinstance(v, float) else
                dumps(v) for v in runs[column]}
    return distinct(a) != distinct(b)


def measured_otherwise(a: pd.DataFrame, b: pd.DataFrame, conditions: tuple[str, ...] = METHOD,
                       labels: tuple[str, str] = ("A", "B")) -> str | None:
    """The first of the conditions (column prefixes) in which repetitions a and b differ, with both values (named by
    labels); None when they agree. A column one side lacks (written by another trexlab version) is not compared; nor
    is the rate of latency measured at a throughput's median (rate_source): a figure of the DUT."""
    measured_rate = any(c.startswith("provenance.rate_source.") for c in (*a.columns, *b.columns))
    for column in a.columns:
        if (not column.startswith(conditions) or column in NOT_CONDITIONS or column not in b
                or (measured_rate and column == "provenance.params.rate")):
            continue
        if differ(a, b, column):
            first, second = values_of(a, column), values_of(b, column)
            return (f"{column.removeprefix('provenance.')} {' / '.join(sorted(first))} in {labels[0]}, "
                    f"{' / '.join(sorted(second))} in {labels[1]}")
    return None


#: What two set-ups compared side by side (compare(): single and dual DUT) share beyond CONDITIONS (with_setup's
#: columns): the tester, as it was set up to send (its generator and the options that set its rate,
#: selftest.TESTER_OPTIONS), and the repetitions planned per point (Lencse & Szilagyi 2024, section 4.4: 20 for
#: each set-up, their median, minimum and maximum side by side; the range of 5 is no range of 20).
SETUP = "provenance.setup."


def with_setup(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with their tester (SETUP + 'tester': the generator and its TESTER_OPTIONS as the run set them, its
    defaults where it set none) and their campaign's planned repetitions (SETUP + 'repetitions': a count, or the
    adaptive rule; None for a run of no campaign)."""
    from trexlab.procedures.selftest import tester_options

    def tester(row) -> dict | None:
        generator = row.get("provenance.generator.generator")
        if not isinstance(generator, str):
            return None
        options = {key.removeprefix("provenance.generator_options."): value for key, value in row.items()
                   if key.startswith("provenance.generator_options.") and _present(value)}
        # A whole float is the integer it is: a column is float where a campaign loaded beside it lacks the option.
        return {"generator": generator, **{name: int(value) if isinstance(value, float) and value.is_integer()
                                           else value for name, value in tester_options(generator, options).items()}}

    def repetitions(row):
        if _present(count := row.get("provenance.spec.repetitions")):
            return count
        rule = {key.removeprefix("provenance.spec.repetitions."): value for key, value in row.items()
                if key.startswith("provenance.spec.repetitions.") and _present(value)}
        # A campaign's spec that leaves them out planned the default (a run of no campaign has no spec: None).
        has_spec = any(key.startswith("provenance.spec.") and _present(value) for key, value in row.items())
        return rule or (DEFAULT_REPETITIONS if has_spec else None)

    rows = [row for _, row in runs.iterrows()]
    return runs.assign(**{SETUP + "tester": pd.Series([tester(r) for r in rows], index=runs.index, dtype=object),
                          SETUP + "repetitions": pd.Series([repetitions(r) for r in rows], index=runs.index,
                                                           dtype=object)})


def compare(first: pd.DataFrame, second: pd.DataFrame, figure: str, by: str,
            labels: tuple[str, str] = ("single", "dual")) -> pd.DataFrame:
    """Medians of two set-ups side by side per value of `by`, with their ratio (e.g. dual / single DUT)."""
    # Two set-ups (single and dual DUT) may differ in the SIIT ports' IP versions, and so in frame sizes by the IPv6
    # header's extra bytes (84/64 against 64/64: one test frame, as the paper's "64/84-byte" says), in nothing else of
    # the method or the traffic: the directions, the ports' mode, the receive tail, ... all change a throughput; nor
    # in the tester or the repetitions (SETUP).
    for value in set(first[by]) & set(second[by]):
        if (differs := measured_otherwise(with_setup(as_ipv4_frames(first[first[by] == value])),
                                          with_setup(as_ipv4_frames(second[second[by] == value])),
                                          (*CONDITIONS, SETUP), labels=labels)) is not None:
            raise ValueError(f"{by}={value}: {labels[0]} and {labels[1]} measured differently ({differs}): a ratio "
                             "needs the same procedure, parameters, traffic, tester and repetitions")
    a = summarize_points(first, figure, [by]).set_index(by)
    b = summarize_points(second, figure, [by]).set_index(by)
    # A censored statistic ("< 500") stays as it is, as every table shows it (it was made NaN here, and the report's
    # table read '-' as for a point not measured); a ratio needs numbers: a censored median takes no part in it.
    table = pd.DataFrame({f"{labels[0]}_median": a["median"], f"{labels[0]}_min": a["min"],
                          f"{labels[0]}_max": a["max"], f"{labels[1]}_median": b["median"],
                          f"{labels[1]}_min": b["min"], f"{labels[1]}_max": b["max"]})
    table["ratio"] = (table[f"{labels[1]}_median"].map(numeric, na_action="ignore")
                      / table[f"{labels[0]}_median"].map(numeric, na_action="ignore"))
    # What each side's figures rest on and what limits them, per point: the repetitions with a figure, missing and
    # tester-bound ones, a lower-bound median.
    for label, side in zip(labels, (a, b), strict=True):
        for stat in ("count", "missing", "tester_bound", "median_lower_bound", "min_lower_bound", "max_lower_bound"):
            table[f"{label}_{stat}"] = side[stat]
    table["ratio_bound"] = [ratio_bound(first_bound, second_bound) for first_bound, second_bound in zip(
        table[f"{labels[0]}_median_lower_bound"], table[f"{labels[1]}_median_lower_bound"], strict=True)]
    return table.reset_index()


def ratio_bound(divisor_bound, dividend_bound) -> str:
    """What a ratio of two medians is when either may be a lower bound (median_lower_bound): LOWER_BOUND_MARK where
    only the dividend is (the true ratio may be higher), UPPER_BOUND_MARK where only the divisor is, NO_RATIO where
    both are (it may be either), '' where it is the ratio of two figures. NaN (a side without the point) is none."""
    dividend, divisor = (bool(b) and b == b for b in (dividend_bound, divisor_bound))
    return NO_RATIO if dividend and divisor else LOWER_BOUND_MARK if dividend else UPPER_BOUND_MARK if divisor else ""


def setups_beside(singles: dict[str, pd.DataFrame], dual: pd.DataFrame, figure: str, by: str,
                  label: str = "dual") -> pd.DataFrame:
    """Lencse & Szilagyi 2024, Figs. 11-13's series in one table: each single set-up's median, min and max of a
    figure per value of `by` beside the dual set-up's, with the ratio of the medians dual / single for each
    (compare() per single set-up, which refuses one measured otherwise; the dual set-up's columns once)."""
    if not singles:
        raise ValueError(f"{figure}: no single set-up to set beside the {label} one")
    parts = [compare(runs, dual, figure, by=by, labels=(name, label)).rename(
        columns={"ratio": f"ratio {label} / {name}", "ratio_bound": f"ratio {label} / {name}{RATIO_BOUND}"})
        for name, runs in singles.items()]
    table = parts[0]
    for part in parts[1:]:
        table = table.merge(part.drop(columns=[c for c in map(str, part.columns) if c.startswith(f"{label}_")]),
                            on=by, how="outer")
    return table


#: setups_beside's column beside each ratio saying what bound it is (ratio_bound), named after the ratio's.
RATIO_BOUND = " bound"


def styled_setups(table: pd.DataFrame, figure: str):
    """setups_beside's table as a report shows it: statistics in the figure's display unit (a delay among lost tags
    as LOST_TEXT), ratios to 3 decimals ('-' where a median is missing or among lost tags), a lower-bound median
    marked LOWER_BOUND_MARK (and so a minimum or maximum: stats.ORDER_STATISTICS' bounds), a ratio over one as the
    bound it is (ratio_bound)."""
    scale, digits = figure_scale(figure), figure_format(figure)
    view = table.copy()
    columns = [str(c) for c in table.columns]
    marks = [c for c in columns if c.startswith("ratio ") and c.endswith(RATIO_BOUND)]
    for column in columns:
        if column.endswith(("_median", "_min", "_max")):
            view[column] = [shown(v, digits, scale) for v in table[column]]
        elif column.endswith(("_count", "_missing", "_tester_bound")):  # whole, also where a merge made them float
            view[column] = [shown(v, "{:.0f}") for v in table[column]]
        elif column.startswith("ratio ") and column not in marks:
            mark = table.get(column + RATIO_BOUND, pd.Series("", index=table.index)).fillna("")
            view[column] = [m if m == NO_RATIO else m + f"{v:.3f}"
                            if isinstance(v, numbers.Real) and math.isfinite(v) else "-"
                            for v, m in zip(table[column], mark, strict=True)]
    bounds = [c for c in columns if c.endswith(("_median_lower_bound", "_min_lower_bound", "_max_lower_bound"))]
    for column in bounds:
        statistic = column.removesuffix("_lower_bound")
        view[statistic] = [LOWER_BOUND_MARK + m if b else m
                           for m, b in zip(view[statistic], table[column].fillna(False).astype(bool), strict=True)]
    return report_table(view.drop(columns=[*bounds, *marks])).hide(axis="index")


def setups_plot(table: pd.DataFrame, labels: Iterable[str], by: str, figure: str, colours: dict[str, str],
                ylabel: str | None = None, ax=None):
    """Grouped bars of setups_beside's table, as Figs. 11-13 draw them: per value of `by` one bar per set-up (its
    median, min-max error bars), a lower-bound median hatched in LOWER_BOUND_COLOUR, a median among lost tags no
    bar but a marker at the top (LOST_TEXT): no delay is drawn that no frame had."""
    import matplotlib.pyplot as plt

    labels = list(labels)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    scale, width = figure_scale(figure), 0.8 / len(labels)
    for k, label in enumerate(labels):
        x = [i + (k - (len(labels) - 1) / 2) * width for i in range(len(table))]
        median, lost, low, high = _bar_extent(table[f"{label}_median"], table[f"{label}_min"],
                                              table[f"{label}_max"], scale)
        bars = ax.bar(x, median.fillna(0), width=width, color=colours[label], yerr=[low, high], capsize=3,
                      label="dual DUT" if label == "dual" else f"single DUT ({label})")
        bound = table.get(f"{label}_median_lower_bound", pd.Series(False, index=table.index))
        for bar, is_bound in zip(bars, bound.fillna(False).astype(bool), strict=True):
            if is_bound:
                bar.set_hatch("//")
                bar.set_edgecolor(LOWER_BOUND_COLOUR)
        for position in (p for p, is_lost in zip(x, lost, strict=True) if is_lost):
            _mark_lost(ax, position)
    ax.set_xticks(list(range(len(table))), [str(v) for v in table[by]])
    ax.set_xlabel(by.replace("_", " "))
    ax.set_ylabel(ylabel or figure_unit_label(figure))
    ax.legend()
    return ax


#: The traffic columns in which a SIIT set-up differs from a same-version one measuring the same frames.
_FRAME_SIZE, _IP_VERSION = "provenance.traffic.frame_size", "provenance.traffic.ip_version"


def ipv4_frame_sizes(sizes, versions) -> list:
    """Each port's frame size as the IPv4 frame it is or is translated to: an IPv6 one is SIIT_SIZE_DELTA longer."""
    return [size - SIIT_SIZE_DELTA * (version == 6) for size, version in zip(sizes, versions, strict=True)]


def as_ipv4_frames(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with each port's frame size as the IPv4 frame it is or is translated to (an IPv6 one SIIT_SIZE_DELTA
    longer), column frame_size_as_ipv4, in place of the frame sizes and the ports' IP versions: for comparing a SIIT
    set-up's traffic with a same-version one's."""
    if _FRAME_SIZE not in runs or _IP_VERSION not in runs:
        return runs
    sizes = [ipv4_frame_sizes(sizes, versions)
             if isinstance(sizes, list | tuple) and isinstance(versions, list | tuple) else sizes
             for sizes, versions in zip(runs[_FRAME_SIZE], runs[_IP_VERSION], strict=True)]
    return runs.drop(columns=[_FRAME_SIZE, _IP_VERSION]).assign(
        **{f"{_FRAME_SIZE}_as_ipv4": pd.Series(sizes, index=runs.index, dtype=object)})


def export(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a table as CSV or Parquet, chosen by the file's suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        # A column holding numbers and censored statistics ("< 100") is stored as text: Parquet wants one type.
        mixed = [c for c in table if table[c].map(type).isin([str]).any() and not table[c].map(
            lambda v: isinstance(v, str) or v is None).all()]
        table = table.assign(**{str(c): table[c].map(lambda v: None if v is None or v != v else str(v)) for c in mixed})
        table.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        table.to_csv(path, index=False)
    else:
        raise ValueError(f"export {path}: allowed suffixes .csv, .parquet")
    return path


#: A campaign's exports, written when it ends (Campaign.run) beside campaign.json.
SUMMARY_CSV = "summary.csv"


def export_campaign(campaign: str | Path) -> dict[str, Path | None]:
    """Write a campaign's summary.csv (one row per sweep point and headline figure: its statistics over the
    repetitions, as summary.json and the report have them) and trials.parquet (every finished run's trials,
    the run column relative to the campaign, e.g. "<point>/rep-001"; see trexlab.results.store)."""
    campaign = Path(campaign)
    runs = load_campaigns(campaign)
    manifest = json.loads((campaign / "campaign.json").read_text())
    sweep = sweep_columns(runs) or sorted({k.rsplit(".", 1)[-1] for p in manifest["points"] for k in p["values"]})
    tables = [summarize_points(runs, figure, ["experiment", "campaign", "point", *sweep]).assign(figure=figure)
              for figure in figure_columns(runs)]
    # Every point has its rows, with its last status and error: a point without a finished repetition (it failed)
    # has no statistics, but a reader of the file must see that it is missing, not find one point fewer.
    latest = read_point_log(campaign)
    summarized = {point for table in tables for point in table["point"]}
    figures: list[str | None] = [*figure_columns(runs)] or [None]  # no point finished: one row per point
    absent = [{"experiment": manifest["experiment"], "campaign": manifest["campaign"], "point": point["point"],
               **{k.rsplit(".", 1)[-1]: _hashable(v) for k, v in point["values"].items()}, "figure": figure,
               "count": 0, "missing": 0, "tester_bound": 0,
               **{f"{name}_lower_bound": False for name in ORDER_STATISTICS},
               "why": "no finished repetition"}
              for point in manifest["points"] if point["point"] not in summarized
              for figure in figures]
    columns = ["experiment", "campaign", "point", *sweep, "figure", *STAT_COLUMNS, "status", "error"]
    table = pd.concat([*tables, pd.DataFrame(absent)], ignore_index=True) if tables or absent else pd.DataFrame()
    table = table.assign(status=[latest.get(point, {}).get("status", "not run") for point in table.get("point", [])],
                         error=[latest.get(point, {}).get("error") or "" for point in table.get("point", [])]
                         ).reindex(columns=columns)
    return {"summary": export(table, campaign / SUMMARY_CSV), "trials": write_columnar_tree(campaign)}


def _bar_extent(median: pd.Series, minimum: pd.Series, maximum: pd.Series, scale: float):
    """A bar's height and error bar from a table's median, min and max (numbers or censored text), in the plot's
    unit: (median, lost, low, high). A median among lost frames (+inf) has no bar (NaN; lost marks it for a marker at
    the top); a maximum among them has no upper error bar: no delay is drawn that no frame had, and the point keeps
    its place on the axis. A censored minimum ('< 100') takes the error bar down to 0: a repetition lies below it."""
    median = median.map(numeric) * scale
    lost = median == math.inf
    median = median.where(~lost, math.nan)
    low = (median - minimum.map(numeric).fillna(0) * scale).where(median.notna(), 0)
    high = (maximum.map(numeric) * scale - median).where(lambda v: v < math.inf).fillna(0)
    return median, lost, low, high


def bar_plot(summary: pd.DataFrame, x: str, ylabel: str, ax=None, scale: float = 1.0):
    """Bars of the median with min-max error bars per value of x, as in Lencse & Szilagyi 2024, Fig. 6.

    A median that a tester-bound repetition may hold down is a bar hatched in LOWER_BOUND_COLOUR marked '≥';
    a censored median ('< 100') has no bar, only a downward marker at its bound; a censored minimum takes the
    error bar down to 0."""
    import matplotlib.pyplot as plt  # inline in a notebook kernel, Agg without a display

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    labels = [str(v) for v in summary[x]]
    median, lost, low, high = _bar_extent(summary["median"], summary["min"], summary["max"], scale)
    bound = summary.get("median_lower_bound", pd.Series(False, index=summary.index)).fillna(False).astype(bool)
    bars = ax.bar(labels, median.fillna(0), yerr=[low, high], capsize=4, color="#4C72B0")
    for i in (i for i, is_lost in enumerate(lost) if is_lost):
        _mark_lost(ax, i)
    for bar, is_bound in zip(bars, bound, strict=True):
        if is_bound:
            bar.set_hatch("//")
            bar.set_edgecolor(LOWER_BOUND_COLOUR)
            bar.set_linewidth(2)
            ax.annotate("≥", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        color=LOWER_BOUND_COLOUR, fontsize=14, fontweight="bold")
    for i, value in enumerate(summary["median"]):
        if is_censored(value):
            top = float(value.split()[-1]) * scale
            ax.plot([i], [top], marker="v", color="#C44E52", markersize=9)
            ax.annotate(value, (i, top), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    if bound.any():
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="#4C72B0", edgecolor=LOWER_BOUND_COLOUR, hatch="//",
                                 label="lower bound: tester-bound repetition at or below the median")],
                  fontsize=8, loc="upper left")
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return ax


def _mark_lost(ax, x: float) -> None:
    """An upward marker at the top of the axes at x, labelled LOST_TEXT: a figure among lost frames."""
    top = ax.get_xaxis_transform()  # x in data, y in axes fractions
    ax.plot([x], [0.95], marker="^", linestyle="none", color="#C44E52", markersize=9, transform=top, label=LOST_TEXT)
    ax.annotate(LOST_TEXT, (x, 0.95), xycoords=top, textcoords="offset points", xytext=(0, -14), ha="center",
                fontsize=8)


# -- what the notebooks display ---------------------------------------------------------------

#: Unit of a headline figure, read off its name's suffix: (suffix, label, scale to display).
_UNITS = (("_fps", "frames/s", 1.0), ("_bps", "bit/s", 1.0), ("_bytes", "bytes", 1.0), ("_s", "ms", 1e3),
          ("_percent", "%", 1.0))


def figure_scale(figure: str) -> float:
    return next((scale for suffix, _, scale in _UNITS if figure.endswith(suffix)), 1.0)


def figure_unit_label(figure: str) -> str:
    return next((label for suffix, label, _ in _UNITS if figure.endswith(suffix)), "")


def figure_title(figure: str) -> str:
    """throughput_fps -> 'throughput (frames/s)'; forward_typical_s -> 'forward typical (ms)'."""
    name = figure
    for suffix, label, _ in _UNITS:
        if figure.endswith(suffix):
            name = figure.removesuffix(suffix)
            return f"{name.replace('_', ' ')} ({label})"
    return name.replace("_", " ")


def shown(value, spec: str | Callable[[float], str], scale: float = 1.0) -> str:
    """A statistic as a report shows it: a number in its display unit ('{:,.0f}', or a function such as
    significant), '-' for none, a censored one as it is."""
    if is_censored(value):
        return value
    if value is None or value != value:
        return "-"
    if value == math.inf:
        return LOST_TEXT
    return spec(value * scale) if callable(spec) else spec.format(value * scale)


def significant(value: float, digits: int = 4) -> str:
    """A number to `digits` significant digits, never an exponent: 0.01137, 2.449, 89,110. A delay in ms keeps its
    microseconds (three decimals showed a 2.4 us latency as 0.002), a download time in ms no false decimals."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


def figure_format(figure: str) -> str | Callable[[float], str]:
    """How a figure's statistics are written in its display unit (for shown): counts whole (WHOLE_FIGURES), delays
    and times to 4 significant digits, other figures (ratios, percentages) to 3 decimals."""
    return "{:,.0f}" if figure.endswith(WHOLE_FIGURES) else significant if figure.endswith("_s") else "{:,.3f}"


def styled(table: pd.DataFrame, figure: str):
    """A summary table formatted for a report: statistics in the figure's display unit, a median held down by a
    tester-bound repetition marked '≥' (a lower bound), censored statistics as '< min_rate', and per point how
    many repetitions are missing or tester-bound and why."""
    view = table.copy()
    scale, digits = figure_scale(figure), figure_format(figure)
    for column in ("median", "min", "max", "p1", "p99"):
        view[column] = [shown(v, digits, scale) for v in table[column]]
    view["dispersion_percent"] = [shown(v, "{:.2f}") for v in table["dispersion_percent"]]
    bound = table.get("median_lower_bound", pd.Series(False, index=table.index)).fillna(False).astype(bool)
    for statistic in ORDER_STATISTICS:  # a statistic a tester-bound repetition may hold down reads '≥ ...'
        marked = table.get(f"{statistic}_lower_bound", pd.Series(False, index=table.index)).fillna(False).astype(bool)
        view[statistic] = [LOWER_BOUND_MARK + m if b else m for m, b in zip(view[statistic], marked, strict=True)]
    view = view.drop(columns=[f"{name}_lower_bound" for name in ORDER_STATISTICS], errors="ignore").rename(
        columns={"tester_bound": "tester-bound", "why": "missing / tester-bound: why"})
    return report_table(view).hide(axis="index").apply(
        lambda column: ["white-space: nowrap" + (f"; color: {LOWER_BOUND_COLOUR}; font-weight: bold" if b else "")
                        for b in bound], subset=["median"])


def _as_text(value) -> str:
    return html.escape(str(value))


def report_table(frame: pd.DataFrame):
    """A table as a report shows it (a pandas Styler to format further, its cells only: format_index would undo
    this): every cell, index label and header that is not a number is HTML-escaped text. A table's values come
    from a results directory that may have come from someone else (a sweep value in campaign.json, a point's error
    in points.jsonl), and a Styler writes them into the report's HTML as they are: '<script>' would run in the
    page a reader opens. A DataFrame's own HTML escapes, a Styler's does not (nor its escape='html' a list's)."""
    def cell(value):
        return value if value is None or value is pd.NA or value is pd.NaT or pd.api.types.is_number(value) \
            else _as_text(value)

    styler = frame.map(cell).style
    for axis in (0, 1):  # in place: labels and level names of rows and of columns
        styler.format_index(_as_text, axis=axis)
        styler.format_index_names(_as_text, axis=axis)
    return styler


#: What a statistic marked LOWER_BOUND_MARK means, for the text beside a table that has one.
LOWER_BOUND_NOTE = (f"**{LOWER_BOUND_MARK}= lower bound.** A repetition at or below the statistic so marked (a "
                    "median, minimum, maximum or percentile) was "
                    "tester-bound (stretched trials: the tester could not send the offered load; tester drops, or "
                    "tester drops unknown where frames were lost; "
                    "host backlog drops; hypervisor steal; or a result within 10 % of the tester's own ceiling), "
                    "or its search met no failing load (max_rate below the limit measured: the DUT's throughput, "
                    "or in a self-test the tester's own ceiling), so the figure may be higher")


def figure_heading(table: pd.DataFrame, figure: str) -> str:
    """A figure's section heading; when some point's statistic may be held down by the tester, it says so."""
    heading = f"## {text(figure_title(figure))}"
    bound = pd.Series(False, index=table.index)
    for name in ORDER_STATISTICS:
        bound |= table.get(f"{name}_lower_bound", pd.Series(False, index=table.index)).fillna(False).astype(bool)
    if bound.any():
        points = len(table) if bound.all() else int(bound.sum())
        heading += (f" — lower bound at {points} point(s): tester-bound\n\n{LOWER_BOUND_NOTE}; the "
                    "`missing / tester-bound: why` column names the repetitions.")
    if (table.get("missing", pd.Series(dtype=int)) > 0).any():
        heading += ("\n\n*Missing* repetitions have no figure: below min_rate (the search ended below the "
                    "minimum load; counted as observations below it: a statistic that falls among them reads "
                    "'< min_rate') or no figure at all (left out).")
    return heading


def bounds_table(runs: pd.DataFrame, figure: str) -> pd.DataFrame | None:
    """Per repetition, the bounds its result gives beside a figure (result.json headline_bounds: an MLRsearch goal's
    relevant lower and upper bound, fps per direction) with the figure between them and whether the goal result is
    regular (draft-ietf-bmwg-mlrsearch-15 section 4.8.4.1: the report must show the relevant lower bound, should
    show the upper; 4.8.4.2: a value from an irregular result is marked so). None where no repetition gives any."""
    columns = [f"result.headline_bounds.{figure}.{key}" for key in FIGURE_BOUND_KEYS]
    if not any(column in runs for column in columns):
        return None
    keys = ["experiment", *sweep_columns(runs)]
    rows = []
    for _, row in runs.iterrows():
        if figure not in (row.get("figure_keys") or ()):
            continue  # another procedure's repetition loaded beside
        lower, upper = (_number(row.get(column)) for column in columns)
        why = row.get(f"result.headline_irregular.{figure}")
        # A goal result missing a bound is irregular by definition (4.8.4.1 requires both), also where it has no figure
        # (below min_rate) and so no headline_irregular.
        missing = [name for name, value in (("lower", lower), ("upper", upper)) if value is None]
        goal = (f"irregular: {why}" if isinstance(why, str) and why else
                f"irregular: no relevant {' or '.join(missing)} bound" if missing else "regular")
        rows.append({**{key: row.get(key) for key in keys}, "repetition": row.get("repetition"),
                     BOUND_COLUMNS[0]: lower, figure_title(figure): _number(row.get(figure)), BOUND_COLUMNS[1]: upper,
                     "goal result": goal})
    if not rows:
        return None
    return pd.DataFrame(rows).sort_values([*keys, "repetition"], kind="stable", ignore_index=True)


#: bounds_table's columns of the relevant bounds, in its order with the figure between them.
BOUND_COLUMNS = ("relevant lower bound (frames/s per direction)", "relevant upper bound (frames/s per direction)")


def bounds_heading(figure: str) -> str:
    """The heading of a figure's bounds_table in a report."""
    return (f"**{text(figure_title(figure))}: each repetition's relevant bounds** (the figure is the conditional "
            "throughput at the relevant lower bound; draft-ietf-bmwg-mlrsearch-15, RFC 9971, section 4.8)")


def styled_bounds(table: pd.DataFrame):
    """A bounds_table as a report shows it: loads as whole frames/s, a missing bound as 'none'."""
    return report_table(table).format(precision=0, thousands=",", na_rep="none").hide(axis="index")


def point_status(campaign: str | Path) -> pd.DataFrame:
    """Per sweep point of a campaign: its values, last status, error and finished repetitions."""
    campaign = Path(campaign)
    manifest = json.loads((campaign / "campaign.json").read_text())
    latest = read_point_log(campaign)
    rows = []
    for point in manifest["points"]:
        record = latest.get(point["point"], {})
        finished = sum(1 for rep in (campaign / point["point"]).glob("rep-*") if (rep / "result.json").is_file())
        rows.append({"point": point["point"], **{k.rsplit(".", 1)[-1]: v for k, v in point["values"].items()},
                     "status": record.get("status", "not run"), "repetitions done": finished,
                     "error": record.get("error") or ""})
    return pd.DataFrame(rows)


def text(value: object) -> str:
    """A value as Markdown that reads as plain text: every ASCII punctuation character backslash-escaped
    (CommonMark), so that a spec's description, or any value a campaign.json holds, is shown as written and
    never becomes HTML, a script, a link or an image in the report a reader opens in a browser."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", str(value))


def code(value: object) -> str:
    """A value as a Markdown code span, whatever backticks it holds (its fence is longer than any run of them),
    its line breaks shown as \\n and \\r: a line break ends the heading or list item the span is in (a blank line
    any paragraph), and what followed would be Markdown again, HTML included."""
    value = str(value).replace("\r", "\\r").replace("\n", "\\n")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    return f"`{value}`" if fence == "`" else f"{fence} {value} {fence}"


def method_disclosure(campaign: str | Path) -> str:
    """Markdown saying how the figures were measured: what RFC 2544 and the seed papers ask to disclose. Every
    value from the campaign's files is shown as text (text, code): the spec is someone else's, shared."""
    manifest = json.loads((Path(campaign) / "campaign.json").read_text())
    spec = manifest["spec"]
    procedure = spec.get("procedure", {})
    params = procedure.get("params") or {}
    lines = [f"## {text(manifest['experiment'])} — campaign {code(manifest['campaign'])}", "",
             text(spec.get("description", "").strip()), ""]
    if spec.get("reproduces"):
        lines += [f"*Reproduces:* {text(spec['reproduces'])}", ""]
    lab = spec.get("lab") or {}
    lines += [f"- generator: {code(spec.get('generator'))}; lab: {text(lab.get('kind', '-'))} / "
              f"{text(lab.get('topology', '-'))}",
              f"- procedure: {code(procedure.get('name'))} with "
              + (", ".join(text(f"{k}={v}") for k, v in sorted(params.items())) or "defaults"),
              f"- repetitions per point: {text(spec.get('repetitions', DEFAULT_REPETITIONS))}",
              # When each repetition ran: in sequence, a disturbance of the lab falls on one point's repetitions.
              f"- order of the repetitions: {text(order_text(manifest.get('order')))}",
              "- traffic: " + (", ".join(text(f"{k}={v}") for k, v in sorted((spec.get('traffic') or {}).items()))
                                or "defaults")]
    if "loss_tolerance_percent" in params:
        lines.append(f"- loss tolerance: {text(params['loss_tolerance_percent'])} % (disclosed, as RFC 2544 asks "
                     "of any non-zero tolerance)")
    if spec.get("dut"):
        lines.append(f"- DUT configuration: {text(json.dumps(spec['dut'], sort_keys=True))}")
    if spec.get("endpoints"):  # what the TCP figures depend on: the file's size, the congestion control
        lines.append(f"- TCP endpoints (client, server): {text(json.dumps(spec['endpoints'], sort_keys=True))}")
    if spec.get("sweep"):
        lines.append("- sweep: " + "; ".join(f"{text(k)} ∈ {text(v)}" for k, v in spec["sweep"].items()))
    # As measured (defaults included: the search's stopping rule, the tester ceiling it was compared against), with
    # the points each line comes from: its inputs may be a point's own (the load taken from its throughput runs).
    measured: dict[str, list[str]] = {}
    for point in manifest["points"]:
        summary = Path(campaign) / point["point"] / SUMMARY
        if summary.is_file() and (method := read_json(summary).get("method")):
            measured.setdefault(text(method_line(method)), []).append(point["point"])
    for line, where in measured.items():
        at = (f"every point ({len(where)})" if len(where) == len(manifest["points"]) > 1 else
              f"point{'s' if len(where) > 1 else ''} " + ", ".join(code(p) for p in where))
        lines.append(f"- as measured at {at}: {line}")
    # A resumed campaign may have gone on with another trexlab (trexlab.plan.campaign.Campaign.check_resumable).
    commits: dict[str, int] = {}
    # What the lab warned of when the figures were measured (Lab.warnings, kept in each run's provenance: an emulated
    # DUT, DUTs sharing a CPU): printed at the terminal of the run, and belonging beside the figures as much.
    lab_warnings: dict[str, None] = {}
    testbeds: dict[str, None] = {}  # the machines, kernels and tester behind the figures (measured_on)
    for point in manifest["points"]:
        for provenance in sorted((Path(campaign) / point["point"]).glob("rep-*/provenance.json")):
            recorded = read_json(provenance)
            commit = text(recorded.get("git_commit"))
            commits[commit] = commits.get(commit, 0) + 1
            lab = recorded.get("lab")
            found = lab.get("warnings") if isinstance(lab, dict) else None
            lab_warnings.update(dict.fromkeys(text(w) for w in (found if isinstance(found, list) else [])))
            testbeds[text(measured_on(recorded))] = None
    if len(commits) > 1:
        lines.append("- ⚠ measured by different trexlab commits (the campaign was resumed after an update): "
                     + ", ".join(f"{commit} ({count} repetition(s))" for commit, count in commits.items()))
    lines += [f"- measured on: {testbed}" for testbed in testbeds if testbed]
    lines += [f"- ⚠ lab: {warning}" for warning in lab_warnings]
    return "\n".join(lines)


def measured_on(recorded: dict) -> str:
    """The test bed of one run as its provenance.json recorded it, in one line: this host's kernel and CPU, the
    tester (and its host's, when it is another machine), each DUT's kernel, CPU, the CPUs it forwards on and its
    RSS and clock settings as roles/dut_tuning applied or skipped them. A paper's figures come with theirs (Lencse &
    Szilagyi 2024, section 4.1: kernels, CPUs, clock, RSS hash); '' when nothing was recorded."""
    def field(mapping, key):
        value = mapping.get(key) if isinstance(mapping, dict) else None
        return value if value not in (None, "", [], {}) else None

    parts = []
    host = recorded.get("host")
    if field(host, "kernel") or field(host, "cpu_model"):
        parts.append(f"host kernel {field(host, 'kernel') or '?'}, {field(host, 'cpu_model') or '?'}"
                     + (f" ({cpus} CPUs)" if (cpus := field(host, "cpus")) else ""))
    generator = recorded.get("generator")
    if tester := field(generator, "tester") or field(generator, "generator"):
        other = field(generator, "tester_host")
        parts.append(f"tester {tester}" + (f" sending by {field(generator, 'send_method')}"
                                           if field(generator, "send_method") else "")
                     + (f" on kernel {field(other, 'kernel') or '?'}, {field(other, 'cpu_model') or '?'}"
                        if other else ""))
    lab = recorded.get("lab")
    facts = field(lab, "dut_facts") or {}
    for name in sorted(facts) if isinstance(facts, dict) else ():
        tuning = field(facts[name], "dut_tuning")
        if tuning:
            parts.append(f"{name} kernel {field(tuning, 'kernel') or '?'}, {field(tuning, 'cpu_model') or '?'}, CPUs "
                         f"{field(tuning, 'cpus') or '?'}, RSS 4-tuple {field(tuning, 'rss_4tuple') or '?'}, "
                         f"CPU clock {field(tuning, 'cpufreq') or '?'}")
    return "; ".join(parts)


def repetition_plot(runs: pd.DataFrame, figure: str, ax=None):
    """Every repetition's value per sweep point (dots) with the median (bar): how far repetitions agree."""
    import matplotlib.pyplot as plt  # inline in a notebook kernel, Agg without a display

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    sweep = sweep_columns(runs)
    keys = ["experiment", *sweep]
    scale = figure_scale(figure)
    bound_seen = False
    for i, (_key, group) in enumerate(runs.groupby(keys, dropna=False, sort=True)):
        found = observations(group, figure)
        lost = [o for o in found if o.value == math.inf]  # among lost frames: marked at the top, never drawn
        free = [o.value * scale for o in found if o.value is not None and not o.tester_bound and o not in lost]
        bound = [o.value * scale for o in found if o.value is not None and o.tester_bound and o not in lost]
        if lost:
            _mark_lost(ax, i)
        below = [o.below * scale for o in found if o.censored and o.below is not None]
        ax.scatter([i] * len(free), free, s=14, alpha=0.6, color="#4C72B0")
        if bound:
            bound_seen = True
            ax.scatter([i] * len(bound), bound, s=30, marker="^", color=LOWER_BOUND_COLOUR,
                       label="tester-bound (a lower bound)" if held_down_by_tester(figure) else "tester-bound")
        if below:
            ax.scatter([i] * len(below), below, s=30, marker="v", color="#C44E52", label="below min_rate")
        median = numeric(summarize(found)["median"])
        if math.isfinite(median):
            ax.hlines(median * scale, i - 0.3, i + 0.3, color="#C44E52")
        bound_seen = bound_seen or bool(lost)
    if bound_seen or any(o.censored for o in observations(runs, figure)):
        handles, names = ax.get_legend_handles_labels()
        unique = dict(zip(names, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=8)
    labels = [", ".join(map(str, k[1:] if isinstance(k, tuple) else (k,))) or str(k)
              for k, _ in runs.groupby(keys, dropna=False, sort=True)]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(", ".join(sweep) or "point")
    ax.set_ylabel(figure_unit_label(figure))
    ax.grid(axis="y", alpha=0.3)
    return ax


def paper_table(summary: pd.DataFrame, column: str) -> pd.DataFrame:
    """A summary in the layout of Lencse 2021, Tables I-V: rows median/min/max/disp. (%), one column per value; then
    the repetitions with a figure each column rests on, and the missing and tester-bound ones where there are."""
    labels = [_short_label(v) for v in summary[column]]

    def marked(statistic: str) -> pd.Series:  # one a tester-bound repetition may hold down reads '≥ 885,643'
        if f"{statistic}_lower_bound" not in summary:
            return summary[statistic]
        return pd.Series([f"{LOWER_BOUND_MARK}{m:,.0f}" if b and not is_censored(m) else m for m, b in zip(
            summary[statistic], summary[f"{statistic}_lower_bound"].fillna(False), strict=True)],
                         index=summary.index, dtype=object)

    rows = {"median": marked("median"), "min": marked("min"), "max": marked("max"),
            "disp. (%)": summary["dispersion_percent"].map(lambda v: v if is_censored(v) else round(v, 2))}
    if "count" in summary:  # what each column rests on: adaptive repetitions stop each point at its own count
        rows["repetitions"] = summary["count"]
    for name, label in (("missing", "missing"), ("tester_bound", "tester-bound"), ("why", "why")):
        if name in summary and summary[name].astype(bool).any():
            rows[label] = summary[name]
    return pd.DataFrame({label: [rows[r].iloc[i] for r in rows] for i, label in enumerate(labels)},
                        index=list(rows))


def _short_label(value) -> str:
    """(64, 64) -> '64 B' for frame sizes alike on both ports; otherwise str(value)."""
    if isinstance(value, tuple) and len(set(value)) == 1:
        return f"{value[0]} B"
    return str(value)


def sibling_campaigns(campaign: str | Path, experiment: str) -> list[Path]:
    """Campaigns of another experiment under the same results root that ran this campaign's procedure with its
    parameters on the same test frames (e.g. the single-DUT half of a comparison: not a CI-scale one, of other trial
    durations and resolution, beside a full one, nor one of fixed ports beside RFC 4814 ones; the SIIT ports' own
    sizes aside: spec_traffic_as_ipv4), with the same repetitions and tester (compare's SETUP), the one run last at
    the end (their campaign.json is written at every run)."""
    root = Path(campaign).resolve().parent.parent
    if not (root / experiment).is_dir():
        return []
    def measured(path: Path) -> tuple:
        from trexlab.procedures.selftest import tester_options

        spec = json.loads((path / "campaign.json").read_text())["spec"]
        generator = spec.get("generator", "software")
        return (spec.get("procedure"), spec_traffic_as_ipv4(spec), spec.get("repetitions", DEFAULT_REPETITIONS),
                generator, tester_options(generator, spec.get("generator_options")))

    own = measured(Path(campaign))
    like = [path for path in campaign_dirs(root / experiment) if measured(path) == own]
    return sorted(like, key=lambda path: (path / "campaign.json").stat().st_mtime_ns)


def spec_traffic_as_ipv4(spec: dict) -> dict:
    """A spec's traffic with its defaults, each port's frame size as the IPv4 frame it is or translates to (as
    as_ipv4_frames reads the runs) and no IP versions nor destination networks (the comparison's x axis): what the
    two set-ups of a comparison share."""
    traffic = {f.name: f.default for f in dataclasses.fields(Traffic)} | dict(spec.get("traffic") or {})

    def pair(value) -> list:
        return list(value) if isinstance(value, list | tuple) else [value, value]

    sizes, versions = pair(traffic.pop("frame_size")), pair(traffic.pop("ip_version"))
    traffic.pop("destination_networks", None)
    traffic["frame_size_as_ipv4"] = ipv4_frame_sizes(sizes, versions)
    return traffic


# -- the user's side next to RFC 2544 (HTTP download experiments) ------------------------------------------

#: DUT impairment settings (roles/netem) that tell the points of different experiments apart.
IMPAIRMENT_KEYS = ("loss_percent", "loss_every_nth", "delay_ms", "jitter_ms", "selective_every_nth",
                   "selective_percent")


def impairment_labels(runs: pd.DataFrame) -> pd.Series:
    """Per run, the DUT impairment it ran under, as a label ('loss 0.1 %', 'delay 100 ms', 'none', ...)."""
    def value(row, key):
        v = row.get(f"provenance.spec.dut.impairment.{key}")
        return 0 if v is None or v != v else v

    def label(row) -> str:
        v = {k: value(row, k) for k in IMPAIRMENT_KEYS}
        parts = []
        if v["loss_percent"]:
            parts.append(f"loss {v['loss_percent']:g} %")
        if v["loss_every_nth"]:
            parts.append(f"every {v['loss_every_nth']:g}th lost")
        if v["delay_ms"]:
            jitter = f" ± {v['jitter_ms']:g}" if v["jitter_ms"] else ""
            share = (f"every {v['selective_every_nth']:g}th " if v["selective_every_nth"] else
                     f"{v['selective_percent']:g} % " if v["selective_percent"] else "")
            parts.append(f"{share}delay {v['delay_ms']:g}{jitter} ms".strip())
        return ", ".join(parts) or "none"

    return runs.apply(label, axis=1) if len(runs) else pd.Series(dtype=str)


def _sweep_order(values: Iterable) -> tuple:
    """Sweep values in order, a missing one (a point of a campaign that did not sweep it) last: sorting never
    compares NaN with a frame size (a tuple), which neither Python nor pandas can."""
    return tuple((not _present(value), value if _present(value) else 0) for value in values)


def _impairment_order(label: str) -> tuple:
    numbers = [float(x) for x in label.replace("±", " ").split() if x.replace(".", "", 1).isdigit()]
    return (label.split(" ")[0] != "none", numbers, label)


#: download_table's rows of statistics (the paper's), in s; the counts follow them.
DOWNLOAD_ROWS = ("median (s)", "1st percentile (s)", "99th percentile (s)")


def download_table(runs: pd.DataFrame, figure: str = "download_time_s") -> pd.DataFrame:
    """The paper's layout (Lencse et al. 2020, Tables I, III, IV): rows median / 1st / 99th percentile in s,
    one column per DUT impairment, over the repetitions (downloads) of each point; then how many downloads each
    column rests on, and, where any failed (no time), how many were left out; then, where the downloads recorded
    them, the server's TCP counters (server_tcp_table: SERVER_TCP_ROWS, and SERVER_TCP_COUNT where they rest on
    other downloads than the times), which show that the impairment reached the transfers."""
    if runs.empty or figure not in runs:
        return pd.DataFrame(index=list(DOWNLOAD_ROWS))
    runs = runs.assign(impairment=impairment_labels(runs))
    columns = {}
    for label in sorted(runs["impairment"].unique(), key=_impairment_order):
        s = summarize(runs.loc[runs["impairment"] == label, figure].tolist())
        columns[label] = [s["median"], s["p1"], s["p99"], s["count"], s["missing"]]
    table = pd.DataFrame(columns, index=[*DOWNLOAD_ROWS, "downloads", "failed (left out)"], dtype=object)
    table = table if table.loc["failed (left out)"].any() else table.drop(index="failed (left out)")
    counters = server_tcp_table(runs, ["impairment"])
    if counters is None:
        return table
    counters = counters.set_index("impairment").T.reindex(columns=table.columns)
    if (counters.loc[SERVER_TCP_COUNT] == table.loc["downloads"]).all():
        counters = counters.drop(index=SERVER_TCP_COUNT)  # every download's counters: "downloads" counts them
    return pd.concat([table, counters])


#: Where load_campaigns puts a download's server TCP counters (result.json's server_tcp, flattened).
SERVER_TCP = "result.server_tcp."
#: server_tcp_table's column of how many downloads its counters' statistics rest on.
SERVER_TCP_COUNT = "downloads with server TCP counters"


def counter_label(counter: str) -> str:
    """A server TCP counter's row or column heading: 'retransmitted segments: median (1st-99th percentile)'."""
    return f"{counter.replace('_', ' ')}: median (1st–99th percentile)"


#: download_table's rows of server TCP counters, one per counter (where the downloads recorded them).
SERVER_TCP_ROWS = tuple(counter_label(counter) for counter in TCP_COUNTERS)


def _count_text(value: float) -> str:
    """A statistic of whole counts as text: whole, with thousands separators (stats.WHOLE); the median of an even
    count may lie halfway between two counts and keeps its .5 (0.5 retransmission timeouts is not 0)."""
    return format(value, WHOLE if float(value).is_integer() else ",.1f")


def server_tcp_table(runs: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame | None:
    """Per sweep point (or group of `by`): the server node's TCP counters over each download (http_download's
    server_tcp: trexlab.testbed.endpoints.TCP_COUNTERS), each as 'median (1st percentile-99th percentile)' over
    the downloads that recorded them (stats.summarize: nearest rank, as the download times), and how many those
    are (SERVER_TCP_COUNT); '-' where none did. They show that the DUT's loss or delay reached the transfer
    (segments sent again, timeouts), which the download time alone does not. None: no download recorded them."""
    columns = [f"{SERVER_TCP}{counter}" for counter in TCP_COUNTERS]
    if not all(column in runs for column in columns):
        return None
    by = by if by is not None else ["experiment", *sweep_columns(runs)]
    rows = []
    for key, group in runs.groupby(by, dropna=False, sort=True):
        read = group[group[columns].notna().all(axis=1)]
        row = {**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)), SERVER_TCP_COUNT: len(read)}
        for label, column in zip(SERVER_TCP_ROWS, columns, strict=True):
            s = summarize(read[column].tolist())
            row[label] = (f"{_count_text(s['median'])} ({_count_text(s['p1'])}–{_count_text(s['p99'])})"
                          if s["count"] else "-")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, SERVER_TCP_COUNT, *SERVER_TCP_ROWS])


#: What the server TCP counters beside a download time are, for the text under a table that shows them.
SERVER_TCP_NOTE = (
    "**Server TCP counters**: the server node's kernel counters over each download (/proc/net/snmp and "
    "/proc/net/netstat, all of the node's connections: the download's alone while nothing else talks TCP there): "
    "segments sent (OutSegs, retransmissions not included), retransmitted segments (RetransSegs: each segment the "
    "DUT dropped, or delayed past the sender's patience, is sent again at least once), duplicate segments "
    "reported (D-SACK: retransmissions of segments that were not lost, e.g. a late one that arrived after all) and "
    "retransmission timeouts (RTOs). Retransmitted less duplicates is the segments the DUT dropped (or delayed "
    "past the download's end). Each cell is the median (1st–99th percentile) over the downloads that recorded "
    "them; a median of an even count is the mean of the two middle ones.")


def percentile_note(counts: Iterable[int], what: str = "repetitions") -> str:
    """What the 1st and 99th percentile of each count of values are (stats.nearest_rank): of fewer than 100, the
    minimum and maximum themselves, which a reader of a '1st percentile' does not expect unless told."""
    def ordinal(k: int) -> str:
        return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"

    parts = []
    for n in sorted({int(c) for c in counts if c}, reverse=True):
        low, high = nearest_rank(1, n), nearest_rank(99, n)
        parts.append(f"of {n} {what} the 1st percentile is the {ordinal(low)} smallest"
                     + (" (the minimum)" if low == 1 else "") + f", the 99th the {ordinal(high)} smallest"
                     + (" (the maximum)" if high == n else ""))
    return f"Percentiles are {NEAREST_RANK}: " + "; ".join(parts) + "." if parts else ""


#: How every report says what its percentiles are (stats.nearest_rank): percentile_note, and analysis/report.ipynb's
#: opening text in these words.
NEAREST_RANK = "nearest rank (the value of rank ceil(q / 100 × n) in ascending order, never an interpolation)"


def side_by_side(user_runs: pd.DataFrame, rfc2544_runs: pd.DataFrame,
                 user_figure: str = "download_time_s") -> pd.DataFrame:
    """Per DUT impairment: what the user sees (median, 1st and 99th percentile of user_figure) next to the
    RFC 2544 figures measured under the same impairment by other experiments (their medians, one column per
    experiment, figure and sweep value; a rate's median that a tester-bound repetition may hold down is a string
    marked '≥' in the figure's format, as in every table): the comparison the seed paper draws between its tables.
    A row 'none' leads wherever the RFC 2544 campaigns measured without impairment, even if the user's side did
    not: the loss-free figure the impaired ones are read against."""
    user = user_runs.assign(impairment=impairment_labels(user_runs))
    labels = set(user["impairment"])
    if not rfc2544_runs.empty and "none" in set(impairment_labels(rfc2544_runs)):
        labels.add("none")
    rows = {}
    figures: dict[str, str] = {}  # each RFC 2544 column's figure: how styled_side_by_side writes it
    for label in sorted(labels, key=_impairment_order):
        s = summarize(user.loc[user["impairment"] == label, user_figure].tolist())
        title = user_figure.removesuffix("_s").replace("_", " ")  # in s, as the paper's tables
        rows[label] = {f"{title} median (s)": s["median"], f"{title} 1st percentile (s)": s["p1"],
                       f"{title} 99th percentile (s)": s["p99"]}
    if not rfc2544_runs.empty:
        other = rfc2544_runs.assign(impairment=impairment_labels(rfc2544_runs))
        for figure in figure_columns(other):
            # Each experiment over its own figures and sweep. Over all experiments' sweeps, one that did not sweep a
            # key had it NaN ("frame_size=nan" in its headings) and pandas sorted those NaN beside the others'
            # frame sizes, tuples, by a fallback it deprecates (a Pandas4Warning); and a figure it never measured
            # made an empty column (gaming-delay's latency beside gaming-selective-delay's).
            for (experiment,), runs in other.groupby(["experiment"], sort=True):
                if figure not in figure_columns(runs):
                    continue
                keys = ["impairment", *[k for k in sweep_columns(runs) if k not in IMPAIRMENT_KEYS]]
                groups = runs.groupby(keys, dropna=False, sort=False)
                for key, group in sorted(groups, key=lambda item: _sweep_order(item[0][1:])):
                    label, *values = key
                    if label not in rows:
                        continue
                    where = ", ".join(f"{k}={v}" for k, v in zip(keys[1:], values, strict=True))
                    check_pooled(group, f"{experiment}, impairment {label}" + (f", {where}" if where else ""))
                    column = f"{experiment}: {figure_title(figure)}" + (f" [{where}]" if where else "")
                    figures[column] = figure
                    # Each repetition as every table reads it: a search that ended below min_rate is an observation
                    # below it (a median among such reads "< min_rate"), never left out, which raised the median.
                    # A tester-bound rate at or below the median makes it a lower bound, marked as in every table
                    # (only a rate: a tester cannot lower a delay).
                    summary = summarize(observations(group, figure), held_down_by_tester(figure))
                    median = summary["median"]
                    rows[label][column] = (
                        median if is_censored(median) else
                        LOWER_BOUND_MARK + shown(median, figure_format(figure), figure_scale(figure))
                        if summary["median_lower_bound"] else median * figure_scale(figure))
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "DUT impairment"
    table = table.reset_index()
    table.attrs[SIDE_FIGURES] = figures
    return table


#: side_by_side's table.attrs key: each RFC 2544 column's figure (its name), for styled_side_by_side.
SIDE_FIGURES = "figures"
#: How the download times beside them are written, in s: as download_table's in the report above them.
DOWNLOAD_FORMAT = "{:,.3f}"


def styled_side_by_side(table: pd.DataFrame):
    """side_by_side's table as the HTTP report shows it: download times in s to 3 decimals (as download_table's),
    each RFC 2544 figure as every table writes it (figure_format, in its display unit: frames/s whole, a latency in
    ms to 4 significant digits, not '81,274.000' frames/s and a 2.4 us latency '0.002' ms), a marked or censored
    median as it is, '-' where there is none."""
    figures = table.attrs.get(SIDE_FIGURES, {})
    view = table.copy()
    for column in view.columns[1:]:
        figure = figures.get(column)
        digits = DOWNLOAD_FORMAT if figure is None else figure_format(figure)
        view[column] = [shown(v, digits) for v in table[column]]  # side_by_side scaled them to the display unit
    return report_table(view).hide(axis="index")


def disclosure_beside(campaigns: Iterable[str | Path], table: pd.DataFrame | None = None,
                      heading: str = "How the figures beside these were measured") -> str:
    """Markdown with the method disclosure of each campaign whose figures a report sets beside its own (the
    single-DUT half of a comparison, the RFC 2544 campaigns beside download times): those figures are printed
    too, and a figure is read with its method. With a table (side_by_side's), only the campaigns whose
    experiment heads one of its columns ('<experiment>: ...'); '' when none is left."""
    shown = []
    for campaign in campaigns:
        experiment = json.loads((Path(campaign) / "campaign.json").read_text())["experiment"]
        if table is None or any(str(column).startswith(f"{experiment}: ") for column in table.columns):
            shown.append(method_disclosure(campaign))
    if not shown:
        return ""
    # Each disclosure starts with its campaign's heading (##): this one sits above them.
    return "\n\n".join([f"## {heading}", *shown])


def campaigns_beside(campaign: str | Path, exclude_procedure: str) -> list[Path]:
    """The other campaigns under the same results root (their procedure is not exclude_procedure)."""
    root = Path(campaign).resolve().parent.parent
    found = []
    for path in campaign_dirs(root):
        spec = json.loads((path / "campaign.json").read_text()).get("spec", {})
        if spec.get("procedure", {}).get("name") != exclude_procedure:
            found.append(path)
    return found


def latency_floor_disclosure(campaign: str | Path) -> str:
    """Markdown naming the tester's own latency floor that latency and PDV figures were compared against (from
    a self-test through looped-back ports) and every figure flagged as within its factor; '' for other
    procedures. A tester's receive path can dominate a DUT's latency: the reader must see both side by side."""
    campaign = Path(campaign)
    manifest = json.loads((campaign / "campaign.json").read_text())
    floors, warnings, compared = {}, [], False
    for point in manifest["points"]:
        for rep in sorted((campaign / point["point"]).glob("rep-*/result.json")):
            result = read_json(rep)
            if "tester_latency_floor" not in result:  # the procedures that compare against it write it
                continue
            compared = True
            floor = result.get("tester_latency_floor")
            if floor:
                floors[(floor.get("median_s"), floor.get("p99_9_s"), floor.get("factor"))] = True
                warnings += [f"{point['point']} {rep.parent.name}: {w}" for w in floor.get("warnings", [])]
    if not compared:
        return ""
    lines = ["**Tester latency floor**", ""]
    if not floors:
        lines.append("- none recorded: run `trexlab selftest` on a loopback lab; the figures below may include "
                     "a tester delay that nothing here measures")
    for median, p99_9, factor in floors:
        lines.append(f"- median {format_seconds(median) if median else '-'}, 99.9th percentile "
                     f"{format_seconds(p99_9) if p99_9 else '-'} through the tester's looped-back ports; figures "
                     f"within {factor:g}x of it are flagged")
    lines += [f"- ⚠ {w}" for w in warnings] or ["- no figure within that factor"]
    return "\n".join(lines)


def loss_curves(campaign: str | Path) -> str:
    """Markdown: RFC 2544 section 26.3's curve (frame loss rate per offered load, the load also in percent of the
    media's maximum, each direction's loss) of each frame loss rate point of a campaign, over its repetitions
    (trexlab.procedures.flr.curve_over_repetitions: one formatting); '' for other procedures. Every cell is shown as
    text."""
    from trexlab.procedures import flr

    campaign = Path(campaign)
    manifest = json.loads((campaign / "campaign.json").read_text())
    parts = []
    for point in manifest["points"]:
        results = [result for rep in sorted((campaign / point["point"]).glob("rep-*/result.json"))
                   if (result := read_json(rep)).get("procedure") == flr.NAME]
        if not results:
            continue
        columns, rows = flr.curve_over_repetitions(results)
        methods = ", ".join(dict.fromkeys(text(result.get("method", flr.METHOD)) for result in results))
        parts += [f"**Frame loss rate per offered load: {text(point['point'])}, {len(results)} "
                  f"repetition{'s' if len(results) != 1 else ''}** ({methods}; the headline is the first load; "
                  "median, minimum and maximum over the repetitions that ran each load, each repetition's own "
                  "curve in its result.json)", "",
                  "| " + " | ".join(map(text, columns)) + " |", "|" + " ---: |" * len(columns),
                  *("| " + " | ".join(map(text, row)) + " |" for row in rows), ""]
    return "\n".join(parts)
