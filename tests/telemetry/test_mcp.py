"""MCP's spans on both sides, in one process: the client's trace context crosses in `_meta`.

The server is `MCPToolServer` over HTTP (uvicorn); the client `MCPToolset` (the official SDK's
client underneath), or a request written by hand with the conventions' own example of
`params._meta` (mcp.md, "Context propagation").
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from kosong import step
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.mcp import MCPToolServer, MCPToolset
from kosong.message import Message
from kosong.testing import make_call
from tests.mcp._mcp_http import Session
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset
from tests.telemetry._recorded import Recorded, attrs, parent_of, span_id, trace_id

HI = [Message(role="user", content="Add 1 and 2.")]


@pytest.fixture
async def server() -> AsyncIterator[Uvicorn]:
    async with Uvicorn(MCPToolServer(kosong_toolset(), name="ours").app()) as running:
        yield running


async def test_a_call_step_dispatches_carries_its_span_to_the_servers(
    server: Uvicorn, otel: Recorded
) -> None:
    async with MCPToolset({"ours": server.url}) as toolset:
        provider = ScriptedChatProvider([[call("add", {"a": 1, "b": 2}, id="c1")]])
        result = await step(provider, "", toolset, HI)
        (answer,) = await result.tool_results()
        assert answer.return_value.output == "3"
        await otel.ended(3)
    client = otel.span("execute_tool add")
    served = otel.span("tools/call add")
    # No MCP client span of its own: the MCP attributes are on the tool call's span (mcp.md:
    # "SHOULD NOT create a separate span").
    assert not [s for s in otel.spans if s.kind == SpanKind.CLIENT]
    port = int(server.url.split(":")[2].split("/")[0])
    attributes = attrs(client)
    assert {k: attributes[k] for k in ("mcp.method.name", "server.address", "server.port")} == {
        "mcp.method.name": "tools/call",
        "server.address": "127.0.0.1",
        "server.port": port,
    }
    assert attributes["network.transport"] == "tcp"
    assert served.kind == SpanKind.SERVER
    assert parent_of(served) == span_id(client) and trace_id(served) == trace_id(client)
    served_attributes = attrs(served)
    assert served_attributes["mcp.method.name"] == "tools/call"
    assert served_attributes["gen_ai.tool.name"] == "add"
    assert served_attributes["gen_ai.operation.name"] == "execute_tool"
    assert served_attributes["network.transport"] == "tcp"
    assert served_attributes["network.protocol.name"] == "http"
    assert isinstance(served_attributes["jsonrpc.request.id"], str)
    assert served_attributes["mcp.protocol.version"]
    (client_duration,) = otel.points("mcp.client.operation.duration")
    (server_duration,) = otel.points("mcp.server.operation.duration")
    assert (
        dict(client_duration.attributes)
        == dict(server_duration.attributes)
        == {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "add",
            "gen_ai.operation.name": "execute_tool",
        }
    )


async def test_a_call_outside_a_traced_tool_call_gets_an_mcp_client_span(
    server: Uvicorn, otel: Recorded
) -> None:
    async with MCPToolset({"ours": server.url}) as toolset:
        result = await toolset.handle(make_call("boom", {}))
        assert result.return_value.is_error
        await otel.ended(2)
    (client,) = [s for s in otel.spans if s.kind == SpanKind.CLIENT]
    (served,) = [s for s in otel.spans if s.kind == SpanKind.SERVER]
    assert client.name == served.name == "tools/call boom"
    assert parent_of(served) == span_id(client)
    for span in (client, served):  # an isError result (mcp.md: `tool_error`)
        assert attrs(span)["error.type"] == "tool_error"
        assert span.status.status_code == StatusCode.ERROR


async def test_the_server_takes_its_parent_from_params_meta_as_the_conventions_show(
    server: Uvicorn, otel: Recorded
) -> None:
    # The example of mcp.md, "Context propagation": traceparent and tracestate in _meta.
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with httpx.AsyncClient() as http:
        session = await Session(http, server.url).open()
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "add",
                "arguments": {"a": 1, "b": 2},
                "_meta": {"traceparent": traceparent, "tracestate": "rojo=00f067aa0ba902b7"},
            },
        }
        response = await http.post(session.url, json=body, headers=session.headers())
        assert response.status_code == 200
        await otel.ended(1)
    served = otel.span("tools/call add")
    assert f"{trace_id(served):032x}" == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert served.parent is not None and served.parent.is_remote
    assert f"{served.parent.span_id:016x}" == "00f067aa0ba902b7"
    attributes = attrs(served)
    assert attributes["jsonrpc.request.id"] == "7"
    assert attributes["mcp.session.id"] == session.id
