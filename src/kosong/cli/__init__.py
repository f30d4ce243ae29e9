"""The `kosong` command: serve tools, inspect and call them, check their schemas and versions.

    kosong serve TARGET [--host --port --token --redis --max-body ...]
    kosong worker TARGET --redis URL                 (runs the calls front ends queue)
    kosong mcp TARGET [--http]                       (MCP on stdio, or streamable HTTP)
    kosong tools list|schema|call TARGET ...         (list, describe, call the tools)
    kosong check TARGET                              (the tools against each provider)
    kosong compat OLD NEW

Every TARGET is read one way (`_load.py`): MODULE:ATTR, path/to/file.py[:ATTR], MODULE alone
(its `toolset`), the URL of a kosong or MCP server, or an MCP server's stdio command.

Each subcommand is one function in its own module, added to the group in `_main.py`. Errors
are one line on stderr and a non-zero exit code, never a traceback (set `KOSONG_DEBUG=1` to
see one).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kosong._extras import install_hint

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the `kosong` command with `argv` (default: the process's arguments); exits."""
    try:
        from kosong.cli._main import run
    except ModuleNotFoundError as e:  # click (or another part of the server extra) is missing
        if e.name is None or e.name.split(".")[0] == "kosong":
            raise  # kosong's own: a bug, not an install step
        print(f"kosong: {e}; install it with: {install_hint('server')}", file=sys.stderr)
        sys.exit(2)
    sys.exit(run(list(argv) if argv is not None else sys.argv[1:]))
