"""`agent_loop(..., output_type=T)`: a final answer of a type, asked for in each provider's own
way (bodies validated by the SDKs' types), validated, asked again when it fails."""

from __future__ import annotations

import pytest
from _bodies import (
    check_anthropic_body,
    check_chat_body,
    check_gemini_body,
    check_responses_body,
)
from _wire import WireServer, chat_text_reply
from fixtures import openai_chat as chat_fx
from pydantic import BaseModel

from kosong import OutputRetriesExhausted, agent_loop
from kosong.chat_provider import OutputSchema
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message
from kosong.tooling.simple import SimpleToolset


class Weather(BaseModel):
    city: str
    celsius: float


OUTPUT = OutputSchema("Weather", Weather.model_json_schema())
HI = [Message(role="user", content="Weather in Paris?")]


async def test_openai_chat_asks_with_response_format_and_retries_a_bad_answer(
    wire: WireServer,
) -> None:
    provider = OpenAIChat(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(
        chat_text_reply('{"city": "Paris"}'), chat_text_reply('{"city": "Paris", "celsius": 21.5}')
    )
    result = await agent_loop(provider, "", SimpleToolset(), HI, output_type=Weather)
    assert result.output == Weather(city="Paris", celsius=21.5)
    first, second = (r.body for r in wire.requests)
    assert first["response_format"] == chat_fx.WEATHER_FORMAT
    check_chat_body(first)
    asked = second["messages"][-1]
    assert asked["role"] == "user" and "celsius: Field required" in asked["content"]


async def test_an_answer_that_never_validates_raises_with_everything_kept(wire: WireServer) -> None:
    provider = OpenAIChat(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(chat_text_reply("not json"), chat_text_reply("still not"))
    with pytest.raises(OutputRetriesExhausted, match="after 2 attempt") as raised:
        await agent_loop(provider, "", SimpleToolset(), HI, output_type=Weather)
    assert len(raised.value.steps) == 2 and len(raised.value.messages) == 3


def test_each_provider_asks_in_its_own_way() -> None:
    responses = OpenAIResponses(model="gpt-5.5", api_key="k").with_output_schema(OUTPUT)
    body = responses.request_body("", [], HI)
    assert body["text"] == {
        "format": {"type": "json_schema", **chat_fx.WEATHER_FORMAT["json_schema"]}
    }
    check_responses_body(body)
    kimi = Kimi(api_key="k").with_output_schema(OUTPUT).request_body("", [], HI)
    assert kimi["response_format"] == {"type": "json_object"}  # Moonshot's JSON Mode
    assert kimi["messages"][-1]["role"] == "system"
    assert '"celsius"' in kimi["messages"][-1]["content"]  # the guide: say the fields
    check_chat_body(kimi)
    with pytest.raises(ValueError, match="JSON object only"):
        Kimi(api_key="k").with_output_schema(OutputSchema("n", {"type": "array"}))
    gemini = Gemini(api_key="k").with_output_schema(OUTPUT).request_body("", [], HI)
    assert gemini["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": Weather.model_json_schema(),
    }
    check_gemini_body(gemini)


def test_anthropic_keeps_the_thinking_effort_beside_the_format_and_a_users_output_config() -> None:
    claude = Anthropic(model="claude-opus-4-7", api_key="k", prompt_cache=False).with_thinking(
        "high"
    )
    body = claude.with_output_schema(OUTPUT).request_body("", [], HI)
    schema = {**Weather.model_json_schema(), "additionalProperties": False}
    assert body["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": schema},
    }
    check_anthropic_body({**body, "stream": True})
    # A user's own output_config no longer replaces the effort kosong set (it merges).
    mine = claude.with_generation_kwargs(output_config={"effort": "low"}).request_body("", [], HI)
    assert mine["output_config"] == {"effort": "low"}
    other = claude.with_generation_kwargs(output_config={"task_budget": 1000})
    assert other.request_body("", [], HI)["output_config"] == {
        "effort": "high",
        "task_budget": 1000,
    }


def test_an_answer_format_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="give one of them"):
        OpenAIChat(model="m", api_key="k").with_generation_kwargs(
            response_format={"type": "json_object"}
        ).with_output_schema(OUTPUT)


async def test_a_provider_without_an_answer_format_gets_a_final_answer_tool() -> None:
    model = ScriptedChatProvider(
        [
            [call("final_answer", {"city": "Paris"})],
            [call("final_answer", {"city": "Paris", "celsius": 21.5})],
        ]
    )
    result = await agent_loop(model, "", SimpleToolset(), HI, output_type=Weather)
    assert result.output == Weather(city="Paris", celsius=21.5)
    assert "final_answer" in [t.name for t in model.requests[0].tools]
    failed = result.messages[1]
    assert failed.role == "tool" and "celsius" in failed.extract_text()


async def test_a_scalar_output_type_is_wrapped_in_value_for_the_tool() -> None:
    model = ScriptedChatProvider([[call("final_answer", {"value": [1, 2, 3]})]])
    result = await agent_loop(model, "", SimpleToolset(), HI, output_type=list[int])
    assert result.output == [1, 2, 3]
