"""`execute_tool` spans for every call `step` dispatches; a pipeline adds to the same span."""

from __future__ import annotations

import asyncio

from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from kosong import step
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message, ToolCall
from kosong.standard import coded_error, to_envelope, with_policies
from kosong.standard.policies import RetryPolicy, TracingPolicy
from kosong.testing import ScriptedTool
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue, Toolset
from kosong.tooling.error import ToolNetworkError
from kosong.tooling.simple import SimpleToolset
from tests.standard._std_tools import Scripted, Weather
from tests.telemetry._recorded import Recorded, attrs, parent_of, span_id

HI = [Message(role="user", content="Hi")]


async def run_step(toolset: Toolset, *calls: ToolCall) -> list[ToolResult]:
    provider = ScriptedChatProvider([[*calls]])
    result = await step(provider, "", toolset, HI)
    results = list(await result.tool_results())
    # A call's span ends in its future's done callback, which the loop runs on its next turn
    # when the call had finished before the results were awaited.
    await asyncio.sleep(0)
    return results


async def test_each_call_step_dispatches_gets_its_span_without_any_pipeline(
    otel: Recorded,
) -> None:
    tool = ScriptedTool("get_weather", ["rainy"])
    await run_step(SimpleToolset([tool]), call("get_weather", {"city": "Paris"}, id="c1"))
    span = otel.span("execute_tool get_weather")
    assert span.kind == SpanKind.INTERNAL
    assert attrs(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": tool.description,
    }
    assert span.status.status_code == StatusCode.UNSET
    (duration,) = otel.points("gen_ai.execute_tool.duration")
    assert dict(duration.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
    }
    assert abs(duration.sum - ((span.end_time or 0) - (span.start_time or 0)) / 1e9) < 0.01


async def test_a_failed_call_has_its_error_code_as_error_type(otel: Recorded) -> None:
    await run_step(SimpleToolset([ScriptedTool("get_weather", ["rainy"])]), call("nope", {}))
    span = otel.span("execute_tool nope")
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] == "TOOL_NOT_FOUND"
    assert "gen_ai.tool.description" not in attrs(span)
    (duration,) = otel.points("gen_ai.execute_tool.duration")
    assert duration.attributes["error.type"] == "TOOL_NOT_FOUND"


async def test_spans_the_tool_starts_are_children_of_its_call(otel: Recorded) -> None:
    tracer = otel.tracers.get_tracer("weather-service")

    async def body(n: int) -> ToolReturnValue:
        await asyncio.sleep(0)
        with tracer.start_as_current_span("GET weather-api"):
            return ToolOk(output="rainy")

    await run_step(SimpleToolset([Scripted(body)]), call("scripted", {}))
    inner, outer = otel.span("GET weather-api"), otel.span("execute_tool scripted")
    assert parent_of(inner) == span_id(outer)


async def test_a_tracing_policy_adds_to_the_calls_span_and_makes_no_second_one(
    otel: Recorded,
) -> None:
    tool = Scripted(
        lambda n: ToolNetworkError("x") if n == 0 else coded_error("CITY_NOT_FOUND", "no"),
        read_only_hint=True,
    )
    pipeline = with_policies(SimpleToolset([tool]), TracingPolicy(), RetryPolicy(base_delay=0.001))
    (result,) = await run_step(pipeline, call("scripted", {}, id="c9"))
    (span,) = [s for s in otel.spans if s.name.startswith("execute_tool")]
    attributes = attrs(span)
    assert span.name == "execute_tool scripted"
    assert attributes["gen_ai.tool.call.id"] == "c9"
    assert attributes["kosong.retry_count"] == 1
    assert attributes["kosong.cache_hit"] is False
    assert attributes["kosong.trace_id"] == to_envelope(result).metadata.trace_id
    # The pipeline's own code, not the result's class's (EXECUTION_ERROR).
    assert attributes["error.type"] == "CITY_NOT_FOUND"
    assert span.status.status_code == StatusCode.ERROR


async def test_a_tracing_policy_outside_step_makes_the_span_with_kosongs_tracer(
    otel: Recorded,
) -> None:
    pipeline = with_policies(SimpleToolset([Weather()]), TracingPolicy())
    from kosong.testing import make_call

    await pipeline.handle(make_call("get_weather", {"location": "x"}, "c3"))
    span = otel.span("execute_tool get_weather")
    assert attrs(span)["gen_ai.tool.call.id"] == "c3"
    assert len(otel.points("gen_ai.execute_tool.duration")) == 1


async def test_a_call_cancelled_with_its_step_ends_its_span(otel: Recorded) -> None:
    started = asyncio.Event()

    async def body(n: int) -> ToolReturnValue:
        started.set()
        await asyncio.Event().wait()
        return ToolOk()

    provider = ScriptedChatProvider([[call("scripted", {}), "and more"]])
    result = await step(provider, "", SimpleToolset([Scripted(body)]), HI)
    await asyncio.wait_for(started.wait(), 5)
    waiting = asyncio.ensure_future(result.tool_results())
    await asyncio.sleep(0)  # it waits for the call now
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)  # the call is cancelled and awaited
    await asyncio.sleep(0)  # the call's done callback, which ends its span
    span = otel.span("execute_tool scripted")
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] == "asyncio.exceptions.CancelledError"
    # Nothing of the call's stays current here.
    assert not trace.get_current_span().is_recording()
