"""Single-flight: identical concurrent calls to a tool that is safe to repeat share one run.

When a call arrives while an identical one (same tool, same arguments in canonical form) is
running, it waits for that one's result instead of running the tool again (and gets a copy of
its own). Only tools whose hints say they are read-only or idempotent are shared (their
result does not depend on who asked); others always run. A waiting call that is cancelled
leaves the shared run alone; if the call that runs the tool is cancelled, a waiting call takes
over and runs it itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_safe_to_repeat
from kosong.standard._pipeline import Forward, Policy
from kosong.standard._values import shared_copy
from kosong.tooling import ToolResult, ToolReturnValue

__all__ = ["SingleFlightPolicy"]


class _Flight:
    """A run in progress; `result` is made when a second call joins it."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result: asyncio.Future[ToolReturnValue | None] | None = None


class SingleFlightPolicy(Policy):
    """Share one run among identical concurrent calls; see the module doc."""

    def __init__(self, *, also: Iterable[str] = ()) -> None:
        """Share runs of read-only and idempotent tools, and of the tools named in `also`."""
        self._also = frozenset(also)
        self._flights: dict[str, _Flight] = {}

    @property
    def in_flight(self) -> int:
        """How many distinct runs are in progress."""
        return len(self._flights)

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Join an identical run in progress, or run the call and let others join it."""
        tool = ctx.tool
        if not (is_safe_to_repeat(tool) or tool.name in self._also):
            return await forward(call, ctx)
        key = f"{tool.name}:{ctx.arguments_key}"
        while (flight := self._flights.get(key)) is not None:
            if flight.result is None:
                flight.result = asyncio.get_running_loop().create_future()
            # shield: our own cancellation must not cancel the run others wait for.
            value = await asyncio.shield(flight.result)
            if value is not None:
                ctx.shared = True
                return ToolResult(call.id, shared_copy(value))  # a copy of its own
            # The call that ran it was cancelled: take over (or join whoever did first).
        flight = self._flights[key] = _Flight()
        try:
            result = await forward(call, ctx)
        except BaseException:
            del self._flights[key]
            if flight.result is not None:
                flight.result.set_result(None)  # wake the waiters; one of them runs it again
            raise
        del self._flights[key]
        if flight.result is not None:  # others wait: they copy a copy this caller cannot touch
            flight.result.set_result(shared_copy(result.return_value))
        return result
