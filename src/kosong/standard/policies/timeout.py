"""Timeout: a call that takes too long is cancelled and answered with TIMEOUT."""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.pipeline import Forward, ForwardNow, Policy
from kosong.tooling import ToolResult, ToolReturnValue
from kosong.tooling.error import ToolTimeoutError

__all__ = ["TimeoutPolicy"]


def _check_seconds(seconds: float | None, what: str) -> float | None:
    if seconds is not None and (not math.isfinite(seconds) or seconds <= 0):
        raise ValueError(f"{what} must be a positive number of seconds (or None), got {seconds!r}")
    return seconds


# A running call's entry in a watchdog's queue, a list (cheaper to make than an object):
# [deadline (loop time), task, task.cancelling() when watched, ended, expired].
_AT, _TASK, _CANCELLING, _ENDED, _EXPIRED = range(5)


class _Watchdog:
    """One timer for every running call with the same limit.

    A timer per call (what `asyncio.timeout` arms) costs a heap entry that lingers in the loop
    until its far deadline; with one limit, deadlines come in call order, so a queue and one
    timer, re-armed for the oldest running call, do the same work for a fraction of the cost.
    `TimeoutPolicy.run` appends to `queue` and marks entries ended itself (calls cost less
    without a method call for each).
    """

    __slots__ = ("armed", "loop", "queue", "seconds", "time")

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        # The loop's clock; asyncio's own loops read time.monotonic(), a call less.
        self.time = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        self.seconds = seconds
        self.queue: deque[list[Any]] = deque()
        self.armed = False

    def arm(self) -> None:
        """Arm the timer for the oldest entry (the queue is not empty)."""
        self.armed = True
        self.loop.call_at(self.queue[0][_AT], self._fire)

    def _fire(self) -> None:
        now = self.loop.time()
        queue = self.queue
        while queue and (queue[0][_ENDED] or queue[0][_AT] <= now):
            entry = queue.popleft()
            if not entry[_ENDED]:
                entry[_EXPIRED] = True
                entry[_TASK].cancel()
        self.armed = bool(queue)
        if queue:
            self.loop.call_at(queue[0][_AT], self._fire)


class TimeoutPolicy(Policy):
    """Stop a call after a time limit: its task is cancelled and the result is a TIMEOUT error.

    Put it inside a `RetryPolicy` to limit each attempt (a timed-out read-only call is then
    retried up to twice); outside, it limits the call with all its retries.

    A tool that runs in a worker thread (a plain `def`) cannot be interrupted: the call still
    ends at the limit, but the thread finishes on its own.
    """

    def __init__(
        self, seconds: float | None = 30.0, *, per_tool: Mapping[str, float | None] | None = None
    ) -> None:
        """Limit calls to `seconds` (None: no limit), or to `per_tool[name]` for those tools.

        Raises:
            ValueError: a limit is not a positive number.
        """
        self._seconds = _check_seconds(seconds, "seconds")
        self._dogs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, _Watchdog]] = (
            weakref.WeakKeyDictionary()
        )
        # The loop of the last call and its watchdogs, as one tuple (read and replaced whole,
        # so threads running their own loops never pair one loop with another's watchdogs):
        # a weak-keyed lookup costs a weak reference per call, and a policy nearly always
        # serves one loop. The loop is held weakly, so the policy does not keep it alive.
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], dict[float, _Watchdog]] | None = (
            None
        )
        self._per_tool = {
            name: _check_seconds(limit, f"the limit of {name!r}")
            for name, limit in (per_tool or {}).items()
        }

    def limit_for(self, tool_name: str) -> float | None:
        """The time limit of calls to `tool_name`, in seconds (None: none)."""
        return self._per_tool.get(tool_name, self._seconds)

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True for calls to tools without a limit."""
        return self._per_tool.get(call.function.name, self._seconds) is None

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """Pass the call on: an answer that takes no waiting cannot run past a limit."""
        return forward(call, ctx)

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Pass the call on, cancelling it at the limit."""
        seconds = (
            self._per_tool.get(call.function.name, self._seconds)
            if self._per_tool
            else (self._seconds)
        )
        task = asyncio.current_task()
        if seconds is None or task is None:
            return await forward(call, ctx)
        loop = task.get_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            dogs = last[1]
        else:
            dogs = self._dogs.get(loop)
            if dogs is None:
                dogs = self._dogs[loop] = {}
            self._last = (weakref.ref(loop), dogs)
        dog = dogs.get(seconds)
        if dog is None:
            dog = dogs[seconds] = _Watchdog(loop, seconds)
        entry: list[Any] = [dog.time() + seconds, task, task.cancelling(), False, False]
        queue = dog.queue
        queue.append(entry)
        if not dog.armed:
            dog.arm()
        try:
            return await forward(call, ctx)
        except asyncio.CancelledError:
            # Ours only if the watchdog cancelled and nobody else did too (as asyncio.timeout).
            if not entry[_EXPIRED] or task.uncancel() > entry[_CANCELLING]:
                raise
        finally:
            entry[_ENDED] = True
            while queue and queue[0][_ENDED]:  # calls mostly end in the order they started
                queue.popleft()
        ctx.add_debug("timed_out_after_s", seconds)
        return ToolResult(call.id, ToolTimeoutError(call.function.name, seconds))
