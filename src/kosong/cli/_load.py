"""What a command line names: every command's TARGET, resolved one way and opened as a toolset.

Every command that serves, inspects or checks tools (`kosong serve`, `worker`, `mcp`,
`tools`, `check`, and `python -m kosong.mcp`, which is `kosong mcp`) reads its TARGET here, so
they all take the same kinds, told apart in this order:

1. an `http://` or `https://` URL: a kosong server's; when its routes are not there (`GET
   /tools` is not kosong's answer) an MCP server's, at the URL, then at the URL + `/mcp`. A
   path ending in `/mcp`, or `--mcp`, goes to MCP at once;
2. text with a space: the command that runs an MCP server over stdio (`'npx -y server'`);
3. `MODULE:ATTR` or `path/to/file.py:ATTR` (ATTR may be dotted: `tools:registry.toolset`);
4. `path/to/file.py` or `MODULE` alone: its `toolset`;
5. a path to an executable, or a program on the PATH that is no importable module: an MCP
   server's command without arguments (`mcp-server-time`).

A module is found from the working directory as `python -m` finds it; a file's folder is made
importable, for its neighbours. ATTR is a `Toolset`, a tool, a list (tuple, set) of tools, or a
function of no arguments returning one of these, sync or async; the function is called (and
awaited) in the loop the command then serves from, so what it opens (an `MCPToolset`'s
connections, say) stays usable. Another kind of target is one more `Target.kind` and one more
branch of `open_target`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.util
import inspect
import logging
import os
import shutil
import sys
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from kosong._extras import install_hint
from kosong._guard import Failed, await_guarded, call_guarded
from kosong.cli._errors import CLIError
from kosong.server import as_toolset
from kosong.tooling import Toolset
from kosong.tooling.error import describe_exception

__all__ = [
    "TARGET_HELP",
    "Target",
    "load_object",
    "open_target",
    "read_tools",
    "resolve",
]

TARGET_HELP = (
    "TARGET is MODULE:ATTR or path/to/file.py:ATTR (a toolset, a list of tools, or a function "
    "returning one); a module or a file alone, for its `toolset`; the URL of a kosong server or "
    "of an MCP server; or the command that runs an MCP server over stdio, with its arguments "
    "(quoted) or without."
)
_KINDS = (
    "MODULE:ATTR, path/to/file.py[:ATTR], MODULE alone (its `toolset`), a server URL, or the "
    "command of an MCP server"
)
DEFAULT_ATTRIBUTE = "toolset"


@dataclass(frozen=True, slots=True)
class Target:
    """A TARGET as resolved: what kind it is, and the text to open it with."""

    kind: Literal["object", "url", "mcp-url", "command"]
    """`object`: a Python object (`MODULE:ATTR`); `url`: a kosong server (maybe MCP);
    `mcp-url`: an MCP server's URL; `command`: an MCP server's stdio command."""
    text: str
    """`MODULE:ATTR` (the attribute filled in), the URL, or the command line."""


def resolve(text: str, *, mcp: bool = False) -> Target:
    """The kind of target `text` is (see the module doc); `mcp` forces a URL to MCP.

    Raises:
        CLIError: `text` is none of the kinds.
    """
    text = text.strip()
    if text.startswith(("http://", "https://")):
        path = text.split("?", 1)[0].rstrip("/")
        return Target("mcp-url" if mcp or path.endswith("/mcp") else "url", text)
    if mcp:
        raise CLIError(f"--mcp goes with a URL; {text!r} is not one")
    if any(c.isspace() for c in text):
        return Target("command", text)
    if ":" in text:
        return Target("object", text)
    if text.endswith(".py") or Path(text).suffix == ".py":
        return Target("object", f"{text}:{DEFAULT_ATTRIBUTE}")
    path = Path(text)
    if ("/" in text or os.sep in text) and path.is_file():
        if os.access(path, os.X_OK):
            return Target("command", text)
        raise CLIError(f"{text!r} is neither a Python file (.py) nor an executable")
    if _is_module_name(text) and _importable(text):
        return Target("object", f"{text}:{DEFAULT_ATTRIBUTE}")
    if shutil.which(text):
        return Target("command", text)
    raise CLIError(f"no module, file or command named {text!r}; a TARGET is {_KINDS}")


def _is_module_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _importable(name: str) -> bool:
    _with_working_directory()
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that does not import
        return False


def _with_working_directory() -> None:
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the current directory, as `python -m` has it


def _import(module_part: str) -> Any:
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise CLIError(f"no file {module_part!r} (a TARGET is {_KINDS})")
        name = f"_kosong_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CLIError(f"cannot load {module_part!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))  # so it can import its neighbours
        ran = call_guarded(spec.loader.exec_module, module)  # the user's code
        if isinstance(ran, Failed):
            e = ran.error
            raise CLIError(f"running {module_part!r} failed: {describe_exception(e)}") from e
        return module
    _with_working_directory()
    imported = call_guarded(importlib.import_module, module_part)  # the user's code
    if not isinstance(imported, Failed):
        return imported
    e = imported.error
    if isinstance(e, ModuleNotFoundError):
        if e.name and (module_part == e.name or module_part.startswith(e.name + ".")):
            raise CLIError(
                f"no module named {module_part!r} (run from the directory that holds it, "
                "or give a file path such as path/to/tools.py:toolset)"
            ) from e
        raise CLIError(f"importing {module_part!r} failed: {e}") from e
    raise CLIError(f"importing {module_part!r} failed: {describe_exception(e)}") from e


def load_object(target: str) -> Any:
    """The object `MODULE:ATTR` names (ATTR may be dotted).

    Raises:
        CLIError: the target is malformed, the module cannot be imported, or has no such
            attribute.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise CLIError(f"{target!r} is not MODULE:ATTR, e.g. my_tools:toolset")
    module = _import(module_part)
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            names = cast(dict[str, Any], vars(module))
            ranked = sorted(
                (rank, name)
                for name, value in names.items()
                if not name.startswith("_")
                and (rank := _servable(value, module.__name__)) is not None
            )
            candidates = [name for _, name in ranked]
            hint = f"; it has {', '.join(candidates)}" if candidates else ""
            example = f" (write {module_part}:{candidates[0]})" if candidates else ""
            raise CLIError(
                f"module {module_part!r} has no attribute {attr!r}{hint}{example}"
            ) from None
    return found


def _is_factory(value: object) -> bool:
    """A function (or method, or partial) to call for the toolset; a tool or a class is not."""
    return inspect.isroutine(value) or isinstance(value, functools.partial)


def _servable(value: object, module: str) -> int | None:
    """How likely `value` is what the user meant (lowest first), None if it cannot be served.

    A toolset first, then a collection of tools, one tool, a factory function.
    """
    if isinstance(value, type):
        return None  # a class (even a Toolset class) is not a toolset
    if isinstance(value, Toolset):
        return 0
    if _is_factory(value):  # the module's own functions only, not what it imported
        return 3 if getattr(value, "__module__", None) == module else None
    try:
        as_toolset(value)
    except (TypeError, ValueError):  # not servable: only the answer matters here
        return None
    return 1 if isinstance(value, list | tuple | set | frozenset) else 2


async def _open_object(target: str) -> Toolset:
    """The toolset `MODULE:ATTR` names, its factory called and awaited."""
    found = load_object(target)
    if _is_factory(found):
        made: object = await await_guarded(found)
        if isinstance(made, Failed):  # the user's factory failed: say so, in one line
            e = made.error
            if isinstance(e, CLIError):
                raise e
            raise CLIError(f"calling {target} failed: {describe_exception(e)}") from e
        found = made
    try:
        return as_toolset(found)
    except (TypeError, ValueError) as e:
        raise CLIError(f"{target!r} cannot be served: {e}") from e


@contextlib.asynccontextmanager
async def open_target(
    text: str,
    *,
    token: str | None = None,
    headers: Sequence[str] = (),
    mcp: bool = False,
) -> AsyncGenerator[Toolset]:
    """The toolset TARGET `text` names, open for the block (connections closed after it).

    `token` and `headers` ('Name: value' lines) go with a URL; `mcp` forces a URL to MCP.

    Raises:
        CLIError: the target is none of the kinds, cannot be loaded or reached, or refuses.
    """
    target = resolve(text, mcp=mcp)
    sent = _headers(headers)
    if (token is not None or sent) and target.kind not in ("url", "mcp-url"):
        raise CLIError("--token and --header go with a server URL, not with a module or command")
    if target.kind == "object":
        yield await _open_object(target.text)
    elif target.kind == "url":
        async with _open_url(target.text, token, sent) as toolset:
            yield toolset
    else:
        async with _open_mcp(target, token, sent) as toolset:
            yield toolset


def read_tools(text: str, **options: Any) -> Toolset:
    """The toolset of TARGET `text` for a command that only reads its tools (in its own loop).

    Raises:
        CLIError: as `open_target`.
    """

    async def read() -> Toolset:
        async with open_target(text, **options) as toolset:
            return toolset

    return asyncio.run(read())


def _headers(lines: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            raise CLIError(f"--header {line!r} is not 'Name: value'")
        headers[name.strip()] = value.strip()
    return headers


_TOKEN_HINT = "give the token with --token TOKEN or the KOSONG_TOKEN environment variable"


@contextlib.asynccontextmanager
async def _open_url(
    url: str, token: str | None, headers: dict[str, str]
) -> AsyncGenerator[Toolset]:
    """A kosong server's tools; an MCP server's when the kosong routes are not there."""
    import httpx

    from kosong.remote import RemoteToolset

    remote = RemoteToolset(url, token=token, headers=headers)
    try:
        try:
            await remote.refresh()
        except httpx.HTTPStatusError as e:
            status = e.response.status_code
            if status not in (404, 405, 406):
                hint = f"; {_TOKEN_HINT}" if status == 401 else ""
                raise CLIError(f"{url} answered {status}: {_reason(e.response)}{hint}") from None
        except (ValueError, KeyError, TypeError):
            pass  # an answer, but not kosong's list of tools: maybe an MCP server
        except httpx.HTTPError as e:
            raise CLIError(f"cannot reach {url}: {describe_exception(e)}") from None
        else:
            yield remote
            return
    finally:
        await remote.aclose()
    # Not a kosong server: an MCP server at the URL, or at the URL + /mcp.
    base = url.split("?", 1)[0].rstrip("/")
    tried: list[str] = []
    for candidate in (url, f"{base}/mcp"):
        toolset, error = await _connect_mcp(Target("mcp-url", candidate), token, headers)
        if error is None:
            try:
                yield toolset
            finally:
                await toolset.aclose()
            return
        await toolset.aclose()
        if "401" in error:
            raise CLIError(f"cannot use the MCP server {candidate}: {error}; {_TOKEN_HINT}")
        tried.append(f"{candidate}: {error}")
    raise CLIError(
        f"{url} is neither a kosong server (GET {base}/tools is not its list of tools) nor an "
        f"MCP server ({'; '.join(tried)}); give the URL of an MCP server's endpoint, often "
        f"{base}/mcp"
    )


@contextlib.asynccontextmanager
async def _open_mcp(
    target: Target, token: str | None, headers: dict[str, str]
) -> AsyncGenerator[Toolset]:
    """An MCP server's tools, by URL or stdio command."""
    toolset, error = await _connect_mcp(target, token, headers)
    try:
        if error is not None:
            hint = f"; {_TOKEN_HINT}" if "401" in error else ""
            raise CLIError(f"cannot use the MCP server {target.text}: {error}{hint}")
        yield toolset
    finally:
        await toolset.aclose()


async def _connect_mcp(
    target: Target, token: str | None, headers: dict[str, str]
) -> tuple[Any, str | None]:
    """An `MCPToolset` of the one server `target` names, connected; and why not, if it failed.

    The caller closes the toolset either way.
    """
    try:
        from kosong.mcp import MCPToolset, ServerSpec
    except ImportError:
        raise CLIError(f"the MCP SDK is missing: {install_hint('mcp')}") from None
    # The command says what failed in one line of its own; the toolset's warnings would repeat it.
    logging.getLogger("kosong.mcp").setLevel(logging.ERROR)
    if target.kind == "command":
        server = ServerSpec(command=target.text)
    else:
        if token is not None:
            headers = {**headers, "Authorization": f"Bearer {token}"}
        server = ServerSpec(url=target.text, headers=headers)
    toolset = MCPToolset({"mcp": server}, connect_timeout=20)
    await toolset.connect()
    return toolset, toolset.errors.get("mcp")


def _reason(response: Any) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):  # not JSON, or not our error body
        return str(response.text[:200] or response.reason_phrase)
