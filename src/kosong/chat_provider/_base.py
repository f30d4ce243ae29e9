"""What kosong's providers share: options set on copies, the API key, the client's life, errors.

Private: the public classes are in `kimi`, `openai`, `anthropic`, `gemini`, `scripted` and `mock`.

Every option is set on a copy (`with_thinking`, `with_tool_choice`, `with_generation_kwargs`):
a provider is never changed, so one can be shared, and `generate(..., tool_choice=...,
generation_overrides=...)` makes a per-call copy the same way. A copy checks itself
(`_check_options`), so an option the provider cannot send is a `ValueError` at the `with_...`
call that set it, naming the option, before anything is sent. A key that can change (read
from the environment or a callable) lives in an `APIKey` the copies share: it is read before
each request, so a rotated key reaches the provider and every copy at once.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar, cast

from kosong._deprecated import warn_old_name
from kosong.chat_provider import (
    AllowedTools,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    OutputSchema,
    StreamedMessage,
    StreamedMessagePart,
    ThinkingEffort,
    TokenUsage,
    ToolChoice,
)
from kosong.chat_provider._tool_entries import Described, described
from kosong.chat_provider.native import NativeToolSpec, native_entries
from kosong.dialects import Dialect, DialectError, DialectReport
from kosong.message import Message, ToolCall
from kosong.tooling import Tool

if TYPE_CHECKING:  # the SDKs' transport, installed with any provider extra
    import httpx2

__all__ = [
    "APIKey",
    "CompletedMessage",
    "HTTPProvider",
    "ProviderBase",
    "SDKStream",
    "arguments_object",
    "connection_error",
    "forces_a_call",
    "header_of",
    "highest_at_most",
    "json_object",
    "merged",
    "model_from",
    "only_allowed",
    "renamed",
    "spec_of",
    "split_body",
    "stainless_error",
    "status_error",
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
        self._parallel: bool | None = None
        self._native_tools: tuple[NativeToolSpec, ...] = ()
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
    def parallel_tool_calls(self) -> bool | None:
        """Whether the model may make several tool calls in one answer; None: the default."""
        return self._parallel

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
        if choice == "":
            raise ValueError(
                f"tool_choice must be one of {', '.join(_TOOL_CHOICES)}, a tool's name or "
                f"AllowedTools(names), got {choice!r}"
            )
        return self._copy_with(_tool_choice=choice)

    @property
    def native_tools(self) -> tuple[NativeToolSpec, ...]:
        """The provider-run tools sent with every request (`kosong.chat_provider.native`)."""
        return self._native_tools

    def with_native_tools(self, tools: Sequence[NativeToolSpec]) -> Self:
        """A copy that also sends these native tools (web search, code execution, MCP...).

        Raises:
            ValueError: the provider has no such tool, or not with these options (the
                message names the provider and the tool).
        """
        chosen = tuple(tools)
        native_entries(self.name, chosen)  # refused here, before anything is sent
        return self._copy_with(_native_tools=chosen)

    def with_parallel_tool_calls(self, parallel: bool | None) -> Self:
        """A copy that allows (True) or forbids (False) several tool calls in one answer.

        None: the API's default (allowed everywhere). Sent only with tools.

        Raises:
            ValueError: the provider cannot send it (Gemini cannot forbid parallel calls).
        """
        return self._copy_with(_parallel=parallel)

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
    """The SDK client (transport, retries, timeouts), shared by the copies."""
    _key: APIKey
    _key_header: ClassVar[tuple[str, str]] = ("Authorization", "Bearer {}")
    """The header a key read before a request goes in, and its form."""
    _errors: ClassVar[tuple[type[BaseException], ...]]
    _path: ClassVar[str] = ""
    _renames: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Generation kwargs the API names otherwise (`max_tokens` → `max_completion_tokens`)."""

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

    _output: OutputSchema | None = None
    _output_fields: ClassVar[tuple[str, ...]] = ()
    """Generation kwargs that would ask for an answer format too (refused with an output
    schema: the two would fight)."""

    @property
    def output_schema(self) -> OutputSchema | None:
        """The JSON Schema the answer is asked to follow, or None for free text."""
        return self._output

    def with_output_schema(self, output: OutputSchema | None) -> Self:
        """A copy that asks for an answer in JSON following `output.schema`, in the API's way.

        `kosong.agent_loop(..., output_type=T)` uses it; None asks for free text again.

        Raises:
            ValueError: the generation kwargs already ask for an answer format (say
                `response_format`): the two would fight.
        """
        return self._copy_with(_output=output)

    def _copy_with(self, **attributes: Any) -> Self:
        clone = super()._copy_with(**attributes)
        clone._check_output()
        return clone

    def _check_output(self) -> None:
        given = sorted(set(self._generation_kwargs) & set(self._output_fields))
        if self._output is not None and given:
            raise ValueError(
                f"{type(self).__name__}: output_type asks for the answer's format, and the "
                f"generation kwargs set {', '.join(given)} too: give one of them"
            )

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
        self,
        system_prompt: str,
        tools: Sequence[Tool],
        history: Sequence[Message],
        *,
        generation_overrides: Mapping[str, Any] | None = None,
    ) -> StreamedMessage:
        """Send the request and return the answer (streamed, or whole with `stream=False`).

        `generation_overrides` (request fields such as `temperature` or `max_tokens`) apply to
        this request only, on a copy (`with_generation_kwargs`).

        Raises:
            DialectError: the service would reject one of the tool definitions (not sent).
            ValueError: `tool_choice` names no tool of the request, the history holds what
                the API cannot take, or an override is a field the provider sets itself (not
                sent).
            ChatProviderError: the request failed.
        """
        if generation_overrides:
            provider = self.with_generation_kwargs(**generation_overrides)
            return await provider.generate(system_prompt, tools, history)
        body = self.request_body(system_prompt, tools, history)
        try:
            return await self._send(body)
        except self._errors as e:
            raise self._convert(e) from e

    async def _send(self, body: dict[str, Any]) -> StreamedMessage:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        """The URL requests go to (telemetry's `server.address` and `server.port`)."""
        return self._endpoint()

    def _endpoint(self) -> str:
        # Read only when an error names it: a client given by the caller may have no base_url.
        base = getattr(self.client, "base_url", None)
        return f"{str(base).rstrip('/')}/{self._path}" if base is not None else self._path

    @property
    def model_parameters(self) -> dict[str, Any]:
        """What this provider asks the model with, for logs and traces.

        The base URL and the generation kwargs under the names they are sent as (a kwarg set
        to None is listed here and left out of requests).
        """
        base = getattr(self.client, "base_url", None)
        fields = dict(self._generation_kwargs)
        for old, new in self._renames.items():
            fields = renamed(fields, old, new)
        return {"base_url": str(base) if base is not None else None, **fields}

    def _sent_kwargs(self) -> dict[str, Any]:
        """The generation kwargs as sent: renamed, without the ones set to None (the default)."""
        fields = self.model_parameters
        del fields["base_url"]
        return {k: v for k, v in fields.items() if v is not None}

    def _convert(self, error: BaseException) -> ChatProviderError:
        """What the SDK or the transport raised, as a `ChatProviderError` naming the URL."""
        return self._error(error, self._endpoint())

    def _error(self, error: BaseException, url: str) -> ChatProviderError:
        """What this provider's SDK or its transport raised, as one of ours."""
        raise NotImplementedError

    def _where(self, url: str) -> dict[str, Any]:
        return {"provider": self.name, "model": self._model, "url": url}

    def _key_headers(self) -> dict[str, str]:
        """The key read now, as a request header; none for a fixed key (the client has it)."""
        if self._key.fixed:
            return {}
        name, form = self._key_header
        return {name: form.format(self._key())}

    def _describe(self, tool: Tool) -> Described:
        """`tool` as this provider sends it (`describe`): a function of the tool alone.

        Made once per tool and provider class (see `_described`), so it reads nothing of
        this provider's options.
        """
        raise NotImplementedError

    def _described(self, tools: Sequence[Tool]) -> list[Described]:
        """Each tool as sent (made once per tool while it is unchanged), all of them sendable.

        Raises:
            DialectError: the API would reject a tool definition (the report names each).
            ValueError: the tool choice names no tool of the request, or there are none.
        """
        kind = type(self)
        sent = [described(tool, kind, self._describe) for tool in tools]
        findings = [finding for d in sent for finding in d.rejected]
        if findings:
            dialects: list[Dialect] = sorted({d.dialect for d in sent})
            report = DialectReport([t.name for t in tools], dialects, findings)
            raise DialectError(type(self).__name__, report)
        self._check_choice(tools)
        return sent

    def _check_choice(self, tools: Sequence[Tool]) -> None:
        """Raise ValueError for a tool choice the request cannot honour."""
        provider = type(self).__name__
        choice = self._tool_choice
        if choice is None or choice in ("auto", "none"):
            return
        if not tools:
            raise ValueError(f"{provider}: tool_choice={choice!r} needs tools, and none were given")
        sent = {t.name for t in tools}
        asked = set(choice.names) if isinstance(choice, AllowedTools) else {choice} - {"required"}
        missing = sorted(asked - sent)
        if missing:
            names = ", ".join(sorted(sent))
            raise ValueError(
                f"{provider}: tool_choice={choice!r} names no tool of this request: "
                f"{', '.join(missing)} (tools: {names})"
            )

    def on_retryable_error(self, error: BaseException) -> bool:
        """True when `error` refused the API key and its source now gives another key.

        Nothing changes in the provider: the next request of this provider, or of any copy,
        reads the new key (`APIKey`). A fixed key (a string given), or any other error: False,
        the SDK client already retries what it can.
        """
        return self._refused_key(error) and self._key.changed()

    def _refused_key(self, error: BaseException) -> bool:
        return isinstance(error, APIStatusError) and error.status_code == 401

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

    @property
    def trace_id(self) -> str | None:
        """Deprecated: the older name of `provider_trace_id`."""
        warn_old_name("StreamedMessage.trace_id", "provider_trace_id")
        return self.provider_trace_id

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

    @property
    def trace_id(self) -> str | None:
        """Deprecated: the older name of `provider_trace_id`."""
        warn_old_name("StreamedMessage.trace_id", "provider_trace_id")
        return self.provider_trace_id

    async def __aiter__(self) -> AsyncIterator[StreamedMessagePart]:
        try:
            async for part in self._parts():
                yield part
        except self._errors as e:
            raise self._convert(e) from e

    def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        raise NotImplementedError


def merged(base: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `given` merged in, objects key by key.

    `given` wins on a leaf, so a user's field never loses to one kosong set, and kosong's
    other fields stay (a user's `output_config` keeps the thinking effort).
    """
    out = dict(base)
    for key, value in given.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = merged(cast(Mapping[str, Any], current), cast(Mapping[str, Any], value))
        else:
            out[key] = value
    return out


def forces_a_call(choice: ToolChoice | None) -> bool:
    """Whether `choice` makes the model call a tool (a name, "required", a required subset)."""
    if isinstance(choice, AllowedTools):
        return choice.mode == "required"
    return choice not in (None, "auto", "none")


def only_allowed(tools: Sequence[Tool], choice: ToolChoice | None) -> list[Tool]:
    """The tools an `AllowedTools` choice allows (all of them for another choice).

    The documented equivalent for an API without an allowed-subset choice: the others are left
    out of the request (which changes the tool list, so the prompt cache misses from there).
    """
    if not isinstance(choice, AllowedTools):
        return list(tools)
    return [t for t in tools if t.name in choice.names]


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


class APIKey:
    """Where a provider's API key comes from; the provider and its copies share one.

    A string given is fixed. A callable given is called before every request, and with
    neither the environment `variables` are read before every request (the first one set
    wins): a rotated key is sent by the next request, whichever copy makes it.
    """

    def __init__(
        self, given: str | Callable[[], str] | None, variables: Sequence[str], provider: str
    ) -> None:
        self._given = given
        self._variables = tuple(variables)
        self.fixed = isinstance(given, str)
        read = self._read()
        if not read:
            raise ValueError(
                f"{provider} needs an API key: pass api_key=... or set the "
                f"{' or '.join(self._variables)} environment variable"
            )
        self._sent = read  # the key read last (at first, the one the client is built with)

    def _read(self) -> str | None:
        if isinstance(self._given, str):
            return self._given
        if self._given is not None:
            return self._given()
        return next((os.environ[v] for v in self._variables if os.environ.get(v)), None)

    def __call__(self) -> str:
        """The key to send now (the last one when the source gives none)."""
        self._sent = self._read() or self._sent
        return self._sent

    def changed(self) -> bool:
        """Whether the source now gives a key other than the one sent last."""
        key = self._read()
        return bool(key) and key != self._sent


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
    """A call's arguments as the object APIs want back ({} when they were not one).

    A custom call's text is `{"input": text}`: the function form of a free-form tool.
    """
    if call.type == "custom":
        return {"input": call.function.arguments or ""}
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


def _said(cause: BaseException) -> str:
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def connection_error(
    error: BaseException,
    cause: BaseException,
    timeouts: tuple[type[BaseException], ...],
    failures: tuple[type[BaseException], ...],
    where: Mapping[str, Any],
) -> ChatProviderError | None:
    """`error` as a timeout or a failed connection; None if neither.

    The error is named by its `cause`, with the transport's own words. A timeout is checked
    first, since it is a connection error too.
    """
    if isinstance(error, timeouts):
        return APITimeoutError(f"the request timed out ({_said(cause)})", **where)
    if isinstance(error, failures):
        return APIConnectionError(f"connection failed: {_said(cause)}", **where)
    return None


_TIMED_OUT = re.compile(r"\btim(?:ed|e)[ -]?out\b", re.IGNORECASE)
_CONNECTION_LOST = re.compile(
    r"\bnetwork\b|\bconnection (?:error|lost|reset|closed|refused|aborted)\b|\bdisconnected\b",
    re.IGNORECASE,
)


def _failure_in_words(message: str, where: Mapping[str, Any]) -> ChatProviderError | None:
    """A timeout or a lost connection an SDK reported only in words; None for anything else.

    A timeout wins when both are said ("connection timed out"). Bare "reset" or "closed"
    are not enough: servers say them of other things ("your session has been reset").
    """
    if _TIMED_OUT.search(message):
        return APITimeoutError(f"the request timed out ({message})", **where)
    if _CONNECTION_LOST.search(message):
        return APIConnectionError(f"connection failed: {message}", **where)
    return None


def status_error(
    response: httpx2.Response, body: object, request_id: str | None, where: Mapping[str, Any]
) -> APIStatusError:
    """An HTTP error status (`response`, an `httpx2.Response`) and its parsed `body` as ours."""
    summary = summarize_body(body) or response.reason_phrase or "no error body"
    return APIStatusError(
        response.status_code,
        summary,
        request_id=request_id or header_of(response, "x-request-id", "request-id"),
        provider_trace_id=header_of(response, "x-trace-id"),
        **where,
    )


def stainless_error(
    body: object, message: str, bare: bool, where: Mapping[str, Any]
) -> ChatProviderError:
    """An `APIError` of the `openai` or `anthropic` SDK that is neither a status nor a timeout.

    A `bare` one (the base class) without a body is what the SDKs raise when a stream breaks
    ("Network connection lost.", "timed out"): said in words, not by its type.
    """
    failed = _failure_in_words(message, where) if bare and body is None else None
    return failed or ChatProviderError(
        f"the API reported an error: {summarize_body(body) or message}", **where
    )
