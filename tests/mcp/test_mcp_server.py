"""MCPToolServer over real HTTP, with the official `mcp` client on the other end, both eras."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import mcp_types as mcp
import pytest
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from kosong.mcp import MCPToolServer
from kosong.standard import report_progress
from kosong.tooling import CallableTool, ToolOk, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset
from mcp import Client
from tests.mcp._mcp_servers import Probe, Uvicorn, kosong_toolset

MODES = ["auto", "legacy"]  # auto negotiates the 2026-07-28 era with our server


class Weather(CallableTool):
    name: str = "weather"
    description: str = "The weather of a city."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    output_schema: dict[str, Any] | None = {
        "type": "object",
        "properties": {"temperature": {"type": "number"}},
        "required": ["temperature"],
    }

    async def __call__(self, city: str) -> ToolReturnValue:
        return ToolOk(output=json.dumps({"temperature": 21.5}))


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
async def server(probe: Probe):
    toolset = kosong_toolset(probe).add(Weather())
    mcp_server = MCPToolServer(toolset, name="kosong-test", version="1.2.3")
    async with Uvicorn(mcp_server.app()) as running:
        running.mcp = mcp_server  # type: ignore[attr-defined]
        yield running


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_gives_schemas_annotations_and_output_schema(server: Uvicorn, mode: str):
    async with Client(server.url, mode=mode) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {
        "add", "slow", "wait_forever", "boom", "limited", "shout", "reconnect", "weather"
    }  # fmt: skip
    add = listed["add"]
    assert add.input_schema["required"] == ["a", "b"]
    assert add.annotations == mcp.ToolAnnotations(
        title="Adder", read_only_hint=True, idempotent_hint=True
    )
    assert add.title == "Adder"
    assert listed["boom"].annotations is None
    assert listed["weather"].output_schema == Weather().output_schema
    assert listed["add"].output_schema is None


@pytest.mark.parametrize("mode", MODES)
async def test_call_runs_the_tool_and_gives_structured_content_where_declared(
    server: Uvicorn, mode: str
):
    async with Client(server.url, mode=mode) as client:
        added = await client.call_tool("add", {"a": 2, "b": 40})
        weather = await client.call_tool("weather", {"city": "Paris"})
    assert added.content == [mcp.TextContent(text="42")]
    assert not added.is_error
    assert added.structured_content is None
    assert weather.structured_content == {"temperature": 21.5}


@pytest.mark.parametrize("mode", MODES)
async def test_a_raising_tool_is_an_is_error_result_not_a_protocol_error(
    server: Uvicorn, mode: str
):
    async with Client(server.url, mode=mode) as client:
        result = await client.call_tool("boom", {})
        invalid = await client.call_tool("add", {"a": "two", "b": 1})
    assert result.is_error
    assert result.content == [mcp.TextContent(text="Error running tool: RuntimeError: kaput")]
    assert result.meta is not None and result.meta["kosong/error"] == {"code": "EXECUTION_ERROR"}
    assert invalid.is_error
    text = invalid.content[0]
    assert isinstance(text, mcp.TextContent) and "a" in text.text and "integer" in text.text


@pytest.mark.parametrize("mode", MODES)
async def test_error_codes_travel_in_meta(server: Uvicorn, mode: str):
    async with Client(server.url, mode=mode) as client:
        result = await client.call_tool("limited", {})
    assert result.is_error
    assert result.meta is not None and result.meta["kosong/error"] == {"code": "RATE_LIMITED"}


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_invalid_params(server: Uvicorn, mode: str):
    async with Client(server.url, mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("nope", {})
    assert caught.value.code == mcp.INVALID_PARAMS
    assert "nope" in caught.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_report_progress_reaches_the_client(server: Uvicorn, mode: str):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server.url, mode=mode) as client:
        result = await client.call_tool("slow", {"steps": 4}, progress_callback=on_progress)
    assert result.content == [mcp.TextContent(text="done")]
    assert seen == [(25.0, 100.0, "step 1"), (50.0, 100.0, "step 2"), (75.0, 100.0, "step 3"),
                    (100.0, 100.0, "step 4")]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
async def test_progress_without_a_percentage_reaches_the_client_without_a_total(mode: str):
    @tool
    async def search(pages: int) -> str:
        """Search, not knowing how far it is."""
        for page in range(pages):
            report_progress(None, f"page {page + 1}")
            await asyncio.sleep(0)
        return "found"

    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with (
        Uvicorn(MCPToolServer(SimpleToolset([search])).app()) as running,
        Client(running.url, mode=mode) as client,
    ):
        await client.call_tool("search", {"pages": 2}, progress_callback=on_progress)
    # MCP's progress without a total only grows: a count, never a percentage.
    assert seen == [(1.0, None, "page 1"), (2.0, None, "page 2")]


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_request_cancels_the_tool(server: Uvicorn, probe: Probe, mode: str):
    async with Client(server.url, mode=mode) as client:
        call = asyncio.create_task(client.call_tool("wait_forever", {}))
        async with asyncio.timeout(10):
            await probe.started.wait()
        call.cancel()
        async with asyncio.timeout(10):
            await probe.cancelled.wait()
        with pytest.raises(asyncio.CancelledError):
            await call


async def test_tools_list_changed_reaches_handshake_sessions(server: Uvicorn):
    changed = asyncio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, mcp.ToolListChangedNotification):
            changed.set()

    mcp_server: MCPToolServer = server.mcp  # type: ignore[attr-defined]
    async with Client(server.url, mode="legacy", message_handler=on_message) as client:
        caps = client.server_capabilities.tools
        assert caps is not None and caps.list_changed
        await client.list_tools()  # the session is known from its first requests on
        await mcp_server.notify_tools_changed()
        async with asyncio.timeout(10):
            await changed.wait()


async def test_tools_list_changed_reaches_2026_listen_streams(server: Uvicorn):
    mcp_server: MCPToolServer = server.mcp  # type: ignore[attr-defined]
    async with Client(server.url) as client:
        caps = client.server_capabilities.tools
        assert caps is not None and caps.list_changed
        async with client.listen(tools_list_changed=True) as subscription:
            await mcp_server.notify_tools_changed()
            async with asyncio.timeout(10):
                event = await anext(aiter(subscription))
    assert type(event).__name__ == "ToolsListChanged"


async def test_a_new_tool_shows_in_the_next_listing(server: Uvicorn):
    mcp_server: MCPToolServer = server.mcp  # type: ignore[attr-defined]
    toolset = mcp_server.toolset.wrapped
    assert isinstance(toolset, SimpleToolset)
    async with Client(server.url) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        toolset.remove("boom")
        await mcp_server.notify_tools_changed()
        after = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
    assert before - after == {"boom"}


@pytest.mark.parametrize(
    "headers",
    [{"Host": "evil.example.com"}, {"Origin": "http://evil.example.com"}],
    ids=["host", "origin"],
)
async def test_dns_rebinding_protection_refuses_foreign_host_and_origin(
    server: Uvicorn, headers: dict[str, str]
):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        refused = await http.post(server.url, json=body, headers={**accept, **headers})
        accepted = await http.post(server.url, json=body, headers=accept)
    assert 400 <= refused.status_code < 500
    assert accepted.status_code == 200


async def test_routes_answer_503_until_the_lifespan_runs():
    mcp_server = MCPToolServer(SimpleToolset())
    from starlette.applications import Starlette

    app = Starlette(routes=mcp_server.routes())  # mounted without its lifespan
    async with (
        Uvicorn(app) as running,
        httpx.AsyncClient(timeout=10) as http,
    ):
        response = await http.post(running.url, json={})
    assert response.status_code == 503
    assert "lifespan" in response.json()["error"]


async def test_the_lifespan_can_run_again_after_it_ended():
    mcp_server = MCPToolServer(kosong_toolset())
    for _ in range(2):
        async with Uvicorn(mcp_server.app()) as running, Client(running.url) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0] == mcp.TextContent(
                text="2"
            )
