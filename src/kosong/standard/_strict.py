"""Strict schemas: turn a parameters schema into one OpenAI's strict function calling accepts.

OpenAI's published rules for strict mode (Structured Outputs, "supported schemas"):

1. The root is an object, and not an `anyOf`.
2. Every object sets `additionalProperties: false`.
3. Every property is `required`; an optional one is emulated by allowing `null`.
4. Supported types: string, number, integer, boolean, object, array, `enum`, `const`, and
   `anyOf` (nested); `$defs` / `$ref` (recursion included).
5. Supported keywords besides structure: string `pattern` and `format` (date-time, time, date,
   duration, email, hostname, ipv4, ipv6, uuid); number `multipleOf`, `minimum`, `maximum`,
   `exclusiveMinimum`, `exclusiveMaximum`; array `minItems`, `maxItems`; and `description`.
   Composition keywords `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`,
   `dependentSchemas` are not supported, nor is `oneOf`.
6. Limits: at most 5000 object properties in all, 10 levels of object nesting, 1000 enum
   values in all, 120,000 characters of property names, definition names, enum and const
   values, and 15,000 characters for a string enum of more than 250 values.

`to_strict_schema` applies them. What it cannot express it handles or refuses:

- optional properties become required and nullable (`from_strict_arguments` turns the model's
  nulls back into "not given", so the tool sees the arguments its own schema expects);
- `oneOf` becomes `anyOf`, a single-element `allOf` is merged into its schema, local `$ref`s
  are inlined (recursive ones stay, with their `$defs` converted too);
- annotations and constraints strict mode lacks (`default`, `examples`, `minLength`,
  `maxLength`, `uniqueItems`, `minProperties`, unsupported formats...) are dropped from the
  schema and written into its `description`, so the model still reads them, and the tool's own
  validation still enforces them;
- anything else (free-form objects, `additionalProperties` schemas, `patternProperties`,
  `not`, conditionals, multi-element `allOf`, a schema without a type, limits exceeded) raises
  `StrictSchemaError` naming the JSON path of the offending part.

`check_strict_schema` lists the rules a schema breaks, without changing it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from kosong.utils.jsonschema import deref_json_schema, resolve_ref
from kosong.utils.typing import JsonType

__all__ = [
    "SUPPORTED_FORMATS",
    "StrictSchemaError",
    "check_strict_schema",
    "from_strict_arguments",
    "to_strict_arguments",
    "to_strict_schema",
]

# OpenAI's documented limits of strict mode (Structured Outputs, "Supported schemas"), the
# defaults of `to_strict_schema`'s arguments.
_MAX_PROPERTIES = 5000
_MAX_NESTING = 10
_MAX_ENUM_VALUES = 1000
_MAX_STRING_LENGTH = 120_000
_LARGE_ENUM = 250
_LARGE_ENUM_LENGTH = 15_000

SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats strict mode accepts."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_STRUCTURE = frozenset(
    {"type", "description", "properties", "required", "additionalProperties", "items", "enum",
     "const", "anyOf", "$ref", "$defs"}
)  # fmt: skip
_CONSTRAINTS = frozenset(
    {"pattern", "format", "multipleOf", "minimum", "maximum", "exclusiveMinimum",
     "exclusiveMaximum", "minItems", "maxItems"}
)  # fmt: skip
_SILENT = frozenset({"title", "$schema", "$id", "$comment", "readOnly", "writeOnly", "deprecated"})
_DESCRIBED = frozenset(
    {"default", "examples", "minLength", "maxLength", "uniqueItems", "minProperties",
     "maxProperties", "contentEncoding", "contentMediaType", "minContains", "maxContains"}
)  # fmt: skip
_CONDITIONAL = "conditional schemas (`if`/`then`/`else`) are not supported in strict mode"
_REFUSED = {
    "allOf": "`allOf` with several schemas cannot be expressed; merge them into one schema",
    "if": _CONDITIONAL,
    "then": _CONDITIONAL,
    "else": _CONDITIONAL,
    "patternProperties": "objects with pattern-named properties cannot be strict; list the "
    "properties, or use an array of {key, value} objects",
    "prefixItems": "tuples (`prefixItems`) are not supported in strict mode; use an object",
    "additionalItems": "tuples (`additionalItems`) are not supported in strict mode",
}
"""Keywords refused with a hint; any other unknown keyword is refused as unsupported."""
_ACCEPTED = _STRUCTURE | _CONSTRAINTS | _SILENT | _DESCRIBED | {"definitions", "oneOf"}


class StrictSchemaError(ValueError):
    """A schema that cannot be made strict; `path` says where (`parameters.properties.x`)."""

    def __init__(self, path: str, problem: str) -> None:
        """Say where and what."""
        super().__init__(f"{path}: {problem}")
        self.path = path
        """The JSON path of the offending part."""
        self.problem = problem
        """What is wrong there."""


def _types(schema: Mapping[str, Any]) -> list[str]:
    type_ = schema.get("type")
    if isinstance(type_, str):
        return [type_]
    if isinstance(type_, list):
        return [t for t in cast(list[Any], type_) if isinstance(t, str)]
    return []


def _is_nullable(schema: Mapping[str, Any]) -> bool:
    if "null" in _types(schema):
        return True
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return None in cast(list[Any], schema["enum"])
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):
        return any(isinstance(s, Mapping) and _is_nullable(cast(Mapping[str, Any], s))
                   for s in cast(list[Any], any_of))  # fmt: skip
    return False


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, also accepting null."""
    if _is_nullable(schema):
        return schema
    if "$ref" in schema or "const" in schema or ("anyOf" not in schema and "type" not in schema):
        description = schema.pop("description", None)
        wrapped: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
        if description is not None:
            wrapped = {"description": description, **wrapped}
        return wrapped
    out = dict(schema)
    if "anyOf" in out:
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    type_ = out["type"]
    out["type"] = [*type_, "null"] if isinstance(type_, list) else [type_, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def _note(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:197] + "..."


class _Converter:
    def __init__(self, max_nesting: int, large_enum: int, large_enum_length: int) -> None:
        self.max_nesting = max_nesting
        self.large_enum = large_enum
        self.large_enum_length = large_enum_length
        self.properties = 0
        self.enum_values = 0
        self.string_length = 0

    def convert(self, node: Any, path: str, depth: int, root: bool = False) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise StrictSchemaError(path, "a boolean schema cannot be strict; give a typed schema")
        node = cast(dict[str, Any], node)
        for key in node:
            if key not in _ACCEPTED and not (key == "allOf" and len(node["allOf"]) == 1):
                problem = _REFUSED.get(key, f"`{key}` is not supported in strict mode")
                raise StrictSchemaError(f"{path}.{key}", problem)
        if "allOf" in node:  # exactly one: merge it into this schema
            merged = {
                **cast(dict[str, Any], node["allOf"][0]),
                **{k: v for k, v in node.items() if k != "allOf"},
            }
            return self.convert(merged, path, depth, root)
        if "oneOf" in node:
            node = {**{k: v for k, v in node.items() if k != "oneOf"}, "anyOf": node["oneOf"]}
        if root:
            if "anyOf" in node or _types(node) not in ([], ["object"]):
                raise StrictSchemaError(
                    path, "the root of a strict schema must be an object (not anyOf)"
                )
            node = {"type": "object", **node}  # a tool's arguments are always an object

        notes: list[str] = []
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DESCRIBED:
                notes.append(f"{key}: {_note(value)}")
            elif key == "format" and value not in SUPPORTED_FORMATS:
                notes.append(f"format: {_note(value)}")
            elif key in _STRUCTURE or key in _CONSTRAINTS:
                out[key] = value
        if "$ref" in out:
            extra = set(out) - {"$ref", "description"}
            if extra:
                raise StrictSchemaError(
                    path, f"a `$ref` cannot have siblings in strict mode: {sorted(extra)}"
                )
            return out
        types = _types(out)
        for type_ in types:
            if type_ not in _TYPES:
                raise StrictSchemaError(f"{path}.type", f"unknown type {type_!r}")
        if not types and not ({"enum", "const", "anyOf"} & out.keys()):
            if "properties" in out:
                out["type"] = "object"
                types = ["object"]
            else:
                raise StrictSchemaError(
                    path, "every strict schema needs a `type` (or enum, const, anyOf)"
                )
        if "enum" in out:
            values = cast(list[Any], out["enum"])
            self.enum_values += len(values)
            strings = [v for v in values if isinstance(v, str)]
            self.string_length += sum(map(len, strings))
            if len(strings) > self.large_enum and sum(map(len, strings)) > self.large_enum_length:
                raise StrictSchemaError(
                    f"{path}.enum",
                    f"a string enum of more than {self.large_enum} "
                    f"values may hold at most {self.large_enum_length} characters",
                )
        if isinstance(out.get("const"), str):
            self.string_length += len(out["const"])
        if "anyOf" in out:
            out["anyOf"] = [self.convert(s, f"{path}.anyOf[{i}]", depth)
                            for i, s in enumerate(cast(list[Any], out["anyOf"]))]  # fmt: skip
        if "object" in types:
            out = self._object(out, path, depth + 1, root)
        if "array" in types:
            items = out.get("items")
            if items is None:
                raise StrictSchemaError(path, "an array needs an `items` schema in strict mode")
            out["items"] = self.convert(items, f"{path}.items", depth)
        if "$defs" in out:
            defs = cast(dict[str, Any], out["$defs"])
            self.string_length += sum(map(len, defs))
            out["$defs"] = {n: self.convert(s, f"{path}.$defs.{n}", depth) for n, s in defs.items()}
        if notes:
            text = "; ".join(notes)
            description = out.get("description")
            out["description"] = f"{description} ({text})" if description else f"({text})"
        return _ordered(out)

    def _object(self, out: dict[str, Any], path: str, depth: int, root: bool) -> dict[str, Any]:
        if depth > self.max_nesting:
            raise StrictSchemaError(path, f"objects nest deeper than {self.max_nesting} levels")
        extra = out.get("additionalProperties", False)
        if extra is not False:
            raise StrictSchemaError(
                f"{path}.additionalProperties",
                "an object that accepts undeclared properties cannot be strict; declare them",
            )
        props = cast(dict[str, Any], out.get("properties", {}))
        if not props and not root:
            raise StrictSchemaError(
                path, "a free-form object cannot be strict; declare its properties"
            )
        required = set(cast(list[str], out.get("required", [])))
        unknown = required - props.keys()
        if unknown:
            raise StrictSchemaError(f"{path}.required", f"requires undeclared {sorted(unknown)}")
        self.properties += len(props)
        self.string_length += sum(map(len, props))
        converted: dict[str, Any] = {}
        for name, schema in props.items():
            child = self.convert(schema, f"{path}.properties.{name}", depth)
            converted[name] = child if name in required else _nullable(child)
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False
        return out


_ORDER = ("type", "description", "properties", "required", "additionalProperties")


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    return {**{k: schema[k] for k in _ORDER if k in schema}, **schema}


def to_strict_schema(
    schema: Mapping[str, Any],
    *,
    path: str = "parameters",
    max_nesting: int = _MAX_NESTING,
    max_properties: int = _MAX_PROPERTIES,
    max_enum_values: int = _MAX_ENUM_VALUES,
    max_string_length: int = _MAX_STRING_LENGTH,
    large_enum: int = _LARGE_ENUM,
    large_enum_length: int = _LARGE_ENUM_LENGTH,
) -> dict[str, Any]:
    """A copy of `schema` that OpenAI's strict mode accepts; see the module doc.

    The limits default to OpenAI's documented ones; another provider's strict mode may need
    others.

    Args:
        schema: A tool's parameters schema. It is not modified.
        path: How error messages name the root.
        max_nesting: The deepest nesting of objects.
        max_properties: The most properties, over all objects.
        max_enum_values: The most enum values, over all enums.
        max_string_length: The most characters of property names, definition names and enum
            values, in all.
        large_enum: A string enum with more values than this...
        large_enum_length: ...may hold at most this many characters.

    Raises:
        StrictSchemaError: the schema cannot be made strict; the message names the JSON path.
    """
    try:
        flat = deref_json_schema(dict(schema))
    except ValueError as e:
        raise StrictSchemaError(path, str(e)) from None
    converter = _Converter(max_nesting, large_enum, large_enum_length)
    out = converter.convert(flat, path, 0, root=True)
    if converter.properties > max_properties:
        raise StrictSchemaError(
            path, f"{converter.properties} properties; strict mode allows {max_properties}"
        )
    if converter.enum_values > max_enum_values:
        raise StrictSchemaError(
            path, f"{converter.enum_values} enum values; strict mode allows {max_enum_values}"
        )
    if converter.string_length > max_string_length:
        raise StrictSchemaError(
            path,
            f"names and enum values total {converter.string_length} characters; strict mode "
            f"allows {max_string_length}",
        )
    return out


def check_strict_schema(
    schema: Mapping[str, Any], *, path: str = "parameters", max_nesting: int = _MAX_NESTING
) -> list[str]:
    """The strict-mode rules `schema` breaks as it is, each as `path: problem` (empty: none).

    `max_nesting` is the deepest nesting of objects allowed (OpenAI's limit by default).
    """
    problems: list[str] = []

    def walk(node: Any, where: str, depth: int, root: bool = False) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: not a schema object")
            return
        node = cast(dict[str, Any], node)
        for key in node:
            if key not in _STRUCTURE and key not in _CONSTRAINTS and key != "title":
                problems.append(f"{where}.{key}: `{key}` is not supported in strict mode")
        if "format" in node and node["format"] not in SUPPORTED_FORMATS:
            problems.append(f"{where}.format: format {node['format']!r} is not supported")
        if root and ("anyOf" in node or _types(node) != ["object"]):
            problems.append(f"{where}: the root must be an object, not anyOf")
        if "$ref" in node:
            return
        types = _types(node)
        if not types and not ({"enum", "const", "anyOf"} & node.keys()):
            problems.append(f"{where}: no type")
        if "object" in types:
            if depth + 1 > max_nesting:
                problems.append(f"{where}: nested deeper than {max_nesting} objects")
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false")
            props = cast(dict[str, Any], node.get("properties", {}))
            missing = [n for n in props if n not in node.get("required", [])]
            if missing:
                problems.append(
                    f"{where}.required: every property must be required, missing {missing}"
                )
            for name, child in props.items():
                walk(child, f"{where}.properties.{name}", depth + 1)
        if "array" in types:
            if "items" not in node:
                problems.append(f"{where}: an array needs items")
            else:
                walk(node["items"], f"{where}.items", depth)
        for i, child in enumerate(cast(list[Any], node.get("anyOf", []))):
            walk(child, f"{where}.anyOf[{i}]", depth)
        for name, child in cast(dict[str, Any], node.get("$defs", {})).items():
            walk(child, f"{where}.$defs.{name}", depth)

    walk(schema, path, 0, root=True)
    return problems


def _optional_names(schema: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    props = cast(dict[str, Any], schema.get("properties") or {})
    required = set(cast(list[str], schema.get("required") or []))
    optional = {
        name
        for name, child in props.items()
        if name not in required
        and not (isinstance(child, Mapping) and _is_nullable(cast(Mapping[str, Any], child)))
    }
    return props, optional


def from_strict_arguments(arguments: JsonType, schema: Mapping[str, Any]) -> JsonType:
    """Arguments a model wrote against `to_strict_schema(schema)`, as `schema` expects them.

    A strict schema makes optional properties required-but-nullable; this drops the nulls the
    model sent for properties that `schema` has as optional (and not nullable), in nested
    objects, arrays and `anyOf` branches too, so the tool sees them as not given. Local `$ref`s
    are followed.
    """
    return _Mapper(schema, fill=False).map(arguments, schema)


def to_strict_arguments(arguments: JsonType, schema: Mapping[str, Any]) -> JsonType:
    """The inverse of `from_strict_arguments`: optional properties left out become null."""
    return _Mapper(schema, fill=True).map(arguments, schema)


class _Mapper:
    def __init__(self, root: Mapping[str, Any], *, fill: bool) -> None:
        self.root = root
        self.fill = fill

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        for _ in range(64):
            try:
                target = resolve_ref(self.root, schema.get("$ref"))
            except ValueError:  # no reference, or none that leads anywhere: nothing to follow
                break
            if not isinstance(target, Mapping):
                break
            schema = cast(Mapping[str, Any], target)
        return schema

    def branch(self, value: JsonType, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """The `anyOf` branch that describes `value`'s shape, or `schema` itself."""
        branches = schema.get("anyOf") or schema.get("oneOf")
        if not isinstance(branches, list):
            return schema
        for raw in cast(list[Any], branches):
            if not isinstance(raw, Mapping):
                continue
            candidate = self.resolve(cast(Mapping[str, Any], raw))
            props = candidate.get("properties")
            if (
                isinstance(value, dict)
                and isinstance(props, Mapping)
                and value.keys() <= cast(Mapping[str, Any], props).keys()
            ):
                return candidate
            if isinstance(value, list) and isinstance(candidate.get("items"), Mapping):
                return candidate
        return schema

    def map(self, value: JsonType, schema: Mapping[str, Any]) -> JsonType:
        schema = self.branch(value, self.resolve(schema))
        if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
            props, optional = _optional_names(schema)
            out: dict[str, JsonType] = {}
            for name, item in value.items():
                child = props.get(name)
                if not self.fill and item is None and name in optional:
                    continue
                out[name] = (
                    self.map(item, cast(Mapping[str, Any], child))
                    if isinstance(child, Mapping)
                    else item
                )
            if self.fill:
                for name in props:
                    if name in optional and name not in out:
                        out[name] = None
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            items = cast(Mapping[str, Any], schema["items"])
            return [self.map(item, items) for item in value]
        return value
