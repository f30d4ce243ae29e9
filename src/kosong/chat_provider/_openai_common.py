"""What the OpenAI-SDK providers share: the client, errors, keys, the Chat Completions wire.

Private: `OpenAIChat` and `Kimi` are built on `ChatCompletionsProvider`; `OpenAIResponses`
uses the client and error helpers.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal, cast

from typing_extensions import override

from kosong._extras import install_hint
from kosong.chat_provider import (
    AllowedTools,
    ChatProviderError,
    OutputSchema,
    StreamedMessagePart,
    TokenUsage,
    ToolChoice,
)
from kosong.chat_provider._base import (
    APIKey,
    CompletedMessage,
    HTTPProvider,
    SDKStream,
    arguments_object,
    connection_error,
    header_of,
    model_from,
    only_allowed,
    split_body,
    stainless_error,
    status_error,
)
from kosong.chat_provider._media import media_placeholder
from kosong.chat_provider._tool_entries import Described, describe
from kosong.chat_provider.native import native_entries
from kosong.dialects import Dialect
from kosong.formats import to_openai_chat_tool
from kosong.message import (
    ContentPart,
    ImageURLPart,
    Message,
    NativeToolPart,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
)
from kosong.standard import StrictSchemaError, to_strict_schema
from kosong.tooling import Tool

try:
    import httpx2
    import openai
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"this chat provider needs the `openai` package: {install_hint('openai')}"
    ) from e

logger = logging.getLogger("kosong.chat_provider")
SDK_ERRORS = (openai.OpenAIError, httpx2.HTTPError)
_TIMEOUTS = (openai.APITimeoutError, httpx2.TimeoutException)
# A failed connection: the network, the peer breaking the protocol, a proxy (not a malformed
# request or an undecodable body, which a retry repeats).
_FAILURES = (
    openai.APIConnectionError, httpx2.NetworkError, httpx2.RemoteProtocolError, httpx2.ProxyError
)  # fmt: skip

ToolMessageConversion = Literal["extract_text"] | None

# Which models take `reasoning_effort: "max"`: the GPT-5.6 family and later list it in their
# reasoning options (https://platform.openai.com/docs/models, "reasoning_options"; the SDK's
# `ReasoningEffort` names it since openai 3.5x). Before them the highest value is "xhigh"
# (https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort),
# and so it is for a model this table does not know (a compatible server, a new name).
_MAX_EFFORT_SINCE: tuple[int, int] = (5, 6)
_GPT_VERSION = re.compile(r"\Agpt-(\d+)(?:\.(\d+))?")


def openai_effort(effort: str, model: str) -> str:
    """The `reasoning_effort` OpenAI takes for `effort` on `model` ("max" where it exists)."""
    if effort != "max":
        return effort
    found = _GPT_VERSION.match(model.lower())
    version: tuple[int, int] = (int(found[1]), int(found[2] or 0)) if found else (0, 0)
    return "max" if version >= _MAX_EFFORT_SINCE else "xhigh"


def field_of(model: Any, name: str) -> Any:
    """A declared or extra field of an SDK model, or None.

    Not `getattr(model, name, None)`: on a pydantic model a missing attribute raises inside
    `__getattr__`, about 12 µs, and this runs for every chunk.
    """
    value = model.__dict__.get(name)
    if value is None and model.model_extra:
        value = model.model_extra.get(name)
    return value


def json_schema(output: OutputSchema) -> dict[str, Any]:
    """OpenAI's `json_schema` format of an output schema.

    Strict where strict mode can take the schema (converted by `to_strict_schema`), else as
    it is, not strict.
    """
    try:
        return {"name": output.name, "schema": to_strict_schema(output.schema), "strict": True}
    except StrictSchemaError:
        return {"name": output.name, "schema": output.schema, "strict": False}


def _get(value: Any, name: str) -> Any:
    """A field of an SDK object or of a plain dict (an undeclared field is a dict), or None."""
    if value is None:
        return None
    if isinstance(value, dict):
        return cast(dict[str, Any], value).get(name)
    return getattr(value, name, None)


def _has_field(model: Any, name: str) -> bool:
    return name in model.__dict__ or bool(model.model_extra and name in model.model_extra)


class OpenAIProvider(HTTPProvider):
    """A provider on the `openai` SDK's client (the base of OpenAIChat, Kimi, OpenAIResponses).

    The model, key and base URL come from the arguments, else from the environment variables
    the subclass names, else its defaults.
    """

    _errors = SDK_ERRORS
    _key_variable: ClassVar[str] = "OPENAI_API_KEY"
    _model_variable: ClassVar[str] = "OPENAI_MODEL"
    _default_model: ClassVar[str | None] = None
    _base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    _default_base_url: ClassVar[str | None] = None

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | Callable[[], str] | None = None,
        base_url: str | None = None,
        stream: bool = True,
        tool_message_conversion: ToolMessageConversion = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` with `api_key` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        title = type(self).__name__
        model = model_from(model, self._model_variable, title, self._default_model)
        super().__init__(model, generation_kwargs, stream=stream)
        self._tool_message_conversion = tool_message_conversion
        self._key = APIKey(api_key, [self._key_variable], title)
        self.client: openai.AsyncOpenAI = openai.AsyncOpenAI(
            api_key=self._key(),
            base_url=base_url or os.environ.get(self._base_url_variable) or self._default_base_url,
            **client_kwargs,
        )
        """The `openai.AsyncOpenAI` client (transport, retries, timeouts)."""

    def _error(self, error: BaseException, url: str) -> ChatProviderError:
        """An `openai` SDK or `httpx2` error as one of ours."""
        where = self._where(url)
        failed = connection_error(error, error.__cause__ or error, _TIMEOUTS, _FAILURES, where)
        if failed is not None:
            return failed
        if isinstance(error, openai.APIStatusError):
            return status_error(error.response, error.body, error.request_id, where)
        if isinstance(error, httpx2.HTTPStatusError):
            return status_error(error.response, None, None, where)
        if isinstance(error, openai.APIError):
            return stainless_error(error.body, str(error), type(error) is openai.APIError, where)
        return ChatProviderError(f"{type(error).__name__}: {error}", **where)


class ChatCompletionsProvider(OpenAIProvider):
    """A Chat Completions provider on the `openai` SDK (the base of OpenAIChat and Kimi).

    Subclasses say how tools go (`_prepare_tool`, `_tool_entry`), how media parts go
    (`_media_part`) and how thinking is asked for (`_thinking_fields`).
    """

    name = "openai"
    _dialect: Dialect = "openai"
    _strict_dialect: Dialect = "openai-strict"
    """The rules a strict tool is checked against."""
    _allowed_subset = True
    """Whether the API takes `allowed_tools` (else only the allowed tools are sent)."""
    _output_fields = ("response_format",)
    _custom_tools = True
    """Whether the API takes custom tools (else a free-form tool is a function of one string)."""
    _path = "chat/completions"
    _renames: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"max_tokens": "max_completion_tokens"}
    )
    _managed_fields = frozenset(
        {"model", "messages", "stream", "stream_options", "tools", "tool_choice"}
    )
    _tool_media = False
    """Whether tool messages take media parts (Moonshot's do; OpenAI's take text only)."""
    _reasoning_key: str | None = None
    """The field thinking streams in and goes back in (None: the answer's thinking is not read)."""

    def _prepare_tool(self, tool: Tool) -> Tool:
        """The tool as the API gets it (the dialect's safe fixes applied, where needed)."""
        return tool

    def _tool_entry(self, tool: Tool) -> dict[str, Any]:
        return to_openai_chat_tool(tool)

    def _describe(self, tool: Tool) -> Described:
        prepared = self._prepare_tool(tool)
        dialect = self._strict_dialect if tool.strict else self._dialect
        return describe(prepared, dialect, self._tool_entry(prepared))

    def _thinking_fields(self) -> dict[str, Any]:
        effort = self._thinking
        if effort is None or effort == "off":
            # "off": no reasoning asked for, as the published package does (the field is left
            # out; "none" is not a value every model or compatible server takes).
            return {}
        return {"reasoning_effort": openai_effort(effort, self.model_name)}

    def _history_fields(self, history: Sequence[Message]) -> dict[str, Any]:
        """Fields the history calls for (none here; see `OpenAIChat`)."""
        return {}

    @override
    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        if not self._allowed_subset:
            tools = only_allowed(tools, self._tool_choice)
        described = self._described(tools)
        messages: list[dict[str, Any]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.extend(self._message(m) for m in history)
        body: dict[str, Any] = {"model": self._model, "messages": messages}
        if self._stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self._thinking_fields())
        body.update(self._history_fields(history))
        entries = [d.sent() for d in described]
        entries += native_entries(self.name, self._native_tools).tools
        if entries:
            body["tools"] = entries
        if self._tool_choice is not None:
            body["tool_choice"] = self._choice_entry(self._tool_choice)
        if entries and self._parallel is not None:
            body["parallel_tool_calls"] = self._parallel
        body.update(self._sent_kwargs())
        if self._output is not None:
            self._ask_format(body, self._output)
        return body

    def _ask_format(self, body: dict[str, Any], output: OutputSchema) -> None:
        """Ask for an answer following `output`: OpenAI's `json_schema` response format."""
        body["response_format"] = {"type": "json_schema", "json_schema": json_schema(output)}

    def _call_entry(self, call: ToolCall) -> dict[str, Any]:
        """A call of the history: a custom tool's with its text, where the API has them."""
        if call.type == "custom" and self._custom_tools:
            custom = {"name": call.function.name, "input": call.function.arguments or ""}
            return {"id": call.id, "type": "custom", "custom": custom}
        arguments = call.function.arguments or "{}"
        if call.type == "custom":
            arguments = json.dumps(arguments_object(call), ensure_ascii=False)
        function = {"name": call.function.name, "arguments": arguments}
        return {"id": call.id, "type": "function", "function": function}

    def _choice_entry(self, choice: ToolChoice) -> str | dict[str, Any]:
        """`tool_choice` on the wire: a mode, a named function, or `allowed_tools`."""
        if isinstance(choice, AllowedTools):
            if not self._allowed_subset:
                return choice.mode  # the other tools were left out of the request
            functions = [{"type": "function", "function": {"name": n}} for n in choice.names]
            return {
                "type": "allowed_tools",
                "allowed_tools": {"mode": choice.mode, "tools": functions},
            }
        if choice in ("auto", "none", "required"):
            return choice
        return {"type": "function", "function": {"name": choice}}

    def _media_part(self, part: ContentPart) -> dict[str, Any] | None:
        """A media part on the wire, or None where the API takes no such part."""
        if isinstance(part, ImageURLPart):
            return {"type": "image_url", "image_url": {"url": part.image_url.url}}
        return None

    def _content(self, parts: Sequence[ContentPart], *, media: bool) -> str | list[dict[str, Any]]:
        """A string for one text (or none), else a part list; `media`: media parts may go."""
        wire: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, TextPart):
                wire.append({"type": "text", "text": part.text})
            elif not isinstance(part, ThinkPart | NativeToolPart):  # never sent as content
                found = self._media_part(part) if media else None
                wire.append(found or {"type": "text", "text": media_placeholder(part)})
        if len(wire) == 1 and wire[0]["type"] == "text":
            return wire[0]["text"]
        return wire or ""

    def _message(self, message: Message) -> dict[str, Any]:
        out: dict[str, Any] = {"role": message.role}
        if message.role == "tool" and self._tool_message_conversion == "extract_text":
            out["content"] = message.extract_text("\n")
        elif message.role == "tool":
            out["content"] = self._content(message.content, media=self._tool_media)
        elif message.role == "assistant":
            text = message.extract_text()
            if not (message.tool_calls and not text.strip()):
                out["content"] = text  # only tool calls: no empty text beside them
            thinking = [p for p in message.content if isinstance(p, ThinkPart)]
            if self._reasoning_key and thinking:
                # Sent even when empty: backends that keep thinking need the field back.
                out[self._reasoning_key] = "".join(p.think for p in thinking)
            if message.tool_calls:
                out["tool_calls"] = [self._call_entry(call) for call in message.tool_calls]
        else:
            out["content"] = self._content(message.content, media=True)
        if message.name is not None:
            out["name"] = message.name
        if message.tool_call_id is not None:
            out["tool_call_id"] = message.tool_call_id
        if message.partial:
            out["partial"] = True
        return out

    async def _send(self, body: dict[str, Any]) -> ChatCompletionsStream | CompletedMessage:
        known, rest = split_body(body, "model", "messages", "stream")
        known["extra_headers"] = self._key_headers()
        completions = self.client.chat.completions
        if self._stream:
            stream = cast(Any, await completions.create(**known, extra_body=rest))
            return ChatCompletionsStream(stream, self._reasoning_key, self._convert)
        raw = cast(Any, await completions.with_raw_response.create(**known, extra_body=rest))
        parsed = raw.parse()
        if inspect.isawaitable(parsed):  # a raw response whose parse is async
            parsed = await parsed
        return self._completed(parsed, raw)

    def _completed(self, completion: Any, raw: Any) -> CompletedMessage:
        parts: list[StreamedMessagePart] = []
        finish_reason: str | None = None
        for choice in completion.choices[:1]:
            message = choice.message
            finish_reason = choice.finish_reason
            if self._reasoning_key and _has_field(message, self._reasoning_key):
                parts.append(ThinkPart(think=field_of(message, self._reasoning_key) or ""))
            if message.content:
                parts.append(TextPart(text=message.content))
            for index, call in enumerate(message.tool_calls or ()):
                custom = call.type == "custom"
                body = call.custom if custom else call.function
                parts.append(
                    ToolCall(
                        id=call.id or f"call_{index}",
                        type="custom" if custom else "function",
                        function=ToolCall.FunctionBody(
                            name=body.name, arguments=body.input if custom else body.arguments
                        ),
                    )
                )
        return CompletedMessage(
            parts,
            model=completion.model,
            id=completion.id,
            usage=usage_of(completion.usage),
            finish_reason=finish_reason,
            request_id=header_of(raw, "x-request-id", "request-id"),
            provider_trace_id=header_of(raw, "x-trace-id"),
        )


@dataclass(slots=True)
class _Call:
    id: str | None
    name: str | None
    arguments: str = ""
    emitted: bool = False
    custom: bool = False

    def complete(self) -> bool:
        """Whether the arguments so far are whole (valid JSON).

        A custom call's text is never known to be whole: the next call waits for its end.
        """
        return not self.custom and _complete_json(self.arguments)

    def emit(self, index: int) -> ToolCall:
        self.emitted = True
        return ToolCall(
            id=self.id or f"call_{index}",
            type="custom" if self.custom else "function",
            function=ToolCall.FunctionBody(name=self.name or "", arguments=self.arguments),
        )


def _complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class ToolCallAssembler:
    """Turns Chat Completions tool-call deltas into calls and fragments, by their `index`.

    Fragments of several calls may interleave (each delta names its call by `index`). The
    assembler streams one call at a time: the first call's fragments go out as they come, the
    others wait. When a delta of another call arrives and the current call's arguments are
    complete JSON, the current call is done (the next call goes out with what it has so far);
    otherwise the current call keeps streaming and the other calls keep waiting. `finish()`
    sends whatever is left, in index order, and marks the last call's last fragment.
    """

    def __init__(self) -> None:
        self._calls: dict[int, _Call] = {}
        self._current: int | None = None
        self._ids: dict[str, int] = {}
        self._last_index = -1

    def index_for(self, id: str | None) -> int:
        """The index of a delta that names none, as some compatible servers send them.

        A new id starts a new call; a delta without an id continues the last one.
        """
        if id is None:
            return max(self._last_index, 0)
        if id not in self._ids:
            self._ids[id] = self._last_index + 1
        return self._ids[id]

    def feed(
        self,
        index: int,
        id: str | None,
        name: str | None,
        arguments: str | None,
        *,
        custom: bool = False,
    ) -> Iterator[StreamedMessagePart]:
        """The parts a delta of call `index` lets out now (see the class doc).

        `custom`: the call is a custom tool's, its `arguments` a text (not JSON).
        """
        self._last_index = max(self._last_index, index)
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _Call(id, name, custom=custom)
        else:
            call.id = call.id or id
            call.name = call.name or name
        fragment = arguments or ""
        call.arguments += fragment
        if self._current is None:
            yield from self._start_next()
        elif index == self._current:
            if call.emitted and fragment:
                yield ToolCallPart(arguments_part=fragment)
            elif not call.emitted:
                yield from self._start_next()
        elif not call.emitted and self._calls[self._current].complete():
            self._current = None
            yield from self._start_next()
        elif call.emitted:
            logger.warning("a fragment for tool call %s came after the call was complete", call.id)

    def _start_next(self) -> Iterator[StreamedMessagePart]:
        index = min((i for i, c in self._calls.items() if not c.emitted), default=None)
        # A call whose name has not arrived yet waits for it.
        if index is not None and self._calls[index].name is not None:
            self._current = index
            yield self._calls[index].emit(index)

    def done(self, index: int) -> Iterator[StreamedMessagePart]:
        """The provider says call `index` is complete: mark it, and start the next one."""
        if index == self._current:
            yield ToolCallPart(last=True)
            del self._calls[index]
            self._current = None
            yield from self._start_next()

    def finish(self) -> Iterator[StreamedMessagePart]:
        """Send the calls still waiting, in order; mark the last call complete."""
        if not self._calls:
            return
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.emitted:
                yield call.emit(index)
        self._calls.clear()
        self._current = None
        yield ToolCallPart(last=True)


def usage_of(raw: Any) -> TokenUsage | None:
    """`TokenUsage` from a Chat Completions `usage` object or dict."""
    if raw is None:
        return None
    data = cast(Mapping[str, Any], raw if isinstance(raw, Mapping) else raw.model_dump())
    prompt = int(data.get("prompt_tokens") or 0)
    details = cast(Mapping[str, Any], data.get("prompt_tokens_details") or {})
    cached = int(details.get("cached_tokens") or data.get("cached_tokens") or 0)
    thought = cast(Mapping[str, Any], data.get("completion_tokens_details") or {})
    return TokenUsage(
        input_other=prompt - cached,
        output=int(data.get("completion_tokens") or 0),
        input_cache_read=cached,
        output_reasoning=int(thought.get("reasoning_tokens") or 0),
    )


class ChatCompletionsStream(SDKStream):
    """A Chat Completions answer as `StreamedMessagePart`s."""

    _errors = SDK_ERRORS

    def __init__(
        self,
        stream: Any,
        reasoning_key: str | None,
        convert: Callable[[BaseException], ChatProviderError],
    ) -> None:
        response = getattr(stream, "response", None)
        super().__init__(
            stream,
            convert,
            request_id=header_of(response, "x-request-id", "request-id"),
            provider_trace_id=header_of(response, "x-trace-id"),
        )
        self._reasoning_key = reasoning_key

    async def _parts(self) -> AsyncIterator[StreamedMessagePart]:
        calls = ToolCallAssembler()
        reasoning_key = self._reasoning_key
        reasoning_seen = False
        async for chunk in self._stream:
            self.id = chunk.id or self.id
            self.model = chunk.model or self.model
            if chunk.usage is not None:
                self.usage = usage_of(chunk.usage)
            for choice in chunk.choices:
                delta = choice.delta
                if reasoning_key is not None:
                    thinking = field_of(delta, reasoning_key)
                    # The first reasoning field is kept even when empty: it says the
                    # backend thinks, and the field must go back on the next turn.
                    if thinking or (thinking is not None and not reasoning_seen):
                        reasoning_seen = True
                        yield ThinkPart(think=thinking)
                if delta.content:
                    yield TextPart(text=delta.content)
                for tc in delta.tool_calls or ():
                    custom: Any = field_of(tc, "custom")
                    body: Any = custom or tc.function
                    index = field_of(tc, "index")
                    for part in calls.feed(
                        calls.index_for(tc.id) if index is None else index,
                        tc.id,
                        _get(body, "name"),
                        _get(body, "input" if custom else "arguments"),
                        custom=custom is not None,
                    ):
                        yield part
                extra_usage = field_of(choice, "usage")  # Moonshot puts it here
                if extra_usage is not None:
                    self.usage = usage_of(extra_usage)
                if choice.finish_reason is not None:
                    self.finish_reason = choice.finish_reason
                    for part in calls.finish():
                        yield part
        for part in calls.finish():
            yield part
