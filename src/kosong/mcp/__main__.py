"""`python -m kosong.mcp TARGET`: the `kosong mcp` command, for where only `python` is at hand.

    python -m kosong.mcp my_tools:toolset                 # stdio: what an MCP client launches
    python -m kosong.mcp tools.py:make_toolset --http     # streamable HTTP at :8000/mcp

The same targets and options as `kosong mcp` (see `kosong mcp --help`): MODULE:ATTR or
path/to/file.py:ATTR, naming a toolset, a list of tools, or a function (sync or async)
returning one; `--name`, and `--http --host --port` to serve over HTTP. It runs
`python -m kosong mcp ...` (the command lives in `kosong.cli`, which imports this package).
"""

from __future__ import annotations

import runpy
import sys

if __name__ == "__main__":
    sys.argv = ["kosong", "mcp", *sys.argv[1:]]
    runpy.run_module("kosong", run_name="__main__", alter_sys=True)
