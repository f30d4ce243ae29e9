"""Events of a call, as the standard streams them: progress, retries, then one result or error.

    tool_progress   a running tool reported how far it is (`report_progress`)
    tool_retrying   the retry policy is about to call the tool again
    tool_result     the call succeeded; the data is the success envelope
    tool_error      the call failed; the data is the error envelope

Every event has a unique id (`evt_YYYYMMDD_<12 hex>`), and its data has `metadata` with the
tool's name, the timestamp, the trace id and the call id. `ToolEvent.to_sse()` writes an event
as Server-Sent Events text. `CallStream` iterates the events of one call (see
`PolicyToolset.stream`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

from kosong.standard._envelope import to_envelope
from kosong.standard._trace import new_event_id
from kosong.tooling import ToolError, ToolResult
from kosong.tooling.error import ToolCancelledError, describe_exception
from kosong.utils.typing import JsonType

__all__ = ["CallStream", "EventSink", "EventType", "ToolEvent", "final_event"]

logger = logging.getLogger(__name__)

EventType = Literal["tool_progress", "tool_retrying", "tool_result", "tool_error"]
"""The kinds of events."""

FINAL_EVENTS: frozenset[str] = frozenset({"tool_result", "tool_error"})


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One event of a call: its kind, a unique id, and its JSON data."""

    event: EventType
    """The kind of event."""
    id: str
    """A unique id, usable as the SSE `id` (for `Last-Event-ID` reconnection)."""
    data: dict[str, JsonType]
    """The event's JSON data (for a final event, the envelope)."""
    result: ToolResult | None = field(default=None, compare=False, repr=False)
    """For `tool_result` and `tool_error`: the call's result itself."""

    @property
    def is_final(self) -> bool:
        """Whether this is the call's last event (`tool_result` or `tool_error`)."""
        return self.event in FINAL_EVENTS

    def to_dict(self) -> dict[str, JsonType]:
        """`{"event", "id", "data"}`, as JSON."""
        return {"event": self.event, "id": self.id, "data": self.data}

    def to_sse(self) -> str:
        """The event as Server-Sent Events text, ending with the blank line that closes it."""
        payload = json.dumps(self.data, ensure_ascii=False)  # one line: JSON escapes newlines
        return f"event: {self.event}\nid: {self.id}\ndata: {payload}\n\n"


def final_event(result: ToolResult, tool_name: str) -> ToolEvent:
    """The last event of a call: `tool_result` or `tool_error`, its data the envelope.

    Never raises: should the envelope fail to build, the event is a `tool_error` saying so.
    """
    data: dict[str, JsonType]
    try:
        data = to_envelope(result, tool_name=tool_name, lossless=False).dump()
        failed = result.return_value.is_error
    except Exception as e:  # boundary: an envelope that fails becomes a tool_error event
        logger.exception("The envelope of a call to %r could not be built", tool_name)
        failed = True
        data = {
            "success": False,
            "status": "error",
            "error": {
                "code": "EXECUTION_ERROR",
                "message": f"the result could not be encoded: {describe_exception(e)}",
                "retryable": False,
            },
            "metadata": {"tool_name": tool_name, "tool_call_id": result.tool_call_id},
        }
    return ToolEvent("tool_error" if failed else "tool_result", new_event_id(), data, result)


EventSink = Callable[[ToolEvent], None]
"""Something that receives a call's events as they happen; it must not block."""

_END = object()


class CallStream:
    """The events of one call, in order: `async for event in stream`.

    The call starts on the first iteration (or `result()`); the iteration ends after the final
    event, which always comes: `tool_result` or `tool_error`, also for a call cancelled by
    someone else (a `tool_error` saying so). Use it as an async context manager to own the call:
    leaving the block cancels a call that is still running.
    """

    def __init__(
        self, start: Callable[[EventSink], asyncio.Future[ToolResult]], *, tool_name: str = ""
    ) -> None:
        """Prepare a stream; `start(sink)` starts the call, sending its events to `sink`."""
        self._start = start
        self._tool_name = tool_name
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Future[ToolResult] | None = None
        self._finished = False

    def _ensure_started(self) -> asyncio.Future[ToolResult]:
        if self._task is None:
            self._task = self._start(self._queue.put_nowait)
            self._task.add_done_callback(lambda _: self._queue.put_nowait(_END))
        return self._task

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ToolEvent:
        if self._finished:
            raise StopAsyncIteration
        task = self._ensure_started()
        item = await self._queue.get()
        if item is _END:  # the call ended without its final event: it never got to send it
            self._finished = True
            return self._missing_final(task)
        event: ToolEvent = item
        if event.is_final:
            self._finished = True
        return event

    def _missing_final(self, task: asyncio.Future[ToolResult]) -> ToolEvent:
        value: ToolError
        if task.cancelled():
            value = ToolCancelledError(self._tool_name)
        else:
            error = task.exception()
            text = f"The call failed: {describe_exception(error)}" if error else "No result"
            value = ToolError(message=text, brief="No result")
        return final_event(ToolResult("", value), self._tool_name)

    async def result(self) -> ToolResult:
        """The call's result (starting the call if needed)."""
        return await self._ensure_started()

    async def aclose(self) -> None:
        """Cancel the call if it is still running, and wait until it has stopped."""
        task = self._task
        self._finished = True
        if task is None or task.done():
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we are being cancelled ourselves: let it through

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
