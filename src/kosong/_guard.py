"""Calling code that kosong is handed but does not own, its failure as a value (private).

Hooks, callbacks, plug-in policies, cache backends, the modules and factories `kosong serve`
loads: what they raise must not become kosong's failure. Each caller gets either the value
or a `Failed` holding the exception, and says what the failure means where it happens (deny
the call, run it uncached, log and go on...). This is the one place that catches whatever
such code raises; cancellation (`asyncio.CancelledError`) and `KeyboardInterrupt` are not
failures and pass through.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

__all__ = ["Failed", "await_guarded", "call_guarded"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Failed:
    """What the guarded code raised instead of giving a value."""

    error: Exception


def call_guarded(func: Callable[..., T], *args: Any) -> T | Failed:
    """`func(*args)`, or `Failed` with what it raised."""
    try:
        return func(*args)
    except Exception as e:  # boundary: foreign code's failure becomes a Failed value
        return Failed(e)


async def await_guarded(func: Callable[..., T | Awaitable[T]], *args: Any) -> T | Failed:
    """`func(*args)`, awaited when it gives an awaitable (a sync or async hook), or `Failed`."""
    try:
        value = func(*args)
        if inspect.isawaitable(value):
            return await cast(Awaitable[T], value)
        return cast(T, value)
    except Exception as e:  # boundary: foreign code's failure becomes a Failed value
        return Failed(e)
