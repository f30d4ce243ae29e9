"""Chat providers: what `kosong.generate` and `kosong.step` talk to.

A `ChatProvider` sends a system prompt, tool definitions and a history to a model and returns a
`StreamedMessage`: an async iterator of the answer's pieces (`StreamedMessagePart`: content
parts, tool calls, and fragments of a tool call's arguments), with the response's `id` and
`usage` once the stream has ended.

Providers (each in its own module, the HTTP ones needing an optional extra):

- `kosong.chat_provider.kimi.Kimi`: Moonshot's Kimi API (`kosong[openai]`).
- `kosong.chat_provider.openai.OpenAIChat`: Chat Completions of OpenAI or any compatible
  server; `OpenAIResponses`: OpenAI's Responses API (`kosong[openai]`).
- `kosong.chat_provider.anthropic.Anthropic`: Anthropic's Messages API (`kosong[anthropic]`).
- `kosong.chat_provider.scripted.ScriptedChatProvider`: an offline model that plays scripted
  turns, for demos and tests; `kosong.chat_provider.mock.MockChatProvider` streams exactly the
  parts it is given.

Errors, one tree::

    ChatProviderError
    ├── APIConnectionError        the service could not be reached, or the stream broke
    │   └── APITimeoutError       no answer in time
    ├── APIStatusError            the service answered 4xx / 5xx (status_code, request_id)
    └── APIEmptyResponseError     the answer had neither text nor tool calls
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, Self, TypeAlias, runtime_checkable

from kosong.message import ContentPart, Message, ToolCall, ToolCallPart
from kosong.tooling import Tool

__all__ = [
    "APIConnectionError",
    "APIEmptyResponseError",
    "APIStatusError",
    "APITimeoutError",
    "ChatProvider",
    "ChatProviderError",
    "RetryableChatProvider",
    "StreamedMessage",
    "StreamedMessagePart",
    "ThinkingEffort",
    "TokenUsage",
]

StreamedMessagePart: TypeAlias = ContentPart | ToolCall | ToolCallPart
"""One piece of a streamed answer: a content part (or a fragment of one), a tool call as it
starts, or the next fragment of its arguments."""

ThinkingEffort: TypeAlias = Literal["off", "low", "medium", "high", "xhigh", "max"]
"""How hard a model should think before it answers; "off" turns thinking off."""


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
    A provider may also give `request_id` (the service's id of the HTTP request, for support)
    and `finish_reason` (why the model stopped, in the provider's words); `generate` reads them
    when they are there.
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
    """A provider that can recover from a retryable error itself (say, by rebuilding its client).

    An agent loop that retries may call `on_retryable_error(error)` first; True means the
    provider did something and a retry is worth it.
    """

    def on_retryable_error(self, error: BaseException) -> bool:
        """React to `error`; True when a retry may now succeed."""
        ...


class ChatProviderError(Exception):
    """A chat provider failed; the base of every error it raises."""

    def __init__(self, message: str) -> None:
        """Say what went wrong."""
        super().__init__(message)
        self.message = message
        """What went wrong."""


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
        trace_id: str | None = None,
    ) -> None:
        """Record the status and the service's request id (quote it to the provider's support)."""
        super().__init__(message)
        self.status_code = status_code
        """The HTTP status code."""
        self.request_id = request_id
        """The service's id of the request, when it sent one."""
        self.trace_id = trace_id
        """A trace id of the request, when the provider has one."""

    def __str__(self) -> str:
        request = f" (request id {self.request_id})" if self.request_id else ""
        return f"HTTP {self.status_code}: {self.message}{request}"


class APIEmptyResponseError(ChatProviderError):
    """The model answered with neither text nor a tool call."""
