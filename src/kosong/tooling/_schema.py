"""Checks and exports of tool parameter schemas (private)."""

from __future__ import annotations

import re
import weakref
from collections.abc import Collection, Iterable
from typing import Any, cast

import jsonschema_rs
from pydantic import BaseModel

from kosong.utils.jsonschema import check_offline, deref_json_schema, map_subschemas

__all__ = [
    "BUILTIN_TOOL_NAME_PATTERN",
    "TOOL_NAME_PATTERN",
    "check_json_schema",
    "check_parameter_names",
    "check_tool_name",
    "model_parameters_schema",
    "schema_validator",
    "tidy_schema",
]

TOOL_NAME_PATTERN = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_-]{0,63}\Z")
"""What every model API accepts as a tool name (OpenAI, Anthropic, MCP clients)."""


BUILTIN_TOOL_NAME_PATTERN = re.compile(r"\A\$[a-zA-Z_][a-zA-Z0-9_-]{0,62}\Z")
"""A provider's builtin function, declared by name (Moonshot's `$web_search`)."""


def check_tool_name(name: str, *, builtin: bool = False) -> None:
    """Raise ValueError unless `name` is a usable tool name.

    With `builtin`, a name starting with `$` (a provider's builtin function, such as Kimi's
    `$web_search`) is accepted too: a plain `Tool` may declare one, a tool kosong runs may not.
    """
    if TOOL_NAME_PATTERN.match(name):
        return
    if name.startswith("$"):
        if not builtin:
            raise ValueError(
                f"tool name {name!r} starts with '$', which marks a provider's builtin "
                "function (Kimi's '$web_search'): the provider runs it, so it is declared "
                "with a plain Tool(name=..., description='', parameters={}), never as a tool "
                "kosong runs"
            )
        if BUILTIN_TOOL_NAME_PATTERN.match(name):
            return
        raise ValueError(
            f"builtin function name {name!r} is not valid: '$' then 1 to 63 letters, digits, "
            "'_' or '-', starting with a letter or '_' (e.g. '$web_search')"
        )
    raise ValueError(
        f"tool name {name!r} is not valid: use 1 to 64 letters, digits, '_' or '-', "
        "starting with a letter or '_' (e.g. 'get_weather')"
    )


def check_json_schema(schema: dict[str, Any], owner: str) -> None:
    """Raise ValueError unless `schema` is a valid JSON Schema (Draft 2020-12 by default).

    Nothing is fetched: a schema with a remote reference or an unknown `$schema` is refused
    (see `check_offline`).
    """
    check_offline(schema, owner)
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as e:
        where = "".join(f"[{p!r}]" for p in e.instance_path)
        raise ValueError(
            f"{owner} is not a valid JSON Schema: {e.message} (at schema{where})"
        ) from None
    except jsonschema_rs.ReferencingError as e:
        raise ValueError(f"{owner} has a reference that cannot be resolved: {e}") from None


def check_parameter_names(given: Iterable[str], parameters: Collection[str], what: str) -> None:
    """Raise ValueError naming what in `given` is not in `parameters`; `what` starts the text.

    As in "cache_key_params of tool `x` names 'y', which is not a parameter (parameters: a, b)".
    """
    unknown = [name for name in given if name not in parameters]
    if unknown:
        raise ValueError(
            f"{what} {', '.join(map(repr, unknown))}, which is not a parameter "
            f"(parameters: {', '.join(parameters) or 'none'})"
        )


_FRONT = ("type", "description")


def tidy_schema(schema: Any) -> Any:
    """Drop `title` keywords and put `type` and `description` first in every subschema.

    Titles only repeat the property names and cost the model tokens; the key order makes the
    schema read the way people write it. Values of `default`, `enum`, `const`, `examples` and
    property names are never touched.
    """
    if not isinstance(schema, dict):
        return schema
    schema = map_subschemas(cast(dict[str, Any], schema), lambda sub, _: tidy_schema(sub))
    front = {k: schema[k] for k in _FRONT if k in schema}
    return front | {k: v for k, v in schema.items() if k != "title" and k not in _FRONT}


def schema_validator(schema: dict[str, Any]) -> jsonschema_rs.Validator:
    """A validator for a schema `check_json_schema` accepted; it never fetches anything."""
    return jsonschema_rs.validator_for(schema, offline=True)


_MODEL_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = (
    weakref.WeakKeyDictionary()
)


def model_parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The flat parameters schema of a pydantic model, computed once per model class.

    Aliases are the property names (they are what the model must send), titles are dropped,
    local references are inlined (a recursive model keeps the reference that closes the cycle),
    defaults and constraints stay. The result is shared: treat it as read-only.
    """
    cached = _MODEL_SCHEMAS.get(model)
    if cached is None:
        raw = model.model_json_schema(by_alias=True, mode="validation")
        cached = cast(dict[str, Any], tidy_schema(deref_json_schema(raw)))
        check_json_schema(cached, f"the schema of {model.__qualname__}")
        _MODEL_SCHEMAS[model] = cached
    return cached
