"""`ScriptedChatProvider`: an offline model that plays scripted turns, for demos and tests.

Each `generate()` plays the next turn of the script. A turn is a list of items streamed in
order, or a function of the history that returns one (so an answer can quote the tool results
it was given), or a `ChatProviderError` that the request itself raises:

- a `str` is text, a `ThinkPart` thinking; both stream in fragments of `chunk_size` characters;
- a `ToolCall` (`call("add", {"a": 1})` builds one) streams as the call and then fragments of
  its arguments, the last one marked `last=True`;
- any other `ContentPart` streams as it is;
- an exception is raised at that point of the stream, as a connection that breaks mid-answer.

```python
provider = ScriptedChatProvider([
    ["Let me add that.", call("add", {"a": 1, "b": 2})],
    lambda history: [f"The sum is {history[-1].extract_text()}."],
])
```

Between fragments the stream yields to the event loop (or sleeps `chunk_delay` seconds), as a
network stream would, so tools started from a tool call run while the rest streams.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from kosong.chat_provider import (
    ChatProviderError,
    StreamedMessagePart,
    TokenUsage,
    ToolChoice,
)
from kosong.chat_provider._base import ProviderBase
from kosong.message import ContentPart, Message, TextPart, ThinkPart, ToolCall, ToolCallPart
from kosong.tooling import Tool

__all__ = ["ScriptItem", "ScriptedChatProvider", "ScriptedRequest", "Turn", "call"]

ScriptItem: TypeAlias = str | ContentPart | ToolCall | BaseException
"""One item of a scripted turn (see the module doc)."""

Turn: TypeAlias = (
    Sequence[ScriptItem] | Callable[[Sequence[Message]], Sequence[ScriptItem]] | ChatProviderError
)
"""A scripted answer: its items, a function of the history giving them, or an error to raise."""


def call(name: str, arguments: Any = None, *, id: str | None = None) -> ToolCall:
    """A tool call for a script: `arguments` is JSON-encoded unless it is already a string.

    Without an `id`, the provider numbers calls `call_<turn>_<n>` when it plays them.
    """
    encoded = (
        arguments
        if isinstance(arguments, str) or arguments is None
        else json.dumps(arguments, ensure_ascii=False)
    )
    return ToolCall(id=id or "", function=ToolCall.FunctionBody(name=name, arguments=encoded))


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """What one `generate()` was asked, as the provider received it."""

    system_prompt: str
    """The system prompt."""
    tools: list[Tool]
    """The tool definitions."""
    history: list[Message]
    """The history, as a list of the messages given (generate and step never change them)."""
    tool_choice: ToolChoice | None = None
    """The tool choice asked for (`with_tool_choice`, or `step(..., tool_choice=...)`)."""
    generation_kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    """The generation kwargs asked for (`with_generation_kwargs`, or per-call overrides)."""


@dataclass(slots=True)
class _Script:
    turns: list[Turn]
    played: int = 0
    requests: list[ScriptedRequest] = field(default_factory=list[ScriptedRequest])
    counted: list[Message] = field(default_factory=list[Message])
    """The history of the last request, whose JSON length is `counted_chars`."""
    counted_chars: int = 0

    def input_chars(self, history: Sequence[Message]) -> int:
        """The JSON length of `history`, counting only what the last request did not have.

        A conversation's requests each repeat the one before and add to it: counting every
        message again would make a conversation quadratic in its length.
        """
        known = len(self.counted)
        if len(history) >= known and history[:known] == self.counted:  # the same objects
            chars = self.counted_chars + _json_chars(history[known:])
        else:
            chars = _json_chars(history)
        self.counted, self.counted_chars = list(history), chars
        return chars


class ScriptedChatProvider(ProviderBase):
    """An offline, deterministic model that plays `turns`, one per `generate()` call.

    Copies made by `with_thinking` (and `with_tool_choice`, `with_generation_kwargs`) share
    the script, so a conversation can switch options; each request records the tool choice
    and generation kwargs it was made with. With the effort "off", thinking items are not
    streamed.
    """

    name = "scripted"

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        chunk_size: int = 8,
        chunk_delay: float = 0.0,
        model: str = "scripted-model",
    ) -> None:
        """Play `turns` in fragments of `chunk_size` characters, `chunk_delay` s apart.

        Raises:
            ValueError: `chunk_size` is below 1 or `chunk_delay` is negative.
            TypeError: a turn, or an item of one, is not of a kind the script knows.
        """
        for number, turn in enumerate(turns):
            if not callable(turn) and not isinstance(turn, ChatProviderError):
                _check_items(turn, number)
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        if chunk_delay < 0:
            raise ValueError(f"chunk_delay cannot be negative, got {chunk_delay}")
        super().__init__(model)
        self._script = _Script(list(turns))
        self.chunk_size = chunk_size
        """Characters per streamed fragment."""
        self.chunk_delay = chunk_delay
        """Seconds between fragments (0: just yield to the event loop)."""

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request received so far, in order."""
        return self._script.requests

    @property
    def turns_left(self) -> int:
        """How many scripted turns have not been played yet."""
        return len(self._script.turns) - self._script.played

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> _ScriptedStream:
        """Play the next turn.

        Raises:
            ChatProviderError: the script has no turn left, or the turn is an error.
        """
        script = self._script
        script.requests.append(
            ScriptedRequest(
                system_prompt,
                list(tools),
                list(history),
                self._tool_choice,
                dict(self._generation_kwargs),
            )
        )
        if script.played >= len(script.turns):
            raise ChatProviderError(
                f"the script has no turn left: all {len(script.turns)} were played"
            )
        number = script.played
        turn = script.turns[number]
        script.played += 1
        if isinstance(turn, ChatProviderError):
            raise turn
        items = list(turn(history)) if callable(turn) else list(turn)
        _check_items(items, number)
        return _ScriptedStream(self, number, items, script.input_chars(history) // 4)


class _ScriptedStream:
    def __init__(
        self,
        provider: ScriptedChatProvider,
        number: int,
        items: list[ScriptItem],
        input_tokens: int,
    ) -> None:
        self._provider = provider
        self._number = number
        self._items = items
        self.id = f"scripted-{number}"
        self.finish_reason: str | None = None
        self.usage: TokenUsage | None = None
        self._input = input_tokens
        self._output = 0
        self._calls = 0

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        for part in self._parts():
            yield part
            await asyncio.sleep(self._provider.chunk_delay)
        self.finish_reason = "tool_calls" if self._calls else "stop"
        self.usage = TokenUsage(input_other=self._input, output=max(1, self._output // 4))

    def _parts(self) -> Iterator[StreamedMessagePart]:
        thinking = self._provider.thinking_effort != "off"
        for item in self._items:
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, str):
                yield from (TextPart(text=piece) for piece in self._pieces(item))
            elif isinstance(item, ThinkPart):
                if thinking:
                    yield from (ThinkPart(think=piece) for piece in self._pieces(item.think))
                    if item.encrypted is not None:
                        yield ThinkPart(think="", encrypted=item.encrypted)
            elif isinstance(item, ToolCall):
                self._calls += 1
                call_id = item.id or f"call_{self._number}_{self._calls}"
                yield ToolCall(id=call_id, function=ToolCall.FunctionBody(name=item.function.name))
                pieces = self._pieces(item.function.arguments or "")
                for i, piece in enumerate(pieces):
                    yield ToolCallPart(arguments_part=piece, last=i == len(pieces) - 1)
            else:
                yield item.model_copy(deep=True)

    def _pieces(self, text: str) -> list[str]:
        """`text` in fragments of `chunk_size` (one empty fragment for none), counted as output."""
        self._output += len(text)
        size = self._provider.chunk_size
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _json_chars(messages: Sequence[Message]) -> int:
    return sum(len(m.model_dump_json()) for m in messages)


def _check_items(items: object, number: int) -> None:
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise TypeError(
            f"turn {number} of the script is a {type(items).__name__}; a turn is a list of items, "
            "a function of the history returning one, or a ChatProviderError"
        )
    for item in cast(Sequence[object], items):
        if not isinstance(item, str | ContentPart | ToolCall | BaseException):
            raise TypeError(
                f"turn {number} of the script holds a {type(item).__name__}; an item is a str, "
                "a ContentPart, a ToolCall (see `call`) or an exception to raise"
            )
