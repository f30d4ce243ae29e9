"""The synchronous fast path: calls the policies answer without waiting (`Policy.run_now`)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from _std_tools import Scripted, Weather, make_call, output_json, standard_data, toolset

from kosong.message import ToolCall
from kosong.standard._values import round3
from kosong.standard.codes import error_code
from kosong.standard.context import CallContext
from kosong.standard.events import ToolEvent
from kosong.standard.pipeline import Forward, ForwardNow, Policy, PolicyToolset, with_policies
from kosong.standard.policies import (
    ApprovalPolicy,
    CachePolicy,
    DebugPolicy,
    DeprecationPolicy,
    EventHookPolicy,
    MemoryCache,
    MetricsPolicy,
    RepeatGuardPolicy,
    RetryPolicy,
    SingleFlightPolicy,
    TimeoutPolicy,
    TracingPolicy,
    TruncationPolicy,
)
from kosong.standard.trace import TRACE_ID_PATTERN, trace_scope
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolRuntimeError

BEIJING = {"location": "Beijing"}


def every_policy(tool: Any, *extra: Policy, **options: Any) -> PolicyToolset:
    """The benchmark's order: every policy, from the outside in."""
    return with_policies(
        toolset(tool),
        options.get("metrics", MetricsPolicy()),
        TracingPolicy(),
        DebugPolicy(),
        DeprecationPolicy(),
        options.get("guard", RepeatGuardPolicy(100)),
        ApprovalPolicy(lambda request: True),
        options.get("truncation", TruncationPolicy(20_000)),
        *extra,
        options.get("cache", CachePolicy()),
        SingleFlightPolicy(),
        RetryPolicy(),
        TimeoutPolicy(30),
    )


def finished(handled: Any) -> ToolResult:
    """`handled` as it came from handle(): a finished ToolResult, not a future."""
    assert isinstance(handled, ToolResult), f"expected a finished result, got {handled!r}"
    return handled


async def through_task(handled: Any) -> ToolResult:
    """`handled` as it came from handle(): a future (the call took the async way)."""
    assert isinstance(handled, asyncio.Future), f"expected a future, got {handled!r}"
    return await asyncio.wait_for(handled, 5)


class Waiting(Policy):
    """Has no synchronous side: every call it sees takes the async way."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        self.runs += 1
        return await forward(call, ctx)


class BrokenNow(Policy):
    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        raise RuntimeError("run_now bug")

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        return await forward(call, ctx)


class AnswersSomethingElse(Policy):
    def run_now(self, call: ToolCall, ctx: CallContext, forward: ForwardNow) -> Any:
        return "not a value"

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        return await forward(call, ctx)


async def test_a_hit_is_a_finished_result_with_the_metadata_of_the_async_way() -> None:
    tool = Weather()
    pipeline = every_policy(tool)
    miss = await through_task(pipeline.handle(make_call("get_weather", BEIJING, "a")))
    hit = finished(pipeline.handle(make_call("get_weather", BEIJING, "b")))
    assert len(tool.calls) == 1
    assert hit.tool_call_id == "b" and hit.return_value.output == miss.return_value.output
    # The same hit the async way (stream() always takes it), for comparison.
    slow = await pipeline.stream(make_call("get_weather", BEIJING, "c")).result()
    fast, async_way = standard_data(hit), standard_data(slow)
    assert fast.keys() == async_way.keys() == {"metadata", "debug_info"}
    assert fast["metadata"].keys() == async_way["metadata"].keys()
    assert fast["metadata"]["cache"].keys() == async_way["metadata"]["cache"].keys()
    assert fast["metadata"]["cache"]["hit"] is True
    assert fast["metadata"]["cache"]["cached_at"] == async_way["metadata"]["cache"]["cached_at"]
    assert fast["metadata"]["tool_name"] == "get_weather"
    assert TRACE_ID_PATTERN.match(fast["metadata"]["trace_id"])
    assert fast["debug_info"].keys() == async_way["debug_info"].keys()
    assert fast["debug_info"]["cache_hit"] is True
    assert fast["debug_info"]["cache_key"] == async_way["debug_info"]["cache_key"]
    # The cached value itself is left as it was stored: each hit gets its own copy.
    assert hit.return_value is not slow.return_value


async def test_a_policy_without_a_synchronous_side_sends_the_call_the_async_way() -> None:
    tool = Weather()
    waiting = Waiting()
    pipeline = every_policy(tool, waiting)
    await through_task(pipeline.handle(make_call("get_weather", BEIJING, "a")))
    hit = await through_task(pipeline.handle(make_call("get_weather", BEIJING, "b")))
    assert waiting.runs == 2 and len(tool.calls) == 1
    assert standard_data(hit)["metadata"]["cache"]["hit"] is True


async def test_a_policy_that_skips_the_call_does_not_stop_the_fast_path() -> None:
    pipeline = with_policies(toolset(Weather()), ApprovalPolicy(lambda r: False), CachePolicy())
    await pipeline.handle(make_call("get_weather", BEIJING))
    finished(pipeline.handle(make_call("get_weather", BEIJING)))


async def test_a_backend_that_may_wait_sends_the_call_the_async_way() -> None:
    class OtherMemory(MemoryCache):
        pass

    tool = Weather()
    pipeline = every_policy(tool, cache=CachePolicy(OtherMemory()))
    await pipeline.handle(make_call("get_weather", BEIJING))
    hit = await through_task(pipeline.handle(make_call("get_weather", BEIJING)))
    assert standard_data(hit)["metadata"]["cache"]["hit"] is True and len(tool.calls) == 1


async def test_a_miss_takes_the_async_way_and_counts_once() -> None:
    metrics, guard = MetricsPolicy(), RepeatGuardPolicy(2)
    tool = Weather()
    pipeline = every_policy(tool, metrics=metrics, guard=guard)
    await through_task(pipeline.handle(make_call("get_weather", BEIJING)))
    assert metrics.registry.snapshot()["get_weather"].calls == 1
    # Counted once although the fast path was tried first: the second call still runs...
    assert not finished(pipeline.handle(make_call("get_weather", BEIJING))).return_value.is_error
    # ... and the third is refused.
    refused = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    assert error_code(refused.return_value) == "REPEATED_CALL"


async def test_metrics_count_a_hit_with_its_latency() -> None:
    metrics = MetricsPolicy()
    pipeline = every_policy(Weather(), metrics=metrics)
    await pipeline.handle(make_call("get_weather", BEIJING))
    finished(pipeline.handle(make_call("get_weather", BEIJING)))
    snapshot = metrics.registry.snapshot()["get_weather"]
    assert snapshot.calls == 2 and snapshot.errors == 0
    assert snapshot.mean_latency_ms > 0


async def test_the_repeat_guard_counts_hits_and_refuses_without_a_task() -> None:
    tool = Weather()
    pipeline = every_policy(tool, guard=RepeatGuardPolicy(3))
    await pipeline.handle(make_call("get_weather", BEIJING))
    for _ in range(2):
        assert not finished(
            pipeline.handle(make_call("get_weather", BEIJING))
        ).return_value.is_error
    refused = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    assert error_code(refused.return_value) == "REPEATED_CALL"
    assert standard_data(refused)["metadata"]["tool_name"] == "get_weather"
    assert len(tool.calls) == 1


async def test_the_repeat_guard_with_a_window_counts_hits() -> None:
    now = [0.0]
    guard = RepeatGuardPolicy(2, window=10, clock=lambda: now[0])
    pipeline = every_policy(Weather(), guard=guard)
    await pipeline.handle(make_call("get_weather", BEIJING))
    now[0] = 1.0
    finished(pipeline.handle(make_call("get_weather", BEIJING)))
    now[0] = 2.0
    refused = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    assert error_code(refused.return_value) == "REPEATED_CALL"
    now[0] = 10.5  # the first call has left the window
    assert not finished(pipeline.handle(make_call("get_weather", BEIJING))).return_value.is_error


async def test_truncation_cuts_a_long_cached_output_on_the_fast_path() -> None:
    text = "x" * 5000
    tool = Scripted(lambda n: ToolOk(output=text, message="doc"), name="doc", cacheable=True)
    pipeline = every_policy(tool, truncation=TruncationPolicy(1000))
    first = await through_task(pipeline.handle(make_call("doc", {})))
    hit = finished(pipeline.handle(make_call("doc", {})))
    assert tool.calls == 1
    for result in (first, hit):
        data = output_json(result)
        assert data["truncated"] is True and data["content"] == text[:1000]
        assert standard_data(result)["metadata"]["truncation"]["original_length"] == 5000
        assert "read_more" in (result.return_value.message or "")
    # The continuation of the fast path's cut reads the rest.
    cursor = output_json(hit)["truncation_info"]["continuation"]
    rest = await pipeline.handle(make_call("read_more", {"cursor": cursor}))
    assert output_json(rest)["content"] == text[1000:2000]


async def test_truncation_with_a_summarizer_takes_the_async_way() -> None:
    tool = Scripted(lambda n: ToolOk(output="y" * 50), name="doc", cacheable=True)
    pipeline = every_policy(tool, truncation=TruncationPolicy(10, summarize=lambda t: "ys"))
    await pipeline.handle(make_call("doc", {}))
    hit = await through_task(pipeline.handle(make_call("doc", {})))
    assert output_json(hit)["truncation_info"]["summary"] == "ys" and tool.calls == 1


async def test_trace_ids_follow_the_same_rules_on_the_fast_path() -> None:
    pipeline = every_policy(Weather())
    await pipeline.handle(make_call("get_weather", BEIJING))
    given = finished(pipeline.handle(make_call("get_weather", BEIJING, trace_id="trace_given")))
    assert standard_data(given)["metadata"]["trace_id"] == "trace_given"
    with trace_scope("trace_20240101_0123456789ab"):
        scoped = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    assert standard_data(scoped)["metadata"]["trace_id"] == "trace_20240101_0123456789ab"
    ids = {
        standard_data(finished(pipeline.handle(make_call("get_weather", BEIJING))))["metadata"][
            "trace_id"
        ]
        for _ in range(2)
    }
    assert len(ids) == 2 and all(TRACE_ID_PATTERN.match(i) for i in ids)


async def test_a_hit_emits_exactly_one_result_event() -> None:
    events: list[ToolEvent] = []
    pipeline = every_policy(Weather(), EventHookPolicy(events.append))
    await pipeline.handle(make_call("get_weather", BEIJING))
    events.clear()
    await pipeline.handle(make_call("get_weather", BEIJING))
    assert [e.event for e in events] == ["tool_result"]
    metadata: Any = events[0].data["metadata"]
    assert metadata["cache"]["hit"] is True
    async with pipeline.stream(make_call("get_weather", BEIJING)) as stream:
        streamed = [event.event async for event in stream]
    assert streamed == ["tool_result"]


async def test_a_retired_tool_is_refused_without_a_task() -> None:
    tool = Weather(sunset_date="2020-01-01", replacement="get_weather_v2")
    pipeline = every_policy(tool)
    await every_policy(Weather()).handle(make_call("get_weather", BEIJING))  # a recent text
    refused = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    assert error_code(refused.return_value) == "TOOL_DEPRECATED" and not tool.calls


async def test_a_call_with_new_argument_text_takes_the_async_way() -> None:
    tool = Weather(sunset_date="2020-01-01")
    text = '{"location": "a city no test used before"}'
    refused = await through_task(every_policy(tool).handle(make_call("get_weather", text)))
    assert error_code(refused.return_value) == "TOOL_DEPRECATED"


async def test_a_deprecated_cached_tool_warns_on_the_fast_path_as_on_the_async_way() -> None:
    later = datetime(2999, 1, 1, tzinfo=UTC).date().isoformat()
    pipeline = every_policy(Weather(deprecated=True, sunset_date=later))
    first = await through_task(pipeline.handle(make_call("get_weather", BEIJING)))
    hit = finished(pipeline.handle(make_call("get_weather", BEIJING)))
    for key in ("warnings", "deprecation"):
        assert standard_data(hit)["metadata"][key] == standard_data(first)["metadata"][key]
    assert hit.return_value.message == first.return_value.message
    assert "deprecated" in (hit.return_value.message or "")


async def test_a_failing_run_now_is_an_error_value(caplog: pytest.LogCaptureFixture) -> None:
    result = finished(with_policies(toolset(Weather()), BrokenNow()).handle(make_call("x")))
    assert isinstance(result.return_value, ToolRuntimeError)
    assert "the pipeline failed: RuntimeError: run_now bug" in result.return_value.message
    assert standard_data(result)["metadata"]["tool_name"] == "x"
    assert "Pipeline failed" in caplog.text
    other = finished(
        with_policies(toolset(Weather()), AnswersSomethingElse()).handle(make_call("x"))
    )
    assert "answered str" in other.return_value.message


async def test_the_answer_is_the_same_however_the_arguments_are_written() -> None:
    tool = Weather()
    pipeline = every_policy(tool)
    await pipeline.handle(make_call("get_weather", '{"location": "Beijing", "unit": "celsius"}'))
    rewritten = make_call("get_weather", '{ "unit":"celsius","location":"Beijing" }')
    hit = await through_task(pipeline.handle(rewritten))  # a new text: the async way
    assert standard_data(hit)["metadata"]["cache"]["hit"] is True
    assert json.loads(hit.return_value.output) == {"temperature": 25, "condition": "sunny"}  # type: ignore[arg-type]
    assert len(tool.calls) == 1


def test_outside_an_event_loop_handle_still_reports_instead_of_raising() -> None:
    result = every_policy(Weather()).handle(make_call("get_weather", BEIJING))
    assert isinstance(result, ToolResult)
    assert "no running event loop" in result.return_value.message


@pytest.mark.parametrize(
    "value", [0.0, 0.0004, 0.0006, 1.2345678, 12.5, 599.9996, 1e9 + 0.123456, -3.21, 1e300]
)
def test_round3_rounds_as_round_does(value: float) -> None:
    assert round3(value) == pytest.approx(round(value, 3), abs=1e-9)
    assert round3(float("inf")) == float("inf")
