"""`WrapperToolset`: the base of the composition wrappers, and how they pass a call on.

Each wrapper (`filtered`, `prefixed`, `renamed`, `prepared`) overrides what it changes, and
reaches the toolset it wraps through `forward`, with the arguments the dispatcher parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

from kosong.message import ToolCall
from kosong.tooling._arguments import DEFAULT_LIMITS, ArgumentLimits
from kosong.tooling._dispatch import BaseToolset, dispatch
from kosong.tooling._result import ToolResult, Toolset
from kosong.tooling._schema import check_tool_name
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolRuntimeError
from kosong.utils.typing import JsonType

__all__ = [
    "Derived",
    "WrapperToolset",
    "call_named",
    "definition_named",
    "find_in",
    "forward",
    "limits_of",
    "version_of",
]

_T = TypeVar("_T")


class WrapperToolset(BaseToolset):
    """A toolset that passes every call on to the toolset it wraps.

    As it is, it changes nothing: subclasses override what they change (`tools` and
    `find_tool` for what the model sees, `call_tool` for what a call does). Its `limits` are
    the wrapped toolset's, so arguments are parsed once, with the caps of the toolset that
    runs them (the defaults, for a toolset that has none). `wrapped` may be any `Toolset`.
    """

    def __init__(self, wrapped: Toolset) -> None:
        """Wrap `wrapped`."""
        self._wrapped = wrapped

    @property
    def wrapped(self) -> Toolset:
        """The toolset this one passes calls on to."""
        return self._wrapped

    @property
    def tools(self) -> list[Tool]:
        """The wrapped toolset's tools."""
        return self._wrapped.tools

    @property
    def tools_version(self) -> object:
        """The wrapped toolset's version (see `BaseToolset.tools_version`)."""
        return version_of(self._wrapped)

    @property
    def limits(self) -> ArgumentLimits:
        """The wrapped toolset's caps on arguments."""
        return limits_of(self._wrapped)

    def find_tool(self, name: str) -> Tool | None:
        """The wrapped toolset's tool called `name`, or None."""
        return find_in(self._wrapped, name)

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Pass the call on to the wrapped toolset."""
        return await forward(self._wrapped, call, tool, arguments)


def limits_of(toolset: Toolset) -> ArgumentLimits:
    """The caps `toolset` parses arguments with (the defaults for a plain `Toolset`)."""
    return toolset.limits if isinstance(toolset, BaseToolset) else DEFAULT_LIMITS


def version_of(toolset: Toolset) -> object:
    """`toolset.tools_version`; None (unknown) for a plain `Toolset`."""
    return toolset.tools_version if isinstance(toolset, BaseToolset) else None


class Derived(Generic[_T]):
    """A value made from tools, made again only when their version changes.

    `get(version)` gives the value `make()` made for that version; a version of None
    (unknown) makes it anew every time.
    """

    __slots__ = ("_made", "_make", "_value", "_version")

    def __init__(self, make: Callable[[], _T]) -> None:
        """Make the value with `make` when needed (not now)."""
        self._make = make
        self._made = False
        self._version: object = None
        self._value: _T | None = None

    def get(self, version: object) -> _T:
        """The value for `version`: the one made last if the version is the same."""
        if version is None or not self._made or version != self._version:
            self._value = self._make()
            self._version = version
            self._made = True
        return cast(_T, self._value)


def find_in(toolset: Toolset, name: str) -> Tool | None:
    """The tool `toolset` has under `name`, or None (a plain `Toolset`'s `tools` are scanned)."""
    if isinstance(toolset, BaseToolset):
        return toolset.find_tool(name)
    return next((tool for tool in toolset.tools if tool.name == name), None)


async def forward(toolset: Toolset, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
    """The result of `call` (to `tool`, with parsed `arguments`) run by `toolset`.

    A `BaseToolset` runs it through `run_call`; any other toolset gets the call through
    `dispatch` (its own `handle`). The result carries `call.id` whatever id the toolset put on
    it. Raises only what awaiting a plain toolset's future raises (the dispatcher makes it a
    result) and the caller's cancellation.
    """
    result: object
    if isinstance(toolset, BaseToolset):
        result = cast(object, await toolset.run_call(call, tool, arguments))
    else:
        result = await dispatch(toolset, call, arguments)
    if not isinstance(result, ToolResult):
        text = f"the toolset returned {type(result).__name__}, not a ToolResult"
        return ToolResult(call.id, ToolRuntimeError(text))
    if result.tool_call_id != call.id:
        return ToolResult(call.id, result.return_value, metadata=result.metadata)
    return result


def call_named(call: ToolCall, name: str) -> ToolCall:
    """`call` asking for the tool `name` instead (the same id, extras and arguments)."""
    if call.function.name == name:
        return call
    function = call.function.model_copy(update={"name": name})
    return call.model_copy(update={"function": function})


def definition_named(tool: Tool, name: str) -> Tool:
    """A plain `Tool` defined as `tool` is, under the name `name`.

    Raises:
        ValueError: `name` is not a usable tool name.
    """
    check_tool_name(name)
    return Tool.model_construct(
        name=name, description=tool.description, parameters=tool.parameters, **tool.metadata()
    )
