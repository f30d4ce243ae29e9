from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.utils.jsonschema import (
    check_offline,
    deref_json_schema,
    map_subschemas,
    resolve_ref,
    walk_schema,
)


def test_local_refs_are_inlined_and_defs_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/Addr", "description": "where"}},
        "$defs": {"Addr": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    original = copy.deepcopy(schema)
    assert deref_json_schema(schema) == {
        "type": "object",
        "properties": {
            "home": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "description": "where",
            }
        },
    }
    assert schema == original  # not modified


def test_definitions_keyword_and_nested_refs_are_handled() -> None:
    schema = {
        "type": "array",
        "items": {"$ref": "#/definitions/A"},
        "definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"type": "integer"}},
    }
    assert deref_json_schema(schema) == {"type": "array", "items": {"type": "integer"}}


def test_self_reference_is_kept_instead_of_recursing_forever() -> None:
    schema = {
        "$ref": "#/$defs/N",
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
    }
    out = deref_json_schema(schema)
    assert out["properties"]["next"] == {"$ref": "#/$defs/N"}
    assert out["$defs"]["N"]["properties"]["next"] == {"$ref": "#/$defs/N"}


def test_mutual_recursion_terminates() -> None:
    schema = {
        "$ref": "#/$defs/A",
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }
    out = deref_json_schema(schema)
    assert out["properties"]["b"]["properties"]["a"] == {"$ref": "#/$defs/A"}
    assert "A" in out["$defs"]


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"properties": {"x": {"$ref": "https://example.com/s.json"}}}, "properties.x.$ref"),
        ({"items": [{"type": "string"}, {"$ref": "file:///etc/passwd"}]}, "items[1].$ref"),
        ({"$defs": {"A": {"$dynamicRef": "other.json#node"}}}, "$defs.A.$dynamicRef"),
        ({"$schema": "https://evil.example/meta.json"}, "(root).$schema"),
    ],
)
def test_non_local_references_are_refused_with_their_path(schema: Any, path: str) -> None:
    with pytest.raises(ValueError, match="never fetches") as caught:
        deref_json_schema(schema)
    assert f" at {path}" in str(caught.value)


def test_references_in_data_and_property_names_are_not_references() -> None:
    schema = {
        "type": "object",
        "properties": {"$ref": {"type": "string", "default": "https://x/y.json"}},
        "examples": [{"$ref": "https://x/y.json"}],
    }
    check_offline(schema)
    assert deref_json_schema(schema) == schema


def test_dangling_ref_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="points at nothing"):
        deref_json_schema({"$ref": "#/$defs/Missing"})


def test_exponential_blow_up_is_refused() -> None:
    defs: dict[str, Any] = {"D0": {"type": "integer"}}
    for i in range(1, 30):
        defs[f"D{i}"] = {"type": "array", "prefixItems": [{"$ref": f"#/$defs/D{i - 1}"}] * 2}
    with pytest.raises(ValueError, match="exceed"):
        deref_json_schema({"$ref": "#/$defs/D29", "$defs": defs})


_leaf = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])})


@given(
    st.dictionaries(
        st.from_regex(r"[A-Z][a-z]{0,5}", fullmatch=True), _leaf, min_size=1, max_size=5
    )
)
def test_inlining_leaves_no_local_refs_for_acyclic_defs(defs: dict[str, Any]) -> None:
    schema = {
        "type": "object",
        "properties": {
            name.lower() + str(i): {"$ref": f"#/$defs/{name}"} for i, name in enumerate(defs)
        },
        "$defs": defs,
    }
    out = deref_json_schema(schema)
    assert "$ref" not in str(out) and "$defs" not in out
    for i, name in enumerate(defs):
        assert out["properties"][name.lower() + str(i)] == defs[name]


# Every keyword whose value holds subschemas, by shape: one, a list, a map of names.
_ONE_KEYWORDS = (
    "items", "additionalItems", "additionalProperties", "unevaluatedItems",
    "unevaluatedProperties", "propertyNames", "contains", "not", "if", "then", "else",
    "contentSchema",
)  # fmt: skip
_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP_KEYWORDS = (
    "properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"
)  # fmt: skip
_DEFS = ("$defs", "definitions")  # dropped once inlined


def _nest(keyword: str, child: Any, shape: str) -> dict[str, Any]:
    value = child if shape == "one" else [child] if shape == "list" else {"p": child}
    return {"default": {"$ref": "https://x/data.json"}, keyword: value}


_SHAPED = (
    [(k, "one") for k in _ONE_KEYWORDS]
    + [(k, "list") for k in _LIST_KEYWORDS]
    + [(k, "map") for k in _MAP_KEYWORDS]
)


@st.composite
def _schema_trees(draw: st.DrawFn) -> dict[str, Any]:
    """A schema whose every schema object carries a unique `$comment`, with data beside."""
    counter = iter(range(10_000))

    def node(depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {"$comment": str(next(counter)), "enum": [{"$comment": "data"}]}
        if depth < 3:
            keywords = st.lists(st.sampled_from(_SHAPED), max_size=3, unique_by=lambda ks: ks[0])
            for keyword, shape in draw(keywords):
                count = 1 if shape == "one" else draw(st.integers(1, 2))
                children = [node(depth + 1) for _ in range(count)]
                if shape == "one":
                    out[keyword] = children[0]
                elif shape == "list":
                    out[keyword] = children
                else:
                    out[keyword] = {f"n{i}": child for i, child in enumerate(children)}
        return out

    return node(0)


@given(_schema_trees())
def test_walk_visits_every_subschema_exactly_once_and_never_data(schema: dict[str, Any]) -> None:
    seen = [node["$comment"] for node, _ in walk_schema(schema)]
    assert "data" not in seen
    assert sorted(seen, key=int) == [str(i) for i in range(len(seen))]
    assert seen.count("0") == 1  # the root, first


@given(_schema_trees())
def test_map_subschemas_rebuilds_every_schema_object_with_its_path(schema: dict[str, Any]) -> None:
    paths: dict[str, str] = {}

    def mark(node: Any, path: str) -> Any:
        paths[node["$comment"]] = path
        return {**map_subschemas(node, mark, path), "seen": True}

    marked = mark(schema, "")
    assert all(node.get("seen") for node, _ in walk_schema(marked))
    assert paths == {node["$comment"]: path for node, path in walk_schema(schema)}
    assert "seen" not in str(schema)  # the input is not modified


@pytest.mark.parametrize(("keyword", "shape"), _SHAPED)
def test_a_remote_ref_inside_any_subschema_keyword_is_refused(keyword: str, shape: str) -> None:
    schema = _nest(keyword, {"$ref": "https://x/remote.json"}, shape)
    with pytest.raises(ValueError, match="never fetches") as caught:
        check_offline(schema)
    where = {"one": keyword, "list": f"{keyword}[0]", "map": f"{keyword}.p"}[shape]
    assert f" at {where}.$ref" in str(caught.value)


@pytest.mark.parametrize(("keyword", "shape"), [s for s in _SHAPED if s[0] not in _DEFS])
def test_a_local_ref_inside_any_subschema_keyword_is_inlined(keyword: str, shape: str) -> None:
    schema = {**_nest(keyword, {"$ref": "#/$defs/S"}, shape), "$defs": {"S": {"type": "string"}}}
    schema.pop("default")
    flat = deref_json_schema(schema)
    assert "$ref" not in str(flat)
    inner = flat[keyword] if shape == "one" else flat[keyword][0 if shape == "list" else "p"]
    assert inner == {"type": "string"}


def test_resolve_ref_follows_json_pointers_and_refuses_what_it_cannot() -> None:
    root = {"$defs": {"a/b": {"type": "string"}, "c~d": [{"type": "integer"}]}}
    assert resolve_ref(root, "#/$defs/a~1b") == {"type": "string"}
    assert resolve_ref(root, "#/$defs/c~0d/0") == {"type": "integer"}
    assert resolve_ref(root, "#") is root
    with pytest.raises(ValueError, match="points at nothing"):
        resolve_ref(root, "#/$defs/c~0d/1")
    with pytest.raises(ValueError, match="not local"):
        resolve_ref(root, "https://x/s.json")
