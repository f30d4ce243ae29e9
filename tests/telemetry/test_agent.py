"""The `invoke_agent` span around `agent_loop`: its steps' model and tool calls are children."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from kosong import ToolRetriesExhausted, agent_loop
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message
from kosong.testing import ScriptedTool
from kosong.tooling.simple import SimpleToolset
from tests.telemetry._recorded import Recorded, attrs, parent_of, span_id, trace_id

QUESTION = [Message(role="user", content="Weather in Paris and Oslo?")]


def weather() -> SimpleToolset:
    return SimpleToolset([ScriptedTool("get_weather", ["rainy", "snowy"])])


def script() -> ScriptedChatProvider:
    return ScriptedChatProvider(
        [
            [
                "Looking.",
                call("get_weather", {"city": "Paris"}, id="c1"),
                call("get_weather", {"city": "Oslo"}, id="c2"),
            ],
            ["Paris is rainy, Oslo snowy."],
        ]
    )


async def test_an_agent_run_is_one_trace_its_model_and_tool_calls_children_of_its_span(
    otel: Recorded,
) -> None:
    result = await agent_loop(script(), "You help.", weather(), QUESTION, agent_name="weather")
    agent = otel.span("invoke_agent weather")
    assert agent.kind == SpanKind.INTERNAL
    chats = [s for s in otel.spans if s.name == "chat scripted-model"]
    tools = [s for s in otel.spans if s.name == "execute_tool get_weather"]
    assert len(chats) == 2 and len(tools) == 2
    # The tool calls run while the first answer streams, yet are the agent's children,
    # siblings of the model call (as the conventions draw an agent's trace).
    assert {parent_of(s) for s in [*chats, *tools]} == {span_id(agent)}
    assert {trace_id(s) for s in otel.spans} == {trace_id(agent)}
    assert tools[0].start_time is not None and chats[0].end_time is not None
    assert min(t.start_time or 0 for t in tools) < chats[0].end_time
    attributes = attrs(agent)
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "weather"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.request.model"] == "scripted-model"
    used = [s.usage for s in result.steps if s.usage is not None]
    assert attributes["gen_ai.usage.input_tokens"] == sum(u.input for u in used)
    assert attributes["gen_ai.usage.output_tokens"] == sum(u.output for u in used)
    (duration,) = otel.points("gen_ai.invoke_agent.duration")
    assert dict(duration.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "scripted",
        "gen_ai.agent.name": "weather",
        "gen_ai.request.model": "scripted-model",
    }


async def test_an_unnamed_agent_is_invoke_agent(otel: Recorded) -> None:
    await agent_loop(script(), "", weather(), QUESTION)
    assert "gen_ai.agent.name" not in otel.attributes("invoke_agent")


async def test_a_run_that_raises_ends_its_span_as_an_error(otel: Recorded) -> None:
    wrong = [[call("get_weather", "not an object", id=f"c{i}")] for i in range(3)]
    provider = ScriptedChatProvider(wrong)
    with pytest.raises(ToolRetriesExhausted):
        await agent_loop(provider, "", weather(), QUESTION, retry_budget=1)
    span = otel.span("invoke_agent")
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] == "kosong._agent_loop.ToolRetriesExhausted"
