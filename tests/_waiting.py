"""`until`: the one way the tests wait for something, a condition with a deadline.

No test sleeps a fixed time and hopes: a busy machine makes every "long enough" too short.
A test names what it waits for; `until` checks it again and again (a short pause between
checks, so it never spins) until it holds, and fails saying what never happened once the
deadline, generous for a loaded machine, has passed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def until(
    check: Callable[[], T | Awaitable[T | None] | None],
    what: str,
    *,
    within: float = 60.0,
    every: float = 0.02,
) -> T:
    """Wait until `check()` (sync or async) gives a true value, and return it.

    Raises:
        AssertionError: it did not within `within` seconds (the message names `what`).
    """
    deadline = time.monotonic() + within
    while True:
        found = check()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found  # pyright: ignore[reportReturnType]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:g} seconds")
        await asyncio.sleep(every)
