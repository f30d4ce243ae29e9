"""Hook policies: `before`/`after` called inline, in order with the other policies."""

from __future__ import annotations

import asyncio

import pytest
from _std_tools import Blocking, Weather, make_call, standard_data, toolset

from kosong.message import ToolCall
from kosong.standard.context import CallContext
from kosong.standard.pipeline import WAIT, Forward, HookPolicy, Policy, with_policies
from kosong.standard.policies import MetricsPolicy, RepeatGuardPolicy
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolRuntimeError


class Hooks(HookPolicy):
    """Notes when its hooks are called; answers or fails when told to."""

    def __init__(
        self,
        name: str,
        log: list[str],
        *,
        answer: ToolReturnValue | None = None,
        fail_before: bool = False,
        fail_after: bool = False,
        wait: bool = False,
    ) -> None:
        self.name, self.log = name, log
        self.answer, self.fail_before, self.fail_after, self.wait = (
            answer,
            fail_before,
            fail_after,
            wait,
        )
        self.results: list[ToolResult] = []

    def before(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        self.log.append(f"> {self.name}")
        if self.fail_before:
            raise RuntimeError(f"{self.name} before")
        if self.wait:
            return WAIT
        return self.answer

    async def before_waiting(self, call: ToolCall, ctx: CallContext) -> ToolReturnValue | None:
        await asyncio.sleep(0)
        self.log.append(f"> {self.name} (waited)")
        return self.answer

    def after(
        self, call: ToolCall, ctx: CallContext, result: ToolResult, started: float
    ) -> ToolResult:
        self.log.append(f"< {self.name}")
        self.results.append(result)
        if self.fail_after:
            raise RuntimeError(f"{self.name} after")
        return result


class AfterOnly(HookPolicy):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def after(
        self, call: ToolCall, ctx: CallContext, result: ToolResult, started: float
    ) -> ToolResult:
        self.log.append("< after-only")
        return result


class Async(Policy):
    def __init__(self, name: str, log: list[str], *, skip: bool = False) -> None:
        self.name, self.log, self.skip = name, log, skip

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        return self.skip

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        self.log.append(f"> {self.name}")
        result = await forward(call, ctx)
        self.log.append(f"< {self.name}")
        return result


def weather_call(call_id: str = "call-1") -> ToolCall:
    return make_call("get_weather", {"location": "Paris"}, call_id)


async def test_hooks_run_in_order_with_the_other_policies() -> None:
    log: list[str] = []
    pipeline = with_policies(
        toolset(Weather()),
        Hooks("a", log),
        Async("skipped", log, skip=True),
        AfterOnly(log),
        Async("b", log),
        Hooks("c", log),
        Hooks("d", log),
    )
    result = await pipeline.handle(weather_call())
    assert not result.return_value.is_error
    assert log == ["> a", "> b", "> c", "> d", "< d", "< c", "< b", "< after-only", "< a"]


async def test_a_hook_that_answers_stops_the_call_and_outer_afters_see_it() -> None:
    log: list[str] = []
    tool = Weather()
    pipeline = with_policies(
        toolset(tool),
        Hooks("outer", log),
        Hooks("answers", log, answer=ToolOk(output="from the hook")),
        Async("inner", log),
    )
    result = await pipeline.handle(weather_call())
    assert result.return_value.output == "from the hook"
    assert log == ["> outer", "> answers", "< outer"]
    assert tool.calls == []
    assert standard_data(result)["metadata"]["tool_name"] == "get_weather"


async def test_a_failing_before_is_the_calls_result(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    outer = Hooks("outer", log)
    tool = Weather()
    pipeline = with_policies(toolset(tool), outer, Hooks("broken", log, fail_before=True))
    result = await pipeline.handle(weather_call())
    assert isinstance(result.return_value, ToolRuntimeError)
    assert "the pipeline failed: RuntimeError: broken before" in result.return_value.message
    assert "Pipeline failed" in caplog.text
    assert tool.calls == []
    assert log == ["> outer", "> broken", "< outer"]
    assert outer.results[0].return_value.is_error


async def test_a_failing_after_is_the_calls_result() -> None:
    log: list[str] = []
    outer = Hooks("outer", log)
    pipeline = with_policies(
        toolset(Weather()), outer, Hooks("broken", log, fail_after=True), Async("inner", log)
    )
    result = await pipeline.handle(weather_call())
    assert isinstance(result.return_value, ToolRuntimeError)
    assert "RuntimeError: broken after" in result.return_value.message
    assert log == ["> outer", "> broken", "> inner", "< inner", "< broken", "< outer"]
    assert outer.results[0].return_value.is_error


async def test_before_may_wait() -> None:
    log: list[str] = []
    pipeline = with_policies(
        toolset(Weather()),
        Hooks("a", log),
        Hooks("waits", log, wait=True),
        Hooks("waits and answers", log, wait=True, answer=ToolOk(output="waited")),
    )
    result = await pipeline.handle(weather_call())
    assert result.return_value.output == "waited"
    assert log == [
        "> a",
        "> waits",
        "> waits (waited)",
        "> waits and answers",
        "> waits and answers (waited)",
        "< waits",
        "< a",
    ]


async def test_a_skipped_hook_policy_is_not_asked() -> None:
    class Skipping(Hooks):
        def skips(self, call: ToolCall, ctx: CallContext) -> bool:
            return True

    log: list[str] = []
    pipeline = with_policies(toolset(Weather()), Hooks("a", log), Skipping("skipped", log))
    result = await pipeline.handle(weather_call())
    assert not result.return_value.is_error
    assert log == ["> a", "< a"]


async def test_a_cancelled_call_reaches_no_after() -> None:
    log: list[str] = []
    blocking = Blocking()
    pipeline = with_policies(toolset(blocking), Hooks("a", log), Async("inner", log))
    task = pipeline.handle(make_call("blocking", {}))
    assert isinstance(task, asyncio.Task)
    await blocking.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["> a", "> inner"]


async def test_run_applies_the_hooks_for_direct_callers() -> None:
    log: list[str] = []
    policy = Hooks("a", log)
    call = weather_call()
    ctx = CallContext(call, None)

    async def forward(call: ToolCall, ctx: CallContext) -> ToolResult:
        log.append("forward")
        return ToolResult(call.id, ToolOk(output="inner"))

    result = await policy.run(call, ctx, forward)
    assert result.return_value.output == "inner"
    assert log == ["> a", "forward", "< a"]
    failing = Hooks("b", log, fail_after=True)
    result = await failing.run(call, ctx, forward)
    assert "RuntimeError: b after" in result.return_value.message


async def test_a_hook_policy_overriding_run_is_applied_by_run() -> None:
    log: list[str] = []

    class OwnRun(Hooks):
        async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
            log.append("own run")
            return await forward(call, ctx)

    pipeline = with_policies(toolset(Weather()), OwnRun("a", log))
    result = await pipeline.handle(weather_call())
    assert not result.return_value.is_error
    assert log == ["own run"]


async def test_hook_policies_keep_the_fast_path() -> None:
    """Repeated calls are still answered synchronously (by `run_now`) and counted the same."""
    metrics = MetricsPolicy()
    guard = RepeatGuardPolicy(2)
    tool = Weather()
    pipeline = with_policies(toolset(tool), metrics, guard)
    first = await pipeline.handle(weather_call("1"))  # new text: through the task
    second = pipeline.handle(weather_call("2"))  # text seen: answered without waiting?
    second = second if isinstance(second, ToolResult) else await second
    third = pipeline.handle(weather_call("3"))
    assert isinstance(third, ToolResult)  # refused at once, no task
    assert not first.return_value.is_error and not second.return_value.is_error
    assert third.return_value.is_error
    assert len(tool.calls) == 2
    snapshot = metrics.registry.snapshot()["get_weather"]
    assert (snapshot.calls, snapshot.errors) == (3, 1)


async def test_repeat_guard_waits_for_the_digest_of_long_arguments() -> None:
    guard = RepeatGuardPolicy(1)
    tool = Weather()
    pipeline = with_policies(toolset(tool), guard)
    long_location = "x" * 300_000  # past the length parsed in a worker thread
    call = make_call("get_weather", {"location": long_location})
    first = await pipeline.handle(call)
    second = await pipeline.handle(make_call("get_weather", {"location": long_location}, "2"))
    assert not first.return_value.is_error
    assert second.return_value.is_error
    assert len(tool.calls) == 1
