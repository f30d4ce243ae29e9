"""The exact JSON body each provider sends, compared with fixtures written from the API
references (`fixtures/`), for every case: plain text, a whole conversation with parallel calls
and tool results holding images and several text parts, thinking at every effort, caching,
extra body fields, builtin functions, tool_choice, and non-streamed requests."""

from __future__ import annotations

from typing import Any

import pytest
from _bodies import (
    check_anthropic_body,
    check_chat_body,
    check_gemini_body,
    check_responses_body,
)
from _cases import ADD_TOOL, CALLS, SYSTEM, TOOLS, WEB_SEARCH, conversation, user
from _wire import (
    SDK_SUBCLASSES_AIOHTTP,
    Reply,
    WireServer,
    anthropic_reply,
    chat_text_reply,
    gemini_reply,
    responses_reply,
)
from fixtures import anthropic as anthropic_fx
from fixtures import gemini as gemini_fx
from fixtures import moonshot
from fixtures import openai_chat as chat_fx
from fixtures import openai_responses as responses_fx

from kosong import generate, step
from kosong.chat_provider import ChatProvider, TokenUsage
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.dialects import DialectError
from kosong.message import ImageURLPart, Message, TextPart, ThinkPart, ToolCall
from kosong.tooling.simple import SimpleToolset

pytestmark = SDK_SUBCLASSES_AIOHTTP


def kimi(wire: WireServer, **kwargs: Any) -> Kimi:
    provider = Kimi(api_key="sk-kimi", base_url=wire.url + "/v1", **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def chat(wire: WireServer, **kwargs: Any) -> OpenAIChat:
    provider = OpenAIChat(model=chat_fx.MODEL, api_key="sk", base_url=wire.url + "/v1", **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def responses(wire: WireServer, **kwargs: Any) -> OpenAIResponses:
    provider = OpenAIResponses(
        model=responses_fx.MODEL, api_key="sk", base_url=wire.url + "/v1", **kwargs
    )
    wire.closers.append(provider.aclose)
    return provider


def claude(wire: WireServer, model: str = anthropic_fx.MODEL, **kwargs: Any) -> Anthropic:
    provider = Anthropic(model=model, api_key="sk-ant", base_url=wire.url, **kwargs)
    wire.closers.append(provider.aclose)
    return provider


async def sent(
    wire: WireServer,
    provider: ChatProvider,
    reply: Reply,
    system: str,
    tools: list[Any],
    history: list[Message],
    **options: Any,
) -> dict[str, Any]:
    wire.queue(reply)
    await generate(provider, system, tools, history, **options)
    return wire.requests[-1].body


def ok_chat() -> Reply:
    return chat_text_reply("ok")


def ok_responses() -> Reply:
    return responses_reply([{"type": "message", "pieces": ["ok"]}])


def ok_anthropic() -> Reply:
    return anthropic_reply([{"type": "text", "pieces": ["ok"]}])


def gemini(wire: WireServer, model: str = gemini_fx.MODEL, **kwargs: Any) -> Gemini:
    provider = Gemini(model=model, api_key="gm-key", base_url=wire.url, **kwargs)
    wire.closers.append(provider.aclose)
    return provider


def ok_gemini() -> Reply:
    return gemini_reply([{"text": "ok"}])


# --- Kimi ----------------------------------------------------------------------------------


async def test_kimi_sends_plain_text_as_documented(wire: WireServer) -> None:
    body = await sent(wire, kimi(wire), ok_chat(), SYSTEM, [], user())
    assert body == moonshot.PLAIN
    check_chat_body(body)


async def test_kimi_sends_a_conversation_with_images_in_tool_results_as_parts(
    wire: WireServer,
) -> None:
    body = await sent(wire, kimi(wire), ok_chat(), SYSTEM, TOOLS, conversation())
    assert body == moonshot.CONVERSATION
    # Not checked with the openai types: OpenAI's tool messages take text only, Moonshot's
    # take image parts too.


@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh", "max"])
async def test_kimi_thinking_on_is_enabled_at_every_effort(wire: WireServer, effort: Any) -> None:
    body = await sent(wire, kimi(wire).with_thinking(effort), ok_chat(), SYSTEM, [], user())
    assert body == moonshot.THINKING_ON


async def test_kimi_thinking_off_is_disabled(wire: WireServer) -> None:
    body = await sent(wire, kimi(wire).with_thinking("off"), ok_chat(), SYSTEM, [], user())
    assert body == moonshot.THINKING_OFF


async def test_kimi_extra_body_as_a_dict_keeps_thinking_keep_in_either_order(
    wire: WireServer,
) -> None:
    first = kimi(wire).with_extra_body({"thinking": {"keep": "all"}}).with_thinking("high")
    second = kimi(wire).with_thinking("high").with_extra_body({"thinking": {"keep": "all"}})
    assert await sent(wire, first, ok_chat(), SYSTEM, [], user()) == moonshot.THINKING_KEPT
    assert await sent(wire, second, ok_chat(), SYSTEM, [], user()) == moonshot.THINKING_KEPT


async def test_kimi_declares_builtin_functions(wire: WireServer) -> None:
    body = await sent(wire, kimi(wire), ok_chat(), "", [WEB_SEARCH, ADD_TOOL], user())
    assert body == moonshot.BUILTIN


async def test_kimi_without_streaming_reads_the_whole_completion(wire: WireServer) -> None:
    wire.queue(Reply(body=moonshot.COMPLETION, headers={"x-trace-id": "trace-kimi-1"}))
    provider = kimi(wire, stream=False).with_generation_kwargs(max_tokens=1024)
    result = await generate(provider, "", [], user())
    body = wire.requests[-1].body
    assert body == moonshot.NOT_STREAMED
    check_chat_body({**body, "stream": True})  # the type checked is the streaming one
    assert result.message.content == [ThinkPart(think=""), TextPart(text="Adding.")]
    assert result.message.tool_calls == [
        ToolCall(
            id="add:0", function=ToolCall.FunctionBody(name="add", arguments='{"a": 1, "b": 2}')
        )
    ]
    assert result.usage == TokenUsage(input_other=40, output=9, input_cache_read=10)
    assert (result.finish_reason, result.provider_trace_id) == ("tool_calls", "trace-kimi-1")


@pytest.mark.parametrize("choice", ["auto", "none", "required", "add"])
async def test_kimi_sends_tool_choice_in_the_openai_format(wire: WireServer, choice: str) -> None:
    provider = kimi(wire).with_thinking("off")
    body = await sent(wire, provider, ok_chat(), "", [ADD_TOOL], user(), tool_choice=choice)
    assert body == {
        "model": moonshot.MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        **moonshot.STREAM,
        "thinking": {"type": "disabled"},
        "tools": [moonshot.TOOLS[1]],
        "tool_choice": moonshot.TOOL_CHOICES[choice],
    }
    check_chat_body(body)


@pytest.mark.parametrize("choice", ["required", "add"])
async def test_kimi_refuses_a_forced_tool_call_while_thinking(
    wire: WireServer, choice: str
) -> None:
    with pytest.raises(ValueError, match=r'tool_choice=.* with_thinking\("off"\)'):
        kimi(wire).with_tool_choice(choice)
    with pytest.raises(ValueError, match="forces a tool call"):
        await step(kimi(wire), "", SimpleToolset(), user(), tool_choice=choice)
    assert wire.requests == []


# --- OpenAI Chat Completions --------------------------------------------------------------


async def test_openai_chat_sends_plain_text_as_documented(wire: WireServer) -> None:
    body = await sent(wire, chat(wire), ok_chat(), SYSTEM, [], user())
    assert body == chat_fx.PLAIN
    check_chat_body(body)


async def test_openai_chat_tool_results_are_text_parts_with_a_short_image_placeholder(
    wire: WireServer,
) -> None:
    body = await sent(wire, chat(wire), ok_chat(), SYSTEM, TOOLS, conversation())
    assert body == chat_fx.CONVERSATION
    check_chat_body(body)


@pytest.mark.parametrize("effort", ["off", "low", "medium", "high", "xhigh", "max"])
async def test_openai_chat_sends_each_effort_as_documented(wire: WireServer, effort: Any) -> None:
    body = await sent(wire, chat(wire).with_thinking(effort), ok_chat(), SYSTEM, [], user())
    assert body == chat_fx.EFFORTS[effort]
    check_chat_body(body)


async def test_openai_chat_sends_max_effort_to_the_models_that_take_it(wire: WireServer) -> None:
    provider = chat(wire).with_thinking("max")
    newer = OpenAIChat(model="gpt-5.6", api_key="sk-test", base_url=wire.url + "/v1")
    wire.closers.append(newer.aclose)
    body = await sent(wire, newer.with_thinking("max"), ok_chat(), SYSTEM, [], user())
    assert body == chat_fx.MAX_ON_GPT_5_6
    check_chat_body(body)
    assert (await sent(wire, provider, ok_chat(), SYSTEM, [], user()))[
        "reasoning_effort"
    ] == "xhigh"


async def test_openai_chat_max_tokens_goes_as_max_completion_tokens(wire: WireServer) -> None:
    provider = chat(wire, generation_kwargs={"temperature": 0.2})
    overrides = {"max_tokens": 2048}
    body = await sent(wire, provider, ok_chat(), SYSTEM, [], user(), generation_overrides=overrides)
    assert body == chat_fx.GENERATION
    check_chat_body(body)
    assert provider.generation_kwargs == {"temperature": 0.2}  # the override was per call


async def test_openai_chat_without_streaming_reads_the_whole_completion(wire: WireServer) -> None:
    wire.queue(Reply(body=chat_fx.COMPLETION, headers={"x-request-id": "req_nonstream"}))
    result = await generate(chat(wire, stream=False), "", [], user())
    assert wire.requests[-1].body == chat_fx.NOT_STREAMED
    assert result.message.extract_text() == "Hello there."
    assert result.usage == TokenUsage(input_other=93, output=46, input_cache_read=1024)
    assert (result.id, result.request_id) == (chat_fx.COMPLETION["id"], "req_nonstream")


@pytest.mark.parametrize("choice", ["auto", "none", "required", "add"])
async def test_openai_chat_sends_tool_choice_as_documented(wire: WireServer, choice: str) -> None:
    body = await sent(wire, chat(wire), ok_chat(), "", [ADD_TOOL], user(), tool_choice=choice)
    assert body["tool_choice"] == chat_fx.TOOL_CHOICES[choice]
    check_chat_body(body)


# --- OpenAI Responses ---------------------------------------------------------------------


def packed_reasoning() -> ThinkPart:
    import json

    encrypted = json.dumps(
        {"id": responses_fx.REASONING_ID, "encrypted_content": responses_fx.ENCRYPTED},
        separators=(",", ":"),
    )
    return ThinkPart(think="Two tools.", encrypted=encrypted)


async def test_openai_responses_sends_plain_text_as_documented(wire: WireServer) -> None:
    body = await sent(wire, responses(wire), ok_responses(), SYSTEM, [], user())
    assert body == responses_fx.PLAIN
    check_responses_body(body)


async def test_openai_responses_sends_reasoning_items_back_and_images_in_tool_outputs(
    wire: WireServer,
) -> None:
    provider = responses(wire).with_thinking("medium")
    history = conversation(packed_reasoning())
    body = await sent(wire, provider, ok_responses(), SYSTEM, TOOLS, history)
    assert body == responses_fx.CONVERSATION
    check_responses_body(body)


async def test_openai_responses_leaves_out_thinking_of_another_provider(wire: WireServer) -> None:
    provider = responses(wire).with_thinking("medium")
    history = conversation(ThinkPart(think="x", encrypted="anthropic-signature"))
    body = await sent(wire, provider, ok_responses(), SYSTEM, TOOLS, history)
    assert [i.get("type") for i in body["input"]].count("reasoning") == 0


@pytest.mark.parametrize("effort", ["off", "low", "medium", "high", "xhigh", "max"])
async def test_openai_responses_sends_each_effort_as_documented(
    wire: WireServer, effort: Any
) -> None:
    provider = responses(wire).with_thinking(effort)
    body = await sent(wire, provider, ok_responses(), SYSTEM, [], user())
    assert body == responses_fx.EFFORTS[effort]
    check_responses_body(body)


async def test_openai_responses_max_tokens_goes_as_max_output_tokens(wire: WireServer) -> None:
    provider = responses(wire).with_generation_kwargs(temperature=0.2, max_tokens=2048)
    body = await sent(wire, provider, ok_responses(), SYSTEM, [], user())
    assert body == responses_fx.GENERATION
    check_responses_body(body)


async def test_openai_responses_without_streaming_keeps_the_reasoning_item(
    wire: WireServer,
) -> None:
    wire.queue(Reply(body=responses_fx.RESPONSE))
    provider = responses(wire, stream=False).with_thinking("low")
    result = await generate(provider, "", [ADD_TOOL], user())
    body = wire.requests[-1].body
    assert body == {**responses_fx.NOT_STREAMED, "tools": [responses_fx.TOOLS[1]]}
    assert result.message.content == [
        packed_reasoning().model_copy(update={"think": "Simple sum."})
    ]
    assert [c.id for c in result.message.tool_calls or []] == ["call_9"]
    assert result.usage == TokenUsage(
        input_other=200, output=52, input_cache_read=128, output_reasoning=32
    )
    # The reasoning item goes back on the next turn.
    wire.queue(Reply(body=responses_fx.RESPONSE))
    history = [*user(), result.message]
    await generate(provider, "", [ADD_TOOL], history)
    assert wire.requests[-1].body["input"][1] == {
        "type": "reasoning",
        "id": responses_fx.REASONING_ID,
        "summary": [{"type": "summary_text", "text": "Simple sum."}],
        "encrypted_content": responses_fx.ENCRYPTED,
    }


@pytest.mark.parametrize("choice", ["auto", "none", "required", "add"])
async def test_openai_responses_sends_tool_choice_as_documented(
    wire: WireServer, choice: str
) -> None:
    body = await sent(
        wire, responses(wire), ok_responses(), "", [ADD_TOOL], user(), tool_choice=choice
    )
    assert body["tool_choice"] == responses_fx.TOOL_CHOICES[choice]
    check_responses_body(body)


# --- Anthropic ----------------------------------------------------------------------------


async def test_anthropic_caches_the_system_prompt_tools_and_last_block(wire: WireServer) -> None:
    body = await sent(wire, claude(wire), ok_anthropic(), SYSTEM, [], user())
    assert body == anthropic_fx.PLAIN
    check_anthropic_body(body)


async def test_anthropic_prompt_cache_can_be_turned_off(wire: WireServer) -> None:
    body = await sent(wire, claude(wire, prompt_cache=False), ok_anthropic(), SYSTEM, [], user())
    assert body == anthropic_fx.PLAIN_UNCACHED
    check_anthropic_body(body)


async def test_anthropic_sends_a_conversation_with_images_in_tool_results(
    wire: WireServer,
) -> None:
    history = conversation(ThinkPart(think="Two tools.", encrypted=anthropic_fx.SIGNATURE))
    body = await sent(wire, claude(wire), ok_anthropic(), SYSTEM, TOOLS, history)
    assert body == anthropic_fx.CONVERSATION
    check_anthropic_body(body)


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-5-20251101",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
    ],
)
@pytest.mark.parametrize("effort", ["off", "low", "medium", "high", "xhigh", "max"])
@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
async def test_anthropic_thinking_follows_the_model_family(
    wire: WireServer, model: str, effort: Any
) -> None:
    provider = claude(wire, model=model).with_thinking(effort)
    body = await sent(wire, provider, ok_anthropic(), SYSTEM, [], user())
    assert body == {
        **anthropic_fx.PLAIN,
        "model": model,
        **anthropic_fx.thinking_fields(model, effort),
    }
    check_anthropic_body(body)


def test_anthropic_refuses_thinking_off_on_a_model_that_always_thinks() -> None:
    provider = Anthropic(model="claude-mythos-preview", api_key="k")
    with pytest.raises(ValueError, match=r'with_thinking\("off"\) cannot be sent'):
        provider.with_thinking("off")


@pytest.mark.parametrize("choice", ["auto", "none", "required", "add"])
async def test_anthropic_sends_tool_choice_as_documented(wire: WireServer, choice: str) -> None:
    body = await sent(
        wire, claude(wire), ok_anthropic(), "", [ADD_TOOL], user(), tool_choice=choice
    )
    assert body["tool_choice"] == anthropic_fx.TOOL_CHOICES[choice]
    check_anthropic_body(body)


def test_anthropic_refuses_a_forced_tool_call_while_thinking() -> None:
    provider = Anthropic(model=anthropic_fx.MODEL, api_key="k").with_thinking("high")
    with pytest.raises(ValueError, match="forces a tool call"):
        provider.with_tool_choice("required")


async def test_anthropic_generation_kwargs_the_sdk_lacks_go_in_the_body(wire: WireServer) -> None:
    provider = claude(wire).with_generation_kwargs(temperature=0.2, top_k=5, max_tokens=1000)
    body = await sent(wire, provider, ok_anthropic(), SYSTEM, [], user())
    assert body == {**anthropic_fx.PLAIN, "temperature": 0.2, "top_k": 5, "max_tokens": 1000}
    check_anthropic_body(body)


async def test_anthropic_without_streaming_reads_the_whole_message(wire: WireServer) -> None:
    wire.queue(Reply(body=anthropic_fx.MESSAGE, headers={"request-id": "req_whole"}))
    result = await generate(claude(wire, stream=False), "", [], user())
    body = wire.requests[-1].body
    assert body == {
        "model": anthropic_fx.MODEL,
        "max_tokens": 8192,
        "messages": anthropic_fx.PLAIN["messages"],
    }
    assert result.message.content == [
        ThinkPart(think="A sum.", encrypted=anthropic_fx.SIGNATURE),
        TextPart(text="Adding."),
    ]
    assert [c.function.arguments for c in result.message.tool_calls or []] == ['{"a": 1, "b": 2}']
    assert result.usage == TokenUsage(
        input_other=2095, output=503, input_cache_read=0, input_cache_creation=2051
    )
    assert (result.finish_reason, result.request_id) == ("tool_use", "req_whole")


# --- Gemini -------------------------------------------------------------------------------


def gemini_history() -> list[Message]:
    """The conversation as Gemini made it: a signed thought summary, the first call signed."""
    packed = f'{{"thoughtSignature":"{gemini_fx.THOUGHT_SIGNATURE}","part":"thought"}}'
    signed = CALLS[0].model_copy(
        update={"extras": {"thought_signature_b64": gemini_fx.CALL_SIGNATURE}}
    )
    return conversation(ThinkPart(think="Two tools.", encrypted=packed), [signed, CALLS[1]])


async def test_gemini_sends_plain_text_as_documented(wire: WireServer) -> None:
    body = await sent(wire, gemini(wire), ok_gemini(), SYSTEM, [], user())
    assert body == gemini_fx.PLAIN
    check_gemini_body(body)
    request = wire.requests[-1]
    assert (request.path, request.query) == (
        f"/v1beta/models/{gemini_fx.MODEL}:streamGenerateContent",
        "alt=sse",
    )
    assert request.headers.get("x-goog-api-key") == "gm-key"


async def test_gemini_sends_signatures_back_on_their_parts_and_images_in_function_responses(
    wire: WireServer,
) -> None:
    provider = gemini(wire).with_thinking("high")
    body = await sent(wire, provider, ok_gemini(), SYSTEM, TOOLS, gemini_history())
    assert body == gemini_fx.CONVERSATION
    check_gemini_body(body)


async def test_gemini_signs_calls_from_another_providers_history_as_documented(
    wire: WireServer,
) -> None:
    history = conversation(ThinkPart(think="x", encrypted="anthropic-signature"))
    body = await sent(wire, gemini(wire).with_thinking("high"), ok_gemini(), SYSTEM, TOOLS, history)
    assert body == gemini_fx.FROM_ANOTHER_PROVIDER
    check_gemini_body(body)


async def test_gemini_2_5_gets_a_placeholder_for_an_image_in_a_tool_result(
    wire: WireServer,
) -> None:
    provider = gemini(wire, model="gemini-2.5-flash")
    body = await sent(wire, provider, ok_gemini(), SYSTEM, TOOLS, conversation())
    assert body == gemini_fx.ON_GEMINI_2_5
    check_gemini_body(body)


@pytest.mark.parametrize("model", sorted(gemini_fx.THINKING))
@pytest.mark.parametrize("effort", ["off", "low", "medium", "high", "xhigh", "max"])
async def test_gemini_thinking_follows_the_model_family(
    wire: WireServer, model: str, effort: Any
) -> None:
    expected = gemini_fx.THINKING[model][effort]
    if expected == gemini_fx.OFF:
        with pytest.raises(ValueError, match=r'with_thinking\("off"\) cannot be sent'):
            gemini(wire, model=model).with_thinking(effort)
        return
    provider = gemini(wire, model=model).with_thinking(effort)
    body = await sent(wire, provider, ok_gemini(), SYSTEM, [], user())
    assert body == {**gemini_fx.PLAIN, "generationConfig": {"thinkingConfig": expected}}


@pytest.mark.parametrize("choice", ["auto", "none", "required", "add"])
async def test_gemini_sends_tool_choice_as_a_function_calling_mode(
    wire: WireServer, choice: str
) -> None:
    body = await sent(wire, gemini(wire), ok_gemini(), "", [ADD_TOOL], user(), tool_choice=choice)
    assert body["toolConfig"] == gemini_fx.TOOL_CHOICES[choice]
    assert body["tools"] == [
        {"functionDeclarations": gemini_fx.TOOLS[0]["functionDeclarations"][1:]}
    ]


async def test_gemini_generation_kwargs_go_in_generation_config(wire: WireServer) -> None:
    provider = gemini(wire, generation_kwargs={"temperature": 0.2, "top_p": 0.9})
    overrides = {
        "max_tokens": 1024,
        "stop_sequences": ["END"],
        "cached_content": "cachedContents/abc123",
    }
    body = await sent(
        wire, provider, ok_gemini(), SYSTEM, [], user(), generation_overrides=overrides
    )
    assert body == gemini_fx.GENERATION
    check_gemini_body(body)
    assert provider.generation_kwargs == {"temperature": 0.2, "top_p": 0.9}  # per call


def test_gemini_refuses_the_fields_it_sets_itself() -> None:
    provider = Gemini(api_key="k")
    for field in ("contents", "tools", "thinking_config", "toolConfig"):
        with pytest.raises(ValueError, match=r"sets .* itself"):
            provider.with_generation_kwargs(**{field: {}})


async def test_gemini_without_streaming_calls_generate_content(wire: WireServer) -> None:
    wire.queue(Reply(body=gemini_fx.RESPONSE))
    result = await generate(gemini(wire, stream=False), SYSTEM, [], user())
    request = wire.requests[-1]
    assert (request.path, request.query) == (
        f"/v1beta/models/{gemini_fx.MODEL}:generateContent",
        "",
    )
    assert request.body == gemini_fx.PLAIN
    assert result.message.extract_text() == "Adding."
    assert [c.id for c in result.message.tool_calls or []] == ["fc_1", "fc_2"]
    assert result.usage == TokenUsage(
        input_other=20, output=42, input_cache_read=100, output_reasoning=12
    )
    assert (result.id, result.finish_reason) == (gemini_fx.RESPONSE["responseId"], "STOP")


async def test_gemini_sends_the_json_schema_as_it_is_after_the_safe_fixes(
    wire: WireServer,
) -> None:
    from kosong.tooling import Tool

    tool = Tool(
        name="lookup",
        description="Look a word up.",
        parameters={
            "type": "object",
            "properties": {
                "word": {"type": ["string", "null"], "const": "x"},
                "place": {"$ref": "#/$defs/place", "description": "Where."},
            },
            "additionalProperties": False,
            "$defs": {"place": {"type": "string", "enum": ["home", "work"]}},
        },
    )
    body = await sent(wire, gemini(wire), ok_gemini(), "", [tool], user())
    # JSON Schema as it is (a list of types, const, additionalProperties), but the `$ref` with
    # a sibling inlined: Gemini refuses keywords beside a `$ref`.
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {
                            "word": {"type": ["string", "null"], "const": "x"},
                            "place": {
                                "type": "string",
                                "enum": ["home", "work"],
                                "description": "Where.",
                            },
                        },
                        "additionalProperties": False,
                    },
                }
            ]
        }
    ]
    check_gemini_body(body)


async def test_gemini_refuses_a_schema_it_cannot_take_before_sending(wire: WireServer) -> None:
    from kosong.tooling import Tool

    tree = Tool(
        name="tree",
        description="A recursive tree, its root required.",
        parameters={
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/node"}},
            "required": ["node"],
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                    },
                }
            },
        },
    )
    flag = Tool(
        name="flag",
        description="A boolean enum.",
        parameters={"type": "object", "properties": {"on": {"enum": [True]}}},
    )
    for tool in (tree, flag):
        with pytest.raises(DialectError, match="gemini"):
            await generate(gemini(wire), "", [tool], user())
    assert wire.requests == []


async def test_gemini_refuses_a_tool_result_for_a_call_it_cannot_name(wire: WireServer) -> None:
    orphan = [*user(), Message(role="tool", tool_call_id="call_x", content="3")]
    with pytest.raises(ValueError, match="answers no call in the history"):
        await generate(gemini(wire), "", [], orphan)
    assert wire.requests == []


# --- builtin functions elsewhere ----------------------------------------------------------


@pytest.mark.parametrize(
    "make", [chat, responses, claude, gemini], ids=["openai", "responses", "anthropic", "gemini"]
)
async def test_other_providers_refuse_a_builtin_function_before_sending(
    wire: WireServer, make: Any
) -> None:
    with pytest.raises(DialectError, match=r"\$web_search.*only the Kimi provider can send"):
        await generate(make(wire), "", [WEB_SEARCH], user())
    assert wire.requests == []


@pytest.mark.parametrize(
    "make",
    [kimi, chat, responses, claude, gemini],
    ids=["kimi", "openai", "responses", "anthropic", "gemini"],
)
async def test_a_tool_choice_naming_no_tool_fails_before_sending(
    wire: WireServer, make: Any
) -> None:
    provider = make(wire)
    if isinstance(provider, Kimi):
        provider = provider.with_thinking("off")
    with pytest.raises(ValueError, match="names no tool of this request"):
        await generate(provider, "", [ADD_TOOL], user(), tool_choice="subtract")
    assert wire.requests == []


# --- what every provider does alike ---------------------------------------------------------


def every_provider(wire: WireServer) -> list[Any]:
    return [kimi(wire), chat(wire), responses(wire), claude(wire), gemini(wire)]


PROVIDER_IDS = ["kimi", "openai", "responses", "anthropic", "gemini"]


def _text_fields(value: Any) -> list[str]:
    """Every string the model reads as text: `text`, `output`, `content` strings, anywhere."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("text", "output", "content") and isinstance(item, str):
                found.append(item)
            else:
                found += _text_fields(item)
    elif isinstance(value, list):
        for item in value:
            found += _text_fields(item)
    return found


@pytest.mark.parametrize("index", range(5), ids=PROVIDER_IDS)
async def test_several_text_parts_of_a_tool_result_are_never_glued(
    wire: WireServer, index: int
) -> None:
    provider = every_provider(wire)[index]
    body = provider.request_body(SYSTEM, TOOLS, conversation())
    texts = _text_fields(body)
    assert not any("Helloworld" in t for t in texts)
    assert any(t == "Hello" for t in texts) or any("Hello\nworld" in t for t in texts)


@pytest.mark.parametrize("index", range(5), ids=PROVIDER_IDS)
async def test_a_screenshot_in_a_tool_result_never_goes_as_text(
    wire: WireServer, index: int
) -> None:
    import base64

    screenshot = base64.b64encode(bytes(range(256)) * 600).decode()  # 150 KB
    history = [
        *user(),
        Message(role="assistant", tool_calls=[CALLS[0]]),
        Message(
            role="tool",
            tool_call_id="call_1",
            content=[
                TextPart(text="Done."),
                ImageURLPart(
                    image_url=ImageURLPart.ImageURL(url=f"data:image/png;base64,{screenshot}")
                ),
            ],
        ),
    ]
    body = every_provider(wire)[index].request_body("", TOOLS, history)
    texts = _text_fields(body)
    assert not any(screenshot[:1000] in t for t in texts)
    assert sum(len(t) for t in texts) < 1000


@pytest.mark.parametrize("index", range(5), ids=PROVIDER_IDS)
def test_a_field_the_provider_sets_itself_is_refused_at_the_with_call(
    wire: WireServer, index: int
) -> None:
    provider = every_provider(wire)[index]
    with pytest.raises(ValueError, match=r"sets model itself: use the provider's options"):
        provider.with_generation_kwargs(model="another")


def test_ordinary_tool_names_keep_the_rule_matched_against_the_whole_name() -> None:
    from kosong.tooling import Tool

    for name in ("add\n", "a$b", "add$", "web search", "$"):
        with pytest.raises(ValueError, match="not valid"):
            Tool(name=name, description="", parameters={})
    assert Tool(name="web-search_2", description="", parameters={}).name == "web-search_2"
