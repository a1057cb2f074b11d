"""Statistics of repeated measurements, as the seed papers report them.

Lencse et al. report the median (not the average: one outlier must not move
the figure), minimum and maximum, the 1st and 99th percentiles when there are
enough repetitions, and the dispersion = (max - min) / median in percent, which
says at a glance whether repeated results agree.

One definition for the whole project (docs/architecture.md, "Statistics"):

* **percentile** q of n values: nearest rank, the value of rank ceil(q / 100 * n)
  (at least 1) in ascending order, never an interpolation, so a percentile is
  always a value that some repetition produced (the 1st percentile of 20
  repetitions is their minimum); trexlab.trial.Latency.percentile ranks latency
  samples the same way;
* **median**: the middle value of an odd count; of an even count the mean of
  the two middle values, as siitperf reports it.

**Censored repetitions.** A repetition whose search ended below its minimum
load (``below``) has no figure, but it is not unknown: it is an observation
known to lie below that load, below every repetition that has a figure. It
takes its rank at the bottom of the order, so it pulls the median and the
percentiles down as it should; an order statistic that falls among such
repetitions is reported as the string ``"< min_rate"`` (e.g. ``"< 100"``), not
as a number, and the dispersion then as a lower bound (``"> 195.00"``). When
the two middle values of an even count are one censored and one figure x, the
median is the mean of something below min_rate and x: ``"< (min_rate + x) / 2"``.
A repetition with no figure and no such bound (a failed procedure) is left out
and counted in ``missing`` beside the censored ones, never read as 0.

**Tester-bound repetitions.** A repetition whose figure may be the tester's
limit (stretched trials, tester drops, a result near the tester's ceiling) is a
lower bound of the DUT's figure when the figure is a rate (held_down_by_tester).
Raising it can raise an order statistic only when it lies at or below it, so the
median is reported as a lower bound (``median_lower_bound``) exactly when such a
repetition does, and so are the minimum, maximum and percentiles
(``min_lower_bound``, ...: the maximum whenever any repetition is tester-bound).
A delay, loss rate or count is no lower bound: the tester's stalls, drops and own
delay raise it, if anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

#: The level of the shift's interval a verdict of trexlab compare (results.compare) rests on. Its own choice, not the
#: adaptive stop rule's (spec.schema.MEDIAN_CI_CONFIDENCE, part of what a spec means): it is chosen when campaigns
#: are compared. Here, not in results.compare, so that trexlab's argument parser states it without importing pandas.
SHIFT_CONFIDENCE = 0.95
#: What a censored statistic starts with: "< 100" reads "below 100".
BELOW = "<"
#: What a lower bound of the dispersion starts with.
ABOVE = ">"
#: The order statistics a summary gives, each with its <name>_lower_bound (summarize).
ORDER_STATISTICS = ("median", "min", "max", "p1", "p99")


@dataclass(frozen=True)
class Observation:
    """One repetition's value of one figure, with what limits it."""

    value: float | None  # the figure (its unit); None: no figure
    below: float | None = None  # no figure, but known to be below this (e.g. the search's min_rate, fps)
    tester_bound: tuple[str, ...] = ()  # why the figure may be the tester's limit (empty: it is not)
    repetition: int | None = None  # which repetition (1-based), for the reasons shown per repetition
    at_least: bool = False  # the figure is a lower bound: the search met no load the DUT failed (its max_rate)
    # Why the figure comes from an irregular MLRsearch goal result (draft-ietf-bmwg-mlrsearch-15 section 4.8.4.2:
    # a figure from one must be clearly marked so); empty: a regular one, or no such search.
    irregular: str = ""

    @property
    def censored(self) -> bool:
        return self.value is None and self.below is not None

    @property
    def missing(self) -> bool:
        return self.value is None

    def reasons(self) -> list[str]:
        """Why this repetition is missing or tester-bound, in a table's words."""
        found = ([f"below min_rate {exact(self.below)}"] if self.censored and self.below is not None
                 else ["no figure"] if self.missing else [])
        if self.at_least:
            found.append("no failing load up to max_rate (the figure is a lower bound)")
        if self.irregular:
            found.append(f"irregular goal result: {self.irregular}")
        return found + [f"tester-bound: {reason}" for reason in self.tester_bound]


def nearest_rank(q: float, n: int) -> int:
    """The 1-based rank of the q-th percentile (0..100) of n values: ceil(q / 100 * n), at least 1."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q={q}: allowed 0..100")
    return max(1, math.ceil(round(q * n / 100, 9)))  # round: 99.9 * 1000 / 100 is not exact


def median_ranks(n: int) -> tuple[int, int]:
    """The 1-based ranks whose mean is the median of n values (the same rank twice for odd n)."""
    return ((n + 1) // 2, n // 2 + 1)


def below(bound: float) -> str:
    return f"{BELOW} {exact(bound)}"


def exact(value: float) -> str:
    """A bound as text, every digit it has: 1234564 (":g" wrote '1.23456e+06', i.e. below 1,234,560, a bound no
    search found), 8057757.5, 100. No thousands separators: a censored statistic's bound is read back as a number
    (_bound_of, the plots)."""
    return format(value, ".15g")


def dispersion_percent(median: float, minimum: float, maximum: float) -> float:
    """(max - min) / median * 100; NaN when the median is 0."""
    return (maximum - minimum) / median * 100 if median else math.nan


def _observation(value) -> Observation:
    if isinstance(value, Observation):
        return value
    if value is None or math.isnan(float(value)):
        return Observation(None)
    return Observation(float(value))


#: Figures whose unit is a rate (frames/s, bit/s), by their name's suffix (trexlab's headline names).
RATE_SUFFIXES = ("_fps", "_bps")


#: Figures that count whole things (frames per second, bits per second, bytes, tags): written without decimals in
#: every table, the report's (results.analysis.figure_format) and the CLI's (figure_spec): a "3.000 tags lost" or
#: "1,234,567.000 bit/s" suggests a precision no count has, and 6 significant digits round 14,880,952 fps away.
WHOLE_FIGURES = ("_fps", "_bps", "_bytes", "_lost_or_late")


#: How a count (WHOLE_FIGURES) is written in text: whole, with thousands separators (14,880,952).
WHOLE = ",.0f"


def figure_spec(figure: str) -> str:
    """How a text table (the CLI's summary, trexlab compare's) writes a figure's statistic in the figure's own unit:
    a count whole with thousands separators, as the report writes it; anything else to 6 significant digits."""
    return WHOLE if figure.endswith(WHOLE_FIGURES) else ".6g"


def held_down_by_tester(figure: str) -> bool:
    """Whether a tester's limit can only lower this figure: a rate (throughput, NDR, a TCP rate), whose tester-bound
    repetitions are lower bounds of the DUT's. A delay, a loss rate or a count is not held down by a tester that
    stalls, drops frames or adds its own delay (they raise it, if anything): its tester-bound repetitions are
    counted and named (why), and no median of it is made a lower bound."""
    return figure.endswith(RATE_SUFFIXES)


def summarize(values: Iterable[float | None | Observation], lower_bounds: bool = True) -> dict:
    """Median, min, max, 1st/99th percentile and dispersion of repetitions, with what limits them.

    ``values`` are numbers (None/NaN: no figure) or Observations; ``lower_bounds``: whether a tester-bound
    repetition is a lower bound of the figure (held_down_by_tester). Returns ``count`` (repetitions with a
    figure), ``missing`` (without: censored ones included), ``below_minimum`` (censored), ``tester_bound``
    (tester-bound repetitions), the statistics (numbers, or "< bound" strings where censored),
    ``<statistic>_lower_bound`` for each of ORDER_STATISTICS (a tester-bound repetition lies at or below it) and
    ``why`` (the reasons, with the repetitions they apply to).
    """
    observations = [_observation(v) for v in values]
    figures = sorted(o.value for o in observations if o.value is not None)
    censored = [o for o in observations if o.censored]
    bound = max((o.below for o in censored if o.below is not None), default=math.nan)
    n = len(figures) + len(censored)

    def ranked(rank: int) -> float | str:
        return below(bound) if rank <= len(censored) else figures[rank - len(censored) - 1]

    summary = {"count": len(figures), "missing": sum(1 for o in observations if o.missing),
               "below_minimum": len(censored), "tester_bound": sum(1 for o in observations if o.tester_bound)}
    if n == 0:
        return {**summary, "median": math.nan, "min": math.nan, "max": math.nan, "p1": math.nan, "p99": math.nan,
                "dispersion_percent": math.nan, **{f"{name}_lower_bound": False for name in ORDER_STATISTICS},
                "why": why(observations)}
    low_rank, high_rank = median_ranks(n)
    low_middle, high_middle = ranked(low_rank), ranked(high_rank)
    reasons = [why(observations)]
    median: float | str
    if isinstance(high_middle, str):
        median = high_middle
    elif isinstance(low_middle, str):
        median = below((bound + high_middle) / 2)
        # The bound is not min_rate itself: say where it comes from, or it reads as a measured figure.
        reasons.append(f"median {median}: mean of a repetition below min_rate {exact(bound)} and "
                       f"{exact(high_middle)}")
    else:
        median = (low_middle + high_middle) / 2
    minimum, maximum = ranked(1), ranked(n)
    dispersion: float | str
    if isinstance(maximum, str):
        dispersion = math.nan
    elif isinstance(minimum, str):
        # The true minimum is below the bound, the true median below the reported one: a lower bound.
        top = _bound_of(median)
        spread = dispersion_percent(top, bound, maximum)
        dispersion = f"{ABOVE} {spread:.2f}" if spread > 0 else math.nan
    elif math.isinf(maximum):
        # A latency or PDV figure among lost or late frames is an infinite delay (trexlab.trial.Latency): no
        # spread can be computed from it (inf, or inf / inf), and summary.json writes the NaN as null.
        dispersion = math.nan
        reasons.append("dispersion undefined: a repetition's figure lies among lost or late frames (infinite)")
    else:  # nothing censored, so the median is a figure (_bound_of returns it as it is)
        dispersion = dispersion_percent(_bound_of(median), minimum, maximum)
        if median == 0:  # summary.json writes the NaN as null: say why there is no figure
            reasons.append("dispersion undefined: median 0")
    statistics = {"median": median, "min": minimum, "max": maximum,
                  "p1": ranked(nearest_rank(1, n)), "p99": ranked(nearest_rank(99, n))}
    # The median's highest middle value is what raising a repetition can move: the median's bound is its.
    at = {**statistics, "median": high_middle}
    return {**summary, **statistics, "dispersion_percent": dispersion,
            **{f"{name}_lower_bound": lower_bounds and _lower_bound(observations, at[name])
               for name in ORDER_STATISTICS},
            "why": "; ".join(r for r in reasons if r)}


def _bound_of(value: float | str) -> float:
    return float(value.removeprefix(BELOW)) if isinstance(value, str) else value


def _lower_bound(observations: list[Observation], statistic: float | str) -> bool:
    """Whether a tester-bound repetition, or one whose search met no failing load (at_least), lies at or below an
    order statistic (ties count: raising it moves the statistic; of the median, its highest middle value)."""
    for o in observations:
        if not o.tester_bound and not o.at_least:
            continue
        if o.censored or isinstance(statistic, str) or (o.value is not None and o.value <= statistic):
            return True
    return False


def why(observations: Iterable[Observation]) -> str:
    """'below min_rate 100: rep 2, 5; tester-bound: stretched trials: rep 1-10': the reasons and their repetitions."""
    seen: dict[str, list[int | None]] = {}
    for o in observations:
        for reason in o.reasons():
            seen.setdefault(reason, []).append(o.repetition)
    return "; ".join(f"{reason}: {_repetitions(reps)}" for reason, reps in seen.items())


def _repetitions(reps: list[int | None]) -> str:
    if any(r is None for r in reps):
        return f"{len(reps)} repetition(s)"
    numbers, parts = sorted(r for r in reps if r is not None), []
    start = previous = numbers[0]
    for r in [*numbers[1:], None]:
        if r is not None and r == previous + 1:
            previous = r
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if r is not None:
            start = previous = r
    return "rep " + ", ".join(parts)


def is_censored(value) -> bool:
    """Whether a statistic is a censored string ("< 100", "> 12.50") rather than a number."""
    return isinstance(value, str)


def numeric(value) -> float:
    """A statistic as a number for plotting: NaN where it is censored."""
    return math.nan if value is None or isinstance(value, str) else float(value)
