"""`kosong mcp MODULE:ATTR`: serve a toolset over MCP on stdin/stdout."""

from __future__ import annotations

import asyncio

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import load_toolset

__all__ = ["mcp"]


@click.command("mcp")
@click.argument("target")
@click.option("--name", default="kosong", show_default=True, help="The server's name for clients.")
def mcp(target: str, name: str) -> int:
    """Serve the tools of MODULE:ATTR over MCP on stdio (what an MCP client launches).

    Nothing a tool prints reaches the protocol stream: stdout goes to stderr while serving.
    """
    try:
        from kosong.mcp import MCPToolServer
    except ImportError:
        raise CLIError("the MCP SDK is missing: pip install 'kosong[mcp]'") from None
    toolset = load_toolset(target)
    asyncio.run(MCPToolServer(toolset, name=name).run_stdio())
    return 0
