"""Parameter validation shared by trial specs, procedures, the CLI and experiment specs.

Every check raises :class:`InvalidParameter` whose message is one line naming
the parameter, the value given and what is allowed, so that a user sees exactly
what to fix before any traffic is sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: The largest TCP or UDP port number (the headers' port fields are 16 bits).
MAX_PORT = 2**16 - 1
#: Values in one list parameter (frame sizes, DSCP values, MLRsearch goals, ...): each is a search or a test of
#: its own, so a long list is a sweep that SWEEP_POINTS_MAX does not see (3000 self-test frame sizes kept the dry
#: run busy for minutes).
LIST_ITEMS_MAX = 64


class InvalidParameter(ValueError):
    """A parameter is outside its allowed range; str(exc) is a one-line message."""

    def __init__(self, name: str, value: object, allowed: str):
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={value!r}: allowed {allowed}")


def check_range(name: str, value: float, low: float | None = None, high: float | None = None,
                *, low_open: bool = False, integer: bool = False) -> None:
    """low <= value <= high (low < value with low_open); None = unbounded."""
    lo = "" if low is None else (f"> {low}" if low_open else f">= {low}")
    hi = "" if high is None else f"<= {high}"
    allowed = " and ".join(x for x in (lo, hi) if x) or "a number"
    if integer:
        allowed = f"an integer {allowed}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidParameter(name, value, allowed)
    if integer and int(value) != value:
        raise InvalidParameter(name, value, allowed)
    if not math.isfinite(value):
        raise InvalidParameter(name, value, allowed)
    if low is not None and (value <= low if low_open else value < low):
        raise InvalidParameter(name, value, allowed)
    if high is not None and value > high:
        raise InvalidParameter(name, value, allowed)


def check_choice(name: str, value: object, choices: Iterable[object]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise InvalidParameter(name, value, ", ".join(str(c) for c in choices))
