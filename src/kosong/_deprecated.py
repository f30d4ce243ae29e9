"""Old names that keep working for one release, with a DeprecationWarning (private).

A module whose public names moved or became private sets
`__getattr__ = moved_names(__name__, {...})`: each old name still imports, with a warning that
says where it lives now; any other unknown name is the usual `AttributeError`. An argument or
attribute with an older name calls `warn_old_name`. docs/policies.md ("What changed") lists
every old name.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping

__all__ = ["moved_names", "warn_old_name"]


def moved_names(module: str, moved: Mapping[str, tuple[str, str]]) -> Callable[[str], object]:
    """A module `__getattr__` serving each moved name from its new place, with a warning.

    Args:
        module: the public module the names left (its `__name__`).
        moved: old name -> (where the object lives now: a module, relative to `module` when it
            starts with a dot, and `:name` when its name changed too; what to write instead).
    """

    def __getattr__(name: str) -> object:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, advice = moved[name]
        home, _, attribute = where.partition(":")
        warnings.warn(
            f"`{module}.{name}` is deprecated and goes in the next release: {advice}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home, module), attribute or name)

    return __getattr__


def warn_old_name(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that `old` (an argument or attribute) is the deprecated name of `new`.

    `stacklevel` 3 points at the code that used the old name, one call above the function or
    property that calls this.
    """
    warnings.warn(
        f"`{old}` is deprecated and goes in the next release: use `{new}`",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
