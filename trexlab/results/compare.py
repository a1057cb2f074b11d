"""Comparing two campaigns point by point: did this kernel, DUT or tuning change the figure?

    table = compare_campaigns("results/demo/c-aaaa", "results/demo/c-bbbb")   # B against A (the baseline)

For each sweep point the two campaigns share, and each headline figure both measured: the median of each
(trexlab.results.stats, as every table shows it), their difference, and the shift of B against A with a
distribution-free confidence interval at the level SHIFT_CONFIDENCE (trexlab.results.stats), from which the
verdict follows:

* **shift**: the Hodges-Lehmann estimate, the median of the m x n differences b_j - a_i between
  every repetition of B and every repetition of A;
* **interval**: the Mann-Whitney (Moses) interval: the c-th smallest and c-th largest of those
  differences, c the largest count with P(U <= c - 1) <= (1 - confidence) / 2 under the null
  distribution of the Mann-Whitney U of m and n repetitions. It holds whatever the distribution of the
  repetitions (no normality assumed), only that B's differ from A's by a shift. U's distribution is
  exact (computed) up to EXACT_LIMIT pairs, beyond that its normal approximation. With ties, as the
  discrete loads of binary searches give, the closed interval covers at least as often as stated. The
  confidence reached (exactly, not just "at least SHIFT_CONFIDENCE") is reported beside it;
* **verdict**: "lower" when the whole interval is below 0 (B's figure is lower than A's), "higher"
  when it is above, else "no significant difference"; "undecided" where repetitions the interval could not
  see as they are could undo its direction (below); "too few repetitions" when m and n are too few for
  any interval at that confidence: the widest (c = 1) misses with probability 2 / C(m + n, m), so there is
  none while that exceeds 1 - confidence (a bound on m and n together, not on each side alone: fewer
  repetitions on one side can be made up for by more on the other); "only in A" / "only in B" for a point
  one campaign lacks.

Repetitions without a figure (below min_rate: censored, or failed) take no part in the interval; the
notes column counts them, and tester-bound repetitions (a lower bound of the DUT's figure), per side.
Which of the medians is the lower says nothing about a figure held down by the tester: a side's repetitions below
min_rate lie below all its figures, its lower bounds (a tester-bound rate, a search that met no failing load) may
lie above theirs. So "lower" stands only where B has no lower bound and A none below min_rate, "higher" only the
other way round (B above A's figures is then above A's too); else the verdict is "undecided" and the notes say
which repetitions could undo it.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from trexlab.plan.repetition import cell as _cell
from trexlab.plan.runplan import RESULTS_ROOT
from trexlab.results import analysis
from trexlab.results.stats import (
    SHIFT_CONFIDENCE,
    figure_spec,
    held_down_by_tester,
    is_censored,
    numeric,
    summarize,
)

#: Up to this many pairs (m x n) the null distribution of U is computed exactly (m x n vector steps).
EXACT_LIMIT = 2_500
VERDICTS = ("lower", "higher", "no significant difference", "undecided", "too few repetitions", "only in A",
            "only in B")
METHOD = ("Hodges-Lehmann shift (median of the pairwise differences B - A) with the distribution-free "
          "Mann-Whitney (Moses) confidence interval")


class CompareError(ValueError):
    """The campaigns cannot be compared (not campaigns, no common figure, other sweep variables); one line."""


def u_distribution(m: int, n: int) -> np.ndarray:
    """P(U = u), u = 0..m*n: the Mann-Whitney U (pairs with the B value above the A value) of m A and n B
    values when both come from one continuous distribution.

    Of i + j values the largest is a B value with probability j / (i + j), then above all i A values
    (U gains i), else an A value (U gains nothing): p(i, j) = j/(i+j) p(i, j-1) shifted by i + i/(i+j) p(i-1, j).
    """
    rows = [np.ones(1)] * (n + 1)  # p(0, j): U = 0
    for i in range(1, m + 1):
        current = [np.ones(1)]  # p(i, 0)
        for j in range(1, n + 1):
            p = np.zeros(i * j + 1)
            p[i:] += j / (i + j) * current[j - 1]
            p[: len(rows[j])] += i / (i + j) * rows[j]
            current.append(p)
        rows = current
    return rows[n]


def critical_count(m: int, n: int, confidence: float = SHIFT_CONFIDENCE) -> tuple[int, float]:
    """c, the order of the differences that bound the interval, and the confidence it reaches; (0, nan)
    when no interval reaches the confidence with m and n values."""
    tail = (1 - confidence) / 2
    if m * n <= EXACT_LIMIT:
        cdf = np.cumsum(u_distribution(m, n))
        c = int(np.searchsorted(cdf, tail * (1 + 1e-9), side="right"))  # count of u with P(U <= u) <= tail
        return (c, 1 - 2 * float(cdf[c - 1])) if c else (0, math.nan)
    # Normal approximation of U (mean mn/2, variance mn(m+n+1)/12), with continuity correction.
    mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
    c = math.floor(mean - NormalDist().inv_cdf(1 - tail) * sd + 0.5)
    if c < 1:
        return 0, math.nan
    return c, 1 - 2 * NormalDist(mean, sd).cdf(c - 0.5)


def shift_interval(a: list[float], b: list[float], confidence: float = SHIFT_CONFIDENCE) -> dict:
    """Hodges-Lehmann shift of b against a and its Mann-Whitney confidence interval (module docstring)."""
    first, second = np.asarray(a, float), np.asarray(b, float)
    m, n = len(first), len(second)
    if m == 0 or n == 0:
        return {"shift": math.nan, "ci_low": math.nan, "ci_high": math.nan, "confidence": math.nan}
    with np.errstate(invalid="ignore"):
        differences = second[None, :] - first[:, None]
    # Two delays among lost or late frames (+inf each: trexlab.trial.Latency) are a tie, as U ranks them: their
    # difference is 0, not inf - inf = NaN (which took no rank, sorted last and made the shift NaN).
    differences = np.sort(np.where(np.isnan(differences), 0.0, differences).ravel())
    c, reached = critical_count(m, n, confidence)
    low, high = (differences[c - 1], differences[m * n - c]) if c else (math.nan, math.nan)
    return {"shift": float(np.median(differences)), "ci_low": float(low), "ci_high": float(high),
            "confidence": reached}


def verdict(ci_low: float, ci_high: float) -> str:
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "too few repetitions"
    if ci_high < 0:
        return "lower"
    if ci_low > 0:
        return "higher"
    return "no significant difference"


def _undoers(found, lower_bounds: bool) -> tuple[int, int]:
    """Of one side's repetitions: how many may lie below what the interval saw (below min_rate, left out), and how
    many above it (lower bounds: tester-bound, where the figure is a rate, or no failing load up to max_rate)."""
    below = sum(1 for o in found if o.censored)
    above = sum(1 for o in found if o.value is not None and (o.at_least or (lower_bounds and o.tester_bound)))
    return below, above


def bounded_verdict(found: str, a: tuple[int, int], b: tuple[int, int]) -> tuple[str, str]:
    """The verdict the interval gives, unless repetitions it could not see as they are could undo it: 'lower' when
    B's may lie above their figures or A's below theirs, 'higher' the other way round. Then 'undecided', with why.
    The other direction stands: B above A's figures is above A's left-out repetitions too (a, b: _undoers)."""
    (a_below, a_above), (b_below, b_above) = a, b
    higher, lower = ("B", b_above), ("A", a_below)
    if found == "higher":
        higher, lower = ("A", a_above), ("B", b_below)
    elif found != "lower":
        return found, ""
    undo = ([f"{higher[0]}'s {higher[1]} lower bound(s) may be higher"] if higher[1] else []) + (
        [f"{lower[0]}'s {lower[1]} left out below min_rate lie below every figure"] if lower[1] else [])
    return ("undecided", f"verdict {found} withheld: {' and '.join(undo)}") if undo else (found, "")


def _side_notes(label: str, found, lower_bounds: bool) -> list[str]:
    """Missing, censored and tester-bound repetitions of one side; lower_bounds: tester-bound ones are lower bounds
    of the figure (a rate: held_down_by_tester)."""
    notes = []
    censored = sum(1 for o in found if o.censored)
    missing = sum(1 for o in found if o.missing and not o.censored)
    bound = sum(1 for o in found if o.tester_bound)
    if censored:
        notes.append(f"{label}: {censored} below min_rate left out")
    if missing:
        notes.append(f"{label}: {missing} without a figure left out")
    if bound:
        notes.append(f"{label}: {bound} tester-bound" + (" (lower bounds)" if lower_bounds else ""))
    if capped := sum(1 for o in found if o.at_least):  # a shift against a figure that is only a bound means little
        notes.append(f"{label}: {capped} with no failing load up to max_rate (lower bounds)")
    return notes


def resolve(campaign: str | Path, results: str | Path = RESULTS_ROOT) -> Path:
    """A campaign directory, or the latest campaign of an experiment of that name under results/."""
    path = Path(campaign)
    if (path / "campaign.json").is_file():
        return path
    found = sorted((Path(results) / str(campaign)).glob("*/campaign.json"), key=lambda p: p.stat().st_mtime)
    if found:
        return found[-1].parent
    raise CompareError(f"{campaign}: neither a campaign directory (with campaign.json) nor an experiment with a "
                       f"campaign under {results}")


def compare_campaigns(a: str | Path, b: str | Path, figures: list[str] | None = None,
                      confidence: float = SHIFT_CONFIDENCE) -> pd.DataFrame:
    """B against A per matching sweep point and headline figure (module docstring); one row each."""
    runs_a, runs_b = analysis.load_campaigns(a), analysis.load_campaigns(b)
    for label, path, runs in (("A", a, runs_a), ("B", b, runs_b)):
        if runs.empty:
            raise CompareError(f"campaign {label} {path}: no finished repetition")
    sweep_a, sweep_b = analysis.sweep_columns(runs_a), analysis.sweep_columns(runs_b)
    if set(sweep_a) != set(sweep_b):
        raise CompareError(f"campaign A sweeps {', '.join(sweep_a) or 'nothing'}, B sweeps "
                           f"{', '.join(sweep_b) or 'nothing'}: compare needs the same sweep variables")
    common = [f for f in analysis.figure_columns(runs_a) if f in analysis.figure_columns(runs_b)]
    if figures:
        unknown = [f for f in figures if f not in common]
        if unknown:
            raise CompareError(f"figure {unknown[0]!r} not measured by both campaigns; have {', '.join(common)}")
        common = list(figures)
    if not common:
        raise CompareError("the campaigns have no headline figure in common")
    groups_a = dict(_groups(runs_a, sweep_a))
    groups_b = dict(_groups(runs_b, sweep_b))
    for key in groups_a.keys() & groups_b.keys():
        if (differs := analysis.measured_otherwise(groups_a[key], groups_b[key], analysis.CONDITIONS)) is not None:
            point = ", ".join(f"{k}={v}" for k, v in zip(sweep_a, key, strict=True)) or "the point"
            raise CompareError(f"{point}: A and B measured differently ({differs}): compare needs the same "
                               "procedure, parameters and traffic")
    keys = [*groups_a, *[k for k in groups_b if k not in groups_a]]
    rows = []
    for key in sorted(keys, key=lambda k: tuple(map(str, k))):
        for figure in common:
            rows.append({**dict(zip(sweep_a, key, strict=True)), "figure": figure,
                         **_compare_point(groups_a.get(key), groups_b.get(key), figure, confidence)})
    return pd.DataFrame(rows)


#: What measured a point, said beside its verdict when A and B differ in it: the tester (its ceiling, the generator).
TESTER = {"provenance.tester_ceiling.ceiling_fps": "tester ceiling (fps)",
          "provenance.generator.generator": "generator"}


def _tester_notes(a: pd.DataFrame | None, b: pd.DataFrame | None) -> list[str]:
    """A and B measured by other testers: a figure near one tester's ceiling may be that tester's, not the DUT's."""
    if a is None or b is None:
        return []
    values = analysis.values_of
    return [f"{label}: {' / '.join(sorted(values(a, column)))} in A, {' / '.join(sorted(values(b, column)))} in B"
            for column, label in TESTER.items() if column in a and column in b and analysis.differ(a, b, column)]


def _groups(runs: pd.DataFrame, sweep: list[str]):
    if not sweep:
        yield (), runs
        return
    for key, group in runs.groupby(sweep, dropna=False, sort=False):
        yield (key if isinstance(key, tuple) else (key,)), group


def _compare_point(a: pd.DataFrame | None, b: pd.DataFrame | None, figure: str, confidence: float) -> dict:
    row = {}
    found = {}
    for label, runs in (("a", a), ("b", b)):
        found[label] = analysis.observations(runs, figure) if runs is not None and figure in runs else []
        stats = summarize(found[label]) if found[label] else {"count": 0, "median": math.nan}
        row[f"{label}_count"] = stats["count"]
        row[f"{label}_median"] = stats["median"]
    a_median, b_median = numeric(row["a_median"]), numeric(row["b_median"])
    # A median among lost or late frames (+inf) is no number to subtract or divide by: no difference of medians.
    infinite = [label for label, median in (("A", a_median), ("B", b_median)) if math.isinf(median)]
    if infinite:
        a_median = b_median = math.nan
    row["difference"] = b_median - a_median
    row["difference_percent"] = row["difference"] / a_median * 100 if a_median else math.nan
    values = {label: [o.value for o in found[label] if o.value is not None] for label in found}
    interval = shift_interval(values["a"], values["b"], confidence)
    row.update(interval)
    for bound in ("shift", "ci_low", "ci_high"):
        row[f"{bound}_percent"] = interval[bound] / a_median * 100 if a_median else math.nan
    rate = held_down_by_tester(figure)
    withheld = ""
    if a is None or b is None:
        row["verdict"] = "only in B" if a is None else "only in A"
    else:
        row["verdict"], withheld = bounded_verdict(verdict(interval["ci_low"], interval["ci_high"]),
                                                   _undoers(found["a"], rate), _undoers(found["b"], rate))
    notes = _side_notes("A", found["a"], rate) + _side_notes("B", found["b"], rate) + _tester_notes(a, b)
    notes += [withheld] if withheld else []
    if is_censored(row["a_median"]) or is_censored(row["b_median"]):
        notes.append("a median below min_rate: no difference of medians")
    notes += [f"{label}'s median among lost or late frames: no difference of medians" for label in infinite]
    row["notes"] = "; ".join(notes)
    return row


COLUMNS_SHOWN = ("a_median", "b_median", "difference_percent", "shift", "ci_low", "ci_high", "verdict")


def text_lines(table: pd.DataFrame, a: Path, b: Path) -> list[str]:
    """The comparison as a text table (what `trexlab compare` prints)."""
    sweep = [c for c in table.columns if c not in _ROW_FIELDS]
    lines = [f"A: {a}", f"B: {b}", f"B against A: {METHOD}, {SHIFT_CONFIDENCE:.0%} confidence", ""]
    header = (f"{'point':24} {'figure':18} {'A median':>14} {'B median':>14} {'diff %':>8} {'shift':>12} "
              f"{'interval':>27} {'conf.':>6}  verdict")
    lines += [header, "-" * len(header)]
    for _, row in table.iterrows():
        point = ", ".join(f"{k}={row[k]}" for k in sweep) or "-"
        spec = figure_spec(row["figure"])  # a count whole, as the report writes it
        interval = ("-" if math.isnan(row["ci_low"])
                    else f"[{_cell(row['ci_low'], spec)}, {_cell(row['ci_high'], spec)}]")
        conf = "-" if math.isnan(row["confidence"]) else f"{row['confidence'] * 100:.1f}%"
        lines.append(f"{point:24} {row['figure']:18} {_cell(row['a_median'], spec):>14} "
                     f"{_cell(row['b_median'], spec):>14} {_cell(row['difference_percent'], '+.2f'):>8} "
                     f"{_cell(row['shift'], spec):>12} {interval:>27} "
                     f"{conf:>6}  {row['verdict']}")
        if row["notes"]:
            lines.append(f"{'':24} note: {row['notes']}")
    return lines


_ROW_FIELDS = {"figure", "a_count", "a_median", "b_count", "b_median", "difference", "difference_percent", "shift",
               "ci_low", "ci_high", "confidence", "shift_percent", "ci_low_percent", "ci_high_percent", "verdict",
               "notes"}


def as_json(table: pd.DataFrame, a: Path, b: Path) -> dict:
    """The comparison for --json: both campaigns, the method, one object per point and figure (NaN: null)."""
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
             for k, v in row.items()} for row in table.to_dict(orient="records")]
    return {"a": str(a), "b": str(b), "method": METHOD, "confidence": SHIFT_CONFIDENCE, "rows": rows}


def difference_plot(table: pd.DataFrame, figure: str, ax=None):
    """Per sweep point: B's shift against A in % of A's median, with its confidence interval as error bars
    and the verdict beside it; 0 = no change."""""
    import matplotlib.pyplot as plt  # inline in a notebook kernel, Agg without a display

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    part = table[(table["figure"] == figure) & table["shift_percent"].notna()].reset_index(drop=True)
    sweep = [c for c in table.columns if c not in _ROW_FIELDS]
    labels = [", ".join(str(row[k]) for k in sweep) or "-" for _, row in part.iterrows()]
    colours = {"lower": "#C44E52", "higher": "#55A868"}
    for i, row in part.iterrows():
        colour = colours.get(row["verdict"], "#4C72B0")
        # An unknown bound (NaN), or one among lost frames (inf), draws no error bar (the table shows it).
        low = row["shift_percent"] - row["ci_low_percent"] if math.isfinite(row["ci_low_percent"]) else 0
        high = row["ci_high_percent"] - row["shift_percent"] if math.isfinite(row["ci_high_percent"]) else 0
        ax.errorbar([i], [row["shift_percent"]], yerr=[[low], [high]], fmt="o", capsize=5, color=colour)
        ax.annotate(row["verdict"], (i, row["shift_percent"]), textcoords="offset points", xytext=(8, 0),
                    fontsize=8, color=colour, va="center")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(", ".join(sweep) or "point")
    ax.set_ylabel("B − A (% of A's median)")
    ax.grid(axis="y", alpha=0.3)
    return ax


def styled(table: pd.DataFrame):
    """The comparison as the report shows it: medians in each figure's display unit, the shift and its
    interval in % of A's median, the verdict coloured (lower red, higher green)."""
    sweep = [c for c in table.columns if c not in _ROW_FIELDS]
    rows = []
    for _, row in table.iterrows():
        scale = analysis.figure_scale(row["figure"])
        digits = analysis.figure_format(row["figure"])  # as every table of the campaign report writes it
        interval = ("-" if row["ci_low_percent"] != row["ci_low_percent"]
                    else f"[{row['ci_low_percent']:+.2f}, {row['ci_high_percent']:+.2f}]")
        rows.append({**{k: row[k] for k in sweep}, "figure": analysis.figure_title(row["figure"]),
                     "A median": analysis.shown(row["a_median"], digits, scale),
                     "B median": analysis.shown(row["b_median"], digits, scale),
                     "repetitions A / B": f"{row['a_count']} / {row['b_count']}",
                     "B − A (% of A)": analysis.shown(row["difference_percent"], "{:+.2f}"),
                     "shift (%)": analysis.shown(row["shift_percent"], "{:+.2f}"),
                     f"{SHIFT_CONFIDENCE:.0%} interval (%)": interval,
                     "confidence": analysis.shown(row["confidence"], "{:.1%}"),
                     "verdict": row["verdict"], "notes": row["notes"]})
    colours = {"lower": "#C44E52", "higher": "#55A868"}
    view = pd.DataFrame(rows)
    return analysis.report_table(view).hide(axis="index").apply(
        lambda column: [f"color: {colours[v]}; font-weight: bold" if v in colours else "" for v in column],
        subset=["verdict"])
