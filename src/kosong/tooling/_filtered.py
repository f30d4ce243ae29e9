"""`filtered(toolset, names or predicate)`: only some of a toolset's tools."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kosong.tooling._result import Toolset
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import WrapperToolset, find_in

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

    @property
    def tools(self) -> list[Tool]:
        """The wrapped toolset's tools that are kept, in its order."""
        keep = self._keep
        return [tool for tool in self._wrapped.tools if keep(tool)]

    def find_tool(self, name: str) -> Tool | None:
        """The tool called `name`, if it is kept."""
        tool = find_in(self._wrapped, name)
        return tool if tool is not None and self._keep(tool) else None


def filtered(toolset: Toolset, keep: Iterable[str] | Callable[[Tool], bool]) -> FilteredToolset:
    """`toolset` showing only some of its tools: those named in `keep`, or those `keep` accepts.

    `keep` is a collection of names (`["search", "fetch"]`), or a predicate called with each
    tool's definition (`lambda tool: not tool.destructive_hint`), whenever the tools are
    listed and on every call. A call to a tool that is not kept is `ToolNotFoundError`, exactly
    like a tool that does not exist. To leave tools out by name:
    `filtered(toolset, lambda tool: tool.name not in {"delete", "drop"})`.

    Raises:
        TypeError: `keep` is a single string (give a list of names).
    """
    return FilteredToolset(toolset, keep)
