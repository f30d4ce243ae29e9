"""`kosong tools list|schema|call TARGET`: inspect and call the tools of a module or a server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sys
from collections.abc import AsyncGenerator
from typing import Any

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import is_url, open_toolset
from kosong.message import ToolCall
from kosong.server import query_arguments
from kosong.standard import PolicyToolset, to_envelope, with_policies
from kosong.standard.policies import MetricsPolicy
from kosong.tooling import Tool, Toolset

__all__ = ["tools"]

_TARGET = (
    "TARGET: MODULE:ATTR or path/to/file.py:ATTR (a toolset, a list of tools, or a function "
    "returning one), the URL of a kosong server, or an MCP server: its URL (ending in /mcp, "
    "or /sse for the legacy transport) or the command that runs it (quoted, e.g. 'python -m "
    "my_server'); with --config FILE, the name of a server of that mcpServers file. --token "
    "and --header go with a URL, of either kind."
)


@contextlib.asynccontextmanager
async def _open(
    target: str | None,
    token: str | None,
    header_lines: tuple[str, ...] = (),
    config: str | None = None,
) -> AsyncGenerator[Toolset]:
    """The toolset `target` names; for a URL, a `RemoteToolset` with its tools listed.

    An MCP server (a URL whose path ends in `/mcp` or `/sse`, or a command: a target with a
    space, which MODULE:ATTR never has) gives an `MCPToolset`; with `config` (an mcpServers
    file), `target` is one of its servers (None: all of them).
    """
    if config is not None:
        if token is not None or header_lines:
            raise CLIError("--token and --header go with a server URL; the --config file's "
                           "entries give their own headers")  # fmt: skip
        async with _open_mcp(target, None, {}, config) as toolset:
            yield toolset
        return
    if target is None:
        raise CLIError("give a TARGET (or --config FILE, an mcpServers file)")
    headers = _headers(header_lines)
    if (token is not None or headers) and not is_url(target):
        raise CLIError("--token and --header go with a server URL, not with a module or command")
    if _is_mcp(target):
        async with _open_mcp(target, token, headers) as toolset:
            yield toolset
        return
    if not is_url(target):
        yield await open_toolset(target)
        return
    import httpx

    from kosong.remote import RemoteToolset

    remote = RemoteToolset(target, token=token, headers=headers)
    try:
        try:
            await remote.refresh()
        except httpx.HTTPStatusError as e:
            raise CLIError(
                f"{target} answered {e.response.status_code}: {_reason(e.response)}"
            ) from None
        except httpx.HTTPError as e:
            raise CLIError(f"cannot reach {target}: {type(e).__name__}: {e}") from None
        yield remote
    finally:
        await remote.aclose()


def _is_mcp(target: str) -> bool:
    if is_url(target):
        return target.split("?", 1)[0].rstrip("/").endswith(("/mcp", "/sse"))
    return any(c.isspace() for c in target.strip())


def _headers(lines: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            raise CLIError(f"--header {line!r} is not 'Name: value'")
        headers[name.strip()] = value.strip()
    return headers


@contextlib.asynccontextmanager
async def _open_mcp(
    target: str | None, token: str | None, headers: dict[str, str], config: str | None = None
) -> AsyncGenerator[Toolset]:
    try:
        from kosong.mcp import MCPToolset, ServerSpec
    except ImportError:
        raise CLIError("the MCP SDK is missing: pip install 'kosong[mcp]'") from None
    # The command says what failed in one line of its own; the toolset's warnings would repeat it.
    logging.getLogger("kosong.mcp").setLevel(logging.ERROR)
    if config is not None:
        try:
            only = None if target is None else [target]
            toolset = MCPToolset.from_config(config, only=only, connect_timeout=20)
        except ValueError as e:
            raise CLIError(str(e)) from None
    else:
        assert target is not None
        spec = target.strip()
        if is_url(spec):
            if token is not None:
                headers = {**headers, "Authorization": f"Bearer {token}"}
            server = ServerSpec(url=spec, headers=headers)
        else:
            server = ServerSpec(command=spec)
        toolset = MCPToolset({"mcp": server}, connect_timeout=20)
    try:
        await toolset.connect()
        for name, error in toolset.errors.items():
            which = f"{name} of {config}" if config is not None else str(target)
            raise CLIError(f"cannot use the MCP server {which}: {error}")
        yield toolset
    finally:
        await toolset.aclose()


def _reason(response: Any) -> str:
    try:
        return str(response.json()["error"]["message"])
    except Exception:
        return str(response.text[:200] or response.reason_phrase)


def _find(toolset: Toolset, name: str) -> Tool:
    for tool in toolset.tools:
        if tool.name == name:
            return tool
    names = ", ".join(t.name for t in toolset.tools) or "none"
    raise CLIError(f"no tool {name!r} (the tools: {names})")


_token = click.option("--token", envvar="KOSONG_TOKEN", help="Bearer token for a server URL.")
_config = click.option(
    "--config", type=click.Path(dir_okay=False), metavar="FILE",
    help="An mcpServers file (Claude Desktop, Cursor, VS Code, FastMCP): TARGET is the name "
    "of one of its servers (`list` without TARGET: all of them).",
)  # fmt: skip
_header = click.option("--header", "header_lines", multiple=True, metavar="'NAME: VALUE'",
                       help="A header for every request to a server URL; repeatable.")  # fmt: skip


@click.group(epilog=_TARGET)
def tools() -> None:
    """List, describe and call the tools of a module or a server."""


@tools.command("list")
@click.argument("target", required=False)
@click.option("--json", "as_json", is_flag=True, help="The definitions as JSON.")
@_token
@_header
@_config
def list_tools(
    target: str | None,
    as_json: bool,
    token: str | None,
    header_lines: tuple[str, ...],
    config: str | None,
) -> None:
    """List the tools of TARGET (MODULE:ATTR, a server URL or an MCP server)."""

    async def go() -> list[Tool]:
        async with _open(target, token, header_lines, config) as toolset:
            return toolset.tools

    found = asyncio.run(go())
    if as_json:
        click.echo(json.dumps([t.model_dump(mode="json") for t in found], indent=2))
        return
    width = max((len(t.name) for t in found), default=0)
    for tool in found:
        summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        click.echo(f"{tool.name.ljust(width)}  {summary}")


@tools.command("schema")
@click.argument("target")
@click.argument("name", required=False)
@_token
@_header
@_config
def schema(
    target: str,
    name: str | None,
    token: str | None,
    header_lines: tuple[str, ...],
    config: str | None,
) -> None:
    """Print the definition of tool NAME of TARGET as JSON (every tool without NAME)."""

    async def go() -> Any:
        async with _open(target, token, header_lines, config) as toolset:
            if name is None:
                return [t.model_dump(mode="json") for t in toolset.tools]
            return _find(toolset, name).model_dump(mode="json")

    click.echo(json.dumps(asyncio.run(go()), indent=2, ensure_ascii=False))


@tools.command("call")
@click.argument("target")
@click.argument("name")
@click.argument("arguments", required=False)
@click.option("-a", "--arg", "pairs", multiple=True, metavar="KEY=VALUE",
              help="An argument (JSON for non-string parameters); repeatable.")  # fmt: skip
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar (default: when stderr is a terminal).")  # fmt: skip
@_token
@_header
@_config
def call(
    target: str,
    name: str,
    arguments: str | None,
    pairs: tuple[str, ...],
    progress: bool | None,
    token: str | None,
    header_lines: tuple[str, ...],
    config: str | None,
) -> int:
    """Call tool NAME of TARGET and print the result envelope (exit code 1 on an error).

    ARGUMENTS is a JSON object; or give them one by one with -a KEY=VALUE.
    """
    if arguments is not None and pairs:
        raise CLIError("give the arguments as JSON or with -a, not both")
    show = progress if progress is not None else sys.stderr.isatty()

    async def go() -> dict[str, Any]:
        async with _open(target, token, header_lines, config) as toolset:
            text = arguments
            if text is None:
                items: list[tuple[str, str]] = []
                for pair in pairs:
                    key, eq, value = pair.partition("=")
                    if not eq or not key:
                        raise CLIError(f"-a {pair!r} is not KEY=VALUE")
                    items.append((key, value))
                text = json.dumps(query_arguments(_find(toolset, name), items))
            pipeline: PolicyToolset = (
                toolset if isinstance(toolset, PolicyToolset)
                else with_policies(toolset, MetricsPolicy())
            )  # fmt: skip
            tool_call = ToolCall(
                id="cli", function=ToolCall.FunctionBody(name=name, arguments=text)
            )
            out = sys.stderr if show else io.StringIO()  # hidden: drawn nowhere
            bar: Any
            with click.progressbar(length=100, label=name, file=out) as bar:
                done = 0
                async with pipeline.stream(tool_call) as events:
                    async for event in events:
                        if event.result is not None:
                            bar.update(100 - done)
                            return to_envelope(event.result).dump()
                        percent = event.data.get("progress")
                        if isinstance(percent, int | float) and percent > done:
                            bar.label = f"{name}: {event.data.get('message') or ''}".strip(": ")
                            bar.update(int(percent) - done)
                            done = int(percent)
            raise CLIError("the call ended without a result")

    envelope = asyncio.run(go())
    click.echo(json.dumps(envelope, indent=2, ensure_ascii=False))
    return 0 if envelope.get("success") else 1
