"""`python -m kosong.mcp MODULE:ATTR`: serve a toolset over MCP, on stdio or over HTTP.

    python -m kosong.mcp my_tools:toolset              # stdio: what an MCP client launches
    python -m kosong.mcp my_tools:make_toolset --http  # streamable HTTP at http://127.0.0.1:8000/mcp

`ATTR` names a toolset, or a function of no arguments that returns one. Over stdio, what a
tool prints goes to stderr, never into the protocol stream.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

from kosong.mcp._server import MCPToolServer
from kosong.tooling import Toolset
from kosong.tooling.error import describe_exception


def load_toolset(target: str) -> Toolset:
    """The toolset `MODULE:ATTR` names (calling ATTR if it is a function).

    Raises:
        ValueError: the target is not `MODULE:ATTR`, cannot be imported, fails to make its
            toolset, or is no toolset.
    """
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{target!r} is not MODULE:ATTR (e.g. my_tools:toolset)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import {module_name!r}: {e}") from e
    try:
        value: object = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    if callable(value) and not isinstance(value, Toolset):
        try:
            value = value()
        except Exception as e:  # the user's factory failed: say so, in one line
            raise ValueError(f"calling {target} failed: {describe_exception(e)}") from e
    if not isinstance(value, Toolset):
        raise ValueError(f"{target} is a {type(value).__name__}, not a toolset")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m kosong.mcp", description=__doc__)
    parser.add_argument("target", help="MODULE:ATTR of a toolset, or of a function making one")
    parser.add_argument("--name", default="kosong", help="the server's name for clients")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind (--http)")
    parser.add_argument("--port", type=int, default=8000, help="the port (--http)")
    args = parser.parse_args(argv)
    sys.path.insert(0, "")  # MODULE is looked up from the working directory, as python -m does
    try:
        toolset = load_toolset(args.target)
    except ValueError as e:
        print(f"kosong.mcp: {e}", file=sys.stderr)
        return 2
    server = MCPToolServer(toolset, name=args.name)
    if args.http:
        import uvicorn

        uvicorn.run(server.app(), host=args.host, port=args.port, log_level="warning")
    else:
        asyncio.run(server.run_stdio())
    return 0


if __name__ == "__main__":
    sys.exit(main())
