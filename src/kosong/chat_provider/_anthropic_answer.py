"""An Anthropic Messages answer as parts: streamed (`AnthropicStream`) or whole (`block_parts`).

Private to `kosong.chat_provider.anthropic`. Text, thinking and client tool calls become
`TextPart`, `ThinkPart` and `ToolCall`; every other block (a server tool's call and result,
an MCP connector's, a container upload) becomes a `NativeToolPart` holding the block as the
API sent it, and so does a text block with citations, after its text
(https://platform.claude.com/docs/en/build-with-claude/streaming: a block's input streams as
`input_json_delta`, citations as `citations_delta`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import httpx2

from kosong.chat_provider import ChatProviderError, StreamedMessagePart, TokenUsage
from kosong.chat_provider._base import SDKStream, header_of
from kosong.message import NativeToolPart, TextPart, ThinkPart, ToolCall, ToolCallPart

__all__ = ["ERRORS", "AnthropicStream", "block_parts", "usage_of"]

ERRORS = (anthropic.AnthropicError, httpx2.HTTPError)
"""What the SDK and its transport raise."""

_PROVIDER = "anthropic"


def _data(block: Any) -> dict[str, Any]:
    """An SDK block as the JSON the API sent (the fields it had, by their API names)."""
    return block.to_dict(mode="json")


def block_parts(block: Any) -> list[StreamedMessagePart]:
    """The parts of one content block of a whole (non-streamed) message."""
    if block.type == "text":
        parts: list[StreamedMessagePart] = [TextPart(text=block.text)] if block.text else []
        if getattr(block, "citations", None):
            parts.append(NativeToolPart(provider=_PROVIDER, data=_data(block)))
        return parts
    if block.type == "thinking":
        return [ThinkPart(think=block.thinking, encrypted=block.signature or None)]
    if block.type == "tool_use":
        arguments = json.dumps(block.input, ensure_ascii=False)
        return [
            ToolCall(
                id=block.id, function=ToolCall.FunctionBody(name=block.name, arguments=arguments)
            )
        ]
    return [NativeToolPart(provider=_PROVIDER, data=_data(block))]


def usage_of(usage: Any, output_tokens: int | None) -> TokenUsage:
    """`TokenUsage` from the input counts of a Messages API `usage`, and `output_tokens`."""
    return TokenUsage(
        input_other=(usage.input_tokens or 0) if usage else 0,
        output=output_tokens or 0,
        input_cache_read=getattr(usage, "cache_read_input_tokens", None) or 0,
        input_cache_creation=getattr(usage, "cache_creation_input_tokens", None) or 0,
    )


class AnthropicStream(SDKStream):
    """A Messages API answer as `StreamedMessagePart`s."""

    _errors = ERRORS

    def __init__(self, stream: Any, convert: Callable[[BaseException], ChatProviderError]) -> None:
        request_id = header_of(getattr(stream, "response", None), "request-id")
        super().__init__(stream, convert, request_id=request_id)
        self._input: Any = None

    async def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        tool_blocks: set[int] = set()
        # Blocks kept whole until they stop: native ones, and text that may gain citations.
        native: dict[int, dict[str, Any]] = {}
        inputs: dict[int, str] = {}
        async for event in self._stream:
            kind = event.type
            if kind == "content_block_delta":
                delta, index = event.delta, event.index
                if delta.type == "text_delta":
                    if index in native:
                        native[index]["text"] += delta.text
                    yield TextPart(text=delta.text)
                elif delta.type == "input_json_delta":
                    if index in tool_blocks:
                        yield ToolCallPart(arguments_part=delta.partial_json)
                    else:
                        inputs[index] = inputs.get(index, "") + delta.partial_json
                elif delta.type == "citations_delta" and index in native:
                    native[index].setdefault("citations", []).append(_data(delta.citation))
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
                elif block.type == "text":
                    native[event.index] = {"type": "text", "text": block.text or ""}
                    if block.text:
                        yield TextPart(text=block.text)
                elif block.type not in ("thinking", "redacted_thinking"):
                    native[event.index] = _data(block)
            elif kind == "content_block_stop":
                for part in self._stop(event.index, tool_blocks, native, inputs):
                    yield part
            elif kind == "message_start":
                self.id = event.message.id
                self.model = event.message.model
                self._input = event.message.usage  # the input tokens are counted here only
                self.usage = usage_of(self._input, self._input.output_tokens)
            elif kind == "message_delta":
                self.finish_reason = event.delta.stop_reason or self.finish_reason
                self.usage = usage_of(self._input, event.usage.output_tokens)

    @staticmethod
    def _stop(
        index: int, tool_blocks: set[int], native: dict[int, dict[str, Any]], inputs: dict[int, str]
    ) -> list[StreamedMessagePart]:
        if index in tool_blocks:
            return [ToolCallPart(last=True)]
        block = native.pop(index, None)
        if block is None or (block["type"] == "text" and not block.get("citations")):
            return []
        if index in inputs:  # a server tool's input, streamed like a client tool's
            try:
                block["input"] = json.loads(inputs.pop(index) or "{}")
            except ValueError:
                block["input"] = {}
        return [NativeToolPart(provider=_PROVIDER, data=block)]
