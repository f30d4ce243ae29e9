"""A function tool's output schema, read from its return annotation (private).

A function that returns structured data (a pydantic model, a dataclass, a TypedDict or a
NamedTuple; a list, tuple, set or dict; an int, float or bool; or an optional one of these)
returns it to the model as compact JSON text (`return_value`), so its return annotation says
what that text holds: the tool's `output_schema`, which an MCP server sends as `outputSchema`
with the value as `structuredContent`. Text (`str`), content parts, a `ToolReturnValue`, `Any`
or no annotation at all declare nothing: what they return is not one JSON shape.
"""

from __future__ import annotations

import collections.abc as cabc
import functools
import inspect
import types
import typing
from typing import Any, cast

from pydantic import PydanticUserError, TypeAdapter
from pydantic_core import PydanticSerializationError

from kosong.message import ContentPart
from kosong.tooling._function._signature import is_struct
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._schema import tidy_schema
from kosong.utils.jsonschema import deref_json_schema

__all__ = ["derived_output_schema"]

_NUMBERS = (bool, int, float)
_CONTAINERS = (
    list, tuple, set, frozenset, dict,
    cabc.Sequence, cabc.MutableSequence, cabc.Set, cabc.MutableSet,
    cabc.Mapping, cabc.MutableMapping,
)  # fmt: skip


def derived_output_schema(func: Any) -> dict[str, Any] | None:
    """The JSON Schema of what `func` returns as JSON text, or None when it is not structured.

    An annotation that cannot be resolved, or a type pydantic cannot describe, declares
    nothing either: the output schema is a promise to clients, never guessed.
    """
    try:
        annotation: Any = inspect.signature(func, eval_str=True).return_annotation
    except (NameError, AttributeError, SyntaxError, TypeError, ValueError):
        # a name only a type checker sees, an object without a signature
        return None
    if annotation is inspect.Signature.empty or not _structured(annotation):
        return None
    # As for parameter types, the repr keeps `Union[A, B]` and `Union[B, A]` apart.
    key: tuple[Any, str] | None = (annotation, repr(annotation))
    try:
        hash(key)
    except TypeError:  # say an Annotated with unhashable metadata: not cached
        key = None
    return _output_schema(annotation) if key is None else _cached_output_schema(key)


@functools.lru_cache(maxsize=1024)
def _cached_output_schema(key: tuple[Any, str]) -> dict[str, Any] | None:
    # Return types repeat across tools (int, a model...): each one's schema is made once and
    # shared by the tools returning it, read-only like every definition.
    return _output_schema(key[0])


def _output_schema(annotation: Any) -> dict[str, Any] | None:
    try:
        # Serialization mode, aliases as keys: the shape `json_text` writes.
        raw = TypeAdapter(annotation).json_schema(mode="serialization")
    except (PydanticUserError, PydanticSerializationError, TypeError):
        return None
    return cast(dict[str, Any], tidy_schema(deref_json_schema(raw)))


def _structured(annotation: Any) -> bool:
    """Whether values of `annotation` are one JSON shape (see the module doc)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _structured(typing.get_args(annotation)[0])
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        members = typing.get_args(annotation)
        shaped = [m for m in members if m is not type(None)]
        return bool(shaped) and all(_structured(m) for m in shaped)
    if origin is not None:
        if origin not in _CONTAINERS:
            return False
        return all(_plain_data(arg) for arg in typing.get_args(annotation))
    if annotation in _NUMBERS or annotation in _CONTAINERS:
        return True
    if isinstance(annotation, type) and issubclass(annotation, ToolReturnValue | ContentPart):
        return False
    return is_struct(annotation)


def _plain_data(annotation: Any) -> bool:
    """Whether an item type of a container holds data (not content parts or results)."""
    if annotation is Ellipsis:  # tuple[int, ...]
        return True
    if isinstance(annotation, type) and issubclass(annotation, ToolReturnValue | ContentPart):
        return False
    return all(_plain_data(arg) for arg in typing.get_args(annotation))
