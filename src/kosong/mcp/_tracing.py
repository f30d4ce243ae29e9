"""The MCP side of kosong's telemetry: what a `tools/call`'s span reads from the SDK.

`traced_tools_call(handler)` wraps `MCPToolServer`'s `tools/call` handler in the SERVER span of
the MCP conventions (`kosong._telemetry`'s `mcp_server_call`): the client's trace context comes
from the request's `_meta`, the session from the `Mcp-Session-Id` header, the transport from
how the request came (HTTP: `tcp`; stdio: `pipe`). While telemetry is off it calls the handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as mcp
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from kosong import _telemetry

__all__ = ["traced_tools_call"]

Handler = Callable[
    [ServerRequestContext[Any, Any], mcp.CallToolRequestParams], Awaitable[dict[str, Any]]
]


def traced_tools_call(handler: Handler) -> Handler:
    """`handler` (a server's `tools/call`) inside its MCP server span."""

    async def handle(
        ctx: ServerRequestContext[Any, Any], params: mcp.CallToolRequestParams
    ) -> dict[str, Any]:
        if _telemetry.current() is None:
            return await handler(ctx, params)
        headers: Any = getattr(ctx.request, "headers", None)
        session: object = headers.get("mcp-session-id") if headers is not None else None
        traced = _telemetry.mcp_server_call(
            params.name,
            ctx.meta,
            arguments=params.arguments,
            request_id=ctx.request_id,
            session_id=session if isinstance(session, str) else None,
            protocol_version=ctx.protocol_version,
            transport="tcp" if headers is not None else "pipe",
        )
        with traced:
            try:
                result = await handler(ctx, params)
            except MCPError as e:
                traced.rpc_error(e.code, e.error.message)
                raise
            traced.finish(result)
            return result

    return handle
