"""MCP in the kosong server and the `kosong` command: /mcp in the app, `kosong mcp`, MCP targets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import mcp_types as mcp
import pytest

from kosong.mcp import MCPToolset
from kosong.message import ToolCall
from kosong.server import ServerConfig, create_app
from mcp import Client
from tests.mcp._mcp_servers import ROOT, Uvicorn, kosong_toolset

SERVE_TARGET = "tests.mcp._mcp_servers:served"


def kosong(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kosong", *args],
        capture_output=True, text=True, timeout=90, cwd=ROOT, check=False,
    )  # fmt: skip


async def test_the_server_app_serves_the_same_tools_over_mcp_behind_its_guard():
    app = create_app(kosong_toolset(), ServerConfig(), mcp=True)
    async with Uvicorn(app) as running:
        async with Client(running.url) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            added = await client.call_tool("add", {"a": 2, "b": 3})
        async with Client(running.url, mode="legacy") as client:
            legacy = await client.call_tool("add", {"a": 1, "b": 1})
        async with httpx.AsyncClient(timeout=10) as http:
            foreign = await http.post(running.url, json={}, headers={"Host": "evil.example.com"})
            plain = await http.get(f"http://127.0.0.1:{running.port}/tools")
    assert {"add", "slow", "boom"} <= names
    assert added.content == [mcp.TextContent(text="5")]
    assert legacy.content == [mcp.TextContent(text="2")]
    assert 400 <= foreign.status_code < 500  # the guard refuses it before MCP sees it
    assert plain.status_code == 200  # the HTTP routes are still there
    # MCP calls went through the app's pipeline: its metrics counted both.
    assert app.state.kosong.metrics.snapshot()["add"].calls == 2


@pytest.mark.external  # a `kosong mcp` process
async def test_kosong_mcp_serves_a_module_over_stdio():
    command = [sys.executable, "-m", "kosong", "mcp", SERVE_TARGET]
    async with MCPToolset({"k": command}) as toolset:
        shout = await toolset.handle(
            ToolCall(id="1", function=ToolCall.FunctionBody(name="shout", arguments="{}"))
        )
        added = await toolset.handle(
            ToolCall(id="2", function=ToolCall.FunctionBody(name="add", arguments='{"a":4,"b":5}'))
        )
    assert shout.return_value.output == "ok"  # its prints went to stderr
    assert added.return_value.output == "9"


@pytest.mark.external  # `kosong tools` and the MCP command it starts
def test_kosong_tools_list_and_call_accept_an_mcp_command():
    target = f"{sys.executable} -m kosong mcp {SERVE_TARGET}"
    listed = kosong("tools", "list", target)
    called = kosong("tools", "call", target, "add", '{"a": 1, "b": 2}', "--json")
    short = kosong("tools", "call", target, "add", '{"a": 1, "b": 2}')
    assert listed.returncode == 0, listed.stderr
    assert "add" in listed.stdout.split()
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["data"] == "3"
    assert (short.returncode, short.stdout) == (0, "3\n")  # the result's text, by default


@pytest.mark.external  # `kosong tools` in a child process
async def test_kosong_tools_list_accepts_an_mcp_url():
    app = create_app(kosong_toolset(), ServerConfig(), mcp=True)
    async with Uvicorn(app) as running:
        listed = await asyncio.to_thread(kosong, "tools", "list", running.url)
        dead = await asyncio.to_thread(kosong, "tools", "list", "http://127.0.0.1:9/mcp")
    assert listed.returncode == 0, listed.stderr
    assert {"add", "slow", "boom"} <= set(listed.stdout.split())
    assert dead.returncode != 0
    assert dead.stderr.splitlines() == [
        "kosong: error: cannot use the MCP server http://127.0.0.1:9/mcp: "
        "ConnectError: All connection attempts failed"
    ]
