"""`Anthropic`: Claude through Anthropic's Messages API.

Needs the `anthropic` extra (`pip install 'kosong[anthropic]'`). The request is built from
plain dicts, never the SDK's request types (their shape changed in anthropic 2.x).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, cast

from kosong.chat_provider import (
    ChatProviderError,
    StreamedMessagePart,
    ThinkingEffort,
    TokenUsage,
)
from kosong.chat_provider._base import (
    HTTPProvider,
    api_key_from,
    check_dialect,
    model_from,
    request_id_of,
    sdk_error,
)
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
        "the Anthropic provider needs the `anthropic` package: pip install 'kosong[anthropic]'"
    ) from e

__all__ = ["THINKING_BUDGETS", "Anthropic"]

THINKING_BUDGETS: dict[ThinkingEffort, int] = {
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 32000,
    "max": 64000,
}
"""The thinking budget (tokens) each effort asks for."""


class Anthropic(HTTPProvider):
    """Claude through the Messages API.

    - `model`: required (or `ANTHROPIC_MODEL`); `api_key`: default `ANTHROPIC_API_KEY`;
      `base_url`: default `ANTHROPIC_BASE_URL`, else Anthropic's.
    - `default_max_tokens`: the answer's token limit (the API requires one).
    - Tools go as `{name, description, input_schema}`, checked first against the API's rules;
      tool calls come and go as `tool_use` blocks with an object `input`; tool results as
      `tool_result` blocks, consecutive ones merged into one user message.
    - Thinking streams back as `ThinkPart`s with their signature (`encrypted`) and goes back
      as `thinking` blocks on later turns. `with_thinking(effort)` sets a budget
      (`THINKING_BUDGETS`); "off" disables thinking.
    - A system message in the middle of the history goes as a user message in
      `<system>...</system>`.

    Other keyword arguments go to `anthropic.AsyncAnthropic` (`timeout`, `max_retries`,
    `default_headers`, `http_client`...).
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        default_max_tokens: int = 8192,
        tool_message_conversion: Literal["extract_text"] | None = None,
        metadata: Mapping[str, Any] | None = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(model_from(model, "ANTHROPIC_MODEL", "Anthropic"), generation_kwargs)
        key = api_key_from(api_key, "ANTHROPIC_API_KEY", "Anthropic")
        self._max_tokens = default_max_tokens
        self._tool_message_conversion = tool_message_conversion
        self._metadata = dict(metadata) if metadata else None
        self.client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"), **client_kwargs
        )
        """The `anthropic.AsyncAnthropic` client (transport, retries, timeouts)."""

    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The request body this provider sends (plain dicts).

        Raises:
            DialectError: the API would reject one of the tool definitions.
        """
        check_dialect("Anthropic", tools, dict.fromkeys((t.name for t in tools), "anthropic"))
        max_tokens = self._max_tokens
        body: dict[str, Any] = {"model": self._model, "messages": self._messages(history)}
        if system_prompt:
            body["system"] = system_prompt
        if tools:
            body["tools"] = [to_anthropic_tool(t) for t in tools]
        if self._thinking == "off":
            body["thinking"] = {"type": "disabled"}
        elif self._thinking is not None:
            budget = THINKING_BUDGETS[self._thinking]
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens = max(max_tokens, budget + 4096)
        if self._metadata:
            body["metadata"] = self._metadata
        body["max_tokens"] = max_tokens
        body["stream"] = True
        body.update(self._generation_kwargs)
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
                text = "".join(p.text for p in message.content if isinstance(p, TextPart))
                out.append(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": f"<system>{text}</system>"}],
                    }
                )
            else:
                out.append({"role": "user", "content": _blocks(message.content)})
        return out

    def _tool_content(self, parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
        if self._tool_message_conversion == "extract_text":
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            return [{"type": "text", "text": text}] if text else []
        return _blocks(parts)

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> AnthropicStream:
        """Send the request and return the answer's stream.

        Raises:
            DialectError: the API would reject one of the tool definitions (not sent).
            ChatProviderError: the request failed.
        """
        body = self.request_body(system_prompt, tools, history)
        try:
            stream = cast(Any, await self.client.messages.create(**body))
        except (anthropic.AnthropicError, httpx2.HTTPError) as e:
            raise _convert_error(e) from e
        return AnthropicStream(stream)


def _blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "image", "source": _image_source(part.image_url.url)})
        elif not isinstance(part, ThinkPart):
            out.append({"type": "text", "text": f"[{part.type} part]"})
    return out


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        header, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": header, "data": data}
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
            {"type": "tool_use", "id": call.id, "name": call.function.name, "input": _input(call)}
        )
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.function.arguments or "{}")
    except ValueError:
        return {}
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _convert_error(error: BaseException) -> ChatProviderError:
    return sdk_error(error, anthropic, httpx2)


class AnthropicStream:
    """A Messages API answer as `StreamedMessagePart`s."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.id: str | None = None
        self.usage: TokenUsage | None = None
        self.finish_reason: str | None = None
        self.request_id = request_id_of(stream, "request-id")
        self._input = (0, 0, 0)

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        tool_blocks: set[int] = set()
        try:
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
                    message = event.message
                    self.id = message.id
                    usage = message.usage
                    self._input = (
                        usage.input_tokens or 0,
                        getattr(usage, "cache_read_input_tokens", None) or 0,
                        getattr(usage, "cache_creation_input_tokens", None) or 0,
                    )
                    self._set_usage(usage.output_tokens or 0)
                elif kind == "message_delta":
                    self.finish_reason = event.delta.stop_reason or self.finish_reason
                    self._set_usage(event.usage.output_tokens or 0)
        except (anthropic.AnthropicError, httpx2.HTTPError) as e:
            raise _convert_error(e) from e

    def _set_usage(self, output: int) -> None:
        other, read, created = self._input
        self.usage = TokenUsage(
            input_other=other, output=output, input_cache_read=read, input_cache_creation=created
        )
