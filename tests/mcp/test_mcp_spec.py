"""`ServerSpec`: a server's URL and credentials, or its command, environment and directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import httpx2
import pytest

from kosong.mcp import MCPToolset, ServerSpec
from kosong.message import ToolCall
from mcp import StdioServerParameters

HERE = Path(__file__).resolve().parent


def test_a_url_a_command_line_a_list_and_stdio_parameters_are_specs():
    assert ServerSpec.of("https://x.example/mcp") == ServerSpec(url="https://x.example/mcp")
    assert ServerSpec.of("python -m 'my server'").argv == ("python", "-m", "my server")
    assert ServerSpec.of(["python", "-m", "srv"]).argv == ("python", "-m", "srv")
    params = StdioServerParameters(command="python", args=["-m", "srv"], env={"A": "1"}, cwd="/")
    spec = ServerSpec.of(params)
    assert spec.argv == ("python", "-m", "srv") and spec.env == {"A": "1"} and spec.cwd == "/"
    assert spec.stdio() == params
    given = ServerSpec(url="http://127.0.0.1:1/mcp")
    assert ServerSpec.of(given) is given


def test_a_spec_refuses_what_does_not_go_together():
    with pytest.raises(ValueError, match="exactly one of url"):
        ServerSpec()
    with pytest.raises(ValueError, match="exactly one of url"):
        ServerSpec(url="http://a/mcp", command="x")
    with pytest.raises(ValueError, match="http:// or https://"):
        ServerSpec(url="ftp://a/mcp")
    with pytest.raises(ValueError, match="headers, auth and transport are for a URL"):
        ServerSpec(command="x", headers={"A": "b"})
    with pytest.raises(ValueError, match="env and cwd are for a command"):
        ServerSpec(url="http://a/mcp", env={"A": "b"})
    with pytest.raises(ValueError, match="empty"):
        ServerSpec(command=[])
    with pytest.raises(TypeError, match=r"httpx2\.Auth or an httpx\.Auth"):
        ServerSpec(url="http://a/mcp", auth="secret")
    with pytest.raises(TypeError, match="not a int"):
        ServerSpec.of(3)


def test_either_http_librarys_auth_is_accepted():
    ServerSpec(url="http://a/mcp", auth=httpx2.BasicAuth("u", "p"))
    ServerSpec(url="http://a/mcp", auth=httpx.BasicAuth("u", "p"))


def test_the_repr_never_shows_a_secret():
    spec = ServerSpec(
        url="https://x.example/mcp",
        headers={"Authorization": "Bearer s3cret"},
        auth=httpx2.BasicAuth("user", "pa55"),
    )
    shown = repr(spec)
    assert "s3cret" not in shown and "pa55" not in shown
    assert shown == (
        "ServerSpec(url='https://x.example/mcp', headers={'Authorization': '***'}, "
        "auth=<BasicAuth>)"
    )
    command = repr(ServerSpec(command=["srv"], env={"API_KEY": "k3y"}, cwd="/srv"))
    assert "k3y" not in command and command == (
        "ServerSpec(command=['srv'], env={'API_KEY': '***'}, cwd='/srv')"
    )


@pytest.mark.external  # an MCP stdio server
async def test_a_command_runs_with_its_environment_and_working_directory(tmp_path: Path):
    spec = ServerSpec(
        command=[sys.executable, "-m", "kosong", "mcp", f"{HERE / '_env_tools.py'}:tools"],
        env={"KOSONG_TEST_VALUE": "42"},
        cwd=tmp_path,
    )
    async with MCPToolset({"local": spec}) as toolset:
        call = ToolCall(id="1", function=ToolCall.FunctionBody(name="where", arguments="{}"))
        result = (await toolset.handle(call)).return_value
    assert json.loads(str(result.output)) == {"cwd": str(tmp_path), "value": "42"}


def test_a_server_spec_says_its_transport() -> None:
    assert ServerSpec(url="http://h/sse").legacy_sse
    assert ServerSpec(url="http://h/x", transport="sse").legacy_sse
    assert not ServerSpec(url="http://h/sse", transport="streamable-http").legacy_sse
    assert repr(ServerSpec(url="http://h/x", transport="sse")) == (
        "ServerSpec(url='http://h/x', transport='sse')"
    )
    with pytest.raises(ValueError, match='transport must be "streamable-http" or "sse"'):
        ServerSpec(url="http://h/x", transport="ws")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="headers, auth and transport are for a URL"):
        ServerSpec(command="x", transport="sse")


def test_a_claude_desktop_entry_is_a_spec_as_it_is():
    entry = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
             "env": {"MEMORY_FILE_PATH": "/tmp/m.jsonl"}}  # fmt: skip
    spec = ServerSpec(**entry)
    assert spec.argv == ("npx", "-y", "@modelcontextprotocol/server-memory")
    assert spec.stdio().args == ["-y", "@modelcontextprotocol/server-memory"]
    assert ServerSpec(**{"url": "https://x/mcp", "headers": {"A": "b"}}).url == "https://x/mcp"
    with pytest.raises(ValueError, match="command is the program alone"):
        ServerSpec(command=["npx"], args=["-y"])
    with pytest.raises(ValueError, match="args, env and cwd are for a command"):
        ServerSpec(url="https://x/mcp", args=["-y"])
