"""`Gemini`: Google's Gemini models through the Gemini API, on the official `google-genai` SDK.

Needs the `google` extra (the `google` extra). The request body is built from plain
dicts as the API reference documents it (https://ai.google.dev/api/generate-content); the SDK
sends it as written (its types check the contents first), and handles auth, retries, the SSE
stream, response types and errors.
"""

from __future__ import annotations

import copy
import mimetypes
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

from typing_extensions import override

from kosong._extras import install_hint

try:
    import httpx2
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
    from pydantic import TypeAdapter, ValidationError
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"the Gemini provider needs the `google-genai` package: {install_hint('google')}"
    ) from e

from kosong.chat_provider import (
    AllowedTools,
    APIStatusError,
    ChatProviderError,
    ThinkingEffort,
    ToolChoice,
)
from kosong.chat_provider._base import (
    APIKey,
    HTTPProvider,
    arguments_object,
    connection_error,
    header_of,
    highest_at_most,
    json_object,
    spec_of,
    summarize_body,
)
from kosong.chat_provider._gemini_answer import (
    ERRORS,
    METADATA_KEYS,
    SIGNATURE_KEY,
    TRANSPORT_ERRORS,
    GeminiStream,
)
from kosong.chat_provider._media import data_url, media_placeholder, media_url
from kosong.chat_provider._tool_entries import Described, describe
from kosong.chat_provider.native import native_entries
from kosong.dialects import fix_tool
from kosong.formats import to_gemini_function_declaration
from kosong.message import ContentPart, Message, NativeToolPart, TextPart, ThinkPart
from kosong.tooling import Tool

__all__ = [
    "DEFAULT_GEMINI_BASE_URL",
    "DEFAULT_GEMINI_MODEL",
    "GEMINI_THINKING_BUDGETS",
    "MODELS",
    "Gemini",
    "ModelSpec",
    "model_spec",
]

DEFAULT_GEMINI_MODEL = "gemini-3.8-flash"
"""The model used when none is given and `GEMINI_MODEL` is not set."""
DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
"""The API used when no `base_url` is given and `GOOGLE_GEMINI_BASE_URL` is not set."""

GEMINI_THINKING_BUDGETS: dict[ThinkingEffort, int] = {
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 24576,
    "max": 32768,
}
"""The `thinkingBudget` (tokens) each effort asks for on models that take a budget, clamped to
the model's range."""

Level = Literal["MINIMAL", "LOW", "MEDIUM", "HIGH"]
_LEVEL_RANK: dict[str, int] = {"MINIMAL": 0, "LOW": 1, "MEDIUM": 2, "HIGH": 3}
_EFFORT_RANK: dict[ThinkingEffort, int] = {"low": 1, "medium": 2, "high": 3, "xhigh": 4, "max": 5}


class ModelSpec(NamedTuple):
    """What a Gemini model family takes: how thinking is asked for, media in tool results."""

    levels: tuple[Level, ...]
    """The `thinkingLevel` values the model takes, lowest first; empty: it takes a
    `thinkingBudget` instead (`budget`)."""
    budget: tuple[int, int] = (0, 0)
    """The lowest and highest `thinkingBudget` the model takes while thinking."""
    off: Literal["minimal", "zero", "refuse"] = "refuse"
    """What "off" sends: `thinkingLevel: "MINIMAL"` (the API's "no thinking for most
    queries"), `thinkingBudget: 0`, or nothing: the model always thinks (a ValueError)."""
    tool_media: bool = True
    """Whether a function response takes images and PDFs as `parts` (Gemini 3 and later)."""


_ALL_LEVELS: tuple[Level, ...] = ("MINIMAL", "LOW", "MEDIUM", "HIGH")
_NO_MINIMAL: tuple[Level, ...] = ("LOW", "MEDIUM", "HIGH")

# Sources: https://ai.google.dev/gemini-api/docs/thinking ("thinkingLevel" for Gemini 3 and
# later, "thinkingBudget" ranges for 2.5: Pro 128-32768 and always on, Flash 0-24576, Flash-Lite
# 512-24576, 0 turning thinking off; thinking cannot be turned off on the Pro models), the
# per-model table of supported thinking levels in
# https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/thinking (3.8 and 3.7
# Flash: LOW, MEDIUM, HIGH; 3.6 / 3.5 Flash and Flash-Lite: MINIMAL to HIGH; 3.1 Pro: LOW to
# HIGH; 3 Pro: LOW and HIGH) and https://ai.google.dev/gemini-api/docs/function-calling
# (multimodal function responses, Gemini 3 and later). The first row whose prefix the model id
# starts with wins; a model in none (a newer one) is taken to be like the newest rows.
MODELS: tuple[tuple[str, ModelSpec], ...] = (
    ("gemini-3.8-flash", ModelSpec(_NO_MINIMAL)),
    ("gemini-3.7-flash", ModelSpec(_NO_MINIMAL)),
    ("gemini-3.6-flash", ModelSpec(_ALL_LEVELS, off="minimal")),
    ("gemini-3.5-flash", ModelSpec(_ALL_LEVELS, off="minimal")),
    ("gemini-3.1-pro", ModelSpec(_NO_MINIMAL)),
    ("gemini-3.1-flash", ModelSpec(_ALL_LEVELS, off="minimal")),
    ("gemini-3-pro", ModelSpec(("LOW", "HIGH"))),
    ("gemini-3-flash", ModelSpec(_ALL_LEVELS, off="minimal")),
    ("gemini-2.5-pro", ModelSpec((), (128, 32768), "refuse", tool_media=False)),
    ("gemini-2.5-flash-lite", ModelSpec((), (512, 24576), "zero", tool_media=False)),
    ("gemini-2.5-flash", ModelSpec((), (1, 24576), "zero", tool_media=False)),
)
"""Model family (an id prefix) → what it takes; see the sources in the module."""

_NEWEST = ModelSpec(_NO_MINIMAL)

# Images and documents a function response takes inline (the function-calling guide's
# "multimodal function responses"); other media go as a placeholder in the text.
_TOOL_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif", "application/pdf"}
)
# A signature for a call made without one (a history from another provider): the thought
# signatures guide documents this value for exactly that case.
_SKIP_SIGNATURE = "skip_thought_signature_validator"
_TOP_LEVEL_FIELDS = frozenset({"cachedContent", "safetySettings"})
_CONTENTS = TypeAdapter(list[genai_types.Content])


def model_spec(model: str) -> ModelSpec:
    """The `ModelSpec` of a model id (a prefix such as `models/` is skipped)."""
    return spec_of(model, "gemini-", MODELS, _NEWEST)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class Gemini(HTTPProvider):
    """Gemini through the Gemini API (`generateContent` / `streamGenerateContent`).

    - `model`: default `GEMINI_MODEL`, else `DEFAULT_GEMINI_MODEL`.
    - `api_key`: a key, or a callable read before each request; default `GOOGLE_API_KEY`, else
      `GEMINI_API_KEY` (the SDK's order), read before each request. Gemini refuses a key with
      a 401, a 403 or a 400 `API key not valid`.
    - `base_url`: default `GOOGLE_GEMINI_BASE_URL`, else `DEFAULT_GEMINI_BASE_URL`; `api_version`:
      "v1beta", the version the API reference documents.
    - `stream=False` makes one `generateContent` request instead of a streamed one (same parts).
    - `max_retries` (default 2) and `timeout` (seconds) go to the SDK's HTTP options; other
      keyword arguments go to `google.genai.Client` (`http_options`, `debug_config`...).
    - Tools go as `functionDeclarations` with their JSON Schema in `parametersJsonSchema`,
      after the dialect check's safe fixes; a schema Gemini would still reject raises
      `DialectError` before anything is sent.
    - Function calls come whole (several in one answer: parallel calls), each as a
      `ToolCall`; its thought signature is kept in `extras["thought_signature_b64"]` and goes
      back on the same `functionCall` part. Thought summaries come as `ThinkPart`s; a
      signature on a thought or text part is kept in a `ThinkPart`'s `encrypted` and goes back
      on that part. Calls from another provider's history get the signature the API documents
      for them (`skip_thought_signature_validator`).
    - Tool results go as `functionResponse` parts (`{"output": text}`, several text parts one
      line each), consecutive ones in one turn; images and PDFs given as data URLs go as
      `inlineData` parts of the response on Gemini 3 and later, any other medium as a short
      placeholder naming its type and size.
    - `with_thinking(effort)`: `thinkingLevel` or `thinkingBudget` by model family (`MODELS`),
      with `includeThoughts: true`; "off" sends what turns thinking off where the model allows
      it and is a ValueError where it does not.
    - `with_tool_choice`: `functionCallingConfig` mode AUTO, NONE, ANY, or ANY with
      `allowedFunctionNames` for a tool's name. When every tool sent is strict and the choice
      is the model's (None or "auto"), the mode is VALIDATED: calls adhere to the schemas.
      `AllowedTools` goes as `allowedFunctionNames` with mode VALIDATED ("auto") or ANY
      ("required"). The API has no parallel-calls switch: `with_parallel_tool_calls(False)`
      is a ValueError.
      Gemini's mode applies to all functions, so with strict and other tools together none
      is constrained (the toolset still validates every call).
    - Generation kwargs go in `generationConfig` (snake_case names are sent in camelCase,
      `max_tokens` as `maxOutputTokens`), `cached_content` and `safety_settings` at the top.
    - Caching is implicit on the server; cached tokens are counted in `TokenUsage`.
    """

    name = "gemini"
    _errors = ERRORS
    _key_header = ("x-goog-api-key", "{}")
    _output_fields = (
        "response_mime_type", "responseMimeType", "response_json_schema", "responseJsonSchema",
        "response_schema", "responseSchema",
    )  # fmt: skip
    _managed_fields = frozenset(
        {"model", "contents", "stream", "tools", "system_instruction", "systemInstruction"}
        | {"tool_config", "toolConfig", "thinking_config", "thinkingConfig"}
    )

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | Callable[[], str] | None = None,
        base_url: str | None = None,
        api_version: str = "v1beta",
        stream: bool = True,
        max_retries: int = 2,
        timeout: float | None = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no API key was given or found in the environment.
        """
        super().__init__(
            model or os.environ.get("GEMINI_MODEL") or DEFAULT_GEMINI_MODEL,
            generation_kwargs,
            stream=stream,
        )
        self._key = APIKey(api_key, ["GOOGLE_API_KEY", "GEMINI_API_KEY"], "Gemini")
        base = base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or DEFAULT_GEMINI_BASE_URL
        self._base_url = base.rstrip("/")
        self._api_version = api_version
        given: Any = client_kwargs.pop("http_options", None)
        if isinstance(given, genai_types.HttpOptions):
            given = given.model_dump(exclude_none=True)
        options = dict(cast(Mapping[str, Any], given or {}))
        options.setdefault("base_url", self._base_url + "/")
        options.setdefault("api_version", api_version)
        options.setdefault("retry_options", {"attempts": max_retries + 1})
        if timeout is not None:
            options.setdefault("timeout", int(timeout * 1000))  # the SDK takes milliseconds
        http_options = genai_types.HttpOptions.model_validate(options)
        self.client = genai.Client(api_key=self._key(), http_options=http_options, **client_kwargs)
        """The `google.genai.Client` (transport, retries, timeouts)."""

    def _check_options(self) -> None:
        if self._parallel is False:
            raise ValueError(
                "Gemini: with_parallel_tool_calls(False) cannot be sent: the Gemini API has no "
                "switch for parallel function calls (set None, or handle one call per step)"
            )
        if self._thinking == "off" and model_spec(self._model).off == "refuse":
            raise ValueError(
                f'Gemini: with_thinking("off") cannot be sent to {self._model}, which always '
                'thinks (the API cannot turn its thinking off): use with_thinking("low")'
            )

    def _endpoint(self) -> str:
        model = self._model if "/" in self._model else f"models/{self._model}"
        method = "streamGenerateContent?alt=sse" if self._stream else "generateContent"
        return f"{self._base_url}/{self._api_version}/{model}:{method}"

    def _thinking_config(self) -> dict[str, Any] | None:
        effort = self._thinking
        if effort is None:
            return None
        spec = model_spec(self._model)
        if effort == "off":
            return {"thinkingLevel": "MINIMAL"} if spec.off == "minimal" else {"thinkingBudget": 0}
        if spec.levels:
            level = highest_at_most(spec.levels, _LEVEL_RANK.__getitem__, _EFFORT_RANK[effort])
            return {"thinkingLevel": level, "includeThoughts": True}
        low, high = spec.budget
        budget = min(max(GEMINI_THINKING_BUDGETS[effort], low), high)
        return {"thinkingBudget": budget, "includeThoughts": True}

    def _generation_fields(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The `generationConfig` fields, and the fields that go at the top of the body."""
        config: dict[str, Any] = {}
        top: dict[str, Any] = {}
        for key, value in self._generation_kwargs.items():
            name = "maxOutputTokens" if key == "max_tokens" else _camel(key)
            (top if name in _TOP_LEVEL_FIELDS else config)[name] = value
        return config, top

    def _describe(self, tool: Tool) -> Described:
        fixed = fix_tool(tool, "gemini")
        return describe(fixed, "gemini", to_gemini_function_declaration(fixed))

    @override
    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        described = self._described(tools)
        body: dict[str, Any] = {"contents": self._contents(history)}
        if system_prompt:
            body["systemInstruction"] = {"parts": [{"text": system_prompt}]}
        entries = native_entries(self.name, self._native_tools).tools
        if described:
            entries.insert(0, {"functionDeclarations": [d.sent() for d in described]})
        if entries:
            body["tools"] = entries
        choice = self._tool_choice
        if tools and all(t.strict for t in tools) and choice in (None, "auto"):
            # VALIDATED: calls adhere to the schemas, and the model may still answer in text;
            # Gemini applies it to every function, so only when every tool is strict.
            body["toolConfig"] = {"functionCallingConfig": {"mode": "VALIDATED"}}
        elif choice is not None:
            body["toolConfig"] = {"functionCallingConfig": _calling_config(choice)}
        config, top = self._generation_fields()
        if self._output is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = copy.deepcopy(self._output.schema)
        thinking = self._thinking_config()
        if thinking is not None:
            config["thinkingConfig"] = thinking
        # Always there, empty or not: the SDK sends the object whenever a config is given.
        body["generationConfig"] = config
        body.update(top)
        return body

    def _contents(self, history: Sequence[Message]) -> list[dict[str, Any]]:
        names: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        for message in history:
            if message.role == "tool":
                part = self._function_response(message, names)
                previous = out[-1] if out else None
                if previous is not None and all("functionResponse" in p for p in previous["parts"]):
                    previous["parts"].append(part)
                else:
                    out.append({"role": "user", "parts": [part]})
            elif message.role == "assistant":
                for call in message.tool_calls or []:
                    names[call.id] = call.function.name
                parts = _model_parts(message, sign=bool(model_spec(self._model).levels))
                if parts:
                    out.append({"role": "model", "parts": parts})
            elif message.role == "system":
                text = message.extract_text()
                out.append({"role": "user", "parts": [{"text": f"<system>{text}</system>"}]})
            else:
                parts = _user_parts(message.content)
                if parts:
                    out.append({"role": "user", "parts": parts})
        return out

    def _function_response(self, message: Message, names: Mapping[str, str]) -> dict[str, Any]:
        call_id = message.tool_call_id or ""
        if call_id not in names:
            raise ValueError(
                f"Gemini: the tool message for call {call_id!r} answers no call in the history "
                "(Gemini needs the function's name: keep the assistant message that made it)"
            )
        texts: list[str] = []
        media: list[dict[str, Any]] = []
        tool_media = model_spec(self._model).tool_media
        for part in message.content:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ThinkPart | NativeToolPart):
                continue
            else:
                inline = _inline(part)
                if tool_media and inline is not None and inline["mimeType"] in _TOOL_MEDIA_TYPES:
                    media.append({"inlineData": inline})
                else:
                    texts.append(media_placeholder(part))
        response: dict[str, Any] = {
            "id": call_id,
            "name": names[call_id],
            # The reference: "Use 'output' key to specify function output and 'error' key to
            # specify error details".
            "response": {"error" if message.is_error else "output": "\n".join(texts)},
        }
        if media:
            response["parts"] = media
        return {"functionResponse": response}

    async def _send(self, body: dict[str, Any]) -> GeminiStream:
        # One source: the contents sent are the dicts the SDK's types check here. The SDK
        # method takes the checked objects; `extra_body` then sends the body as written, not
        # the SDK's rendering of them (which names some nested fields in snake_case).
        try:
            contents = _CONTENTS.validate_python(body["contents"])
        except ValidationError as e:
            problem = e.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise ValueError(
                f"Gemini: the history does not fit the API's Content type at contents.{where}: "
                f"{problem['msg']}"
            ) from e
        options = genai_types.HttpOptions(extra_body=body, headers=self._key_headers())
        config = genai_types.GenerateContentConfig(http_options=options)
        models = self.client.aio.models
        if self._stream:
            chunks = aiter(
                await models.generate_content_stream(
                    model=self._model, contents=contents, config=config
                )
            )
            # The SDK sends the request at the first chunk: send it now, so a failed
            # request fails here, as with the other providers.
            first = await anext(chunks, None)
            return GeminiStream(first, chunks, self._convert)
        response = await models.generate_content(
            model=self._model, contents=contents, config=config
        )
        return GeminiStream(response, None, self._convert)

    def _error(self, error: BaseException, url: str) -> ChatProviderError:
        """A `google-genai` or transport (`aiohttp`, `httpx2`) error as one of ours."""
        where = self._where(url)
        timeouts = (TimeoutError, httpx2.TimeoutException)
        failed = connection_error(error, error, timeouts, TRANSPORT_ERRORS, where)
        if failed is not None:
            return failed
        if isinstance(error, genai_errors.APIError):
            # The SDK leaves `details` and `response` partly untyped: read as plain objects.
            details, response = vars(error)["details"], vars(error)["response"]
            summary = _status_summary(details) or str(error.status or "")
            return APIStatusError(
                error.code,
                summary or "no error body",
                request_id=header_of(response, "x-request-id"),
                **where,
            )
        return ChatProviderError(f"{type(error).__name__}: {error}", **where)

    def _refused_key(self, error: BaseException) -> bool:
        return isinstance(error, APIStatusError) and (
            error.status_code in (401, 403)
            or (error.status_code == 400 and "api key" in error.message.lower())
        )

    async def aclose(self) -> None:
        """Close the HTTP client (copies made by the `with_...` methods share it)."""
        await self.client.aio.aclose()


def _calling_config(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, AllowedTools):
        # allowedFunctionNames goes with ANY or VALIDATED only (FunctionCallingConfig): VALIDATED
        # lets the model answer in text, as "auto" means.
        mode = "ANY" if choice.mode == "required" else "VALIDATED"
        return {"mode": mode, "allowedFunctionNames": list(choice.names)}
    if choice in ("auto", "none"):
        return {"mode": choice.upper()}
    if choice == "required":
        return {"mode": "ANY"}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def _inline(part: ContentPart) -> dict[str, Any] | None:
    """`inlineData` for a media part given as a data URL; None for anything else."""
    found = media_url(part)
    inline = data_url(found[1]) if found else None
    if inline is None:
        return None
    return {"mimeType": inline[0], "data": inline[1]}


def _user_parts(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"text": part.text})
        elif isinstance(part, ThinkPart | NativeToolPart):
            continue
        else:
            found = media_url(part)
            inline = _inline(part)
            if inline is not None:
                out.append({"inlineData": inline})
            elif found is not None:
                # A web URL goes by reference (the file input methods guide: external URLs).
                file_data: dict[str, Any] = {"fileUri": found[1]}
                guessed = mimetypes.guess_type(found[1].split("?", 1)[0])[0]
                if guessed:
                    file_data = {"mimeType": guessed, **file_data}
                out.append({"fileData": file_data})
            else:
                out.append({"text": media_placeholder(part)})
    return out


def _signature(encrypted: str | None) -> dict[str, Any] | None:
    """A Gemini thought signature packed in a `ThinkPart`'s `encrypted`; None for others."""
    packed = json_object(encrypted) or {}
    return packed if isinstance(packed.get("thoughtSignature"), str) else None


def _model_parts(message: Message, *, sign: bool) -> list[dict[str, Any]]:
    """A model turn's parts; `sign`: calls without a signature get the documented one."""
    out: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, NativeToolPart):
            # A built-in tool's part goes back as it came; grounding metadata has no place
            # in a request, and another provider's part none here.
            if part.provider == "gemini" and not any(k in part.data for k in METADATA_KEYS):
                out.append(copy.deepcopy(part.data))
        elif isinstance(part, TextPart):
            if part.text:
                out.append({"text": part.text})
        elif isinstance(part, ThinkPart):
            # Only Gemini's own signed parts go back: thought text alone is not read, and
            # another provider's signature would be refused.
            packed = _signature(part.encrypted)
            if packed is None:
                continue
            signature, where = packed["thoughtSignature"], packed.get("part")
            previous = out[-1] if out else None
            if where == "thought":
                out.append({"text": part.think, "thought": True, "thoughtSignature": signature})
            elif (
                where == "text"
                and previous is not None
                and "text" in previous
                and "thoughtSignature" not in previous
                and not previous.get("thought")
            ):
                previous["thoughtSignature"] = signature
            else:  # it came on an empty text part
                out.append({"text": "", "thoughtSignature": signature})
        else:
            out.extend(_user_parts([part]))
    calls: list[dict[str, Any]] = []
    for call in message.tool_calls or []:
        entry: dict[str, Any] = {
            "functionCall": {
                "id": call.id,
                "name": call.function.name,
                "args": arguments_object(call),
            }
        }
        signature = (call.extras or {}).get(SIGNATURE_KEY)
        if isinstance(signature, str) and signature:
            entry["thoughtSignature"] = signature
        calls.append(entry)
    if sign and calls and not any("thoughtSignature" in c for c in calls):
        calls[0]["thoughtSignature"] = _SKIP_SIGNATURE
    return out + calls


_NAMED_STATUS = re.compile(r"\A[A-Z][A-Z_]+\Z")


def _status_summary(details: Any) -> str:
    """The error body's summary: `STATUS: message` for Google's JSON errors, else its text."""
    if isinstance(details, Mapping):
        data = cast(Mapping[str, Any], details)
        error: Any = data.get("error")
        if isinstance(error, Mapping):
            error = cast(Mapping[str, Any], error)
            status, message = error.get("status"), error.get("message")
            if isinstance(message, str) and message:
                named = isinstance(status, str) and _NAMED_STATUS.match(status)
                return summarize_body(f"{status}: {message}" if named else message)
            return summarize_body(data)
        # Not JSON: the SDK keeps the text as `message` (and the reason phrase as `status`).
        return summarize_body(data.get("message"))
    return summarize_body(details)
