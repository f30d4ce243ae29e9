"""Model-call spans and metrics from real providers: OpenAIChat over HTTP, the scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from kosong import generate
from kosong._telemetry import _model
from kosong.chat_provider import APIStatusError
from kosong.chat_provider.openai import OpenAIChat
from kosong.chat_provider.scripted import ScriptedChatProvider
from kosong.message import Message
from tests.chat_provider._wire import DONE, Reply, WireServer, chat_chunk, chat_text_reply
from tests.telemetry._recorded import Recorded, attrs

HI = [Message(role="user", content="Hi")]


@pytest.fixture
async def wire() -> AsyncIterator[WireServer]:
    async with WireServer() as server:
        yield server


def openai(wire: WireServer) -> OpenAIChat:
    chat = OpenAIChat(model="test-model", api_key="sk-test", base_url=wire.url + "/v1")
    wire.closers.append(chat.aclose)
    return chat


async def test_a_streamed_answer_is_a_client_span_named_after_the_operation_and_model(
    wire: WireServer, otel: Recorded
) -> None:
    wire.queue(chat_text_reply("Hel", "lo"))
    provider = openai(wire).with_generation_kwargs(temperature=0.2, max_tokens=64, seed=7)
    await generate(provider, "Be brief.", [], HI)
    span = otel.span("chat test-model")
    assert span.kind == SpanKind.CLIENT
    attributes = attrs(span)
    port = int(wire.url.rsplit(":", 1)[1])
    assert {k: v for k, v in attributes.items() if k != "gen_ai.response.time_to_first_chunk"} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "test-model",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stream": True,
        "server.address": "127.0.0.1",
        "server.port": port,
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.model": "test-model",
        "gen_ai.response.finish_reasons": ("stop",),
        # _wire.USAGE: 120 prompt tokens of which 20 cached, 30 completion tokens
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 20,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }
    assert (
        0
        < attributes["gen_ai.response.time_to_first_chunk"]
        <= ((span.end_time or 0) - (span.start_time or 0)) / 1e9
    )
    assert span.status.status_code == StatusCode.UNSET


async def test_model_calls_record_the_client_metrics(wire: WireServer, otel: Recorded) -> None:
    wire.queue(chat_text_reply("Hello"))
    await generate(openai(wire), "", [], HI)
    port = int(wire.url.rsplit(":", 1)[1])
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "test-model",
        "server.address": "127.0.0.1",
        "server.port": port,
    }
    points = otel.points("gen_ai.client.token.usage")
    tokens = {p.attributes["gen_ai.token.type"]: p for p in points}
    assert tokens["input"].sum == 120 and tokens["output"].sum == 30
    assert dict(tokens["input"].attributes) == {**common, "gen_ai.token.type": "input"}
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes) == common and duration.count == 1
    (first,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert first.count == 1 and 0 < first.sum <= duration.sum


async def test_a_failed_call_has_the_status_code_as_error_type(
    wire: WireServer, otel: Recorded
) -> None:
    wire.queue(Reply(status=429, body={"error": {"message": "slow down", "type": "rate_limit"}}))
    provider = OpenAIChat(
        model="test-model", api_key="sk-test", base_url=wire.url + "/v1", max_retries=0
    )
    wire.closers.append(provider.aclose)
    with pytest.raises(APIStatusError):
        await generate(provider, "", [], HI)
    span = otel.span("chat test-model")
    assert attrs(span)["error.type"] == "429"
    assert span.status.status_code == StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "429"


async def test_a_model_in_the_process_is_an_internal_span(otel: Recorded) -> None:
    await generate(ScriptedChatProvider([["Hello"]]), "", [], HI)
    span = otel.span("chat scripted-model")
    assert span.kind == SpanKind.INTERNAL
    assert attrs(span)["gen_ai.provider.name"] == "scripted"


@pytest.mark.parametrize(
    ("name", "host", "expected"),
    [
        ("openai", None, "openai"),
        ("openai-responses", None, "openai"),
        ("anthropic", None, "anthropic"),
        ("kimi", None, "moonshot_ai"),
        ("gemini", "generativelanguage.googleapis.com", "gcp.gemini"),
        ("gemini", "us-central1-aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("gemini", "127.0.0.1", "gcp.gen_ai"),
        ("my-proxy", None, "my-proxy"),
    ],
)
def test_provider_names_are_the_conventions_well_known_values(
    name: str, host: str | None, expected: str
) -> None:
    assert _model.provider_name(name, host) == expected


async def test_nothing_is_recorded_while_telemetry_is_off(wire: WireServer) -> None:
    # No SDK in this process and nothing configured: the hook hands out its quiet call.
    assert _model.model_call(openai(wire), "", [], HI) is _model.model_call(None, "", [], HI)


async def test_reasoning_tokens_are_recorded_when_the_provider_counts_them(
    wire: WireServer, otel: Recorded
) -> None:
    # Chat Completions' usage object: completion_tokens_details.reasoning_tokens
    # (https://platform.openai.com/docs/api-reference/chat/object).
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 50,
        "total_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": 42},
    }
    events = [
        chat_chunk({"role": "assistant", "content": "Done."}),
        chat_chunk({}, finish_reason="stop"),
        chat_chunk(None, usage=usage),
        DONE,
    ]
    wire.queue(Reply(events=events))
    result = await generate(openai(wire), "", [], HI)
    assert result.usage is not None and result.usage.output_reasoning == 42
    attributes = otel.attributes("chat test-model")
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 42
    assert attributes["gen_ai.usage.output_tokens"] == 50


def test_gemini_and_responses_report_their_reasoning_tokens() -> None:
    from google.genai import types as genai
    from openai.types.responses import ResponseUsage

    from kosong.chat_provider import _gemini_answer as gemini
    from kosong.chat_provider import _openai_responses as responses

    gemini_usage = gemini._usage(
        genai.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=5, thoughts_token_count=7
        )
    )
    assert (gemini_usage.output, gemini_usage.output_reasoning) == (12, 7)
    openai_usage = responses._usage(
        ResponseUsage.model_validate(
            {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 30,
                "output_tokens_details": {"reasoning_tokens": 20},
                "total_tokens": 40,
            }
        )
    )
    assert openai_usage is not None
    assert (openai_usage.output, openai_usage.output_reasoning) == (30, 20)
