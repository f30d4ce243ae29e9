"""Calling tools that run as MCP tasks (2025-11-25), against the reference everything server.

The everything server (pinned in .ci/mcp-tools) lists `simulate-research-query` with
`execution.taskSupport: "required"` and declares `tasks.requests.tools.call`: per the
specification's tasks page (modelcontextprotocol.io/specification/2025-11-25/basic/utilities/
tasks, "Tool-Level Negotiation") a client MUST call it as a task, and the server answers any
other call -32601. Its task goes through four stages of a second each, with a status message
for each; asked to (`ambiguous`), it moves to `input_required` and sends an elicitation that
the client answers through `tasks/result`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import mcp_types as mcp
import pytest
from mcp.client.stdio import stdio_client

from kosong.mcp import ElicitationRequest, MCPToolset, ServerSpec
from kosong.mcp._task_client import call_as_task, task_transport
from kosong.message import ToolCall
from kosong.standard import ElicitAnswer, PolicyToolset, ToolEvent
from mcp import Client
from tests._local import free_port
from tests.mcp._mcp_servers import serving_command
from tests.mcp._node_tools import EVERYTHING, NODE, require

pytestmark = pytest.mark.external  # the reference `everything` server from npx


def _serve(mode: str) -> Iterator[str]:
    require(EVERYTHING)
    port = free_port()
    argv = [str(NODE), str(EVERYTHING), mode]
    env = {**os.environ, "PORT": str(port)}
    with serving_command(argv, port, env=env, stdout=subprocess.DEVNULL) as url:
        yield url


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from _serve("streamableHttp")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    for url in _serve("sse"):
        yield url.removesuffix("/mcp") + "/sse"


@pytest.fixture(params=["stdio", "http", "sse"])
def everything(request: pytest.FixtureRequest) -> ServerSpec:
    if request.param == "stdio":
        require(EVERYTHING)
        return ServerSpec(command=[str(NODE), str(EVERYTHING), "stdio"])
    return ServerSpec(url=request.getfixturevalue(f"{request.param}_url"))


def research(**arguments: Any) -> ToolCall:
    body = ToolCall.FunctionBody(name="simulate-research-query", arguments=json.dumps(arguments))
    return ToolCall(id="c1", function=body)


async def test_a_tool_that_requires_a_task_is_called_as_one_with_its_status_as_progress(
    everything: ServerSpec,
) -> None:
    async with MCPToolset({"everything": everything}, connect_timeout=30) as toolset:
        tool = toolset.find_tool("simulate-research-query")
        assert tool is not None and getattr(tool, "task_support", None) == "required"
        events: list[ToolEvent] = []
        async with PolicyToolset(toolset).stream(research(topic="tides")) as stream:
            async for event in stream:
                events.append(event)
    final = events[-1]
    assert final.event == "tool_result", final.data
    assert str(final.data["data"]).startswith("# Research Report: tides")
    progress = [e.data for e in events if e.event == "tool_progress"]
    # Each new status message, once, as progress without a percentage (a task has no total).
    messages = [p["message"] for p in progress]
    assert messages[0] == "Gathering sources..." and len(set(messages)) == len(messages)
    stages = {"Gathering sources...", "Analyzing content...", "Synthesizing findings...",
              "Generating report..."}  # fmt: skip
    assert set(messages) <= stages
    assert all("progress" not in p for p in progress)


async def test_a_tasks_input_request_reaches_the_elicitation_callback(
    everything: ServerSpec,
) -> None:
    asked: list[ElicitationRequest] = []

    async def clarify(request: ElicitationRequest) -> ElicitAnswer:
        asked.append(request)
        return ElicitAnswer.accept({"interpretation": "historical"})

    async with MCPToolset({"everything": everything}, elicitation=clarify) as toolset:
        result = await toolset.handle(research(topic="tides", ambiguous=True))
    assert str(result.return_value.output).startswith("# Research Report: tides (historical)")
    assert asked[0].message.startswith('The research query "tides" could have')
    assert asked[0].schema is not None and asked[0].schema["required"] == ["interpretation"]


async def test_a_cancelled_caller_cancels_the_task_on_the_server() -> None:
    require(EVERYTHING)
    spec = ServerSpec(command=[str(NODE), str(EVERYTHING), "stdio"])
    statuses: list[str | None] = []
    started = asyncio.Event()

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        statuses.append(message)
        started.set()

    async with Client(task_transport(stdio_client(spec.stdio()))) as client:
        call = asyncio.ensure_future(
            call_as_task(
                client.session,
                "simulate-research-query",
                {"topic": "tides"},
                progress=progress,
                meta=None,
            )
        )
        async with asyncio.timeout(20):
            await started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        listed = await client.session.send_request(mcp.ListTasksRequest(), mcp.ListTasksResult)
    assert statuses[0] == "Gathering sources..."
    assert [task.status for task in listed.tasks] == ["cancelled"]


async def test_only_tools_that_allow_tasks_are_called_as_tasks() -> None:
    require(EVERYTHING)
    spec = ServerSpec(command=[str(NODE), str(EVERYTHING), "stdio"])
    async with MCPToolset({"e": spec}, tasks="optional") as toolset:
        supports = {t.name: getattr(t, "task_support", None) for t in toolset.tools}
        echoed = await toolset.handle(
            ToolCall(
                id="c", function=ToolCall.FunctionBody(name="echo", arguments='{"message": "hi"}')
            )
        )
    assert supports["simulate-research-query"] == "required"
    assert supports["echo"] == "forbidden"  # never a task, whatever the toolset is told
    assert echoed.return_value.output == "Echo: hi"
    with pytest.raises(ValueError, match='tasks must be "required" or "optional"'):
        MCPToolset({"e": spec}, tasks="always")  # type: ignore[arg-type]
