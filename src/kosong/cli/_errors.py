"""`CLIError`: a failure the user can act on, shown as one line."""

from __future__ import annotations

import click

__all__ = ["CLIError"]


class CLIError(click.ClickException):
    """A failure shown as `kosong: error: <message>`, exit code 1 (or `exit_code`)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        """Say what went wrong and how to fix it."""
        super().__init__(message)
        self.exit_code = exit_code  # pyright: ignore[reportAttributeAccessIssue]
