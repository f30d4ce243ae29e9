"""OpenAIResponses over real HTTP: a local server speaks the Responses streaming wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _bodies import check_responses_body
from _wire import Reply, WireServer, responses_reply
from test_openai_chat import Add

from kosong import generate, step, tool_result_to_message
from kosong.chat_provider import APIStatusError, TokenUsage
from kosong.chat_provider.openai import OpenAIResponses
from kosong.message import Message, TextPart, ThinkPart
from kosong.tooling.simple import SimpleToolset


def responses(wire: WireServer, **kwargs: Any) -> OpenAIResponses:
    provider = OpenAIResponses(
        model="test-model", api_key="sk", base_url=wire.url + "/v1", **kwargs
    )
    wire.closers.append(provider.aclose)
    return provider


async def test_function_calls_run_and_their_outputs_go_back(wire: WireServer) -> None:
    wire.queue(
        responses_reply(
            [
                {"type": "reasoning", "pieces": ["Adding ", "twice."]},
                {"type": "message", "pieces": ["Sure."]},
                {
                    "type": "function_call",
                    "call_id": "fc_1",
                    "name": "add",
                    "pieces": ['{"a": 1,', ' "b": 2}'],
                },
                {
                    "type": "function_call",
                    "call_id": "fc_2",
                    "name": "add",
                    "pieces": ['{"a": 3, "b": 4}'],
                },
            ],
            headers={"x-request-id": "req_r"},
        ),
        responses_reply([{"type": "message", "pieces": ["3 and 7"]}]),
    )
    provider = responses(wire).with_thinking("low")
    toolset = SimpleToolset([Add()])
    history = [Message(role="user", content="add")]
    first = await step(provider, "You add.", toolset, history)
    assert first.message.content == [ThinkPart(think="Adding twice."), TextPart(text="Sure.")]
    assert [c.id for c in first.tool_calls] == ["fc_1", "fc_2"]
    assert first.usage == TokenUsage(input_other=60, output=12, input_cache_read=30)
    assert (first.id, first.request_id, first.finish_reason) == ("resp_1", "req_r", "completed")
    history += [first.message, *(tool_result_to_message(r) for r in await first.tool_results())]
    second = await generate(provider, "You add.", toolset.tools, history)
    assert second.message.extract_text() == "3 and 7"

    body = wire.requests[1].body
    check_responses_body(body)
    assert wire.requests[1].path == "/v1/responses"
    assert body["store"] is False
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["input"][0] == {"role": "developer", "content": "You add."}
    assert body["tools"][0]["strict"] is False
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["developer", "user", "assistant", "function_call", "function_call",
                     "function_call_output", "function_call_output"]  # fmt: skip
    assert body["input"][5] == {"type": "function_call_output", "call_id": "fc_1", "output": "3"}


async def test_a_status_error_keeps_its_code(wire: WireServer) -> None:
    wire.queue(
        Reply(status=400, body={"error": {"message": "bad", "type": "invalid_request_error"}})
    )
    with pytest.raises(APIStatusError) as caught:
        await generate(responses(wire, max_retries=0), "", [], [Message(role="user", content="x")])
    assert caught.value.status_code == 400


async def test_a_tool_starts_when_its_item_is_done_before_the_stream_ends(
    wire: WireServer,
) -> None:
    started = asyncio.Event()
    reply = responses_reply(
        [
            {
                "type": "function_call",
                "call_id": "fc_1",
                "name": "add",
                "pieces": ['{"a": 1, "b": 2}'],
            }
        ]
    )
    done = next(i for i, e in enumerate(reply.events) if "response.output_item.done" in e)
    reply.hold = {done + 1: started}  # the response's end waits for the tool to start
    wire.queue(reply)
    toolset = SimpleToolset([Add(started=started)])
    result = await step(responses(wire), "", toolset, [Message(role="user", content="x")])
    assert [r.return_value.output for r in await result.tool_results()] == ["3"]
