"""Event hook: send the events of every call to a listener (to push them over SSE, say)."""

from __future__ import annotations

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._events import EventSink
from kosong.standard._pipeline import Policy
from kosong.tooling import ToolReturnValue

__all__ = ["EventHookPolicy"]


class EventHookPolicy(Policy):
    """Send every call's events (progress, retries, the final result) to `listener`.

    The listener runs on the event loop and must not block; what it raises is logged and
    otherwise ignored. `PolicyToolset.stream` gives one call's events instead.
    """

    observes_refusals = True  # every call, refused ones too

    def __init__(self, listener: EventSink) -> None:
        """Send events to `listener`."""
        self._listener = listener

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Subscribe the listener to this call, and pass it on."""
        ctx.add_sink(self._listener)
        return None
