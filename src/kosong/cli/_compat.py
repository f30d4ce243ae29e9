"""`kosong compat OLD NEW`: is NEW a compatible version of the tool OLD defines?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import load_object
from kosong.server import as_toolset
from kosong.standard import check_compatibility
from kosong.tooling import Tool

__all__ = ["compat"]


def _definition(spec: str) -> Tool | dict[str, Any]:
    """The definition in a JSON file, or the one tool `MODULE:ATTR` names."""
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        try:
            loaded: object = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CLIError(f"no file {spec!r}") from None
        except (OSError, ValueError) as e:
            raise CLIError(f"{spec!r} is not a JSON file: {e}") from None
        if not isinstance(loaded, dict) or "name" not in loaded:
            raise CLIError(f"{spec!r} must hold one tool definition (an object with a name)")
        return cast(dict[str, Any], loaded)
    raw: Any = load_object(spec)
    found: object = raw
    kind = type(found).__name__
    if isinstance(found, Tool):
        return found
    if isinstance(found, dict):
        mapping = cast(dict[str, Any], found)
        if "name" in mapping:
            return mapping
    try:
        tools = as_toolset(raw).tools
    except (TypeError, ValueError):
        raise CLIError(f"{spec!r} is a {kind}, not a tool definition") from None
    if len(tools) != 1:
        raise CLIError(f"{spec!r} holds {len(tools)} tools; name one tool")
    return tools[0]


@click.command()
@click.argument("old")
@click.argument("new")
def compat(old: str, new: str) -> int:
    """Check that NEW is a compatible version of the tool OLD defines.

    Each is a JSON file holding one definition, or MODULE:ATTR naming one tool. Prints the
    report; exit code 1 when the change breaks existing calls, else 0.
    """
    report = check_compatibility(_definition(old), _definition(new))
    click.echo(str(report))
    return 0 if report.compatible else 1
