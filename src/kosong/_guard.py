"""Calling code kosong is handed but does not own, its failure as a value (private).

Hooks, callbacks, plug-in policies, cache backends, the modules `kosong serve` loads: what they
raise must not become kosong's failure. The caller gets the value or a `Failed`, and says where
it happens what a failure means (deny the call, run it uncached, log and go on...).
Cancellation and `KeyboardInterrupt` are not failures: they pass through.
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
    """`func(*args)`, awaited if it gives an awaitable (a sync or async hook), or `Failed`."""
    try:
        value = func(*args)
        # Types as strings: a subscripted generic would be made again at every call.
        return await cast("Awaitable[T]", value) if inspect.isawaitable(value) else cast("T", value)
    except Exception as e:  # boundary: foreign code's failure becomes a Failed value
        return Failed(e)
