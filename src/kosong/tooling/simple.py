"""`SimpleToolset`: a toolset that handles calls to its tools concurrently."""

from __future__ import annotations

import typing
import weakref
from collections.abc import Iterable, Iterator
from types import UnionType
from typing import Any, Self, TypeAlias, Union

from kosong.message import ToolCall
from kosong.tooling._arguments import DEFAULT_LIMITS, ArgumentLimits
from kosong.tooling._call_checks import checked_return
from kosong.tooling._callable_tool import CallableTool
from kosong.tooling._dispatch import BaseToolset
from kosong.tooling._model_tool import CallableTool2
from kosong.tooling._return_value import ToolError, ToolOk, ToolReturnValue
from kosong.tooling._tool import Tool
from kosong.tooling._toolset import ToolResult
from kosong.tooling.error import ToolNotFoundError
from kosong.utils.typing import JsonType

__all__ = ["SimpleToolset", "ToolType"]

ToolType: TypeAlias = CallableTool | CallableTool2[Any]
"""A tool a `SimpleToolset` can run."""


class SimpleToolset(BaseToolset):
    """A toolset that runs each call in its own asyncio task, so calls overlap.

    `handle()` never blocks and never raises (except `asyncio.CancelledError`):

    - an unknown tool gives `ToolNotFoundError`, at once;
    - arguments that are not acceptable JSON give `ToolParseError`, at once
      (see `ArgumentLimits` for the caps, and `parse_arguments` for what is refused);
    - otherwise it returns the task running the tool, whose result is a `ToolValidateError`
      for arguments that do not fit, a `ToolRuntimeError` if the tool raised (any exception,
      `SystemExit` included; only `KeyboardInterrupt` is let through, since that is the user
      stopping the program), or what the tool returned (a `ToolError` if that is not a
      `ToolReturnValue`).

    Cancelling the returned task (or a task awaiting it) cancels the tool.

    On Python 3.12+ the task starts eagerly: the tool runs at once, inside `handle()`, up to its
    first real wait. A call that never waits (a quick tool, arguments that fail validation) is
    then finished when `handle()` returns, which saves a trip through the event loop; one that
    waits is returned pending, as on 3.11. Code before a tool's first `await` should be as quick
    as any code on the event loop must be (a plain `def __call__` runs in a thread anyway).

    Tool names are unique: adding a tool whose name is taken raises ValueError. Remove the old
    one first (`toolset.remove(name)`) to replace it.
    """

    def __init__(
        self, tools: Iterable[ToolType] | None = None, *, limits: ArgumentLimits | None = None
    ) -> None:
        """Create a toolset holding `tools`, with optional caps on call arguments."""
        self._tools: dict[str, ToolType] = {}
        # The definitions by name, taken once when a tool is added: a CallableTool2 builds its
        # definition, and `find_tool` runs on every call.
        self._definitions: dict[str, Tool] = {}
        self._version = object()  # a new one at each change: see `tools_version`
        self._limits = limits or DEFAULT_LIMITS
        for tool in tools or ():
            self.add(tool)

    def add(self, tool: ToolType) -> Self:
        """Add a tool; return the toolset.

        Raises:
            TypeError: `tool` is not a tool, or its `__call__` is annotated to return
                something other than a `ToolReturnValue`.
            ValueError: a tool of that name is already here.
        """
        if not isinstance(tool, CallableTool | CallableTool2):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"SimpleToolset holds CallableTool and CallableTool2 instances, "
                f"got {type(tool).__name__}"
            )
        _check_return_annotation(tool)
        if tool.name in self._tools:
            raise ValueError(
                f"a tool named `{tool.name}` is already in this toolset; "
                f"remove it first (toolset.remove({tool.name!r})) or give the new one another name"
            )
        self._tools[tool.name] = tool
        self._definitions[tool.name] = tool.base
        self._version = object()
        return self

    def remove(self, name: str) -> ToolType:
        """Remove the tool called `name` and return it.

        Raises:
            KeyError: no tool of that name is here.
        """
        try:
            tool = self._tools.pop(name)
        except KeyError:
            raise KeyError(f"no tool named `{name}` in this toolset") from None
        del self._definitions[name]
        self._version = object()
        return tool

    def __iadd__(self, tool: ToolType) -> Self:
        return self.add(tool)

    def __add__(self, tool: ToolType) -> SimpleToolset:
        """A new toolset with this one's tools and `tool`; this one is unchanged."""
        return SimpleToolset([*self._tools.values(), tool], limits=self._limits)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolType]:
        return iter(list(self._tools.values()))

    @property
    def limits(self) -> ArgumentLimits:
        """The caps on call arguments."""
        return self._limits

    @property
    def tools(self) -> list[Tool]:
        """The tools' definitions, in the order they were added."""
        return list(self._definitions.values())

    @property
    def tools_version(self) -> object:
        """A new value each time a tool is added or removed."""
        return self._version

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None (a dict lookup, not a scan)."""
        return self._definitions.get(name)

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Run the tool named `tool.name` with `arguments`: its result, checked."""
        runnable = self._tools.get(tool.name)
        if runnable is None:  # removed since the call was resolved
            return ToolResult(call.id, ToolNotFoundError(tool.name))
        # A custom `call` may return anything, whatever its annotation says.
        return ToolResult(call.id, checked_return(tool.name, await runnable.call(arguments)))


_CHECKED: weakref.WeakSet[type] = weakref.WeakSet()


def _check_return_annotation(tool: ToolType) -> None:
    """Refuse a tool whose `__call__` is annotated to return anything but a ToolReturnValue.

    A missing annotation is accepted: the result is checked when it arrives. A string
    annotation is resolved in the method's module, with the result classes of
    `kosong.tooling` known by name even when the module imports them only for type checkers;
    one that names nothing resolvable is refused like a wrong type.
    """
    cls = type(tool)
    if cls in _CHECKED:
        return
    call = cls.__call__
    annotation: Any = getattr(call, "__annotations__", {}).get("return", Any)
    try:
        names = {**_RESULT_NAMES, **getattr(call, "__globals__", {})}
        annotation = typing.get_type_hints(call, globalns=names).get("return", Any)
        resolved = True
    except (NameError, AttributeError, SyntaxError, TypeError):  # names nothing resolvable
        resolved = False
    if not resolved or not _returns_tool_value(annotation):
        raise TypeError(
            f"Expected tool `{tool.name}` to return `ToolReturnValue`, but got `{annotation!r}`; "
            "annotate `__call__` with `-> ToolReturnValue` and return ToolOk(output=...) or "
            "ToolError(message=...), or make the tool from a plain function with @tool"
        )
    _CHECKED.add(cls)


_RESULT_NAMES: dict[str, Any] = {
    "ToolReturnValue": ToolReturnValue,
    "ToolReturnType": ToolReturnValue,
    "ToolOk": ToolOk,
    "ToolError": ToolError,
}


def _returns_tool_value(annotation: Any) -> bool:
    if annotation is Any:
        return True
    if isinstance(annotation, type):
        return issubclass(annotation, ToolReturnValue)
    if typing.get_origin(annotation) in (Union, UnionType):
        return all(_returns_tool_value(arg) for arg in typing.get_args(annotation))
    return False
