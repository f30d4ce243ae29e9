"""Single-flight: identical concurrent calls to a tool that is safe to repeat share one run.

When a call arrives while an identical one (same tool, same arguments in canonical form) is
running, it waits for that one's result instead of running the tool again. Only tools whose
hints say they are read-only or idempotent are shared (their result does not depend on who
asked); others always run. A waiting call that is cancelled leaves the shared run alone; if
the call that runs the tool is cancelled, a waiting call takes over and runs it itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.metadata import is_safe_to_repeat
from kosong.standard.pipeline import Forward, ForwardNow, Policy
from kosong.tooling import ToolResult, ToolReturnValue

__all__ = ["SingleFlightPolicy"]


class SingleFlightPolicy(Policy):
    """Share one run among identical concurrent calls; see the module doc."""

    def __init__(self, *, also: Iterable[str] = ()) -> None:
        """Share runs of read-only and idempotent tools, and of the tools named in `also`."""
        self._also = frozenset(also)
        # The runs in progress, by key: None until a second call joins, when the future it
        # waits on is made (so a call nobody joins costs no future).
        self._flights: dict[str, asyncio.Future[ToolReturnValue | None] | None] = {}

    @property
    def in_flight(self) -> int:
        """How many distinct runs are in progress."""
        return len(self._flights)

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True for calls to tools whose runs are not shared."""
        tool = ctx.tool
        return tool is None or not (  # `is_safe_to_repeat` inlined: every call comes here
            tool.idempotent_hint is True or tool.read_only_hint is True or tool.name in self._also
        )

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """Pass the call on when no identical run is in progress (else joining it waits).

        An answer had without waiting leaves no run in progress for others to join.
        """
        tool = ctx.tool
        if tool is None or not (is_safe_to_repeat(tool) or tool.name in self._also):
            return forward(call, ctx)
        digest = ctx.arguments_digest_nowait()
        if digest is None or f"{tool.name}:{digest}" in self._flights:
            return None
        return forward(call, ctx)

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Join an identical run in progress, or run the call and let others join it."""
        tool = ctx.tool
        if tool is None or not (  # `is_safe_to_repeat` inlined: every call comes here
            tool.idempotent_hint is True or tool.read_only_hint is True or tool.name in self._also
        ):
            return await forward(call, ctx)
        digest = ctx.arguments_digest_nowait() or await ctx.arguments_digest()
        key = f"{tool.name}:{digest}"
        flights = self._flights
        while key in flights:
            flight = flights[key]
            if flight is None:
                flight = flights[key] = asyncio.get_running_loop().create_future()
            # shield: our own cancellation must not cancel the run others wait for.
            value = await asyncio.shield(flight)
            if value is not None:
                ctx.shared = True
                return ToolResult(call.id, value)
            # The call that ran it was cancelled: take over (or join whoever did first).
        flights[key] = None
        try:
            result = await forward(call, ctx)
        except BaseException:
            flight = flights.pop(key)
            if flight is not None:
                flight.set_result(None)  # wake the waiters; one of them runs it again
            raise
        flight = flights.pop(key)
        if flight is not None:
            flight.set_result(result.return_value)
        return result
