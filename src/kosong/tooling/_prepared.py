"""`prepared(toolset, fn)`: the definitions the model sees, decided by a function at each step."""

from __future__ import annotations

from collections.abc import Callable

from kosong.message import ToolCall
from kosong.tooling._result import ToolResult, Toolset
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import Derived, WrapperToolset, find_in, forward, version_of
from kosong.tooling.error import ToolNotFoundError
from kosong.utils.typing import JsonType

__all__ = ["PrepareFunction", "PreparedToolset", "prepared"]

PrepareFunction = Callable[[list[Tool]], list[Tool]]
"""Given the toolset's definitions, the definitions the model sees (a subset, maybe changed)."""


class PreparedToolset(WrapperToolset):
    """The wrapped toolset, its definitions passed through `prepare` when read; see `prepared`."""

    def __init__(self, wrapped: Toolset, prepare: PrepareFunction) -> None:
        """Show the model `prepare(tools)` instead of `wrapped`'s tools."""
        super().__init__(wrapped)
        self._prepare = prepare
        self._shown: dict[str, Tool] | None = None
        # What `prepare` may return: made again only when the wrapped tools change.
        self._names = Derived(lambda: frozenset(tool.name for tool in self._wrapped.tools))

    @property
    def tools(self) -> list[Tool]:
        """`prepare(tools)`, checked; calls are accepted for these tools until the next read.

        Raises:
            ValueError: `prepare` returned a tool the wrapped toolset does not have, the same
                name twice, or something that is not a `Tool`.
        """
        return list(self._read().values())

    @property
    def tools_version(self) -> None:
        """None: `prepare` decides anew at every read."""
        return None

    def _read(self) -> dict[str, Tool]:
        given = self._wrapped.tools
        names = self._names.get(version_of(self._wrapped))
        shown: dict[str, Tool] = {}
        for tool in self._prepare(list(given)):
            if not isinstance(tool, Tool):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(f"the prepare function returned {type(tool).__name__}, not a Tool")
            if tool.name not in names:
                raise ValueError(
                    f"the prepare function returned a tool named `{tool.name}`, which the "
                    "toolset does not have (rename tools with renamed(), not in prepare)"
                )
            if tool.name in shown:
                raise ValueError(f"the prepare function returned `{tool.name}` twice")
            shown[tool.name] = tool
        self._shown = shown
        return shown

    def find_tool(self, name: str) -> Tool | None:
        """The definition shown as `name` by the latest `tools`, or None."""
        shown = self._shown if self._shown is not None else self._read()
        return shown.get(name)

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Pass the call on, with the wrapped toolset's own definition of the tool."""
        inner = find_in(self._wrapped, call.function.name)
        if inner is None:  # removed since it was listed
            return ToolResult(call.id, ToolNotFoundError(call.function.name))
        return await forward(self._wrapped, call, inner, arguments)


def prepared(toolset: Toolset, prepare: PrepareFunction) -> PreparedToolset:
    """`toolset` showing the model the definitions `prepare(tools)` returns.

    `prepare` gets the list of `toolset`'s definitions each time `tools` is read (`step` reads
    it once per step) and returns the list the model sees: fewer tools, another order, or
    changed copies (`tool.model_copy(update={"description": ...})`; do not change the
    definitions given, they are the toolset's own). A call is accepted for a tool of the list
    returned last, and runs the toolset's own tool: a changed schema changes what the model
    reads, not what the tool accepts. Use `renamed` to change names.
    """
    return PreparedToolset(toolset, prepare)
