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
the outside in, the way a call passes through them, and the toolset at the core. It is a
`BaseToolset`, so kosong's one dispatcher handles each call: the tool is resolved and the
arguments parsed once, with the core toolset's `ArgumentLimits`, before any policy runs.
Policies therefore see only calls that can run (`ctx.tool` and `ctx.arguments` are set),
except the few that say they observe every call (`Policy.observes_refusals`: metrics,
tracing, debug, event hooks), which also see the calls the dispatcher refuses. After the
policies, the core runs the call: a `BaseToolset` core through its `call_tool` (no second
parse), any other toolset through its `handle()`. On Python 3.12+ the call's task starts
eagerly: a call answered without waiting (a cache hit, a refusal, a tool that never awaits) is
done when `handle()` returns.

A policy may also repair arguments before any policy sees them (`Policy.repair`, used by
`RepairPolicy`): a call whose arguments it repairs, including one whose argument text could
not be parsed at all, then enters the chain with the repaired arguments and passes through
every policy exactly as a well-formed call would.

Every result leaves with its metadata (tool name, time taken, timestamp, trace id...) in
`ToolResult.metadata`; `to_envelope` turns it into the standard's JSON.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, TypeVar, cast

from kosong._guard import Failed, call_guarded
from kosong._threads import run_parsing, start_task
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._digest import arguments_digest
from kosong.standard._events import CallStream, EventSink
from kosong.standard._trace import current_trace_id, new_trace_id, use_trace_id
from kosong.tooling import (
    UNPARSED,
    ArgumentLimits,
    HandleResult,
    Tool,
    ToolError,
    ToolResult,
    ToolReturnValue,
    Toolset,
    Unparsed,
    WrapperToolset,
    with_json_arguments,
)
from kosong.tooling.error import (
    ToolNotFoundError,
    ToolParseError,
    ToolRuntimeError,
    describe_exception,
)
from kosong.utils.typing import JsonType

__all__ = [
    "Forward",
    "Policy",
    "PolicyToolset",
    "RepairedArguments",
    "with_policies",
]

logger = logging.getLogger(__name__)

Forward = Callable[[ToolCall, PolicyContext], Awaitable[ToolResult]]
"""How a policy passes a call on to the rest of the pipeline."""

P = TypeVar("P", bound="Policy")


@dataclass(frozen=True, slots=True)
class RepairedArguments:
    """Arguments a policy repaired before the call entered the chain (`Policy.repair`)."""

    arguments: JsonType
    """The repaired arguments: what every policy and the tool get."""
    repairs: list[JsonType]
    """What was changed, each `{"path": JSON path, "from": kind, "to": kind}`; it becomes
    the result's `metadata["repairs"]`."""


class Policy:
    """One concern applied around calls (a timeout, retries, a cache...).

    Override `run`; or, for a policy that only acts as the call arrives and/or as its result
    leaves, `before` and/or `after`. A policy holds its configuration and state, shared by
    every call through it. None of its methods may raise: a failure is a `ToolError` result
    (the pipeline turns an escaping exception into one, and logs it).
    """

    observes_refusals: ClassVar[bool] = False
    """Whether this policy also sees calls refused before they could run (an unknown tool,
    unreadable arguments): then `ctx.refusal` is set, `ctx.arguments` is None, and `forward`
    answers with the refusal. For an unknown tool there is no definition: `ctx.has_tool` is
    False and reading `ctx.tool` raises `LookupError`, so such a policy checks `has_tool`
    first. Policies that count or trace every call say True; the others only ever see calls
    that can run."""

    repairs_arguments: ClassVar[bool] = False
    """Whether the pipeline asks this policy to `repair` arguments before the chain runs."""

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

    def repair(
        self, call: ToolCall, tool: Tool, arguments: JsonType | Unparsed, limits: ArgumentLimits
    ) -> RepairedArguments | None:
        """Arguments to run the call with instead of its own, or None (the default) to keep them.

        Asked, for a policy whose `repairs_arguments` is True, before the first policy runs:
        with the parsed arguments of each call, and with `UNPARSED` for a call to a known tool
        whose argument text (`call.function.arguments`) is not acceptable JSON (parse any
        repaired text with `limits`). A call whose arguments are repaired then goes through
        every policy of the pipeline with them, exactly as a well-formed call would. Runs on
        the event loop (on the parsing thread for long arguments): no waiting. Must not raise.
        """
        return None


_LISTENER: contextvars.ContextVar[EventSink | None] = contextvars.ContextVar(
    "kosong_standard_listener", default=None
)
"""The listener of the call `PolicyToolset.stream` is starting, read by the call's task."""


class PolicyToolset(WrapperToolset):
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
        super().__init__(core)
        self._limits = super().limits  # read on every call: decided once
        self._policies: tuple[Policy, ...] = policies
        self._added: dict[str, Tool] = {}
        core_names = {tool.name for tool in core.tools}
        for policy in policies:
            for tool in policy.added_tools():
                if tool.name in core_names or tool.name in self._added:
                    raise ValueError(
                        f"{type(policy).__name__} adds a tool named `{tool.name}`, but the "
                        "toolset already has one; give one of them another name"
                    )
                self._added[tool.name] = tool
        self._enter = _chain(policies, self._call_core)
        self._repairers = tuple(policy for policy in policies if policy.repairs_arguments)
        observers = tuple(policy for policy in policies if policy.observes_refusals)
        self._observe = _chain(observers, self._call_core) if observers else None

    @property
    def policies(self) -> tuple[Policy, ...]:
        """The policies, from the outside in."""
        return self._policies

    @property
    def tools(self) -> list[Tool]:
        """The core toolset's tools, and any the policies add."""
        return [*self.wrapped.tools, *self._added.values()]

    @property
    def tools_version(self) -> object:
        """The core toolset's version: the tools the policies add never change."""
        return super().tools_version

    @property
    def limits(self) -> ArgumentLimits:
        """The core toolset's caps on arguments (the defaults for a toolset without them)."""
        return self._limits

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None.

        Asked on every call: a toolset may gain and lose tools at any time.
        """
        tool = self._added.get(name)
        return tool if tool is not None else super().find_tool(name)

    def find_policy(self, kind: type[P]) -> P | None:
        """The outermost policy of type `kind`, or None."""
        return next((p for p in self._policies if isinstance(p, kind)), None)

    def wrap(self, policy: Policy) -> PolicyToolset:
        """A new pipeline with `policy` outside this one's policies."""
        return PolicyToolset(self.wrapped, policy, *self._policies)

    def stream(self, tool_call: ToolCall, arguments: JsonType | Unparsed = UNPARSED) -> CallStream:
        """The events of one call: progress and retries as they happen, then the result.

        `arguments`, when given, are the call's arguments already parsed (see `dispatch`).

        Example:
            ```python skip
            async with toolset.stream(call) as events:
                async for event in events:
                    print(event.to_sse())
            ```
        """
        return CallStream(
            partial(self._start, tool_call, arguments), tool_name=tool_call.function.name
        )

    def _start(
        self, tool_call: ToolCall, arguments: JsonType | Unparsed, sink: EventSink | None
    ) -> asyncio.Future[ToolResult]:
        token = _LISTENER.set(sink)
        try:
            answer = self.dispatch(tool_call, arguments)
        finally:
            _LISTENER.reset(token)
        if isinstance(answer, ToolResult):  # refused at once: a finished future
            done = asyncio.get_running_loop().create_future()
            done.set_result(answer)
            return done
        return answer

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Run the call through the policies, then the core toolset."""
        repaired = await self._repair(call, tool, arguments) if self._repairers else None
        ctx = self._context(call, tool, arguments, None, repaired)
        if self._offloads(ctx.tool_call):
            await self._digest(ctx)
        return await self._run(ctx, self._enter)

    def _offloads(self, call: ToolCall) -> bool:
        raw = call.function.arguments
        return raw is not None and self._limits.parses_in_thread(raw)

    async def _digest(self, ctx: PolicyContext) -> None:
        # The digest of long arguments is made off the loop too, as they were parsed.
        ctx.arguments_key = await run_parsing(
            arguments_digest, ctx.arguments, ctx.written_as_string
        )

    def refuse(self, call: ToolCall, error: ToolError) -> HandleResult:
        """A refused call: seen by the policies that observe every call, with its metadata.

        Arguments a repairing policy can read (`Policy.repair`) are not refused: the call
        runs, with the repaired arguments, through every policy.
        """
        tool = self.find_tool(call.function.name)
        if self._repairers and tool is not None and isinstance(error, ToolParseError):
            return start_task(asyncio.get_running_loop(), self._reread(call, tool, error))
        return self._refused(call, tool, error)

    def _refused(self, call: ToolCall, tool: Tool | None, error: ToolError) -> HandleResult:
        ctx = self._context(call, tool, None, error)
        if self._observe is None:
            return ctx.finish(ToolResult(call.id, error))
        return start_task(asyncio.get_running_loop(), self._run(ctx, self._observe))

    async def _reread(self, call: ToolCall, tool: Tool, error: ToolError) -> ToolResult:
        repaired = await self._repair(call, tool, UNPARSED)
        if repaired is None:
            return await self._refused(call, tool, error)
        ctx = self._context(call, tool, repaired.arguments, None, repaired)
        if self._offloads(ctx.tool_call):
            await self._digest(ctx)
        return await self._run(ctx, self._enter)

    async def _repair(
        self, call: ToolCall, tool: Tool, arguments: JsonType | Unparsed
    ) -> RepairedArguments | None:
        """The first repair a repairing policy offers, or None."""
        offload = self._offloads(call)
        for policy in self._repairers:
            args = (policy.repair, call, tool, arguments, self._limits)
            found = await run_parsing(call_guarded, *args) if offload else call_guarded(*args)
            if isinstance(found, Failed):  # a policy broke its contract: go on unrepaired
                name = type(policy).__name__
                logger.error("%s.repair failed on %r", name, tool.name, exc_info=found.error)
            elif found is not None:
                return found
        return None

    def _context(
        self,
        call: ToolCall,
        tool: Tool | None,
        arguments: JsonType,
        refusal: ToolError | None,
        repaired: RepairedArguments | None = None,
    ) -> PolicyContext:
        if repaired is not None:
            # The call holds the repaired arguments as its text too: a core that reads the
            # text itself (a plain `Toolset`) gets what the policies saw.
            arguments = repaired.arguments
            call = with_json_arguments(call, arguments)
        extras = call.extras
        given = extras.get("trace_id") if extras else None
        trace_id = (
            given
            if isinstance(given, str) and 0 < len(given) <= 128
            else current_trace_id() or new_trace_id()
        )
        sink = _LISTENER.get()
        if sink is not None:
            _LISTENER.set(None)  # in this call's own context: calls it makes are not streamed
        ctx = PolicyContext(
            call,
            tool,
            arguments,
            trace_id,
            refusal=refusal,
            sink=sink,
            loop=asyncio.get_running_loop(),
        )
        if repaired is not None:
            ctx.repairs = repaired.repairs
        return ctx

    async def _run(self, ctx: PolicyContext, enter: Forward) -> ToolResult:
        ctx.enter()
        use_trace_id(ctx.trace_id)
        call = ctx.tool_call
        try:
            result = cast(object, await enter(call, ctx))
            if not isinstance(result, ToolResult):
                raise TypeError(f"a policy returned {type(result).__name__}, not a ToolResult")
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # the caller's cancellation
                ctx.cancelled(str(e.args[0]) if e.args else None)
                raise
            result = ToolResult(call.id, _failed(call, "a policy raised CancelledError"))
        except Exception as e:  # boundary: a policy's failure becomes the call's error result
            logger.exception("Pipeline failed on a call to %r", call.function.name)
            result = ToolResult(call.id, _failed(call, describe_exception(e)))
        return ctx.finish(result)

    async def _call_core(self, call: ToolCall, ctx: PolicyContext) -> ToolResult:
        if ctx.refusal is not None:
            return ToolResult(call.id, ctx.refusal)
        tool, arguments = ctx.tool, ctx.arguments
        if tool.name in self._added:
            # No policy answered a call to one of the policies' own tools.
            return ToolResult(call.id, ToolNotFoundError(call.function.name))
        started = time.perf_counter()
        try:
            return await super().call_tool(call, tool, arguments)
        finally:
            ctx.processing_ms += (time.perf_counter() - started) * 1000


def _chain(policies: Sequence[Policy], core: Forward) -> Forward:
    """`forward` of the outermost of `policies`, each passing on to the next, then to `core`."""
    forward = core
    for policy in reversed(policies):
        forward = _layer(policy, forward)
    return forward


def _layer(policy: Policy, forward: Forward) -> Forward:
    """The `forward` of the layer outside `policy`: `policy.run(call, ctx, forward)`."""
    run = policy.run

    def enter(call: ToolCall, ctx: PolicyContext) -> Awaitable[ToolResult]:
        return run(call, ctx, forward)

    return enter


def _failed(call: ToolCall, what: str) -> ToolReturnValue:
    return ToolRuntimeError(f"the pipeline failed on `{call.function.name}`: {what}")


def with_policies(toolset: Toolset, policy: Policy, /, *more: Policy) -> PolicyToolset:
    """Wrap `toolset` in policies, listed from the outside in.

    With `with_policies(base, A(), B())` a call goes through A, then B, then reaches `base`.

    Raises:
        ValueError: a tool a policy adds has the name of another tool.
    """
    return PolicyToolset(toolset, policy, *more)
