"""Composition wrappers around a real MCPToolset (the servers of tests/mcp/conftest.py)."""

from __future__ import annotations

import asyncio

from kosong.mcp import MCPToolset
from kosong.message import ToolCall
from kosong.standard import with_policies
from kosong.standard.policies import TimeoutPolicy
from kosong.tooling import ToolResult, Toolset, combined
from kosong.tooling.error import ToolNotFoundError, ToolTimeoutError, ToolValidateError
from kosong.tooling.simple import SimpleToolset
from tests.mcp._mcp_servers import Probe, Uvicorn
from tests.tooling.test_composition import Named


def call(name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id="the-call", function=ToolCall.FunctionBody(name=name, arguments=arguments))


async def run(toolset: Toolset, name: str, arguments: str = "{}") -> ToolResult:
    async with asyncio.timeout(20):
        result = await toolset.handle(call(name, arguments))
    assert result.tool_call_id == "the-call"
    return result


async def test_an_mcp_toolset_filtered_and_prefixed_shows_and_calls_only_what_is_kept(
    sdk: Uvicorn,
) -> None:
    async with MCPToolset({"sdk": sdk.url}) as servers:
        toolset = servers.filtered(["search", "add"]).prefixed("web_")
        assert [t.name for t in toolset.tools] == ["web_add", "web_search"]
        found = await run(toolset, "web_search", '{"q": "kosong"}')
        added = await run(toolset, "web_add", '{"a": 2, "b": 3}')
        hidden = await run(toolset, "web_fail")
        bare = await run(toolset, "search", '{"q": "kosong"}')
        invalid = await run(toolset, "web_add", '{"a": "two", "b": 3}')
    assert found.return_value.output == "sdk results for kosong"
    assert added.return_value.output == "5"
    assert isinstance(hidden.return_value, ToolNotFoundError)
    assert isinstance(bare.return_value, ToolNotFoundError)
    # The MCP tool's own schema still checks the arguments, before anything is sent.
    assert isinstance(invalid.return_value, ToolValidateError)


async def test_mcp_servers_and_local_tools_combined_with_their_clash_renamed(
    ours: Uvicorn, sdk: Uvicorn
) -> None:
    async with MCPToolset({"sdk": sdk.url}) as servers:
        local = SimpleToolset([Named(name="search", description="A local search.")])
        toolset = combined(servers.renamed({"search": "web_search"}), local)
        names = [t.name for t in toolset.tools]
        assert "web_search" in names and names.count("search") == 1
        remote = await run(toolset, "web_search", '{"q": "mcp"}')
        here = await run(toolset, "search", '{"n": 4}')
    assert remote.return_value.output == "sdk results for mcp"
    assert here.return_value.output == "search:4"


async def test_a_timeout_around_a_wrapped_mcp_toolset_cancels_the_call_on_the_server(
    ours: Uvicorn, probe: Probe
) -> None:
    async with MCPToolset({"ours": ours.url}) as servers:
        pipeline = with_policies(servers.prefixed("ours_"), TimeoutPolicy(0.5))
        result = await run(pipeline, "ours_wait_forever")
        async with asyncio.timeout(10):
            await probe.cancelled.wait()  # the server's tool was cancelled for real
    assert isinstance(result.return_value, ToolTimeoutError)
