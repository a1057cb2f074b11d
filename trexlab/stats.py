"""Statistics of repeated measurements, as the seed papers report them.

Lencse et al. report the median (not the average: one outlier must not move
the figure), minimum and maximum, the 1st and 99th percentiles when there are
enough repetitions, and the dispersion = (max - min) / median in percent, which
says at a glance whether repeated results agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def dispersion_percent(median: float, minimum: float, maximum: float) -> float:
    """(max - min) / median * 100; NaN when the median is 0."""
    return (maximum - minimum) / median * 100 if median else math.nan


def summarize(values: Iterable[float | None]) -> dict[str, float]:
    """Median, min, max, 1st/99th percentile, dispersion and count of the non-missing values.

    A missing value (None/NaN, e.g. a throughput below the minimum load) is
    counted in ``missing`` and left out of the statistics, never read as 0.
    """
    raw = list(values)
    data = [float(v) for v in raw if v is not None and not math.isnan(float(v))]
    missing = len(raw) - len(data)
    if not data:
        return {"count": 0, "missing": missing, "median": math.nan, "min": math.nan, "max": math.nan,
                "p1": math.nan, "p99": math.nan, "dispersion_percent": math.nan}
    array = np.asarray(data)
    median = float(np.median(array))
    low, high = float(array.min()), float(array.max())
    return {
        "count": len(data),
        "missing": missing,
        "median": median,
        "min": low,
        "max": high,
        "p1": float(np.percentile(array, 1)),
        "p99": float(np.percentile(array, 99)),
        "dispersion_percent": dispersion_percent(median, low, high),
    }
