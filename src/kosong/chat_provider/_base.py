"""What kosong's providers share: the model's name, thinking copies, the HTTP client's life.

Private: the public classes are in `kimi`, `openai`, `anthropic`, `scripted` and `mock`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Self

from kosong.chat_provider import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    ThinkingEffort,
)
from kosong.dialects import Dialect, DialectError, DialectReport, Finding, check_tools
from kosong.tooling import Tool

__all__ = [
    "HTTPProvider",
    "ProviderBase",
    "api_key_from",
    "check_dialect",
    "model_from",
    "request_id_of",
    "sdk_error",
]


class ProviderBase:
    """A model's name, and a thinking effort that `with_thinking` sets on a copy."""

    name = "provider"

    def __init__(self, model: str) -> None:
        self._model = model
        self._thinking: ThinkingEffort | None = None

    @property
    def model_name(self) -> str:
        """The model asked for."""
        return self._model

    @property
    def thinking_effort(self) -> ThinkingEffort | None:
        """The thinking effort asked for, or None for the model's default."""
        return self._thinking

    def with_thinking(self, effort: ThinkingEffort) -> Self:
        """A copy asking for `effort`; this provider is unchanged (a client is shared)."""
        clone = copy.copy(self)
        clone._thinking = effort
        return clone


class HTTPProvider(ProviderBase):
    """A provider behind an SDK client, with extra request fields and a client to close."""

    client: Any
    """The SDK client (transport, retries, timeouts)."""

    def __init__(self, model: str, generation_kwargs: Mapping[str, Any] | None) -> None:
        super().__init__(model)
        self._generation_kwargs: dict[str, Any] = dict(generation_kwargs or {})

    def with_generation_kwargs(self, **kwargs: Any) -> Self:
        """A copy that also sends these request fields (`temperature`, `max_tokens`...)."""
        clone = copy.copy(self)
        clone._generation_kwargs = {**self._generation_kwargs, **kwargs}
        return clone

    async def aclose(self) -> None:
        """Close the HTTP client (copies made by `with_thinking` share it)."""
        await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def api_key_from(api_key: str | None, variable: str, provider: str) -> str:
    """The key given, or the one in the environment; a clear error when there is none."""
    key = api_key or os.environ.get(variable)
    if not key:
        raise ValueError(
            f"{provider} needs an API key: pass api_key=... or set the {variable} "
            "environment variable"
        )
    return key


def model_from(model: str | None, variable: str, provider: str) -> str:
    """The model given, or the one in the environment; a clear error when there is none."""
    chosen = model or os.environ.get(variable)
    if not chosen:
        raise ValueError(f"{provider} needs a model: pass model=... or set {variable}")
    return chosen


def check_dialect(provider: str, tools: Sequence[Tool], dialect_of: Mapping[str, Dialect]) -> None:
    """Raise `DialectError` when the provider would reject one of `tools`."""
    findings: list[Finding] = []
    for tool in tools:
        findings += check_tools([tool], [dialect_of[tool.name]], include_ignored=False).findings
    if findings:
        dialects = sorted(set(dialect_of.values()))
        raise DialectError(provider, DialectReport([t.name for t in tools], dialects, findings))


def sdk_error(error: BaseException, sdk: ModuleType, transport: ModuleType) -> ChatProviderError:
    """An SDK (`openai`, `anthropic`) or transport (`httpx2`) error as one of ours.

    Both SDKs name their errors alike; a timeout is checked before other connection errors,
    since it is one of them.
    """
    if isinstance(error, sdk.APITimeoutError | transport.TimeoutException):
        return APITimeoutError(f"the request timed out: {error}")
    if isinstance(error, sdk.APIConnectionError | transport.TransportError):
        cause = error.__cause__ or error
        return APIConnectionError(f"connection failed: {type(cause).__name__}: {cause}")
    if isinstance(error, sdk.APIStatusError):
        status: Any = error
        return APIStatusError(status.status_code, status.message, request_id=status.request_id)
    return ChatProviderError(f"{type(error).__name__}: {error}")


def request_id_of(stream: Any, *header_names: str) -> str | None:
    """The service's request id from the headers of an SDK stream's HTTP response."""
    headers: Any = getattr(getattr(stream, "response", None), "headers", None)
    if headers is None:
        return None
    for name in header_names:
        value = headers.get(name)
        if isinstance(value, str) and value:
            return value
    return None
