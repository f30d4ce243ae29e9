"""The `kosong` group, its subcommands, and how errors are shown."""

from __future__ import annotations

import os
import sys

import click

from kosong import __version__
from kosong.cli._check import check
from kosong.cli._compat import compat
from kosong.cli._errors import CLIError
from kosong.cli._mcp import mcp
from kosong.cli._serve import serve
from kosong.cli._tools import tools
from kosong.cli._worker import worker
from kosong.tooling.error import describe_exception

__all__ = ["cli", "run"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kosong")
def cli() -> None:
    """kosong: serve your tools, inspect and call them, check their schemas and versions."""


# One line per subcommand: each is a function in its own module.
for command in (serve, worker, tools, check, compat, mcp):
    cli.add_command(command)


def run(argv: list[str]) -> int:
    """Run the command line `argv`; the exit code. Errors are one line on stderr."""
    try:
        code = cli.main(args=argv, prog_name="kosong", standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except CLIError as e:
        click.echo(f"kosong: error: {e.format_message()}", err=True)
        return e.exit_code
    except click.ClickException as e:  # usage errors: click's own message, with the usage
        e.show()
        return e.exit_code
    except (click.Abort, KeyboardInterrupt):
        click.echo("kosong: interrupted", err=True)
        return 130
    except Exception as e:  # boundary: a bug, or something unforeseen, becomes one line, exit 1
        if os.environ.get("KOSONG_DEBUG"):
            raise
        text = describe_exception(e)
        click.echo(f"kosong: error: {text} (KOSONG_DEBUG=1 shows the traceback)", err=True)
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1:]))
