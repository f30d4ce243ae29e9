"""`python -m kosong.mcp TARGET`: the `kosong mcp` command, for where only `python` is at hand.

    python -m kosong.mcp my_tools:toolset                 # stdio: what an MCP client launches
    python -m kosong.mcp tools.py:make_toolset --http     # streamable HTTP at :8000/mcp

The same targets and options as `kosong mcp` (see `kosong mcp --help`): MODULE:ATTR or
path/to/file.py:ATTR, naming a toolset, a list of tools, or a function (sync or async)
returning one; `--name`, and `--http --host --port` to serve over HTTP.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kosong.cli import main as kosong


def main(argv: Sequence[str] | None = None) -> None:
    """Run `kosong mcp` with `argv` (default: the process's arguments); exits."""
    kosong(["mcp", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
