"""What kosong's providers share: options set on copies, the HTTP client's life, errors.

Private: the public classes are in `kimi`, `openai`, `anthropic`, `gemini`, `scripted` and `mock`.

Every option is set on a copy (`with_thinking`, `with_tool_choice`, `with_generation_kwargs`):
a provider is never changed, so one can be shared, and `generate(..., tool_choice=...,
generation_overrides=...)` makes a per-call copy the same way. A copy checks itself
(`_check_options`), so an option the provider cannot send is a `ValueError` at the `with_...`
call that set it, naming the option, before anything is sent.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar, Self, TypeVar, cast

from kosong.chat_provider import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    StreamedMessage,
    StreamedMessagePart,
    ThinkingEffort,
    TokenUsage,
    ToolChoice,
)
from kosong.dialects import Dialect, DialectError, DialectReport, Finding, check_tools
from kosong.message import Message, ToolCall
from kosong.tooling import Tool

__all__ = [
    "CompletedMessage",
    "HTTPProvider",
    "ProviderBase",
    "SDKStream",
    "api_key_from",
    "arguments_object",
    "connection_error",
    "header_of",
    "highest_at_most",
    "json_object",
    "model_from",
    "renamed",
    "spec_of",
    "split_body",
    "summarize_body",
]

_TOOL_CHOICES = ("auto", "none", "required")
_Spec = TypeVar("_Spec")
_T = TypeVar("_T")
SUMMARY_LIMIT = 300
"""The longest error body summary kept in an error's message (characters)."""


class ProviderBase:
    """A model's name and the options every provider takes, each set on a copy."""

    name = "provider"
    _managed_fields: ClassVar[frozenset[str]] = frozenset()
    """Request fields the provider sets itself: `with_generation_kwargs` refuses them."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._thinking: ThinkingEffort | None = None
        self._tool_choice: ToolChoice | None = None
        self._generation_kwargs: dict[str, Any] = {}

    @property
    def model_name(self) -> str:
        """The model asked for."""
        return self._model

    @property
    def thinking_effort(self) -> ThinkingEffort | None:
        """The thinking effort asked for, or None for the model's default."""
        return self._thinking

    @property
    def tool_choice(self) -> ToolChoice | None:
        """The tool choice asked for, or None for the API's default (the model decides)."""
        return self._tool_choice

    @property
    def generation_kwargs(self) -> dict[str, Any]:
        """A copy of the extra request fields this provider sends."""
        return dict(self._generation_kwargs)

    def _copy_with(self, **attributes: Any) -> Self:
        clone = copy.copy(self)
        for name, value in attributes.items():
            setattr(clone, name, value)
        clone._check_options()
        return clone

    def _check_options(self) -> None:
        """Raise ValueError when the options set cannot be sent together (a provider's rules)."""

    def with_thinking(self, effort: ThinkingEffort) -> Self:
        """A copy asking for `effort`; this provider is unchanged (a client is shared).

        Raises:
            ValueError: the model cannot take this effort (the message says why).
        """
        return self._copy_with(_thinking=effort)

    def with_tool_choice(self, choice: ToolChoice | None) -> Self:
        """A copy that asks the model to call a tool or not (`ToolChoice`); None: the default.

        Raises:
            ValueError: `choice` is empty, or the provider cannot send it with the other
                options (say, a forced tool call while thinking, which some APIs refuse).
        """
        if choice is not None and not (isinstance(choice, str) and choice):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"tool_choice must be one of {', '.join(_TOOL_CHOICES)} or a tool's name, "
                f"got {choice!r}"
            )
        return self._copy_with(_tool_choice=choice)

    def with_generation_kwargs(self, **kwargs: Any) -> Self:
        """A copy that also sends these request fields (`temperature`, `max_tokens`...).

        Fields the SDK method does not know go in the request body all the same; `max_tokens`
        is sent under the name the API wants.

        Raises:
            ValueError: a field the provider sets itself (`model`, `messages`, `stream`...),
                with the option to use instead.
        """
        self._refuse_managed(kwargs)
        return self._copy_with(_generation_kwargs={**self._generation_kwargs, **kwargs})

    def _refuse_managed(self, kwargs: Mapping[str, Any]) -> None:
        managed = sorted(set(kwargs) & self._managed_fields)
        if managed:
            raise ValueError(
                f"{type(self).__name__} sets {', '.join(managed)} itself: use the provider's "
                "options (with_tool_choice(...), with_thinking(...), stream=...) instead of "
                "generation kwargs"
            )


class HTTPProvider(ProviderBase):
    """A provider behind an SDK client: streaming or not, a client to close, typed errors.

    A subclass builds the body (`request_body`), says where it goes (`_path` or `_endpoint`)
    and sends it (`_send`); what its SDK raises (`_errors`) becomes a `ChatProviderError`.
    """

    client: Any
    """The SDK client (transport, retries, timeouts)."""
    _key_variable: ClassVar[str] = ""
    """The environment variable the API key is read from."""
    _sdk: ClassVar[ModuleType]
    _transport: ClassVar[ModuleType]
    _errors: ClassVar[tuple[type[BaseException], ...]]
    _path: ClassVar[str] = ""

    def __init__(
        self, model: str, generation_kwargs: Mapping[str, Any] | None, *, stream: bool
    ) -> None:
        super().__init__(model)
        self._stream = stream
        self._refuse_managed(generation_kwargs or {})
        self._generation_kwargs = dict(generation_kwargs or {})

    @property
    def stream(self) -> bool:
        """Whether the answer is streamed (False: one plain request, the same parts)."""
        return self._stream

    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The request body this provider sends (plain dicts, as JSON goes on the wire).

        Raises:
            DialectError: the service would reject one of the tool definitions.
            ValueError: `tool_choice` names no tool of the request, or the history holds what
                the API cannot take (the message says what).
        """
        raise NotImplementedError

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> StreamedMessage:
        """Send the request and return the answer (streamed, or whole with `stream=False`).

        Raises:
            DialectError: the service would reject one of the tool definitions (not sent).
            ValueError: `tool_choice` names no tool of the request, or the history holds what
                the API cannot take (not sent).
            ChatProviderError: the request failed.
        """
        body = self.request_body(system_prompt, tools, history)
        url = self._endpoint()
        try:
            return await self._send(body, url)
        except self._errors as e:
            raise self._error(e, url) from e

    async def _send(self, body: dict[str, Any], url: str) -> StreamedMessage:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        """The URL requests go to (telemetry's `server.address` and `server.port`)."""
        return self._endpoint()

    def _endpoint(self) -> str:
        return f"{str(self.client.base_url).rstrip('/')}/{self._path}"

    def _error(self, error: BaseException, url: str) -> ChatProviderError:
        """An SDK (`openai`, `anthropic`: named alike) or transport error as one of ours."""
        where: dict[str, Any] = {"provider": self.name, "model": self._model, "url": url}
        sdk, transport = self._sdk, self._transport
        timeouts = (sdk.APITimeoutError, transport.TimeoutException)
        failures = (sdk.APIConnectionError, transport.TransportError)
        failed = connection_error(error, error.__cause__ or error, timeouts, failures, where)
        if failed is not None:
            return failed
        if isinstance(error, sdk.APIStatusError):
            status: Any = error
            response: Any = status.response
            summary = summarize_body(status.body) or getattr(response, "reason_phrase", "") or ""
            return APIStatusError(
                status.status_code,
                summary or "no error body",
                request_id=status.request_id or header_of(response, "x-request-id", "request-id"),
                provider_trace_id=header_of(response, "x-trace-id"),
                **where,
            )
        if isinstance(error, sdk.APIError):
            api_error: Any = error
            summary = summarize_body(api_error.body) or str(error)
            return ChatProviderError(f"the API reported an error: {summary}", **where)
        return ChatProviderError(f"{type(error).__name__}: {error}", **where)

    def _check_tools(self, tools: Sequence[Tool], dialect_of: Mapping[str, Dialect]) -> None:
        """Raise `DialectError` or ValueError for tools or a tool choice the API would refuse."""
        provider = type(self).__name__
        findings: list[Finding] = []
        for tool in tools:
            findings += check_tools([tool], [dialect_of[tool.name]], include_ignored=False).findings
        if findings:
            dialects = sorted(set(dialect_of.values()))
            raise DialectError(provider, DialectReport([t.name for t in tools], dialects, findings))
        choice = self._tool_choice
        if choice is None or choice in ("auto", "none"):
            return
        if not tools:
            raise ValueError(f"{provider}: tool_choice={choice!r} needs tools, and none were given")
        if choice != "required" and choice not in {t.name for t in tools}:
            names = ", ".join(sorted(t.name for t in tools))
            raise ValueError(
                f"{provider}: tool_choice={choice!r} names no tool of this request (tools: {names})"
            )

    def on_retryable_error(self, error: BaseException) -> bool:
        """Rebuild the client when a retry may then succeed; True when it did.

        After a 401 (a key revoked or rotated), the key is read again from the provider's
        environment variable; when it is there and differs from the one in use, the client is
        rebuilt with it (same base URL, timeouts and transport). Other errors: False, the
        SDK client already retries what it can.
        """
        if not (isinstance(error, APIStatusError) and error.status_code == 401):
            return False
        key = os.environ.get(self._key_variable) if self._key_variable else None
        if not key or key == self.client.api_key:
            return False
        self.client = self.client.with_options(api_key=key)
        return True

    async def aclose(self) -> None:
        """Close the HTTP client (copies made by the `with_...` methods share it)."""
        await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class CompletedMessage:
    """A whole (non-streamed) answer played as the parts a stream would give."""

    def __init__(
        self,
        parts: Sequence[StreamedMessagePart],
        *,
        id: str | None = None,
        usage: TokenUsage | None = None,
        finish_reason: str | None = None,
        request_id: str | None = None,
        provider_trace_id: str | None = None,
        model: str | None = None,
    ) -> None:
        self._parts = list(parts)
        self.model = model
        self.id = id
        self.usage = usage
        self.finish_reason = finish_reason
        self.request_id = request_id
        self.provider_trace_id = provider_trace_id

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        for part in self._parts:
            yield part


class SDKStream:
    """An answer an SDK streams, as parts (`_parts`); its id, usage and finish reason once read.

    What the SDK raises meanwhile (`_errors`) becomes a `ChatProviderError` (`convert`).
    """

    _errors: ClassVar[tuple[type[BaseException], ...]]

    def __init__(
        self,
        stream: Any,
        convert: Callable[[BaseException], ChatProviderError],
        *,
        request_id: str | None = None,
        provider_trace_id: str | None = None,
    ) -> None:
        self._stream = stream
        self._convert = convert
        self.model: str | None = None
        self.id: str | None = None
        self.usage: TokenUsage | None = None
        self.finish_reason: str | None = None
        self.request_id = request_id
        self.provider_trace_id = provider_trace_id

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        try:
            async for part in self._parts():
                yield part
        except self._errors as e:
            raise self._convert(e) from e

    def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        raise NotImplementedError


def spec_of(model: str, family: str, table: Sequence[tuple[str, _Spec]], default: _Spec) -> _Spec:
    """The spec of the first row of `table` whose prefix `model` starts with, else `default`.

    What comes before the `family` prefix of the id (`us.anthropic.`, `models/`) is skipped.
    """
    name = model.lower()
    name = name[name.find(family) :] if family in name else name
    return next((spec for prefix, spec in table if name.startswith(prefix)), default)


def highest_at_most(options: Sequence[_T], rank: Callable[[_T], int], limit: int) -> _T:
    """The highest of `options` (lowest first) ranked at most `limit`; the lowest if none is."""
    below = [option for option in options if rank(option) <= limit]
    return below[-1] if below else options[0]


def api_key_from(api_key: str | None, variable: str, provider: str) -> str:
    """The key given, or the one in the environment; a clear error when there is none."""
    key = api_key or os.environ.get(variable)
    if not key:
        raise ValueError(
            f"{provider} needs an API key: pass api_key=... or set the {variable} "
            "environment variable"
        )
    return key


def model_from(model: str | None, variable: str, provider: str, default: str | None = None) -> str:
    """The model given, else the environment's, else `default`; a clear error for none."""
    chosen = model or os.environ.get(variable) or default
    if not chosen:
        raise ValueError(f"{provider} needs a model: pass model=... or set {variable}")
    return chosen


def json_object(text: str | None) -> dict[str, Any] | None:
    """`text` parsed as a JSON object; None when it is not one."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as the object APIs want back ({} when they were not one)."""
    return json_object(call.function.arguments) or {}


def split_body(body: Mapping[str, Any], *named: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields an SDK method names (its arguments), and the rest (its `extra_body`)."""
    known = {k: body[k] for k in named if k in body}
    return known, {k: v for k, v in body.items() if k not in known}


def renamed(fields: Mapping[str, Any], old: str, new: str) -> dict[str, Any]:
    """A copy of `fields` with `old` sent as `new` (`new` itself wins when both are there)."""
    out = dict(fields)
    if old in out:
        out.setdefault(new, out.pop(old))
    return out


def header_of(response: Any, *names: str) -> str | None:
    """The first of the headers `names` an HTTP response (or an SDK object holding one) has."""
    headers: Any = getattr(response, "headers", None)
    if headers is None:
        headers = getattr(getattr(response, "response", None), "headers", None)
    if headers is None:
        return None
    for name in names:
        value = headers.get(name)
        if isinstance(value, str) and value:
            return value
    return None


_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def summarize_body(body: object) -> str:
    """A short account of an error body: the JSON error's message, else its first text line.

    An HTML page is read as text (tags dropped), so its title is what remains. At most
    `SUMMARY_LIMIT` characters; "" for an empty body.
    """
    text: str
    if isinstance(body, Mapping):
        data = cast(Mapping[str, Any], body)
        error: Any = data.get("error", data)
        if isinstance(error, Mapping):
            error = cast(Mapping[str, Any], error)
            message, kind = error.get("message"), error.get("type") or error.get("code")
            if isinstance(message, str) and message:
                text = f"{kind}: {message}" if isinstance(kind, str) and kind else message
            else:
                text = json.dumps(dict(data), ensure_ascii=False)
        else:
            text = str(error)
    elif isinstance(body, str):
        raw = body
        if "<" in raw and ">" in raw:
            raw = html.unescape(_TAG.sub("\n", _SCRIPT_OR_STYLE.sub("", raw)))
        text = next((line.strip() for line in raw.splitlines() if line.strip()), "")
    elif body is None:
        text = ""
    else:
        text = str(body)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def connection_error(
    error: BaseException,
    cause: BaseException,
    timeouts: tuple[type[BaseException], ...],
    failures: tuple[type[BaseException], ...],
    where: Mapping[str, Any],
) -> ChatProviderError | None:
    """`error` as a timeout or a failed connection (named by its `cause`); None if neither.

    A timeout is checked first, since it is a connection error too.
    """
    if isinstance(error, timeouts):
        return APITimeoutError(f"the request timed out ({type(cause).__name__})", **where)
    if isinstance(error, failures):
        detail = str(cause) or "no detail"
        return APIConnectionError(f"connection failed: {type(cause).__name__}: {detail}", **where)
    return None
