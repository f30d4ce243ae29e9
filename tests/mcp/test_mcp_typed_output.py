"""One typed output on every path: a tool's return is the same value wherever it is read.

A `-> int` tool's 3 is the envelope's `data` 3 (not the text "3") locally, over REST and SSE,
and through kosong's own clients (`RemoteToolset`, `MCPToolset`, over a plain MCP call and an
MCP task); a `-> str` tool's text reads as that text everywhere; over MCP the value is
`structuredContent` (`{"result": 3}`, the SDK's and FastMCP's wrapping, marked) beside the
text the model reads (modelcontextprotocol.io/specification/2025-11-25/server/tools).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest

from kosong.mcp import MCPToolset
from kosong.mcp._task_client import CreateTaskResult, TasksClient
from kosong.message import ToolCall
from kosong.remote import RemoteToolset
from kosong.server import create_app, serving
from kosong.standard import structured_data, to_envelope, with_policies
from kosong.standard.policies import TimeoutPolicy
from kosong.tooling import Toolset, tool
from kosong.tooling.simple import SimpleToolset
from mcp import Client
from tests.server._sse import read_sse


@tool
def count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@tool(streaming=True)
async def greet(name: str) -> str:
    """Greet someone (long enough to run as an MCP task)."""
    await asyncio.sleep(0)
    return f"hello {name}"


@tool(streaming=True)
async def squares(n: int) -> list[int]:
    """The first n squares (long enough to run as an MCP task)."""
    await asyncio.sleep(0)
    return [i * i for i in range(n)]


CALLS: list[tuple[str, dict[str, Any], Any, str]] = [
    ("count", {"text": "one two three"}, 3, "3"),
    ("greet", {"name": "Ada"}, "hello Ada", "hello Ada"),
    ("squares", {"n": 3}, [0, 1, 4], "[0,1,4]"),
]


def call(name: str, arguments: dict[str, Any]) -> ToolCall:
    body = ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments))
    return ToolCall(id=f"c-{name}", function=body)


def toolset() -> SimpleToolset:
    return SimpleToolset([count, greet, squares])


@pytest.fixture
async def base() -> AsyncGenerator[str]:
    async with serving(create_app(with_policies(toolset(), TimeoutPolicy(30)), mcp=True)) as url:
        yield url


async def _read_all(tools: Toolset) -> list[tuple[Any, Any]]:
    seen: list[tuple[Any, Any]] = []
    for name, arguments, _, _ in CALLS:
        result = await tools.handle(call(name, arguments))
        assert not result.return_value.is_error, result.return_value.message
        seen.append((to_envelope(result, tool_name=name).data, result.return_value.output))
    return seen


EXPECTED = [(data, text) for _, _, data, text in CALLS]


async def test_locally() -> None:
    assert await _read_all(with_policies(toolset(), TimeoutPolicy(30))) == EXPECTED


async def test_over_rest_and_sse(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        for name, arguments, data, _ in CALLS:
            posted = await client.post(f"/tools/{name}", json=arguments)
            streamed = await read_sse(client, "POST", f"/tools/{name}/sse", json=arguments)
            assert posted.json()["data"] == data
            assert streamed.final["data"] == data


async def test_through_remote_toolset(base: str) -> None:
    async with RemoteToolset(base) as remote:
        assert await _read_all(remote) == EXPECTED


async def test_through_mcp_toolset_plain_calls_and_tasks(base: str) -> None:
    # MCPToolset declares the tasks extension: the streaming tools run as MCP tasks of the
    # server's runs, the others as plain calls; the values are the same.
    async with MCPToolset({"kosong": f"{base}/mcp"}) as tools:
        assert tools.errors == {}
        assert await _read_all(tools) == EXPECTED
        counted = await tools.handle(call("count", {"text": "a b"}))
    assert structured_data(counted.return_value) == 2


async def test_the_official_client_gets_the_marked_wrapper(base: str) -> None:
    async with Client(f"{base}/mcp") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        counted = await client.call_tool("count", {"text": "one two three"})
    schema = listed["count"].output_schema
    assert schema is not None and schema["x-fastmcp-wrap-result"] is True
    assert counted.structured_content == {"result": 3}
    assert counted.content[0].text == "3"  # pyright: ignore[reportAttributeAccessIssue]


async def test_a_streaming_tool_called_by_a_client_of_the_tasks_extension_runs_as_a_task(
    base: str,
) -> None:
    # What MCPToolset's calls of `greet` and `squares` above went through: a task handle.
    async with Client(f"{base}/mcp", extensions=[TasksClient()]) as client:
        handle = await client.session.call_tool("squares", {"n": 3}, allow_claimed=True)
        assert isinstance(handle, CreateTaskResult)
        final = await client.call_tool("squares", {"n": 3})  # followed to its end
    assert final.structured_content == {"result": [0, 1, 4]}
