"""`renamed(toolset, {old: new})`: tools shown under other names; and the renaming it shares.

`RenamingToolset` is what `renamed` and `prefixed` have in common: a call to a tool's new name
reaches the wrapped toolset under the tool's own name (and its result comes back under the
caller's call id); a definition is shown under the new name. Its subclasses only say how
names map.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping

from kosong.message import ToolCall
from kosong.tooling._result import ToolResult, Toolset
from kosong.tooling._schema import check_tool_name
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import (
    Derived,
    WrapperToolset,
    call_named,
    definition_named,
    find_in,
    forward,
    version_of,
)
from kosong.tooling.error import ToolNotFoundError
from kosong.utils.typing import JsonType

__all__ = ["RenamedToolset", "RenamingToolset", "renamed"]

logger = logging.getLogger(__name__)


class RenamingToolset(WrapperToolset, ABC):
    """A wrapper showing the wrapped toolset's tools under other names (`outer_name`).

    Two tools that would end up with one name, or a name that is not a valid tool name, make
    construction fail with ValueError (subclasses call `check()` once configured). A clash or
    bad name that appears later, because the wrapped toolset gained a tool, leaves the tools
    concerned out of `tools` and answers calls to that name with `ToolNotFoundError` (a
    warning is logged once per name): the model is never shown two tools of one name, and a
    call never reaches a tool it may not have meant.
    """

    def __init__(self, wrapped: Toolset) -> None:
        """Wrap `wrapped`; subclasses call `check()` when their names are set."""
        super().__init__(wrapped)
        # Inner name -> (its definition, the one shown): a definition is renamed once, not
        # per call; rebuilt whenever the wrapped tools change, so removed tools are forgotten.
        self._shown: dict[str, tuple[Tool, Tool]] = {}
        self._warned: set[str] = set()
        self._listed = Derived(lambda: self._definitions(strict=False))

    @abstractmethod
    def outer_name(self, name: str) -> str:
        """The name the tool called `name` in the wrapped toolset is shown under."""

    @abstractmethod
    def inner_names(self, name: str) -> tuple[str, ...]:
        """The names in the wrapped toolset of the tools that could be shown as `name`."""

    def check(self) -> None:
        """Raise ValueError if the wrapped toolset's tools cannot all be shown, renamed."""
        self._definitions(strict=True)

    @property
    def tools(self) -> list[Tool]:
        """The wrapped toolset's tools, renamed (less any whose new name clashes)."""
        return list(self._listed.get(version_of(self._wrapped)))

    @property
    def tools_version(self) -> object:
        """The wrapped toolset's version: the names map the same way until it changes."""
        return version_of(self._wrapped)

    def find_tool(self, name: str) -> Tool | None:
        """The definition shown as `name`, or None."""
        found = self._resolve(name)
        if found is None:
            return None
        try:
            return self._definition(found[1], name)
        except ValueError as e:
            self._warn(name, str(e))
            return None

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Pass the call on under the tool's name in the wrapped toolset."""
        found = self._resolve(call.function.name)
        if found is None:  # gone (or clashing) since the call was resolved
            return ToolResult(call.id, ToolNotFoundError(call.function.name))
        source, inner = found
        return await forward(self._wrapped, call_named(call, source), inner, arguments)

    def _resolve(self, name: str) -> tuple[str, Tool] | None:
        found: list[tuple[str, Tool]] = []
        for source in self.inner_names(name):
            tool = find_in(self._wrapped, source)
            if tool is not None:
                found.append((source, tool))
        if len(found) > 1:
            sources = " and ".join(f"`{source}`" for source, _ in found)
            self._warn(name, f"the tools {sources} would both be called `{name}`")
            return None
        return found[0] if found else None

    def _definition(self, tool: Tool, name: str) -> Tool:
        cached = self._shown.get(tool.name)
        if cached is not None and cached[0] is tool and cached[1].name == name:
            return cached[1]
        shown = tool if tool.name == name else definition_named(tool, name)
        self._shown[tool.name] = (tool, shown)
        return shown

    def _definitions(self, *, strict: bool) -> list[Tool]:
        given = self._wrapped.tools
        names = [self.outer_name(tool.name) for tool in given]
        counts = Counter(names)
        shown: list[Tool] = []
        kept: dict[str, tuple[Tool, Tool]] = {}
        for tool, name in zip(given, names, strict=True):
            try:
                if counts[name] > 1:
                    sources = " and ".join(
                        f"`{t.name}`" for t, n in zip(given, names, strict=True) if n == name
                    )
                    raise ValueError(f"the tools {sources} would both be called `{name}`")
                definition = self._definition(tool, name)
            except ValueError as e:
                if strict:
                    raise ValueError(f"{type(self).__name__}: {e}") from None
                self._warn(name, str(e))
                continue
            kept[tool.name] = (tool, definition)
            shown.append(definition)
        self._shown = kept
        return shown

    def _warn(self, name: str, problem: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            logger.warning("%s: `%s` is left out: %s", type(self).__name__, name, problem)


class RenamedToolset(RenamingToolset):
    """The wrapped toolset with some tools under new names; see `renamed`."""

    def __init__(self, wrapped: Toolset, names: Mapping[str, str]) -> None:
        """Show the tool called `old` as `new`, for each `old: new` of `names`.

        Raises:
            ValueError: a new name is not a valid tool name, two tools would end up with one
                name, or two old names are given the same new one.
        """
        super().__init__(wrapped)
        self._names = dict(names)
        self._reverse: dict[str, str] = {}
        for old, new in self._names.items():
            check_tool_name(new)
            if new in self._reverse:
                raise ValueError(f"`{self._reverse[new]}` and `{old}` are both renamed `{new}`")
            self._reverse[new] = old
        self.check()

    @property
    def names(self) -> dict[str, str]:
        """The renaming, old name -> new name."""
        return dict(self._names)

    def outer_name(self, name: str) -> str:
        """`name`'s new name, or `name` itself."""
        return self._names.get(name, name)

    def inner_names(self, name: str) -> tuple[str, ...]:
        """The old name renamed `name`, and `name` itself unless it was renamed away."""
        own = () if name in self._names else (name,)
        old = self._reverse.get(name)
        return own if old is None else (old, *own)


def renamed(toolset: Toolset, names: Mapping[str, str]) -> RenamedToolset:
    """`toolset` with the tool called `old` shown, and called, as `new` (`{old: new}`).

    The other tools keep their names. A call to `new` reaches `toolset` as a call to `old`,
    with the same id and arguments; `old` itself is no longer a name the model can call. A
    name `toolset` does not have (yet: an MCP server not connected) is renamed once it appears.

    Raises:
        ValueError: a new name is not a valid tool name, or two tools would end up with one
            name (see `RenamingToolset` for a clash that appears later).
    """
    return RenamedToolset(toolset, names)
