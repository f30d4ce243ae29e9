"""Repeat guard: stop a model that keeps making the same call.

Models sometimes loop, calling one tool with the same arguments again and again. The guard
counts identical calls (same tool, same arguments in canonical form); once a call has been
made `max_identical_calls` times, the next identical one is not run: it gets a REPEATED_CALL
error telling the model to use what it has or change course. Counts cover the guard's
lifetime, or only the last `window` seconds; `reset()` starts afresh (say, at each new user
message). Tools that are meant to be polled can be `exempt`.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.pipeline import Forward, Policy
from kosong.tooling import ToolResult
from kosong.tooling.error import ToolRepeatedCallError

__all__ = ["RepeatGuardPolicy"]


class RepeatGuardPolicy(Policy):
    """Refuse a call made with the same arguments too many times; see the module doc."""

    def __init__(
        self,
        max_identical_calls: int = 3,
        *,
        window: float | None = None,
        exempt: Iterable[str] = (),
        max_tracked: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Allow each distinct call `max_identical_calls` times (within `window` seconds).

        Args:
            max_identical_calls: How many identical calls run; the ones after are refused.
            window: Count only calls of the last `window` seconds (None: all).
            exempt: Names of tools never refused (tools meant to be polled).
            max_tracked: How many distinct calls to remember (the oldest are forgotten).
            clock: Monotonic seconds (for tests).

        Raises:
            ValueError: a limit is below 1, or the window is not positive.
        """
        if max_identical_calls < 1 or max_tracked < 1:
            raise ValueError("max_identical_calls and max_tracked must be at least 1")
        if window is not None and window <= 0:
            raise ValueError("window must be a positive number of seconds, or None")
        self._max = max_identical_calls
        self._window = window
        self._exempt = frozenset(exempt)
        self._max_tracked = max_tracked
        self._clock = clock
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()  # with a window: times
        self._counts: OrderedDict[str, int] = OrderedDict()  # without one, counts are enough

    def reset(self) -> None:
        """Forget every call counted so far."""
        self._seen.clear()
        self._counts.clear()

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True for calls to exempt tools."""
        return call.function.name in self._exempt

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Refuse the call if it was made too often already, else count it and pass it on."""
        name = call.function.name
        if name in self._exempt:
            return await forward(call, ctx)
        digest = ctx.arguments_digest_nowait() or await ctx.arguments_digest()
        key = f"{name}:{digest}"
        if self._window is None:
            counts = self._counts
            count = counts.get(key)
            if count is None:
                count = counts[key] = 0
                if len(counts) > self._max_tracked:
                    counts.popitem(last=False)
            else:
                counts.move_to_end(key)
            if count >= self._max:
                return ToolResult(call.id, ToolRepeatedCallError(name, count))
            counts[key] = count + 1
            return await forward(call, ctx)
        now = self._clock()
        times = self._seen.get(key)
        if times is None:
            times = self._seen[key] = deque()
            if len(self._seen) > self._max_tracked:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        while times and times[0] <= now - self._window:
            times.popleft()
        if len(times) >= self._max:
            return ToolResult(call.id, ToolRepeatedCallError(name, len(times)))
        times.append(now)
        return await forward(call, ctx)
