"""The repairs a tool's parameters schema makes unambiguous, at any depth (private).

`repair_value(value, schema, limits)` walks the arguments along the schema and changes a
string only where the schema accepts no string there, and only into the one thing it can mean:

    JSON text of an object or an array   where the schema wants an object / an array
    a JSON number ("42", "-1.5e3")       where it wants a number or an integer
    true / false (any case)              where it wants a boolean

A JSON text is walked in turn, so a string inside it is repaired the same way. Everything
else is left as it is: a place the schema does not describe (no `type`, a branch that takes
anything), a union where more than one branch would describe the value, a string where a
string is allowed. The caller validates the result against the whole schema and keeps it
only if it is valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from kosong.tooling import ArgumentLimits, ArgumentsError, parse_arguments
from kosong.utils.jsonschema import resolve_ref
from kosong.utils.typing import JsonType

__all__ = ["repair_value"]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?P<fraction>\.[0-9]+)?(?P<exponent>[eE][+-]?[0-9]+)?")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_HOPS = 32
"""References followed in a row, and unions nested, before a place counts as undescribed."""
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties")
_KINDS: dict[type, str] = {
    bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
    dict: "object", type(None): "null",
}  # fmt: skip


def repair_value(
    value: JsonType, schema: Mapping[str, Any], limits: ArgumentLimits
) -> tuple[JsonType, list[JsonType]]:
    """`value` with what `schema` makes unambiguous repaired, and the list of changes.

    Each change is `{"path": JSON path, "from": "string", "to": kind}`, outer ones first. The
    value is not changed in place; it is returned as is when nothing was repaired.
    """
    walk = _Walk(schema, limits)
    return walk.value(value, schema, "$", 0), walk.changes


class _Walk:
    def __init__(self, root: Mapping[str, Any], limits: ArgumentLimits) -> None:
        self.root = root
        self.limits = limits
        self.changes: list[JsonType] = []

    # --- the value --------------------------------------------------------------------------

    def value(self, value: JsonType, schema: object, path: str, depth: int) -> JsonType:
        if depth > self.limits.max_depth:
            return value
        if isinstance(value, str):
            return self.string(value, schema, path, depth)
        if isinstance(value, dict):
            node = self.only_branch(schema, "object", 0)
            if node is None:
                return value
            changed = False
            items: dict[str, JsonType] = {}
            for key, item in value.items():
                sub = _property(node, key)
                new = item if sub is None else self.value(item, sub, _key(path, key), depth + 1)
                changed = changed or new is not item
                items[key] = new
            return items if changed else value
        if isinstance(value, list):
            node = self.only_branch(schema, "array", 0)
            if node is None:
                return value
            changed = False
            elements: list[JsonType] = []
            for index, item in enumerate(value):
                sub = _item(node, index)
                new = item if sub is None else self.value(item, sub, f"{path}[{index}]", depth + 1)
                changed = changed or new is not item
                elements.append(new)
            return elements if changed else value
        return value

    def string(self, text: str, schema: object, path: str, depth: int) -> JsonType:
        kinds = self.kinds(schema, 0)
        if kinds is None or "string" in kinds:  # a string may be meant: nothing to repair
            return text
        stripped = text.strip()
        first = stripped[:1]
        at = len(self.changes)  # this change goes before those found inside the text
        new: JsonType
        if (first == "{" and "object" in kinds) or (first == "[" and "array" in kinds):
            nested = ArgumentLimits(
                max_length=self.limits.max_length,
                max_depth=max(1, self.limits.max_depth - depth),
                offload_length=self.limits.offload_length,
            )
            try:
                parsed = parse_arguments(stripped, nested)
            except ArgumentsError:
                return text
            kind = "object" if isinstance(parsed, dict) else "array"
            new = self.value(parsed, schema, path, depth)
        elif "number" in kinds or "integer" in kinds:
            found = _NUMBER.fullmatch(stripped)
            if found is None:
                return text
            try:
                new = float(stripped) if found["fraction"] or found["exponent"] else int(stripped)
            except ValueError:  # more digits than Python converts
                return text
            if isinstance(new, float) and new in (float("inf"), float("-inf")):
                return text
            kind = "integer" if isinstance(new, int) else "number"
        elif "boolean" in kinds and stripped.lower() in ("true", "false"):
            new, kind = stripped.lower() == "true", "boolean"
        else:
            return text
        self.changes.insert(at, {"path": path, "from": "string", "to": kind})
        return new

    # --- the schema -------------------------------------------------------------------------

    def resolve(self, schema: object) -> object:
        """`schema` with its local `$ref`s followed (True, "anything", if they lead nowhere)."""
        for _ in range(_MAX_HOPS):
            node = _as_dict(schema)
            if node is None or "$ref" not in node:
                return schema
            try:
                schema = resolve_ref(self.root, node["$ref"])
            except ValueError:  # not local, or nowhere
                return True
        return True

    def kinds(self, schema: object, hops: int) -> frozenset[str] | None:
        """The JSON types `schema` allows, or None when it does not say (or allows any)."""
        schema = self.resolve(schema)
        if schema is False:
            return frozenset()
        node = _as_dict(schema)
        if node is None or hops > _MAX_HOPS:
            return None
        declared = node.get("type")
        if isinstance(declared, str):
            return frozenset({declared})
        if isinstance(declared, list):
            return frozenset(t for t in cast(list[Any], declared) if isinstance(t, str))
        branches = _branches(node)
        if branches is not None:
            union: set[str] = set()
            for branch in branches:
                kinds = self.kinds(branch, hops + 1)
                if kinds is None:
                    return None
                union |= kinds
            return frozenset(union)
        if "const" in node:
            return frozenset({_kind(node["const"])})
        enum = node.get("enum")
        if isinstance(enum, list):
            return frozenset(_kind(v) for v in cast(list[object], enum))
        if any(key in node for key in _OBJECT_KEYWORDS):
            return frozenset({"object"})
        if "items" in node or "prefixItems" in node:
            return frozenset({"array"})
        return None

    def only_branch(self, schema: object, kind: str, hops: int) -> dict[str, Any] | None:
        """The one schema describing a value of `kind` here, or None (none, or several)."""
        node = _as_dict(self.resolve(schema))
        if node is None or hops > _MAX_HOPS:
            return None
        branches = _branches(node)
        if branches is None:
            kinds = self.kinds(node, hops)
            return node if kinds is not None and kind in kinds else None
        matching: list[object] = []
        for branch in branches:
            kinds = self.kinds(branch, hops + 1)
            if kinds is None:  # a branch that takes anything: which one is meant?
                return None
            if kind in kinds:
                matching.append(branch)
        if len(matching) != 1:
            return None
        return self.only_branch(matching[0], kind, hops + 1)


def _as_dict(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _kind(value: object) -> str:
    return _KINDS.get(type(value), "")


def _branches(node: dict[str, Any]) -> Sequence[object] | None:
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            return cast(list[object], branches)
    every = node.get("allOf")
    if isinstance(every, list):
        parts = cast(list[object], every)
        if len(parts) == 1:  # a wrapped `$ref`
            return parts
    return None


def _property(node: dict[str, Any], key: str) -> object | None:
    properties = _as_dict(node.get("properties"))
    if properties is not None and key in properties:
        return properties[key]
    if "patternProperties" in node:  # which patterns match is the validator's business
        return None
    return _as_dict(node.get("additionalProperties"))


def _item(node: dict[str, Any], index: int) -> object | None:
    prefix = node.get("prefixItems")
    if isinstance(prefix, list):
        prefix_items = cast(list[object], prefix)
        if index < len(prefix_items):
            return prefix_items[index]
        return _as_dict(node.get("items"))
    items = node.get("items")
    if isinstance(items, list):  # drafts 4 to 7: one schema per position
        positional = cast(list[object], items)
        return positional[index] if index < len(positional) else None
    return _as_dict(items)


def _key(path: str, key: str) -> str:
    if _KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
