"""`kosong check TARGET`: what each provider will reject or ignore in the tools' schemas."""

from __future__ import annotations

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import TARGET_HELP, read_tools
from kosong.dialects import DIALECTS, check_tools

__all__ = ["check"]


@click.command(epilog=TARGET_HELP, short_help="Check the tools' schemas against each provider.")
@click.argument("target")
@click.option(
    "--dialect",
    "dialects",
    multiple=True,
    type=click.Choice(DIALECTS),
    help="A provider to check against (repeat for several; default: all).",
)
@click.option("--rejected-only", is_flag=True, help="Leave out what providers only ignore.")
@click.option("--verbose", "-v", is_flag=True, help="Also list each tool and provider found ok.")
@click.option("--token", envvar="KOSONG_TOKEN",
              help="The bearer token a server URL wants (or KOSONG_TOKEN).")  # fmt: skip
@click.option("--header", "header_lines", multiple=True, metavar="'NAME: VALUE'",
              help="A header for every request to a server URL; repeatable.")  # fmt: skip
@click.option("--mcp", "force_mcp", is_flag=True, help="Take the URL as an MCP server's at once.")
def check(
    target: str,
    dialects: tuple[str, ...],
    rejected_only: bool,
    verbose: bool,
    token: str | None,
    header_lines: tuple[str, ...],
    force_mcp: bool,
) -> int:
    """Check the tools of TARGET against each provider's dialect of JSON Schema.

    Prints what a provider rejects or silently ignores, one finding a line with the tool, the
    provider, the JSON path, the rule and a fix where one is safe, then a summary line; with
    --verbose, every tool and provider. Strict mode's rules apply to the tools that declare
    `strict`, or to every tool with `--dialect openai-strict`. Exit code 1 when a provider
    would reject a tool, else 0.
    """
    tools = read_tools(target, token=token, headers=header_lines, mcp=force_mcp).tools
    if not tools:
        raise CLIError(f"{target!r} has no tools to check")
    report = check_tools(tools, dialects or None, include_ignored=not rejected_only)
    if verbose:
        click.echo(report.render(include_ignored=not rejected_only))
        return 0 if report.ok else 1
    for finding in report.findings:
        if finding.effect == "rejected" or not rejected_only:
            click.echo(f"{finding.tool} [{finding.dialect}] {finding}")
    rejected, ignored = len(report.rejected), len(report.ignored)
    verdict = "no provider rejects them" if report.ok else f"{rejected} rejected"
    shown = f", {ignored} ignored" if not rejected_only else ""
    click.echo(f"{len(report.tools)} tool(s), {len(report.dialects)} dialect(s): {verdict}{shown}")
    return 0 if report.ok else 1
