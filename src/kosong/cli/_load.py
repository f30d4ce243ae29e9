"""Finding what a command line names: `MODULE:ATTR` (a module or a .py file) or a URL."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, cast

from kosong.cli._errors import CLIError
from kosong.server import as_toolset
from kosong.tooling import Toolset

__all__ = ["is_url", "load_object", "load_toolset"]

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
                if not name.startswith("_") and _servable(value)
            )
            hint = f"; it has {', '.join(candidates)}" if candidates else ""
            raise CLIError(f"module {module_part!r} has no attribute {attr!r}{hint}") from None
    return found


def _servable(value: object) -> bool:
    if isinstance(value, Toolset):
        return True
    try:
        as_toolset(value)
    except Exception:
        return False
    return not isinstance(value, type)


def load_toolset(target: str) -> Toolset:
    """The toolset `MODULE:ATTR` names: a Toolset, or a tool or a list of tools.

    Raises:
        CLIError: as `load_object`, or the object is none of these.
    """
    found = load_object(target)
    try:
        return as_toolset(found)
    except Exception as e:
        raise CLIError(f"{target!r} cannot be served: {e}") from e
