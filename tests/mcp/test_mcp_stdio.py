"""Over stdio, nothing a tool prints or logs reaches the protocol stream, at any time.

The server is `kosong mcp tests/mcp/_noisy_tools.py:tools` in a child process; its tools
print while being imported (without a newline, so it sits in a buffer), print and log to
stdout during a call, run a child process that prints, and print at exit. The official SDK
client must never log "Failed to parse JSONRPC message", in either protocol era; and the raw
stream, read to its end after the server exited, must hold JSON-RPC messages and nothing else.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import mcp_types as mcp
import pytest
from mcp.client.stdio import stdio_client

from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.external  # MCP stdio servers

NOISY = f"{Path(__file__).resolve().parent / '_noisy_tools.py'}:tools"
SERVER = [sys.executable, "-m", "kosong", "mcp", NOISY]
PRINTED = (
    "printed while importing, not even a newline",
    "printed during the call",
    "logged to stdout during the call",
    "printed by a child process",
    "printed at exit, after the session",
)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_official_client_never_sees_what_a_tool_prints(
    mode: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
):
    caplog.set_level(logging.DEBUG, logger="mcp")
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    with (tmp_path / "stderr.txt").open("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            first = await client.call_tool("noisy", {})
            second = await client.call_tool("noisy", {})
        errlog.seek(0)
        printed = errlog.read()  # the server's stderr: where all of it went
    assert first.content == second.content == [mcp.TextContent(text="quiet answer")]
    assert "Failed to parse JSONRPC message" not in caplog.text
    for text in PRINTED[:-1]:
        assert text in printed


def test_the_stream_holds_only_protocol_messages_up_to_the_servers_exit():
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "by-hand", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "noisy", "arguments": {}}},
    ]  # fmt: skip
    server = subprocess.Popen(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for _ in range(2)]
        # Closing stdin ends the session; then everything up to the exit is read.
        rest, printed = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
    assert server.returncode == 0, printed
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "quiet answer"}]
    assert rest == ""  # nothing after the answers: not what was buffered, not the exit's print
    for text in PRINTED:
        assert text in printed
