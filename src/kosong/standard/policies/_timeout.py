"""Timeout: a call that takes too long is answered TIMEOUT at its deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from kosong._seconds import optional_seconds
from kosong._threads import start_task
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import ToolResult
from kosong.tooling.error import ToolTimeoutError

__all__ = ["TimeoutPolicy"]

logger = logging.getLogger(__name__)


class TimeoutPolicy(Policy):
    """Answer TIMEOUT when a call runs past its limit, and cancel it.

    The call runs in a task of its own; at the limit it is cancelled, and given `grace`
    seconds to stop. The answer is TIMEOUT either way, at the limit plus at most the grace:
    a tool that swallows its cancellation is left to end in the background (logged once),
    and what it returns then is dropped. The policy keeps such calls until they end, and
    `aclose()` stops them (at shutdown, say). A sync tool (a plain `def`) cannot be
    interrupted: its thread finishes on its own. Cancelling the caller cancels the call too.

    Put it inside a `RetryPolicy` to limit each attempt (a timed-out read-only call is then
    retried up to twice); outside, it limits the call with all its retries.
    """

    def __init__(
        self,
        seconds: float | None = 30.0,
        *,
        per_tool: Mapping[str, float | None] | None = None,
        grace: float = 0.1,
    ) -> None:
        """Limit calls to `seconds` (None: no limit), or to `per_tool[name]` for those tools.

        Args:
            seconds: The limit of every call, in seconds (None: no limit).
            per_tool: Other limits for some tools, by name (None: no limit for that tool).
            grace: How long a cancelled call may take to stop before the answer is given.

        Raises:
            ValueError: a limit or the grace is not a positive number.
        """
        self._seconds = optional_seconds(seconds, "seconds")
        self._per_tool = {
            name: optional_seconds(limit, f"the limit of {name!r}")
            for name, limit in (per_tool or {}).items()
        }
        self._grace = optional_seconds(grace, "grace") or 0.1
        # Attempts that ignored their cancellation, kept (not collected mid-run) until they end.
        self._stubborn: set[asyncio.Task[ToolResult]] = set()

    def limit_for(self, tool_name: str) -> float | None:
        """The time limit of calls to `tool_name`, in seconds (None: none)."""
        return self._per_tool.get(tool_name, self._seconds)

    async def aclose(self) -> None:
        """Cancel again the calls (of this event loop) that ignored it, and wait until they end."""
        loop = asyncio.get_running_loop()
        if late := [task for task in self._stubborn if task.get_loop() is loop]:
            for task in late:
                task.cancel()
            await asyncio.wait(late)

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Pass the call on in a task of its own, and answer TIMEOUT at the limit."""
        seconds = self.limit_for(call.function.name)
        if seconds is None:
            return await forward(call, ctx)
        attempt = start_task(asyncio.get_running_loop(), _attempt(forward, call, ctx))
        if attempt.done():  # an eager task that never waited
            return attempt.result()
        try:
            await asyncio.wait((attempt,), timeout=seconds)
        except asyncio.CancelledError:  # our caller is cancelled: so is the call
            attempt.cancel()
            await self._stop(attempt, call)
            raise
        if attempt.done():
            return attempt.result()
        attempt.cancel()
        await self._stop(attempt, call)
        ctx.call_context.add_debug("timed_out_after_s", seconds)
        return ToolResult(call.id, ToolTimeoutError(call.function.name, seconds))

    async def _stop(self, attempt: asyncio.Task[ToolResult], call: ToolCall) -> None:
        """Give a cancelled attempt the grace to stop; if it does not, let it run on."""
        await asyncio.wait((attempt,), timeout=self._grace)
        if attempt.done():
            if not attempt.cancelled():
                attempt.exception()  # retrieved: a stray error is not logged as unhandled
            return
        logger.warning(
            "Tool %r kept running %g s after its cancellation; it is left to finish in the "
            "background and its result will be dropped",
            call.function.name,
            self._grace,
        )
        self._stubborn.add(attempt)
        attempt.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[ToolResult]) -> None:
        self._stubborn.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: its error, if any, was already reported as a timeout


async def _attempt(forward: Forward, call: ToolCall, ctx: PolicyContext) -> ToolResult:
    return await forward(call, ctx)
