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
from kosong.standard.pipeline import WAIT, ForwardNow, HookPolicy
from kosong.tooling import ToolReturnValue
from kosong.tooling.error import ToolRepeatedCallError

__all__ = ["RepeatGuardPolicy"]


class RepeatGuardPolicy(HookPolicy):
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

    def before(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        """Refuse the call if it was made too often already, else count it and pass it on."""
        name = call.function.name
        if name in self._exempt:
            return None
        digest = ctx.arguments_digest_nowait()
        if digest is None:
            return WAIT  # long arguments, parsed in a worker thread: `before_waiting`
        return self._judge(name, digest)

    async def before_waiting(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        """`before` once the arguments' digest is at hand."""
        return self._judge(call.function.name, await ctx.arguments_digest())

    def _judge(self, name: str, digest: str) -> ToolReturnValue | None:
        """Refuse the call under `digest`, or count it (None)."""
        key = f"{name}:{digest}"
        if self._window is None:  # `_refused` and `_count` inlined: this runs on every call
            counts = self._counts
            count = counts.get(key)
            if count is None:
                counts[key] = 1
                if len(counts) > self._max_tracked:
                    counts.popitem(last=False)
                return None
            if count >= self._max:
                counts.move_to_end(key)
                return ToolRepeatedCallError(name, count)
            counts[key] = count + 1
            counts.move_to_end(key)
            return None
        now = self._clock()
        made = self._refused(key, now)
        if made is not None:
            return ToolRepeatedCallError(name, made)
        self._count(key, now)
        return None

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """`run` without waiting: the call is counted once the rest has answered it.

        Nothing else runs in between, so counting after the answer counts as `run` does.
        """
        name = call.function.name
        if name in self._exempt:
            return forward(call, ctx)
        digest = ctx.arguments_digest_nowait()
        if digest is None:
            return None
        key = f"{name}:{digest}"
        if self._window is None:  # `_refused` and `_count` inlined: this runs on every call
            counts = self._counts
            count = counts.get(key)
            if count is not None and count >= self._max:
                counts.move_to_end(key)
                return ToolRepeatedCallError(name, count)
            value = forward(call, ctx)
            if value is not None:
                if count is None:
                    counts[key] = 1
                    if len(counts) > self._max_tracked:
                        counts.popitem(last=False)
                else:
                    counts[key] = count + 1
                    counts.move_to_end(key)
            return value
        now = self._clock()
        made = self._refused(key, now)
        if made is not None:
            return ToolRepeatedCallError(name, made)
        value = forward(call, ctx)
        if value is not None:
            self._count(key, now)
        return value

    def _refused(self, key: str, now: float) -> int | None:
        """How often the call under `key` was made, if that is too often; else None.

        Counts nothing (a refused call is kept among the most recently seen).
        """
        if self._window is None:
            count = self._counts.get(key)
            if count is None or count < self._max:
                return None
            self._counts.move_to_end(key)
            return count
        times = self._seen.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self._window:
            times.popleft()
        if len(times) < self._max:
            return None
        self._seen.move_to_end(key)
        return len(times)

    def _count(self, key: str, now: float) -> None:
        """Count one more call under `key` (made at `now`, with a window)."""
        if self._window is None:
            counts = self._counts
            count = counts.get(key)
            if count is None:
                counts[key] = 1
                if len(counts) > self._max_tracked:
                    counts.popitem(last=False)
            else:
                counts[key] = count + 1
                counts.move_to_end(key)
            return
        seen = self._seen
        times = seen.get(key)
        if times is None:
            times = seen[key] = deque()
            if len(seen) > self._max_tracked:
                seen.popitem(last=False)
        else:
            seen.move_to_end(key)
        times.append(now)
