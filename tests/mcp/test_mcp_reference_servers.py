"""What the model reads of real servers' results, and what their clients read of ours.

The expected values come from the MCP specification's tools page
(modelcontextprotocol.io/specification/2025-11-25/server/tools, "Tool Result"): a result's
`content` blocks (text, image, audio, resource links, embedded resources) are the result, and
`structuredContent` is the same data as JSON beside them ("a tool that returns structured
content SHOULD also return the serialized JSON in a TextContent block"). So the model reads
the content, never base64 as text, and the structured content is the result's data.

Servers, started as their users start them: the reference filesystem and memory servers from
npm (pinned in .ci/mcp-tools), `mcp-server-time` from the package index (`python -m
mcp_server_time`), and a FastMCP server (`python _fastmcp_server.py`); FastMCP's client
against kosong's server.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient

from kosong.mcp import MCPToolServer, MCPToolset, ServerSpec
from kosong.message import ImageURLPart, ToolCall
from kosong.standard import PolicyToolset, structured_data, to_envelope
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset
from tests.mcp._mcp_servers import HERE, Uvicorn
from tests.mcp._node_tools import FILESYSTEM, MEMORY, NODE, require

# A 2x1 PNG (red, blue), written out byte by byte.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAH+gH/Zv7p2QAAAABJRU5ErkJggg=="
)


def call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(
        id="c1", function=ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments))
    )


@pytest.fixture
async def files(tmp_path: Path) -> AsyncIterator[MCPToolset]:
    require(FILESYSTEM)
    (tmp_path / "pixel.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("line one\nline two\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 64)
    spec = ServerSpec(command=[str(NODE), str(FILESYSTEM), str(tmp_path)])
    async with MCPToolset({"files": spec}, connect_timeout=30) as toolset:
        assert toolset.errors == {}
        yield toolset


@pytest.mark.external  # the filesystem server on Node
async def test_an_image_file_reaches_the_model_as_an_image_never_as_base64_text(
    files: MCPToolset, tmp_path: Path
) -> None:
    value = await files.handle(call("read_media_file", {"path": str(tmp_path / "pixel.png")}))
    output = value.return_value.output
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert output == [ImageURLPart(image_url=ImageURLPart.ImageURL(url=url))]
    # The server's structuredContent is kept as the data, beside what the model reads.
    assert structured_data(value.return_value) == {
        "content": [
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}
        ]
    }


@pytest.mark.external  # the filesystem server on Node
async def test_a_binary_file_is_named_for_the_model_not_spelled_out(
    files: MCPToolset, tmp_path: Path
) -> None:
    value = await files.handle(call("read_media_file", {"path": str(tmp_path / "blob.bin")}))
    output = value.return_value.output
    name = (tmp_path / "blob.bin").as_uri()
    assert output == f"[binary resource {name} (application/octet-stream, 16384 bytes)]"


@pytest.mark.external  # the filesystem server on Node
async def test_a_text_file_reads_as_its_text(files: MCPToolset, tmp_path: Path) -> None:
    value = await files.handle(call("read_text_file", {"path": str(tmp_path / "notes.txt")}))
    assert value.return_value.output == "line one\nline two\n"
    assert structured_data(value.return_value) == {"content": "line one\nline two\n"}
    assert to_envelope(value, tool_name="read_text_file").data == {
        "content": "line one\nline two\n"
    }


@pytest.mark.external  # the memory server on Node
async def test_the_memory_servers_graph_is_text_for_the_model_and_data_beside(
    tmp_path: Path,
) -> None:
    require(MEMORY)
    spec = ServerSpec(
        command=[str(NODE), str(MEMORY)], env={"MEMORY_FILE_PATH": str(tmp_path / "graph.jsonl")}
    )
    ada = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    async with MCPToolset({"memory": spec}, connect_timeout=30) as toolset:
        made = await toolset.handle(call("create_entities", {"entities": [ada]}))
        graph = await toolset.handle(call("read_graph", {}))
    assert not made.return_value.is_error, made.return_value.message
    data = structured_data(graph.return_value)
    assert isinstance(data, dict) and data["entities"] == [ada]
    output = graph.return_value.output
    assert isinstance(output, str) and json.loads(output)["entities"][0]["name"] == "Ada"


@pytest.mark.external  # `python -m mcp_server_time`
async def test_mcp_server_time_gives_its_typed_answer_as_the_data() -> None:
    spec = ServerSpec(command=[sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with MCPToolset({"time": spec}, connect_timeout=30) as toolset:
        tool_ = toolset.find_tool("convert_time")
        arguments = {
            "source_timezone": "Europe/Paris",
            "time": "12:00",
            "target_timezone": "Asia/Tokyo",
        }
        value = (await toolset.handle(call("convert_time", arguments))).return_value
    assert tool_ is not None and tool_.output_schema is not None
    data: Any = structured_data(value)
    assert isinstance(data, dict) and data["time_difference"] == "+8.0h"
    assert str(data["target"]["datetime"]).endswith("T20:00:00+09:00")
    assert isinstance(value.output, str) and json.loads(value.output) == data  # its own text


@pytest.fixture
async def fastmcp_server() -> AsyncIterator[MCPToolset]:
    spec = ServerSpec(command=[sys.executable, str(HERE / "_fastmcp_server.py")], env={
        "FASTMCP_LOG_LEVEL": "ERROR"})  # fmt: skip
    async with MCPToolset({"fast": spec}, connect_timeout=30) as toolset:
        assert toolset.errors == {}
        yield toolset


@pytest.mark.external  # a FastMCP server over stdio
async def test_a_fastmcp_string_reads_as_that_string(fastmcp_server: MCPToolset) -> None:
    greet = fastmcp_server.find_tool("greet")
    assert greet is not None and greet.output_schema == {"type": "string"}  # the wrap taken off
    value = (await fastmcp_server.handle(call("greet", {"name": "Ada"}))).return_value
    assert value.output == "hello Ada" and structured_data(value) == "hello Ada"


@pytest.mark.external  # a FastMCP server over stdio
async def test_fastmcp_typed_results_are_their_values(fastmcp_server: MCPToolset) -> None:
    added = await fastmcp_server.handle(call("add", {"a": 2, "b": 3}))
    weather = await fastmcp_server.handle(call("weather", {"city": "Oslo"}))
    assert added.return_value.output == "5" and to_envelope(added, tool_name="add").data == 5
    assert to_envelope(weather, tool_name="weather").data == {"city": "Oslo", "temperature": 21}


@pytest.mark.external  # a FastMCP server over stdio
async def test_progress_without_a_total_is_progress_without_a_percentage(
    fastmcp_server: MCPToolset,
) -> None:
    seen: list[dict[str, Any]] = []
    async with PolicyToolset(fastmcp_server).stream(call("count", {"to": 3})) as events:
        async for event in events:
            seen.append({k: v for k, v in event.data.items() if k != "metadata"})
    # FastMCP sent progress 1, 2, 3 and no total: no percentage, never "100%" after one step.
    assert [s for s in seen if "success" not in s] == [{"message": ""}] * 3
    assert seen[-1]["data"] == "counted to 3"


@tool
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def squares(n: int) -> list[int]:
    """The first n squares."""
    return [i * i for i in range(n)]


async def test_fastmcps_client_reads_kosongs_typed_tools_as_values() -> None:
    server = MCPToolServer(SimpleToolset([add_numbers, squares]))
    async with Uvicorn(server.app()) as running, FastMCPClient(running.url) as client:
        added = await client.call_tool("add_numbers", {"a": 2, "b": 3})
        squared = await client.call_tool("squares", {"n": 3})
    assert added.data == 5 and squared.data == [0, 1, 4]  # not Root(result=5)
    assert added.structured_content == {"result": 5}  # the wrapper FastMCP reads the mark of
