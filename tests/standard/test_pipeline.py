"""The pipeline: the Toolset contract, one task per call, metadata and trace ids."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import sys
from typing import Any

import pytest

from kosong.message import ToolCall
from kosong.standard import (
    TRACE_ID_PATTERN,
    Forward,
    Policy,
    PolicyContext,
    PolicyToolset,
    current_call,
    current_trace_id,
    error_code,
    to_envelope,
    trace_scope,
    with_policies,
)
from kosong.standard.policies import (
    MetricsPolicy,
    RepeatGuardPolicy,
    TimeoutPolicy,
    TruncationPolicy,
)
from kosong.tooling import (
    ArgumentLimits,
    HandleResult,
    Tool,
    ToolOk,
    ToolResult,
    ToolReturnValue,
    Toolset,
)
from kosong.tooling.error import ToolRuntimeError
from kosong.tooling.simple import SimpleToolset
from tests.standard._std_tools import (
    Blocking,
    Scripted,
    Weather,
    every_policy,
    make_call,
    standard_data,
    toolset,
)


class Recorder(Policy):
    """Notes the order calls pass through, and the context it sees."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.contexts: list[PolicyContext] = []

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        self.log.append(f"> {self.name}")
        self.contexts.append(ctx)
        result = await forward(call, ctx)
        self.log.append(f"< {self.name}")
        return result


class Broken(Policy):
    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        raise RuntimeError("policy bug")


class Answering(Policy):
    """Answers every call itself, without waiting."""

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        return ToolResult(call.id, ToolOk(output="answered"))


PLAIN_TOOL = Tool(
    name="x", description="A tool of a toolset that only has `handle`.", parameters={}
)


class RaisingToolset:
    tools: list[Tool] = [PLAIN_TOOL]

    def handle(self, tool_call: ToolCall) -> HandleResult:
        raise RuntimeError("contract broken")


class WrongTypeToolset:
    tools: list[Tool] = [PLAIN_TOOL]

    def handle(self, tool_call: ToolCall) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result("not a result")
        return future


def standard(inner: Toolset, *policies: Policy) -> PolicyToolset:
    return with_policies(inner, *(policies or (MetricsPolicy(),)))


async def test_policies_run_from_the_outside_in() -> None:
    log: list[str] = []
    pipeline = with_policies(
        toolset(Weather()), Recorder("a", log), Recorder("b", log), Recorder("c", log)
    )
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    assert log == ["> a", "> b", "> c", "< c", "< b", "< a"]


async def test_every_policy_of_a_call_sees_the_same_context() -> None:
    log: list[str] = []
    outer, inner = Recorder("a", log), Recorder("b", log)
    await with_policies(toolset(Weather()), outer, inner).handle(
        make_call("get_weather", {"location": "x"})
    )
    assert outer.contexts[0] is inner.contexts[0]
    assert outer.contexts[0].tool is not None and outer.contexts[0].tool.name == "get_weather"


async def test_handle_does_not_wait_for_the_tool() -> None:
    tool = Blocking()
    pending = standard(toolset(tool)).handle(make_call("blocking", {}))
    assert isinstance(pending, asyncio.Future) and not pending.done()
    await asyncio.wait_for(tool.started.wait(), 5)
    assert not pending.done()
    tool.release.set()
    result = await asyncio.wait_for(pending, 5)
    assert result.return_value.output == "done 1"


async def test_cancelling_the_call_cancels_the_tool() -> None:
    tool = Blocking()
    pending = standard(toolset(tool), TimeoutPolicy(None)).handle(make_call("blocking", {}))
    await asyncio.wait_for(tool.started.wait(), 5)
    assert isinstance(pending, asyncio.Future)
    pending.cancel()
    await asyncio.wait_for(tool.cancelled.wait(), 5)
    with pytest.raises(asyncio.CancelledError):
        await pending


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks need Python 3.12")
async def test_a_call_answered_without_waiting_is_done_when_handle_returns() -> None:
    pending = with_policies(toolset(Weather()), MetricsPolicy(), Answering()).handle(
        make_call("get_weather", {})
    )
    assert isinstance(pending, asyncio.Future) and pending.done()
    assert (await pending).return_value.output == "answered"


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks need Python 3.12")
async def test_a_call_to_a_tool_that_never_waits_is_done_when_handle_returns() -> None:
    tool = Weather()
    pending = standard(toolset(tool)).handle(make_call("get_weather", {"location": "x"}))
    assert isinstance(pending, asyncio.Future) and pending.done()
    assert len(tool.calls) == 1 and not (await pending).return_value.is_error


async def test_results_carry_the_standards_metadata() -> None:
    result = await standard(toolset(Weather())).handle(
        make_call("get_weather", {"location": "x"}, "c7")
    )
    assert result.tool_call_id == "c7"
    metadata = standard_data(result)["metadata"]
    assert metadata["tool_name"] == "get_weather"
    assert metadata["execution_time_ms"] >= 0
    assert metadata["timestamp"].endswith("Z")
    assert TRACE_ID_PATTERN.match(metadata["trace_id"])
    assert metadata["performance"]["processing_ms"] >= 0
    envelope = to_envelope(result).dump()
    assert envelope["data"] == {"temperature": 25, "condition": "sunny"}
    assert envelope["metadata"]["tool_call_id"] == "c7"


async def test_unknown_tool_is_tool_not_found_with_metadata() -> None:
    result = await standard(toolset(Weather())).handle(make_call("nope", {}))
    assert error_code(result.return_value) == "TOOL_NOT_FOUND"
    assert to_envelope(result).dump()["metadata"]["tool_name"] == "nope"


async def test_a_toolset_that_raises_gives_an_error_value() -> None:
    result = await standard(RaisingToolset()).handle(make_call("x", {}))
    assert isinstance(result.return_value, ToolRuntimeError)
    assert "RuntimeError: contract broken" in result.return_value.message


async def test_a_toolset_that_returns_something_else_gives_an_error_value() -> None:
    result = await standard(WrongTypeToolset()).handle(make_call("x", {}))
    assert result.return_value.is_error and "returned str" in result.return_value.message


async def test_a_broken_policy_gives_an_error_value(caplog: pytest.LogCaptureFixture) -> None:
    result = await with_policies(toolset(Weather()), Broken()).handle(make_call("get_weather", {}))
    assert isinstance(result.return_value, ToolRuntimeError)
    assert "the pipeline failed on `get_weather`: RuntimeError: policy bug" in (
        result.return_value.message
    )
    assert "Pipeline failed" in caplog.text


def test_handle_outside_an_event_loop_returns_an_error_instead_of_raising() -> None:
    result = standard(toolset(Weather())).handle(make_call("get_weather", {}))
    assert isinstance(result, ToolResult)
    assert "no running event loop" in result.return_value.message


async def test_trace_id_is_taken_from_the_call_when_given() -> None:
    result = await standard(toolset(Weather())).handle(
        make_call("get_weather", {"location": "x"}, trace_id="trace_from_caller")
    )
    assert to_envelope(result).metadata.trace_id == "trace_from_caller"


async def test_trace_id_is_taken_from_the_enclosing_scope() -> None:
    with trace_scope("trace_20240101_0123456789ab"):
        result = await standard(toolset(Weather())).handle(
            make_call("get_weather", {"location": "x"})
        )
    assert to_envelope(result).metadata.trace_id == "trace_20240101_0123456789ab"
    assert current_trace_id() is None


async def test_each_call_without_a_given_trace_gets_a_new_one() -> None:
    pipeline = standard(toolset(Weather()))
    first = await pipeline.handle(make_call("get_weather", {"location": "x"}))
    second = await pipeline.handle(make_call("get_weather", {"location": "x"}))
    ids = {to_envelope(r).metadata.trace_id for r in (first, second)}
    assert len(ids) == 2 and all(TRACE_ID_PATTERN.match(i or "") for i in ids)


async def test_nested_calls_share_the_trace_of_the_outer_call() -> None:
    inner_pipeline = standard(toolset(Weather()))
    seen: dict[str, Any] = {}

    async def outer_body(n: int) -> ToolReturnValue:
        ctx = current_call()
        assert ctx is not None
        seen["outer"] = ctx.trace_id
        seen["inside"] = current_trace_id()
        nested = await inner_pipeline.handle(make_call("get_weather", {"location": "x"}, "nested"))
        seen["nested"] = to_envelope(nested).metadata.trace_id
        return ToolOk(output="ok")

    outer = standard(toolset(Scripted(outer_body)))
    await outer.handle(make_call("scripted", {}))
    assert seen["outer"] == seen["inside"] == seen["nested"]


async def test_tools_lists_the_wrapped_tools_and_the_policies_additions() -> None:
    pipeline = with_policies(toolset(Weather()), MetricsPolicy(), TruncationPolicy())
    assert [t.name for t in pipeline.tools] == ["get_weather", "read_more"]
    found = pipeline.find_tool("read_more")
    assert found is not None and found.read_only_hint is True
    assert pipeline.find_tool("get_weather") is not None
    assert pipeline.find_tool("missing") is None
    assert isinstance(pipeline.find_policy(TruncationPolicy), TruncationPolicy)
    assert pipeline.find_policy(RepeatGuardPolicy) is None


async def test_wrap_adds_a_policy_around_a_pipeline() -> None:
    log: list[str] = []
    pipeline = with_policies(toolset(Weather()), Recorder("inner", log)).wrap(
        Recorder("outer", log)
    )
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    assert log[:2] == ["> outer", "> inner"]


async def test_concurrent_calls_through_one_pipeline_overlap() -> None:
    tool = Blocking()
    pipeline = standard(toolset(tool))
    first = pipeline.handle(make_call("blocking", {"n": 1}, "a"))
    second = pipeline.handle(make_call("blocking", {"n": 2}, "b"))
    async with asyncio.timeout(5):
        await tool.wait_runs(2)  # both bodies are running at once
    tool.release.set()
    results = await asyncio.wait_for(asyncio.gather(first, second), 5)
    assert [r.tool_call_id for r in results] == ["a", "b"]


async def test_a_simple_toolset_at_the_core_runs_the_call_in_the_pipelines_own_task() -> None:
    tasks: list[asyncio.Task[Any] | None] = []

    async def body(n: int) -> ToolReturnValue:
        tasks.append(asyncio.current_task())
        await asyncio.sleep(0)  # a real wait, so the call is still running after handle()
        return ToolOk(output="ok")

    pending = standard(toolset(Scripted(body))).handle(make_call("scripted", {}))
    assert isinstance(pending, asyncio.Task)
    assert (await pending).return_value.output == "ok"
    assert tasks == [pending]


class CountingToolset(SimpleToolset):
    """A SimpleToolset that changes how calls run: it overrides the one method, call_tool."""

    handled = 0

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: Any) -> ToolResult:
        CountingToolset.handled += 1
        return await super().call_tool(call, tool, arguments)


async def test_a_simple_toolset_that_changes_call_tool_is_asked_for_each_call() -> None:
    CountingToolset.handled = 0
    pipeline = standard(CountingToolset([Weather()]))
    result = await pipeline.handle(make_call("get_weather", {"location": "x"}))
    assert not result.return_value.is_error
    assert CountingToolset.handled == 1


def test_a_toolset_built_on_the_dispatcher_cannot_override_handle() -> None:
    with pytest.raises(TypeError, match="call_tool"):

        class Overriding(SimpleToolset):
            def handle(self, tool_call: ToolCall) -> HandleResult:  # pyright: ignore[reportIncompatibleMethodOverride]
                return super().handle(tool_call)


class FindingToolset:
    """Not a SimpleToolset: tools found through its own find_tool, which may misbehave."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        self.handled = 0

    @property
    def tools(self) -> list[Tool]:
        return [self.tool]

    def find_tool(self, name: str) -> Any:
        return self.tool if name == self.tool.name else "not a tool"

    def handle(self, tool_call: ToolCall) -> HandleResult:
        self.handled += 1
        return ToolResult(tool_call.id, ToolOk(output="handled"))


async def test_other_toolsets_are_asked_to_handle_the_calls_to_their_tools() -> None:
    tool = Weather().base
    core = FindingToolset(tool)
    recorder = Recorder("r", [])
    pipeline = with_policies(core, recorder)
    result = await pipeline.handle(make_call("get_weather", {}))
    assert result.return_value.output == "handled" and core.handled == 1
    # A name its `tools` does not list is no tool (whatever its own find_tool says).
    other = await pipeline.handle(make_call("other", {}))
    assert error_code(other) == "TOOL_NOT_FOUND" and core.handled == 1
    assert [ctx.tool for ctx in recorder.contexts] == [tool]


class Observer(Policy):
    """Notes what `before` and `after` see."""

    def __init__(self, log: list[str], *, answer: ToolReturnValue | None = None) -> None:
        self.log, self.answer = log, answer

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        self.log.append(f"before {call.id}")
        return self.answer

    def after(self, call: ToolCall, ctx: PolicyContext, result: ToolResult) -> ToolResult:
        self.log.append(f"after {result.return_value.output}")
        return result


async def test_an_observer_policy_overrides_before_and_after_only() -> None:
    log: list[str] = []
    pipeline = with_policies(toolset(Weather()), Observer(log), Recorder("inner", log))
    await pipeline.handle(make_call("get_weather", {"location": "x"}, "c1"))
    assert log == [
        "before c1",
        "> inner",
        "< inner",
        'after {"temperature": 25, "condition": "sunny"}',
    ]


async def test_an_answer_from_before_stops_the_call_and_skips_its_after() -> None:
    log: list[str] = []
    tool = Weather()
    pipeline = with_policies(toolset(tool), Observer(log, answer=ToolOk(output="early")))
    result = await pipeline.handle(make_call("get_weather", {"location": "x"}, "c1"))
    assert result.return_value.output == "early"
    assert log == ["before c1"] and tool.calls == []


class Peeking(Policy):
    """Keeps the arguments the policies see."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        self.seen.append(ctx.arguments)
        return None


async def test_policies_see_exactly_the_arguments_the_tool_gets_parsed_once() -> None:
    got: list[Any] = []

    async def body(n: int) -> ToolReturnValue:
        ctx = current_call()
        assert ctx is not None
        return ToolOk(output="ok")

    class Keep(Scripted):
        async def __call__(self, **arguments: Any) -> ToolReturnValue:
            got.append(arguments["items"])
            return await super().__call__(**arguments)

    peek = Peeking()
    pipeline = with_policies(toolset(Keep(body)), peek)
    await pipeline.handle(make_call("scripted", {"items": [1, 2, 3]}))
    assert peek.seen == [{"items": [1, 2, 3]}]
    assert got[0] is peek.seen[0]["items"]  # the very list the policies saw: not parsed again


class ObservingPeek(Peeking):
    """Keeps the arguments it sees, of refused calls too."""

    observes_refusals = True


async def test_no_policy_sees_arguments_the_toolset_refuses() -> None:
    peek = Peeking()
    tool = Weather()
    pipeline = with_policies(
        SimpleToolset([tool], limits=ArgumentLimits(max_length=40)), MetricsPolicy(), peek
    )
    result = await pipeline.handle(make_call("get_weather", {"location": "x" * 50}))
    assert error_code(result.return_value) == "INVALID_PARAMS"
    assert "limit is 40" in result.return_value.message
    # The refused call never reaches an ordinary policy; one that observes refusals sees it
    # without arguments.
    assert peek.seen == [] and tool.calls == []
    observer = ObservingPeek()
    watched = with_policies(SimpleToolset([tool], limits=ArgumentLimits(max_length=40)), observer)
    await watched.handle(make_call("get_weather", {"location": "x" * 50}))
    assert observer.seen == [None] and tool.calls == []


class RecordingTools(Policy):
    """Records the tool of every call, as `observes_refusals`' docstring says to read it."""

    observes_refusals = True

    def __init__(self) -> None:
        self.seen: list[tuple[bool, str | None]] = []

    def after(self, call: ToolCall, ctx: PolicyContext, result: ToolResult) -> ToolResult:
        self.seen.append((ctx.has_tool, ctx.tool.name if ctx.has_tool else None))
        return result


async def test_an_observing_policy_reads_an_unknown_tool_as_its_docstring_says() -> None:
    recording = RecordingTools()
    pipeline = with_policies(toolset(Weather()), recording)
    missing = await pipeline.handle(make_call("nope", {}))
    found = await pipeline.handle(make_call("get_weather", {"location": "Oslo"}))
    assert error_code(missing.return_value) == "TOOL_NOT_FOUND"
    assert not found.return_value.is_error
    assert recording.seen == [(False, None), (True, "get_weather")]
    source = inspect.getsource(Policy)  # the attribute's docstring says what the test did
    assert "`ctx.tool` raises `LookupError`" in " ".join(source.split())
    ctx = PolicyContext(make_call("nope", {}), None, None, "trace_x")
    with pytest.raises(LookupError):
        ctx.tool  # noqa: B018 - reading it is the check


async def test_policies_see_arguments_the_toolset_accepts_past_the_default_limits() -> None:
    peek = Peeking()
    big = "x" * (ArgumentLimits().max_length + 10)
    pipeline = with_policies(
        SimpleToolset([Weather()], limits=ArgumentLimits(max_length=10_000_000)), peek
    )
    result = await pipeline.handle(make_call("get_weather", {"location": big}))
    assert not result.return_value.is_error, result.return_value.message
    assert peek.seen == [{"location": big}]


async def test_a_json_string_holding_the_object_is_unwrapped_for_the_policies_too() -> None:
    peek = Peeking()
    pipeline = with_policies(toolset(Weather()), peek)
    twice = json.dumps(json.dumps({"location": "Oslo"}))
    result = await pipeline.handle(make_call("get_weather", twice))
    assert not result.return_value.is_error and peek.seen == [{"location": "Oslo"}]


@pytest.mark.parametrize(
    "arguments",
    [
        '{"location": "\\ud800"}',  # an escaped lone surrogate
        '{"location": "\ud800"}',  # a literal one
        '{"location": "x", "location": "y"}',
        '{"location": NaN}',
        '{"location": "x"} trailing',
        "[" * 200 + "]" * 200,
    ],
)
async def test_malformed_arguments_are_invalid_params_through_every_policy(arguments: str) -> None:
    pipeline = with_policies(toolset(Weather()), *every_policy())
    for _ in range(2):  # the second time as a repeat, for the cache, guard and single-flight
        result = await pipeline.handle(make_call("get_weather", arguments))
        assert error_code(result.return_value) == "INVALID_PARAMS", result.return_value.message
        assert "pipeline failed" not in result.return_value.message


async def test_a_call_through_every_policy_leaves_no_garbage_for_the_cycle_collector() -> None:
    # Objects in reference cycles outlive their call until the cyclic collector runs: a
    # pipeline that made them would keep results alive and spend time collecting.
    pipeline = with_policies(toolset(Weather()), *every_policy())
    await pipeline.handle(make_call("get_weather", {"location": "warm-up"}))
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for i in range(20):
            await pipeline.handle(make_call("get_weather", {"location": f"city {i}"}))
        gc.collect()
        assert gc.garbage == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
