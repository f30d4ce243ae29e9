"""Kimi over real HTTP: Moonshot's Chat Completions dialect, thinking, schema fixes."""

from __future__ import annotations

from typing import Any

import pytest
from _bodies import check_chat_body
from _wire import DONE, Reply, WireServer, chat_chunk

from kosong import generate
from kosong.chat_provider import TokenUsage
from kosong.chat_provider.kimi import DEFAULT_MODEL, Kimi
from kosong.dialects import DialectError
from kosong.message import Message, TextPart, ThinkPart
from kosong.tooling import Tool


def kimi(wire: WireServer, **kwargs: Any) -> Kimi:
    provider = Kimi(api_key="sk-kimi", base_url=wire.url + "/v1", **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def thinking_reply() -> Reply:
    usage = {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59, "cached_tokens": 10}
    events = [
        chat_chunk({"role": "assistant", "reasoning_content": "Let me"}),
        chat_chunk({"reasoning_content": " think."}),
        chat_chunk({"content": "42"}),
        # Moonshot sends the usage inside the last choice.
        sse_choice_usage(usage),
        DONE,
    ]
    return Reply(events=events, headers={"x-request-id": "msh-1"})


def sse_choice_usage(usage: dict[str, Any]) -> str:
    from _wire import sse

    return sse(
        {
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "k",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}],
        }
    )  # fmt: skip


def test_kimi_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_API_KEY", "sk-env")
    monkeypatch.delenv("KIMI_MODEL", raising=False)
    monkeypatch.setenv("KIMI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = Kimi()
    assert (provider.name, provider.model_name) == ("kimi", DEFAULT_MODEL)
    assert str(provider.client.base_url) == "http://127.0.0.1:9/v1/"
    monkeypatch.setenv("KIMI_MODEL", "kimi-other")
    assert Kimi().model_name == "kimi-other"
    assert Kimi(model="mine").model_name == "mine"


def test_kimi_without_a_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIMI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="KIMI_API_KEY"):
        Kimi()


async def test_kimi_streams_thinking_and_reads_usage_from_the_choice(wire: WireServer) -> None:
    wire.queue(thinking_reply())
    result = await generate(
        kimi(wire).with_thinking("high"), "", [], [Message(role="user", content="?")]
    )
    assert result.message.content == [ThinkPart(think="Let me think."), TextPart(text="42")]
    assert result.usage == TokenUsage(input_other=40, output=9, input_cache_read=10)
    body = wire.requests[0].body
    check_chat_body(body)
    assert body["thinking"] == {"type": "enabled"}
    assert body["model"] == DEFAULT_MODEL


async def test_kimi_sends_thinking_back_as_reasoning_content(wire: WireServer) -> None:
    wire.queue(thinking_reply())
    history = [
        Message(role="user", content="?"),
        Message(role="assistant", content=[ThinkPart(think="hm"), TextPart(text="a")]),
        Message(role="user", content="and?"),
    ]
    await generate(kimi(wire).with_thinking("off"), "", [], history)
    body = wire.requests[0].body
    check_chat_body(body)
    assert body["messages"][1] == {"role": "assistant", "content": "a", "reasoning_content": "hm"}
    assert body["thinking"] == {"type": "disabled"}


async def test_kimi_applies_moonshot_fixes_to_tool_schemas(wire: WireServer) -> None:
    wire.queue(thinking_reply())
    tool = Tool(
        name="pick",
        description="Pick one.",
        parameters={
            "type": "object",
            "properties": {
                "color": {"enum": ["red", "blue"]},
                "size": {"type": "integer", "anyOf": [{"minimum": 1}, {"maximum": -1}]},
            },
        },
    )
    await generate(kimi(wire), "", [tool], [Message(role="user", content="?")])
    sent = wire.requests[0].body["tools"][0]["function"]["parameters"]["properties"]
    assert sent["color"] == {"enum": ["red", "blue"], "type": "string"}
    assert sent["size"] == {
        "anyOf": [{"minimum": 1, "type": "integer"}, {"maximum": -1, "type": "integer"}]
    }


async def test_kimi_refuses_a_schema_moonshot_rejects_before_sending(wire: WireServer) -> None:
    anything = Tool(
        name="store", description="Store a value.",
        parameters={"type": "object", "properties": {"value": {}}},
    )  # fmt: skip
    with pytest.raises(DialectError, match=r"parameters\.properties\.value: type is not defined"):
        await generate(kimi(wire), "", [anything], [Message(role="user", content="?")])
    assert wire.requests == []


async def test_kimi_keeps_an_empty_reasoning_content_both_ways(wire: WireServer) -> None:
    events = [
        chat_chunk({"role": "assistant", "reasoning_content": ""}),
        chat_chunk({"content": "42"}),
        chat_chunk({}, finish_reason="stop"),
        DONE,
    ]
    wire.queue(Reply(events=events), Reply(events=events))
    question = [Message(role="user", content="?")]
    first = await generate(kimi(wire).with_thinking("high"), "", [], question)
    assert first.message.content == [ThinkPart(think=""), TextPart(text="42")]
    history = [*question, first.message, Message(role="user", content="and?")]
    await generate(kimi(wire).with_thinking("high"), "", [], history)
    sent = wire.requests[-1].body["messages"][1]
    assert sent == {"role": "assistant", "content": "42", "reasoning_content": ""}
