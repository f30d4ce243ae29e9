"""`prefixed(toolset, prefix)`: every tool's name with a prefix."""

from __future__ import annotations

import re

from kosong.tooling._renamed import RenamingToolset
from kosong.tooling._toolset import Toolset

__all__ = ["PrefixedToolset", "prefixed"]

_PREFIX = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_-]{0,62}\Z")


class PrefixedToolset(RenamingToolset):
    """The wrapped toolset with `prefix` before every tool's name; see `prefixed`."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        """Show each tool of `wrapped` as `prefix` + its name.

        Raises:
            ValueError: `prefix` cannot start a tool name, or a prefixed name is too long.
        """
        if not _PREFIX.match(prefix):
            raise ValueError(
                f"prefix {prefix!r} cannot start a tool name: use 1 to 63 letters, digits, "
                "'_' or '-', starting with a letter or '_' (e.g. 'github_')"
            )
        super().__init__(wrapped)
        self._prefix = prefix
        self.check()

    @property
    def prefix(self) -> str:
        """The prefix."""
        return self._prefix

    def outer_name(self, name: str) -> str:
        """`prefix` + `name`."""
        return self._prefix + name

    def inner_names(self, name: str) -> tuple[str, ...]:
        """`name` without the prefix (nothing, for a name without it)."""
        prefix = self._prefix
        return (name[len(prefix) :],) if name.startswith(prefix) and name != prefix else ()


def prefixed(toolset: Toolset, prefix: str) -> PrefixedToolset:
    """`toolset` with every tool shown, and called, as `prefix` + its name.

    A call to `github_search` reaches `toolset` as a call to `search`, with the same id and
    arguments. Names without the prefix are not found.

    Raises:
        ValueError: `prefix` cannot start a tool name, or a prefixed name would be longer than
            a tool name may be (a tool gained later with such a name is left out, logged).
    """
    return PrefixedToolset(toolset, prefix)
