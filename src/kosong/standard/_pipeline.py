"""The policy pipeline: policies around any `Toolset`, each one method.

    toolset = with_policies(
        SimpleToolset([...]),
        MetricsPolicy(),      # outermost: sees every call
        RetryPolicy(),
        TimeoutPolicy(10),    # innermost: around each attempt
    )

A `Policy` applies one concern around a call: its `run(call, ctx, forward)` passes the call on
with `await forward(call, ctx)` or answers it itself. A policy that only looks at a call on
its way in and/or its result on the way out overrides `before` and/or `after` instead.

`with_policies(toolset, *policies)` builds one `PolicyToolset`, once: the policies listed from
the outside in, the way a call passes through them, and the toolset at the core. `handle()`
keeps the `Toolset` contract (it never waits for a call and never raises but
`asyncio.CancelledError`; every failure is a `ToolError` result) and runs each call in one
task: first the arguments are read, once, the way the core toolset reads them (its
`ArgumentLimits`, long ones in a worker thread), so that every policy sees exactly what the
tool will get, and no policy sees arguments the toolset refuses; then the policies, each
awaiting the next; then the core (`SimpleToolset.call` in the same task, or `handle()` of any
other toolset). On Python 3.12+ the task starts eagerly: a call answered without waiting (a
cache hit, a refusal, a tool that never awaits) is done when `handle()` returns.

Every result leaves with its metadata (tool name, time taken, timestamp, trace id...) in
`extras["standard"]`; `to_envelope` turns it into the standard's JSON.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar, cast

from kosong._threads import run_parsing, start_task
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext, arguments_digest
from kosong.standard._events import CallStream, EventSink
from kosong.standard._trace import current_trace_id, new_trace_id, use_trace_id
from kosong.tooling import (
    ArgumentLimits,
    ArgumentsError,
    HandleResult,
    Tool,
    ToolResult,
    ToolReturnValue,
    Toolset,
    parse_arguments,
)
from kosong.tooling.error import (
    ToolParseError,
    ToolRuntimeError,
    describe_exception,
    unhandled_result,
)
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType

__all__ = ["Forward", "HookPolicy", "Policy", "PolicyToolset", "with_policies"]

logger = logging.getLogger(__name__)

Forward = Callable[[ToolCall, PolicyContext], Awaitable[ToolResult]]
"""How a policy passes a call on to the rest of the pipeline."""

P = TypeVar("P", bound="Policy")


class Policy:
    """One concern applied around calls (a timeout, retries, a cache...).

    Override `run`; or, for a policy that only acts as the call arrives and/or as its result
    leaves, `before` and/or `after`. A policy holds its configuration and state, shared by
    every call through it. None of its methods may raise: a failure is a `ToolError` result
    (the pipeline turns an escaping exception into one, and logs it).
    """

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Handle `call`: pass it on with `await forward(call, ctx)`, or answer it yourself.

        By default: `before`, then (unless it answered) the rest of the pipeline, then `after`.
        """
        answer = self.before(call, ctx)
        if answer is not None:
            return ToolResult(call.id, answer)
        return self.after(call, ctx, await forward(call, ctx))

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Look at the call as it arrives: None passes it on; a value answers it."""
        return None

    def after(self, call: ToolCall, ctx: PolicyContext, result: ToolResult) -> ToolResult:
        """Look at the result as it leaves: return it, or another result."""
        return result

    def added_tools(self) -> Sequence[Tool]:
        """Tools this policy answers itself (such as a "read more" tool); none by default."""
        return ()


HookPolicy = Policy
"""The older name of a policy that overrides `before` / `after`: any `Policy` may."""


class PolicyToolset(Toolset):
    """A `Toolset` that applies policies around the calls to the toolset it wraps."""

    def __init__(self, toolset: Toolset, *policies: Policy) -> None:
        """Put `policies` (from the outside in) around `toolset`.

        A `PolicyToolset` given as `toolset` is flattened: its policies go inside these.

        Raises:
            ValueError: a tool a policy adds has the name of another tool.
        """
        core: Toolset = toolset
        if isinstance(toolset, PolicyToolset):
            policies = (*policies, *toolset.policies)
            core = toolset.wrapped
        self._core: Toolset = core
        self._policies: tuple[Policy, ...] = policies
        toolset = core
        self._added: dict[str, Tool] = {}
        core_names = {tool.name for tool in toolset.tools}
        for policy in policies:
            for tool in policy.added_tools():
                if tool.name in core_names or tool.name in self._added:
                    raise ValueError(
                        f"{type(policy).__name__} adds a tool named `{tool.name}`, but the "
                        "toolset already has one; give one of them another name"
                    )
                self._added[tool.name] = tool
        self._simple = _runs_in_caller_task(toolset)
        self._find_in_core = _finder(toolset)
        self._limits: ArgumentLimits = (
            toolset.limits if isinstance(toolset, SimpleToolset) else ArgumentLimits()
        )
        forward: Forward = self._call_core
        for policy in reversed(policies):
            forward = _layer(policy, forward)
        self._enter = forward

    @property
    def wrapped(self) -> Toolset:
        """The toolset at the core."""
        return self._core

    @property
    def policies(self) -> tuple[Policy, ...]:
        """The policies, from the outside in."""
        return self._policies

    @property
    def tools(self) -> list[Tool]:
        """The core toolset's tools, and any the policies add."""
        return [*self._core.tools, *self._added.values()]

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None.

        Asked on every call: a toolset may gain and lose tools at any time.
        """
        tool = self._added.get(name)
        return tool if tool is not None else self._find_in_core(name)

    def find_policy(self, kind: type[P]) -> P | None:
        """The outermost policy of type `kind`, or None."""
        return next((p for p in self._policies if isinstance(p, kind)), None)

    def wrap(self, policy: Policy) -> PolicyToolset:
        """A new pipeline with `policy` outside this one's policies."""
        return PolicyToolset(self._core, policy, *self._policies)

    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Handle one call through the policies; see the module doc for the guarantees."""
        try:
            # First: outside a running loop this raises before a coroutine exists to leak.
            loop = asyncio.get_running_loop()
            return start_task(loop, self._run(self._context(tool_call, None, loop)))
        except Exception as e:  # the contract: handle() reports, it does not raise
            return unhandled_result(tool_call, e)

    def stream(self, tool_call: ToolCall) -> CallStream:
        """The events of one call: progress and retries as they happen, then the result.

        Example:
            ```python skip
            async with toolset.stream(call) as events:
                async for event in events:
                    print(event.to_sse())
            ```
        """
        return CallStream(partial(self._start, tool_call), tool_name=tool_call.function.name)

    def _start(self, tool_call: ToolCall, sink: EventSink | None) -> asyncio.Task[ToolResult]:
        loop = asyncio.get_running_loop()
        return start_task(loop, self._run(self._context(tool_call, sink, loop)))

    def _context(
        self, tool_call: ToolCall, sink: EventSink | None, loop: asyncio.AbstractEventLoop
    ) -> PolicyContext:
        extras = tool_call.extras
        given = extras.get("trace_id") if extras else None
        trace_id = (
            given
            if isinstance(given, str) and 0 < len(given) <= 128
            else current_trace_id() or new_trace_id()
        )
        tool = self.find_tool(tool_call.function.name)
        return PolicyContext(tool_call, tool, trace_id, sink=sink, loop=loop)

    async def _run(self, ctx: PolicyContext) -> ToolResult:
        # The task runs in its own copy of the context: these end with it.
        ctx.enter()
        use_trace_id(ctx.trace_id)
        call = ctx.tool_call
        try:
            if ctx.tool is not None:
                waiting = self._read_arguments(ctx, ctx.tool, call.function.arguments)
                if waiting is not None:  # long arguments, parsed off the loop
                    await waiting
            result = cast(object, await self._enter(call, ctx))
            if not isinstance(result, ToolResult):
                raise TypeError(f"a policy returned {type(result).__name__}, not a ToolResult")
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # the caller's cancellation
                ctx.cancelled(str(e.args[0]) if e.args else None)
                raise
            result = ToolResult(call.id, _failed(call, "a policy raised CancelledError"))
        except Exception as e:  # a policy broke its contract; the caller still gets a value
            logger.exception("Pipeline failed on a call to %r", call.function.name)
            result = ToolResult(call.id, _failed(call, describe_exception(e)))
        return ctx.finish(result)

    def _read_arguments(
        self, ctx: PolicyContext, tool: Tool, raw: str | None
    ) -> Awaitable[None] | None:
        """Parse the arguments as the core will: with the toolset's limits and rules.

        Returns an awaitable for long ones, parsed (and digested) in a worker thread.
        """
        if raw is not None and self._limits.parses_in_thread(raw):
            return self._read_long_arguments(ctx, tool, raw)
        try:
            ctx.arguments = parse_arguments(raw, self._limits, expects_object=tool.expects_object)
        except ArgumentsError as e:
            ctx.refusal = ToolParseError(str(e))
        else:
            ctx.written_as_string = raw is not None and raw.lstrip()[:1] == '"'
        return None

    async def _read_long_arguments(self, ctx: PolicyContext, tool: Tool, raw: str) -> None:
        try:
            ctx.arguments, ctx.arguments_key = await run_parsing(
                _parse_and_digest, raw, self._limits, tool.expects_object
            )
        except ArgumentsError as e:
            ctx.refusal = ToolParseError(str(e))
        else:
            ctx.written_as_string = raw.lstrip()[:1] == '"'

    async def _call_core(self, call: ToolCall, ctx: PolicyContext) -> ToolResult:
        if ctx.refusal is not None:
            return ToolResult(call.id, ctx.refusal)
        started = time.perf_counter()
        result: object
        try:
            if self._simple is not None and ctx.arguments is not None:
                result = await self._simple.call(call, arguments=ctx.arguments)
            else:
                result = cast(object, await self._core.handle(call))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the core broke the Toolset contract; report it as a value
            result = ToolResult(call.id, ToolRuntimeError(describe_exception(e)))
        ctx.processing_ms += (time.perf_counter() - started) * 1000
        if not isinstance(result, ToolResult):
            text = f"the toolset returned {type(result).__name__}, not a ToolResult"
            return ToolResult(call.id, ToolRuntimeError(text))
        return result


def _layer(policy: Policy, forward: Forward) -> Forward:
    """The `forward` of the layer outside `policy`: `policy.run(call, ctx, forward)`."""
    run = policy.run

    def enter(call: ToolCall, ctx: PolicyContext) -> Awaitable[ToolResult]:
        return run(call, ctx, forward)

    return enter


def _parse_and_digest(
    raw: str, limits: ArgumentLimits, expects_object: bool
) -> tuple[JsonType, str]:
    """Long arguments and their digest, both made in a worker thread."""
    arguments = parse_arguments(raw, limits, expects_object=expects_object)
    return arguments, arguments_digest(arguments, raw.lstrip()[:1] == '"')


def _finder(core: Toolset) -> Callable[[str], Tool | None]:
    """How to find a tool of `core` by name: its own `find_tool` if it has one, else a scan.

    Either is asked on every call: a toolset may gain and lose tools at any time.
    """
    if isinstance(core, SimpleToolset):
        return core.find_tool  # typed: nothing to check
    own = getattr(core, "find_tool", None)
    if callable(own):

        def find(name: str) -> Tool | None:
            found: object = own(name)
            return found if isinstance(found, Tool) else None

        return find
    return lambda name: next((tool for tool in core.tools if tool.name == name), None)


def _runs_in_caller_task(toolset: Toolset) -> SimpleToolset | None:
    """`toolset` when its `call()` handles a call as `handle()` would, in the caller's task.

    A subclass that changes `handle()` but not `call()` is asked to `handle()` calls, so its
    change still applies.
    """
    if isinstance(toolset, SimpleToolset):
        cls = type(toolset)
        if cls.handle is SimpleToolset.handle or cls.call is not SimpleToolset.call:
            return toolset
    return None


def _failed(call: ToolCall, what: str) -> ToolReturnValue:
    return ToolRuntimeError(f"the pipeline failed on `{call.function.name}`: {what}")


def with_policies(toolset: Toolset, policy: Policy, /, *more: Policy) -> PolicyToolset:
    """Wrap `toolset` in policies, listed from the outside in.

    With `with_policies(base, A(), B())` a call goes through A, then B, then reaches `base`.

    Raises:
        ValueError: a tool a policy adds has the name of another tool.
    """
    return PolicyToolset(toolset, policy, *more)
