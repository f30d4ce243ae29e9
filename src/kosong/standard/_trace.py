"""Trace ids: `trace_YYYYMMDD_<12 hex>`, one per chain of calls, carried in a contextvar.

A call takes its trace id from the caller when given (the tool call's `extras["trace_id"]`, or
an enclosing `trace_scope`), else from the call it is nested in, else a new one. Inside a call
(and in anything the tool starts from it) `current_trace_id()` returns it, so nested tool calls
share the trace of the call that made them.
"""

from __future__ import annotations

import contextvars
import math
import os
import re
import time
from collections import deque
from collections.abc import Generator
from contextlib import contextmanager

__all__ = [
    "TRACE_ID_PATTERN",
    "current_trace_id",
    "new_event_id",
    "new_trace_id",
    "trace_scope",
    "use_trace_id",
]

TRACE_ID_PATTERN = re.compile(r"\Atrace_[0-9]{8}_[0-9a-f]{12}\Z")
"""The form of the ids `new_trace_id` makes. Ids given by a caller are used as they are."""

_TRACE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kosong_standard_trace_id", default=None
)


# Formatting dates is slow next to the rest of a call (time.strftime takes microseconds), so
# the current day's text is kept and reused until it changes (one tuple, replaced whole: safe
# across threads). The day is kept as the epoch seconds it starts and ends at: comparing with
# them costs a fraction of working out the day number (a float floor division) at each id.
# (start, end, "trace_<date>_", "evt_<date>_"); none to begin with.
_day: tuple[float, float, str, str] = (0.0, -1.0, "", "")


def _today() -> tuple[float, float, str, str]:
    global _day
    now = time.time()
    today = _day
    if not today[0] <= now < today[1]:
        date = time.strftime("%Y%m%d", time.gmtime(now))
        start = float(math.floor(now / 86400) * 86400)
        today = _day = (start, start + 86400, f"trace_{date}_", f"evt_{date}_")
    return today


# Random parts of ids (12 hex digits: 6 bytes from os.urandom), drawn 256 at a time: one
# system call per id cost more than the rest of making it. A deque, since its popleft() is
# atomic across threads; emptied in a forked child, which must not reuse its parent's.
_RANDOM_HEX: deque[str] = deque()
_DRAWN_AT_ONCE = 256


def _random_hex() -> str:
    try:
        return _RANDOM_HEX.popleft()
    except IndexError:
        parts = _TWELVE.findall(os.urandom(6 * _DRAWN_AT_ONCE).hex())
        _RANDOM_HEX.extend(parts[1:])
        return parts[0]


_TWELVE = re.compile("[0-9a-f]{12}")  # cuts the drawn hex in ids' parts, faster than slicing


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_RANDOM_HEX.clear)


def new_trace_id() -> str:
    """A new trace id, `trace_<UTC date>_<12 random hex digits>`."""
    return _today()[2] + _random_hex()


def new_event_id() -> str:
    """A new event id, `evt_<UTC date>_<12 random hex digits>`."""
    return _today()[3] + _random_hex()


def current_trace_id() -> str | None:
    """The trace id of the call being handled (or of the enclosing `trace_scope`), if any."""
    return _TRACE_ID.get()


def use_trace_id(trace_id: str) -> None:
    """Make `trace_id` current in this task (the pipeline does it in each call's own task).

    Unlike `trace_scope` it is not undone: use it where the context ends with the task.
    """
    _TRACE_ID.set(trace_id)


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
