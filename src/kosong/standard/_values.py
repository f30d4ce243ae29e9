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
    "detached",
    "restore_value",
    "round3",
    "standard_part",
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


def detached(value: V, standard: dict[str, JsonType], *, copy_artifact: bool) -> V:
    """A copy of `value` for one caller, carrying `standard` as its standard data.

    It shares nothing mutable with `value`: content parts, display blocks and extras are
    copied. The artifact is kept as is unless `copy_artifact` (the value is handed to several
    callers: a cache hit, a shared run), in which case it is copied with `copy.deepcopy`, or
    left out (None, with a warning) when it cannot be.
    """
    extras: dict[str, JsonType] = _json_copy(value.extras) if value.extras else {}
    old = extras.get(STANDARD_KEY)
    part: dict[str, JsonType] = cast(dict[str, JsonType], old) if isinstance(old, dict) else {}
    part.update(standard)
    extras[STANDARD_KEY] = part
    update: dict[str, Any] = {
        "extras": extras,
        "display": [block.model_copy(deep=True) for block in value.display],
    }
    if not isinstance(value.output, str):
        update["output"] = [item.model_copy(deep=True) for item in value.output]
    if copy_artifact and value.artifact is not None:
        try:
            update["artifact"] = copy.deepcopy(value.artifact)
        except Exception as e:
            logger.warning(
                "A shared result's artifact (%s) cannot be copied, so this caller gets none: %s",
                type(value.artifact).__name__,
                errors.describe_exception(e),
            )
            update["artifact"] = None
    return _replaced(value, update)


_set = object.__setattr__


def _replaced(value: V, update: dict[str, Any]) -> V:
    """`value.model_copy(update=update)` for a result, at under half the cost.

    Every call's result is copied once on its way out, and pydantic's general `model_copy`
    (which also copies private attributes and extra fields, that results do not have) cost more
    than building the result in the first place (22.8k against 17.8k instructions; this copy
    10.6k, by callgrind). A result that does have private or extra fields (a subclass of one's
    own) gets `model_copy` itself. The attributes set are pydantic's documented ones, as its
    own `__copy__` sets them.
    """
    if value.__pydantic_private__ is not None or value.__pydantic_extra__ is not None:
        return value.model_copy(update=update)
    copied = object.__new__(type(value))
    fields = value.__dict__.copy()
    fields.update(update)
    _set(copied, "__dict__", fields)
    _set(copied, "__pydantic_fields_set__", value.__pydantic_fields_set__ | update.keys())
    _set(copied, "__pydantic_extra__", None)
    _set(copied, "__pydantic_private__", None)
    return copied


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


def round3(value: float) -> float:
    """`value` rounded to three decimals (milliseconds to microseconds)."""
    return round(value, 3)
