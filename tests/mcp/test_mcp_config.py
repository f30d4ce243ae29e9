"""`mcpServers` files: the shapes Claude Desktop, Cursor, VS Code, Claude Code and FastMCP write.

The shapes come from those clients' documentation: Claude Desktop's and Cursor's
`{"mcpServers": {name: {"command", "args", "env"} | {"url", "headers"}}}`, VS Code's
`.vscode/mcp.json` (`{"servers": {name: {"type": "stdio" | "http" | "sse", ...}}}`, variables
written `${env:NAME}`), Claude Code's `.mcp.json` (`"type"`, `${VAR}` and `${VAR:-default}`),
and FastMCP's (`"transport": "sse" | "http" | "streamable-http" | "stdio"`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kosong.mcp import MCPToolset
from kosong.mcp._config import read_config
from kosong.message import ToolCall

ENV = {"TOKEN": "s3cret", "ROOT": "/srv"}


def test_claude_desktop_and_cursor_entries_become_specs() -> None:
    config = {
        "mcpServers": {
            "files": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT}"],
                "env": {"DEBUG": "1"},
            },
            "search": {
                "url": "https://search.example.com/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
        }
    }
    specs = read_config(config, ENV)
    assert specs["files"].argv == ("npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv")
    assert specs["files"].env == {"DEBUG": "1"}
    assert specs["search"].url == "https://search.example.com/mcp"
    assert specs["search"].headers == {"Authorization": "Bearer s3cret"}
    assert not specs["search"].legacy_sse


def test_vs_code_servers_with_types_and_env_variables() -> None:
    config = {
        "inputs": [],
        "servers": {
            "local": {"type": "stdio", "command": "python", "args": ["-m", "srv"]},
            "remote": {"type": "http", "url": "https://x.example/mcp",
                       "headers": {"X-Key": "${env:TOKEN}"}},
            "old": {"type": "sse", "url": "https://old.example/events"},
        },
    }  # fmt: skip
    specs = read_config(config, ENV)
    assert specs["local"].argv == ("python", "-m", "srv")
    assert specs["remote"].headers == {"X-Key": "s3cret"} and not specs["remote"].legacy_sse
    assert specs["old"].legacy_sse  # said by its type, whatever the URL


def test_fastmcp_transports_and_claude_code_defaults() -> None:
    config = {
        "mcpServers": {
            "a": {"transport": "sse", "url": "https://a.example/mcp"},
            "b": {"transport": "streamable-http", "url": "https://b.example/sse"},
            "c": {"url": "https://c.example/sse"},  # a URL ending in /sse: the legacy transport
            "d": {"command": "${BIN:-python}", "args": ["${MISSING:-}x"]},
        }
    }
    specs = read_config(config, ENV)
    assert specs["a"].legacy_sse and not specs["b"].legacy_sse and specs["c"].legacy_sse
    assert specs["d"].argv == ("python", "x")


def test_disabled_entries_and_other_clients_keys_are_left_alone() -> None:
    config = {
        "mcpServers": {
            "on": {"command": "python", "autoApprove": ["x"], "description": "mine", "timeout": 5},
            "off": {"command": "python", "disabled": True},
        }
    }
    assert list(read_config(config, ENV)) == ["on"]


def test_names_a_toolset_cannot_hold_are_rewritten() -> None:
    config = {"mcpServers": {"my server": {"command": "a"}, "2fa.tools": {"command": "b"}}}
    assert list(read_config(config, ENV)) == ["my_server", "_2fa_tools"]


def test_a_relative_cwd_is_the_files_directory(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "cwd": "work"}}}))
    assert read_config(path, ENV)["s"].cwd == str(tmp_path.resolve() / "work")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"args": ["x"]}, 'needs exactly one of "command"'),
        ({"command": "x", "url": "https://x/mcp"}, "not both"),
        ({"command": ["x"]}, '"command" must be a string, not ["x"]'),
        ({"command": "x", "args": "y"}, '"args" must be a list of strings, not "y"'),
        ({"command": "x", "env": {"A": 1}}, '"env" must be an object of strings'),
        ({"command": "x", "headers": {}}, '"headers" are for a "url"'),
        ({"url": "https://x/mcp", "env": {}}, '"env" is for a "command"'),
        ({"url": "ftp://x/mcp"}, "url must start with http:// or https://"),
        ({"type": "websocket", "url": "wss://x"}, '"type" is "websocket"; write "stdio"'),
        ({"type": "sse", "command": "x"}, '"type" is "sse", but the entry has a "command"'),
        ({"command": "${NOPE}"}, "the environment variable NOPE is not set"),
        ({"command": "${input:key}"}, "${input:key} is not an environment variable"),
        (None, 'must be an object with "command" or "url", not null'),
    ],
)
def test_a_wrong_entry_is_named_with_what_to_write(entry: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        read_config({"mcpServers": {"bad": entry}}, ENV)
    text = str(raised.value)
    assert 'server "bad"' in text and message in text


def test_a_file_that_is_not_a_config_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match=r"broken\.json is not JSON"):
        read_config(broken)
    with pytest.raises(ValueError, match=r"cannot read .*missing\.json"):
        read_config(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="has no servers"):
        read_config({"mcpServers": {}})


def test_from_config_keeps_the_servers_asked_for_and_names_one_it_lacks() -> None:
    config = {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}
    assert MCPToolset.from_config(config, only=["b"]).errors == {}
    with pytest.raises(ValueError, match="no server 'c' in the mcpServers configuration"):
        MCPToolset.from_config(config, only=["c"])


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.external  # its stdio servers
async def test_a_config_file_runs_its_servers(tmp_path: Path) -> None:
    # The repository's own stdio example server, as an mcpServers file names it.
    root = ROOT
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": sys.executable,
                        "args": [str(root / "examples" / "mcp_stdio_server.py")],
                        "env": {"NOTES_GREETING": "${GREETING:-hi}"},
                    }
                }
            }
        )
    )
    async with MCPToolset.from_config(path) as toolset:
        assert toolset.errors == {}
        body = ToolCall.FunctionBody(name="read_note", arguments='{"title": "groceries"}')
        result = await toolset.handle(ToolCall(id="c1", function=body))
    assert result.return_value.output == "milk, eggs, rice"


@pytest.mark.external  # its stdio servers
async def test_a_config_files_servers_can_be_given_to_mcp_toolset_as_they_are() -> None:
    # What users try first with the file they have: `MCPToolset(config["mcpServers"])`.
    config = {
        "mcpServers": {
            "notes": {
                "command": sys.executable,
                "args": [str(ROOT / "examples" / "mcp_stdio_server.py")],
            }
        }
    }
    async with MCPToolset(config["mcpServers"]) as toolset:
        assert sorted(t.name for t in toolset.tools) == ["read_note", "write_note"]
    with pytest.raises(ValueError, match="MCP server 'bad': server \"bad\" needs exactly one of"):
        MCPToolset({"bad": {"args": []}})
