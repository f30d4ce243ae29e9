"""Chat Completions tool-call deltas, however interleaved, each reach their own call."""

from __future__ import annotations

import asyncio
import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kosong import generate
from kosong.chat_provider import StreamedMessagePart
from kosong.chat_provider._openai_common import ToolCallAssembler
from kosong.chat_provider.mock import MockChatProvider
from kosong.message import Message, ToolCall, ToolCallPart

ARGUMENTS = st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=4)


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[list[str], list[tuple[int, str]]]:
    """Each call's arguments JSON, and its fragments interleaved across calls."""
    calls = [json.dumps(draw(ARGUMENTS)) for _ in range(draw(st.integers(1, 5)))]
    queues: list[list[str]] = []
    for text in calls:
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6)))
        bounds = [0, *cuts, len(text)]
        queues.append([text[a:b] for a, b in itertools.pairwise(bounds) if b > a])
    order: list[tuple[int, str]] = []
    while any(queues):
        index = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        order.append((index, queues[index].pop(0)))
    return calls, order


def assemble(order: list[tuple[int, str]]) -> list[StreamedMessagePart]:
    assembler = ToolCallAssembler()
    seen: set[int] = set()
    parts: list[StreamedMessagePart] = []
    for index, fragment in order:
        first = index not in seen
        seen.add(index)
        name = "tool" if first else None
        call_id = f"call_{index}" if first else None
        parts.extend(assembler.feed(index, call_id, name, fragment))
    parts.extend(assembler.finish())
    return parts


@settings(max_examples=200, deadline=None)
@given(interleaved())
def test_interleaved_fragments_reassemble_into_their_own_calls(
    case: tuple[list[str], list[tuple[int, str]]],
) -> None:
    calls, order = case
    parts = assemble(order)
    result = asyncio.run(generate(MockChatProvider(parts), "", [], [Message(role="user")]))
    got = {c.id: c.function.arguments for c in result.message.tool_calls or []}
    assert got == {f"call_{i}": text for i, text in enumerate(calls)}


def test_sequential_calls_stream_as_they_come() -> None:
    order = [(0, '{"a": '), (0, "1}"), (1, '{"b": 2}')]
    parts = assemble(order)
    assert isinstance(parts[0], ToolCall) and parts[0].function.arguments == '{"a": '
    assert parts[1] == ToolCallPart(arguments_part="1}")
    assert isinstance(parts[2], ToolCall) and parts[2].id == "call_1"
    assert parts[-1] == ToolCallPart(last=True)


def test_a_call_waits_while_the_current_one_is_incomplete() -> None:
    assembler = ToolCallAssembler()
    assert [type(p).__name__ for p in assembler.feed(0, "a", "t", '{"x": ')] == ["ToolCall"]
    assert list(assembler.feed(1, "b", "t", '{"y": 2}')) == []  # held back: call a goes on
    assert list(assembler.feed(0, None, None, "1}")) == [ToolCallPart(arguments_part="1}")]
    held = list(assembler.finish())
    assert isinstance(held[0], ToolCall) and held[0].function.arguments == '{"y": 2}'
