"""`filtered(toolset, names or predicate)`: only some of a toolset's tools."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kosong.tooling._result import Toolset
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import Derived, WrapperToolset, version_of

__all__ = ["FilteredToolset", "filtered"]


class FilteredToolset(WrapperToolset):
    """The wrapped toolset's tools that `keep` accepts; see `filtered`."""

    def __init__(self, wrapped: Toolset, keep: Iterable[str] | Callable[[Tool], bool]) -> None:
        """Keep the tools named in `keep`, or those for which `keep(tool)` is true.

        Raises:
            TypeError: `keep` is a single string (give a list of names).
        """
        super().__init__(wrapped)
        if isinstance(keep, str):
            raise TypeError(f"filtered() takes a list of names, not one string: [{keep!r}]")
        if callable(keep):
            self._keep = keep
        else:
            names = frozenset(keep)
            self._keep: Callable[[Tool], bool] = lambda tool: tool.name in names
        self._kept = Derived(self._select)

    @property
    def tools(self) -> list[Tool]:
        """The wrapped toolset's tools that are kept, in its order."""
        return list(self._kept.get(version_of(self._wrapped)).values())

    @property
    def tools_version(self) -> object:
        """The wrapped toolset's version: what is kept changes only with the tools."""
        return version_of(self._wrapped)

    def find_tool(self, name: str) -> Tool | None:
        """The tool called `name`, if it is kept."""
        return self._kept.get(version_of(self._wrapped)).get(name)

    def _select(self) -> dict[str, Tool]:
        keep = self._keep
        return {tool.name: tool for tool in self._wrapped.tools if keep(tool)}


def filtered(toolset: Toolset, keep: Iterable[str] | Callable[[Tool], bool]) -> FilteredToolset:
    """`toolset` showing only some of its tools: those named in `keep`, or those `keep` accepts.

    `keep` is a collection of names (`["search", "fetch"]`), or a predicate of a tool's
    definition (`lambda tool: not tool.destructive_hint`), called for each tool when the
    toolset's tools change (not at every step: its answer must depend on the definition only;
    `prepared` decides at each step). A call to a tool that is not kept is
    `ToolNotFoundError`, exactly like a tool that does not exist. To leave tools out by name:
    `filtered(toolset, lambda tool: tool.name not in {"delete", "drop"})`.

    Raises:
        TypeError: `keep` is a single string (give a list of names).
    """
    return FilteredToolset(toolset, keep)
