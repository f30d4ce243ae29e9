"""Model calls: a `{gen_ai.operation.name} {gen_ai.request.model}` span per `generate`.

The inference span of the conventions (gen-ai-spans.md, "Inference"): CLIENT for a model behind
an API, INTERNAL for one in the process (the scripted and mock providers); the provider as
`gen_ai.provider.name` (the conventions' well-known value where there is one), the request's
parameters from the provider's generation options, `server.address`/`server.port` from its
endpoint; once answered, the response's id, finish reasons and token usage, and for a streamed
answer the time to its first chunk. With content opted in, the system instructions, the
history, the tool definitions and the answer. Metrics: `gen_ai.client.operation.duration`,
`gen_ai.client.token.usage` (input, output) and `gen_ai.client.operation.time_to_first_chunk`.

The provider is read by its public attributes only (`name`, `model_name`, `generation_kwargs`,
`stream`, `endpoint`), so any `ChatProvider` works, kosong's or not.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast
from urllib.parse import urlsplit

from kosong._telemetry import _content
from kosong._telemetry._spans import Operation, here
from kosong._telemetry._state import Telemetry, current
from kosong.message import Message
from kosong.tooling import Tool

__all__ = ["OUTSIDE", "PROVIDER_NAMES", "ModelCall", "model_call", "provider_name"]

OUTSIDE: contextvars.ContextVar[Any | None] = contextvars.ContextVar(
    "kosong_outside_model_call", default=None
)
"""The OpenTelemetry context a running model call started in: the parent of the tool calls
`step` dispatches while the answer streams (siblings of the model call, as the conventions
draw an agent's trace, not its children)."""

PROVIDER_NAMES = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "kimi": "moonshot_ai",
    "gemini": "gcp.gemini",
}
"""kosong's provider names → the conventions' well-known `gen_ai.provider.name` values."""

OPERATIONS = {"gemini": "generate_content"}
"""`gen_ai.operation.name` by provider: Gemini's API is Generate Content; the others chat."""

IN_PROCESS = frozenset({"scripted", "mock"})
"""Providers whose model runs in the process: their spans are INTERNAL."""

REQUEST_ATTRIBUTES = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
    "stop_sequences": "gen_ai.request.stop_sequences",
}
"""Generation options (as `with_generation_kwargs` takes them) → request attributes."""


def provider_name(name: str, host: str | None = None) -> str:
    """`gen_ai.provider.name` of kosong's provider `name` calling `host`.

    Gemini is `gcp.gemini` at generativelanguage.googleapis.com, `gcp.vertex_ai` at
    aiplatform.googleapis.com, and `gcp.gen_ai` anywhere else (the conventions' notes).
    """
    if name == "gemini" and host is not None:
        if host.endswith("aiplatform.googleapis.com"):
            return "gcp.vertex_ai"
        if host != "generativelanguage.googleapis.com":
            return "gcp.gen_ai"
    return PROVIDER_NAMES.get(name, name)


class ModelCall:
    """What `generate` tells the span of its model call; this base records nothing."""

    def watch(self, stream: Any) -> Any:
        """The answer's stream, watched for its first chunk."""
        return stream

    def answered(self, result: Any) -> None:
        """Record the answer (a `GenerateResult`)."""

    def __enter__(self) -> ModelCall:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


_QUIET = ModelCall()


def model_call(
    provider: Any, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
) -> ModelCall:
    """The span of one model call, as a context manager (one that records nothing when off)."""
    telemetry = current()
    if telemetry is None:
        return _QUIET
    return _Traced(telemetry, provider, system_prompt, tools, history)


class _Traced(ModelCall):
    def __init__(
        self,
        telemetry: Telemetry,
        provider: Any,
        system_prompt: str,
        tools: Sequence[Tool],
        history: Sequence[Message],
    ) -> None:
        name = str(getattr(provider, "name", "") or type(provider).__name__)
        model = str(getattr(provider, "model_name", "") or "")
        self._stream = bool(getattr(provider, "stream", True))
        server = _server(getattr(provider, "endpoint", None))
        self._common: dict[str, Any] = {
            "gen_ai.operation.name": OPERATIONS.get(name, "chat"),
            "gen_ai.provider.name": provider_name(name, server.get("server.address")),
            "gen_ai.request.model": model or None,
            **server,
        }
        attributes = {**self._common, **_request(provider)}
        if self._stream:
            attributes["gen_ai.request.stream"] = True
        if telemetry.capture_content:
            attributes["gen_ai.system_instructions"] = _content.system_instructions(system_prompt)
            attributes["gen_ai.input.messages"] = _content.input_messages(history)
            if tools:
                attributes["gen_ai.tool.definitions"] = _content.tool_definitions(tools)
        operation = self._common["gen_ai.operation.name"]
        self._operation = Operation(
            telemetry,
            f"{operation} {model}" if model else operation,
            "INTERNAL" if name in IN_PROCESS else "CLIENT",
            attributes,
        )
        self._first_chunk: float | None = None
        self._outside: contextvars.Token[Any | None] | None = None
        self._answer: Any = None

    def watch(self, stream: Any) -> Any:
        self._answer = stream
        return _Watched(stream, self) if self._stream else stream

    def chunk(self) -> None:
        if self._first_chunk is None:
            self._first_chunk = time.perf_counter() - self._operation.start
            self._operation.set("gen_ai.response.time_to_first_chunk", self._first_chunk)

    def answered(self, result: Any) -> None:
        operation = self._operation
        operation.set("gen_ai.response.id", result.id)
        model: object = getattr(self._answer, "model", None)
        operation.set("gen_ai.response.model", model if isinstance(model, str) and model else None)
        if result.finish_reason:
            operation.set("gen_ai.response.finish_reasons", [result.finish_reason])
        usage = result.usage
        if usage is not None:
            operation.set("gen_ai.usage.input_tokens", usage.input)
            operation.set("gen_ai.usage.output_tokens", usage.output)
            operation.set("gen_ai.usage.cache_read.input_tokens", usage.input_cache_read)
            operation.set("gen_ai.usage.cache_creation.input_tokens", usage.input_cache_creation)
            if usage.output_reasoning:
                operation.set("gen_ai.usage.reasoning.output_tokens", usage.output_reasoning)
            histogram = operation.telemetry.token_usage
            if histogram is not None:
                histogram.record(usage.input, {**self._common, "gen_ai.token.type": "input"})
                histogram.record(usage.output, {**self._common, "gen_ai.token.type": "output"})
        if operation.telemetry.capture_content:
            operation.set(
                "gen_ai.output.messages",
                _content.output_messages(result.message, result.finish_reason),
            )

    def __enter__(self) -> ModelCall:
        self._outside = OUTSIDE.set(here())
        self._operation.enter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._outside is not None:
            OUTSIDE.reset(self._outside)
        operation = self._operation
        elapsed = operation.close(exc_info[1] if len(exc_info) > 1 else None)
        telemetry = operation.telemetry
        if not telemetry.metrics:
            return
        attributes = {k: v for k, v in self._common.items() if v is not None}
        if telemetry.time_to_first_chunk is not None and self._first_chunk is not None:
            telemetry.time_to_first_chunk.record(self._first_chunk, attributes)
        if operation.error_type is not None:
            attributes["error.type"] = operation.error_type
        if telemetry.operation_duration is not None:
            telemetry.operation_duration.record(elapsed, attributes)


class _Watched:
    """A provider's stream that notes when its first part arrives; the rest is the stream's."""

    def __init__(self, stream: Any, call: _Traced) -> None:
        self._stream = stream
        self._call = call

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for part in self._stream:
            self._call.chunk()
            yield part


def _server(endpoint: object) -> dict[str, Any]:
    """`server.address` and `server.port` of the URL a provider calls."""
    if not isinstance(endpoint, str) or not endpoint:
        return {}
    url = urlsplit(endpoint)
    if not url.hostname:
        return {}
    port = url.port or {"https": 443, "http": 80}.get(url.scheme)
    return {"server.address": url.hostname, "server.port": port}


def _request(provider: Any) -> dict[str, Any]:
    found: object = getattr(provider, "generation_kwargs", None)
    if not isinstance(found, dict):
        return {}
    options = cast(dict[str, Any], found)
    attributes: dict[str, Any] = {}
    for key, value in options.items():
        name = REQUEST_ATTRIBUTES.get(key)
        if name is None or value is None:
            continue
        if name == "gen_ai.request.stop_sequences":
            value = [value] if isinstance(value, str) else [str(v) for v in value]
        attributes[name] = value
    choices = options.get("n")
    if isinstance(choices, int) and choices != 1:
        attributes["gen_ai.request.choice.count"] = choices
    return attributes
