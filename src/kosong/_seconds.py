"""The one check of a duration kosong is configured with (private)."""

from __future__ import annotations

import math

__all__ = ["optional_seconds", "positive_seconds"]


def positive_seconds(seconds: float, what: str, *, zero: bool = False) -> float:
    """`seconds`, if it is a positive (or, with `zero`, a zero), finite number.

    Raises:
        ValueError: it is not, naming `what`.
    """
    # NaN compares false with everything: `seconds <= 0` alone would let it through.
    if not (math.isfinite(seconds) and (seconds > 0 or (zero and seconds == 0))):
        kind = "non-negative" if zero else "positive"
        raise ValueError(f"{what} must be a {kind} number of seconds, got {seconds!r}")
    return seconds


def optional_seconds(seconds: float | None, what: str) -> float | None:
    """`positive_seconds`, where None (no limit) is allowed too."""
    return None if seconds is None else positive_seconds(seconds, f"{what} (or None)")
