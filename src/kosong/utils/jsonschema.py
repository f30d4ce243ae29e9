"""JSON Schema helpers: one walker over a schema's subschemas, and the exports built on it."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

__all__ = [
    "KNOWN_DRAFTS",
    "check_offline",
    "deref_json_schema",
    "map_subschemas",
    "resolve_ref",
    "walk_schema",
]

KNOWN_DRAFTS: frozenset[str] = frozenset(
    f"{scheme}://json-schema.org/{path}{end}"
    for scheme in ("http", "https")
    for path in (
        "draft-04/schema", "draft-06/schema", "draft-07/schema",
        "draft/2019-09/schema", "draft/2020-12/schema",
    )
    for end in ("", "#")
)  # fmt: skip
"""The `$schema` values a schema may name: the drafts validators know without fetching."""

# The keywords whose value is a subschema, a list of them or a map of name -> subschema: the
# applicator, unevaluated and content vocabularies of 2020-12, with `$defs`, and from older
# drafts `definitions`, `dependencies`, `additionalItems` and `items` as a list.
_ONE = frozenset(
    {"items", "additionalItems", "additionalProperties", "unevaluatedItems",
     "unevaluatedProperties", "propertyNames", "contains", "not", "if", "then", "else",
     "contentSchema"}
)  # fmt: skip
_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAPS = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs",
     "definitions"}
)  # fmt: skip
_SCHEMA_KEYWORDS = _ONE | _LISTS | _MAPS

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DEFS_KEYS = ("$defs", "definitions")
_MAX_INLINED = 100_000
"""Refuse to inline past this many references: definitions that each use the next one twice
would otherwise grow the schema exponentially."""


def walk_schema(schema: Any, path: str = "") -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object in `schema` (itself included) with its JSON path, parents first.

    Paths extend `path` as kosong's messages write them (`.items`, `.anyOf[0]`,
    `.properties.city`). Only schema positions are visited: the values of `default`, `enum`,
    `const`, `examples` and other keywords are data, and a property *named* `$ref` is a name.
    Each position is visited once; references are not followed (see `resolve_ref`). A parent's
    subschemas are read after the parent is yielded, so a caller may change a schema object
    it is given (say, drop a keyword) and the walk goes on from the changed object.
    """
    if not isinstance(schema, dict):
        return
    node = cast(dict[str, Any], schema)
    yield node, path
    for key, value in list(node.items()):
        if key in _LISTS and isinstance(value, list):
            for i, sub in enumerate(cast(list[Any], value)):
                yield from walk_schema(sub, f"{path}.{key}[{i}]")
        elif key in _MAPS and isinstance(value, dict):
            for name, sub in cast(dict[str, Any], value).items():
                yield from walk_schema(sub, f"{path}.{key}.{name}")
        elif key in _ONE:
            yield from walk_schema(value, f"{path}.{key}")


def map_subschemas(
    node: Mapping[str, Any], change: Callable[[Any, str], Any], path: str = ""
) -> dict[str, Any]:
    """A copy of the schema object `node` with each direct subschema `s` at `p` as `change(s, p)`.

    The other keywords keep their values (not copied); a transformer calls this on each schema
    object it rebuilds, and itself as `change` to go deeper.
    """
    out = dict(node)
    for key, value in node.items():
        if key in _LISTS and isinstance(value, list):
            subs = cast(list[Any], value)
            out[key] = [change(sub, f"{path}.{key}[{i}]") for i, sub in enumerate(subs)]
        elif key in _MAPS and isinstance(value, dict):
            subs = cast(dict[str, Any], value)
            out[key] = {name: change(sub, f"{path}.{key}.{name}") for name, sub in subs.items()}
        elif key in _ONE:
            out[key] = change(value, f"{path}.{key}")
    return out


def resolve_ref(root: Any, ref: Any) -> Any:
    """What the local reference `ref` (`#/$defs/Address`) points at in the schema `root`.

    Raises:
        ValueError: `ref` is not a local reference, or it points at nothing.
    """
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise ValueError(f"JSON Schema reference {ref!r} is not local (it must start with `#`)")
    node = root
    for raw in ref[1:].split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = cast(dict[str, Any], node)[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(cast(list[Any], node)):
            node = cast(list[Any], node)[int(token)]
        else:
            raise ValueError(f"JSON Schema reference {ref!r} points at nothing")
    return node


def check_offline(schema: Any, owner: str = "the schema") -> None:
    """Refuse a schema that would need anything outside itself to be used.

    Every reference (`$ref`, `$dynamicRef`, `$recursiveRef`) must be local (start with `#`),
    and `$schema`, when given, must name a draft of `KNOWN_DRAFTS`: a remote or `file:`
    reference would make building a validator fetch it (a request to an address someone else
    chose, a file read whose content could reach the model in error messages). Data keywords
    (`default`, `enum`, `const`, `examples`) and property names are not references.

    Raises:
        ValueError: naming the JSON path of the first such reference.
    """
    for node, path in walk_schema(schema):
        where = path[1:] or "(root)"
        for key in _REF_KEYS:
            ref = node.get(key)
            if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
                raise ValueError(
                    f"{owner} has a non-local reference at {where}.{key}: {ref!r}; "
                    "kosong never fetches schemas, so put the definition under `$defs` and "
                    "refer to it as `#/$defs/...`"
                )
        draft = node.get("$schema")
        if draft is not None and draft not in KNOWN_DRAFTS:
            raise ValueError(
                f"{owner} names an unknown meta-schema at {where}.$schema: {draft!r};"
                " kosong never fetches schemas: use a JSON Schema draft (4, 6, 7, 2019-09 or "
                "2020-12) or leave `$schema` out"
            )


def deref_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `schema` with its local `$ref`s inlined and `$defs` dropped.

    Many model APIs handle a flat schema better than one with references, so every local
    reference (`#/...`) is replaced by what it points to; keywords next to a `$ref` (say a
    `description`) are kept and win over the target's. A recursive definition (a tree of
    nodes) cannot be inlined: the reference that closes the cycle stays a `$ref`, and only the
    definitions such references still need are kept under their original key. The input is
    not modified. Nothing is ever fetched: a remote reference is refused (see `check_offline`).

    Raises:
        ValueError: a reference is not local or points at nothing, or inlining would make the
            schema absurdly large (more than 100,000 inlined references).
    """
    check_offline(schema)
    kept: set[str] = set()
    inlined = 0

    def keywords(node: dict[str, Any], expanding: tuple[str, ...], drop: Any) -> dict[str, Any]:
        # Subschemas walked; the other values copied, so the result shares nothing with `schema`.
        mapped = map_subschemas(
            {k: v for k, v in node.items() if k not in drop}, lambda s, _: walk(s, expanding)
        )
        return {k: v if k in _SCHEMA_KEYWORDS else copy.deepcopy(v) for k, v in mapped.items()}

    def walk(node: Any, expanding: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return copy.deepcopy(node)
        node = cast(dict[str, Any], node)
        ref = node.get("$ref")
        if not isinstance(ref, str):  # check_offline let only local references through
            return keywords(node, expanding, _DEFS_KEYS)
        if ref in expanding:  # the cycle closes here: keep the reference
            kept.add(ref)
            return keywords(node, expanding, ())
        nonlocal inlined
        inlined += 1
        if inlined > _MAX_INLINED:
            raise ValueError(
                f"inlining the schema's references would exceed {_MAX_INLINED:,} copies; "
                "simplify the schema or keep its references"
            )
        target = walk(resolve_ref(schema, ref), (*expanding, ref))
        siblings = keywords(node, expanding, ("$ref", *_DEFS_KEYS))
        if isinstance(target, dict):
            return {**cast(dict[str, Any], target), **siblings}
        return target if not siblings else {"allOf": [target], **siblings}

    result = cast(dict[str, Any], walk(schema, ()))
    # Keep the definitions that references closing a cycle still point into.
    for key in _DEFS_KEYS:
        defs = schema.get(key)
        if not isinstance(defs, dict):
            continue
        needed = {
            name: walk(value, (f"#/{key}/{name}",))
            for name, value in cast(dict[str, Any], defs).items()
            if f"#/{key}/{name}" in kept
        }
        if needed:
            result[key] = needed
    return result
