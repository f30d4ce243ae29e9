"""`MCPToolset` against the reference "everything" server, over stdio and streamable HTTP.

`@modelcontextprotocol/server-everything` (pinned in .ci/mcp-tools/package.json) is the MCP
project's own server exercising every feature, written on the TypeScript SDK; it speaks the
handshake era, so these tests cover our client's answers on that era's back-channel (the 2026
era's `input_required` rounds are in test_mcp_asking.py). It registers its elicitation,
sampling and roots tools only for a client that announced them: that `MCPToolset` offers only
what it was given is checked too.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kosong.chat_provider.scripted import ScriptedChatProvider
from kosong.mcp import ElicitationRequest, MCPToolset, SamplingRequest, ServerSpec, _connection
from kosong.message import ToolCall
from kosong.standard import ElicitAnswer, to_envelope
from kosong.tooling.error import ToolNetworkError
from tests._local import free_port
from tests.mcp._mcp_servers import serving_command
from tests.mcp._node_tools import EVERYTHING, NODE, require

pytestmark = pytest.mark.external  # the reference `everything` server from npx


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    require(EVERYTHING)
    port = free_port()
    argv = [str(NODE), str(EVERYTHING), "streamableHttp"]
    env = {**os.environ, "PORT": str(port)}
    with serving_command(argv, port, env=env, stdout=subprocess.DEVNULL) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> ServerSpec:
    if request.param == "stdio":
        require(EVERYTHING)
        return ServerSpec(command=[str(NODE), str(EVERYTHING), "stdio"])
    return ServerSpec(url=request.getfixturevalue("http_url"))


def call(name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    body = ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments or {}))
    return ToolCall(id="c1", function=body)


@pytest.fixture
async def plain(everything: ServerSpec) -> AsyncGenerator[MCPToolset]:
    async with MCPToolset({"everything": everything}, connect_timeout=30) as toolset:
        assert toolset.errors == {}
        yield toolset


async def test_structured_content_is_the_results_data(plain: MCPToolset):
    tool = plain.find_tool("get-structured-content")
    assert tool is not None and tool.output_schema is not None
    result = await plain.handle(call("get-structured-content", {"location": "Chicago"}))
    value = result.return_value
    weather = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert value.output == json.dumps(weather, separators=(",", ":"))  # compact, for the model
    assert to_envelope(result, tool_name="get-structured-content").data == weather


async def test_a_client_offering_nothing_is_offered_no_asking_tools(plain: MCPToolset):
    names = {t.name for t in plain.tools}
    assert "get-sum" in names
    assert not names & {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"}


async def test_elicitation_answers_the_form_and_the_url_mode(everything: ServerSpec):
    seen: list[ElicitationRequest] = []

    async def elicitation(request: ElicitationRequest) -> ElicitAnswer:
        seen.append(request)
        if request.mode == "url":
            return ElicitAnswer.accept()
        return ElicitAnswer.accept({"name": "Ada Lovelace", "check": True})

    async with MCPToolset({"everything": everything}, elicitation=elicitation) as toolset:
        form = (await toolset.handle(call("trigger-elicitation-request"))).return_value
        url = (
            await toolset.handle(call("trigger-url-elicitation", {"url": "https://example.com/x"}))
        ).return_value
    form_text = json.dumps(form.model_dump(mode="json"))
    assert "User provided the requested information" in form_text
    assert "Ada Lovelace" in form_text
    # The user left the rest: the form's defaults were filled in (SEP-1034).
    assert "It was a dark and stormy night." in form_text
    assert seen[0].mode == "form" and seen[0].schema is not None
    assert seen[0].schema["required"] == ["name"]
    assert "User completed the URL elicitation flow" in json.dumps(url.model_dump(mode="json"))
    assert (seen[1].mode, seen[1].url) == ("url", "https://example.com/x")
    assert seen[1].elicitation_id


async def test_a_declined_elicitation_is_declined(everything: ServerSpec):
    async def elicitation(request: ElicitationRequest) -> ElicitAnswer:
        return ElicitAnswer.decline()

    async with MCPToolset({"everything": everything}, elicitation=elicitation) as toolset:
        result = (await toolset.handle(call("trigger-elicitation-request"))).return_value
    assert "User declined" in json.dumps(result.model_dump(mode="json"))


async def test_sampling_runs_on_the_users_chat_provider(everything: ServerSpec):
    provider = ScriptedChatProvider([["Sampled by kosong."]], model="scripted-tiny")
    async with MCPToolset({"everything": everything}, sampling=provider) as toolset:
        result = await toolset.handle(call("trigger-sampling-request", {"prompt": "hi"}))
    text = str(result.return_value.output)
    assert '"text": "Sampled by kosong."' in text and '"model": "scripted-tiny"' in text
    request = provider.requests[0]
    assert request.system_prompt == "You are a helpful test server."
    assert request.history[0].extract_text() == "Resource trigger-sampling-request context: hi"
    assert request.generation_kwargs == {"max_tokens": 100, "temperature": 0.7}


async def test_a_sampling_callback_answers_too(everything: ServerSpec):
    async def sampling(request: SamplingRequest) -> str:
        return f"{len(request.messages)} message(s), at most {request.max_tokens} tokens"

    async with MCPToolset({"everything": everything}, sampling=sampling) as toolset:
        result = await toolset.handle(call("trigger-sampling-request", {"prompt": "x"}))
    assert "1 message(s), at most 100 tokens" in str(result.return_value.output)


async def test_roots_are_listed(everything: ServerSpec, tmp_path: Path):
    roots = ["file:///srv/shared", tmp_path]
    async with MCPToolset({"everything": everything}, roots=roots) as toolset:
        result = await toolset.handle(call("get-roots-list"))
    text = str(result.return_value.output)
    assert "Current MCP Roots (2 total)" in text
    assert "URI: file:///srv/shared" in text and f"URI: {tmp_path.as_uri()}" in text


def test_kosong_tools_call_prints_the_structured_content_as_the_envelopes_data():
    require(EVERYTHING)
    command = f"{NODE} {EVERYTHING} stdio"
    done = subprocess.run(
        [sys.executable, "-m", "kosong", "tools", "call", command, "get-structured-content",
         '{"location": "New York"}', "--json"],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["data"] == {"temperature": 33, "conditions": "Cloudy", "humidity": 82}


def _children_running(path: Path) -> list[int]:
    """The pids of this process's children whose command line holds `path`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # not a process, or it ended meanwhile
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and str(path).encode() in cmdline:
            found.append(int(entry.name))
    return found


async def test_a_server_that_stops_answering_fails_pending_calls_after_an_unanswered_ping(
    monkeypatch: pytest.MonkeyPatch,
):
    # A frozen server keeps its pipes (and a port) open: only its silence shows, to a ping
    # (the handshake era has one; the reference server speaks that era).
    require(EVERYTHING)
    monkeypatch.setattr(_connection, "_PING_INTERVAL", 0.2)
    monkeypatch.setattr(_connection, "_PING_TIMEOUT", 0.5)
    spec = ServerSpec(command=[str(NODE), str(EVERYTHING), "stdio"])
    others = set(_children_running(EVERYTHING))  # the module's HTTP server, say
    async with MCPToolset({"everything": spec}, connect_timeout=30) as toolset:
        [pid] = set(_children_running(EVERYTHING)) - others
        long = call("trigger-long-running-operation", {"duration": 30, "steps": 30})
        pending = asyncio.ensure_future(toolset.handle(long))
        os.kill(pid, signal.SIGSTOP)
        try:
            async with asyncio.timeout(10):
                result = (await pending).return_value
        finally:
            os.kill(pid, signal.SIGCONT)
        assert isinstance(result, ToolNetworkError), result
        assert "did not answer a ping" in result.message
