"""Concurrency: how many calls run at once, in all and per tool; sequential tools one by one.

`ConcurrencyPolicy(limit=4, per_tool={"browser": 1})` lets at most 4 calls run at once
through the pipeline, and one call of `browser`. A tool whose metadata says `sequential=True`
(`@tool(sequential=True)`, `Tool(..., sequential=True)`) always runs one call at a time. A
call over a limit waits its turn; waiters go first come, first served, so the calls of a
sequential tool run in the order they reached the policy: for calls made by one model
response (or several steps at once on one toolset), the order they were made in, provided no
policy outside it makes calls wait first (list it before approval, say). How long a call
waited is in its result's metadata, `performance.queue_ms`.

The limits hold for everything that goes through the policy, so one policy instance shared by
several pipelines limits them together. Put a `TimeoutPolicy` inside it to limit running
time only, outside to count the waiting too. Cancelling a waiting call takes it out of the
queue.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import Tool, ToolResult

__all__ = ["ConcurrencyPolicy"]


class ConcurrencyPolicy(Policy):
    """Limit how many calls run at once, in all and per tool; see the module doc."""

    def __init__(
        self, limit: int | None = None, *, per_tool: Mapping[str, int] | None = None
    ) -> None:
        """Run at most `limit` calls at once (None: no limit), and `per_tool[name]` of a tool.

        A sequential tool (`sequential=True` in its metadata) runs one call at a time, whatever
        `per_tool` says.

        Raises:
            ValueError: a limit is below 1.
        """
        for name, value in (("limit", limit), *(per_tool or {}).items()):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"the concurrency limit of {name!r} must be at least 1")
        self._all = _Gate(limit) if limit is not None else None
        self._per_tool = dict(per_tool or {})
        self._gates: dict[str, _Gate] = {}

    def limit_for(self, tool: Tool) -> int | None:
        """How many calls of `tool` may run at once (1 for a sequential tool); None: no limit.

        A server whose runs are spread over workers enforces it across all of them.
        """
        return 1 if tool.sequential else self._per_tool.get(tool.name)

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Wait for the call's turn under each limit that applies, then pass it on."""
        tool = ctx.tool
        capacity = self.limit_for(tool)
        gate = None
        if capacity is not None:
            gate = self._gates.get(tool.name)
            if gate is None:
                gate = self._gates[tool.name] = _Gate(capacity)
        if gate is None and self._all is None:
            return await forward(call, ctx)
        started = time.perf_counter()
        entered: list[_Gate] = []
        try:
            for each in (gate, self._all):
                if each is not None:
                    await each.enter()
                    entered.append(each)
            ctx.call_context.record_timing("queue_ms", (time.perf_counter() - started) * 1000)
            return await forward(call, ctx)
        finally:
            for each in reversed(entered):
                each.leave()
            if gate is not None and gate.idle and self._gates.get(tool.name) is gate:
                del self._gates[tool.name]  # made again when needed: no gate per name forever


class _Gate:
    """At most `capacity` holders; the others wait, first come, first served.

    A leaving holder hands its place to the first waiter directly, so a newcomer can never
    overtake a call that was already waiting.
    """

    __slots__ = ("capacity", "running", "waiting")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.running = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    @property
    def idle(self) -> bool:
        return self.running == 0 and not self.waiting

    async def enter(self) -> None:
        if self.running < self.capacity and not self.waiting:
            self.running += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.leave()  # handed the place as it was cancelled: pass it on
            elif waiter in self.waiting:  # (a leaving holder may have dropped it already)
                self.waiting.remove(waiter)
            raise

    def leave(self) -> None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the place passes to it; `running` stays the same
                return
        self.running -= 1
