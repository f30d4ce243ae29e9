"""pydantic-ai's MCP client (`pydantic_ai.mcp.MCPToolset`, on FastMCP's client) and kosong.

An agent whose model is a `FunctionModel` (no LLM: the function decides each turn) lists the
tools of `kosong serve --token`, calls one, and gets its result; a tool declaring an output
schema gives a structured result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.interop.conftest import TOKEN

# pydantic-ai is imported where it is used: it takes seconds to load, and the quick loop
# (`-m "not external"`) collects this module only to leave its tests out.
if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel

pytestmark = pytest.mark.interop


def calling(name: str, args: dict[str, Any], seen: dict[str, Any]) -> FunctionModel:
    """A model that calls `name` once, then answers with what the tool returned."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def turn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["tools"] = {t.name: t for t in info.function_tools}
        returned = [p for m in messages for p in getattr(m, "parts", [])
                    if isinstance(p, ToolReturnPart)]  # fmt: skip
        if not returned:
            return ModelResponse(parts=[ToolCallPart(name, args)])
        seen["returned"] = returned[-1].content
        return ModelResponse(parts=[TextPart(f"got {returned[-1].content}")])

    return FunctionModel(turn)


async def test_an_agent_lists_and_calls_kosong_s_tools_with_the_bearer_token(
    kosong_mcp: str,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    seen: dict[str, Any] = {}
    toolset = MCPToolset(kosong_mcp, headers={"Authorization": f"Bearer {TOKEN}"})
    agent = Agent(calling("add", {"a": 2, "b": 3}, seen), toolsets=[toolset])
    async with agent:
        result = await agent.run("add 2 and 3")
    assert {"add", "forecast"} <= set(seen["tools"])
    assert seen["tools"]["add"].parameters_json_schema["required"] == ["a", "b"]
    # `add` is an `-> int` function tool: its output schema makes the result the number itself.
    assert seen["returned"] == 5 and result.output == "got 5"


async def test_a_tool_with_an_output_schema_gives_pydantic_ai_a_structured_result(
    kosong_mcp: str,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    seen: dict[str, Any] = {}
    toolset = MCPToolset(kosong_mcp, headers={"Authorization": f"Bearer {TOKEN}"})
    agent = Agent(calling("forecast", {"city": "Oslo"}, seen), toolsets=[toolset])
    async with agent:
        await agent.run("the weather in Oslo")
        # FastMCP's client (under the toolset) checks structuredContent against outputSchema.
        raw = await toolset.client.call_tool("forecast", {"city": "Oslo"})
    assert seen["returned"] == {"city": "Oslo", "high": 21, "sky": "clear"}
    assert raw.structured_content == {"city": "Oslo", "high": 21, "sky": "clear"}
    assert not raw.is_error


async def test_without_the_token_pydantic_ai_cannot_connect(kosong_mcp: str) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    toolset = MCPToolset(kosong_mcp)
    agent = Agent(calling("add", {"a": 1, "b": 1}, {}), toolsets=[toolset])
    # The SDK under FastMCP reports the 401 as a bare "Server returned an error response".
    with pytest.raises(MCPError, match="error response"):
        async with agent:
            await agent.run("add")
