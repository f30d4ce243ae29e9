"""Tool calls: an `execute_tool {gen_ai.tool.name}` span per call, made once.

`dispatch(toolset, call)` is how `step` hands a call to its toolset: with telemetry on, the
call's span (gen-ai-spans.md, "Execute tool span": INTERNAL, `gen_ai.tool.name`,
`gen_ai.tool.call.id`, `gen_ai.tool.description`, `gen_ai.tool.type`) is current while
`handle()` starts the call, so the task running it, and everything the tool starts, is its
child. It ends when the result is there, with `error.type` from the error's code.

While it runs, the span is the call's `ToolSpan` (`tool_span(call_id)`): a policy pipeline's
`TracingPolicy` and `MCPToolset` add their attributes to it rather than making a second span
(the MCP conventions ask exactly that of an MCP client inside a traced tool call). Where no
span was made for the call (a server's pipeline, say), `ToolExecution` makes one.
Metric: `gen_ai.execute_tool.duration`, with the span's duration.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from kosong._telemetry import _content
from kosong._telemetry._model import OUTSIDE
from kosong._telemetry._spans import Operation
from kosong._telemetry._state import Telemetry, current
from kosong.message import ToolCall
from kosong.tooling import HandleResult, Tool, ToolResult, Toolset

__all__ = ["ToolExecution", "ToolSpan", "dispatch", "tool_span"]

TOOL_TYPE = "function"
"""`gen_ai.tool.type` of every tool kosong runs: the model writes the arguments of a function
the application executes (the conventions' "function")."""

_CURRENT: contextvars.ContextVar[ToolSpan | None] = contextvars.ContextVar(
    "kosong_tool_span", default=None
)


class ToolSpan:
    """The span of one tool call while the call runs."""

    __slots__ = ("call_id", "error_type", "operation", "tool_name")

    def __init__(self, operation: Operation, call_id: str, tool_name: str) -> None:
        self.operation = operation
        """The span and its clock."""
        self.call_id = call_id
        """The call it traces."""
        self.tool_name = tool_name
        """The tool called."""
        self.error_type: str | None = None
        """An error code that says more than the result's class (a pipeline's own code)."""

    def set(self, key: str, value: Any) -> None:
        """Add an attribute to the call's span."""
        self.operation.set(key, value)

    def finish(self, result: ToolResult | None, error: BaseException | None = None) -> None:
        """End the span with the call's outcome (a result, or what the call raised)."""
        operation = self.operation
        if error is not None:
            operation.raised(error)
        elif result is not None:
            value = result.return_value
            if value.is_error:
                code = self.error_type or _code(value)
                operation.fail(code, code)
            elif operation.telemetry.capture_content:
                operation.set("gen_ai.tool.call.result", _content.tool_result(value))
        elapsed = operation.end()
        histogram = operation.telemetry.tool_duration
        if histogram is not None:
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": self.tool_name,
                "gen_ai.tool.type": TOOL_TYPE,
            }
            if operation.error_type is not None:
                attributes["error.type"] = operation.error_type
            histogram.record(elapsed, attributes)


def tool_span(call_id: str) -> ToolSpan | None:
    """The span of the call `call_id` when it is the one running here (None otherwise)."""
    found = _CURRENT.get()
    return found if found is not None and found.call_id == call_id else None


def dispatch(toolset: Toolset, call: ToolCall) -> HandleResult:
    """`toolset.handle(call)`, inside the call's span when telemetry is on."""
    telemetry = current()
    if telemetry is None:
        return toolset.handle(call)
    outside = OUTSIDE.get()  # the tool calls of a streaming answer are its siblings
    span = _start(telemetry, call, _find(toolset, call.function.name), outside)
    token = _CURRENT.set(span)
    model_token = OUTSIDE.set(None)
    span.operation.enter(outside)
    try:
        handled = toolset.handle(call)
    except BaseException as e:  # handle() never raises; a broken toolset's error is the span's
        span.finish(None, e)
        raise
    finally:
        span.operation.leave()
        OUTSIDE.reset(model_token)
        _CURRENT.reset(token)
    if isinstance(handled, ToolResult):
        span.finish(handled)
    else:
        handled.add_done_callback(lambda future: _finished(span, future))
    return handled


class ToolExecution:
    """For code that runs a call (a pipeline): the call's span running, else one of its own."""

    __slots__ = ("_own", "_token", "span")

    def __init__(self, telemetry: Telemetry | None, call: ToolCall, tool: Tool | None) -> None:
        """Find the call's span, or start one when `telemetry` is on (None: no span)."""
        self._token: contextvars.Token[ToolSpan | None] | None = None
        self._own = False
        self.span: ToolSpan | None = tool_span(call.id)
        if self.span is None and telemetry is not None:
            self.span = _start(telemetry, call, tool)
            self._own = True

    def __enter__(self) -> ToolSpan | None:
        if self._own and self.span is not None:
            self._token = _CURRENT.set(self.span)
            self.span.operation.enter()
        return self.span

    def finish(self, result: ToolResult) -> None:
        """End a span made here with `result` (a span found running ends with its call)."""
        if self._own and self.span is not None:
            self._close()
            self.span.finish(result)

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if self._token is not None and self.span is not None:
            self._close()
            self.span.finish(None, error if isinstance(error, BaseException) else None)

    def _close(self) -> None:
        if self._token is not None and self.span is not None:
            self.span.operation.leave()
            _CURRENT.reset(self._token)
            self._token = None


def _start(
    telemetry: Telemetry, call: ToolCall, tool: Tool | None, parent: Any | None = None
) -> ToolSpan:
    name = call.function.name
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": TOOL_TYPE,
        "gen_ai.tool.description": tool.description if tool is not None else None,
    }
    if telemetry.capture_content:
        attributes["gen_ai.tool.call.arguments"] = _content.tool_arguments(call)
    operation = Operation(telemetry, f"execute_tool {name}", "INTERNAL", attributes, parent=parent)
    return ToolSpan(operation, call.id, name)


def _finished(span: ToolSpan, future: asyncio.Future[ToolResult]) -> None:
    if future.cancelled():
        span.finish(None, asyncio.CancelledError())
    elif (error := future.exception()) is not None:
        span.finish(None, error)
    else:
        span.finish(future.result())


def _find(toolset: Toolset, name: str) -> Tool | None:
    find: Any = getattr(toolset, "find_tool", None)
    if callable(find):
        found: object = find(name)
        return found if isinstance(found, Tool) else None
    return next((tool for tool in toolset.tools if tool.name == name), None)


def _code(value: object) -> str:
    """A failed result's code: its class's (kosong.tooling.error's table), else its class name."""
    code: object = getattr(type(value), "code", None)
    return code if isinstance(code, str) else type(value).__name__
