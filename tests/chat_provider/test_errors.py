"""Every HTTP provider, over real HTTP, fails the same way: typed errors, retries, request ids."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from _wire import (
    SDK_SUBCLASSES_AIOHTTP,
    Reply,
    WireServer,
    anthropic_reply,
    chat_text_reply,
    gemini_reply,
    responses_reply,
)

from kosong import generate
from kosong.chat_provider import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProvider,
    RetryableChatProvider,
)
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.message import Message

pytestmark = SDK_SUBCLASSES_AIOHTTP


@dataclass
class Case:
    name: str
    make: Callable[..., Any]
    text: Callable[[list[str]], Reply]
    request_id_header: str
    error_body: dict[str, Any]


OPENAI_ERROR = {"error": {"message": "boom", "type": "server_error"}}
ANTHROPIC_ERROR = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
GEMINI_ERROR = {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}
"""Each API's documented error body (the fixtures' pages)."""

Timeout = float | None
Key = str | Callable[[], str] | None


def _chat(url: str, retries: int, timeout: Timeout = None, key: Key = "k") -> OpenAIChat:
    return OpenAIChat(
        model="m", api_key=key, base_url=url + "/v1", max_retries=retries, timeout=timeout
    )


def _kimi(url: str, retries: int, timeout: Timeout = None, key: Key = "k") -> Kimi:
    return Kimi(api_key=key, base_url=url + "/v1", max_retries=retries, timeout=timeout)


def _responses(url: str, retries: int, timeout: Timeout = None, key: Key = "k") -> OpenAIResponses:
    return OpenAIResponses(
        model="m", api_key=key, base_url=url + "/v1", max_retries=retries, timeout=timeout
    )


def _anthropic(url: str, retries: int, timeout: Timeout = None, key: Key = "k") -> Anthropic:
    return Anthropic(model="m", api_key=key, base_url=url, max_retries=retries, timeout=timeout)


def _gemini(url: str, retries: int, timeout: Timeout = None, key: Key = "k") -> Gemini:
    # The SDK backs off exponentially from 1 s; a short first delay keeps the test fast.
    retry = {"attempts": retries + 1, "initial_delay": 0.01, "jitter": 0.0}
    return Gemini(
        model="m", api_key=key, base_url=url, timeout=timeout, http_options={"retry_options": retry}
    )


def _chat_text(pieces: list[str]) -> Reply:
    return chat_text_reply(*pieces)


def _responses_text(pieces: list[str]) -> Reply:
    return responses_reply([{"type": "message", "pieces": pieces}] if pieces else [])


def _anthropic_text(pieces: list[str]) -> Reply:
    return anthropic_reply([{"type": "text", "pieces": pieces}] if pieces else [])


def _gemini_text(pieces: list[str]) -> Reply:
    return gemini_reply(*[[{"text": p}] for p in pieces])


CASES = [
    Case("openai-chat", _chat, _chat_text, "x-request-id", OPENAI_ERROR),
    Case("kimi", _kimi, _chat_text, "x-request-id", OPENAI_ERROR),
    Case("openai-responses", _responses, _responses_text, "x-request-id", OPENAI_ERROR),
    Case("anthropic", _anthropic, _anthropic_text, "request-id", ANTHROPIC_ERROR),
    Case("gemini", _gemini, _gemini_text, "x-request-id", GEMINI_ERROR),
]
IDS = [c.name for c in CASES]
USER = [Message(role="user", content="hi")]


def make(case: Case, wire: WireServer, retries: int = 2) -> ChatProvider:
    provider = case.make(wire.url, retries, None)
    wire.closers.append(provider.aclose)
    return provider


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_429_with_retry_after_is_retried(case: Case, wire: WireServer) -> None:
    wire.queue(
        Reply(status=429, headers={"Retry-After": "0.01"}, body=case.error_body),
        case.text(["fine"]),
    )
    result = await generate(make(case, wire), "", [], USER)
    assert result.message.extract_text() == "fine"
    assert len(wire.requests) == 2


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_500_is_a_status_error_with_the_request_id(case: Case, wire: WireServer) -> None:
    wire.queue(Reply(status=500, headers={case.request_id_header: "req_9"}, body=case.error_body))
    with pytest.raises(APIStatusError) as caught:
        await generate(make(case, wire, retries=0), "", [], USER)
    assert (caught.value.status_code, caught.value.request_id) == (500, "req_9")


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_connection_dropped_mid_stream_is_a_connection_error(
    case: Case, wire: WireServer
) -> None:
    reply = case.text(["one ", "two ", "three"])
    reply.drop_after = 3
    wire.queue(reply)
    with pytest.raises(APIConnectionError):
        await generate(make(case, wire), "", [], USER)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_an_empty_answer_is_an_empty_response_error(case: Case, wire: WireServer) -> None:
    wire.queue(case.text([]))
    with pytest.raises(APIEmptyResponseError):
        await generate(make(case, wire), "", [], USER)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_refused_connection_is_a_connection_error(case: Case, wire: WireServer) -> None:
    provider = case.make("http://127.0.0.1:9", 0, None)  # nothing listens on the discard port
    wire.closers.append(provider.aclose)
    with pytest.raises(APIConnectionError):
        await generate(provider, "", [], USER)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_server_that_stops_answering_is_a_timeout(case: Case, wire: WireServer) -> None:
    release = asyncio.Event()
    reply = case.text(["never sent"])
    reply.hold = {0: release}  # headers go out, then nothing
    wire.queue(reply)
    provider = case.make(wire.url, 0, 0.3)
    wire.closers.append(provider.aclose)
    try:
        with pytest.raises(APITimeoutError):
            await generate(provider, "", [], USER)
    finally:
        release.set()


# --- errors a user can act on -------------------------------------------------------------

PATHS = {
    "openai-chat": "/v1/chat/completions",
    "kimi": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/m:streamGenerateContent?alt=sse",
}
PROVIDER_NAMES = {
    "openai-chat": "openai",
    "kimi": "kimi",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_plain_text_404_names_the_provider_model_and_url(
    case: Case, wire: WireServer
) -> None:
    wire.queue(Reply(status=404, text="404 page not found\nsee the docs"))
    provider = make(case, wire, retries=0)
    with pytest.raises(APIStatusError) as caught:
        await generate(provider, "", [], USER)
    error = caught.value
    url = wire.url + PATHS[case.name]
    assert (error.provider, error.model, error.url) == (
        PROVIDER_NAMES[case.name],
        provider.model_name,
        url,
    )
    assert error.message == "404 page not found"
    assert str(error) == (
        f"HTTP 404: 404 page not found [{PROVIDER_NAMES[case.name]}, model "
        f"{provider.model_name}, {url}]"
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_an_html_error_page_is_summarised_not_printed(case: Case, wire: WireServer) -> None:
    page = (
        "<!DOCTYPE html><html><head><style>body{color:red}</style>"
        "<title>502 Bad Gateway</title></head><body>" + "<p>x</p>" * 5000 + "</body></html>"
    )
    wire.queue(Reply(status=502, text=page, content_type="text/html"))
    with pytest.raises(APIStatusError) as caught:
        await generate(make(case, wire, retries=0), "", [], USER)
    assert caught.value.message == "502 Bad Gateway"
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_json_error_gives_its_message(case: Case, wire: WireServer) -> None:
    wire.queue(Reply(status=400, body=case.error_body))
    with pytest.raises(APIStatusError) as caught:
        await generate(make(case, wire, retries=0), "", [], USER)
    assert caught.value.message in ("server_error: boom", "api_error: boom", "INTERNAL: boom")


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_long_error_message_is_cut_to_300_characters(case: Case, wire: WireServer) -> None:
    body = json.loads(json.dumps(case.error_body).replace("boom", "boom " * 400))
    wire.queue(Reply(status=400, body=body))
    with pytest.raises(APIStatusError) as caught:
        await generate(make(case, wire, retries=0), "", [], USER)
    assert len(caught.value.message) == 300
    assert caught.value.message.endswith("…") and "boom boom" in caught.value.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_closed_port_names_the_url(case: Case, wire: WireServer) -> None:
    provider = case.make("http://127.0.0.1:9", 0, None)
    wire.closers.append(provider.aclose)
    with pytest.raises(APIConnectionError) as caught:
        await generate(provider, "", [], USER)
    assert caught.value.url is not None and caught.value.url.startswith("http://127.0.0.1:9/")
    # httpx2's ConnectError, or aiohttp's ClientConnectorError (google-genai's transport)
    assert re.search(r"connection failed: \w*Connect\w*Error", str(caught.value))
    assert caught.value.url in str(caught.value)


async def test_the_providers_trace_id_is_captured_on_results_and_errors(wire: WireServer) -> None:
    from _wire import chat_text_reply

    wire.queue(
        chat_text_reply("hi", headers={"x-trace-id": "trace-ok", "x-request-id": "req-ok"}),
        Reply(status=500, headers={"x-trace-id": "trace-500"}, body=OPENAI_ERROR),
    )
    provider = make(CASES[1], wire, retries=0)
    seen: list[str | None] = []
    result = await generate(provider, "", [], USER, on_provider_trace_id=seen.append)
    with pytest.warns(DeprecationWarning, match="provider_trace_id"):
        assert (result.provider_trace_id, result.trace_id, result.request_id) == (
            "trace-ok",
            "trace-ok",
            "req-ok",
        )
    assert seen == ["trace-ok"]
    with pytest.raises(APIStatusError) as caught:
        await generate(provider, "", [], USER)
    with pytest.warns(DeprecationWarning, match="provider_trace_id"):
        assert (caught.value.provider_trace_id, caught.value.trace_id) == ("trace-500", "trace-500")
    assert "trace id trace-500" in str(caught.value)


async def test_on_trace_id_is_the_older_name_of_on_provider_trace_id(wire: WireServer) -> None:
    from _wire import chat_text_reply

    wire.queue(chat_text_reply("hi", headers={"x-trace-id": "t-1"}))
    seen: list[str | None] = []
    with pytest.warns(DeprecationWarning, match="provider_trace_id"):
        await generate(make(CASES[1], wire), "", [], USER, on_trace_id=seen.append)
    assert seen == ["t-1"]
    with (
        pytest.raises(TypeError, match="not both"),
        pytest.warns(DeprecationWarning, match="provider_trace_id"),
    ):
        await generate(
            make(CASES[1], wire), "", [], USER, on_trace_id=print, on_provider_trace_id=print
        )


ENV_KEYS = {
    "openai-chat": "OPENAI_API_KEY",
    "kimi": "KIMI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}


def sent_key(wire: WireServer) -> str | None:
    """The API key the last request carried, in whichever header its API reads."""
    headers = {k.lower(): v for k, v in wire.requests[-1].headers.items()}
    bearer = headers.get("authorization", "").removeprefix("Bearer ") or None
    return bearer or headers.get("x-api-key") or headers.get("x-goog-api-key")


@pytest.mark.parametrize("source", ["environment", "callable"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_after_a_401_the_provider_and_every_copy_send_the_rotated_key(
    case: Case, source: str, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's own client over real HTTP: a 401 for the old key, then a 200 for each copy.
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)  # Gemini's SDK would prefer it
    monkeypatch.setenv(ENV_KEYS[case.name], "k")
    vault = {"key": "k"}
    key = None if source == "environment" else (lambda: vault["key"])
    provider = case.make(wire.url, 0, None, key)
    wire.closers.append(provider.aclose)
    copies: list[Any] = [
        provider,
        provider.with_thinking("low"),
        provider.with_tool_choice("auto"),
        provider.with_parallel_tool_calls(True),
        provider.with_generation_kwargs(temperature=0.5),
        provider.with_output_schema(None),
        provider.with_native_tools([]),
    ]
    wire.queue(Reply(status=401, body=case.error_body))
    with pytest.raises(APIStatusError) as caught:
        await generate(copies[1], "", [], USER)
    assert sent_key(wire) == "k"
    assert all(isinstance(p, RetryableChatProvider) for p in copies)
    assert [p.on_retryable_error(caught.value) for p in copies] == [False] * 7  # the same key
    monkeypatch.setenv(ENV_KEYS[case.name], "rotated")
    vault["key"] = "rotated"
    assert [p.on_retryable_error(caught.value) for p in copies] == [True] * 7
    assert provider.on_retryable_error(APIConnectionError("x")) is False
    for copy in copies:
        wire.queue(case.text(["fine"]))
        result = await generate(copy, "", [], USER)
        assert result.message.extract_text() == "fine"
        assert sent_key(wire) == "rotated"
    assert len(wire.requests) == 1 + len(copies)
    assert provider.on_retryable_error(caught.value) is False  # the rotated key is in use


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_key_given_as_a_string_is_fixed(
    case: Case, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_KEYS[case.name], "from-the-environment")
    provider: Any = make(case, wire, retries=0)
    wire.queue(Reply(status=401, body=case.error_body), case.text(["fine"]))
    with pytest.raises(APIStatusError) as caught:
        await generate(provider, "", [], USER)
    assert provider.on_retryable_error(caught.value) is False  # nothing else to try
    assert (await generate(provider, "", [], USER)).message.extract_text() == "fine"
    assert sent_key(wire) == "k"
