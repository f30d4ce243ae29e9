"""Where kosong runs work off the event loop, and how it starts tasks (private).

Two thread pools of kosong's own, apart from the event loop's default executor (which the
application and its libraries share):

- sync tools (a plain `def __call__` or function) run on `run_sync_tool`'s pool, bounded at
  `TOOL_THREADS` threads: tools that hang hold a thread each, but not the pool others need;
- long argument strings are parsed on `run_parsing`'s small pool, so hung tools never keep a
  call's arguments from being read.

The event loop that runs the calls owns its pools: they are made on its first use (importing
kosong starts no thread) and shut down when the loop is gone, as `asyncio.run` leaves it.

`start_task` is the one way kosong starts the task of a call: on Python 3.12+ an eager task,
which runs at once up to its first real wait, so a call that never waits is finished when
`handle()` returns, with no event loop round trip.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import weakref
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

__all__ = ["PARSE_THREADS", "TOOL_THREADS", "run_parsing", "run_sync_tool", "start_task"]

T = TypeVar("T")

TOOL_THREADS = 128
"""Most sync tools running at once; more wait for a free thread."""
PARSE_THREADS = 2
"""Threads parsing long argument strings (work that holds the GIL: more would not help)."""

_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ThreadPoolExecutor]] = (
    weakref.WeakKeyDictionary()
)
"""Each event loop's pools, by name."""


async def _in_pool(name: str, size: int, func: Callable[..., T], *args: Any) -> T:
    # As asyncio.to_thread, on the loop's pool `name` (made on first use). The function sees
    # the caller's contextvars (the current call, its trace id), so a sync tool can report
    # progress. The thread hands its outcome straight to an asyncio future (`run_in_executor`
    # chains a second future to it: 40% more CPU per call).
    loop = asyncio.get_running_loop()
    pools = _POOLS.get(loop) or _POOLS.setdefault(loop, {})
    pool = pools.get(name)
    if pool is None:
        pool = pools[name] = ThreadPoolExecutor(size, thread_name_prefix=f"kosong-{name}")
        # Shut down with its owner: once the loop is collected, its idle threads exit.
        weakref.finalize(loop, pool.shutdown, wait=False, cancel_futures=True)
    context = contextvars.copy_context()
    future: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        try:
            value = context.run(func, *args)
        except BaseException as e:  # anything the function raises is the caller's to see
            loop.call_soon_threadsafe(_settle, future, None, e)
        else:
            loop.call_soon_threadsafe(_settle, future, value, None)

    started = pool.submit(work)
    try:
        return await future
    except asyncio.CancelledError:
        started.cancel()  # if it has not started, it never will
        raise


def _settle(future: asyncio.Future[T], value: T | None, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(cast(T, value))


async def run_sync_tool(func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` on the sync-tool pool."""
    return await _in_pool("tool", TOOL_THREADS, func, *args)


async def run_parsing(func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` on the parsing pool."""
    return await _in_pool("parse", PARSE_THREADS, func, *args)


_EAGER: dict[str, Any] = {"eager_start": True} if sys.version_info >= (3, 12) else {}
"""How `start_task` starts a task: eagerly where Python can (3.12+), else scheduled."""


def start_task(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task running `coro`, started eagerly on Python 3.12+ (see the module doc)."""
    return asyncio.Task(coro, loop=loop, **_EAGER)
