"""`SimpleToolset`: a toolset that handles calls to its tools concurrently."""

from __future__ import annotations

import asyncio
import logging
import typing
import weakref
from collections.abc import Coroutine, Iterable, Iterator
from types import UnionType
from typing import Any, Self, TypeAlias, Union

from kosong._threads import run_parsing, start_task
from kosong.message import ToolCall
from kosong.tooling._arguments import (
    DEFAULT_LIMITS,
    ArgumentLimits,
    ArgumentsError,
    parse_arguments,
)
from kosong.tooling._callable import CallableTool
from kosong.tooling._callable2 import CallableTool2
from kosong.tooling._calling import checked_return
from kosong.tooling._result import HandleResult, ToolResult, Toolset
from kosong.tooling._return import ToolError, ToolOk, ToolReturnValue
from kosong.tooling._tool import Tool
from kosong.tooling.error import (
    ToolNotFoundError,
    ToolParseError,
    ToolRuntimeError,
    describe_exception,
    unhandled_result,
)
from kosong.utils.typing import JsonType

__all__ = ["SimpleToolset", "ToolType"]

logger = logging.getLogger(__name__)

ToolType: TypeAlias = CallableTool | CallableTool2[Any]
"""A tool a `SimpleToolset` can run."""


class SimpleToolset(Toolset):
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
        # Per tool name: whether its schema asks for an object, so that a JSON string holding
        # an object is unwrapped (see `parse_arguments`). Decided once, when the tool is added
        # (as the tool's validator is built once), to keep `tool.base` off the hot path.
        self._expects_object: dict[str, bool] = {}
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
        self._expects_object[tool.name] = tool.base.expects_object
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
        del self._expects_object[name]
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
        return [tool.base for tool in self._tools.values()]

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None (a dict lookup, not a scan)."""
        tool = self._tools.get(name)
        return None if tool is None else tool.base

    async def call(self, tool_call: ToolCall, *, arguments: JsonType = None) -> ToolResult:
        """Handle one call in the current task and return its result.

        `handle()` without the task: for a caller that already runs in a task of its own
        (a policy pipeline, say) and would otherwise pay for a second one. Same guarantees:
        it never raises but `asyncio.CancelledError`.

        `arguments`, when given, are the call's arguments already parsed the way this toolset
        parses them (`parse_arguments` with its `limits`, and `expects_object` for the tool):
        the call's text is then not parsed again.
        """
        try:
            work = self._prepare(tool_call, arguments)
        except Exception as e:
            return unhandled_result(tool_call, e)
        return work if isinstance(work, ToolResult) else await work

    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Handle one call: a finished `ToolResult` for an error found at once, else a task."""
        try:
            # Looked up first: outside a running loop this raises before a coroutine exists
            # that nobody would await (a RuntimeWarning when it is collected).
            loop = asyncio.get_running_loop()
            work = self._prepare(tool_call, None)
            return work if isinstance(work, ToolResult) else start_task(loop, work)
        except Exception as e:  # the contract: handle() reports, it does not raise
            return unhandled_result(tool_call, e)

    def _prepare(
        self, tool_call: ToolCall, arguments: JsonType
    ) -> ToolResult | Coroutine[Any, Any, ToolResult]:
        """A result found at once (unknown tool, bad JSON), or the coroutine that runs the call."""
        function = tool_call.function
        tool = self._tools.get(function.name)
        if tool is None:
            return ToolResult(tool_call.id, ToolNotFoundError(function.name))
        if arguments is not None:
            return _run(tool, tool_call.id, arguments)
        raw = function.arguments
        # Only a tool whose schema asks for an object gets a twice-encoded object unwrapped;
        # for a string schema, a string that happens to hold JSON is the argument itself.
        expects_object = self._expects_object[function.name]
        if raw is not None and self._limits.parses_in_thread(raw):
            return self._parse_and_run(tool, tool_call.id, raw, expects_object)
        try:
            arguments = parse_arguments(raw, self._limits, expects_object=expects_object)
        except ArgumentsError as e:
            return ToolResult(tool_call.id, ToolParseError(str(e)))
        return _run(tool, tool_call.id, arguments)

    async def _parse_and_run(
        self, tool: ToolType, call_id: str, raw: str, expects_object: bool
    ) -> ToolResult:
        try:
            arguments = await run_parsing(_parse, raw, self._limits, expects_object)
        except ArgumentsError as e:
            return ToolResult(call_id, ToolParseError(str(e)))
        return await _run(tool, call_id, arguments)


def _parse(raw: str, limits: ArgumentLimits, expects_object: bool) -> JsonType:
    return parse_arguments(raw, limits, expects_object=expects_object)


async def _run(tool: ToolType, call_id: str, arguments: JsonType) -> ToolResult:
    try:
        value = await tool.call(arguments)
    except KeyboardInterrupt:  # the user stopping the program
        raise
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.cancelling():  # the caller's cancellation: it wins
            raise
        # The tool raised CancelledError on its own (say it awaited something that was
        # cancelled): a failure of the tool, not a cancellation of the call.
        logger.info("Tool %r raised CancelledError without being cancelled", tool.name)
        return ToolResult(call_id, ToolRuntimeError("CancelledError: the tool was cancelled"))
    except BaseException as e:  # SystemExit, GeneratorExit too: a tool must not stop the agent
        # INFO, not WARNING: the failure is handled (the model gets it as a result), but a
        # developer who turns logging on wants the traceback.
        logger.info("Tool %r raised %s", tool.name, type(e).__name__, exc_info=e)
        return ToolResult(call_id, ToolRuntimeError(describe_exception(e)))
    # A custom `call` may return anything, whatever its annotation says.
    return ToolResult(call_id, checked_return(tool.name, value))


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
    except Exception:  # a name the module does not define
        resolved = False
    if not resolved or not _returns_tool_value(annotation):
        raise TypeError(
            f"Expected tool `{tool.name}` to return `ToolReturnValue`, but got `{annotation!r}`"
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
