"""MCPToolset against real MCP servers: ours and one written on the SDK alone, HTTP and stdio."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as mcp
import pytest
from mcp.shared.exceptions import MCPError

from kosong.mcp import MCPTool, MCPToolServer, MCPToolset
from kosong.message import ImageURLPart, TextPart, ToolCall
from kosong.standard import error_code, with_policies
from kosong.standard.policies import TimeoutPolicy
from kosong.tooling import ToolError, ToolResult
from kosong.tooling.error import (
    ToolNetworkError,
    ToolNotFoundError,
    ToolTimeoutError,
    ToolValidateError,
)
from tests._local import free_port
from tests._waiting import until
from tests.mcp._mcp_servers import (
    Probe,
    Subprocess,
    Uvicorn,
    kosong_toolset,
    stdio_command,
)

_ids = iter(range(1_000_000))

_SOON = 3.0
"""Seconds a pending call of a server that died may take to fail: a second on an idle machine
(see `_connection`), with room for a busy one; a call nobody fails waits forever."""


def call(name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(
        id=f"call-{next(_ids)}", function=ToolCall.FunctionBody(name=name, arguments=arguments)
    )


async def run(toolset: MCPToolset, name: str, arguments: str = "{}") -> ToolResult:
    async with asyncio.timeout(20):
        return await toolset.handle(call(name, arguments))


async def test_tools_of_several_servers_are_listed_with_prefixes_on_a_clash(
    ours: Uvicorn, sdk: Uvicorn
):
    async with MCPToolset({"ours": ours.url, "sdk": sdk.url}) as toolset:
        names = {tool.name for tool in toolset.tools}
        # `add` and `wait_forever` are on both: neither overwrites the other.
        assert {"ours_add", "sdk_add", "ours_wait_forever", "sdk_wait_forever"} <= names
        assert {"slow", "boom", "search", "picture", "fail"} <= names
        assert "add" not in names
        odd = next(
            t for t in toolset.tools if isinstance(t, MCPTool) and t.remote_name == "dotted.name/v2"
        )
        assert odd.name == "dotted_name_v2" and odd.server == "sdk"
        assert toolset.errors == {}
        # Each prefixed tool calls its own server.
        assert (await run(toolset, "ours_add", '{"a": 1, "b": 2}')).return_value.output == "3"
        assert (await run(toolset, "sdk_add", '{"a": 1, "b": 2}')).return_value.output == "3"
        assert (await run(toolset, "dotted_name_v2")).return_value.output == "odd"


async def test_hints_are_carried_and_contradictions_dropped(ours: Uvicorn, sdk: Uvicorn):
    async with MCPToolset({"ours": ours.url, "sdk": sdk.url}) as toolset:
        add = toolset.find_tool("ours_add")
        search = toolset.find_tool("search")
    assert add is not None and add.read_only_hint and add.idempotent_hint and add.title == "Adder"
    # The SDK server says read-only *and* destructive; MCP reads destructive only if not read-only.
    assert search is not None and search.read_only_hint and search.destructive_hint is None


async def test_content_becomes_text_or_parts_and_is_error_a_tool_error(sdk: Uvicorn):
    async with MCPToolset({"sdk": sdk.url}) as toolset:
        text = (await run(toolset, "search", '{"q": "mcp"}')).return_value
        picture = (await run(toolset, "picture")).return_value
        failed = (await run(toolset, "fail")).return_value
    assert text.output == "sdk results for mcp" and not text.is_error
    assert picture.output == [
        TextPart(text="a picture:"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="data:image/png;base64,iVBORw0KGgo=")),
    ]
    assert isinstance(failed, ToolError) and failed.message == "it failed"
    assert failed.artifact is not None and failed.artifact.is_error


async def test_a_kosong_servers_error_code_comes_back(ours: Uvicorn):
    async with MCPToolset({"ours": ours.url}) as toolset:
        limited = (await run(toolset, "limited")).return_value
        boom = (await run(toolset, "boom")).return_value
    assert error_code(limited) == "RATE_LIMITED"
    assert "too many calls" in limited.message
    assert error_code(boom) == "EXECUTION_ERROR"
    assert boom.message == "Error running tool: RuntimeError: kaput"


async def test_arguments_are_checked_before_they_are_sent(sdk: Uvicorn):
    async with MCPToolset({"sdk": sdk.url}) as toolset:
        bad = (await run(toolset, "add", '{"a": "one", "b": 2}')).return_value
        unknown = (await run(toolset, "nope")).return_value
    assert isinstance(bad, ToolValidateError)
    assert isinstance(unknown, ToolNotFoundError)


@pytest.mark.parametrize("kind", ["ours", "sdk"])
async def test_progress_notifications_become_events(ours: Uvicorn, sdk: Uvicorn, kind: str):
    url, name, args = (
        (ours.url, "slow", '{"steps": 3}')
        if kind == "ours"
        else (sdk.url, "add", '{"a": 1, "b": 2}')
    )
    async with MCPToolset({kind: url}) as toolset:
        pipeline = with_policies(toolset, TimeoutPolicy(20))
        progress: list[float] = []
        async with pipeline.stream(call(name, args)) as events:
            async for event in events:
                if event.event == "tool_progress":
                    progress.append(event.data["progress"])  # type: ignore[arg-type]
            result = await events.result()
    assert not result.return_value.is_error
    assert progress == pytest.approx([100 / 3, 200 / 3, 100.0])


async def test_our_timeout_is_sent_to_the_server_as_a_cancellation(ours: Uvicorn, probe: Probe):
    async with MCPToolset({"ours": ours.url}, call_timeout=0.5) as toolset:
        result = (await run(toolset, "wait_forever")).return_value
        async with asyncio.timeout(10):
            await probe.cancelled.wait()
    assert isinstance(result, ToolTimeoutError)


@pytest.mark.parametrize("kind", ["ours", "sdk"])
async def test_a_cancelled_call_is_cancelled_on_the_server(
    ours: Uvicorn, sdk: Uvicorn, probe: Probe, kind: str
):
    url = ours.url if kind == "ours" else sdk.url
    async with MCPToolset({kind: url}) as toolset:
        pipeline = with_policies(toolset, TimeoutPolicy(0.5))  # cancels the call when it runs out
        async with asyncio.timeout(20):
            result = (await pipeline.handle(call("wait_forever"))).return_value
            await probe.cancelled.wait()
    assert error_code(result) == "TIMEOUT"


@pytest.mark.parametrize("era", ["2026", "handshake"])
async def test_list_changed_refreshes_the_tools(probe: Probe, era: str):
    server = MCPToolServer(kosong_toolset(probe))
    if era == "handshake":  # a server that does not know `server/discover` gets the handshake

        async def refuse(ctx: Any, params: Any) -> Any:
            raise MCPError(mcp.METHOD_NOT_FOUND, "Method not found")

        server.server.add_request_handler("server/discover", mcp.RequestParams, refuse)
    changed = asyncio.Event()
    async with (
        Uvicorn(server.app()) as running,
        MCPToolset({"ours": running.url}, on_tools_changed=changed.set) as toolset,
    ):
        assert toolset.find_tool("boom") is not None
        shown = toolset.prefixed("m_")  # a wrapper follows the relisting through the version
        assert "m_boom" in [t.name for t in shown.tools]
        version = toolset.tools_version
        server.toolset.wrapped.remove("boom")  # type: ignore[attr-defined]
        await server.notify_tools_changed()
        async with asyncio.timeout(10):
            await changed.wait()
        assert toolset.find_tool("boom") is None
        assert toolset.find_tool("add") is not None
        assert toolset.tools_version != version
        assert "m_boom" not in [t.name for t in shown.tools] and "m_add" in [
            t.name for t in shown.tools
        ]


@pytest.mark.external  # a server in a child process, killed for real
async def test_a_dead_server_fails_pending_calls_within_a_second_and_others_keep_working(
    ours: Uvicorn, tmp_path: Path
):
    started = tmp_path / "started"
    with Subprocess("_mcp_servers:sdk_app", env={"KOSONG_TEST_STARTED": str(started)}) as doomed:
        async with MCPToolset({"doomed": doomed.url, "ours": ours.url}) as toolset:
            pending = asyncio.ensure_future(toolset.handle(call("doomed_wait_forever")))
            await until(started.exists, "the call to be running on the server")
            assert not pending.done()
            doomed.kill()
            killed = time.monotonic()
            async with asyncio.timeout(5):  # without the watchdog, it would wait forever
                result = (await pending).return_value
            # Within a second on an idle machine (a check every 0.5 s); a busy one may be late.
            assert time.monotonic() - killed < _SOON
            assert isinstance(result, ToolNetworkError)
            assert "doomed" in result.message
            # The other server is not affected.
            assert (await run(toolset, "ours_add", '{"a": 2, "b": 2}')).return_value.output == "4"
            assert "doomed" in toolset.errors


@pytest.mark.external  # a server in a child process, killed for real
async def test_a_dead_stdio_server_fails_pending_calls_and_is_restarted_on_the_next_call(
    tmp_path: Path,
):
    pidfile = tmp_path / "server.pid"
    async with MCPToolset({"sdk": stdio_command("sdk", pidfile)}) as toolset:
        assert (await run(toolset, "add", '{"a": 1, "b": 1}')).return_value.output == "2"
        first = int(pidfile.read_text())
        pending = asyncio.ensure_future(toolset.handle(call("wait_forever")))
        await until(Path(f"{pidfile}.started").exists, "the call to be running on the server")
        os.kill(first, signal.SIGKILL)
        killed = time.monotonic()
        async with asyncio.timeout(5):  # without noticing the end of its stdout, forever
            result = (await pending).return_value
        assert time.monotonic() - killed < _SOON
        assert isinstance(result, ToolNetworkError)
        # The next call starts the server again.
        again = (await run(toolset, "add", '{"a": 2, "b": 3}')).return_value
        assert again.output == "5", again
        assert int(pidfile.read_text()) != first


@pytest.mark.external  # a server in a child process, killed for real
async def test_a_dead_http_server_is_reconnected_on_the_next_call():
    port = None
    with Subprocess("_mcp_servers:kosong_app") as first:
        port = first.port
        toolset = MCPToolset({"k": first.url})
        await toolset.connect()
        try:
            assert (await run(toolset, "add", '{"a": 1, "b": 1}')).return_value.output == "2"
            first.kill()
            down = (await run(toolset, "add", '{"a": 1, "b": 1}')).return_value
            assert isinstance(down, ToolNetworkError)
            with Subprocess("_mcp_servers:kosong_app", port=port):
                again = (await run(toolset, "add", '{"a": 2, "b": 2}')).return_value
                assert again.output == "4"
                assert toolset.errors == {}
        finally:
            await toolset.aclose()


async def test_an_unreachable_server_is_left_out_and_named_in_errors(sdk: Uvicorn):
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    async with MCPToolset({"dead": dead, "sdk": sdk.url}, connect_timeout=5) as toolset:
        assert "dead" in toolset.errors
        assert toolset.find_tool("search") is not None
        assert (
            await run(toolset, "search", '{"q": "x"}')
        ).return_value.output == "sdk results for x"


@pytest.mark.external  # an MCP stdio server
async def test_our_stdio_server_keeps_prints_off_the_protocol_stream():
    # `python -m kosong.mcp MODULE:ATTR` serves a toolset over stdio (from the working
    # directory, the repository's root here).
    command = [sys.executable, "-m", "kosong.mcp", "tests.mcp._mcp_servers:kosong_toolset"]
    async with MCPToolset({"k": command}) as toolset:
        result = (await run(toolset, "shout")).return_value
        added = (await run(toolset, "add", '{"a": 20, "b": 22}')).return_value
    assert result.output == "ok" and not result.is_error
    assert added.output == "42"


def test_bad_configuration_is_refused_at_once():
    with pytest.raises(ValueError, match="server name"):
        MCPToolset({"has space": "http://127.0.0.1:1/mcp"})
    with pytest.raises(ValueError, match="empty"):
        MCPToolset({"x": []})
    with pytest.raises(ValueError, match="call_timeout"):
        MCPToolset({"x": "http://127.0.0.1:1/mcp"}, call_timeout=0)
    with pytest.raises(ValueError, match="at least one"):
        MCPToolset({})


@pytest.mark.external  # `python -m kosong.mcp`, the stdio server's command
@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("no_such_module_xyz:toolset", "no module named 'no_such_module_xyz'"),
        ("json:dumps", "calling json:dumps failed: TypeError"),
        ("json:__doc__", "'json:__doc__' cannot be served"),
        # A module alone means its `toolset` (one grammar of targets, issue 27).
        ("json", "module 'json' has no attribute 'toolset'"),
    ],
)
def test_python_m_kosong_mcp_names_what_it_cannot_serve_in_one_line(target: str, said: str):
    # `python -m kosong.mcp` is `kosong mcp`: the same loader, the same one-line errors.
    done = subprocess.run(
        [sys.executable, "-m", "kosong.mcp", target],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kosong: error: ") and said in lines[0], lines
