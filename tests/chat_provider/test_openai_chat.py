"""OpenAIChat over real HTTP: a local server speaks the Chat Completions streaming wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _bodies import check_chat_body
from _wire import DONE, USAGE, Reply, WireServer, chat_chunk, chat_text_reply, tool_delta
from pydantic import BaseModel

from kosong import generate, step, tool_result_to_message
from kosong.chat_provider import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    ChatProvider,
    TokenUsage,
)
from kosong.chat_provider.openai import OpenAIChat
from kosong.dialects import DialectError
from kosong.message import ImageURLPart, Message, TextPart, ThinkPart, ToolCall
from kosong.tooling import CallableTool2, Tool, ToolOk, ToolReturnValue
from kosong.tooling.error import ToolParseError
from kosong.tooling.simple import SimpleToolset


def provider(wire: WireServer, **kwargs: Any) -> OpenAIChat:
    chat = OpenAIChat(model="test-model", api_key="sk-test", base_url=wire.url + "/v1", **kwargs)
    wire.closers.append(chat.aclose)
    return chat


class AddParams(BaseModel):
    a: int
    b: int


class Add(CallableTool2[AddParams]):
    name = "add"
    description = "Add two integers."
    params = AddParams

    def __init__(
        self, started: asyncio.Event | None = None, release: asyncio.Event | None = None
    ) -> None:
        super().__init__()
        self._started = started
        self._release = release

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        if self._started is not None:
            self._started.set()
        if self._release is not None:
            await self._release.wait()
        return ToolOk(output=str(params.a + params.b))


def two_interleaved_calls(**reply: Any) -> Reply:
    events = [
        chat_chunk({"role": "assistant", "content": "Adding."}),
        chat_chunk(tool_delta(0, id="call_a", name="add", arguments='{"a": 1,')),
        chat_chunk(tool_delta(1, id="call_b", name="add", arguments='{"a": 10,')),
        chat_chunk(tool_delta(0, arguments=' "b": 2}')),
        chat_chunk(tool_delta(1, arguments=' "b": 20}')),
        chat_chunk({}, finish_reason="tool_calls"),
        chat_chunk(None, usage=USAGE),
        DONE,
    ]
    return Reply(events=events, **reply)


def test_openai_chat_is_a_chat_provider() -> None:
    chat = OpenAIChat(model="m", api_key="k")
    assert isinstance(chat, ChatProvider)
    assert (chat.name, chat.model_name, chat.thinking_effort) == ("openai", "m", None)
    assert chat.with_thinking("high").thinking_effort == "high"
    assert chat.thinking_effort is None


async def test_text_answer_streams_with_usage_id_request_id_and_finish_reason(
    wire: WireServer,
) -> None:
    wire.queue(chat_text_reply("Hel", "lo", headers={"x-request-id": "req_123"}))
    parts: list[object] = []
    result = await generate(
        provider(wire), "Be brief.", [], [Message(role="user", content="Hi")],
        on_message_part=parts.append,
    )  # fmt: skip
    assert result.message.content == [TextPart(text="Hello")]
    assert result.id == "chatcmpl-1"
    assert result.usage == TokenUsage(input_other=100, output=30, input_cache_read=20)
    assert (result.request_id, result.finish_reason) == ("req_123", "stop")
    assert len(parts) == 2
    request = wire.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    check_chat_body(request.body)
    assert request.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert request.body["stream_options"] == {"include_usage": True}
    assert "tools" not in request.body


async def test_interleaved_parallel_tool_calls_each_reach_their_own_call(
    wire: WireServer,
) -> None:
    wire.queue(two_interleaved_calls())
    toolset = SimpleToolset([Add()])
    result = await step(provider(wire), "", toolset, [Message(role="user", content="add")])
    assert [c.id for c in result.tool_calls] == ["call_a", "call_b"]
    assert [c.function.arguments for c in result.tool_calls] == [
        '{"a": 1, "b": 2}',
        '{"a": 10, "b": 20}',
    ]
    outputs = [r.return_value.output for r in await result.tool_results()]
    assert outputs == ["3", "30"]
    assert result.finish_reason == "tool_calls"
    body = wire.requests[0].body
    check_chat_body(body)
    assert body["tools"] == [
        {"type": "function", "function": {"name": "add", "description": "Add two integers.",
                                          "parameters": Add().base.parameters}}
    ]  # fmt: skip


async def test_a_tool_starts_before_the_stream_ends(wire: WireServer) -> None:
    started = asyncio.Event()
    events = [
        chat_chunk(tool_delta(0, id="call_a", name="add", arguments='{"a": 1, "b": 2}')),
        chat_chunk(tool_delta(1, id="call_b", name="add", arguments='{"a": 3, "b": 4}')),
        chat_chunk({}, finish_reason="tool_calls"),
        DONE,
    ]
    # The first call is complete when the second starts; the server sends the end of the
    # answer only once the first tool has started: if tools waited for the stream's end, this
    # would time out.
    wire.queue(Reply(events=events, hold={2: started}))
    toolset = SimpleToolset([Add(started=started)])
    result = await step(provider(wire), "", toolset, [Message(role="user", content="add")])
    assert [r.return_value.output for r in await result.tool_results()] == ["3", "7"]


async def test_unparseable_arguments_still_reach_the_toolset(wire: WireServer) -> None:
    events = [
        chat_chunk(tool_delta(0, id="call_a", name="add", arguments='{"a": 1, "b"')),
        chat_chunk({}, finish_reason="tool_calls"),
        DONE,
    ]
    wire.queue(Reply(events=events))
    result = await step(
        provider(wire), "", SimpleToolset([Add()]), [Message(role="user", content="x")]
    )
    (only,) = await result.tool_results()
    assert isinstance(only.return_value, ToolParseError)


async def test_429_with_retry_after_is_retried_by_the_client(wire: WireServer) -> None:
    wire.queue(
        Reply(
            status=429, headers={"Retry-After": "0.01"}, body={"error": {"message": "slow down"}}
        ),
        chat_text_reply("ok"),
    )
    result = await generate(provider(wire), "", [], [Message(role="user", content="hi")])
    assert result.message.extract_text() == "ok"
    assert len(wire.requests) == 2


async def test_429_without_retries_is_an_api_status_error(wire: WireServer) -> None:
    wire.queue(
        Reply(status=429, headers={"Retry-After": "0.01"}, body={"error": {"message": "slow down"}})
    )
    with pytest.raises(APIStatusError) as caught:
        await generate(provider(wire, max_retries=0), "", [], [Message(role="user", content="hi")])
    assert caught.value.status_code == 429


async def test_500_carries_the_request_id(wire: WireServer) -> None:
    wire.queue(
        Reply(status=500, headers={"x-request-id": "req_500"}, body={"error": {"message": "boom"}})
    )
    with pytest.raises(APIStatusError) as caught:
        await generate(provider(wire, max_retries=0), "", [], [Message(role="user", content="hi")])
    assert (caught.value.status_code, caught.value.request_id) == (500, "req_500")
    assert "req_500" in str(caught.value)


async def test_a_connection_dropped_mid_stream_cancels_the_running_tools(
    wire: WireServer,
) -> None:
    started, never = asyncio.Event(), asyncio.Event()
    events = [
        chat_chunk(tool_delta(0, id="call_a", name="add", arguments='{"a": 1, "b": 2}')),
        chat_chunk(tool_delta(1, id="call_b", name="add", arguments='{"a": 3')),
        chat_chunk(tool_delta(1, arguments=', "b": 4}')),
        DONE,
    ]
    wire.queue(Reply(events=events, hold={2: started}, drop_after=2))
    toolset = SimpleToolset([Add(started=started, release=never)])
    tasks_before = asyncio.all_tasks()
    with pytest.raises(APIConnectionError):
        await step(provider(wire), "", toolset, [Message(role="user", content="x")])
    leftover = [
        t for t in asyncio.all_tasks() - tasks_before if "Add" in repr(t) or "_run" in repr(t)
    ]
    assert leftover == []


async def test_an_empty_answer_is_an_empty_response_error(wire: WireServer) -> None:
    wire.queue(Reply(events=[chat_chunk({}, finish_reason="stop"), DONE]))
    with pytest.raises(APIEmptyResponseError):
        await generate(provider(wire), "", [], [Message(role="user", content="hi")])


async def test_a_whole_conversation_is_a_valid_chat_request(wire: WireServer) -> None:
    wire.queue(chat_text_reply("done"))
    call = ToolCall(
        id="call_1", function=ToolCall.FunctionBody(name="add", arguments='{"a":1,"b":2}')
    )
    image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/cat.png"))
    from kosong.tooling import ToolResult

    history = [
        Message(role="user", content=[TextPart(text="what is this?"), image]),
        Message(
            role="assistant", content=[ThinkPart(think="hmm"), TextPart(text="")], tool_calls=[call]
        ),
        tool_result_to_message(
            ToolResult("call_1", ToolOk(output=[TextPart(text="3"), image], message="ok"))
        ),
        Message(role="system", content="be nice"),
    ]
    snapshot = [m.model_copy(deep=True) for m in history]
    await generate(provider(wire, reasoning_key="reasoning_content"), "sys", [Add().base], history)
    assert history == snapshot
    body = wire.requests[0].body
    check_chat_body(body)
    assistant = body["messages"][2]
    assert "content" not in assistant  # only blank text beside the tool calls
    assert assistant["reasoning_content"] == "hmm"
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [
            {"type": "text", "text": "3"},
            {"type": "text", "text": "[image: https://x/cat.png]"},
            {"type": "text", "text": "ok"},
        ],
    }


async def test_a_strict_tool_the_api_would_reject_fails_before_the_request(
    wire: WireServer,
) -> None:
    loose = Tool(
        name="find", description="Find.", strict=True,
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )  # fmt: skip
    with pytest.raises(DialectError, match="every property must be required"):
        await generate(provider(wire), "", [loose], [Message(role="user", content="x")])
    assert wire.requests == []


@pytest.mark.parametrize(("effort", "sent"), [("off", None), ("low", "low"), ("max", "xhigh")])
async def test_thinking_effort_is_sent_as_reasoning_effort(
    wire: WireServer, effort: str, sent: str | None
) -> None:
    wire.queue(chat_text_reply("ok"))
    chat = provider(wire).with_thinking(effort)  # pyright: ignore[reportArgumentType]
    await generate(chat, "", [], [Message(role="user", content="hi")])
    check_chat_body(wire.requests[0].body)
    assert wire.requests[0].body.get("reasoning_effort") == sent


def test_a_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChat(model="m")
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_MODEL"):
        OpenAIChat(api_key="k")


async def test_tool_call_deltas_without_an_index_are_told_apart_by_their_ids(
    wire: WireServer,
) -> None:
    def delta(**call: Any) -> dict[str, Any]:
        return {"tool_calls": [call]}

    events = [
        chat_chunk(
            delta(id="c1", type="function", function={"name": "add", "arguments": '{"a": 1,'})
        ),
        chat_chunk(delta(function={"arguments": ' "b": 2}'})),
        chat_chunk(
            delta(
                id="c2", type="function", function={"name": "add", "arguments": '{"a": 3, "b": 4}'}
            )
        ),
        chat_chunk({}, finish_reason="tool_calls"),
        DONE,
    ]
    wire.queue(Reply(events=events))
    result = await step(
        provider(wire), "", SimpleToolset([Add()]), [Message(role="user", content="x")]
    )
    assert [(c.id, c.function.arguments) for c in result.tool_calls] == [
        ("c1", '{"a": 1, "b": 2}'), ("c2", '{"a": 3, "b": 4}'),
    ]  # fmt: skip
    assert [r.return_value.output for r in await result.tool_results()] == ["3", "7"]
