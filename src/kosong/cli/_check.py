"""`kosong check MODULE:ATTR`: what each provider will reject or ignore in the tools' schemas."""

from __future__ import annotations

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import load_toolset
from kosong.dialects import DIALECTS, check_tools

__all__ = ["check"]


@click.command()
@click.argument("target")
@click.option(
    "--dialect",
    "dialects",
    multiple=True,
    type=click.Choice(DIALECTS),
    help="A provider to check against (repeat for several; default: all).",
)
@click.option("--rejected-only", is_flag=True, help="Leave out what providers only ignore.")
def check(target: str, dialects: tuple[str, ...], rejected_only: bool) -> int:
    """Check the tools of TARGET (MODULE:ATTR or path/to/file.py:ATTR) against each provider.

    Prints, per tool and provider, what the provider rejects or silently ignores, with the
    JSON path, the rule and a fix where one is safe. Strict mode's rules apply to the tools
    that declare `strict`, or to every tool with `--dialect openai-strict`. Exit code 1 when a
    provider would reject a tool, else 0.
    """
    tools = load_toolset(target).tools
    if not tools:
        raise CLIError(f"{target!r} has no tools to check")
    report = check_tools(tools, dialects or None, include_ignored=not rejected_only)
    click.echo(report.render())
    return 0 if report.ok else 1
