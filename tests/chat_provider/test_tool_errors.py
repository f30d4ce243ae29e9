"""A failed tool call goes back as each API marks one, and stays readable text everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from _bodies import check_anthropic_body, check_chat_body, check_gemini_body, check_responses_body
from _cases import CALLS, TOOLS, user
from fixtures import anthropic as anthropic_fx
from fixtures import gemini as gemini_fx

from kosong import tool_result_to_message
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.message import Message
from kosong.tooling import ToolError, ToolResult

FAILED = ToolResult(
    tool_call_id="call_2",
    return_value=ToolError(message="division by zero", brief="failed"),
)


def history() -> list[Message]:
    return [
        *user(),
        Message(role="assistant", tool_calls=[CALLS[1]]),
        tool_result_to_message(FAILED),
    ]


def test_a_failed_result_is_a_tool_message_marked_as_an_error() -> None:
    message = tool_result_to_message(FAILED)
    assert message.is_error is True
    assert message.extract_text() == "ERROR: division by zero"
    ok = tool_result_to_message(
        ToolResult(
            tool_call_id="c",
            return_value=FAILED.return_value.model_copy(update={"is_error": False}),
        )
    )
    assert ok.is_error is None
    assert "is_error" not in Message(role="user", content="hi").model_dump(exclude_none=True)


def test_anthropic_sends_is_error_true_beside_the_text() -> None:
    body = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False).request_body(
        "", TOOLS, history()
    )
    assert body["messages"][-1] == {"role": "user", "content": [anthropic_fx.FAILED_RESULT]}
    check_anthropic_body({**body, "stream": True})


def test_gemini_sends_the_text_as_the_responses_error() -> None:
    body = Gemini(api_key="k").request_body("", TOOLS, history())
    assert body["contents"][-1] == {"role": "user", "parts": [gemini_fx.FAILED_RESPONSE]}
    check_gemini_body(body)


@pytest.mark.parametrize(
    "make", [Kimi, OpenAIChat, OpenAIResponses], ids=["kimi", "openai", "responses"]
)
def test_apis_without_an_error_flag_read_the_error_in_the_text(make: Any) -> None:
    provider = make(api_key="k") if make is Kimi else make(model="gpt-5.5", api_key="k")
    body = provider.request_body("", TOOLS, history())
    if isinstance(provider, OpenAIResponses):
        assert body["input"][-1] == {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "ERROR: division by zero",
        }
        check_responses_body(body)
    else:
        assert body["messages"][-1] == {
            "role": "tool",
            "content": "ERROR: division by zero",
            "tool_call_id": "call_2",
        }
        check_chat_body(body)
