"""`Anthropic`: Claude through Anthropic's Messages API.

Needs the `anthropic` extra (the `anthropic` extra). The request is built from
plain dicts, never the SDK's request types (their shape changed in anthropic 2.x).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

from typing_extensions import override

from kosong._extras import install_hint
from kosong.chat_provider import (
    ChatProviderError,
    StreamedMessagePart,
    ThinkingEffort,
    TokenUsage,
)
from kosong.chat_provider._base import (
    CompletedMessage,
    HTTPProvider,
    SDKStream,
    api_key_from,
    arguments_object,
    header_of,
    highest_at_most,
    model_from,
    spec_of,
    split_body,
)
from kosong.chat_provider._media import data_url, media_placeholder
from kosong.formats import to_anthropic_tool
from kosong.message import (
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
)
from kosong.tooling import Tool

try:
    import anthropic
    import httpx2
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"the Anthropic provider needs the `anthropic` package: {install_hint('anthropic')}"
    ) from e

_ERRORS = (anthropic.AnthropicError, httpx2.HTTPError)

__all__ = ["THINKING_BUDGETS", "THINKING_MODELS", "Anthropic", "ThinkingSpec", "thinking_spec"]

THINKING_BUDGETS: dict[ThinkingEffort, int] = {
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 32000,
    "max": 64000,
}
"""The thinking budget (tokens) each effort asks for, on models that take `budget_tokens`."""

_EFFORTS: tuple[ThinkingEffort, ...] = ("low", "medium", "high", "xhigh", "max")


class ThinkingSpec(NamedTuple):
    """How a model family thinks: how thinking is asked for, which efforts, how it stops."""

    mode: Literal["adaptive", "budget"]
    """`adaptive`: `thinking: {"type": "adaptive"}` and `output_config.effort`; `budget`:
    `thinking: {"type": "enabled", "budget_tokens": N}` (`THINKING_BUDGETS`)."""
    efforts: tuple[ThinkingEffort, ...]
    """The `output_config.effort` values the model takes (empty: the field is not sent)."""
    off: Literal["disabled", "omit", "refuse"]
    """What "off" sends: `thinking: {"type": "disabled"}`, no `thinking` field at all (the
    model does not think by default), or nothing: the model always thinks (a ValueError)."""


_ALL = _EFFORTS
_NO_XHIGH: tuple[ThinkingEffort, ...] = ("low", "medium", "high", "max")

# Sources: https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking (which
# models take adaptive thinking, which refuse budget_tokens or "disabled"),
# https://platform.claude.com/docs/en/build-with-claude/effort (the effort levels of each
# model: "max" from Opus 4.6 / Sonnet 4.6 on, "xhigh" from Opus 4.7 on; Sonnet 4.5 and older
# take no effort) and https://platform.claude.com/docs/en/build-with-claude/extended-thinking.
# The first row whose prefix the model id starts with wins; a model found in none (older
# Claude models, unknown ids behind proxies) takes budget_tokens and no effort.
THINKING_MODELS: tuple[tuple[str, ThinkingSpec], ...] = (
    ("claude-mythos-preview", ThinkingSpec("adaptive", _NO_XHIGH, "refuse")),
    ("claude-mythos-5", ThinkingSpec("adaptive", _ALL, "refuse")),
    ("claude-fable-5", ThinkingSpec("adaptive", _ALL, "refuse")),
    ("claude-opus-5", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-sonnet-5", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-8", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-7", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-6", ThinkingSpec("adaptive", _NO_XHIGH, "disabled")),
    ("claude-sonnet-4-6", ThinkingSpec("adaptive", _NO_XHIGH, "disabled")),
    ("claude-opus-4-5", ThinkingSpec("budget", ("low", "medium", "high"), "disabled")),
)
"""Model family (an id prefix) → how it thinks; see the sources in the module."""

_DEFAULT_SPEC = ThinkingSpec("budget", (), "disabled")
_EPHEMERAL = {"type": "ephemeral"}


def thinking_spec(model: str) -> ThinkingSpec:
    """The `ThinkingSpec` of a model id (a cloud prefix such as `us.anthropic.` is skipped)."""
    return spec_of(model, "claude-", THINKING_MODELS, _DEFAULT_SPEC)


class Anthropic(HTTPProvider):
    """Claude through the Messages API.

    - `model`: required (or `ANTHROPIC_MODEL`); `api_key`: default `ANTHROPIC_API_KEY`;
      `base_url`: default `ANTHROPIC_BASE_URL`, else Anthropic's.
    - `default_max_tokens`: the answer's token limit (the API requires one); `max_tokens` in
      the generation kwargs replaces it.
    - `stream=False` makes one plain request instead of a streamed one (same parts).
    - `prompt_cache=True` (the default) asks for prompt caching: `cache_control: {"type":
      "ephemeral"}` on the system prompt, the last tool and the last block of the last
      message, so each turn of an agent loop reads the conversation so far from the cache.
      Cache reads and writes are counted in `TokenUsage`.
    - Tools go as `{name, description, input_schema}`, checked first against the API's rules;
      tool calls come and go as `tool_use` blocks with an object `input`; tool results as
      `tool_result` blocks (text and images), consecutive ones merged into one user message.
    - Thinking streams back as `ThinkPart`s with their signature (`encrypted`) and goes back
      as `thinking` blocks on later turns. `with_thinking(effort)` asks for it as the model
      family takes it (`THINKING_MODELS`): adaptive thinking with `output_config.effort`
      (clamped to the efforts the model takes), or `budget_tokens` (`THINKING_BUDGETS`).
    - `with_tool_choice`: "auto" → `{"type": "auto"}`, "none" → `{"type": "none"}`,
      "required" → `{"type": "any"}`, a name → `{"type": "tool", "name": ...}`; a forced call
      while thinking is a ValueError (the API takes only auto or none then).
    - Generation kwargs (`temperature`, `top_k`...) go in the request body, whether or not
      the SDK's method names them.
    - A system message in the middle of the history goes as a user message in
      `<system>...</system>`.

    Other keyword arguments go to `anthropic.AsyncAnthropic` (`timeout`, `max_retries`,
    `default_headers`, `http_client`...).
    """

    name = "anthropic"
    _key_variable = "ANTHROPIC_API_KEY"
    _sdk = anthropic
    _transport = httpx2
    _errors = _ERRORS
    _path = "v1/messages"
    _managed_fields = frozenset(
        {"model", "messages", "system", "stream", "tools", "tool_choice", "thinking"}
    )

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        default_max_tokens: int = 8192,
        stream: bool = True,
        prompt_cache: bool = True,
        tool_message_conversion: Literal["extract_text"] | None = None,
        metadata: Mapping[str, Any] | None = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(
            model_from(model, "ANTHROPIC_MODEL", "Anthropic"), generation_kwargs, stream=stream
        )
        key = api_key_from(api_key, "ANTHROPIC_API_KEY", "Anthropic")
        self._max_tokens = default_max_tokens
        self._prompt_cache = prompt_cache
        self._tool_message_conversion = tool_message_conversion
        self._metadata = dict(metadata) if metadata else None
        self.client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"), **client_kwargs
        )
        """The `anthropic.AsyncAnthropic` client (transport, retries, timeouts)."""

    def _check_options(self) -> None:
        spec = thinking_spec(self._model)
        if self._thinking == "off" and spec.off == "refuse":
            raise ValueError(
                f'Anthropic: with_thinking("off") cannot be sent to {self._model}, which '
                "always thinks (the API refuses thinking disabled there)"
            )
        thinks = (self._thinking not in (None, "off")) or spec.off == "refuse"
        if thinks and self._tool_choice not in (None, "auto", "none"):
            raise ValueError(
                f"Anthropic: tool_choice={self._tool_choice!r} forces a tool call, which the "
                "API refuses while thinking (only auto or none then): use "
                'with_thinking("off") or tool_choice="auto"'
            )

    def _thinking_fields(self, max_tokens: int) -> tuple[dict[str, Any], int]:
        effort = self._thinking
        spec = thinking_spec(self._model)
        if effort is None:
            return {}, max_tokens
        if effort == "off":
            return (
                {"thinking": {"type": "disabled"}} if spec.off == "disabled" else {}
            ), max_tokens
        fields: dict[str, Any] = {}
        if spec.mode == "adaptive":
            fields["thinking"] = {"type": "adaptive"}
        else:
            budget = THINKING_BUDGETS[effort]
            fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens = max(max_tokens, budget + 4096)  # budget_tokens must be below it
        if spec.efforts:
            accepted = sorted(spec.efforts, key=_EFFORTS.index)
            chosen = highest_at_most(accepted, _EFFORTS.index, _EFFORTS.index(effort))
            fields["output_config"] = {"effort": chosen}
        return fields, max_tokens

    @override
    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        self._check_tools(tools, dict.fromkeys((t.name for t in tools), "anthropic"))
        extra = dict(self._generation_kwargs)
        max_tokens = int(extra.pop("max_tokens", self._max_tokens))
        thinking, max_tokens = self._thinking_fields(max_tokens)
        messages = self._messages(history)
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        if system_prompt:
            body["system"] = (
                [{"type": "text", "text": system_prompt, "cache_control": _EPHEMERAL}]
                if self._prompt_cache
                else system_prompt
            )
        if tools:
            body["tools"] = [to_anthropic_tool(t) for t in tools]
            if self._prompt_cache:
                body["tools"][-1]["cache_control"] = _EPHEMERAL
        if self._tool_choice is not None:
            body["tool_choice"] = _tool_choice(self._tool_choice)
        if self._prompt_cache:
            _mark_last_block(messages)
        body.update(thinking)
        if self._metadata:
            body["metadata"] = self._metadata
        if self._stream:
            body["stream"] = True
        body.update(extra)
        return body

    def _messages(self, history: Sequence[Message]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in history:
            if message.role == "tool":
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id or "",
                    "content": self._tool_content(message.content),
                }
                previous = out[-1] if out else None
                if (
                    previous is not None
                    and previous["role"] == "user"
                    and previous["content"]
                    and all(b.get("type") == "tool_result" for b in previous["content"])
                ):
                    previous["content"].append(block)
                else:
                    out.append({"role": "user", "content": [block]})
            elif message.role == "assistant":
                blocks = _assistant_blocks(message)
                if blocks:
                    out.append({"role": "assistant", "content": blocks})
            elif message.role == "system":
                text = f"<system>{message.extract_text()}</system>"
                out.append({"role": "user", "content": [{"type": "text", "text": text}]})
            else:
                out.append({"role": "user", "content": _blocks(message.content)})
        return out

    def _tool_content(self, parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
        if self._tool_message_conversion == "extract_text":
            text = "\n".join(p.text for p in parts if isinstance(p, TextPart) and p.text)
            return [{"type": "text", "text": text}] if text else []
        return _blocks(parts)

    async def _send(self, body: dict[str, Any], url: str) -> AnthropicStream | CompletedMessage:
        known, rest = split_body(body, "model", "max_tokens", "messages", "stream")
        messages = self.client.messages
        if self._stream:
            stream = cast(Any, await messages.create(**known, extra_body=rest))
            return AnthropicStream(stream, lambda e: self._error(e, url))
        # An explicit timeout: the SDK refuses a plain request it guesses may take long.
        raw = cast(
            Any,
            await messages.with_raw_response.create(
                **known, extra_body=rest, timeout=self.client.timeout
            ),
        )
        message = await raw.parse()  # the anthropic SDK's raw response parses asynchronously
        return CompletedMessage(
            [part for block in message.content for part in _block_parts(block)],
            id=message.id,
            usage=_usage(message.usage, message.usage.output_tokens),
            finish_reason=message.stop_reason,
            request_id=header_of(raw, "request-id"),
        )


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "required":
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


def _mark_last_block(messages: list[dict[str, Any]]) -> None:
    """Put the cache breakpoint on the last block that can hold one (not a thinking block)."""
    if not messages:
        return
    for block in reversed(messages[-1]["content"]):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            block["cache_control"] = _EPHEMERAL
            return


def _block_parts(block: Any) -> list[StreamedMessagePart]:
    """The parts of one content block of a whole (non-streamed) message."""
    if block.type == "text":
        return [TextPart(text=block.text)] if block.text else []
    if block.type == "thinking":
        return [ThinkPart(think=block.thinking, encrypted=block.signature or None)]
    if block.type == "tool_use":
        arguments = json.dumps(block.input, ensure_ascii=False)
        return [
            ToolCall(
                id=block.id, function=ToolCall.FunctionBody(name=block.name, arguments=arguments)
            )
        ]
    return []


def _blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "image", "source": _image_source(part.image_url.url)})
        elif not isinstance(part, ThinkPart):
            out.append({"type": "text", "text": media_placeholder(part)})
    return out


def _image_source(url: str) -> dict[str, Any]:
    inline = data_url(url)
    if inline is not None:
        return {"type": "base64", "media_type": inline[0], "data": inline[1]}
    return {"type": "url", "url": url}


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ThinkPart):
            # A thinking block goes back only with its signature; the API refuses it without.
            if part.encrypted:
                blocks.append(
                    {"type": "thinking", "thinking": part.think, "signature": part.encrypted}
                )
        elif isinstance(part, TextPart):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.extend(_blocks([part]))
    for call in message.tool_calls or []:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": arguments_object(call),
            }
        )
    return blocks


class AnthropicStream(SDKStream):
    """A Messages API answer as `StreamedMessagePart`s."""

    _errors = _ERRORS

    def __init__(self, stream: Any, convert: Callable[[BaseException], ChatProviderError]) -> None:
        request_id = header_of(getattr(stream, "response", None), "request-id")
        super().__init__(stream, convert, request_id=request_id)
        self._input: Any = None

    async def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        tool_blocks: set[int] = set()
        async for event in self._stream:
            kind = event.type
            if kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    yield TextPart(text=delta.text)
                elif delta.type == "input_json_delta":
                    yield ToolCallPart(arguments_part=delta.partial_json)
                elif delta.type == "thinking_delta":
                    yield ThinkPart(think=delta.thinking)
                elif delta.type == "signature_delta":
                    yield ThinkPart(think="", encrypted=delta.signature)
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    tool_blocks.add(event.index)
                    yield ToolCall(
                        id=block.id,
                        function=ToolCall.FunctionBody(name=block.name, arguments=""),
                    )
                elif block.type == "text" and block.text:
                    yield TextPart(text=block.text)
            elif kind == "content_block_stop":
                if event.index in tool_blocks:
                    yield ToolCallPart(last=True)
            elif kind == "message_start":
                self.id = event.message.id
                self._input = event.message.usage  # the input tokens are counted here only
                self.usage = _usage(self._input, self._input.output_tokens)
            elif kind == "message_delta":
                self.finish_reason = event.delta.stop_reason or self.finish_reason
                self.usage = _usage(self._input, event.usage.output_tokens)


def _usage(usage: Any, output_tokens: int | None) -> TokenUsage:
    """`TokenUsage` from the input counts of a Messages API `usage`, and `output_tokens`."""
    return TokenUsage(
        input_other=(usage.input_tokens or 0) if usage else 0,
        output=output_tokens or 0,
        input_cache_read=getattr(usage, "cache_read_input_tokens", None) or 0,
        input_cache_creation=getattr(usage, "cache_creation_input_tokens", None) or 0,
    )
