"""Chat providers: what `kosong.generate` and `kosong.step` talk to.

A `ChatProvider` sends a system prompt, tool definitions and a history to a model and returns a
`StreamedMessage`: an async iterator of the answer's pieces (`StreamedMessagePart`: content
parts, tool calls, and fragments of a tool call's arguments), with the response's `id` and
`usage` once the stream has ended.

Providers (each in its own module, the HTTP ones needing an optional extra):

- `kosong.chat_provider.kimi.Kimi`: Moonshot's Kimi API (the `openai` extra).
- `kosong.chat_provider.openai.OpenAIChat`: Chat Completions of OpenAI or any compatible
  server; `OpenAIResponses`: OpenAI's Responses API (the `openai` extra).
- `kosong.chat_provider.anthropic.Anthropic`: Anthropic's Messages API (the `anthropic` extra).
- `kosong.chat_provider.gemini.Gemini`: Google's Gemini API, on the `google-genai` SDK
  (the `google` extra).
- `kosong.chat_provider.scripted.ScriptedChatProvider`: an offline model that plays scripted
  turns, for demos and tests; `kosong.chat_provider.mock.MockChatProvider` streams exactly the
  parts it is given.

Errors, one tree::

    ChatProviderError
    ├── APIConnectionError        the service could not be reached, or the stream broke
    │   └── APITimeoutError       no answer in time
    ├── APIStatusError            the service answered 4xx / 5xx (status_code, request_id)
    └── APIEmptyResponseError     the answer had neither text nor tool calls

Every error raised by an HTTP provider names the provider, the model and the URL it called
(`provider`, `model`, `url`), and an error body is summarised (the JSON error's message, or
the first line of text, at most 300 characters), never printed whole.

`provider_trace_id` is the provider's own trace id of a request (Moonshot's `x-trace-id`), on
results, streams and `APIStatusError`; `trace_id` is its older name, kept as an alias.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Self, TypeAlias, runtime_checkable

from kosong._deprecated import warn_old_name
from kosong.message import ContentPart, Message, ToolCall, ToolCallPart
from kosong.tooling import Tool

__all__ = [
    "APIConnectionError",
    "APIEmptyResponseError",
    "APIStatusError",
    "APITimeoutError",
    "AllowedTools",
    "ChatProvider",
    "ChatProviderError",
    "OutputSchema",
    "RetryableChatProvider",
    "StreamedMessage",
    "StreamedMessagePart",
    "ThinkingEffort",
    "TokenUsage",
    "ToolChoice",
]

StreamedMessagePart: TypeAlias = ContentPart | ToolCall | ToolCallPart
"""One piece of a streamed answer: a content part (or a fragment of one), a tool call as it
starts, or the next fragment of its arguments."""

ThinkingEffort: TypeAlias = Literal["off", "low", "medium", "high", "xhigh", "max"]
"""How hard a model should think before it answers; "off" turns thinking off."""


@dataclass(frozen=True, slots=True)
class AllowedTools:
    """A tool choice restricting the model to some of the tools sent, the tool list unchanged.

    The tool list stays the same, so the provider's prompt cache still holds.
    `mode="auto"`: the model may call one of `names` or answer; `"required"`: it must call one
    of them. Sent as OpenAI's `allowed_tools` (Chat and Responses) and Gemini's
    `allowedFunctionNames`; Anthropic and Kimi have no such choice, and get the documented
    equivalent: only these tools are sent.
    """

    names: tuple[str, ...]
    """The tools the model may call."""
    mode: Literal["auto", "required"] = "auto"
    """Whether it may answer instead ("auto") or must call one ("required")."""

    def __init__(self, names: Sequence[str], mode: Literal["auto", "required"] = "auto") -> None:
        """Allow `names` (at least one), in `mode`.

        Raises:
            ValueError: no name, an empty name, or another mode.
        """
        listed = (names,) if isinstance(names, str) else tuple(names)
        if not listed or not all(listed):
            raise ValueError(f"AllowedTools needs one tool name or more, got {list(listed)!r}")
        if mode not in ("auto", "required"):
            raise ValueError(f'AllowedTools mode must be "auto" or "required", got {mode!r}')
        object.__setattr__(self, "names", listed)
        object.__setattr__(self, "mode", mode)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The shape a structured answer is asked for: a name and a JSON Schema.

    `agent_loop(..., output_type=T)` gives it to a provider's `with_output_schema`.
    """

    name: str
    """A name for it (OpenAI's `json_schema.name`)."""
    schema: dict[str, Any]
    """The JSON Schema of the answer."""


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | str | AllowedTools
"""Whether the model must, may or must not call a tool: "auto" (it decides), "none" (no tool
call), "required" (at least one call), a tool's name (a call of that tool), or
`AllowedTools(names, mode=...)` (one of some tools, the tool list unchanged). Each provider
sends it in its API's own format."""


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one answer used, as the provider counted them."""

    input_other: int
    """Input tokens that were neither read from nor written to the prompt cache."""
    output: int
    """Output tokens (thinking included)."""
    input_cache_read: int = 0
    """Input tokens read from the prompt cache."""
    input_cache_creation: int = 0
    """Input tokens written to the prompt cache."""
    output_reasoning: int = 0
    """Output tokens spent thinking (already counted in `output`), when the provider says."""

    @property
    def input(self) -> int:
        """All input tokens."""
        return self.input_other + self.input_cache_read + self.input_cache_creation

    @property
    def total(self) -> int:
        """Input and output tokens together."""
        return self.input + self.output


@runtime_checkable
class StreamedMessage(Protocol):
    """A model's answer as it streams in.

    Iterate it once for its parts; `id` and `usage` are known when the iteration has ended.
    Each part is a new object that the consumer keeps (`generate` merges fragments into the
    part they continue, in place), never one the provider holds on to or yields twice.
    A provider may also give `request_id` (the service's id of the HTTP request, for support),
    `provider_trace_id` (the provider's trace id; `trace_id`, its deprecated name, is read too),
    `finish_reason` (why the model stopped, in the provider's words) and `model` (the model
    that answered, as the service names it); `generate` and telemetry read them when they are
    there.
    """

    def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        """The answer's parts, in order."""
        ...

    @property
    def id(self) -> str | None:
        """The response's id, when the provider gives one."""
        ...

    @property
    def usage(self) -> TokenUsage | None:
        """Tokens used, when the provider reports them (after the stream has ended)."""
        ...


@runtime_checkable
class ChatProvider(Protocol):
    """A model behind an API: it streams an answer to a history.

    `with_thinking` returns a copy with another thinking effort; the provider itself is not
    changed, so one provider can be shared.
    """

    name: str
    """The provider's short name ("kimi", "openai", "anthropic"...)."""

    @property
    def model_name(self) -> str:
        """The model the provider asks for."""
        ...

    @property
    def thinking_effort(self) -> ThinkingEffort | None:
        """The thinking effort asked for, or None for the model's default."""
        ...

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> StreamedMessage:
        """Send the request; return the answer's stream.

        Raises:
            ChatProviderError: the request failed (a subclass says how).
        """
        ...

    def with_thinking(self, effort: ThinkingEffort) -> Self:
        """A copy of this provider asking for `effort`."""
        ...


@runtime_checkable
class RetryableChatProvider(Protocol):
    """A provider that can tell when a retry may now succeed (say, its API key was rotated).

    An agent loop that retries may call `on_retryable_error(error)` first; True means a retry
    is worth it. The provider itself does not change: what changed lives outside it.
    """

    def on_retryable_error(self, error: BaseException) -> bool:
        """React to `error`; True when a retry may now succeed."""
        ...


class ChatProviderError(Exception):
    """A chat provider failed; the base of every error it raises.

    `provider`, `model` and `url` say where (None when unknown, say for a scripted model); the
    text of the error names them.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        url: str | None = None,
    ) -> None:
        """Say what went wrong, and where."""
        super().__init__(message)
        self.message = message
        """What went wrong."""
        self.provider = provider
        """The provider's name ("kimi", "anthropic"...), when known."""
        self.model = model
        """The model asked for, when known."""
        self.url = url
        """The URL called, when known."""

    def _where(self) -> str:
        model = f"model {self.model}" if self.model else None
        where = [part for part in (self.provider, model, self.url) if part]
        return f" [{', '.join(where)}]" if where else ""

    def __str__(self) -> str:
        return f"{self.message}{self._where()}"


class APIConnectionError(ChatProviderError):
    """The service could not be reached, or the connection broke while the answer streamed."""


class APITimeoutError(APIConnectionError):
    """The service did not answer in time."""


class APIStatusError(ChatProviderError):
    """The service answered with an HTTP error status."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        request_id: str | None = None,
        provider_trace_id: str | None = None,
        trace_id: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        url: str | None = None,
    ) -> None:
        """Record the status, the service's request id and the provider's trace id.

        `trace_id` is the deprecated name of `provider_trace_id`; give one of them.
        """
        if trace_id is not None:
            warn_old_name("APIStatusError(trace_id=...)", "provider_trace_id=")
        super().__init__(message, provider=provider, model=model, url=url)
        self.status_code = status_code
        """The HTTP status code."""
        self.request_id = request_id
        """The service's id of the request, when it sent one (quote it to its support)."""
        self.provider_trace_id = provider_trace_id or trace_id
        """The provider's trace id of the request, when it sent one (Moonshot's `x-trace-id`)."""

    @property
    def trace_id(self) -> str | None:
        """Deprecated: the older name of `provider_trace_id`."""
        warn_old_name("APIStatusError.trace_id", "provider_trace_id")
        return self.provider_trace_id

    def __str__(self) -> str:
        ids = [
            f"request id {self.request_id}" if self.request_id else None,
            f"trace id {self.provider_trace_id}" if self.provider_trace_id else None,
        ]
        shown = [i for i in ids if i]
        extra = f" ({', '.join(shown)})" if shown else ""
        return f"HTTP {self.status_code}: {self.message}{extra}{self._where()}"


class APIEmptyResponseError(ChatProviderError):
    """The model answered with neither text nor a tool call."""
