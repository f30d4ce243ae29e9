"""ScriptedChatProvider: what it records and counts over a whole conversation."""

from __future__ import annotations

from typing import Any

import pytest

from kosong import agent_loop, generate
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset


@tool
def echo(text: str) -> str:
    """Say the text back."""
    return text


def json_tokens(history: list[Message]) -> int:
    return sum(len(m.model_dump_json()) for m in history) // 4


async def test_each_message_of_a_conversation_is_counted_once_and_never_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dumped: list[int] = []
    dump = Message.model_dump_json

    def counting_dump(self: Message, **options: Any) -> str:
        dumped.append(id(self))
        return dump(self, **options)

    steps = 12
    model = ScriptedChatProvider(
        [[call("echo", {"text": str(i)})] for i in range(steps)] + [["ok"]]
    )
    history = [Message(role="user", content="go")]
    monkeypatch.setattr(Message, "model_dump_json", counting_dump)
    result = await agent_loop(model, "", SimpleToolset([echo]), history, max_steps=steps + 1)
    monkeypatch.undo()

    assert result.stop_reason == "answered" and len(model.requests) == steps + 1
    # Linear: every message is read once over the whole conversation, not once per request.
    assert len(dumped) == len(set(dumped)) == len(model.requests[-1].history)
    for request, step in zip(model.requests, result.steps, strict=True):
        # The very messages given, not copies; the input estimate as if all were counted.
        assert request.history[0] is history[0]
        assert step.usage is not None and step.usage.input_other == json_tokens(request.history)


async def test_a_history_that_is_not_the_last_one_continued_is_counted_whole() -> None:
    model = ScriptedChatProvider([["a"], ["b"], ["c"]])
    long = [Message(role="user", content="x" * 400), Message(role="assistant", content="y")]
    other = [Message(role="user", content="z")]
    for history in (long, other, long):
        answer = await generate(model, "", [], history)
        assert answer.usage is not None and answer.usage.input_other == json_tokens(history)
