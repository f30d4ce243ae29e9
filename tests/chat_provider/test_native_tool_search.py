"""`searchable` with a provider's own tool search: every tool deferred, the provider's search
tool beside them, the same tool list at every step; kosong's `search_tools` for the others."""

from __future__ import annotations

import json
from typing import Any

from _bodies import check_anthropic_body, check_chat_body, check_responses_body
from _wire import WireServer, anthropic_reply, chat_text_reply, responses_reply
from fixtures import anthropic as anthropic_fx
from fixtures import openai_responses as responses_fx

from kosong import step
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIResponses
from kosong.message import Message
from kosong.tooling import searchable, tool
from kosong.tooling.simple import SimpleToolset


def catalog() -> SimpleToolset:
    tools: list[Any] = []
    for name, what in [("get_weather", "the weather of a city"), ("send_mail", "send an e-mail"),
                       ("add", "add two numbers")]:  # fmt: skip

        @tool(name=name, description=f"Do it: {what}.")
        def run(x: str) -> str:
            return x

        tools.append(run)
    return SimpleToolset(tools)


HI = [Message(role="user", content="Mail the weather in Paris.")]


async def test_anthropic_gets_every_tool_deferred_and_its_search_tool_the_same_each_step(
    wire: WireServer,
) -> None:
    claude = Anthropic(
        model="claude-sonnet-4-6", api_key="k", base_url=wire.url, prompt_cache=False
    )
    wire.closers.append(claude.aclose)
    toolset = searchable(catalog(), always_visible=["add"])
    wire.queue(*(anthropic_reply([{"type": "text", "pieces": ["ok"]}]) for _ in range(2)))
    await step(claude, "", toolset, HI)
    await step(claude, "", toolset, HI)
    first, second = (r.body for r in wire.requests)
    assert json.dumps(first["tools"]) == json.dumps(second["tools"])  # byte for byte
    names = [(t["name"], t.get("defer_loading")) for t in first["tools"]]
    assert names == [
        ("get_weather", True),
        ("send_mail", True),
        ("add", None),
        ("tool_search_tool_bm25", None),
    ]
    assert first["tools"][-1] == anthropic_fx.TOOL_SEARCH
    check_anthropic_body(first)


async def test_responses_gets_every_function_deferred_and_tool_search(wire: WireServer) -> None:
    provider = OpenAIResponses(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(responses_reply([{"type": "message", "pieces": ["ok"]}]))
    await step(provider, "", searchable(catalog()), HI)
    body = wire.requests[-1].body
    assert [t.get("defer_loading") for t in body["tools"][:3]] == [True, True, True]
    assert body["tools"][3] == responses_fx.TOOL_SEARCH
    check_responses_body(body)


async def test_other_providers_get_kosongs_search_tools(wire: WireServer) -> None:
    kimi = Kimi(api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(kimi.aclose)
    wire.queue(chat_text_reply("ok"))
    await step(kimi, "", searchable(catalog()), HI)
    body = wire.requests[-1].body
    assert [t["function"]["name"] for t in body["tools"]] == ["search_tools"]
    check_chat_body(body)
    off = searchable(catalog(), native_search=False)
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k")
    assert [t["name"] for t in claude.request_body("", off.tools, HI)["tools"]] == ["search_tools"]
