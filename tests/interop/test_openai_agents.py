"""openai-agents' MCP client (`agents.mcp.MCPServerStreamableHttp`) and kosong.

The server object is driven as the agent's runner drives it, without a model: it lists the
tools of `kosong serve --token` (the token in the headers it is given), calls one, and the
SDK's own conversion (`MCPUtil.invoke_mcp_tool`) makes of the result what the model reads.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from mcp.types import TextContent

from tests.interop.conftest import TOKEN

# openai-agents is imported where it is used: it takes a second to load, and the quick loop
# (`-m "not external"`) collects this module only to leave its tests out.
if TYPE_CHECKING:
    from agents.mcp import MCPServerStreamableHttp

pytestmark = pytest.mark.interop


def server(url: str, *, structured: bool = False) -> MCPServerStreamableHttp:
    from agents.mcp import MCPServerStreamableHttp

    return MCPServerStreamableHttp(
        params={"url": url, "headers": {"Authorization": f"Bearer {TOKEN}"}, "timeout": 10},
        use_structured_content=structured, client_session_timeout_seconds=20,
    )  # fmt: skip


async def test_openai_agents_lists_and_calls_kosong_s_tools_with_the_bearer_token(
    kosong_mcp: str,
) -> None:
    from agents import RunContextWrapper
    from agents.mcp import MCPUtil

    async with server(kosong_mcp) as mcp:
        tools = {t.name: t for t in await mcp.list_tools()}
        result = await mcp.call_tool("add", {"a": 2, "b": 3})
        for_model = await MCPUtil.invoke_mcp_tool(
            mcp, tools["add"], RunContextWrapper(context=None), json.dumps({"a": 40, "b": 2})
        )
    assert {"add", "forecast"} <= set(tools)
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert result.content == [TextContent(text="5")] and not result.is_error
    assert for_model == {"type": "text", "text": "42"}  # a text part for the model


async def test_openai_agents_reads_a_structured_result(kosong_mcp: str) -> None:
    from agents import RunContextWrapper
    from agents.mcp import MCPUtil

    async with server(kosong_mcp, structured=True) as mcp:
        tools = {t.name: t for t in await mcp.list_tools()}
        result = await mcp.call_tool("forecast", {"city": "Oslo"})
        for_model = await MCPUtil.invoke_mcp_tool(
            mcp, tools["forecast"], RunContextWrapper(context=None), '{"city": "Lima"}'
        )
    assert tools["forecast"].output_schema is not None
    assert result.structured_content == {"city": "Oslo", "high": 21, "sky": "clear"}
    # With use_structured_content, the SDK hands the model structuredContent, as JSON text.
    assert isinstance(for_model, str)
    assert json.loads(for_model) == {"city": "Lima", "high": 21, "sky": "clear"}
