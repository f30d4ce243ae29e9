"""Times as the standard and the server write them: ISO 8601, UTC, milliseconds (private).

Below every package: a result's envelope, its events, a cache entry and the server's own error
bodies all write times this one way.
"""

from __future__ import annotations

import time

__all__ = ["format_epoch", "now_timestamp"]

# Formatting dates is slow next to the rest of a call (time.strftime takes microseconds), so
# the current second's text is kept and reused until it changes (one tuple, replaced whole:
# safe across threads), and the text of recent milliseconds too: calls come many to a
# millisecond, and a cache hit formats both now and when its entry was stored.
_second: tuple[int, str] = (-1, "")
_STAMPS: dict[int, str] = {}
_STAMPS_KEPT = 1024


def format_epoch(seconds: float) -> str:
    """An epoch time (`time.time()`) in ISO 8601, UTC: `2024-01-01T00:00:00.127Z`.

    Milliseconds are written when not zero. Texts are remembered: the times written are near
    each other.
    """
    global _second
    whole = int(seconds)  # the floor (for times before 1970 too), cheaper than `seconds // 1`
    if whole > seconds:
        whole -= 1
    millis = int((seconds - whole) * 1000)
    key = whole * 1000 + millis
    text = _STAMPS.get(key)
    if text is None:
        second = _second
        if second[0] != whole:
            second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
        text = f"{second[1]}.{millis:03d}Z" if millis else f"{second[1]}Z"
        if len(_STAMPS) >= _STAMPS_KEPT:
            _STAMPS.clear()
        _STAMPS[key] = text
    return text


def now_timestamp() -> str:
    """The current time, as `format_epoch` writes it."""
    return format_epoch(time.time())
