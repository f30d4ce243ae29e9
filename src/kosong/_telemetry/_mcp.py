"""MCP: `tools/call {gen_ai.tool.name}` spans on both sides, trace context in `_meta`.

As the MCP conventions say (mcp.md of the GenAI conventions): the client puts the W3C trace
context (`traceparent`, `tracestate`, `baggage`) in the request's `params._meta`; the server
takes it from there as the parent of its SERVER span, and links the ambient context (an HTTP
server span, say) when there is one. A client call inside a traced tool call (`step`'s span for
the same call) adds the MCP attributes to that span rather than making a second one; otherwise it
makes a CLIENT span.

The official MCP SDK (2.x) has OpenTelemetry spans of its own, made with the global tracer
provider: a CLIENT span per request it sends (in the task that sends it, which for
`MCPToolset` is its connection's, so `continued` runs the send in the caller's trace) and a
SERVER span per request it handles. Where the SDK's server span for the request is recording,
kosong adds to it (the session, the transport, the content when asked, the metric) instead of
making a second one; where it is not (kosong given a tracer provider of its own), kosong makes
the span. Both carry `mcp.method.name`, `gen_ai.tool.name` and
`gen_ai.operation.name` = `execute_tool`; an `isError` result is `error.type` = `tool_error`, a
JSON-RPC error its code. Metrics: `mcp.client.operation.duration`, `mcp.server.operation.duration`.

Nothing here reads the MCP SDK's objects: `kosong.mcp` passes what it knows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from kosong._telemetry import _content
from kosong._telemetry._spans import Operation
from kosong._telemetry._state import current, otel_trace
from kosong._telemetry._tools import ToolSpan, tool_span
from kosong.message import ToolCall
from kosong.tooling import ToolResult

__all__ = ["MCPClientCall", "MCPServerCall", "carry_context", "continued", "mcp_server_call"]

T = TypeVar("T")

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate
except ImportError:  # pragma: no cover - depends on the environment
    otel_context = None
    propagate = None

TOOL_ERROR = "tool_error"
"""`error.type` of a call whose result has `isError` (mcp.md)."""

_METHOD = "tools/call"


def carry_context(meta: dict[str, Any] | None, where: str) -> dict[str, Any] | None:
    """`meta` with the current trace context in it, for a request's `_meta`.

    `where` (the server's URL or command) gives the current span's `server.address`,
    `server.port` and `network.transport`. Unchanged when telemetry is off.
    """
    if current() is None or propagate is None or otel_trace is None:
        return meta
    span = otel_trace.get_current_span()
    if span.is_recording():
        for key, value in _peer(where).items():
            span.set_attribute(key, value)
    carrier = dict(meta or {})
    propagate.inject(carrier)
    return carrier or None


async def continued(meta: Mapping[str, Any] | None, request: Awaitable[T]) -> T:
    """Await `request` in the trace `meta` carries (a request sent from another task).

    The MCP SDK's own client span, and the trace context it puts in `_meta`, then belong to
    the caller's trace. Without trace context in `meta`, `request` is simply awaited.
    """
    if not meta or "traceparent" not in meta or propagate is None or otel_context is None:
        return await request
    token = otel_context.attach(propagate.extract(dict(meta)))
    try:
        return await request
    finally:
        otel_context.detach(token)


class MCPClientCall:
    """An MCP client's `tools/call`: its own CLIENT span, or the call's running tool span."""

    __slots__ = ("_found", "_operation", "_tool")

    def __init__(self, call: ToolCall) -> None:
        """Trace `call` (nothing when telemetry is off)."""
        self._tool = call.function.name
        self._operation: Operation | None = None
        self._found: ToolSpan | None = None
        telemetry = current()
        if telemetry is None:
            return
        attributes = _call_attributes(self._tool)
        self._found = tool_span(call.id)
        if self._found is not None:
            for key, value in attributes.items():
                self._found.set(key, value)
            self._operation = Operation(telemetry.without_tracer(), "", "CLIENT", {})
            return
        if telemetry.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _content.tool_arguments(call)
        self._operation = Operation(telemetry, f"{_METHOD} {self._tool}", "CLIENT", attributes)

    def __enter__(self) -> MCPClientCall:
        if self._operation is not None:
            self._operation.enter()
        return self

    def finish(self, result: ToolResult) -> None:
        """Record the call's result."""
        operation = self._operation
        if operation is None:
            return
        value = result.return_value
        if value.is_error:
            operation.fail(TOOL_ERROR, value.message or TOOL_ERROR)
        elif operation.telemetry.capture_content:
            operation.set("gen_ai.tool.call.result", _content.tool_result(value))

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        operation = self._operation
        if operation is None:
            return
        elapsed = operation.close(error)
        _record(operation, operation.telemetry.mcp_client_duration, elapsed, self._tool)


class MCPServerCall:
    """An MCP server's handling of one `tools/call`: a SERVER span under the client's."""

    __slots__ = ("_operation", "_tool")

    def __init__(self, operation: Operation | None, tool: str) -> None:
        self._operation = operation
        self._tool = tool

    def __enter__(self) -> MCPServerCall:
        if self._operation is not None:
            self._operation.enter()
        return self

    def finish(self, result: Mapping[str, Any]) -> None:
        """Record the result sent back (the `CallToolResult`'s wire form)."""
        operation = self._operation
        if operation is None:
            return
        if result.get("isError"):
            operation.fail(TOOL_ERROR, _first_text(result) or TOOL_ERROR)
        elif operation.telemetry.capture_content:
            answer = result.get("structuredContent", result.get("content"))
            operation.set("gen_ai.tool.call.result", _content.as_json(answer))

    def rpc_error(self, code: int, message: str) -> None:
        """Record the JSON-RPC error the call was answered with."""
        if self._operation is not None and self._operation.error_type is None:
            self._operation.set("rpc.response.status_code", str(code))
            self._operation.fail(str(code), message)

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        operation = self._operation
        if operation is None:
            return
        operation.leave()
        if isinstance(error, BaseException) and operation.error_type is None:
            operation.raised(error)
        elapsed = operation.end()
        _record(operation, operation.telemetry.mcp_server_duration, elapsed, self._tool)


def mcp_server_call(
    tool: str,
    meta: Mapping[str, Any] | None,
    *,
    arguments: object,
    request_id: object,
    session_id: str | None,
    protocol_version: str | None,
    transport: str,
) -> MCPServerCall:
    """The span of a `tools/call` a server handles, its parent the trace context in `meta`.

    `transport` is `network.transport`: "tcp" over HTTP, "pipe" over stdio.
    """
    telemetry = current()
    if telemetry is None or propagate is None or otel_trace is None:
        return MCPServerCall(None, tool)
    request = str(request_id) if request_id is not None else None
    ours: dict[str, Any] = {
        "mcp.session.id": session_id,
        "network.transport": transport,
        "network.protocol.name": "http" if transport == "tcp" else None,
    }
    if telemetry.capture_content:
        ours["gen_ai.tool.call.arguments"] = _content.as_json(arguments)
    sdk_span = _sdk_server_span(request)
    if sdk_span is not None:
        operation = Operation.joining(telemetry, sdk_span)
        for key, value in ours.items():
            operation.set(key, value)
        return MCPServerCall(operation, tool)
    ambient = otel_trace.get_current_span().get_span_context()
    links = [otel_trace.Link(ambient)] if ambient.is_valid else []
    attributes: dict[str, Any] = {
        **_call_attributes(tool),
        "jsonrpc.request.id": request,
        "mcp.protocol.version": protocol_version,
        **ours,
    }
    operation = Operation(
        telemetry,
        f"{_METHOD} {tool}",
        "SERVER",
        attributes,
        parent=propagate.extract(dict(meta or {})),
        links=links,
    )
    return MCPServerCall(operation, tool)


def _sdk_server_span(request_id: str | None) -> Any | None:
    """The MCP SDK's server span of this request, when it records.

    Read through the SDK's `ReadableSpan.attributes`: its `mcp.method.name` and
    `jsonrpc.request.id`.
    """
    if otel_trace is None or request_id is None:
        return None
    span = otel_trace.get_current_span()
    attributes: object = getattr(span, "attributes", None)
    if not span.is_recording() or not isinstance(attributes, Mapping):
        return None
    found = cast(Mapping[str, Any], attributes)
    if found.get("mcp.method.name") == _METHOD and found.get("jsonrpc.request.id") == request_id:
        return span
    return None


def _call_attributes(tool: str) -> dict[str, Any]:
    """What every `tools/call` span and measurement says: the method, the tool, the operation."""
    return {
        "mcp.method.name": _METHOD,
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
    }


def _record(operation: Operation, histogram: Any | None, elapsed: float, tool: str) -> None:
    if histogram is None:
        return
    attributes = _call_attributes(tool)
    if operation.error_type is not None:
        attributes["error.type"] = operation.error_type
    histogram.record(elapsed, attributes)


def _peer(where: str) -> dict[str, Any]:
    url = urlsplit(where)
    if url.scheme in ("http", "https") and url.hostname:
        port = url.port or (443 if url.scheme == "https" else 80)
        return {"server.address": url.hostname, "server.port": port, "network.transport": "tcp"}
    return {"network.transport": "pipe"}


def _first_text(result: Mapping[str, Any]) -> str:
    content: object = result.get("content")
    if isinstance(content, list):
        for block in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(block, dict) and block.get("type") == "text":  # pyright: ignore[reportUnknownMemberType]
                return str(block.get("text", ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return ""
