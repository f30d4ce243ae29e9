"""Finding what a command line names: a target (`MODULE:ATTR`, `path/to/file.py:ATTR`) or a URL.

Every command that serves or inspects tools (`kosong serve`, `kosong mcp`, `kosong tools`,
`kosong check`, and `python -m kosong.mcp`, which is `kosong mcp`) reads its target here, so
they all accept the same ones:

- `MODULE:ATTR`, the module found from the working directory as `python -m` finds it, or
  `path/to/file.py:ATTR` (the file's folder importable, for its neighbours); ATTR may be
  dotted (`tools:registry.toolset`);
- ATTR is a `Toolset`, a tool, a list (tuple, set) of tools, or a function of no arguments
  returning one of these, sync or async. An async one is awaited in the loop the command then
  serves from, so what it opens (an `MCPToolset`'s connections, say) stays usable.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, cast

from kosong.cli._errors import CLIError
from kosong.server import as_toolset
from kosong.tooling import Toolset
from kosong.tooling.error import describe_exception

__all__ = ["is_url", "load_object", "load_toolset", "open_toolset"]

_USAGE = "MODULE:ATTR, e.g. my_tools:toolset or examples/tools.py:toolset"


def is_url(target: str) -> bool:
    """Whether `target` names a server rather than a module."""
    return target.startswith(("http://", "https://"))


def _import(module_part: str) -> Any:
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise CLIError(f"no file {module_part!r} (the part before ':' in {_USAGE})")
        name = f"_kosong_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CLIError(f"cannot load {module_part!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))  # so it can import its neighbours
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise CLIError(f"running {module_part!r} failed: {type(e).__name__}: {e}") from e
        return module
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the current directory, as `python -m` has it
    try:
        return importlib.import_module(module_part)
    except ModuleNotFoundError as e:
        if e.name and (module_part == e.name or module_part.startswith(e.name + ".")):
            raise CLIError(
                f"no module named {module_part!r} (run from the directory that holds it, "
                "or give a file path such as path/to/tools.py:toolset)"
            ) from e
        raise CLIError(f"importing {module_part!r} failed: {e}") from e
    except Exception as e:
        raise CLIError(f"importing {module_part!r} failed: {type(e).__name__}: {e}") from e


def load_object(target: str) -> Any:
    """The object `MODULE:ATTR` names (ATTR may be dotted).

    Raises:
        CLIError: the target is malformed, the module cannot be imported, or has no such
            attribute.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise CLIError(f"{target!r} is not {_USAGE}")
    module = _import(module_part)
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            names = cast(dict[str, Any], vars(module))
            candidates = sorted(
                name
                for name, value in names.items()
                if not name.startswith("_") and _servable(value, module.__name__)
            )
            hint = f"; it has {', '.join(candidates)}" if candidates else ""
            raise CLIError(f"module {module_part!r} has no attribute {attr!r}{hint}") from None
    return found


def _is_factory(value: object) -> bool:
    """A function (or method, or partial) to call for the toolset; a tool or a class is not."""
    return inspect.isroutine(value) or isinstance(value, functools.partial)


def _servable(value: object, module: str) -> bool:
    if isinstance(value, Toolset):
        return True
    if _is_factory(value):  # the module's own functions only, not what it imported
        return getattr(value, "__module__", None) == module
    try:
        as_toolset(value)
    except Exception:
        return False
    return not isinstance(value, type)


async def open_toolset(target: str) -> Toolset:
    """The toolset `MODULE:ATTR` names (see the module doc), its factory called and awaited.

    Raises:
        CLIError: as `load_object`, the factory failed, or the object is not servable.
    """
    found = load_object(target)
    if _is_factory(found):
        try:
            made: object = found()
            if inspect.isawaitable(made):
                made = await made
        except CLIError:
            raise
        except Exception as e:  # the user's factory failed: say so, in one line
            raise CLIError(f"calling {target} failed: {describe_exception(e)}") from e
        found = made
    try:
        return as_toolset(found)
    except Exception as e:
        raise CLIError(f"{target!r} cannot be served: {e}") from e


def load_toolset(target: str) -> Toolset:
    """`open_toolset` for a command that only reads the tools (no loop of its own to serve).

    Raises:
        CLIError: as `open_toolset`.
    """
    return asyncio.run(open_toolset(target))
