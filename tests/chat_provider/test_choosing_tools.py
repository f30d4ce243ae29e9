"""Choosing tools: `AllowedTools` (a subset, the tool list unchanged), `parallel_tool_calls`,
and Kimi's forced choice by model, on each provider's wire."""

from __future__ import annotations

from typing import Any

import pytest
from _bodies import check_anthropic_body, check_chat_body, check_gemini_body, check_responses_body
from _cases import TOOLS, user
from _wire import WireServer, chat_text_reply
from fixtures import anthropic as anthropic_fx
from fixtures import gemini as gemini_fx
from fixtures import openai_chat as chat_fx
from fixtures import openai_responses as responses_fx

from kosong import agent_loop
from kosong.chat_provider import AllowedTools
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.tooling.simple import SimpleToolset


def test_allowed_tools_needs_names_and_a_known_mode() -> None:
    assert AllowedTools(["add"]).names == ("add",)
    assert AllowedTools("add").names == ("add",)  # one name, not its letters
    with pytest.raises(ValueError, match="one tool name or more"):
        AllowedTools([])
    with pytest.raises(ValueError, match="one tool name or more"):
        AllowedTools(["add", ""])
    with pytest.raises(ValueError, match="tool_choice must be one of auto, none, required"):
        OpenAIChat(model="m", api_key="k").with_tool_choice("")
    with pytest.raises(ValueError, match='"auto" or "required"'):
        AllowedTools(["add"], mode="any")  # pyright: ignore[reportArgumentType]


def test_openai_chat_sends_allowed_tools_and_keeps_every_tool() -> None:
    provider = OpenAIChat(model="gpt-5.5", api_key="k").with_tool_choice(
        AllowedTools(["add"], mode="required")
    )
    body = provider.with_parallel_tool_calls(False).request_body("", TOOLS, user())
    assert body["tool_choice"] == chat_fx.ALLOWED
    assert body["parallel_tool_calls"] is False
    assert [t["function"]["name"] for t in body["tools"]] == ["screenshot", "add"]
    check_chat_body(body)
    no_tools = provider.with_tool_choice(None).with_parallel_tool_calls(False)
    assert "parallel_tool_calls" not in no_tools.request_body("", [], user())  # tools only


def test_openai_responses_sends_allowed_tools_and_parallel_tool_calls() -> None:
    provider = OpenAIResponses(model="gpt-5.5", api_key="k").with_tool_choice(AllowedTools(["add"]))
    body = provider.with_parallel_tool_calls(True).request_body("", TOOLS, user())
    assert body["tool_choice"] == responses_fx.ALLOWED
    assert body["parallel_tool_calls"] is True
    assert len(body["tools"]) == 2
    check_responses_body(body)


def test_gemini_sends_allowed_function_names_and_refuses_to_forbid_parallel_calls() -> None:
    gemini = Gemini(api_key="k")
    body = gemini.with_tool_choice(AllowedTools(["add"])).request_body("", TOOLS, user())
    assert body["toolConfig"] == gemini_fx.ALLOWED_AUTO
    assert len(body["tools"][0]["functionDeclarations"]) == 2
    check_gemini_body(body)
    required = gemini.with_tool_choice(AllowedTools(["add"], mode="required"))
    config = required.request_body("", TOOLS, user())["toolConfig"]["functionCallingConfig"]
    assert config == {"mode": "ANY", "allowedFunctionNames": ["add"]}
    with pytest.raises(ValueError, match="no switch for parallel function calls"):
        gemini.with_parallel_tool_calls(False)
    assert gemini.with_parallel_tool_calls(True).request_body("", TOOLS, user()) == (
        gemini.request_body("", TOOLS, user())
    )


def test_anthropic_gets_the_documented_equivalent_and_disable_parallel_tool_use() -> None:
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    body = claude.with_parallel_tool_calls(False).request_body("", TOOLS, user())
    assert body["tool_choice"] == anthropic_fx.ONE_CALL_AT_A_TIME
    check_anthropic_body({**body, "stream": True})
    subset = claude.with_tool_choice(AllowedTools(["add"], mode="required"))
    body = subset.with_parallel_tool_calls(False).request_body("", TOOLS, user())
    assert [t["name"] for t in body["tools"]] == ["add"]  # no allowed subset: only these
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    check_anthropic_body({**body, "stream": True})
    with pytest.raises(ValueError, match="forces a tool call"):
        claude.with_thinking("high").with_tool_choice(AllowedTools(["add"], mode="required"))
    claude.with_thinking("high").with_tool_choice(AllowedTools(["add"]))  # auto: allowed


def test_kimi_sends_only_the_allowed_tools_and_parallel_tool_calls() -> None:
    kimi = Kimi(api_key="k").with_tool_choice(AllowedTools(["add"]))
    body = kimi.with_parallel_tool_calls(False).request_body("", TOOLS, user())
    assert [t["function"]["name"] for t in body["tools"]] == ["add"]
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("auto", False)
    check_chat_body(body)


@pytest.mark.parametrize(
    ("model", "allowed"),
    [
        ("moonshot-v1-8k", True),  # does not think
        ("kimi-k2.6", False),  # thinks unless told not to
        ("kimi-k3", False),  # always thinks
        ("kimi-k2-thinking-turbo", False),
    ],
)
def test_kimi_forced_choice_follows_each_models_thinking(model: str, allowed: bool) -> None:
    kimi = Kimi(api_key="k", model=model)
    if allowed:
        kimi.with_tool_choice("required")
    else:
        with pytest.raises(ValueError, match="forces a tool call"):
            kimi.with_tool_choice("required")


def test_kimi_refuses_thinking_off_on_a_model_that_always_thinks() -> None:
    with pytest.raises(ValueError, match="always thinks"):
        Kimi(api_key="k", model="kimi-k3").with_thinking("off")
    Kimi(api_key="k", model="kimi-k2.6").with_thinking("off").with_tool_choice("add")


async def test_agent_loop_sends_parallel_tool_calls_with_every_step(wire: WireServer) -> None:
    from kosong.tooling import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    provider = OpenAIChat(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(chat_text_reply("3"))
    result = await agent_loop(provider, "", SimpleToolset([add]), user(), parallel_tool_calls=False)
    body: Any = wire.requests[-1].body
    assert (result.answer, body["parallel_tool_calls"]) == ("3", False)
    check_chat_body(body)
