"""`generate`: one streamed answer of a chat provider, merged into a message."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from kosong._telemetry import model_call
from kosong.chat_provider import (
    APIEmptyResponseError,
    ChatProvider,
    StreamedMessage,
    StreamedMessagePart,
    TokenUsage,
    ToolChoice,
)
from kosong.chat_provider.native import NativeToolSpec
from kosong.message import ContentPart, Message, TextPart, ThinkPart, ToolCall, ToolCallPart
from kosong.tooling import Tool

__all__ = ["Callback", "GenerateResult", "call_back", "for_call", "generate"]

logger = logging.getLogger("kosong.generate")

_T = TypeVar("_T")
_R = TypeVar("_R")

Callback: TypeAlias = Callable[[_T], Awaitable[None] | None]
"""A callback that may be a plain function or an async one."""


@dataclass(frozen=True, slots=True)
class GenerateResult:
    """One answer of the model, merged from its stream."""

    id: str | None
    """The response's id, when the provider gives one."""
    message: Message
    """The assistant message: its content parts and tool calls."""
    usage: TokenUsage | None
    """Tokens used, when the provider reports them."""
    provider_trace_id: str | None = None
    """The provider's trace id of the answer, when it sent one (Moonshot's `x-trace-id`)."""
    request_id: str | None = None
    """The service's id of the HTTP request, when it sent one."""
    finish_reason: str | None = None
    """Why the model stopped, in the provider's words ("stop", "tool_calls", "end_turn"...)."""

    @property
    def trace_id(self) -> str | None:
        """The older name of `provider_trace_id`, kept for code written for it."""
        return self.provider_trace_id


async def call_back(callback: Callable[[_T], Awaitable[_R] | _R] | None, value: _T) -> _R | None:
    """Call `callback` with `value`, awaiting it when it is async; its answer (None if none)."""
    if callback is None:
        return None
    result = callback(value)
    if inspect.isawaitable(result):
        return await result
    return result


async def generate(
    chat_provider: ChatProvider,
    system_prompt: str,
    tools: Sequence[Tool],
    history: Sequence[Message],
    *,
    on_message_part: Callback[StreamedMessagePart] | None = None,
    on_tool_call: Callback[ToolCall] | None = None,
    on_provider_trace_id: Callback[str | None] | None = None,
    tool_choice: ToolChoice | None = None,
    generation_overrides: Mapping[str, Any] | None = None,
    on_trace_id: Callback[str | None] | None = None,
    parallel_tool_calls: bool | None = None,
    native_tools: Sequence[NativeToolSpec] | None = None,
) -> GenerateResult:
    """Ask the model for one answer and merge its stream into an assistant message.

    Streamed pieces are merged as they arrive: text with text, thinking with thinking, each
    fragment of a tool call's arguments into its call. `on_message_part` sees every piece as
    it arrives, unmerged (for a live display; what it does to a piece never reaches the
    message); `on_tool_call` gets each tool call the moment it
    is complete: when the provider marks its last fragment, when the next part or call
    starts, or when the stream ends. A call whose arguments never became valid JSON is handed
    over all the same (a toolset answers it with a parse error the model can read). Both
    callbacks may be sync or async, as is `on_provider_trace_id` (its older name
    `on_trace_id` is accepted too), called once with the provider's trace id (None when it
    sent none) before the first part. `history` is not changed.

    `tool_choice` ("auto", "none", "required", a tool's name or `AllowedTools`),
    `parallel_tool_calls` (False: at most one call per answer) and `generation_overrides`
    (request fields such as `temperature` or `max_tokens`) apply to this call only: the
    provider's `with_tool_choice` / `with_parallel_tool_calls` / `with_generation_kwargs` make
    a copy for it. So do `native_tools` (`kosong.chat_provider.native`: tools the provider
    runs itself, whose blocks arrive as `NativeToolPart`s and never reach `on_tool_call`).

    Raises:
        ChatProviderError: the provider failed (`APIStatusError`, `APIConnectionError`...).
        APIEmptyResponseError: the answer had no text and no tool call (thinking alone does
            not count).
        ValueError: the provider cannot send `tool_choice` or an override (nothing sent).
        TypeError: the provider takes no per-call `tool_choice` or overrides, or both
            `on_provider_trace_id` and `on_trace_id` were given.
    """
    if on_trace_id is not None:
        if on_provider_trace_id is not None:
            raise TypeError("give on_provider_trace_id or its older name on_trace_id, not both")
        on_provider_trace_id = on_trace_id
    provider = for_call(
        chat_provider, tool_choice, generation_overrides, parallel_tool_calls, native_tools
    )
    with model_call(provider, system_prompt, tools, history) as traced:
        stream = traced.watch(await provider.generate(system_prompt, tools, history))
        result = await _merged(stream, on_message_part, on_tool_call, on_provider_trace_id)
        traced.answered(result)
    return result


async def _merged(
    stream: StreamedMessage,
    on_message_part: Callback[StreamedMessagePart] | None,
    on_tool_call: Callback[ToolCall] | None,
    on_provider_trace_id: Callback[str | None] | None,
) -> GenerateResult:
    """The answer `stream` gives, merged (see `generate`)."""
    trace_id = _optional_str(stream, "provider_trace_id") or _optional_str(stream, "trace_id")
    if on_provider_trace_id is not None:
        await call_back(on_provider_trace_id, trace_id)
    content: list[ContentPart] = []
    tool_calls: list[ToolCall] = []
    pending: StreamedMessagePart | None = None

    async def flush() -> None:
        if isinstance(pending, ContentPart):
            content.append(pending)
        elif isinstance(pending, ToolCall):
            tool_calls.append(pending)
            await call_back(on_tool_call, pending)
        elif pending is not None:
            logger.debug("a tool-call fragment with no call before it was dropped")

    async for part in stream:
        if pending is not None and pending.merge_in_place(part):  # `part` is only read
            if on_message_part is not None:
                await call_back(on_message_part, part)
            if isinstance(pending, ToolCall) and isinstance(part, ToolCallPart) and part.last:
                await flush()
                pending = None
            continue
        # The parts a stream yields are new objects, generate's own, so the one that starts a
        # part is merged into as it is; when a callback is shown it, the callback may keep or
        # change it, so the message gets a copy (one per part, not per fragment).
        started = part
        if on_message_part is not None:
            started = part.model_copy(deep=True)
            await call_back(on_message_part, part)
        await flush()
        pending = started
    await flush()

    if not tool_calls and not any(
        (isinstance(p, TextPart) and p.text.strip()) or not isinstance(p, TextPart | ThinkPart)
        for p in content
    ):
        raise APIEmptyResponseError(
            "the API returned a response containing only thinking content, without any text "
            "or tool call: the stream was likely interrupted, or the output token budget "
            "spent while the model reasoned"
            if content
            else "the API returned an empty response: no text and no tool call"
        )
    message = Message(role="assistant", content=content, tool_calls=tool_calls or None)
    return GenerateResult(
        id=stream.id,
        message=message,
        usage=stream.usage,
        provider_trace_id=trace_id,
        request_id=_optional_str(stream, "request_id"),
        finish_reason=_optional_str(stream, "finish_reason"),
    )


def for_call(
    provider: ChatProvider,
    tool_choice: ToolChoice | None,
    generation_overrides: Mapping[str, Any] | None,
    parallel_tool_calls: bool | None = None,
    native_tools: Sequence[NativeToolSpec] | None = None,
) -> ChatProvider:
    """The provider with this call's options (a copy; itself if none).

    Raises:
        TypeError: the provider has no `with_tool_choice` / `with_generation_kwargs` /
            `with_parallel_tool_calls` / `with_native_tools`.
        ValueError: the provider cannot send them (its `with_...` method says why).
    """
    if native_tools:
        provider = _option(provider, "with_native_tools", "native_tools")(native_tools)
    if parallel_tool_calls is not None:
        provider = _option(provider, "with_parallel_tool_calls", "parallel_tool_calls")(
            parallel_tool_calls
        )
    if generation_overrides:
        provider = _option(provider, "with_generation_kwargs", "generation_overrides")(
            **generation_overrides
        )
    if tool_choice is not None:
        provider = _option(provider, "with_tool_choice", "tool_choice")(tool_choice)
    return provider


def _option(provider: ChatProvider, method: str, option: str) -> Callable[..., ChatProvider]:
    found = getattr(provider, method, None)
    if found is None:
        raise TypeError(f"{type(provider).__name__} takes no {option}: it has no {method} method")
    return found


def _optional_str(stream: Any, name: str) -> str | None:
    value = getattr(stream, name, None)
    return value if isinstance(value, str) else None
