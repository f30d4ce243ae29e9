"""JSON Schema helpers for exporting tool definitions to models."""

from __future__ import annotations

import copy
from typing import Any, cast

__all__ = ["KNOWN_DRAFTS", "check_offline", "deref_json_schema"]

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

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")

_DEFS_KEYS = ("$defs", "definitions")
_MAX_INLINED = 100_000
"""Refuse to inline past this many references: definitions that each use the next one twice
would otherwise grow the schema exponentially."""
_DATA_KEYS = frozenset({"default", "const", "enum", "examples"})
"""Keywords whose value is data, not a schema: a `"$ref"` or `"$defs"` key in a default is part
of a value, never a reference to follow or a key to drop."""
_NAME_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names to subschemas: a property *named* `$defs`, `definitions` or
`$ref` is a name, kept as is, and only its subschema is walked."""


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
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            items = cast(list[Any], node)
            stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(items))))
            continue
        if not isinstance(node, dict):
            continue
        node = cast(dict[str, Any], node)
        for key in _REF_KEYS:
            ref = node.get(key)
            if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
                raise ValueError(
                    f"{owner} has a non-local reference at {path or '(root)'}.{key}: {ref!r}; "
                    "kosong never fetches schemas, so put the definition under `$defs` and "
                    "refer to it as `#/$defs/...`"
                )
        draft = node.get("$schema")
        if draft is not None and draft not in KNOWN_DRAFTS:
            raise ValueError(
                f"{owner} names an unknown meta-schema at {path or '(root)'}.$schema: {draft!r};"
                " kosong never fetches schemas: use a JSON Schema draft (4, 6, 7, 2019-09 or "
                "2020-12) or leave `$schema` out"
            )
        for key, value in reversed(list(node.items())):
            if key in _DATA_KEYS:
                continue
            where = f"{path}.{key}" if path else key
            if key in _NAME_MAPS and isinstance(value, dict):
                names = cast(dict[str, Any], value)
                stack.extend((sub, f"{where}.{name}") for name, sub in reversed(names.items()))
            else:
                stack.append((value, where))


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

    def resolve(pointer: str) -> Any:
        node: Any = schema
        for raw in pointer.lstrip("#").split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = cast(dict[str, Any], node)[token]
            elif isinstance(node, list) and token.isdigit():
                items = cast(list[Any], node)
                if int(token) >= len(items):
                    raise ValueError(f"JSON Schema reference {pointer!r} points at nothing")
                node = items[int(token)]
            else:
                raise ValueError(f"JSON Schema reference {pointer!r} points at nothing")
        return node

    def keywords(node: dict[str, Any], expanding: tuple[str, ...], drop: Any) -> dict[str, Any]:
        # A schema's keywords, walked: data keywords are copied untouched and the names in a
        # name map kept, so only schema positions are searched for references and $defs.
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in drop:
                continue
            if k in _DATA_KEYS:
                out[k] = copy.deepcopy(v)
            elif k in _NAME_MAPS and isinstance(v, dict):
                names = cast(dict[str, Any], v)
                out[k] = {name: walk(sub, expanding) for name, sub in names.items()}
            else:
                out[k] = walk(v, expanding)
        return out

    def walk(node: Any, expanding: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, expanding) for item in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        node = cast(dict[str, Any], node)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
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
            target = walk(resolve(ref), (*expanding, ref))
            siblings = keywords(node, expanding, ("$ref", *_DEFS_KEYS))
            if isinstance(target, dict):
                return {**cast(dict[str, Any], target), **siblings}
            return target if not siblings else {"allOf": [target], **siblings}
        return keywords(node, expanding, _DEFS_KEYS)

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
