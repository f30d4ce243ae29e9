"""Free-form tools on the wire: OpenAI custom tools (Chat and Responses), their calls as
`ToolCall(type="custom")` run by the toolset with the text unparsed, their results back as
the API wants; a function of one string elsewhere."""

from __future__ import annotations

from typing import Any

from _bodies import check_anthropic_body, check_chat_body, check_gemini_body, check_responses_body
from _cases import user
from _wire import Reply, WireServer, responses_reply, sse
from fixtures import openai_chat as chat_fx
from fixtures import openai_responses as responses_fx

from kosong import agent_loop
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.message import Message, ToolCall
from kosong.tooling import FreeformTool, Grammar, ToolOk, ToolReturnValue
from kosong.tooling.simple import SimpleToolset

applied: list[str] = []


class ApplyPatch(FreeformTool):
    name: str = "apply_patch"
    description: str = "Apply a patch to the repository."

    async def __call__(self, input: str) -> ToolReturnValue:
        applied.append(input)
        return ToolOk(output="applied")


LARK = ApplyPatch(grammar=Grammar(syntax="lark", definition=responses_fx.PATCH_GRAMMAR))
PATCH = "*** Begin Patch\n+hello\n*** End Patch"
CUSTOM_CALL = ToolCall(
    id="call_p", type="custom", function=ToolCall.FunctionBody(name="apply_patch", arguments=PATCH)
)


def test_openai_chat_sends_a_custom_tool_and_its_calls_with_their_text() -> None:
    history = [
        *user(),
        Message(role="assistant", tool_calls=[CUSTOM_CALL]),
        Message(role="tool", tool_call_id="call_p", content="applied"),
    ]
    body = OpenAIChat(model="gpt-5.5", api_key="k").request_body("", [ApplyPatch()], history)
    assert body["tools"] == [chat_fx.CUSTOM_TOOL]
    assert body["messages"][1]["tool_calls"] == [
        {"id": "call_p", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}}
    ]
    check_chat_body(body)


def test_responses_sends_a_custom_tool_with_its_grammar_and_the_custom_items() -> None:
    history = [
        *user(),
        Message(role="assistant", tool_calls=[CUSTOM_CALL]),
        Message(role="tool", tool_call_id="call_p", content="applied"),
    ]
    body = OpenAIResponses(model="gpt-5.5", api_key="k").request_body("", [LARK], history)
    assert body["tools"] == [responses_fx.CUSTOM_TOOL]
    assert body["input"][1:] == [
        {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "applied"},
    ]
    check_responses_body(body)


def test_other_apis_get_a_function_of_one_string() -> None:
    history = [*user(), Message(role="assistant", tool_calls=[CUSTOM_CALL])]
    claude = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    body = claude.request_body("", [LARK], history)
    assert body["tools"][0]["input_schema"]["properties"] == {
        "input": {"type": "string", "description": "The tool's input, as text."}
    }
    assert body["messages"][1]["content"][0]["input"] == {"input": PATCH}
    check_anthropic_body({**body, "stream": True})
    gemini = Gemini(api_key="k").request_body("", [LARK], history)
    assert gemini["contents"][1]["parts"][0]["functionCall"]["args"] == {"input": PATCH}
    check_gemini_body(gemini)
    kimi = Kimi(api_key="k").request_body("", [LARK], history)
    assert kimi["tools"][0]["type"] == "function"
    assert (
        kimi["messages"][1]["tool_calls"][0]["function"]["arguments"]
        == '{"input": "' + PATCH.replace("\n", "\\n") + '"}'
    )
    check_chat_body(kimi)


def responses_custom_call_reply() -> Reply:
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
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_p",
            "name": "apply_patch", "input": ""}  # fmt: skip
    events = [
        event({"type": "response.created", "response": {**response, "status": "in_progress"}}),
        event({"type": "response.output_item.added", "output_index": 0, "item": item}),
        event({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
               "output_index": 0, "delta": PATCH[:16]}),
        event({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1",
               "output_index": 0, "delta": PATCH[16:]}),
        event({"type": "response.output_item.done", "output_index": 0,
               "item": {**item, "input": PATCH}}),
        event({"type": "response.completed", "response": response}),
    ]  # fmt: skip
    return Reply(events=events)


async def test_a_streamed_custom_call_runs_with_its_text_and_goes_back_as_custom_output(
    wire: WireServer,
) -> None:
    applied.clear()
    provider = OpenAIResponses(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1")
    wire.closers.append(provider.aclose)
    wire.queue(
        responses_custom_call_reply(), responses_reply([{"type": "message", "pieces": ["Done."]}])
    )
    result = await agent_loop(provider, "", SimpleToolset([LARK]), user())
    assert applied == [PATCH]
    assert result.steps[0].tool_calls[0].type == "custom"
    sent = wire.requests[-1].body
    assert sent["input"][-2:] == [
        {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "applied"},
    ]
    check_responses_body(sent)


async def test_a_whole_chat_completion_with_a_custom_call_runs_it(wire: WireServer) -> None:
    applied.clear()
    completion = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5.5",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "call_p", "type": "custom",
                            "custom": {"name": "apply_patch", "input": PATCH}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip
    done = {**completion, "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Done."}}]}  # fmt: skip
    provider = OpenAIChat(model="gpt-5.5", api_key="k", base_url=wire.url + "/v1", stream=False)
    wire.closers.append(provider.aclose)
    wire.queue(Reply(body=completion), Reply(body=done))
    result = await agent_loop(provider, "", SimpleToolset([ApplyPatch()]), user())
    assert (applied, result.answer) == ([PATCH], "Done.")
    check_chat_body({**wire.requests[-1].body, "stream": True})
