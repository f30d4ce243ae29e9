"""What the published kosong's provider tests (kimi-cli packages/kosong 0.55) found different,
each checked here in kosong's own terms: errors a stream breaks with, per-call generation
overrides, thinking display and clamped efforts, trace ids on streams, a history written by
the published package."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest
from _bodies import check_anthropic_body, check_chat_body, check_responses_body
from _wire import WireServer, chat_text_reply
from fixtures import anthropic as anthropic_fx
from fixtures import moonshot
from openai.types.chat import ChatCompletion

from kosong import generate
from kosong.chat_provider import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
)
from kosong.chat_provider.anthropic import Anthropic, clamped_effort, thinking_spec
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.mock import MockChatProvider
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.dialects import check_tools, fix_schema
from kosong.message import Message, TextPart, ThinkPart

REQUEST = httpx2.Request("POST", "https://api.example.com/v1/chat/completions")


def chat_provider() -> OpenAIChat:
    return OpenAIChat(model="gpt-5.5", api_key="k", base_url="https://api.example.com/v1")


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Network connection lost.", APIConnectionError),
        ("Connection error.", APIConnectionError),
        ("disconnected from server", APIConnectionError),
        ("connection reset by peer", APIConnectionError),
        ("Request timed out.", APITimeoutError),
        ("connection timed out", APITimeoutError),
        ("Your session has been reset", ChatProviderError),
        ("Stream closed by server due to policy violation", ChatProviderError),
    ],
)
def test_a_bare_api_error_without_a_body_is_read_by_its_words(
    message: str, kind: type[ChatProviderError]
) -> None:
    error = chat_provider()._error(openai.APIError(message, REQUEST, body=None), "u")
    assert type(error) is kind
    assert message in str(error)


def test_an_api_error_with_a_body_is_never_read_as_a_lost_connection() -> None:
    body = {"error": {"message": "Connection limit exceeded", "type": "server_error"}}
    error = chat_provider()._error(
        openai.APIError("Connection limit exceeded", REQUEST, body=body), "u"
    )
    assert type(error) is ChatProviderError


async def test_a_stream_broken_by_a_bare_api_error_is_a_connection_error_retries_act_on() -> None:
    async def broken() -> Any:
        raise openai.APIError("Network connection lost.", REQUEST, body=None)
        yield  # an async generator

    from kosong.chat_provider._openai_common import ChatCompletionsStream

    provider = chat_provider()
    stream = ChatCompletionsStream(broken(), None, provider._convert)
    with pytest.raises(APIConnectionError, match="Network connection lost"):
        async for _ in stream:
            pass


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (httpx2.ReadTimeout("stream timed out after 600s"), APITimeoutError, "after 600s"),
        (httpx2.ConnectTimeout("connect timed out"), APITimeoutError, "connect timed out"),
        (httpx2.NetworkError("connection reset by peer"), APIConnectionError, "reset by peer"),
        (httpx2.RemoteProtocolError("peer closed"), APIConnectionError, "peer closed"),
        (httpx2.LocalProtocolError("bad header"), ChatProviderError, "bad header"),
    ],
)
def test_transport_errors_keep_the_transports_own_words(
    error: Exception, kind: type[ChatProviderError], words: str
) -> None:
    provider = Anthropic(model="claude-sonnet-4-6", api_key="k")
    converted = provider._error(error, "u")
    assert type(converted) is kind
    assert words in str(converted)


def test_a_raw_http_status_error_is_a_status_error() -> None:
    response = httpx2.Response(
        502, request=REQUEST, headers={"x-request-id": "req_1", "x-trace-id": "tr_1"}
    )
    raw = httpx2.HTTPStatusError("bad gateway", request=REQUEST, response=response)
    for provider in (chat_provider(), Anthropic(model="claude-sonnet-4-6", api_key="k")):
        error = provider._error(raw, "u")
        assert isinstance(error, APIStatusError)
        assert (error.status_code, error.request_id, error.trace_id) == (502, "req_1", "tr_1")


def test_an_anthropic_timeout_is_checked_before_its_connection_error() -> None:
    provider = Anthropic(model="claude-sonnet-4-6", api_key="k")
    timeout = provider._error(anthropic.APITimeoutError(request=REQUEST), "u")
    assert type(timeout) is APITimeoutError


async def test_an_empty_answer_and_a_thinking_only_answer_say_what_came() -> None:
    with pytest.raises(APIEmptyResponseError, match="returned an empty response"):
        await generate(MockChatProvider([]), "", [], [])
    with pytest.raises(APIEmptyResponseError, match="only thinking content"):
        await generate(MockChatProvider([ThinkPart(think="hmm")]), "", [], [])


# --- Kimi: generation kwargs -------------------------------------------------------------------


def kimi(wire: WireServer, **kwargs: Any) -> Kimi:
    provider = Kimi(api_key="sk-kimi", base_url=wire.url + "/v1", **kwargs)
    wire.closers.append(provider.aclose)
    return provider


async def test_kimi_leaves_a_token_limit_set_to_none_out_of_the_body(wire: WireServer) -> None:
    provider = kimi(wire).with_generation_kwargs(max_tokens=None)
    expected = {"base_url": wire.url + "/v1/", "max_completion_tokens": None}
    assert provider.model_parameters == expected
    wire.queue(chat_text_reply("ok"))
    await generate(provider, "", [], [Message(role="user", content="Hi")])
    body = wire.requests[-1].body
    assert "max_completion_tokens" not in body and "max_tokens" not in body
    assert body == moonshot.PLAIN | {"messages": [{"role": "user", "content": "Hi"}]}
    check_chat_body(body)


async def test_provider_generate_takes_generation_overrides_for_one_request(
    wire: WireServer,
) -> None:
    provider = kimi(wire).with_generation_kwargs(temperature=0.7, max_tokens=8000)
    wire.queue(chat_text_reply("ok"))
    stream = await provider.generate(
        "", [], [Message(role="user", content="Hi")], generation_overrides={"max_tokens": 1024}
    )
    async for _ in stream:
        pass
    body = wire.requests[-1].body
    assert (body["temperature"], body["max_completion_tokens"]) == (0.7, 1024)
    assert provider.model_parameters["max_completion_tokens"] == 8000  # the provider is unchanged
    check_chat_body(body)


async def test_generate_reads_no_base_url_before_sending() -> None:
    sent: list[dict[str, Any]] = []

    class Completions:
        class WithRawResponse:
            async def create(self, **body: Any) -> Any:
                sent.append(body)

                class Raw:
                    headers = {"x-trace-id": "tr-1"}

                    async def parse(self) -> Any:  # an async parse, as some clients have
                        return ChatCompletion.model_validate(moonshot.COMPLETION)

                return Raw()

        with_raw_response = WithRawResponse()

    class Client:  # no base_url
        chat = type("Chat", (), {"completions": Completions()})()

    provider = Kimi(api_key="k", stream=False)
    provider.client = Client()  # pyright: ignore[reportAttributeAccessIssue]
    stream = await provider.generate("", [], [Message(role="user", content="Hi")])
    assert stream.trace_id == "tr-1"  # pyright: ignore[reportAttributeAccessIssue]
    assert [p async for p in stream][1] == TextPart(text="Adding.")
    assert sent


async def test_a_stream_has_the_trace_id_alias(wire: WireServer) -> None:
    wire.queue(chat_text_reply("ok", headers={"x-trace-id": "tr-2"}))
    stream = await kimi(wire).generate("", [], [Message(role="user", content="Hi")])
    assert stream.trace_id == stream.provider_trace_id == "tr-2"  # pyright: ignore[reportAttributeAccessIssue]
    async for _ in stream:
        pass


# --- OpenAI Chat: reasoning in the history ----------------------------------------------------


def test_a_compatible_server_keeping_thinking_gets_an_effort_when_the_history_thinks() -> None:
    provider = OpenAIChat(model="kimi-k2.5", api_key="k", reasoning_key="reasoning_content")
    history = [
        Message(role="user", content="Hello"),
        Message(
            role="assistant", content=[ThinkPart(think="Let me think..."), TextPart(text="Hi!")]
        ),
        Message(role="user", content="How are you?"),
    ]
    body = provider.request_body("", [], history)
    # The API's default effort, so a server that validates reasoning takes the history.
    assert body["reasoning_effort"] == "medium"
    assert body["messages"][1]["reasoning_content"] == "Let me think..."
    check_chat_body(body)
    assert "reasoning_effort" not in provider.request_body("", [], history[:1])
    assert "reasoning_effort" not in OpenAIChat(model="m", api_key="k").request_body(
        "", [], history
    )
    chosen = provider.with_thinking("low").request_body("", [], history)
    assert chosen["reasoning_effort"] == "low"


# --- OpenAI Responses: a history the published package wrote -------------------------------


def test_a_responses_think_part_written_the_published_way_goes_back() -> None:
    # The published package kept the encrypted content alone (no item id) in `encrypted`.
    encrypted = "gAAAAABoRjC8" + "x" * 40
    history = [
        Message(role="user", content="2+2?"),
        Message(
            role="assistant",
            content=[ThinkPart(think="Adding.", encrypted=encrypted), TextPart(text="4")],
        ),
        Message(role="user", content="Thanks"),
    ]
    body = OpenAIResponses(model="gpt-5.5", api_key="k").request_body("", [], history)
    assert body["input"][1] == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Adding."}],
        "encrypted_content": encrypted,
    }
    # The SDK's type marks the item's id required; the published package sends none and the
    # API takes it: checked with the id the SDK asks for, everything else as sent.
    check_responses_body(
        {
            **body,
            "input": [body["input"][0], {**body["input"][1], "id": "rs_1"}, *body["input"][2:]],
        }
    )
    other = Message(
        role="assistant", content=[ThinkPart(think="x", encrypted="EqQBCgIY"), TextPart(text="4")]
    )
    assert OpenAIResponses(model="gpt-5.5", api_key="k").request_body("", [], [other])["input"] == [
        {"role": "assistant", "content": "4"}
    ]


# --- Anthropic: thinking ------------------------------------------------------------------------


def test_adaptive_thinking_asks_for_the_summarized_text() -> None:
    provider = Anthropic(model="claude-opus-4-7", api_key="k").with_thinking("high")
    body = provider.request_body("", [], [Message(role="user", content="Hi")])
    assert (
        body["thinking"] == anthropic_fx.ADAPTIVE == {"type": "adaptive", "display": "summarized"}
    )
    check_anthropic_body({**body, "stream": True})


@pytest.mark.parametrize(
    ("model", "effort", "reported"),
    [
        ("claude-opus-4-6", "xhigh", "high"),
        ("claude-opus-4-6", "max", "max"),
        ("claude-opus-4-7", "xhigh", "xhigh"),
        ("claude-sonnet-4-5", "max", "max"),  # a budget model: the budget follows the effort
    ],
)
def test_thinking_effort_reports_the_effort_sent(model: str, effort: Any, reported: str) -> None:
    assert Anthropic(model=model, api_key="k").with_thinking(effort).thinking_effort == reported


def test_dotted_and_later_claude_ids_think_adaptively() -> None:
    assert thinking_spec("claude-opus-4.7") == thinking_spec("claude-opus-4-7")
    for later in (
        "claude-opus-4-9",
        "claude-opus-4-10",
        "claude-haiku-5-0",
        "aws/claude-sonnet-5-1",
    ):
        assert thinking_spec(later).mode == "adaptive", later
    for older in ("claude-sonnet-4-5-20250929", "claude-3-5-sonnet", "claude-haiku-4-5"):
        assert thinking_spec(older).mode == "budget", older
    assert clamped_effort("claude-opus-4-9", "xhigh") == "high"
    assert clamped_effort("claude-sonnet-4-5", "max") == "high"


# --- Moonshot's schema fix ------------------------------------------------------------------


def test_the_moonshot_fix_adds_no_type_inside_a_condition() -> None:
    schema = {
        "type": "object",
        "properties": {"mode": {"enum": ["a", "b"]}, "size": {"type": "integer"}},
        "if": {"properties": {"mode": {"const": "a"}}},
        "then": {"required": ["size"]},
        "else": {"not": {"required": ["size"]}},
    }
    fixed = fix_schema(schema, "moonshot")
    assert fixed["properties"]["mode"]["type"] == "string"
    assert (fixed["if"], fixed["then"], fixed["else"]) == (
        schema["if"],
        schema["then"],
        schema["else"],
    )
    assert check_tools([{"name": "pick", "parameters": fixed}], ["moonshot"]).ok
