"""`OpenAIResponses`: OpenAI's Responses API (exported by `kosong.chat_provider.openai`)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

from kosong.chat_provider import ChatProviderError, StreamedMessagePart, TokenUsage
from kosong.chat_provider._base import (
    HTTPProvider,
    api_key_from,
    check_dialect,
    model_from,
    request_id_of,
)
from kosong.chat_provider._openai_common import (
    ToolCallAssembler,
    ToolMessageConversion,
    convert_error,
    httpx2,
    openai,
    part_as_text,
)
from kosong.dialects import Dialect
from kosong.formats import to_openai_responses_tool
from kosong.message import ContentPart, ImageURLPart, Message, TextPart, ThinkPart
from kosong.tooling import Tool

__all__ = ["OpenAIResponses"]


class OpenAIResponses(HTTPProvider):
    """OpenAI's Responses API, stateless (`store: false`): the whole history goes each time.

    - `model`: required (or `OPENAI_MODEL`); `api_key`: default `OPENAI_API_KEY`;
      `base_url`: default `OPENAI_BASE_URL`, else OpenAI's.
    - The system prompt and system messages go as `developer` messages; tool calls as
      `function_call` items, tool results as `function_call_output` (text and images).
    - Thinking streams back as `ThinkPart`s (reasoning summaries); `with_thinking(effort)`
      sends `reasoning.effort`. Reasoning is not sent back on later turns.
    - Every tool states `strict` (the API makes a function strict when it is left out);
      a strict tool is checked against strict mode's rules before the request is sent.

    Other keyword arguments go to `openai.AsyncOpenAI`.
    """

    name = "openai-responses"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        tool_message_conversion: ToolMessageConversion = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(model_from(model, "OPENAI_MODEL", "OpenAIResponses"), generation_kwargs)
        self._tool_message_conversion = tool_message_conversion
        self.client: openai.AsyncOpenAI = openai.AsyncOpenAI(
            api_key=api_key_from(api_key, "OPENAI_API_KEY", "OpenAIResponses"),
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            **client_kwargs,
        )
        """The `openai.AsyncOpenAI` client."""

    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The request body this provider sends."""
        dialects: dict[str, Dialect] = {
            t.name: "openai-strict" if t.strict else "openai" for t in tools
        }
        check_dialect("OpenAIResponses", tools, dialects)
        items: list[dict[str, Any]] = []
        if system_prompt:
            items.append({"role": "developer", "content": system_prompt})
        for message in history:
            items.extend(self._items(message))
        body: dict[str, Any] = {
            "model": self._model,
            "input": items,
            "stream": True,
            "store": False,
            **self._generation_kwargs,
        }
        if tools:
            body["tools"] = [to_openai_responses_tool(t) for t in tools]
        if self._thinking is not None:
            effort = "none" if self._thinking == "off" else self._thinking
            body["reasoning"] = {"effort": effort, "summary": "auto"}
        return body

    def _items(self, message: Message) -> list[dict[str, Any]]:
        if message.role == "tool":
            return [
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": self._tool_output(message.content),
                }
            ]
        if message.role == "assistant":
            out: list[dict[str, Any]] = []
            text = "".join(p.text for p in message.content if isinstance(p, TextPart))
            if text.strip():
                out.append({"role": "assistant", "content": text})
            for call in message.tool_calls or []:
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.function.name,
                        "arguments": call.function.arguments or "{}",
                    }
                )
            return out
        role = "developer" if message.role == "system" else message.role
        return [{"role": role, "content": _input_content(message.content)}]

    def _tool_output(self, parts: Sequence[ContentPart]) -> str | list[dict[str, Any]]:
        if self._tool_message_conversion == "extract_text" or all(
            isinstance(p, TextPart) for p in parts
        ):
            return "".join(part_as_text(p) for p in parts)
        return _input_content(parts)

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> ResponsesStream:
        """Send the request and return the answer's stream.

        Raises:
            DialectError: the API would reject one of the tool definitions (not sent).
            ChatProviderError: the request failed.
        """
        body = self.request_body(system_prompt, tools, history)
        try:
            stream = cast(Any, await self.client.responses.create(**body))
        except (openai.OpenAIError, httpx2.HTTPError) as e:
            raise convert_error(e) from e
        return ResponsesStream(stream)


def _input_content(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "input_image", "image_url": part.image_url.url, "detail": "auto"})
        elif not isinstance(part, ThinkPart):
            out.append({"type": "input_text", "text": part_as_text(part)})
    return out


class ResponsesStream:
    """A Responses API answer as `StreamedMessagePart`s."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.id: str | None = None
        self.usage: TokenUsage | None = None
        self.finish_reason: str | None = None
        self.request_id = request_id_of(stream, "x-request-id")

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        calls = ToolCallAssembler()
        try:
            async for event in self._stream:
                kind = event.type
                if kind == "response.output_text.delta":
                    yield TextPart(text=event.delta)
                elif kind in (
                    "response.reasoning_summary_text.delta",
                    "response.reasoning_text.delta",
                ):
                    yield ThinkPart(think=event.delta)
                elif kind == "response.output_item.added" and event.item.type == "function_call":
                    item = event.item
                    for part in calls.feed(
                        event.output_index, item.call_id, item.name, item.arguments
                    ):
                        yield part
                elif kind == "response.function_call_arguments.delta":
                    for part in calls.feed(event.output_index, None, None, event.delta):
                        yield part
                elif kind == "response.output_item.done" and event.item.type == "function_call":
                    for part in calls.done(event.output_index):
                        yield part
                elif kind in ("response.completed", "response.incomplete", "response.created"):
                    self._read_response(event.response)
                elif kind == "response.failed":
                    self._read_response(event.response)
                    error = event.response.error
                    raise ChatProviderError(
                        f"the response failed: {error.message if error else 'no reason given'}"
                    )
                elif kind == "error":
                    raise ChatProviderError(f"the API reported an error: {event.message}")
        except (openai.OpenAIError, httpx2.HTTPError) as e:
            raise convert_error(e) from e
        for part in calls.finish():
            yield part

    def _read_response(self, response: Any) -> None:
        self.id = response.id or self.id
        if response.status not in (None, "in_progress"):
            details = getattr(response, "incomplete_details", None)
            self.finish_reason = getattr(details, "reason", None) or response.status
        usage = response.usage
        if usage is not None:
            details = usage.input_tokens_details
            cached = (details.cached_tokens if details else 0) or 0
            self.usage = TokenUsage(
                input_other=usage.input_tokens - cached,
                output=usage.output_tokens,
                input_cache_read=cached,
            )
