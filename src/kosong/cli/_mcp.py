"""`kosong mcp TARGET`: serve a toolset over MCP, on stdio (what a client launches) or HTTP.

`python -m kosong.mcp TARGET` is this command too.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

import click

from kosong._extras import install_hint
from kosong.cli._errors import CLIError
from kosong.cli._load import TARGET_HELP, open_target

__all__ = ["mcp"]

_LOCAL = ("127.0.0.1:*", "localhost:*", "[::1]:*")


@click.command("mcp", epilog=TARGET_HELP, short_help="Serve the tools over MCP (stdio or HTTP).")
@click.argument("target")
@click.option("--name", default="kosong", show_default=True, help="The server's name for clients.")
@click.option(
    "--http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp, not stdio."
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (--http)."
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (--http; 0: a free one).")  # fmt: skip
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Host name requests may use besides the loopback ones (--http).")  # fmt: skip
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Browser origin allowed to call (--http).")  # fmt: skip
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))  # fmt: skip
def mcp(
    target: str,
    name: str,
    http: bool,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    log_level: str,
) -> int:
    """Serve the tools of TARGET over MCP: on stdio, or streamable HTTP with --http.

    Over stdio nothing a tool prints reaches the protocol stream: stdout goes to stderr, from
    loading TARGET until the process exits.
    """
    try:
        from kosong.mcp import MCPToolServer
    except ImportError:
        raise CLIError(f"the MCP SDK is missing: {install_hint('mcp')}") from None
    if not http:
        asyncio.run(_stdio(target, name))
        return 0
    hosts = [*_LOCAL, *(h for name_ in allow_hosts for h in (name_, f"{name_}:*"))]
    origins = [f"http://{h}" for h in _LOCAL] + list(allow_origins)

    async def serve_http() -> None:
        from kosong.cli._serve import listen, run_app

        async with open_target(target) as toolset:
            server = MCPToolServer(toolset, name=name, allowed_hosts=hosts, allowed_origins=origins)
            sock, url = listen(host, port)
            count = len(toolset.tools)
            click.echo(f"kosong: serving {count} tool(s) over MCP at {url}/mcp", err=True)
            await run_app(server.app(), sock, log_level)

    asyncio.run(serve_http())
    return 0


async def _stdio(target: str, name: str) -> None:
    from kosong.mcp import MCPToolServer

    # What the target prints while it loads is still buffered: it goes to stderr too.
    async with contextlib.AsyncExitStack() as stack:
        with contextlib.redirect_stdout(sys.stderr):
            toolset = await stack.enter_async_context(open_target(target))
        await MCPToolServer(toolset, name=name).run_stdio()
