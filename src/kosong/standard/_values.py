"""Reading, writing and copying the standard's data in a result (private).

A result carries the Tool Use standard's data under one key of `extras`, `"standard"`:

    {"standard": {"error": {"code": ..., "retry_after": ..., ...}}}
    {"standard": {"data": <the result's JSON value>}}

so it travels with the `ToolReturnValue` (which has no field for it) and survives its JSON.
`data` is a result's structured value, when it has one (a function tool with an output
schema, an MCP tool's `structuredContent`): the envelope's `data` is that value, beside the
output the model reads.
What a pipeline records about one call (time, trace id...) is the call's, not the value's: it
is `ToolResult.metadata`.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, TypeVar, cast, overload

from kosong._keys import STANDARD_KEY
from kosong.tooling import ToolError, ToolOk, ToolReturnValue
from kosong.tooling import error as errors
from kosong.utils.typing import JsonType

__all__ = [
    "RESULT_CLASSES",
    "STANDARD_KEY",
    "restore_value",
    "shared_copy",
    "standard_part",
    "structured_data",
]

logger = logging.getLogger(__name__)

V = TypeVar("V", bound=ToolReturnValue)

RESULT_CLASSES: dict[str, type[ToolReturnValue]] = {
    cls.__name__: cls
    for cls in (
        ToolReturnValue,
        ToolOk,
        ToolError,
        *(getattr(errors, name) for name in errors.__all__ if name.startswith("Tool")),
    )
}
"""The result classes a serialized result can name, by class name."""


def standard_part(value: ToolReturnValue) -> dict[str, Any]:
    """The standard's data in `value.extras` (empty when there is none). Read-only."""
    extras = value.extras
    if not extras:
        return _EMPTY
    part = extras.get(STANDARD_KEY)
    return cast(dict[str, Any], part) if isinstance(part, dict) else _EMPTY


_EMPTY: dict[str, Any] = {}

D = TypeVar("D")


@overload
def structured_data(value: ToolReturnValue) -> JsonType: ...
@overload
def structured_data(value: ToolReturnValue, default: D) -> JsonType | D: ...
def structured_data(value: ToolReturnValue, default: object = None) -> object:
    """The JSON value a result carries beside its output (`extras["standard"]["data"]`).

    A function tool with an output schema (`-> int`, `-> Forecast`) gives its return value as
    this JSON value, and `MCPToolset` an MCP tool's `structuredContent` (unwrapped from
    `{"result": ...}` where the server marked it so); the envelope's `data` is this value.
    `default` when the result carries none (pass a sentinel to tell a JSON `null` apart).
    """
    part = standard_part(value)
    return cast(JsonType, part["data"]) if "data" in part else default


def shared_copy(value: V) -> V:
    """A copy of `value` that shares nothing mutable with it, for a value handed to more calls.

    A cache (each hit) and single-flight (each waiting call) hand one value to several
    callers; each gets one of these, so changing a result you got changes nothing another
    caller gets. Content parts, display blocks and extras are copied; the artifact is copied
    with `copy.deepcopy`, or left out (None, with a warning) when it cannot be.
    """
    update: dict[str, Any] = {
        "extras": _json_copy(value.extras) if value.extras is not None else None,
        "display": [block.model_copy(deep=True) for block in value.display],
    }
    if not isinstance(value.output, str):
        update["output"] = [item.model_copy(deep=True) for item in value.output]
    if value.artifact is not None:
        try:
            update["artifact"] = copy.deepcopy(value.artifact)
        except (TypeError, copy.Error) as e:  # a lock, a socket, a generator...
            logger.warning(
                "A shared result's artifact (%s) cannot be copied, so this caller gets none: %s",
                type(value.artifact).__name__,
                errors.describe_exception(e),
            )
            update["artifact"] = None
    return value.model_copy(update=update)


def _json_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json_copy(item) for key, item in cast(dict[str, Any], value).items()}
    if isinstance(value, list):
        return [_json_copy(item) for item in cast(list[Any], value)]
    return value


def restore_value(class_name: str | None, data: dict[str, Any]) -> ToolReturnValue:
    """Rebuild a result of the named class from its JSON fields, without calling `__init__`.

    An unknown class name falls back to ToolOk or ToolError, by `is_error`.
    """
    cls = RESULT_CLASSES.get(class_name or "")
    if cls is None:
        cls = ToolError if data.get("is_error") else ToolOk
    # Validate as the base class: the subclasses' __init__ take their own arguments, and
    # pydantic would route validation through them.
    base = ToolReturnValue.model_validate(data)
    if cls is ToolReturnValue:
        return base
    fields = {name: getattr(base, name) for name in ToolReturnValue.model_fields}
    return cls.model_construct(_fields_set=base.model_fields_set, **fields)
