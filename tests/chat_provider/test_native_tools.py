"""Native (provider-run) tools on each provider's wire: declared provider-neutrally, sent in
each API's form (bodies validated by the SDKs' types, fixtures from the reference pages),
refused before sending where an API has no such tool; their blocks in answers stream as
`NativeToolPart`s, never reach the toolset, and go back verbatim on the next turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _bodies import (
    check_anthropic_beta_body,
    check_chat_body,
    check_gemini_body,
    check_responses_body,
)
from _cases import ADD_TOOL, user
from _wire import (
    SDK_SUBCLASSES_AIOHTTP,
    Reply,
    WireServer,
    anthropic_event,
    chat_text_reply,
    gemini_chunk,
    sse,
)
from fixtures import native as fx

from kosong import agent_loop, generate, step
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.native import (
    CodeExecution,
    FileSearch,
    MCPConnector,
    NativeTool,
    UrlContext,
    WebFetch,
    WebSearch,
)
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.message import Message, NativeToolPart, TextPart
from kosong.tooling.simple import SimpleToolset

pytestmark = SDK_SUBCLASSES_AIOHTTP

DOCS = MCPConnector(
    url="https://mcp.example.com/mcp",
    name="docs",
    authorization="tok-123",
    allowed_tools=["search_docs"],
)


# --- requests --------------------------------------------------------------------------------


def test_anthropic_sends_its_server_tools_and_the_mcp_connector() -> None:
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    tools = [
        WebSearch(max_uses=3, allowed_domains=["en.wikipedia.org"]),
        WebFetch(max_uses=2),
        CodeExecution(),
        DOCS,
    ]
    body = claude.with_native_tools(tools).request_body("", [], user())
    assert body["tools"] == fx.ANTHROPIC_TOOLS
    assert body["mcp_servers"] == fx.ANTHROPIC_MCP_SERVERS
    check_anthropic_beta_body({**body, "stream": True})


async def test_anthropic_asks_for_the_mcp_connector_beta(wire: WireServer) -> None:
    from _wire import anthropic_reply

    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", base_url=wire.url)
    wire.closers.append(claude.aclose)
    wire.queue(anthropic_reply([{"type": "text", "pieces": ["ok"]}]))
    await generate(claude, "", [], user(), native_tools=[DOCS])
    assert wire.requests[-1].headers["anthropic-beta"] == "mcp-client-2025-11-20"


def test_responses_sends_its_hosted_tools() -> None:
    tools = [
        WebSearch(allowed_domains=["openai.com"]),
        CodeExecution(),
        FileSearch(store_ids=["vs_1234567890"], max_results=5),
        MCPConnector(
            url="https://mcp.example.com/mcp",
            name="docs",
            headers={"X-Team": "kosong"},
            authorization="tok-123",
            allowed_tools=["search_docs"],
        ),
    ]
    provider = OpenAIResponses(model="gpt-5.5", api_key="k").with_native_tools(tools)
    body = provider.request_body("", [ADD_TOOL], user())
    assert body["tools"][1:] == fx.RESPONSES_TOOLS
    check_responses_body(body)


def test_gemini_sends_its_built_in_tools_beside_the_function_declarations() -> None:
    tools = [
        WebSearch(blocked_domains=["example.org"]),
        CodeExecution(),
        FileSearch(store_ids=["fileSearchStores/my-store"], max_results=5),
        UrlContext(),
        MCPConnector(url="https://mcp.example.com/mcp", name="docs", authorization="tok-123"),
    ]
    body = Gemini(api_key="k").with_native_tools(tools).request_body("", [ADD_TOOL], user())
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "add"
    assert body["tools"][1:] == fx.GEMINI_TOOLS
    check_gemini_body(body)


def test_kimi_sends_web_search_as_moonshots_builtin_function() -> None:
    body = Kimi(api_key="k").with_native_tools([WebSearch()]).request_body("", [], user())
    assert body["tools"] == [{"type": "builtin_function", "function": {"name": "$web_search"}}]


def test_native_tool_goes_verbatim_to_its_own_provider_only() -> None:
    bash = NativeTool("anthropic", {"type": "bash_20250124", "name": "bash"})
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    body = claude.with_native_tools([bash]).request_body("", [], user())
    assert body["tools"] == [{"type": "bash_20250124", "name": "bash"}]
    check_anthropic_beta_body({**body, "stream": True})
    with pytest.raises(ValueError, match="NativeTool for 'anthropic' cannot be sent to 'gemini'"):
        Gemini(api_key="k").with_native_tools([bash])


@pytest.mark.parametrize(
    ("provider", "tool", "words"),
    [
        (OpenAIChat(model="gpt-5.5", api_key="k"), WebSearch(), "OpenAIChat cannot send"),
        (Anthropic(model="claude-sonnet-4-6", api_key="k"), UrlContext(), "Anthropic cannot"),
        (OpenAIResponses(model="m", api_key="k"), WebFetch(), "OpenAIResponses cannot"),
        (Gemini(api_key="k"), WebSearch(max_uses=2), "googleSearch takes blocked_domains"),
        (Kimi(api_key="k"), CodeExecution(), "Kimi cannot send the native tool CodeExecution"),
        (
            Anthropic(model="claude-sonnet-4-6", api_key="k"),
            MCPConnector("u", "n", headers={"A": "b"}),
            "no headers",
        ),
    ],
)
def test_a_provider_without_the_tool_refuses_it_before_sending(
    provider: Any, tool: Any, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        provider.with_native_tools([tool])


async def test_a_refused_native_tool_sends_nothing(wire: WireServer) -> None:
    chat = OpenAIChat(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(chat.aclose)
    with pytest.raises(ValueError, match="Chat Completions has no native tools"):
        await generate(chat, "", [], user(), native_tools=[WebSearch()])
    assert wire.requests == []


# --- answers: Anthropic ------------------------------------------------------------------------


def anthropic_web_search_reply() -> Reply:
    """The web search page's answer, streamed as the streaming page shows server tools."""
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1}},
    }  # fmt: skip
    query = json.dumps(fx.SERVER_TOOL_USE["input"])
    events: list[dict[str, Any]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": fx.INTRO}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {**fx.SERVER_TOOL_USE, "input": {}}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": query[:10]}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": query[10:]}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": fx.WEB_SEARCH_RESULT},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "citations_delta", "citation": fx.CITATION}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "text_delta", "text": fx.CITED[:20]}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "text_delta", "text": fx.CITED[20:]}},
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return Reply(events=[anthropic_event(e) for e in events])


async def test_anthropic_web_search_blocks_stream_as_native_parts_and_go_back_verbatim(
    wire: WireServer,
) -> None:
    claude = Anthropic(
        model="claude-sonnet-4-6", api_key="k", base_url=wire.url, prompt_cache=False
    )
    wire.closers.append(claude.aclose)
    wire.queue(anthropic_web_search_reply(), anthropic_web_search_reply())
    streamed: list[Any] = []
    result = await step(
        claude.with_native_tools([WebSearch()]),
        "",
        SimpleToolset(),
        user("When was Claude Shannon born?"),
        on_message_part=streamed.append,
    )
    native = [p for p in result.message.content if isinstance(p, NativeToolPart)]
    assert [p.data for p in native] == [fx.SERVER_TOOL_USE, fx.WEB_SEARCH_RESULT, fx.CITED_TEXT]
    assert all(p.provider == "anthropic" for p in native)
    assert result.message.extract_text() == fx.INTRO + fx.CITED  # the text reads whole
    assert sum(isinstance(p, NativeToolPart) for p in streamed) == 3  # streamed like others
    assert result.tool_calls == [] and await result.tool_results() == []  # the provider ran it
    # The next turn sends the blocks back exactly as they came.
    history = [*user("When was Claude Shannon born?"), result.message, *user("Thanks")]
    await generate(claude, "", [], history)
    sent = wire.requests[-1].body
    assert sent["messages"][1] == {"role": "assistant", "content": fx.ANTHROPIC_ASSISTANT}
    check_anthropic_beta_body(sent)


def test_native_parts_of_another_provider_are_left_out() -> None:
    answer = Message(
        role="assistant",
        content=[
            TextPart(text="Found it."),
            NativeToolPart(provider="gemini", data=fx.CODE_RESULT),
        ],
    )
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    body = claude.request_body("", [], [*user(), answer, *user("ok")])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Found it."}]
    chat = OpenAIChat(model="gpt-5.5", api_key="k").request_body("", [], [*user(), answer])
    assert chat["messages"][1] == {"role": "assistant", "content": "Found it."}
    check_chat_body(chat)


def test_an_edited_cited_text_goes_alone() -> None:
    answer = Message(
        role="assistant",
        content=[
            TextPart(text="Shannon was born in 1916."),  # not the cited block's text any more
            NativeToolPart(provider="anthropic", data=fx.CITED_TEXT),
        ],
    )
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    body = claude.request_body("", [], [*user(), answer])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Shannon was born in 1916."}]


# --- answers: OpenAI Responses -----------------------------------------------------------------


def responses_web_search_reply() -> Reply:
    seq = 0

    def event(data: dict[str, Any]) -> str:
        nonlocal seq
        seq += 1
        return sse({**data, "sequence_number": seq}, event=data["type"])

    response = {
        "id": "resp_1", "object": "response", "created_at": 1700000000, "model": "gpt-5.5",
        "status": "completed", "output": [], "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "usage": None, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
    }  # fmt: skip
    in_progress = {**fx.WEB_SEARCH_CALL, "status": "in_progress"}
    message = {**fx.CITED_MESSAGE, "status": "in_progress", "content": []}
    events = [
        event({"type": "response.created", "response": {**response, "status": "in_progress"}}),
        event({"type": "response.output_item.added", "output_index": 0, "item": in_progress}),
        event({"type": "response.output_item.done", "output_index": 0, "item": fx.WEB_SEARCH_CALL}),
        event({"type": "response.output_item.added", "output_index": 1, "item": message}),
        event({"type": "response.output_text.delta", "item_id": message["id"], "output_index": 1,
               "content_index": 0, "delta": fx.ANSWER, "logprobs": []}),
        event({"type": "response.output_item.done", "output_index": 1, "item": fx.CITED_MESSAGE}),
        event({"type": "response.completed", "response": response}),
    ]  # fmt: skip
    return Reply(events=events)


async def test_responses_web_search_items_stream_as_native_parts_and_go_back_verbatim(
    wire: WireServer,
) -> None:
    provider = OpenAIResponses(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(responses_web_search_reply(), responses_web_search_reply())
    result = await generate(provider.with_native_tools([WebSearch()]), "", [], user())
    native = [p.data for p in result.message.content if isinstance(p, NativeToolPart)]
    assert native == [fx.WEB_SEARCH_CALL, fx.CITED_MESSAGE]
    assert result.message.extract_text() == fx.ANSWER
    await generate(provider, "", [], [*user(), result.message, *user("Thanks")])
    sent = wire.requests[-1].body
    assert sent["input"][1:3] == [fx.WEB_SEARCH_CALL, fx.CITED_MESSAGE]
    check_responses_body(sent)


# --- answers: Gemini ---------------------------------------------------------------------------


async def test_gemini_code_execution_parts_and_grounding_stream_as_native_parts(
    wire: WireServer,
) -> None:
    gemini = Gemini(api_key="k", base_url=wire.url)
    wire.closers.append(gemini.aclose)
    last = gemini_chunk([{"text": "The sum is 1275."}], finish_reason="STOP")
    last["candidates"][0]["groundingMetadata"] = fx.GROUNDING
    reply = Reply(
        events=[
            sse(gemini_chunk([fx.EXECUTABLE_CODE])),
            sse(gemini_chunk([fx.CODE_RESULT])),
            sse(last),
        ]
    )
    wire.queue(reply, Reply(events=[sse(gemini_chunk([{"text": "ok"}], finish_reason="STOP"))]))
    result = await generate(gemini.with_native_tools([CodeExecution()]), "", [], user())
    native = [p.data for p in result.message.content if isinstance(p, NativeToolPart)]
    assert native == [fx.EXECUTABLE_CODE, fx.CODE_RESULT, {"groundingMetadata": fx.GROUNDING}]
    await generate(gemini, "", [], [*user(), result.message, *user("Thanks")])
    sent = wire.requests[-1].body
    # The code parts go back as they came; grounding metadata has no place in a request.
    assert sent["contents"][1] == {
        "role": "model",
        "parts": [fx.EXECUTABLE_CODE, fx.CODE_RESULT, {"text": "The sum is 1275."}],
    }
    check_gemini_body(sent)


# --- the loop --------------------------------------------------------------------------------


async def test_kimi_web_search_calls_are_answered_with_their_arguments(wire: WireServer) -> None:
    from _wire import chat_chunk, tool_delta

    kimi = Kimi(api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(kimi.aclose)
    arguments = '{"search_result": {"search_id": "abc"}}'
    call = Reply(
        events=[
            chat_chunk(tool_delta(0, id="call_1", name="$web_search", arguments=arguments)),
            chat_chunk({}, finish_reason="tool_calls"),
            "data: [DONE]\n\n",
        ]
    )
    wire.queue(call, chat_text_reply("Found."))
    result = await agent_loop(kimi, "", SimpleToolset(), user(), native_tools=[WebSearch()])
    assert result.answer == "Found."
    echoed = wire.requests[-1].body["messages"][-1]
    assert echoed == {"role": "tool", "content": arguments, "tool_call_id": "call_1"}


async def test_anthropic_mcp_connector_calls_stream_as_native_parts_and_go_back(
    wire: WireServer,
) -> None:
    claude = Anthropic(
        model="claude-sonnet-4-6", api_key="k", base_url=wire.url, prompt_cache=False
    )
    wire.closers.append(claude.aclose)
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1}},
    }  # fmt: skip
    events = [
        start,
        {"type": "content_block_start", "index": 0,
         "content_block": {**fx.MCP_TOOL_USE, "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"query": "tool search"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": fx.MCP_TOOL_RESULT},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]  # fmt: skip
    wire.queue(Reply(events=[anthropic_event(e) for e in events]), anthropic_web_search_reply())
    result = await generate(claude.with_native_tools([DOCS]), "", [], user())
    native = [p.data for p in result.message.content if isinstance(p, NativeToolPart)]
    assert native == [fx.MCP_TOOL_USE, fx.MCP_TOOL_RESULT]
    await generate(claude.with_native_tools([DOCS]), "", [], [*user(), result.message, *user("ok")])
    sent = wire.requests[-1].body
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [fx.MCP_TOOL_USE, fx.MCP_TOOL_RESULT],
    }
    check_anthropic_beta_body(sent)
