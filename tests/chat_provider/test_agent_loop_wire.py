"""agent_loop against the local servers speaking OpenAI Chat Completions and Anthropic
Messages: the tool choice of each step as the API documents it, results sent back, stops."""

from __future__ import annotations

from _bodies import check_anthropic_body, check_chat_body
from _wire import (
    DONE,
    USAGE,
    Reply,
    WireServer,
    anthropic_reply,
    chat_chunk,
    chat_text_reply,
    tool_delta,
)
from fixtures import anthropic as anthropic_fx
from fixtures import openai_chat as chat_fx

from kosong import agent_loop
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.openai import OpenAIChat
from kosong.message import Message
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def finish(summary: str) -> str:
    """Hand the final summary over."""
    return "handed over"


USER = [Message(role="user", content="What is 1 + 2?")]


def chat_calls(*calls: tuple[str, str, str]) -> Reply:
    events = [
        chat_chunk(tool_delta(i, id=call_id, name=name, arguments=arguments))
        for i, (call_id, name, arguments) in enumerate(calls)
    ]
    events += [chat_chunk({}, finish_reason="tool_calls"), chat_chunk(None, usage=USAGE), DONE]
    return Reply(events=events)


async def test_openai_chat_gets_the_first_steps_tool_choice_then_the_results(
    wire: WireServer,
) -> None:
    provider = OpenAIChat(model=chat_fx.MODEL, api_key="sk", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(chat_calls(("call_a", "add", '{"a": 1, "b": 2}')), chat_text_reply("It is 3."))
    result = await agent_loop(
        provider, "Be brief.", SimpleToolset([add]), USER,
        tool_choice=lambda n: "required" if n == 1 else None,
    )  # fmt: skip
    assert (result.stop_reason, result.answer) == ("answered", "It is 3.")
    first, second = (r.body for r in wire.requests)
    assert first["tool_choice"] == chat_fx.TOOL_CHOICES["required"] == "required"
    assert "tool_choice" not in second
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "3"},
    ]
    for body in (first, second):
        check_chat_body(body)
    assert result.tokens_used == 2 * USAGE["total_tokens"]


async def test_anthropic_gets_a_named_tool_choice_and_the_loop_stops_after_that_tool(
    wire: WireServer,
) -> None:
    provider = Anthropic(model=anthropic_fx.MODEL, api_key="sk-ant", base_url=wire.url)
    wire.closers.append(provider.aclose)
    wire.queue(
        anthropic_reply(
            [{"type": "tool_use", "id": "toolu_1", "name": "finish",
              "pieces": ['{"summary": ', '"three"}']}],
            stop_reason="tool_use",
        )
    )  # fmt: skip
    result = await agent_loop(
        provider, "Be brief.", SimpleToolset([add, finish]), USER,
        tool_choice="finish", stop_at_tools={"finish"},
    )  # fmt: skip
    assert result.stop_reason == "stop_at_tool"
    assert len(wire.requests) == 1
    body = wire.requests[0].body
    assert body["tool_choice"] == anthropic_fx.TOOL_CHOICES["add"] | {"name": "finish"}
    check_anthropic_body(body)
    assert [m.extract_text() for m in result.messages if m.role == "tool"] == ["handed over"]
