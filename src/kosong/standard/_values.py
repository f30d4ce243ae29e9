"""Reading, writing and copying the standard's data in a result (private).

A result carries the Tool Use standard's data under one key of `extras`, `"standard"`:

    {"standard": {"metadata": {...}, "error": {"code": ..., ...}, "debug_info": {...}}}

so it travels with the `ToolReturnValue` (which has no field for it) and survives its JSON.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, TypeVar, cast

from kosong.tooling import ToolError, ToolOk, ToolReturnValue
from kosong.tooling import error as errors
from kosong.tooling.error import STANDARD_KEY
from kosong.utils.typing import JsonType

__all__ = [
    "RESULT_CLASSES",
    "STANDARD_KEY",
    "copy_value",
    "restore_value",
    "round3",
    "standard_part",
    "with_standard",
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


def with_standard(value: V, **parts: JsonType) -> V:
    """A copy of `value` whose standard data has `parts` set (None removes a part).

    Only the extras are new; use `copy_value` for a copy that shares nothing.
    """
    extras: dict[str, JsonType] = dict(value.extras or {})
    part: dict[str, JsonType] = dict(standard_part(value))
    for key, item in parts.items():
        if item is None:
            part.pop(key, None)
        else:
            part[key] = item
    if part:
        extras[STANDARD_KEY] = part
    else:
        extras.pop(STANDARD_KEY, None)
    return value.model_copy(update={"extras": extras or None})


def copy_value(value: V) -> V:
    """A copy of `value` that shares nothing mutable with it, for another caller.

    Content parts, display blocks and extras are copied deeply; the artifact with
    `copy.deepcopy`, and left out (None) when it cannot be copied, with a warning: a result
    handed to one caller is never shared with another.
    """
    update: dict[str, Any] = {"display": [block.model_copy(deep=True) for block in value.display]}
    if not isinstance(value.output, str):
        update["output"] = [part.model_copy(deep=True) for part in value.output]
    if value.extras is not None:
        update["extras"] = copy.deepcopy(value.extras)
    if value.artifact is not None:
        try:
            update["artifact"] = copy.deepcopy(value.artifact)
        except Exception as e:
            logger.warning(
                "A result's artifact (%s) cannot be copied, so the copy has none: %s",
                type(value.artifact).__name__,
                errors.describe_exception(e),
            )
            update["artifact"] = None
    return value.model_copy(update=update)


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


def round3(value: float) -> float:
    """`value` rounded to three decimals (milliseconds to microseconds)."""
    return round(value, 3)
