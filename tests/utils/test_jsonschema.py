from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.utils.jsonschema import check_offline, deref_json_schema


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
