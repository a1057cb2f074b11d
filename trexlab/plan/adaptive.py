"""Spending repetitions and trials where the figures are not yet tight: adaptive repetitions and warm start.

**Adaptive repetitions.** ``repetitions: {min: 5, max: 50, until: {median_ci_percent: 1}}`` runs at least
``min`` and at most ``max`` repetitions of a point, and stops as soon as, for every headline figure (or those
listed in ``until.figures``), the distribution-free confidence interval of the median at the level
MEDIAN_CI_CONFIDENCE (spec.schema: part of what ``median_ci_percent`` means) is narrower than
``median_ci_percent`` of the median. The interval is that of order statistics: the number of repetitions
below the true median is binomial (n, 1/2) whatever the distribution, so the values of ranks l and
n + 1 - l bracket the median with probability 1 - 2 P(B <= l - 1); l is the largest rank keeping that at
least MEDIAN_CI_CONFIDENCE. Too few repetitions have no such interval: the widest (ranks 1 and n) misses
with probability 2 / 2^n, so a point never stops before the least n with 2 / 2^n <= 1 - MEDIAN_CI_CONFIDENCE
(below it median_ci_ranks gives None).
A figure with a missing or censored repetition (below the minimum load) never counts as narrow. The rule,
the count reached and each interval go into summary.json and the summary table. An interval's confidence is
that of a fixed count; a point that stopped on the widths says so (STOPPED_ON_WIDTH): stopping at the first
narrow interval can leave it covering the median less often.

**Warm start.** A throughput search (RFC 2544 binary search) declared with ``warm_start: true`` starts
repetition k > 1 from bounds near the median of the repetitions before it instead of from the whole range;
every bound is still a full-duration trial (throughput.run verifies both before bisecting, and widens a bound
that does not hold). The bounds each repetition started from are in its result.json (params.start_bounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trexlab.params import InvalidParameter
from trexlab.procedures import throughput
from trexlab.results.stats import figure_spec, median_ranks, nearest_rank
from trexlab.spec.schema import DEFAULT_REPETITIONS, MEDIAN_CI_CONFIDENCE, REPETITIONS_MAX


def binomial_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2 ** n


def median_ci_ranks(n: int, confidence: float = MEDIAN_CI_CONFIDENCE) -> tuple[int, int] | None:
    """The 1-based ranks (l, n + 1 - l) of the order-statistics interval of the median, or None when n values
    are too few for that confidence."""
    tail = (1 - confidence) / 2
    best = None
    for low in range(1, (n + 1) // 2 + 1):
        if binomial_cdf(low - 1, n) <= tail:
            best = low
        else:
            break
    return None if best is None else (best, n + 1 - best)


def median_ci(values: list[float], confidence: float = MEDIAN_CI_CONFIDENCE) -> dict | None:
    """{low, high, ranks, confidence (exact coverage)} of the median of values, or None (too few)."""
    ranks = median_ci_ranks(len(values), confidence)
    if ranks is None:
        return None
    ordered = sorted(values)
    low, high = ranks
    return {"low": ordered[low - 1], "high": ordered[high - 1], "ranks": [low, high],
            "confidence": 1 - 2 * binomial_cdf(low - 1, len(values))}


@dataclass(frozen=True)
class RepetitionRule:
    minimum: int
    maximum: int
    median_ci_percent: float | None = None  # None: a fixed count (minimum == maximum)
    figures: tuple[str, ...] = ()  # empty: every headline figure

    @property
    def adaptive(self) -> bool:
        return self.median_ci_percent is not None

    def describe(self) -> str:
        if not self.adaptive:
            return f"{self.maximum} repetition(s)"
        which = f" of {', '.join(self.figures)}" if self.figures else ""
        return (f"{self.minimum} to {self.maximum} repetitions, until the {MEDIAN_CI_CONFIDENCE:.0%} CI of the "
                f"median{which} is narrower than {self.median_ci_percent:g} % of it")

    def to_dict(self) -> dict:
        return {"min": self.minimum, "max": self.maximum, "median_ci_percent": self.median_ci_percent,
                "figures": list(self.figures), "confidence": MEDIAN_CI_CONFIDENCE}

    def intervals(self, results: list[dict]) -> dict[str, dict]:
        """Per figure the rule looks at: its interval (or why there is none) and whether it is narrow enough."""
        names = list(self.figures) or list(dict.fromkeys(n for r in results for n in r.get("headline", {})))
        found = {}
        for name in names:
            values = [(r.get("headline") or {}).get(name) for r in results]
            numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
            entry: dict = {"narrow": False}
            if len(numbers) < len(values):
                entry["why"] = f"{len(values) - len(numbers)} repetition(s) without a figure (missing or censored)"
            elif (ci := median_ci(numbers)) is None:
                entry["why"] = f"{len(numbers)} repetitions: too few for a {MEDIAN_CI_CONFIDENCE:.0%} interval"
            else:
                median = _median(numbers)
                width = ci["high"] - ci["low"]
                percent = 0.0 if width == 0 else (math.inf if median == 0 else width / abs(median) * 100)
                entry = {**ci, "median": median, "width_percent": percent,
                         "narrow": self.median_ci_percent is not None and percent < self.median_ci_percent}
            found[name] = entry
        return found

    def done(self, results: list[dict]) -> bool:
        """Whether the repetitions so far are enough."""
        if len(results) >= self.maximum:
            return True
        if not self.adaptive or len(results) < self.minimum:
            return False
        intervals = self.intervals(results)
        return bool(intervals) and all(i["narrow"] for i in intervals.values())


def _median(values: list[float]) -> float:
    """The project's one median (trexlab.results.stats.median_ranks) of values that are all figures."""
    ordered = sorted(values)
    low, high = median_ranks(len(ordered))
    return (ordered[low - 1] + ordered[high - 1]) / 2


def repetition_rule(spec: dict) -> RepetitionRule:
    """An experiment's repetitions (a count, or {min, max, until}) as a rule; InvalidParameter names a bad key."""
    value = spec.get("repetitions", DEFAULT_REPETITIONS)
    if isinstance(value, int):
        return RepetitionRule(value, value)
    return rule_from_mapping(value)


def _count(value: dict, key: str) -> int:
    number = value.get(key)
    if isinstance(number, float) and number.is_integer():  # 5.0 is a count to JSON Schema, so to the spec's too
        number = int(number)
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= REPETITIONS_MAX:
        raise InvalidParameter(f"repetitions.{key}", number, f"an integer 1..{REPETITIONS_MAX}")
    return number


#: The keys of an adaptive rule and of its until: what rule_from_mapping takes, and rule_schema declares.
RULE_KEYS = ("min", "max", "until")
UNTIL_KEYS = ("median_ci_percent", "figures")


def rule_schema() -> dict:
    """The JSON Schema of an adaptive rule (trexlab schema's, for editors): the shape rule_from_mapping takes."""
    count = {"type": "integer", "minimum": 1, "maximum": REPETITIONS_MAX}
    return {"type": "object", "additionalProperties": False, "required": list(RULE_KEYS), "properties": {
        "min": {**count, "description": "repetitions of a point at least"},
        "max": {**count, "description": "repetitions of a point at most (not below min)"},
        "until": {"type": "object", "additionalProperties": False, "required": [UNTIL_KEYS[0]], "properties": {
            "median_ci_percent": {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "description":
                                  f"%: a point stops once the {MEDIAN_CI_CONFIDENCE * 100:g} % CI of each figure's "
                                  "median is narrower than this share of it"},
            # null, as absent or [], is every figure: rule_from_mapping reads it so.
            "figures": {"type": ["array", "null"], "items": {"type": "string"}, "description":
                        "the headline figures the rule looks at, ones the procedure reports "
                        "(absent, null or empty: every one)"}}}}}


def rule_from_mapping(value: dict) -> RepetitionRule:
    allowed = RULE_KEYS
    if not isinstance(value, dict) or set(value) - set(allowed):
        extra = sorted(set(value) - set(allowed)) if isinstance(value, dict) else [type(value).__name__]
        raise InvalidParameter("repetitions", extra[0], f"a count, or a mapping of {', '.join(allowed)}")
    minimum, maximum = _count(value, "min"), _count(value, "max")
    if minimum > maximum:
        raise InvalidParameter("repetitions.min", minimum, f"<= repetitions.max ({maximum})")
    until = value.get("until")
    if not isinstance(until, dict) or set(until) - set(UNTIL_KEYS) or UNTIL_KEYS[0] not in until:
        raise InvalidParameter("repetitions.until", until, "{median_ci_percent: <percent>[, figures: [...]]}")
    percent = until["median_ci_percent"]
    if not isinstance(percent, int | float) or isinstance(percent, bool) or not 0 < percent <= 100:
        raise InvalidParameter("repetitions.until.median_ci_percent", percent, "a percentage > 0 and <= 100")
    figures = until.get("figures") or []
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures):
        raise InvalidParameter("repetitions.until.figures", figures, "a list of headline figure names")
    return RepetitionRule(minimum, maximum, float(percent), tuple(figures))


#: How an adaptive rule that stopped on its intervals' widths records it (repetition writes it, rule_text reads it).
STOPPED_NARROW = "every interval narrow enough"
#: Said beside the intervals a point stopped on: their confidence is a fixed count's, and this count was not fixed.
STOPPED_ON_WIDTH = ("each interval's confidence is that of a fixed count; the rule stopped at the first count whose "
                    "intervals were narrow, which can leave the interval it stopped on covering the median less often")


def rule_text(rule: dict | None) -> str | None:
    """What a summary's repetition_rule says, in one line (the method line carries it); None: a fixed count."""
    if not rule or rule.get("median_ci_percent") is None:
        return None
    parts = []
    for name, i in (rule.get("intervals") or {}).items():
        if "low" in i:
            spec = figure_spec(name)  # a count whole: 6 digits rounded 14,880,000..14,881,500 fps to one figure
            parts.append(f"{name} median {i['median']:{spec}}, CI {i['low']:{spec}}..{i['high']:{spec}} (ranks "
                         f"{i['ranks'][0]}-{i['ranks'][1]}, {i['confidence']:.1%}) = {i['width_percent']:.3g} %")
        else:
            parts.append(f"{name}: no interval ({i['why']})")
    # Stopped on the widths: the count depends on them (optional stopping), so a fixed count's coverage is not exact.
    caveat = f" ({STOPPED_ON_WIDTH})" if rule.get("stopped") == STOPPED_NARROW else ""
    return (f"adaptive repetitions {rule['min']}..{rule['max']} until the {rule['confidence']:.0%} CI of the median "
            f"is narrower than {rule['median_ci_percent']:g} % of it: {rule['reached']} run, {rule['stopped']}: "
            + ", ".join(parts) + caveat)


# -- warm start -------------------------------------------------------------------------------------------------

def warm_bounds(previous: list[dict], params) -> tuple[float, float] | None:
    """The bounds a warm-started throughput search starts from: the median of the earlier repetitions' throughput,
    plus and minus the larger of one resolution step and half their interquartile range (so that a noisy DUT
    widens them); None when no earlier repetition found a throughput."""
    values = sorted(float(v) for r in previous
                    if isinstance(v := (r.get("headline") or {}).get(throughput.HEADLINE), int | float))
    if not values:
        return None
    median = _median(values)
    step = params.resolution if params.resolution is not None else median * params.resolution_percent / 100
    # The quartiles as every percentile of repetitions is ranked (stats.nearest_rank), never by another rule.
    quartiles = values[nearest_rank(25, len(values)) - 1], values[nearest_rank(75, len(values)) - 1]
    half = max(step, (quartiles[1] - quartiles[0]) / 2)
    return (median - half, median + half)
