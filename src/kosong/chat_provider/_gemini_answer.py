"""A Gemini answer as parts: the chunks of `streamGenerateContent`, or one `generateContent`.

Private to `kosong.chat_provider.gemini`. Text, thoughts and function calls become
`TextPart`, `ThinkPart` and `ToolCall` (thought signatures kept); a built-in tool's parts
(`executableCode`, `codeExecutionResult`, a server-side `toolCall` / `toolResponse`) become
`NativeToolPart`s holding the part as the API sent it, and so does a candidate's
`groundingMetadata` / `urlContextMetadata` (what Google Search and URL context found), which
the API takes no place for in a request (https://ai.google.dev/api/generate-content#candidate).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import httpx2
from google.genai import errors as genai_errors

from kosong.chat_provider import ChatProviderError, StreamedMessagePart, TokenUsage
from kosong.chat_provider._base import SDKStream
from kosong.message import NativeToolPart, TextPart, ThinkPart, ToolCall, ToolCallPart

__all__ = [
    "ERRORS",
    "METADATA_KEYS",
    "SIGNATURE_KEY",
    "TRANSPORT_ERRORS",
    "GeminiStream",
]

SIGNATURE_KEY = "thought_signature_b64"
"""Where a function call's thought signature is kept in `ToolCall.extras` (as the published
package keeps it)."""
METADATA_KEYS = ("groundingMetadata", "urlContextMetadata")
"""The candidate fields kept as native parts; they never go back."""
_PROVIDER = "gemini"
_NATIVE_FIELDS = ("executable_code", "code_execution_result", "tool_call", "tool_response")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """httpx2's errors, and aiohttp's: the SDK's async transport when it is installed."""
    try:
        import aiohttp
    except ImportError:  # pragma: no cover - depends on what is installed
        return (httpx2.HTTPError,)
    return (httpx2.HTTPError, aiohttp.ClientError)


TRANSPORT_ERRORS = _transport_errors()
ERRORS: tuple[type[BaseException], ...] = (genai_errors.APIError, TimeoutError, *TRANSPORT_ERRORS)


def _b64(raw: bytes | None) -> str | None:
    return base64.b64encode(raw).decode("ascii") if raw else None


def _pack(signature: str, part: Literal["thought", "text", "empty"]) -> str:
    """A thought signature as a `ThinkPart` keeps it, with the kind of part it came on."""
    return json.dumps({"thoughtSignature": signature, "part": part}, separators=(",", ":"))


def _enum_text(value: Any) -> str:
    return str(getattr(value, "value", value))


def _usage(metadata: Any) -> TokenUsage:
    prompt = (metadata.prompt_token_count or 0) + (metadata.tool_use_prompt_token_count or 0)
    cached = metadata.cached_content_token_count or 0
    thought = metadata.thoughts_token_count or 0
    return TokenUsage(
        input_other=max(prompt - cached, 0),
        output=(metadata.candidates_token_count or 0) + thought,
        input_cache_read=cached,
        output_reasoning=thought,
    )


class GeminiStream(SDKStream):
    """A Gemini answer as `StreamedMessagePart`s.

    The chunks of `streamGenerateContent` (the first one read already), or the one response
    of `generateContent` (`rest` None).
    """

    _errors = ERRORS

    def __init__(
        self,
        first: Any,
        rest: AsyncIterator[Any] | None,
        convert: Callable[[BaseException], ChatProviderError],
    ) -> None:
        super().__init__(rest, convert)
        self._first = first

    async def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        if self._first is None:
            return
        for part in self._read(self._first):
            yield part
        if self._stream is not None:
            async for chunk in self._stream:
                for part in self._read(chunk):
                    yield part

    def _read(self, response: Any) -> list[StreamedMessagePart]:
        """The parts of one response (or stream chunk); it also sets id, usage, finish reason."""
        self.id = response.response_id or self.id
        self.model = response.model_version or self.model
        if response.usage_metadata is not None:
            self.usage = _usage(response.usage_metadata)
        out: list[StreamedMessagePart] = []
        candidates: list[Any] = response.candidates or []
        feedback: Any = response.prompt_feedback
        if not candidates and feedback is not None and feedback.block_reason is not None:
            self.finish_reason = _enum_text(feedback.block_reason)
        for candidate in candidates[:1]:
            if candidate.finish_reason is not None:
                self.finish_reason = _enum_text(candidate.finish_reason)
            content: Any = candidate.content
            parts: list[Any] = (content.parts if content is not None else None) or []
            for part in parts:
                out.extend(_part_of(part))
            for key in METADATA_KEYS:
                found: Any = getattr(candidate, _snake(key), None)
                if found is not None:
                    data = {key: found.model_dump(mode="json", by_alias=True, exclude_none=True)}
                    out.append(NativeToolPart(provider=_PROVIDER, data=data))
        return out


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _part_of(part: Any) -> list[StreamedMessagePart]:
    if any(getattr(part, name, None) is not None for name in _NATIVE_FIELDS):
        data = part.model_dump(mode="json", by_alias=True, exclude_none=True)
        return [NativeToolPart(provider=_PROVIDER, data=data)]
    signature = _b64(part.thought_signature)
    call = part.function_call
    if call is not None:
        arguments = json.dumps(call.args or {}, ensure_ascii=False)
        return [
            ToolCall(
                id=call.id or f"call_{uuid.uuid4().hex[:24]}",
                function=ToolCall.FunctionBody(name=call.name or "", arguments=arguments),
                extras={SIGNATURE_KEY: signature} if signature else None,
            ),
            ToolCallPart(last=True),
        ]
    text: str = part.text or ""
    if part.thought:
        encrypted = _pack(signature, "thought") if signature else None
        return [ThinkPart(think=text, encrypted=encrypted)] if text or signature else []
    out: list[StreamedMessagePart] = [TextPart(text=text)] if text else []
    if signature:
        # Kept beside the text it came on, and sent back on that text's part.
        out.append(ThinkPart(think="", encrypted=_pack(signature, "text" if text else "empty")))
    return out
