"""Per-tool provider options: merged into that provider's entry for the tool, validated by the
SDK's own types; a field kosong writes is refused when the tool is defined. A tool's output
schema goes where the API takes one (Responses' `output_schema`)."""

from __future__ import annotations

import pytest
from _bodies import check_anthropic_body, check_chat_body, check_gemini_body, check_responses_body
from _cases import user
from pydantic import ValidationError

from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.tooling import Tool, tool


@tool(
    provider_options={
        "anthropic": {
            "input_examples": [{"city": "Paris"}],
            "eager_input_streaming": True,
        },
        "openai-responses": {"defer_loading": True},
        "gemini": {"behavior": "NON_BLOCKING"},
    }
)
def weather(city: str) -> dict[str, float]:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"celsius": 21.5}


WEATHER = weather.base


def test_anthropic_entry_carries_its_options() -> None:
    body = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False).request_body(
        "", [WEATHER], user()
    )
    entry = body["tools"][0]
    assert (entry["input_examples"], entry["eager_input_streaming"]) == ([{"city": "Paris"}], True)
    check_anthropic_body({**body, "stream": True})


def test_responses_entry_carries_its_options_and_the_output_schema() -> None:
    body = OpenAIResponses(model="gpt-5.5", api_key="k").request_body("", [WEATHER], user())
    entry = body["tools"][0]
    assert entry["defer_loading"] is True
    assert entry["output_schema"] == WEATHER.output_schema  # what the text output holds
    check_responses_body(body)


def test_gemini_declaration_carries_its_options() -> None:
    body = Gemini(api_key="k").request_body("", [WEATHER], user())
    assert body["tools"][0]["functionDeclarations"][0]["behavior"] == "NON_BLOCKING"
    check_gemini_body(body)


def test_options_of_one_provider_never_reach_another() -> None:
    chat = OpenAIChat(model="gpt-5.5", api_key="k").request_body("", [WEATHER], user())
    assert set(chat["tools"][0]["function"]) == {"name", "description", "parameters"}
    check_chat_body(chat)
    kimi = Kimi(api_key="k").request_body("", [WEATHER], user())
    assert set(kimi["tools"][0]["function"]) == {"name", "description", "parameters"}


def test_a_field_kosong_writes_is_refused_when_the_tool_is_defined() -> None:
    with pytest.raises(
        ValidationError,
        match=r'provider_options\["anthropic"\] .* `input_schema` is the tool.s `parameters`',
    ):
        Tool(
            name="t",
            description="d",
            parameters={"type": "object"},
            provider_options={"anthropic": {"input_schema": {"type": "object"}}},
        )
    with pytest.raises(ValidationError, match="`strict` comes from `strict=True`"):
        Tool(
            name="t",
            description="d",
            parameters={"type": "object"},
            provider_options={"openai": {"strict": True}},
        )
    with pytest.raises(ValidationError, match=r'no provider kosong knows: "antropic"'):
        Tool(
            name="t",
            description="d",
            parameters={"type": "object"},
            provider_options={"antropic": {}},
        )
