"""`BaseToolset`: the one dispatcher that every toolset kosong ships is built on.

`handle(call)` is written once, here:

1. the tool is resolved by name (`find_tool`); an unknown name is answered at once;
2. the arguments are parsed once, with the toolset's `limits` (long strings on kosong's
   parsing thread); arguments that are not acceptable JSON are answered at once;
3. the call's task starts (eagerly on Python 3.12+) and runs `call_tool(call, tool,
   arguments)`, turning anything it raises into a `ToolRuntimeError` result.

A toolset that runs calls (`SimpleToolset`, `MCPToolset`, `RemoteToolset`) or wraps another
toolset (the policy pipeline, the composition wrappers) implements that one method,
`call_tool`, which receives the resolved tool and the parsed arguments. A caller that already
holds parsed arguments (an MCP server, an HTTP route reading a query) enters with
`dispatch(call, arguments)`, so nothing is serialised to be parsed again.

A user's own `Toolset` that implements only `handle` still works everywhere kosong takes a
toolset; it simply parses its own arguments.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final, cast, final

from kosong._guard import call_guarded
from kosong._threads import run_parsing, start_task
from kosong.message import ToolCall
from kosong.tooling._arguments import (
    DEFAULT_LIMITS,
    ArgumentLimits,
    ArgumentsError,
    parse_arguments,
)
from kosong.tooling._return_value import ToolError
from kosong.tooling._tool import Tool
from kosong.tooling._toolset import HandleResult, ToolResult, Toolset
from kosong.tooling.error import (
    ToolNotFoundError,
    ToolParseError,
    ToolRuntimeError,
    describe_exception,
)
from kosong.utils.typing import JsonType

if TYPE_CHECKING:
    from kosong.tooling._combined import CombinedToolset
    from kosong.tooling._filtered import FilteredToolset
    from kosong.tooling._prefixed import PrefixedToolset
    from kosong.tooling._prepared import PreparedToolset
    from kosong.tooling._renamed import RenamedToolset
    from kosong.tooling._search import SearchableToolset

__all__ = [
    "UNPARSED",
    "BaseToolset",
    "Unparsed",
    "dispatch",
    "unhandled_result",
    "with_json_arguments",
]

logger = logging.getLogger(__name__)


class Unparsed:
    """The type of `UNPARSED`: "the arguments are still the call's JSON text"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNPARSED"


UNPARSED: Final = Unparsed()
"""Passed as `arguments` to `dispatch`: parse the call's own argument string (the default)."""


class BaseToolset(Toolset, ABC):
    """A `Toolset` whose `handle()` is kosong's dispatcher; subclasses implement `call_tool`.

    `handle()` never blocks and never raises (except `asyncio.CancelledError`): an unknown
    tool is a `ToolNotFoundError` and arguments that are not acceptable JSON a
    `ToolParseError`, both answered at once (through `refuse`); anything else is the task
    running `call_tool`, which ends with a result whatever `call_tool` does: an exception it
    raises becomes a `ToolRuntimeError` (only `KeyboardInterrupt`, the user stopping the
    program, and the caller's own cancellation are let through).

    Subclasses give `tools`, and may give a faster `find_tool` (the default scans `tools`)
    and their own `limits`. They do not override `handle`: the policy pipeline and the
    wrappers call `call_tool` directly.

    Every `BaseToolset` composes with one-line methods, each the function of the same name
    in `kosong.tooling` applied to it: `filtered`, `prefixed`, `renamed`, `prepared`,
    `combined` (`SimpleToolset([...]).filtered(["search"]).prefixed("web_")`).
    """

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("handle", "dispatch"):
            if name in cls.__dict__:
                raise TypeError(
                    f"{cls.__name__} overrides `{name}`, which is kosong's dispatcher and is "
                    "the same for every toolset; override `call_tool` (which receives the "
                    "resolved tool and the parsed arguments) instead"
                )
        if "tools" in cls.__dict__ and "tools_version" not in cls.__dict__:
            # A version inherited from a class whose `tools` this one replaces would tell
            # wrappers nothing changed when this class's tools did: "unknown" is safe.
            type.__setattr__(cls, "tools_version", BaseToolset.__dict__["tools_version"])

    @property
    @abstractmethod
    def tools(self) -> list[Tool]:
        """The definitions of the tools, for the model."""

    @property
    def tools_version(self) -> object:
        """A value that changes whenever `tools` changes (compared with `==`); None: unknown.

        What is made from `tools` (a wrapper's list, the index of tool search) is made again
        only when this changes, so a step costs the same whatever the size of the catalog
        (providers keep their entry for each tool by the tool itself, so they reuse it as long
        as the same tools come back). None, the default, says the toolset cannot tell:
        whatever reads it reads `tools` anew every time. A subclass whose tools change gives
        a new value at each change (`SimpleToolset` takes a new `object()`), or the version
        of what its tools come from; one that overrides `tools` without overriding this gets
        None.
        """
        return None

    @property
    def limits(self) -> ArgumentLimits:
        """The caps on call arguments (`ArgumentLimits()` unless a subclass says otherwise)."""
        return DEFAULT_LIMITS

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None.

        Asked on every call (a toolset may gain and lose tools at any time).
        """
        return next((tool for tool in self.tools if tool.name == name), None)

    @abstractmethod
    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Run one resolved call: `tool` is `find_tool(call.function.name)`, `arguments` parsed.

        May raise: the dispatcher turns an exception into a `ToolRuntimeError` result. The
        caller's cancellation must be let through.
        """

    def refuse(self, call: ToolCall, error: ToolError) -> HandleResult:
        """Answer a call that never reaches `call_tool` (unknown tool, unreadable arguments).

        By default the error itself, at once. The policy pipeline overrides it so that the
        policies that observe every call (metrics, tracing) see these too.
        """
        return ToolResult(call.id, error)

    # The composition wrappers are BaseToolsets themselves, so their modules import this one:
    # each method imports its wrapper when called (as pydantic-ai's toolsets do).

    def filtered(self, keep: Iterable[str] | Callable[[Tool], bool]) -> FilteredToolset:
        """This toolset showing only the tools named in `keep`, or that `keep(tool)` accepts.

        See `kosong.tooling.filtered`.
        """
        from kosong.tooling._filtered import filtered

        return filtered(self, keep)

    def prefixed(self, prefix: str) -> PrefixedToolset:
        """This toolset with every tool called `prefix` + its name (`kosong.tooling.prefixed`)."""
        from kosong.tooling._prefixed import prefixed

        return prefixed(self, prefix)

    def renamed(self, names: Mapping[str, str]) -> RenamedToolset:
        """This toolset with tools renamed, `{old: new}` (`kosong.tooling.renamed`)."""
        from kosong.tooling._renamed import renamed

        return renamed(self, names)

    def prepared(self, prepare: Callable[[list[Tool]], list[Tool]]) -> PreparedToolset:
        """This toolset showing the definitions `prepare(tools)` returns, at each step.

        See `kosong.tooling.prepared`.
        """
        from kosong.tooling._prepared import prepared

        return prepared(self, prepare)

    def searchable(
        self, always_visible: Iterable[str] = (), *, max_results: int = 5
    ) -> SearchableToolset:
        """This toolset behind a `search_tools` tool (`kosong.tooling.searchable`)."""
        from kosong.tooling._search import searchable

        return searchable(self, always_visible, max_results=max_results)

    def combined(self, *others: Toolset, limits: ArgumentLimits | None = None) -> CombinedToolset:
        """This toolset's tools and those of `others`, as one (`kosong.tooling.combined`)."""
        from kosong.tooling._combined import combined

        return combined(self, *others, limits=limits)

    @final
    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Handle one call: a finished result, or the task computing it (see the class doc)."""
        return self.dispatch(tool_call)

    @final
    def dispatch(
        self, tool_call: ToolCall, arguments: JsonType | Unparsed = UNPARSED
    ) -> HandleResult:
        """`handle()` for a caller that may already hold the call's parsed arguments.

        With `arguments` given, the call's own argument string is not read; they must be what
        parsing would give (a JSON value), as an MCP server or a web form hands them over.
        """
        try:
            # Asked first: outside a running loop this raises before a coroutine exists that
            # nobody would await.
            loop = asyncio.get_running_loop()
            tool = self.find_tool(tool_call.function.name)
            if tool is None:
                return self.refuse(tool_call, ToolNotFoundError(tool_call.function.name))
            if isinstance(arguments, Unparsed) and tool_call.type == "custom":
                # A custom tool's input is its text, never JSON: given unparsed, as `input`
                # (the one parameter a free-form tool has).
                arguments = {"input": tool_call.function.arguments or ""}
            if isinstance(arguments, Unparsed):
                raw = tool_call.function.arguments
                if raw is not None and self.limits.parses_in_thread(raw):
                    return start_task(loop, self._parse_and_run(tool_call, tool, raw))
                try:
                    arguments = parse_arguments(
                        raw, self.limits, expects_object=tool.expects_object
                    )
                except ArgumentsError as e:
                    return self.refuse(tool_call, ToolParseError(str(e)))
            elif arguments is None:  # JSON null: no arguments, as parsing gives it
                arguments = {}
            return start_task(loop, self.run_call(tool_call, tool, arguments))
        except Exception as e:  # boundary: handle() never raises, a failure becomes a result
            return unhandled_result(tool_call, e)

    async def _parse_and_run(self, call: ToolCall, tool: Tool, raw: str) -> ToolResult:
        try:
            parse = functools.partial(parse_arguments, expects_object=tool.expects_object)
            arguments = await run_parsing(parse, raw, self.limits)
        except ArgumentsError as e:
            return await self.refuse(call, ToolParseError(str(e)))
        return await self.run_call(call, tool, arguments)

    async def run_call(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """`call_tool`, with anything it raises or returns wrongly turned into a result.

        What the task of `handle()` runs, and what a wrapper calls to reach the toolset it
        wraps. Never raises but the caller's cancellation (and `KeyboardInterrupt`).
        """
        result: object
        try:
            result = cast(object, await self.call_tool(call, tool, arguments))
        except KeyboardInterrupt:  # the user stopping the program
            raise
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # the caller's cancellation: it wins
                raise
            # Raised without the call being cancelled (the tool awaited something that was):
            # a failure of the tool, not a cancellation of the call.
            logger.info("Tool %r raised CancelledError without being cancelled", tool.name)
            return ToolResult(call.id, ToolRuntimeError("CancelledError: the tool was cancelled"))
        except BaseException as e:  # SystemExit, GeneratorExit too: a tool must not stop the agent
            # INFO: the failure is handled (the model gets it as a result), but a developer
            # who turns logging on wants the traceback.
            logger.info("Tool %r raised %s", tool.name, type(e).__name__, exc_info=e)
            return ToolResult(call.id, ToolRuntimeError(describe_exception(e)))
        if not isinstance(result, ToolResult):
            text = f"call_tool returned {type(result).__name__}, not a ToolResult"
            return ToolResult(call.id, ToolRuntimeError(text))
        return result


def dispatch(
    toolset: Toolset, tool_call: ToolCall, arguments: JsonType | Unparsed = UNPARSED
) -> HandleResult:
    """Hand a call to any toolset, with its arguments already parsed when the caller has them.

    A `BaseToolset` takes the parsed arguments as they are (`BaseToolset.dispatch`). Any other
    toolset gets the call through `handle()`, which reads the call's own argument text: when
    the call has none, `arguments` are written into it as JSON first. Never raises (except
    `asyncio.CancelledError`).
    """
    if isinstance(toolset, BaseToolset):
        return toolset.dispatch(tool_call, arguments)
    try:
        if not isinstance(arguments, Unparsed) and tool_call.function.arguments is None:
            tool_call = with_json_arguments(tool_call, arguments)
        return toolset.handle(tool_call)
    except Exception as e:  # boundary: another toolset's failure becomes a result
        return unhandled_result(tool_call, e)


def with_json_arguments(tool_call: ToolCall, arguments: JsonType) -> ToolCall:
    """`tool_call` with `arguments` as its argument string (compact JSON)."""
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    function = tool_call.function.model_copy(update={"arguments": text})
    return tool_call.model_copy(update={"function": function})


def unhandled_result(tool_call: object, error: BaseException) -> ToolResult:
    """The result of a call a toolset could not handle at all, given instead of raising.

    Works with whatever was passed as the call: its id is read if it has one.
    """
    # Whatever was passed as a call may even fail to give its id.
    call_id = call_guarded(lambda: str(getattr(tool_call, "id", "")))
    text = f"the call could not be handled: {describe_exception(error)}"
    return ToolResult(call_id if isinstance(call_id, str) else "", ToolRuntimeError(text))
