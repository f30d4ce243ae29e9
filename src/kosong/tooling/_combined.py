"""`combined(*toolsets)`: several toolsets as one."""

from __future__ import annotations

import logging
from collections import Counter

from kosong.message import ToolCall
from kosong.tooling._arguments import DEFAULT_LIMITS, ArgumentLimits
from kosong.tooling._dispatch import BaseToolset
from kosong.tooling._result import ToolResult, Toolset
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import Derived, find_in, forward, limits_of, version_of
from kosong.tooling.error import ToolNotFoundError
from kosong.utils.typing import JsonType

__all__ = ["CombinedToolset", "combined"]

logger = logging.getLogger(__name__)


class CombinedToolset(BaseToolset):
    """The tools of several toolsets as one toolset; see `combined`."""

    def __init__(self, *toolsets: Toolset, limits: ArgumentLimits | None = None) -> None:
        """Combine `toolsets`, in order.

        Raises:
            ValueError: two of them have a tool of the same name.
        """
        self._parts = toolsets
        self._limits = limits or _strictest([limits_of(part) for part in toolsets])
        self._warned: set[str] = set()
        self._listed = Derived(self._list)
        counts = Counter(tool.name for part in toolsets for tool in part.tools)
        clashes = sorted(name for name, count in counts.items() if count > 1)
        if clashes:
            raise ValueError(
                f"combined toolsets share tool names ({', '.join(clashes)}): filter, prefix or "
                "rename one of them first"
            )

    @property
    def parts(self) -> tuple[Toolset, ...]:
        """The toolsets combined, in order."""
        return self._parts

    @property
    def limits(self) -> ArgumentLimits:
        """The caps on arguments: given, or the strictest of each cap among the parts."""
        return self._limits

    @property
    def tools(self) -> list[Tool]:
        """Every part's tools, in order; a name two parts now share is left out."""
        return list(self._listed.get(self.tools_version))

    @property
    def tools_version(self) -> object:
        """The parts' versions together; None if one of them cannot tell."""
        versions = tuple(version_of(part) for part in self._parts)
        return None if None in versions else versions

    def _list(self) -> list[Tool]:
        listed = [tool for part in self._parts for tool in part.tools]
        counts = Counter(tool.name for tool in listed)
        if len(counts) == len(listed):
            return listed
        for name, count in counts.items():
            if count > 1:
                self._warn(name)
        return [tool for tool in listed if counts[tool.name] == 1]

    def find_tool(self, name: str) -> Tool | None:
        """The tool called `name` of the one part that has it, or None."""
        found = self._resolve(name)
        return found[1] if found is not None else None

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Pass the call on to the part that has the tool."""
        found = self._resolve(call.function.name)
        if found is None:  # gone (or now clashing) since the call was resolved
            return ToolResult(call.id, ToolNotFoundError(call.function.name))
        part, inner = found
        return await forward(part, call, inner, arguments)

    def _resolve(self, name: str) -> tuple[Toolset, Tool] | None:
        found: tuple[Toolset, Tool] | None = None
        for part in self._parts:
            tool = find_in(part, name)
            if tool is not None:
                if found is not None:
                    self._warn(name)
                    return None
                found = (part, tool)
        return found

    def _warn(self, name: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            logger.warning(
                "combined toolsets: `%s` is now the name of tools in two of them; it is left "
                "out, and calls to it are not found, until one of them is renamed or removed",
                name,
            )


def _strictest(limits: list[ArgumentLimits]) -> ArgumentLimits:
    if not limits or all(each == DEFAULT_LIMITS for each in limits):
        return DEFAULT_LIMITS
    return ArgumentLimits(
        max_length=min(each.max_length for each in limits),
        max_depth=min(each.max_depth for each in limits),
        offload_length=min(each.offload_length for each in limits),
    )


def combined(*toolsets: Toolset, limits: ArgumentLimits | None = None) -> CombinedToolset:
    """The tools of `toolsets` as one toolset, each call passed on to the toolset that has it.

    `tools` lists every part's tools, in order. The arguments are parsed once, with `limits`:
    by default the strictest of each cap among the parts, so no part gets arguments its own
    caps would refuse.

    Names must be unique across the parts: a clash at construction is a ValueError (prefix,
    rename or filter a part first). The parts may change afterwards (an MCP server adds a
    tool): a name that two parts come to share is then left out of `tools`, calls to it are
    `ToolNotFoundError`, and a warning is logged, until the clash is gone. Never is one of two
    same-named tools picked in silence.

    Raises:
        ValueError: two toolsets have a tool of the same name.
    """
    return CombinedToolset(*toolsets, limits=limits)
