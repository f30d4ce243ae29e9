"""`kosong tools list|schema|call TARGET`: inspect and call the tools of any target."""

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

from kosong._extras import install_hint
from kosong.cli._errors import CLIError
from kosong.cli._load import TARGET_HELP, open_target
from kosong.message import TextPart, ToolCall
from kosong.server import query_arguments
from kosong.standard import PolicyToolset, to_envelope, with_policies
from kosong.standard.policies import MetricsPolicy
from kosong.tooling import Tool, ToolResult, Toolset

__all__ = ["tools"]


def _find(toolset: Toolset, name: str) -> Tool:
    for tool in toolset.tools:
        if tool.name == name:
            return tool
    names = ", ".join(t.name for t in toolset.tools) or "none"
    raise CLIError(f"no tool {name!r} (the tools: {names})")


_token = click.option("--token", envvar="KOSONG_TOKEN",
                      help="The bearer token a server URL wants (or KOSONG_TOKEN).")  # fmt: skip
_header = click.option("--header", "header_lines", multiple=True, metavar="'NAME: VALUE'",
                       help="A header for every request to a server URL; repeatable.")  # fmt: skip
_mcp = click.option("--mcp", "force_mcp", is_flag=True,
                    help="Take the URL as an MCP server's at once.")  # fmt: skip
_config = click.option(
    "--config", type=click.Path(dir_okay=False), metavar="FILE",
    help="An mcpServers file (Claude Desktop, Cursor, VS Code, FastMCP): TARGET is the name "
    "of one of its servers (`list` without TARGET: all of them).",
)  # fmt: skip


@contextlib.asynccontextmanager
async def _open(
    target: str | None,
    config: str | None,
    *,
    token: str | None,
    headers: tuple[str, ...],
    mcp: bool,
) -> AsyncGenerator[Toolset]:
    """The toolset of TARGET, open for the block.

    With `config` (an mcpServers file), TARGET is the name of one of its servers (None: all).
    """
    if config is None:
        if target is None:
            raise CLIError("give a TARGET (or --config FILE, an mcpServers file)")
        async with open_target(target, token=token, headers=headers, mcp=mcp) as toolset:
            yield toolset
        return
    if token is not None or headers or mcp:
        raise CLIError("--token, --header and --mcp go with a server URL; the --config file's "
                       "entries say how to reach their servers")  # fmt: skip
    try:
        from kosong.mcp import MCPToolset
    except ImportError:
        raise CLIError(f"the MCP SDK is missing: {install_hint('mcp')}") from None
    logging.getLogger("kosong.mcp").setLevel(logging.ERROR)  # the error below says it once
    try:
        only = None if target is None else [target]
        toolset = MCPToolset.from_config(config, only=only, connect_timeout=20)
    except ValueError as e:
        raise CLIError(str(e)) from None
    try:
        await toolset.connect()
        for name, error in toolset.errors.items():
            raise CLIError(f"cannot use the MCP server {name} of {config}: {error}")
        yield toolset
    finally:
        await toolset.aclose()


@click.group(epilog=TARGET_HELP, short_help="List, describe and call the tools of a target.")
def tools() -> None:
    """List, describe and call the tools of a module, a file, a server or an MCP server."""


@tools.command("list")
@click.argument("target", required=False)
@click.option("--json", "as_json", is_flag=True, help="The definitions as JSON.")
@_token
@_header
@_mcp
@_config
def list_tools(
    target: str | None,
    as_json: bool,
    token: str | None,
    header_lines: tuple[str, ...],
    force_mcp: bool,
    config: str | None,
) -> None:
    """List the tools of TARGET, one a line: its name and the first line of its description."""

    async def go() -> list[Tool]:
        async with _open(target, config, token=token, headers=header_lines, mcp=force_mcp) as ts:
            return ts.tools

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
@_mcp
@_config
def schema(
    target: str,
    name: str | None,
    token: str | None,
    header_lines: tuple[str, ...],
    force_mcp: bool,
    config: str | None,
) -> None:
    """Print the definition of tool NAME of TARGET as JSON (every tool's, without NAME)."""

    async def go() -> Any:
        async with _open(
            target, config, token=token, headers=header_lines, mcp=force_mcp
        ) as toolset:
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
@click.option("--json", "as_json", is_flag=True,
              help="Print the standard's envelope as JSON, not the text.")  # fmt: skip
@_token
@_header
@_mcp
@_config
def call(
    target: str,
    name: str,
    arguments: str | None,
    pairs: tuple[str, ...],
    progress: bool | None,
    as_json: bool,
    token: str | None,
    header_lines: tuple[str, ...],
    force_mcp: bool,
    config: str | None,
) -> int:
    """Call tool NAME of TARGET and print what the model would read (exit code 1 on an error).

    ARGUMENTS is a JSON object; or give them one by one with -a KEY=VALUE. A failure prints
    its error code and message on stderr. With --json the standard's envelope is printed.
    """
    if arguments is not None and pairs:
        raise CLIError("give the arguments as JSON or with -a, not both")
    show = progress if progress is not None else sys.stderr.isatty()

    async def go() -> ToolResult:
        async with _open(
            target, config, token=token, headers=header_lines, mcp=force_mcp
        ) as toolset:
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
                            return event.result
                        percent = event.data.get("progress")
                        if isinstance(percent, int | float) and percent > done:
                            bar.label = f"{name}: {event.data.get('message') or ''}".strip(": ")
                            bar.update(int(percent) - done)
                            done = int(percent)
            raise CLIError("the call ended without a result")

    result = asyncio.run(go())
    envelope = to_envelope(result).dump()
    if as_json:
        click.echo(json.dumps(envelope, indent=2, ensure_ascii=False))
    else:
        _print_result(result, envelope)
    return 0 if envelope.get("success") else 1


def _print_result(result: ToolResult, envelope: dict[str, Any]) -> None:
    """The result's text on stdout (what the model reads); a failure's code on stderr."""
    value = result.return_value
    if isinstance(value.output, str):
        text = value.output
    else:
        text = "\n".join(
            part.text if isinstance(part, TextPart) else f"[{part.type} part]"
            for part in value.output
        )
    if text:
        click.echo(text)
    if value.is_error:
        code = envelope.get("error", {}).get("code", "ERROR")
        click.echo(f"kosong: {code}: {value.message}", err=True)
    elif value.message:
        click.echo(value.message, err=True)
