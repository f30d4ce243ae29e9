"""The Gemini provider against a local server speaking the Gemini API's wire format: documented
stream chunks and whole responses replayed, thought signatures taken and sent back, parallel
calls run by `step`, errors from the API's error bodies. Request bodies are compared with the
fixtures in test_request_bodies.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _wire import SDK_SUBCLASSES_AIOHTTP, Reply, WireServer, gemini_reply, sse
from fixtures import gemini as gemini_fx

from kosong import generate, step, tool_result_to_message
from kosong.chat_provider import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    TokenUsage,
)
from kosong.chat_provider.gemini import DEFAULT_GEMINI_MODEL, Gemini, model_spec
from kosong.message import (
    AudioURLPart,
    ImageURLPart,
    Message,
    NativeToolPart,
    TextPart,
    ThinkPart,
    ToolCall,
    VideoURLPart,
)
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset

pytestmark = SDK_SUBCLASSES_AIOHTTP

USER = [Message(role="user", content="Add 1 and 2, and 3 and 4.")]


def gemini(wire: WireServer, **kwargs: Any) -> Gemini:
    kwargs.setdefault("http_options", {"retry_options": {"attempts": 1}})
    kwargs.setdefault("api_key", "gm-key")
    provider = Gemini(model=gemini_fx.MODEL, base_url=wire.url, **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def stream_reply(**reply: Any) -> Reply:
    return Reply(events=[sse(chunk) for chunk in gemini_fx.STREAM], **reply)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ADD = SimpleToolset([add]).tools


def packed(signature: str, part: str) -> str:
    return json.dumps({"thoughtSignature": signature, "part": part}, separators=(",", ":"))


async def test_gemini_streams_thoughts_text_and_parallel_calls(wire: WireServer) -> None:
    wire.queue(stream_reply())
    seen: list[ToolCall] = []
    result = await generate(gemini(wire), "", ADD, USER, on_tool_call=seen.append)
    assert result.message.content == [
        ThinkPart(think="Adding both.", encrypted=packed(gemini_fx.THOUGHT_SIGNATURE, "thought")),
        TextPart(text="Let me add."),
        ThinkPart(think="", encrypted=packed(gemini_fx.TEXT_SIGNATURE, "text")),
    ]
    assert result.message.tool_calls == [
        ToolCall(
            id="fc_1",
            function=ToolCall.FunctionBody(name="add", arguments='{"a": 1, "b": 2}'),
            extras={"thought_signature_b64": gemini_fx.CALL_SIGNATURE},
        ),
        ToolCall(
            id="fc_2", function=ToolCall.FunctionBody(name="add", arguments='{"a": 3, "b": 4}')
        ),
    ]
    assert [c.id for c in seen] == ["fc_1", "fc_2"]  # each as it completed
    assert result.usage == TokenUsage(
        input_other=20, output=42, input_cache_read=100, output_reasoning=12
    )
    assert (result.id, result.finish_reason) == ("resp-stream-1", "STOP")


async def test_gemini_thought_signatures_go_back_on_the_parts_they_came_on(
    wire: WireServer,
) -> None:
    provider = gemini(wire).with_thinking("medium")
    toolset = SimpleToolset([add])
    wire.queue(stream_reply(), gemini_reply([{"text": "3 and 7."}]))
    first = await step(provider, "", toolset, USER)
    results = await first.tool_results()
    assert [r.return_value.output for r in results] == ["3", "7"]
    history = [*USER, first.message, *(tool_result_to_message(r) for r in results)]
    final = await step(provider, "", toolset, history)
    assert final.message.extract_text() == "3 and 7."
    contents = wire.requests[-1].body["contents"]
    assert contents[1:] == [gemini_fx.STREAM_SENT_BACK, gemini_fx.RESULTS_SENT_BACK]


async def test_gemini_tool_calls_dump_as_the_published_package_keeps_them(
    wire: WireServer,
) -> None:
    wire.queue(stream_reply())
    result = await generate(gemini(wire), "", ADD, USER)
    dumped = result.message.model_dump()
    restored = Message.model_validate(dumped)
    assert dumped["tool_calls"][0]["extras"] == {"thought_signature_b64": gemini_fx.CALL_SIGNATURE}
    body = gemini(wire).request_body("", ADD, [*USER, restored])
    assert body["contents"][1] == gemini_fx.STREAM_SENT_BACK


async def test_gemini_without_streaming_keeps_the_signatures(wire: WireServer) -> None:
    wire.queue(Reply(body=gemini_fx.RESPONSE))
    result = await generate(gemini(wire, stream=False), "", ADD, USER)
    assert result.message.content[0] == ThinkPart(
        think="A sum.", encrypted=packed(gemini_fx.THOUGHT_SIGNATURE, "thought")
    )
    assert [c.extras for c in result.message.tool_calls or []] == [
        {"thought_signature_b64": gemini_fx.CALL_SIGNATURE},
        None,
    ]


async def test_gemini_a_signature_on_an_empty_text_part_goes_back_on_one(wire: WireServer) -> None:
    wire.queue(gemini_reply([{"text": "Done."}], [{"text": "", "thoughtSignature": "c2ln"}]))
    result = await generate(gemini(wire), "", [], USER)
    body = gemini(wire).request_body("", [], [*USER, result.message])
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"text": "Done."}, {"text": "", "thoughtSignature": "c2ln"}],
    }


async def test_gemini_names_calls_that_come_without_an_id(wire: WireServer) -> None:
    wire.queue(gemini_reply([{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}]))
    result = await generate(gemini(wire), "", ADD, USER)
    (call,) = result.message.tool_calls or []
    assert call.id.startswith("call_") and call.function.name == "add"


def test_gemini_user_media_go_inline_or_by_uri() -> None:
    provider = Gemini(api_key="k")
    png = "data:image/png;base64,iVBORw0KGgo="
    message = Message(
        role="user",
        content=[
            ImageURLPart(image_url=ImageURLPart.ImageURL(url=png)),
            AudioURLPart(audio_url=AudioURLPart.AudioURL(url="https://example.com/a.mp3")),
            VideoURLPart(video_url=VideoURLPart.VideoURL(url="https://example.com/clip")),
        ],
    )
    body = provider.request_body("", [], [message])
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"fileData": {"mimeType": "audio/mpeg", "fileUri": "https://example.com/a.mp3"}},
        {"fileData": {"fileUri": "https://example.com/clip"}},
    ]


def test_gemini_a_tool_result_audio_clip_is_a_placeholder_never_its_data() -> None:
    provider = Gemini(api_key="k")
    clip = "data:audio/wav;base64," + "A" * 4000
    history = [
        *USER,
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", function=ToolCall.FunctionBody(name="add"))],
        ),
        Message(
            role="tool",
            tool_call_id="c1",
            content=[
                TextPart(text="Recorded."),
                AudioURLPart(audio_url=AudioURLPart.AudioURL(url=clip)),
            ],
        ),
    ]
    body = provider.request_body("", [], history)
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response == {
        "id": "c1",
        "name": "add",
        "response": {"output": "Recorded.\n[audio: audio/wav, 2.9 KB, not shown]"},
    }


async def test_gemini_a_blocked_prompt_is_an_empty_response(wire: WireServer) -> None:
    wire.queue(Reply(events=[sse(gemini_fx.BLOCKED)]))
    with pytest.raises(APIEmptyResponseError):
        await generate(gemini(wire), "", [], USER)


async def test_gemini_an_error_event_in_the_stream_is_a_status_error(wire: WireServer) -> None:
    error = gemini_fx.error(500, "INTERNAL", "An internal error has occurred.")
    wire.queue(Reply(events=[sse(c) for c in gemini_fx.STREAM[:2]] + [sse(error)]))
    with pytest.raises(APIStatusError) as caught:
        await generate(gemini(wire), "", [], USER)
    assert caught.value.status_code == 500
    assert caught.value.message == "INTERNAL: An internal error has occurred."


async def test_gemini_a_rate_limit_is_retried(wire: WireServer) -> None:
    exhausted = gemini_fx.error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted.")
    wire.queue(Reply(status=429, body=exhausted), gemini_reply([{"text": "fine"}]))
    retries = {"retry_options": {"attempts": 2, "initial_delay": 0.01, "jitter": 0.0}}
    result = await generate(gemini(wire, http_options=retries), "", [], USER)
    assert result.message.extract_text() == "fine"
    assert len(wire.requests) == 2


async def test_gemini_a_server_that_stops_answering_is_a_timeout(wire: WireServer) -> None:
    release = asyncio.Event()
    reply = gemini_reply([{"text": "never sent"}])
    reply.hold = {0: release}
    wire.queue(reply)
    try:
        with pytest.raises(APITimeoutError) as caught:
            await generate(gemini(wire, timeout=0.3), "", [], USER)
        assert caught.value.url is not None and caught.value.url.startswith(wire.url)
    finally:
        release.set()


async def test_gemini_a_rejected_key_is_read_again_from_the_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "gm-key")
    provider = gemini(wire, api_key=None)  # read from the environment before each request
    wire.queue(Reply(status=400, body=gemini_fx.API_KEY_INVALID), gemini_reply([{"text": "ok"}]))
    with pytest.raises(APIStatusError) as caught:
        await generate(provider, "", [], USER)
    assert caught.value.message == (
        "INVALID_ARGUMENT: API key not valid. Please pass a valid API key."
    )
    assert provider.on_retryable_error(caught.value) is False  # the same key
    monkeypatch.setenv("GEMINI_API_KEY", "rotated")
    assert provider.on_retryable_error(caught.value) is True
    assert provider.on_retryable_error(APIConnectionError("x")) is False
    await generate(provider, "", [], USER)
    assert wire.requests[-1].headers.get("x-goog-api-key") == "rotated"


def test_gemini_reads_its_key_and_model_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GEMINI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        Gemini()
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini")
    assert Gemini().model_name == DEFAULT_GEMINI_MODEL
    monkeypatch.setenv("GEMINI_MODEL", "gemini-3.5-flash")
    assert Gemini().model_name == "gemini-3.5-flash"


@pytest.mark.parametrize(
    ("model", "levels"),
    [
        ("models/gemini-3.8-flash", ("LOW", "MEDIUM", "HIGH")),
        ("gemini-3.5-flash-lite", ("MINIMAL", "LOW", "MEDIUM", "HIGH")),
        ("gemini-3-pro-preview", ("LOW", "HIGH")),
        ("gemini-2.5-pro", ()),
        ("gemini-9-ultra", ("LOW", "MEDIUM", "HIGH")),
    ],
)
def test_gemini_model_families_are_found_by_prefix(model: str, levels: tuple[str, ...]) -> None:
    assert model_spec(model).levels == levels


async def test_gemini_a_history_part_the_api_cannot_take_is_refused_before_sending(
    wire: WireServer,
) -> None:
    # The contents sent are the ones the SDK's types check: a part Gemini has no field for
    # (a built-in tool's part edited by hand) is a ValueError naming where, and no request.
    odd = NativeToolPart(provider="gemini", data={"executableCod": {"code": "1"}})
    history = [*USER, Message(role="assistant", content=[odd]), *USER]
    with pytest.raises(ValueError, match=r"contents\.1\.parts\.0\.executableCod"):
        await generate(gemini(wire), "", [], history)
    assert wire.requests == []
