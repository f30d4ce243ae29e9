"""Timeout: a call that takes too long is cancelled and answered with TIMEOUT."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.pipeline import Forward, Policy
from kosong.tooling import ToolResult
from kosong.tooling.error import ToolTimeoutError

__all__ = ["TimeoutPolicy"]


def _check_seconds(seconds: float | None, what: str) -> float | None:
    if seconds is not None and (not math.isfinite(seconds) or seconds <= 0):
        raise ValueError(f"{what} must be a positive number of seconds (or None), got {seconds!r}")
    return seconds


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
        self._per_tool = {
            name: _check_seconds(limit, f"the limit of {name!r}")
            for name, limit in (per_tool or {}).items()
        }

    def limit_for(self, tool_name: str) -> float | None:
        """The time limit of calls to `tool_name`, in seconds (None: none)."""
        return self._per_tool.get(tool_name, self._seconds)

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Pass the call on, cancelling it at the limit."""
        seconds = (
            self._per_tool.get(call.function.name, self._seconds)
            if self._per_tool
            else (self._seconds)
        )
        if seconds is None:
            return await forward(call, ctx)
        try:
            async with asyncio.timeout(seconds) as scope:
                return await forward(call, ctx)
        except TimeoutError:
            if not scope.expired():  # pyright: ignore[reportPossiblyUnboundVariable] - entered
                raise  # not our limit: someone else's timeout, let it through
        ctx.add_debug("timed_out_after_s", seconds)
        return ToolResult(call.id, ToolTimeoutError(call.function.name, seconds))
