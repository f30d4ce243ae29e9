"""Anthropic over real HTTP: a local server speaks the Messages streaming wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _bodies import check_anthropic_body
from _wire import Reply, WireServer, anthropic_event, anthropic_reply
from test_openai_chat import Add

from kosong import generate, step, tool_result_to_message
from kosong.chat_provider import APIConnectionError, APIStatusError, TokenUsage
from kosong.chat_provider.anthropic import Anthropic
from kosong.dialects import DialectError
from kosong.message import Message, TextPart, ThinkPart
from kosong.tooling import Tool
from kosong.tooling.simple import SimpleToolset


def claude(wire: WireServer, **kwargs: Any) -> Anthropic:
    provider = Anthropic(model="claude-haiku-4-5", api_key="sk-ant", base_url=wire.url, **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def two_tool_uses(**reply: Any) -> Reply:
    return anthropic_reply(
        [
            {"type": "thinking", "pieces": ["Two ", "sums."], "signature": "sig-1"},
            {"type": "text", "pieces": ["On it."]},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "add",
                "pieces": ['{"a": 1, ', '"b": 2}'],
            },
            {"type": "tool_use", "id": "toolu_2", "name": "add", "pieces": ['{"a": 3, "b": 4}']},
        ],
        stop_reason="tool_use",
        **reply,
    )


async def test_a_conversation_round_trip_keeps_thinking_and_merges_tool_results(
    wire: WireServer,
) -> None:
    wire.queue(
        two_tool_uses(headers={"request-id": "req_ant"}),
        anthropic_reply([{"type": "text", "pieces": ["3 and 7"]}]),
    )
    provider = claude(wire).with_thinking("medium")
    toolset = SimpleToolset([Add()])
    history = [Message(role="user", content="add 1+2 and 3+4")]
    first = await step(provider, "You add.", toolset, history)
    assert first.message.content == [
        ThinkPart(think="Two sums.", encrypted="sig-1"),
        TextPart(text="On it."),
    ]
    assert [c.function.arguments for c in first.tool_calls] == [
        '{"a": 1, "b": 2}',
        '{"a": 3, "b": 4}',
    ]
    assert first.usage == TokenUsage(
        input_other=100, output=42, input_cache_read=40, input_cache_creation=10
    )
    assert (first.id, first.request_id, first.finish_reason) == ("msg_1", "req_ant", "tool_use")
    results = await first.tool_results()
    history += [first.message, *(tool_result_to_message(r) for r in results)]
    second = await generate(provider, "You add.", toolset.tools, history)
    assert second.message.extract_text() == "3 and 7"

    body = wire.requests[1].body
    check_anthropic_body(body)
    assert body["system"] == [
        {"type": "text", "text": "You add.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["tools"] == [
        {
            "name": "add",
            "description": "Add two integers.",
            "input_schema": Add().base.parameters,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assistant, results_message = body["messages"][1], body["messages"][2]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Two sums.",
        "signature": "sig-1",
    }
    assert assistant["content"][2] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "add",
        "input": {"a": 1, "b": 2},
    }
    assert [b["tool_use_id"] for b in results_message["content"]] == ["toolu_1", "toolu_2"]
    assert results_message["content"][0]["content"] == [{"type": "text", "text": "3"}]
    assert len(body["messages"]) == 3


async def test_a_tool_starts_when_its_block_stops_before_the_stream_ends(wire: WireServer) -> None:
    started = asyncio.Event()
    reply = anthropic_reply(
        [{"type": "tool_use", "id": "toolu_1", "name": "add", "pieces": ['{"a": 1, "b": 2}']}],
        stop_reason="tool_use",
    )
    stop = next(i for i, e in enumerate(reply.events) if "content_block_stop" in e)
    reply.hold = {stop + 1: started}  # the message's end waits for the tool to start
    wire.queue(reply)
    result = await step(
        claude(wire), "", SimpleToolset([Add(started=started)]), [Message(role="user", content="x")]
    )
    assert [r.return_value.output for r in await result.tool_results()] == ["3"]


async def test_an_overloaded_error_carries_status_and_request_id(wire: WireServer) -> None:
    wire.queue(
        Reply(
            status=529, headers={"request-id": "req_529"},
            body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )
    )  # fmt: skip
    with pytest.raises(APIStatusError) as caught:
        await generate(claude(wire, max_retries=0), "", [], [Message(role="user", content="x")])
    assert (caught.value.status_code, caught.value.request_id) == (529, "req_529")


async def test_a_dropped_stream_is_a_connection_error(wire: WireServer) -> None:
    reply = two_tool_uses()
    reply.drop_after = 6
    wire.queue(reply)
    with pytest.raises(APIConnectionError):
        await generate(claude(wire), "", [], [Message(role="user", content="x")])


async def test_an_error_event_mid_stream_is_a_status_error(wire: WireServer) -> None:
    reply = anthropic_reply([{"type": "text", "pieces": ["a"]}])
    reply.events.insert(
        3,
        anthropic_event(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
    )
    wire.queue(reply)
    with pytest.raises(APIStatusError):
        await generate(claude(wire), "", [], [Message(role="user", content="x")])


async def test_a_root_anyof_schema_fails_before_the_request(wire: WireServer) -> None:
    either = Tool(
        name="either", description="One of two.",
        parameters={"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
    )  # fmt: skip
    with pytest.raises(DialectError, match="anyOf at the top level"):
        await generate(claude(wire), "", [either], [Message(role="user", content="x")])
    assert wire.requests == []


def test_anthropic_needs_a_model_and_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_MODEL"):
        Anthropic(api_key="k")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        Anthropic(model="m")


async def test_anthropic_counts_cache_reads_and_writes_in_token_usage(wire: WireServer) -> None:
    # message_start reports cache_read_input_tokens 40 and cache_creation_input_tokens 10.
    wire.queue(anthropic_reply([{"type": "text", "pieces": ["ok"]}]))
    result = await generate(claude(wire), "Be brief.", [], [Message(role="user", content="hi")])
    assert result.usage == TokenUsage(
        input_other=100, output=42, input_cache_read=40, input_cache_creation=10
    )
    assert result.usage is not None and result.usage.input == 150
