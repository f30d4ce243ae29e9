"""`OpenAIResponses`: OpenAI's Responses API (exported by `kosong.chat_provider.openai`)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, cast

from typing_extensions import override

from kosong.chat_provider import (
    AllowedTools,
    ChatProviderError,
    StreamedMessagePart,
    TokenUsage,
)
from kosong.chat_provider._base import (
    CompletedMessage,
    SDKStream,
    header_of,
    json_object,
    split_body,
)
from kosong.chat_provider._media import media_placeholder
from kosong.chat_provider._native_parts import for_provider
from kosong.chat_provider._openai_common import (
    SDK_ERRORS,
    OpenAIProvider,
    ToolCallAssembler,
    json_schema,
    openai_effort,
)
from kosong.chat_provider._tool_entries import Described, describe
from kosong.chat_provider.native import native_entries
from kosong.formats import to_openai_responses_tool
from kosong.message import (
    ContentPart,
    ImageURLPart,
    Message,
    NativeToolPart,
    TextPart,
    ThinkPart,
    ToolCall,
)
from kosong.tooling import Tool

__all__ = ["OpenAIResponses"]

_PROVIDER = "openai-responses"
_OPAQUE = re.compile(r"gAAAAA[A-Za-z0-9_\-=]+")
"""OpenAI's encrypted reasoning content, as the published package kept it in a `ThinkPart`: a
Fernet token (its version byte 0x80 reads `gAAAAA` in URL-safe base64). Another provider's
signature does not look like one, so it is never sent here."""


class OpenAIResponses(OpenAIProvider):
    """OpenAI's Responses API, stateless (`store: false`): the whole history goes each time.

    - `model`: required (or `OPENAI_MODEL`); `api_key`: as `OpenAIChat` takes it;
      `base_url`: default `OPENAI_BASE_URL`, else OpenAI's.
    - `stream=False` makes one plain request instead of a streamed one (same parts).
    - The system prompt and system messages go as `developer` messages; tool calls as
      `function_call` items, tool results as `function_call_output` (a string for one text,
      else a list of `input_text` / `input_image` parts; audio and video as a placeholder).
    - `with_thinking(effort)` sends `reasoning: {"effort", "summary": "auto"}` and asks for
      `include: ["reasoning.encrypted_content"]`: the summaries stream back as `ThinkPart`s
      and each reasoning item (its id and encrypted content, kept in the part's `encrypted`)
      goes back on later turns, so a reasoning model keeps its chain of thought across tool
      turns without server-side storage. "off" leaves `reasoning` out.
    - `with_tool_choice`: "auto", "none", "required", `{"type": "function", "name": ...}`, or
      for `AllowedTools` `{"type": "allowed_tools", "mode", "tools"}`;
      `with_parallel_tool_calls(bool)` sends `parallel_tool_calls`.
    - `max_tokens` in the generation kwargs goes as `max_output_tokens`.
    - Every tool states `strict` (the API makes a function strict when it is left out);
      a strict tool is checked against strict mode's rules before the request is sent.

    Other keyword arguments go to `openai.AsyncOpenAI`.
    """

    name = "openai-responses"
    _path = "responses"
    _output_fields = ("text",)
    _renames: ClassVar[Mapping[str, str]] = MappingProxyType({"max_tokens": "max_output_tokens"})
    _managed_fields = frozenset({"model", "input", "stream", "store", "tools", "tool_choice"})

    def _describe(self, tool: Tool) -> Described:
        dialect = "openai-strict" if tool.strict else "openai"
        return describe(tool, dialect, to_openai_responses_tool(tool))

    @override
    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        described = self._described(tools)
        items: list[dict[str, Any]] = []
        if system_prompt:
            items.append({"role": "developer", "content": system_prompt})
        custom_calls: set[str] = set()
        for message in history:
            items.extend(self._items(message, custom_calls))
        body: dict[str, Any] = {"model": self._model, "input": items, "store": False}
        if self._stream:
            body["stream"] = True
        entries = [d.sent() for d in described]
        entries += native_entries(self.name, self._native_tools).tools
        if entries:
            body["tools"] = entries
        choice = self._tool_choice
        if isinstance(choice, AllowedTools):
            functions = [{"type": "function", "name": n} for n in choice.names]
            body["tool_choice"] = {"type": "allowed_tools", "mode": choice.mode, "tools": functions}
        elif choice in ("auto", "none", "required"):
            body["tool_choice"] = choice
        elif choice is not None:
            body["tool_choice"] = {"type": "function", "name": choice}
        if entries and self._parallel is not None:
            body["parallel_tool_calls"] = self._parallel
        if self._thinking is not None and self._thinking != "off":
            effort = openai_effort(self._thinking, self.model_name)
            body["reasoning"] = {"effort": effort, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        body.update(self._sent_kwargs())
        if self._output is not None:
            body["text"] = {"format": {"type": "json_schema", **json_schema(self._output)}}
        return body

    def _items(self, message: Message, custom_calls: set[str]) -> list[dict[str, Any]]:
        """The input items of one message; `custom_calls` gathers the custom calls' ids."""
        if message.role == "tool":
            custom = (message.tool_call_id or "") in custom_calls
            return [
                {
                    "type": "custom_tool_call_output" if custom else "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": self._tool_output(message.content),
                }
            ]
        if message.role == "assistant":
            out: list[dict[str, Any]] = []
            text: list[str] = []

            def flush() -> None:
                joined = "".join(text)
                if joined.strip():
                    out.append({"role": "assistant", "content": joined})
                text.clear()

            # In order: reasoning, text, and the native items (web searches, MCP calls, a
            # message with citations) as the API sent them.
            for part in for_provider(message.content, self.name, _cited_text):
                if isinstance(part, ThinkPart):
                    item = _reasoning_item(part)
                    if item is not None:
                        out.append(item)
                elif isinstance(part, TextPart):
                    text.append(part.text)
                elif isinstance(part, NativeToolPart):
                    flush()
                    out.append(copy.deepcopy(part.data))
            flush()
            for call in message.tool_calls or []:
                if call.type == "custom":
                    custom_calls.add(call.id)
                    out.append(
                        {
                            "type": "custom_tool_call",
                            "call_id": call.id,
                            "name": call.function.name,
                            "input": call.function.arguments or "",
                        }
                    )
                else:
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
        if self._tool_message_conversion == "extract_text":
            return "\n".join(p.text for p in parts if isinstance(p, TextPart))
        content = _input_content(parts)
        if len(content) == 1 and content[0]["type"] == "input_text":
            return content[0]["text"]
        return content or ""

    async def _send(self, body: dict[str, Any]) -> ResponsesStream | CompletedMessage:
        known, rest = split_body(body, "model", "input", "stream")
        known["extra_headers"] = self._key_headers()
        if self._stream:
            stream = cast(Any, await self.client.responses.create(**known, extra_body=rest))
            return ResponsesStream(stream, self._convert, self._failed)
        raw = cast(
            Any, await self.client.responses.with_raw_response.create(**known, extra_body=rest)
        )
        response = raw.parse()
        parts: list[StreamedMessagePart] = []
        for item in response.output:
            parts.extend(_item_parts(item))
        failed = _failure(response)
        if failed is not None:
            raise self._failed(failed)
        return CompletedMessage(
            parts,
            model=response.model,
            id=response.id,
            usage=_usage(response.usage),
            finish_reason=_finish_reason(response),
            request_id=header_of(raw, "x-request-id"),
            provider_trace_id=None,
        )

    def _failed(self, message: str) -> ChatProviderError:
        """A failure the API reported in the response (not an HTTP error), as our error."""
        return ChatProviderError(
            message, provider=self.name, model=self._model, url=self._endpoint()
        )


def _pack_reasoning(item: Any) -> str | None:
    """A reasoning item's id and encrypted content, as one opaque `ThinkPart.encrypted`."""
    encrypted = getattr(item, "encrypted_content", None)
    if not encrypted:
        return None
    return json.dumps({"id": item.id, "encrypted_content": encrypted}, separators=(",", ":"))


def _reasoning_item(part: ThinkPart) -> dict[str, Any] | None:
    """The Responses reasoning item a `ThinkPart` came from; None for another provider's.

    kosong packs the item's id with its encrypted content; the published package kept the
    encrypted content alone (no id), and such a part goes back as that package sent it:
    without the id, which the SDK's type marks required but the API takes from it.
    """
    summary = [{"type": "summary_text", "text": part.think}] if part.think else []
    packed = json_object(part.encrypted)
    if packed is None:
        if not part.encrypted or not _OPAQUE.fullmatch(part.encrypted):
            return None  # not a Responses part (another provider's signature, say)
        return {"type": "reasoning", "summary": summary, "encrypted_content": part.encrypted}
    item_id, encrypted = packed.get("id"), packed.get("encrypted_content")
    if not isinstance(item_id, str) or not isinstance(encrypted, str):
        return None
    return {"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": encrypted}


def _cited_text(item: Mapping[str, Any]) -> str | None:
    """The text of a message item whose text has annotations (None for other items)."""
    if item.get("type") != "message":
        return None
    contents = cast(list[dict[str, Any]], item.get("content") or [])
    texts = [c.get("text") for c in contents if c.get("type") == "output_text"]
    return "".join(t for t in texts if isinstance(t, str))


def _native(item: Any) -> bool:
    """Whether an output item is a native tool's, or a message with citations."""
    if item.type == "message":
        return any(getattr(c, "annotations", None) for c in item.content or ())
    return item.type not in ("reasoning", "function_call", "custom_tool_call")


def _input_content(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "input_image", "image_url": part.image_url.url, "detail": "auto"})
        elif not isinstance(part, ThinkPart | NativeToolPart):
            out.append({"type": "input_text", "text": media_placeholder(part)})
    return out


def _item_parts(item: Any) -> list[StreamedMessagePart]:
    """The parts of one output item of a whole response."""
    if item.type == "reasoning":
        think = "".join(s.text for s in item.summary or ())
        return [ThinkPart(think=think, encrypted=_pack_reasoning(item))]
    if item.type == "message":
        text = "".join(c.text for c in item.content if c.type == "output_text")
        parts: list[StreamedMessagePart] = [TextPart(text=text)] if text else []
        if _native(item):
            parts.append(NativeToolPart(provider=_PROVIDER, data=item.to_dict(mode="json")))
        return parts
    if item.type == "function_call":
        return [
            ToolCall(
                id=item.call_id,
                function=ToolCall.FunctionBody(name=item.name, arguments=item.arguments),
            )
        ]
    if item.type == "custom_tool_call":
        return [
            ToolCall(
                id=item.call_id,
                type="custom",
                function=ToolCall.FunctionBody(name=item.name, arguments=item.input),
            )
        ]
    if _native(item):
        return [NativeToolPart(provider=_PROVIDER, data=item.to_dict(mode="json"))]
    return []


def _usage(usage: Any) -> TokenUsage | None:
    if usage is None:
        return None
    details = usage.input_tokens_details
    cached = (details.cached_tokens if details else 0) or 0
    thought = usage.output_tokens_details
    return TokenUsage(
        input_other=usage.input_tokens - cached,
        output=usage.output_tokens,
        input_cache_read=cached,
        output_reasoning=(thought.reasoning_tokens if thought else 0) or 0,
    )


def _finish_reason(response: Any) -> str | None:
    if response.status in (None, "in_progress"):
        return None
    details = getattr(response, "incomplete_details", None)
    return getattr(details, "reason", None) or response.status


def _failure(response: Any) -> str | None:
    if response.status != "failed":
        return None
    error = response.error
    return f"the response failed: {error.message if error else 'no reason given'}"


class ResponsesStream(SDKStream):
    """A Responses API answer as `StreamedMessagePart`s."""

    _errors = SDK_ERRORS

    def __init__(
        self,
        stream: Any,
        convert: Callable[[BaseException], ChatProviderError],
        failed: Callable[[str], ChatProviderError],
    ) -> None:
        request_id = header_of(getattr(stream, "response", None), "x-request-id")
        super().__init__(stream, convert, request_id=request_id)
        self._failed = failed

    async def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        calls = ToolCallAssembler()
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
                for part in calls.feed(event.output_index, item.call_id, item.name, item.arguments):
                    yield part
            elif kind == "response.output_item.added" and event.item.type == "custom_tool_call":
                item = event.item
                feed = calls.feed(
                    event.output_index, item.call_id, item.name, item.input, custom=True
                )
                for part in feed:
                    yield part
            elif kind in (
                "response.function_call_arguments.delta",
                "response.custom_tool_call_input.delta",
            ):
                for part in calls.feed(event.output_index, None, None, event.delta):
                    yield part
            elif kind == "response.output_item.done":
                item = event.item
                if item.type in ("function_call", "custom_tool_call"):
                    for part in calls.done(event.output_index):
                        yield part
                elif item.type == "reasoning":
                    # The done event holds the whole encrypted content (the added one
                    # may not): it closes the reasoning summary streamed before it.
                    packed = _pack_reasoning(item)
                    if packed is not None:
                        yield ThinkPart(think="", encrypted=packed)
                elif _native(item):  # whole when done; its text has streamed already
                    yield NativeToolPart(provider=_PROVIDER, data=item.to_dict(mode="json"))
            elif kind in ("response.completed", "response.incomplete", "response.created"):
                self._read_response(event.response)
            elif kind == "response.failed":
                self._read_response(event.response)
                failure = _failure(event.response) or "the response failed"
                raise self._failed(failure)
            elif kind == "error":
                message = f"the API reported an error: {event.message}"
                raise self._failed(message)
        for part in calls.finish():
            yield part

    def _read_response(self, response: Any) -> None:
        self.id = response.id or self.id
        self.model = response.model or self.model
        self.finish_reason = _finish_reason(response) or self.finish_reason
        usage = _usage(response.usage)
        if usage is not None:
            self.usage = usage
