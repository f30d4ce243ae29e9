"""`mcpServers` files: the server lists MCP clients keep, read as `ServerSpec`s (private).

The format (Claude Desktop, Claude Code, Cursor, VS Code under `"servers"`, FastMCP) and what
kosong reads of it (`type` / `transport`, `${VAR}` / `${env:VAR}` / `${VAR:-default}`,
`"disabled"`, a `cwd` relative to the file) are in docs/mcp.md, "Servers as MCP clients list
them". Each server's name becomes its `MCPToolset` name (characters a name cannot hold become
`_`); keys other clients add are left alone; a wrong entry is a `ValueError` that names the
file, the entry and what to write.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from kosong.mcp._spec import ServerSpec

__all__ = ["entry_spec", "read_config"]

logger = logging.getLogger(__name__)

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_TRANSPORTS = {
    "stdio": "stdio",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamableHttp": "streamable-http",
    "sse": "sse",
}
_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "type", "transport"})


def read_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> dict[str, ServerSpec]:
    """The servers of an `mcpServers` file (a path) or of its parsed JSON (a mapping).

    The mapping may be the whole file (`{"mcpServers": {...}}`, or VS Code's `{"servers":
    {...}}`) or the servers themselves. `environ` is where `${VAR}` is looked up
    (`os.environ` by default).

    Raises:
        ValueError: the file cannot be read as JSON, or an entry is wrong (the message names it).
    """
    where = "the mcpServers configuration"
    base: Path | None = None
    if isinstance(source, Mapping):
        config: object = source
    else:
        path = Path(source)
        where, base = str(path), path.resolve().parent
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ValueError(f"cannot read {where}: {e.strerror or e}") from None
        except ValueError as e:
            raise ValueError(f"{where} is not JSON: {e}") from None
    if not isinstance(config, Mapping):
        raise ValueError(f'{where} must be a JSON object such as {{"mcpServers": {{...}}}}')
    found = cast(Mapping[str, Any], config)
    servers: object = found.get("mcpServers", found.get("servers", found))
    if not isinstance(servers, Mapping) or not servers:
        raise ValueError(f'{where} has no servers: write {{"mcpServers": {{"name": {{...}}}}}}')
    specs: dict[str, ServerSpec] = {}
    for raw_name, entry in cast(Mapping[object, Any], servers).items():
        label = f"{where}: server {json.dumps(raw_name)}"
        if not isinstance(entry, Mapping):
            raise ValueError(
                f'{label} must be an object with "command" or "url", not {json.dumps(entry)}'
            )
        fields = cast(Mapping[str, Any], entry)
        if fields.get("disabled") is True:
            continue
        # Its name in the toolset: letters, digits, `_` and `-`, 32 at most, not a digit first.
        name = _NOT_NAME.sub("_", str(raw_name))[:32] or "_"
        if not (name[0].isalpha() or name[0] == "_"):
            name = f"_{name[:31]}"
        if name in specs:
            raise ValueError(
                f"{label} has the same name as another server once made a name, {name!r}"
            )
        specs[name] = entry_spec(fields, label, base, os.environ if environ is None else environ)
    if not specs:
        raise ValueError(f"{where} has no server that is not disabled")
    return specs


def entry_spec(
    entry: Mapping[str, Any],
    label: str,
    base: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> ServerSpec:
    """One `mcpServers` entry as a spec, `label` naming it in errors, `base` a relative `cwd`'s.

    Raises:
        ValueError: the entry is wrong (the message says what to write).
    """
    others = sorted(set(entry) - _KEYS - {"disabled"})
    if others:
        logger.debug("%s: keys left to other clients: %s", label, ", ".join(others))
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and kind not in _TRANSPORTS:
        raise ValueError(f'{label}: "type" is {json.dumps(kind)}; write "stdio", "http" or "sse"')
    transport = _TRANSPORTS.get(kind) if isinstance(kind, str) else None

    def text(key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f'{label}: "{key}" must be a string, not {json.dumps(value)}')
        return _expand(value, f'{label}: "{key}"', environ)

    def strings(key: str) -> dict[str, str] | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(
            isinstance(v, str) for v in cast(Mapping[str, Any], value).values()
        ):
            raise ValueError(
                f'{label}: "{key}" must be an object of strings, not {json.dumps(value)}'
            )
        return {
            str(k): _expand(v, f'{label}: "{key}"', environ)
            for k, v in cast(Mapping[str, str], value).items()
        }

    command, url = text("command"), text("url")
    if (command is None) == (url is None):
        raise ValueError(
            f'{label} needs exactly one of "command" (a server it runs) and "url" (a server '
            f"it reaches), not {'both' if command else 'neither'}"
        )
    fields: dict[str, Any]
    if url is not None:
        if transport == "stdio":
            raise ValueError(f'{label}: "type" is "stdio", but the entry has a "url"')
        for key in ("args", "env", "cwd"):
            if key in entry:
                raise ValueError(f'{label}: "{key}" is for a "command"; a "url" takes "headers"')
        fields = {"url": url, "headers": strings("headers"), "transport": transport}
    else:
        if transport not in (None, "stdio"):
            raise ValueError(
                f'{label}: "type" is {json.dumps(kind)}, but the entry has a "command"'
            )
        if "headers" in entry:
            raise ValueError(f'{label}: "headers" are for a "url"; a "command" takes "env"')
        args: object = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in cast(list[Any], args)):
            raise ValueError(f'{label}: "args" must be a list of strings, not {json.dumps(args)}')
        argv = [_expand(a, f'{label}: "args"', environ) for a in cast(list[str], args)]
        cwd = text("cwd")
        if cwd is not None and base is not None and not Path(cwd).is_absolute():
            cwd = str(base / cwd)
        fields = {"command": [command, *argv], "env": strings("env"), "cwd": cwd}
    try:
        return ServerSpec(**fields)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None


def _expand(value: str, where: str, environ: Mapping[str, str]) -> str:
    """`value` with `${VAR}`, `${env:VAR}` and `${VAR:-default}` replaced (see the module doc)."""

    def replace(match: re.Match[str]) -> str:
        inner = match.group(1)
        name, sep, default = inner.partition(":-")
        if name.startswith("env:"):
            name = name[4:]
        if not _NAME.match(name):
            raise ValueError(
                f"{where}: ${{{inner}}} is not an environment variable; kosong reads ${{VAR}}, "
                "${env:VAR} and ${VAR:-default} (an editor's ${input:...} or "
                "${workspaceFolder} needs the editor)"
            )
        found = environ.get(name)
        if found is not None:
            return found
        if sep:
            return default
        raise ValueError(
            f"{where}: the environment variable {name} is not set; set it, or write "
            f"${{{name}:-default}} for a default"
        )

    return _VARIABLE.sub(replace, value)
