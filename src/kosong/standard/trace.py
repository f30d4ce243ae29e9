"""Trace ids: `trace_YYYYMMDD_<12 hex>`, one per chain of calls, carried in a contextvar.

A call takes its trace id from the caller when given (the tool call's `extras["trace_id"]`, or
an enclosing `trace_scope`), else from the call it is nested in, else a new one. Inside a call
(and in anything the tool starts from it) `current_trace_id()` returns it, so nested tool calls
share the trace of the call that made them.
"""

from __future__ import annotations

import contextvars
import os
import re
import time
from collections.abc import Generator
from contextlib import contextmanager
from datetime import UTC, datetime

__all__ = [
    "TRACE_ID_PATTERN",
    "current_trace_id",
    "format_epoch",
    "format_timestamp",
    "new_event_id",
    "new_trace_id",
    "now_timestamp",
    "trace_scope",
]

TRACE_ID_PATTERN = re.compile(r"^trace_[0-9]{8}_[0-9a-f]{12}$")
"""The form of the ids `new_trace_id` makes. Ids given by a caller are used as they are."""

_TRACE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kosong_standard_trace_id", default=None
)


# Formatting dates is slow next to the rest of a call (datetime.strftime takes microseconds),
# so the current day's and second's text are kept and reused until they change.
_day: tuple[int, str] = (-1, "")
_second: tuple[int, str] = (-1, "")


def _today() -> str:
    global _day
    now = time.time()
    day = int(now // 86400)
    if _day[0] != day:
        _day = (day, time.strftime("%Y%m%d", time.gmtime(now)))
    return _day[1]


def _stamp(prefix: str) -> str:
    # 6 random bytes: 12 hex digits. os.urandom is the cheapest good source (no uuid object).
    return f"{prefix}_{_today()}_{os.urandom(6).hex()}"


def new_trace_id() -> str:
    """A new trace id, `trace_<UTC date>_<12 random hex digits>`."""
    return _stamp("trace")


def new_event_id() -> str:
    """A new event id, `evt_<UTC date>_<12 random hex digits>`."""
    return _stamp("evt")


def current_trace_id() -> str | None:
    """The trace id of the call being handled (or of the enclosing `trace_scope`), if any."""
    return _TRACE_ID.get()


@contextmanager
def trace_scope(trace_id: str | None = None) -> Generator[str]:
    """Run the enclosed calls under `trace_id` (a new id when None); yields the id.

    Raises:
        ValueError: `trace_id` is empty or longer than 128 characters.
    """
    if trace_id is None:
        trace_id = new_trace_id()
    elif not trace_id or len(trace_id) > 128:
        raise ValueError("a trace id must be 1 to 128 characters")
    token = _TRACE_ID.set(trace_id)
    try:
        yield trace_id
    finally:
        _TRACE_ID.reset(token)


def format_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with a `Z`: `2024-01-01T00:00:00Z`, with milliseconds when not zero."""
    moment = moment.astimezone(UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_epoch(seconds: float) -> str:
    """`format_timestamp` of an epoch time (`time.time()`), faster for times near each other."""
    global _second
    whole = int(seconds // 1)
    if _second[0] != whole:
        _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    millis = int((seconds - whole) * 1000)
    return f"{_second[1]}.{millis:03d}Z" if millis else f"{_second[1]}Z"


def now_timestamp() -> str:
    """The current time, as `format_timestamp` writes it."""
    return format_epoch(time.time())
