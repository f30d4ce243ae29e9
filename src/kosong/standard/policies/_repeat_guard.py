"""Repeat guard: stop a model that keeps making the same call.

Models sometimes loop, calling one tool with the same arguments again and again. The guard
counts identical calls (same tool, same arguments in canonical form); once a call has been
made `max_identical_calls` times, the next identical one is not run: it gets a REPEATED_CALL
error telling the model to use what it has or change course. Counts cover the guard's
lifetime, or only the last `window` seconds; `reset()` starts afresh (say, at each new user
message). Tools that are meant to be polled can be `exempt`. Calls whose arguments the toolset
refuses are not counted (they never run).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from kosong._seconds import optional_seconds
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Policy
from kosong.tooling import ToolReturnValue
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
        self._max = max_identical_calls
        self._window = optional_seconds(window, "window")
        self._exempt = frozenset(exempt)
        self._max_tracked = max_tracked
        self._clock = clock
        # Per distinct call, when it was made (at most `max_identical_calls` times: a refused
        # call is not counted), the most recently seen last.
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def reset(self) -> None:
        """Forget every call counted so far."""
        self._seen.clear()

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Refuse the call if it was made too often already, else count it and pass it on."""
        name = call.function.name
        if name in self._exempt:
            return None
        key = f"{name}:{ctx.arguments_key}"
        now = self._clock()
        times = self._seen.get(key)
        if times is None:
            times = self._seen[key] = deque()
            if len(self._seen) > self._max_tracked:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        if self._window is not None:
            while times and times[0] <= now - self._window:
                times.popleft()
        if len(times) >= self._max:
            return ToolRepeatedCallError(name, len(times))
        times.append(now)
        return None
