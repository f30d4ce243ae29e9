"""The standard's envelope: one JSON shape for every success and every error.

    {"success": true, "status": "success", "data": ..., "metadata": {...}}
    {"success": false, "status": "error", "error": {"code", "message", "retryable"}, "metadata"}

`to_envelope` turns a `ToolResult` (or a bare `ToolReturnValue`) into an `Envelope`;
`from_envelope` turns one back. The round trip loses nothing: what the standard's shape has no
place for (the display blocks, a success's message, the class of the result...) goes under
one extension key, `"kosong"`, present only when needed; consumers of the standard ignore it,
and `to_envelope(..., lossless=False)` leaves it out.

How a result maps:

- `data` is the result's structured value when it has one (`structured_data`: what a tool
  with an output schema returned, an MCP tool's `structuredContent`), so a `-> int` tool's
  `data` is `3`, not `"3"`. Otherwise it is the output. An output that is JSON text of an
  object or array (as `json.dumps`
  writes it, with or without `ensure_ascii`, with default or compact separators) becomes that
  JSON value, so `ToolOk(output=json.dumps({"temperature": 25}))` has
  `"data": {"temperature": 25}`; any other text stays a string, and so does JSON text that
  would not come back the same (numbers out of range such as `1e999`), that nests deeper than
  100 levels, or that is longer than 1 MiB (parsing it would hold up the event loop). Content
  parts (text, images...) become their JSON list, `[{"type": "text", "text": ...}, ...]`.
- `error.code` is `codes.error_code(value)`, `error.message` the result's message, and
  `error.retryable` the catalog's answer unless the error says otherwise; the error's details
  (`retry_after`, `replacement`...) sit next to them.
- `metadata` is what the pipeline recorded about the call (`ToolResult.metadata`), with the
  gaps filled from the arguments of `to_envelope`; `debug_info` likewise. `from_envelope`
  gives it back as the result's `metadata`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from kosong._timestamps import now_timestamp
from kosong.message import ContentPart
from kosong.standard._codes import (
    CATALOG,
    ErrorCode,
    error_class_for,
    error_code,
    error_details,
    is_retryable,
)
from kosong.standard._trace import current_trace_id, new_trace_id
from kosong.standard._values import (
    RESULT_CLASSES,
    STANDARD_KEY,
    restore_value,
    structured_data,
)
from kosong.tooling import ToolError, ToolOk, ToolResult, ToolReturnValue
from kosong.utils.typing import JsonType

__all__ = [
    "CacheInfo",
    "Envelope",
    "EnvelopeError",
    "EnvelopeMetadata",
    "from_envelope",
    "to_envelope",
]


class CacheInfo(BaseModel):
    """How a cached result was served."""

    model_config = ConfigDict(extra="allow")

    hit: bool
    """Whether the result came from the cache."""
    cached_at: str | None = None
    """When the result was stored (ISO 8601)."""
    ttl_remaining: int | float | None = None
    """Seconds until the cached result expires."""


class EnvelopeMetadata(BaseModel):
    """The envelope's `metadata`: which tool, when, how long, under which trace.

    Other keys are kept as they are (the pipeline adds `warnings`, `deprecation`...).
    """

    model_config = ConfigDict(extra="allow")

    tool_name: str
    """The tool called."""
    execution_time_ms: int | float | None = None
    """How long the call took, in milliseconds."""
    timestamp: str
    """When the result was produced (ISO 8601, UTC)."""
    trace_id: str | None = None
    """The trace the call belongs to."""
    tool_call_id: str | None = None
    """The id of the call this answers (a kosong addition)."""
    performance: dict[str, int | float] | None = None
    """Time spent in each stage, in milliseconds (`processing_ms`, `approval_ms`...)."""
    cache: CacheInfo | None = None
    """Present when the result came from the cache."""


class EnvelopeError(BaseModel):
    """The envelope's `error`: a code of the catalog (or the tool's own), and details."""

    model_config = ConfigDict(extra="allow")

    code: str
    """The error code, such as TIMEOUT."""
    message: str
    """What went wrong, for the model and for people."""
    retryable: bool | None = None
    """Whether calling again may succeed."""


_JSON_FORMS: dict[str, tuple[tuple[str, str], bool]] = {
    "default": ((", ", ": "), False),
    "ascii": ((", ", ": "), True),
    "compact": ((",", ":"), False),
    "compact_ascii": ((",", ":"), True),
}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
"""A JSON string literal, as json.dumps writes one."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _dump_json(value: JsonType, form: str) -> str:
    separators, ascii_only = _JSON_FORMS[form]
    return json.dumps(value, ensure_ascii=ascii_only, separators=separators, allow_nan=False)


_DATA_MAX_LENGTH = 1 << 20
"""Longer outputs stay text in `data`: parsing them would hold up the event loop."""
_DATA_MAX_DEPTH = 100
"""Deeper JSON stays text in `data`, as deeper arguments are refused."""


def _as_data(output: str) -> tuple[JsonType, str | None]:
    """The JSON value an output stands for, and the form it was written in (None: text)."""
    if output[:1] not in ("{", "[") or len(output) > _DATA_MAX_LENGTH:
        return output, None
    try:
        value = json.loads(output, parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # not JSON, or nested past what the parser takes
        return output, None
    form = None if _deeper_than(value, _DATA_MAX_DEPTH) else _form_of(value, output)
    return (output, None) if form is None else (value, form)


def _form_of(value: JsonType, output: str) -> str | None:
    r"""The form `output` writes `value` in, if it is one of ours (None: not that JSON).

    Read off the text and checked with one dump: json.dumps puts spaces only after separators
    and in strings; only an ASCII text with a `\u` escape may be either ensure_ascii (both are
    tried). Of two forms that write the same text, the first of `_JSON_FORMS` is named.
    """
    if isinstance(value, str):
        return None
    outside_strings = _STRING.sub("", output)
    compact = " " not in outside_strings and ("," in outside_strings or ":" in outside_strings)
    forms = ("compact", "compact_ascii") if compact else ("default", "ascii")
    if "\\u" not in output or not output.isascii():  # nothing ensure_ascii could have escaped
        forms = forms[:1]
    for form in forms:
        try:
            if _dump_json(value, form) == output:
                return form
        except ValueError:  # NaN and the like: no form writes it
            return None
    return None


_NONE: Any = object()
"""No structured value (a JSON `null` is one)."""


def _deeper_than(value: JsonType, limit: int) -> bool:
    level: list[JsonType] = [value]
    for _ in range(limit):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, dict | list) and node for node in level)


class Envelope(BaseModel):
    """A result in the standard's shape. `dump()` gives the JSON object; see the module doc."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    """Whether the call succeeded."""
    status: Literal["success", "error"]
    """"success" or "error", as `success` says."""
    data: JsonType = None
    """What a successful call returned (absent when None)."""
    error: EnvelopeError | None = None
    """What went wrong, for a failed call."""
    metadata: EnvelopeMetadata
    """Which tool, when, how long, which trace."""
    debug_info: dict[str, JsonType] | None = None
    """Details for developers, present in debug mode."""
    kosong: dict[str, JsonType] | None = Field(default=None)
    """What the standard's shape has no place for, so the round trip loses nothing."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.success != (self.status == "success"):
            raise ValueError(f"success={self.success} contradicts status={self.status!r}")
        if self.success and self.error is not None:
            raise ValueError("a successful envelope cannot carry an error")
        if not self.success and self.error is None:
            raise ValueError("an error envelope needs an `error` object")
        return self

    def dump(self) -> dict[str, Any]:
        """The envelope as a JSON-ready dict, without the fields left unset."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> str:
        """The envelope as JSON text (UTF-8, not ASCII-escaped)."""
        return json.dumps(self.dump(), ensure_ascii=False)

    @classmethod
    def from_result(cls, result: ToolResult | ToolReturnValue, **kwargs: Any) -> Envelope:
        """The same as `to_envelope(result, **kwargs)`."""
        return to_envelope(result, **kwargs)

    def to_result(self, *, tool_call_id: str | None = None) -> ToolResult:
        """The same as `from_envelope(self, tool_call_id=...)`."""
        return from_envelope(self, tool_call_id=tool_call_id)


_ENVELOPE = TypeAdapter(Envelope)
_PARTS = TypeAdapter(list[ContentPart])


def to_envelope(
    result: ToolResult | ToolReturnValue,
    *,
    metadata: Mapping[str, JsonType] | None = None,
    tool_name: str | None = None,
    trace_id: str | None = None,
    timestamp: str | None = None,
    execution_time_ms: float | None = None,
    lossless: bool = True,
) -> Envelope:
    """The envelope of a result.

    Args:
        result: A `ToolResult` (its metadata and call id go into the envelope's metadata) or a
            bare return value.
        metadata: The call's metadata, when `result` carries none (a bare value).
        tool_name: The tool's name, when the metadata does not give it.
        trace_id: The trace id, when the metadata does not give one (default: the current
            trace, else a new id).
        timestamp: When the result was produced, when the metadata does not say (default: now).
        execution_time_ms: How long the call took, when the metadata does not say.
        lossless: Add the `kosong` extension when the standard's shape cannot hold everything;
            False gives the bare standard shape.

    Raises:
        ValueError: no tool name is known.
    """
    if isinstance(result, ToolResult):
        value, call_id = result.return_value, result.tool_call_id
        metadata = result.metadata if result.metadata is not None else metadata
    else:
        value, call_id = result, None
    fields: dict[str, Any] = {}
    written: dict[str, Any] = dict(metadata or {})
    debug = written.pop("debug_info", None)
    if isinstance(debug, dict):
        fields["debug_info"] = debug
    for key, given in (
        ("tool_name", tool_name),
        ("execution_time_ms", execution_time_ms),
        ("timestamp", timestamp),
        ("trace_id", trace_id),
    ):
        if key not in written and given is not None:
            written[key] = given
    if "tool_name" not in written:
        raise ValueError("the result carries no metadata: pass tool_name= to to_envelope")
    if "timestamp" not in written:  # made only when missing: a result leaving a pipeline has it
        written["timestamp"] = now_timestamp()
    if "trace_id" not in written:
        written["trace_id"] = current_trace_id() or new_trace_id()
    if call_id:  # a result read from an envelope without one has "": nothing to write back
        written.setdefault("tool_call_id", call_id)
    fields["metadata"] = written
    json_form: str | None = None
    if value.is_error:
        details = error_details(value)
        fields.update(
            success=False,
            status="error",
            error={
                "code": error_code(value),
                "message": value.message,
                "retryable": is_retryable(value),
                # code and message are the envelope's own: a detail cannot replace them
                **{k: v for k, v in details.items() if k not in ("retryable", "message")},
            },
        )
    else:
        fields.update(success=True, status="success")
    envelope = Envelope.model_validate(fields)
    structured = False
    if not value.is_error:  # set after validation: the data is JSON by construction
        data = structured_data(value, _NONE)
        structured = data is not _NONE
        if structured:
            envelope.data = data
            if isinstance(value.output, str):
                json_form = _form_of(data, value.output)
        elif isinstance(value.output, str):
            envelope.data, json_form = _as_data(value.output)
        else:
            envelope.data = _PARTS.dump_python(value.output, mode="json")
    if lossless:
        extension = _extension(value, envelope, json_form, structured)
        if extension:
            envelope.kosong = extension
    return envelope


def from_envelope(
    envelope: Envelope | Mapping[str, Any] | str, *, tool_call_id: str | None = None
) -> ToolResult:
    """The `ToolResult` an envelope stands for (an envelope, its dict, or its JSON text).

    The call id is `tool_call_id` if given, else the one in the metadata, else "".

    Raises:
        pydantic.ValidationError: the input is not an envelope.
    """
    if isinstance(envelope, str):
        envelope = _ENVELOPE.validate_json(envelope)
    elif not isinstance(envelope, Envelope):
        envelope = _ENVELOPE.validate_python(envelope)
    value = _restore(envelope, envelope.kosong or {})
    call_id = tool_call_id if tool_call_id is not None else envelope.metadata.tool_call_id or ""
    metadata: dict[str, JsonType] = envelope.metadata.model_dump(mode="json", exclude_none=True)
    metadata.pop("tool_call_id", None)  # the result's own field
    if envelope.debug_info is not None:
        metadata["debug_info"] = envelope.debug_info
    return ToolResult(call_id, value, metadata=metadata)


# --- the extension: what restoring from the standard's fields alone would get wrong ---------

_RESTORED = {"output", "message", "display", "extras"}
"""The fields of a result the extension may carry, each only when the default differs."""


def _default_class(envelope: Envelope) -> type[ToolReturnValue]:
    if envelope.error is None:
        return ToolOk
    if envelope.error.code == ErrorCode.EXECUTION_ERROR.value:
        return ToolError  # a tool's own ToolError; ToolRuntimeError names itself in the extension
    return error_class_for(envelope.error.code)


def _structured_by_default(envelope: Envelope) -> bool:
    """Whether a success's `data` is a structured value when no extension says otherwise.

    A number or a boolean is: the output text cannot say it was not a string. Text, objects
    and arrays are the output itself, read back from it.
    """
    data = envelope.data
    return envelope.error is None and isinstance(data, int | float)  # bool is an int


def _default_extras(envelope: Envelope, cls: type[ToolReturnValue], structured: bool) -> JsonType:
    """The standard's part of the extras, rebuilt from the envelope's `error` (or `data`)."""
    error = envelope.error
    if error is None:
        return {STANDARD_KEY: {"data": envelope.data}} if structured else None
    spec = CATALOG.get(error.code)
    part: dict[str, JsonType] = {"code": error.code}
    if error.retryable is not None and error.retryable != (spec is not None and spec.retryable):
        part["retryable"] = error.retryable
    part.update(error.model_extra or {})
    if (
        len(part) == 1
        and not isinstance(getattr(cls, "code", None), str)
        and error_code(cls.model_construct(is_error=True)) == error.code
    ):  # a class without a code of its own (ToolValidateError...) implies it: no extras
        return None
    return {STANDARD_KEY: {"error": part}}


def _default_output(envelope: Envelope, form: object) -> str:
    data = envelope.data
    if envelope.error is not None or data is None:
        return ""
    if isinstance(data, str):
        return data
    return _dump_json(data, form if isinstance(form, str) else "default")


def _restore(envelope: Envelope, ext: Mapping[str, Any]) -> ToolReturnValue:
    class_name = ext.get("class")
    cls = RESULT_CLASSES.get(class_name) if isinstance(class_name, str) else None
    cls = cls or _default_class(envelope)
    error = envelope.error
    structured = ext.get("structured", _structured_by_default(envelope))
    data: dict[str, Any] = {
        "is_error": error is not None,
        "output": _default_output(envelope, ext.get("json_form")),
        "message": error.message if error is not None else "",
        "display": [],
        "extras": _default_extras(envelope, cls, structured is True),
    }
    if ext.get("parts"):
        data["output"] = envelope.data
    data.update({key: ext[key] for key in _RESTORED if key in ext})
    return restore_value(cls.__name__, data)


def _extension(
    value: ToolReturnValue, envelope: Envelope, json_form: str | None, structured: bool
) -> dict[str, JsonType]:
    """What `_restore` needs beyond the envelope to rebuild exactly `value` (see `to_envelope`)."""
    ext: dict[str, JsonType] = {}
    if json_form not in (None, "default"):
        ext["json_form"] = json_form
    if structured != _structured_by_default(envelope):
        ext["structured"] = structured  # `data` is (or is not) the result's structured value
    if not isinstance(value.output, str) and envelope.error is None and not structured:
        ext["parts"] = True  # the output is the content parts in `data`
    if type(value) is not _default_class(envelope):
        ext["class"] = type(value).__name__
    wanted = value.model_dump(mode="json", include=_RESTORED)
    restored = _restore(envelope, ext).model_dump(mode="json", include=_RESTORED)
    ext.update({key: field for key, field in wanted.items() if field != restored[key]})
    return ext
