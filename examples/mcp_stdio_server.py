"""A kosong toolset served over stdio: what an MCP client (Claude Desktop, an IDE) launches.

    python examples/mcp_stdio_server.py

Register the command in an MCP client's configuration, or use it from kosong itself with
`MCPToolset({"notes": [sys.executable, "examples/mcp_stdio_server.py"]})`. What a tool prints
goes to stderr, never into the protocol stream on stdout.
"""

from __future__ import annotations

import asyncio

from kosong.mcp import MCPToolServer
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset

NOTES: dict[str, str] = {"groceries": "milk, eggs, rice"}


@tool
def read_note(title: str) -> str:
    """Read a note.

    Args:
        title: The note's title.
    """
    print(f"reading {title!r}")  # goes to stderr while serving over stdio
    return NOTES.get(title, f"no note called {title!r}")


@tool
def write_note(title: str, text: str) -> str:
    """Write (or overwrite) a note.

    Args:
        title: The note's title.
        text: What it says.
    """
    NOTES[title] = text
    return f"saved {title!r}"


if __name__ == "__main__":
    server = MCPToolServer(SimpleToolset([read_note, write_note]), name="notes")
    asyncio.run(server.run_stdio())
