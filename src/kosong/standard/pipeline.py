"""The policy pipeline: policies wrapped around any `Toolset`, one wrapper each.

    toolset = with_policies(
        SimpleToolset([...]),
        MetricsPolicy(),      # outermost: sees every call
        RetryPolicy(),
        TimeoutPolicy(10),    # innermost: around each attempt
    )

`PolicyToolset(wrapped, policy)` is a `Toolset` that applies one `Policy` around the toolset it
wraps; `with_policies` nests several, listed from the outside in (the way a call passes through
them). Each policy is optional, configured for the whole toolset when created and per tool by
the tool's metadata (and the policy's `per_tool` overrides where it has them).

`handle()` keeps the `Toolset` contract: it never waits for a call to finish and never
raises (except `asyncio.CancelledError`); every failure is a `ToolError` result. A call runs in
one task whatever the number of policies: the outermost wrapper starts it, each policy calls
the next directly (passing over those that say they have nothing to do for it, see
`Policy.skips`; a `HookPolicy`'s `before` and `after` are called inline, without a coroutine of
their own), and a `SimpleToolset` at the core runs the call in that task too, through its
`call()` (any other toolset is asked to `handle()` it). On Python 3.12+ the task starts
eagerly: `handle()` runs the call up to its first real wait, so a call answered without
waiting (an async tool that returns without awaiting anything, a cache hit for arguments
written anew) is done when `handle()` returns, with no event loop round trip.

Before any task, `handle()` offers a call that repeats a recent call's argument text to the
policies' synchronous side (`Policy.run_now`): when they answer it without waiting (a cache
hit, a refusal of the repeat guard or of a retired tool), `handle()` returns the finished
`ToolResult` itself, with no task and no coroutine; as soon as one of them cannot decide
without waiting, the call goes the way above instead. Both ways give the same result and the
same metadata. A call with new argument text nearly always needs its tool run, so it goes the
way above at once, as does every call of `stream()`.

Every result leaves with its metadata (tool name, time taken, timestamp, trace id...) in
`extras["standard"]`; `to_envelope` turns it into the standard's JSON.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from typing import Any, TypeVar, cast

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.events import CallStream, EventSink
from kosong.tooling import HandleResult, Tool, ToolResult, ToolReturnValue, Toolset
from kosong.tooling.error import ToolRuntimeError, describe_exception
from kosong.tooling.simple import SimpleToolset

__all__ = [
    "WAIT",
    "Forward",
    "ForwardNow",
    "HookPolicy",
    "Policy",
    "PolicyToolset",
    "with_policies",
]

logger = logging.getLogger(__name__)

Forward = Callable[[ToolCall, CallContext], Awaitable[ToolResult]]
"""How a policy passes a call on to the rest of the pipeline."""

ForwardNow = Callable[[ToolCall, CallContext], ToolReturnValue | None]
"""How `Policy.run_now` passes a call on: the rest of the pipeline's answer, or None when it
cannot be had without waiting."""

P = TypeVar("P", bound="Policy")


class Policy(ABC):
    """One concern applied around calls (a timeout, retries, a cache...).

    A policy holds its configuration and state; `PolicyToolset` applies it to a toolset. One
    policy object belongs to one pipeline position: its state (a cache, counters) is shared
    by every call through it.
    """

    @abstractmethod
    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Handle `call`: pass it on with `await forward(call, ctx)`, or answer it yourself.

        Must not raise anything but `asyncio.CancelledError`; a failure is a ToolError result.
        """

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """`run` without waiting, when the policy can: the call's value, or None.

        Asked first for the calls `handle()` gets that repeat a recent call's argument text
        (not for the others, which nearly always need the tool run, nor for `stream()`: `run`
        handles those). Return the value `run` would give, doing what `run` would do, but
        without awaiting anything; pass the call on with `forward(call, ctx)`, which gives the
        inner answer or None. Return None when the call needs waiting (here or inside, that is
        when `forward` gave None): the call is then given to `run`, with the same context, as
        if `run_now` had not been asked. So before returning None, record nothing that `run`
        would record again (count, store...): only what it is harmless to record twice (a
        debug detail, a digest). Once `forward` gave a value, return a value. The default
        returns None: the policy always needs `run`.

        It is asked whatever `skips` says (unlike `run`), so it decides on its own whether it
        has anything to do. Must not raise: what it raises is reported as a failure of the
        pipeline.
        """
        return None

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """Whether the policy has nothing to do for this call (asked before `run`).

        When True, the pipeline passes the call on without calling `run`, which saves a
        coroutine per call and policy; a policy without `run_now` that skips the call does not
        stop it from being answered without waiting. False by default. An override must only
        answer (no side effects, no waiting) and agree with `run` and `run_now`, which still
        decide on their own.
        """
        return False

    def added_tools(self) -> Sequence[Tool]:
        """Tools this policy answers itself (such as a "read more" tool); none by default."""
        return ()

    def attach(self, wrapped: Toolset) -> None:  # noqa: B027 - optional hook, no-op default
        """Called once with the toolset the policy is put around; may refuse it.

        Raises:
            ValueError: the policy cannot work around this toolset.
        """


class _Wait:
    __slots__ = ()

    def __repr__(self) -> str:
        return "WAIT"


WAIT: Any = _Wait()
"""What `HookPolicy.before` returns when it cannot decide without waiting (see there)."""


class HookPolicy(Policy):
    """A policy that acts only before and/or after the rest of the pipeline handles a call.

    Instead of `run`, it has two synchronous hooks: `before(call, ctx)`, asked as the call
    reaches the policy (it may answer the call itself), and `after(call, ctx, result,
    started)`, given the result on its way back. The pipeline calls them inline, in order
    with the other policies (an outer policy's `before` first, its `after` last), so such a
    policy adds no coroutine and no `await` to a call; consecutive ones share a frame.

    A hook that raises does not fail the call: its exception becomes the call's result (a
    pipeline failure, logged), which the outer policies see as any other result. `skips`
    works as for any policy: a skipped call reaches neither hook. A cancelled call reaches no
    `after`. `run` applies the hooks the same way for whoever calls it directly; `run_now` is
    `Policy`'s (None: the call goes the waiting way) unless overridden.
    """

    def before(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        """Act as the call reaches the policy: None to pass it on, or the call's answer.

        When the call reaches this policy, `after` is not called for it (as with an early
        return from `run`). Return `WAIT` when deciding takes waiting: the pipeline then
        awaits `before_waiting(call, ctx)` instead. Does nothing by default.
        """
        return None

    async def before_waiting(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        """`before` for a call it could not decide without waiting (it returned `WAIT`)."""
        raise NotImplementedError(f"{type(self).__name__}.before returned WAIT")

    def after(
        self, call: ToolCall, ctx: CallContext, result: ToolResult, started: float
    ) -> ToolResult:
        """Act on the result leaving the policy: return it, or another result.

        `started` is `time.perf_counter()` as the call reached the policy (read once for
        consecutive hook policies). Returns `result` by default.
        """
        return result

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """The hooks around `forward`, as the pipeline applies them."""
        started = time.perf_counter()
        try:
            answer = self.before(call, ctx)
            if answer is WAIT:
                answer = await self.before_waiting(call, ctx)
        except Exception as e:  # a hook's failure is the call's result
            answer = _pipeline_failed(call, e)
        if answer is not None:
            return ToolResult(call.id, answer)
        result = await forward(call, ctx)
        try:
            return self.after(call, ctx, result, started)
        except Exception as e:  # a hook's failure is the call's result
            return ToolResult(call.id, _pipeline_failed(call, e))


class PolicyToolset(Toolset):
    """A `Toolset` that applies `policy` around the calls to `wrapped`."""

    def __init__(self, wrapped: Toolset, policy: Policy) -> None:
        """Put `policy` around `wrapped`.

        Raises:
            ValueError: the policy refuses the toolset (for example, a tool it adds clashes
                with one of the toolset's).
        """
        self._wrapped = wrapped
        self._policy = policy
        policy.attach(wrapped)
        self._added = {tool.name: tool for tool in policy.added_tools()}
        # Tools the policies of this pipeline add, and the toolset at its core, found once:
        # every call looks its tool up.
        if isinstance(wrapped, PolicyToolset):
            self._all_added: dict[str, Tool] = {**wrapped._all_added, **self._added}
            self._core: Toolset = wrapped._core
        else:
            self._all_added = dict(self._added)
            self._core = wrapped
        self._finder = _tool_finder(self._core)
        # Runs a call in the current task instead of a task of its own (see `_core_call`).
        self._core_call = _core_call(wrapped)
        forward: Forward = (
            wrapped._enter if isinstance(wrapped, PolicyToolset) else self._call_wrapped
        )
        # The layers a call crosses from here without a coroutine of their own: this one,
        # then, while this one and the next are hook policies or may skip a call, the next
        # (see `_segment`); `_tail` is where the last of them passes the call on.
        step = _step(policy, forward)
        if not step[0] and step[1] is None:  # always runs: nothing is crossed inline past it
            self._steps: tuple[_Step, ...] = (step,)
            self._tail: Forward = forward
        elif isinstance(wrapped, PolicyToolset):
            self._steps = (step, *wrapped._steps)
            self._tail = wrapped._tail
        else:
            self._steps = (step,)
            self._tail = forward
        self._enter: Forward = (
            _segment(self._steps, self._tail) if _uses_hooks(policy) else _layer(policy, forward)
        )
        # The synchronous side: the toolset at the core runs tools, which takes waiting.
        forward_now: ForwardNow = (
            wrapped._enter_now if isinstance(wrapped, PolicyToolset) else _waits
        )
        self._enter_now: ForwardNow = _layer_now(policy, forward_now)
        # What handle() calls: the policy's own `run_now` when it has one (a frame less than
        # `_enter_now`), else `_enter_now`.
        self._run_now: Callable[[ToolCall, CallContext, ForwardNow], ToolReturnValue | None] = (
            policy.run_now if type(policy).run_now is not Policy.run_now else _entering
        )
        self._forward_now = (
            forward_now if type(policy).run_now is not Policy.run_now else self._enter_now
        )

    @property
    def wrapped(self) -> Toolset:
        """The toolset inside this one."""
        return self._wrapped

    @property
    def policy(self) -> Policy:
        """The policy this wrapper applies."""
        return self._policy

    @property
    def tools(self) -> list[Tool]:
        """The wrapped toolset's tools, and any the policy adds."""
        tools = self._wrapped.tools
        return [*tools, *self._added.values()] if self._added else tools

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, or None.

        Asks the wrapped toolset's own `find_tool(name)` when it has one, else scans its
        `tools`, on every call: a toolset may gain and lose tools at any time.
        """
        tool = self._all_added.get(name)
        if tool is not None:
            return tool
        return self._finder(name)

    def find_policy(self, kind: type[P]) -> P | None:
        """The outermost policy of type `kind` in this pipeline, or None."""
        toolset: Toolset = self
        while isinstance(toolset, PolicyToolset):
            if isinstance(toolset._policy, kind):
                return toolset._policy
            toolset = toolset._wrapped
        return None

    def wrap(self, policy: Policy) -> PolicyToolset:
        """A new wrapper applying `policy` around this pipeline."""
        return PolicyToolset(self, policy)

    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Handle one call through the pipeline; see the module doc for the guarantees.

        Returns the finished `ToolResult` when the policies answer the call without waiting
        (see `Policy.run_now`), else the task running it.
        """
        try:
            # Looked up first: outside a running loop this raises before a coroutine exists
            # that nobody would await.
            loop = asyncio.get_running_loop()
            name = tool_call.function.name
            tool = self._all_added.get(name)
            ctx = CallContext(
                tool_call, tool if tool is not None else self._finder(name), loop=loop
            )
            enter_now = self._enter_now
            run_now = self._run_now
            # Not tried when the outermost policy always needs waiting, nor for a call whose
            # argument text no recent call had: such a call nearly always needs its tool run
            # (a cache hit or a refusal repeats a call), so trying would be wasted on it.
            if enter_now is _waits or not ctx.arguments_seen_recently():
                return _new_task(loop, self._root(tool_call, ctx))
            try:
                value = run_now(tool_call, ctx, self._forward_now)
                if value is None:
                    return _new_task(loop, self._root(tool_call, ctx))
                # A policy may break its contract. Classes already checked are looked up:
                # isinstance() with a pydantic model's class costs more.
                cls = type(value)
                if cls not in _VALUE_CLASSES:
                    if not isinstance(value, ToolReturnValue):  # pyright: ignore[reportUnnecessaryIsInstance]
                        raise TypeError(f"a policy answered {cls.__name__}, not a value")
                    _VALUE_CLASSES.add(cls)
            except Exception as e:  # a policy broke its contract; the caller still gets a value
                value = _pipeline_failed(tool_call, e)
            final = ToolResult(tool_call.id, ctx.finish(value))
            ctx.emit_final(final)
            return final
        except Exception as e:  # the contract: handle() reports, it does not raise
            return _unhandled(tool_call, e)

    def stream(self, tool_call: ToolCall) -> CallStream:
        """The events of one call: progress and retries as they happen, then the result.

        Example:
            ```python skip
            async with toolset.stream(call) as events:
                async for event in events:
                    print(event.to_sse())
            ```
        """
        return CallStream(partial(self._start_task, tool_call))

    def _start_task(self, tool_call: ToolCall, sink: EventSink | None) -> asyncio.Task[ToolResult]:
        loop = asyncio.get_running_loop()  # raises before a coroutine exists to leak
        name = tool_call.function.name
        tool = self._all_added.get(name)
        ctx = CallContext(
            tool_call, tool if tool is not None else self._finder(name), sink=sink, loop=loop
        )
        return _new_task(loop, self._root(tool_call, ctx))

    async def _root(self, tool_call: ToolCall, ctx: CallContext) -> ToolResult:
        # The task runs in its own copy of the context, so these settings end with it.
        ctx.enter()
        try:
            result = cast(object, await self._enter(tool_call, ctx))
            if not isinstance(result, ToolResult):
                raise TypeError(f"a policy returned {type(result).__name__}, not a ToolResult")
        except asyncio.CancelledError:
            ctx.close()
            raise
        except Exception as e:  # a policy broke its contract; the caller still gets a value
            result = ToolResult(tool_call.id, _pipeline_failed(tool_call, e))
        final = ToolResult(tool_call.id, ctx.finish(result.return_value))
        ctx.emit_final(final)
        return final

    async def _call_wrapped(self, tool_call: ToolCall, ctx: CallContext) -> ToolResult:
        start = time.perf_counter()
        result: object
        try:
            if self._core_call is not None:
                result = await self._core_call(tool_call)
            else:
                result = cast(object, await self._wrapped.handle(tool_call))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the wrapped toolset broke the contract; report it as a value
            result = ToolResult(tool_call.id, ToolRuntimeError(describe_exception(e)))
        ctx.processing_ms += (time.perf_counter() - start) * 1000
        if not isinstance(result, ToolResult):
            return ToolResult(
                tool_call.id,
                ToolRuntimeError(f"the toolset returned {type(result).__name__}, not a ToolResult"),
            )
        return result


_Step = tuple[bool, Callable[[ToolCall, CallContext], bool] | None, Policy, Forward | None]
"""A layer as `_segment` crosses it: (a hook policy?, its `skips` if it has one, the policy,
the layer's `forward`)."""


def _uses_hooks(policy: Policy) -> bool:
    """Whether the pipeline applies `policy` by its hooks rather than by its `run`."""
    return isinstance(policy, HookPolicy) and type(policy).run is HookPolicy.run


def _step(policy: Policy, forward: Forward) -> _Step:
    skips = policy.skips if type(policy).skips is not Policy.skips else None
    if _uses_hooks(policy):
        return (True, skips, policy, None)
    return (False, skips, policy, forward)


def _segment(steps: tuple[_Step, ...], tail: Forward) -> Forward:
    """The `forward` of the layer above `steps[0]` (a hook policy): crosses the layers inline.

    One coroutine for a run of layers: each hook policy's `before` is called in turn (and its
    `after` on the way back), a policy that skips the call is passed over, and the first
    other policy gets the call through its `run` (the rest of the pipeline is its
    `forward`); past every step, `tail` gets it. The coroutine's code is written for the
    steps, once: a loop over them costs more than the coroutines it saves.
    """
    names: dict[str, Any] = {
        "WAIT": WAIT,
        "ToolResult": ToolResult,
        "failed": _pipeline_failed,
        "perf_counter": time.perf_counter,
        "tail": tail,
    }
    body: list[str] = []
    afters: list[int] = []
    ended = False
    for i, (hook, skips, policy, forward) in enumerate(steps):
        pad = "        "
        if skips is not None:
            names[f"skips{i}"] = skips
            body.append(f"{pad}if not skips{i}(call, ctx):")
            pad += "    "
        if not hook:
            names[f"run{i}"], names[f"forward{i}"] = policy.run, forward
            body += [f"{pad}result = await run{i}(call, ctx, forward{i})", f"{pad}break"]
            if skips is None:
                ended = True
                break
            continue
        policy = cast(HookPolicy, policy)
        cls = type(policy)
        if cls.before is not HookPolicy.before:
            names[f"before{i}"] = policy.before
            names[f"waiting{i}"] = policy.before_waiting
            body += [
                f"{pad}try:",
                f"{pad}    answer = before{i}(call, ctx)",
                f"{pad}    if answer is WAIT:",
                f"{pad}        answer = await waiting{i}(call, ctx)",
                f"{pad}except Exception as e:",
                f"{pad}    answer = failed(call, e)",
                f"{pad}if answer is not None:",
                f"{pad}    result = ToolResult(call.id, answer)",
                f"{pad}    break",
            ]
        if cls.after is not HookPolicy.after:
            names[f"after{i}"] = policy.after
            afters.append(i)
            body.append(f"{pad}pending{i} = True")
        elif cls.before is HookPolicy.before:
            body.append(f"{pad}pass")
    if not ended:
        body += ["        result = await tail(call, ctx)", "        break"]
    lines = ["async def cross(call, ctx):"]
    if afters:
        lines.append("    started = perf_counter()")
        lines += [f"    pending{i} = False" for i in afters]
    lines += ["    while True:", *body]
    for i in reversed(afters):
        lines += [
            f"    if pending{i}:",
            "        try:",
            f"            result = after{i}(call, ctx, result, started)",
            "        except Exception as e:",
            "            result = ToolResult(call.id, failed(call, e))",
        ]
    lines.append("    return result")
    exec(compile("\n".join(lines), f"<kosong pipeline: {len(steps)} layers>", "exec"), names)
    return cast(Forward, names["cross"])


def _layer(policy: Policy, forward: Forward) -> Forward:
    """The `forward` of the layer above `policy`: `policy.run(call, ctx, forward)`.

    A closure, so a call crosses a layer with one small frame (cheaper than a partial or an
    object's `__call__`). If the policy says when it `skips` a call, that is asked first.
    """
    run = policy.run
    if type(policy).skips is Policy.skips:

        def enter(call: ToolCall, ctx: CallContext) -> Awaitable[ToolResult]:
            return run(call, ctx, forward)

        return enter

    skips = policy.skips

    def enter_unless_skipped(call: ToolCall, ctx: CallContext) -> Awaitable[ToolResult]:
        if skips(call, ctx):
            return forward(call, ctx)
        return run(call, ctx, forward)

    return enter_unless_skipped


def _entering(call: ToolCall, ctx: CallContext, enter: ForwardNow) -> ToolReturnValue | None:
    """`run_now` for a policy without one: `enter` is the layer `_layer_now` made for it."""
    return enter(call, ctx)


_VALUE_CLASSES: set[type] = set()
"""Classes `run_now` answered with that are `ToolReturnValue`s."""


def _waits(call: ToolCall, ctx: CallContext) -> None:
    """The synchronous side of what always takes waiting (running a tool)."""
    return None


def _layer_now(policy: Policy, forward: ForwardNow) -> ForwardNow:
    """The synchronous side of `_layer`: `policy.run_now(call, ctx, forward)`.

    `skips` is asked only of a policy without `run_now`: one with it decides on its own (as it
    must when called directly), and on this side there is no coroutine for `skips` to save.
    """
    if type(policy).run_now is Policy.run_now:  # the policy always needs `run`
        if type(policy).skips is Policy.skips or forward is _waits:
            return _waits
        skips = policy.skips

        def passed_over_or_waits(call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
            return forward(call, ctx) if skips(call, ctx) else None

        return passed_over_or_waits
    run_now = policy.run_now

    def enter(call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        return run_now(call, ctx, forward)

    return enter


def _tool_finder(core: Toolset) -> Callable[[str], Tool | None]:
    """How to find a tool of `core` by name: its own `find_tool` if it has one, else a scan."""
    if isinstance(core, SimpleToolset):
        return core.find_tool  # a dict lookup, typed: nothing to check
    finder = getattr(core, "find_tool", None)
    if callable(finder):

        def find(name: str) -> Tool | None:
            found: object = finder(name)
            return found if isinstance(found, Tool) else None

        return find

    def scan(name: str) -> Tool | None:
        # `tools` is read on every call: a toolset may gain and lose tools at any time.
        for tool in core.tools:
            if tool.name == name:
                return tool
        return None

    return scan


def _core_call(toolset: Toolset) -> Callable[[ToolCall], Awaitable[ToolResult]] | None:
    """`toolset.call` when it handles a call as `handle()` would, without a task of its own.

    A `SimpleToolset` runs each call of `handle()` in a new task; the pipeline's call already
    has one, and a second costs an event loop round trip. `call()` gives the same result with
    the same guarantees in the caller's task. A subclass that changes `handle()` but not
    `call()` is asked to `handle()` calls, so its change still applies.
    """
    if isinstance(toolset, SimpleToolset):
        cls = type(toolset)
        if cls.handle is SimpleToolset.handle or cls.call is not SimpleToolset.call:
            return toolset.call
    return None


def _pipeline_failed(tool_call: ToolCall, error: Exception) -> ToolReturnValue:
    logger.exception("Pipeline failed on a call to %r", tool_call.function.name, exc_info=error)
    return ToolRuntimeError(f"the pipeline failed: {describe_exception(error)}")


def _unhandled(tool_call: object, error: Exception) -> ToolResult:
    try:
        call_id = str(getattr(tool_call, "id", ""))
    except Exception:  # whatever was passed as a call may even fail to give its id
        call_id = ""
    return ToolResult(
        call_id, ToolRuntimeError(f"the call could not be handled: {describe_exception(error)}")
    )


if sys.version_info >= (3, 12):

    def _new_task(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, ToolResult]
    ) -> asyncio.Task[ToolResult]:
        # Runs the call at once up to its first real wait: a call answered without waiting
        # (a cache hit, a refusal) is done before handle() returns, with no loop round trip.
        return asyncio.Task(coro, loop=loop, eager_start=True)

else:  # pragma: no cover - depends on the Python version

    def _new_task(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, ToolResult]
    ) -> asyncio.Task[ToolResult]:
        return loop.create_task(coro)


def with_policies(toolset: Toolset, policy: Policy, /, *more: Policy) -> PolicyToolset:
    """Wrap `toolset` in policies, listed from the outside in.

    `with_policies(base, A(), B())` is `PolicyToolset(PolicyToolset(base, B()), A())`: a call
    goes through A, then B, then reaches `base`.

    Raises:
        ValueError: a policy refuses the toolset it would wrap.
    """
    policies = (policy, *more)
    for item in reversed(policies[1:]):
        toolset = PolicyToolset(toolset, item)
    return PolicyToolset(toolset, policies[0])
