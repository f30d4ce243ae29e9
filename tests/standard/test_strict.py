"""Strict schemas: OpenAI's published strict-mode rules, applied and checked."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from kosong.standard import (
    StrictSchemaError,
    check_strict_schema,
    from_strict_arguments,
    to_strict_arguments,
    to_strict_schema,
)
from kosong.tooling._schema import model_parameters_schema


def obj(
    properties: dict[str, Any], required: list[str] | None = None, **more: Any
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required is not None:
        schema["required"] = required
    return schema


# --- rule by rule --------------------------------------------------------------------------


def test_rule_every_object_sets_additional_properties_false() -> None:
    strict = to_strict_schema(obj({"p": obj({"x": {"type": "integer"}})}, ["p"]))
    assert strict["additionalProperties"] is False
    assert strict["properties"]["p"]["additionalProperties"] is False


def test_rule_every_property_is_required_and_optional_ones_accept_null() -> None:
    strict = to_strict_schema(obj({"a": {"type": "string"}, "b": {"type": "integer"}}, ["a"]))
    assert strict["required"] == ["a", "b"]
    assert strict["properties"]["a"] == {"type": "string"}
    assert strict["properties"]["b"] == {"type": ["integer", "null"]}


@pytest.mark.parametrize(
    ("optional", "nullable"),
    [
        (
            {"type": "string", "enum": ["c", "f"]},
            {"type": ["string", "null"], "enum": ["c", "f", None]},
        ),
        ({"type": ["string", "integer"]}, {"type": ["string", "integer", "null"]}),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        ),
        (
            {"const": "x", "description": "d"},
            {"description": "d", "anyOf": [{"const": "x"}, {"type": "null"}]},
        ),
        ({"type": ["string", "null"]}, {"type": ["string", "null"]}),
    ],
)
def test_optional_property_becomes_nullable_in_the_right_way(
    optional: dict[str, Any], nullable: dict[str, Any]
) -> None:
    assert to_strict_schema(obj({"p": optional}))["properties"]["p"] == nullable


def test_rule_root_must_be_an_object_and_not_any_of() -> None:
    with pytest.raises(StrictSchemaError, match="root of a strict schema must be an object"):
        to_strict_schema({"type": "array", "items": {"type": "string"}})
    with pytest.raises(StrictSchemaError, match="root"):
        to_strict_schema(
            {"anyOf": [obj({"a": {"type": "string"}}), obj({"b": {"type": "string"}})]}
        )


def test_a_tool_without_parameters_gets_an_empty_strict_object() -> None:
    expected = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    assert to_strict_schema({"type": "object"}) == expected
    assert to_strict_schema({}) == expected


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("allOf", [{"type": "string"}, {"minLength": 1}]),
        ("not", {"type": "string"}),
        ("if", {"type": "string"}),
        ("dependentRequired", {"a": ["b"]}),
        ("dependentSchemas", {"a": {}}),
        ("patternProperties", {"^x": {"type": "string"}}),
        ("propertyNames", {"maxLength": 3}),
        ("unevaluatedProperties", False),
        ("prefixItems", [{"type": "string"}]),
    ],
)
def test_unsupported_structure_is_refused_with_its_path(keyword: str, value: Any) -> None:
    schema = obj(
        {"field": {"type": "object", "properties": {"a": {"type": "string"}}, keyword: value}}
    )
    with pytest.raises(StrictSchemaError) as info:
        to_strict_schema(schema)
    assert info.value.path == f"parameters.properties.field.{keyword}"


def test_objects_with_free_form_keys_are_refused_with_their_path() -> None:
    with pytest.raises(StrictSchemaError) as info:
        to_strict_schema(
            obj({"tags": {"type": "object", "additionalProperties": {"type": "string"}}})
        )
    assert info.value.path == "parameters.properties.tags.additionalProperties"
    with pytest.raises(StrictSchemaError, match="free-form object") as info:
        to_strict_schema(obj({"meta": {"type": "object"}}))
    assert info.value.path == "parameters.properties.meta"


def test_schema_without_a_type_is_refused() -> None:
    with pytest.raises(StrictSchemaError, match="needs a `type`") as info:
        to_strict_schema(obj({"anything": {}}))
    assert info.value.path == "parameters.properties.anything"


def test_array_without_items_is_refused() -> None:
    with pytest.raises(StrictSchemaError, match="items"):
        to_strict_schema(obj({"xs": {"type": "array"}}))


def test_one_of_becomes_any_of_and_single_all_of_is_merged() -> None:
    strict = to_strict_schema(
        obj(
            {
                "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "w": {"allOf": [{"type": "string"}], "description": "merged"},
            },
            ["v", "w"],
        )
    )
    assert strict["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert strict["properties"]["w"] == {"type": "string", "description": "merged"}


def test_supported_constraints_are_kept() -> None:
    kept = {"type": "string", "pattern": "^[a-z]+$", "format": "date-time"}
    number = {
        "type": "number",
        "minimum": 0,
        "maximum": 10,
        "exclusiveMinimum": -1,
        "exclusiveMaximum": 11,
        "multipleOf": 0.5,
    }
    array = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
    strict = to_strict_schema(obj({"s": kept, "n": number, "a": array}, ["s", "n", "a"]))
    assert strict["properties"] == {"s": kept, "n": number, "a": array}


def test_unsupported_constraints_move_into_the_description() -> None:
    strict = to_strict_schema(
        obj(
            {
                "name": {
                    "type": "string",
                    "description": "Your name",
                    "minLength": 2,
                    "maxLength": 10,
                    "default": "anon",
                    "format": "uri",
                    "examples": ["bob"],
                }
            },
            ["name"],
        )
    )
    name = strict["properties"]["name"]
    assert set(name) == {"type", "description"}
    for text in (
        "minLength: 2",
        "maxLength: 10",
        'default: "anon"',
        'format: "uri"',
        'examples: ["bob"]',
    ):
        assert text in name["description"]
    assert name["description"].startswith("Your name (")


def test_titles_and_schema_annotations_are_dropped() -> None:
    strict = to_strict_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            **obj({"a": {"type": "string", "title": "A"}}, ["a"]),
        }
    )
    assert strict == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_local_refs_are_inlined_and_recursive_ones_kept_with_their_defs() -> None:
    class Node(BaseModel):
        value: int
        children: list[Node] = Field(default_factory=list["Node"])

    class Args(BaseModel):
        root: Node
        label: str | None = None

    raw = Args.model_json_schema()
    strict = to_strict_schema(raw)
    assert check_strict_schema(strict) == []
    assert "$defs" in strict
    node = strict["$defs"]["Node"]
    assert node["additionalProperties"] is False
    assert node["required"] == ["value", "children"]
    assert node["properties"]["children"]["type"] == ["array", "null"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


OPENAI_NESTING, OPENAI_PROPERTIES, OPENAI_ENUM_VALUES = 10, 5000, 1000


def test_openais_documented_limits_are_the_defaults() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(OPENAI_NESTING):
        deep = obj({"x": deep}, ["x"])
    to_strict_schema(deep)  # exactly at the limit
    with pytest.raises(StrictSchemaError, match="nest deeper"):
        to_strict_schema(obj({"x": deep}, ["x"]))
    many = obj({f"p{i}": {"type": "integer"} for i in range(OPENAI_PROPERTIES + 1)})
    with pytest.raises(StrictSchemaError, match="properties; strict mode allows"):
        to_strict_schema(many)
    enums = obj({"e": {"type": "integer", "enum": list(range(OPENAI_ENUM_VALUES + 1))}}, ["e"])
    with pytest.raises(StrictSchemaError, match="enum values"):
        to_strict_schema(enums)
    big_enum = obj(
        {"e": {"type": "string", "enum": [f"value-{i:04d}-" + "x" * 50 for i in range(300)]}}, ["e"]
    )
    with pytest.raises(StrictSchemaError, match="more than 250"):
        to_strict_schema(big_enum)
    long_names = obj({"n" * 1000 + str(i): {"type": "integer"} for i in range(121)})
    with pytest.raises(StrictSchemaError, match="characters"):
        to_strict_schema(long_names)


def test_limits_are_arguments_for_other_providers() -> None:
    deep = obj({"x": obj({"x": obj({"x": {"type": "string"}}, ["x"])}, ["x"])}, ["x"])
    to_strict_schema(deep)
    with pytest.raises(StrictSchemaError, match="nest deeper than 2 levels"):
        to_strict_schema(deep, max_nesting=2)
    assert check_strict_schema(to_strict_schema(deep), max_nesting=2)
    three = obj({f"p{i}": {"type": "integer"} for i in range(3)})
    with pytest.raises(StrictSchemaError, match="3 properties; strict mode allows 2"):
        to_strict_schema(three, max_properties=2)
    enum = obj({"e": {"type": "integer", "enum": [1, 2, 3]}}, ["e"])
    with pytest.raises(StrictSchemaError, match="3 enum values; strict mode allows 2"):
        to_strict_schema(enum, max_enum_values=2)
    with pytest.raises(StrictSchemaError, match=r"allows 3$"):
        to_strict_schema(three, max_string_length=3)
    strings = obj({"e": {"type": "string", "enum": ["aaaa", "bbbb", "cccc"]}}, ["e"])
    with pytest.raises(StrictSchemaError, match="more than 2 values may hold at most 5"):
        to_strict_schema(strings, large_enum=2, large_enum_length=5)


def test_the_input_schema_is_not_modified() -> None:
    schema = obj({"a": {"type": "string"}, "b": {"type": "integer", "default": 1}}, ["a"])
    copy = {**schema, "properties": {k: dict(v) for k, v in schema["properties"].items()}}
    to_strict_schema(schema)
    assert schema == copy


def test_check_lists_each_broken_rule() -> None:
    problems = check_strict_schema(
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}, "b": {}}}
    )
    assert "parameters: additionalProperties must be false" in problems
    assert any("every property must be required" in p for p in problems)
    assert (
        "parameters.properties.a.minLength: `minLength` is not supported in strict mode" in problems
    )
    assert "parameters.properties.b: no type" in problems


def test_openai_documented_example_is_already_strict() -> None:
    # The query example of OpenAI's function-calling guide, as published.
    example = obj(
        {
            "table_name": {"type": "string", "enum": ["orders"]},
            "columns": {"type": "array", "items": {"type": "string", "enum": ["id", "status"]}},
            "conditions": {
                "type": "array",
                "items": obj(
                    {
                        "column": {"type": "string"},
                        "operator": {"type": "string", "enum": ["=", ">", "<", ">=", "<=", "!="]},
                        "value": {
                            "anyOf": [
                                {"type": "string"},
                                {"type": "number"},
                                obj(
                                    {"column_name": {"type": "string"}},
                                    ["column_name"],
                                    additionalProperties=False,
                                ),
                            ]
                        },
                    },
                    ["column", "operator", "value"],
                    additionalProperties=False,
                ),
            },
            "order_by": {"type": "string", "enum": ["asc", "desc"]},
        },
        ["table_name", "columns", "conditions", "order_by"],
        additionalProperties=False,
    )
    assert check_strict_schema(example) == []
    assert to_strict_schema(example) == example


def test_pydantic_model_schema_converts_and_arguments_map_back() -> None:
    class Args(BaseModel):
        city: str
        unit: str = "celsius"
        days: int | None = None

    original = model_parameters_schema(Args)
    strict = to_strict_schema(original)
    assert check_strict_schema(strict) == []
    sent = {"city": "Paris", "unit": None, "days": None}  # what a strict model writes
    assert jsonschema_rs.validator_for(strict).is_valid(sent)
    back = from_strict_arguments(sent, original)
    assert back == {"city": "Paris", "days": None}  # days is nullable in the original: kept
    assert Args.model_validate(back) == Args(city="Paris")


# --- property-based: any schema of the supported subset -------------------------------------

NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


@st.composite
def schema_and_value(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], Any]:
    """A schema of the strict-expressible subset, with a value it accepts."""
    kinds = ["string", "integer", "number", "boolean", "enum"]
    if depth < 3:
        kinds += ["object", "array", "anyof"]
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        return {"type": "string"}, draw(st.text(max_size=5))
    if kind == "integer":
        low = draw(st.integers(-5, 5))
        return {"type": "integer", "minimum": low}, draw(st.integers(low, low + 10))
    if kind == "number":
        return {"type": "number"}, draw(st.floats(-1e6, 1e6, allow_nan=False))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    if kind == "enum":
        values = draw(st.lists(st.text(max_size=3), min_size=1, max_size=4, unique=True))
        return {"type": "string", "enum": values}, draw(st.sampled_from(values))
    if kind == "array":
        item_schema, item = draw(schema_and_value(depth + 1))
        return {"type": "array", "items": item_schema}, [item]
    if kind == "anyof":
        first, value = draw(schema_and_value(depth + 1))
        return {"anyOf": [first, {"type": "boolean"}]}, value
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    properties: dict[str, Any] = {}
    value: dict[str, Any] = {}
    required: list[str] = []
    for name in names:
        child, child_value = draw(schema_and_value(depth + 1))
        if draw(st.booleans()):
            child = {**child, "description": draw(st.text(max_size=8))}
        properties[name] = child
        if draw(st.booleans()):
            required.append(name)
            value[name] = child_value
        elif draw(st.booleans()):
            value[name] = child_value
    return obj(properties, required), value


@st.composite
def root_schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.lists(NAMES, min_size=0, max_size=5, unique=True))
    properties: dict[str, Any] = {}
    value: dict[str, Any] = {}
    required: list[str] = []
    for name in names:
        child, child_value = draw(schema_and_value(depth=1))
        properties[name] = child
        if draw(st.booleans()):
            required.append(name)
            value[name] = child_value
        elif draw(st.booleans()):
            value[name] = child_value
    return obj(properties, required), value


@settings(max_examples=150)
@given(root_schema_and_value())
def test_any_expressible_schema_becomes_one_that_follows_every_rule(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, value = pair
    strict = to_strict_schema(schema)
    assert check_strict_schema(strict) == []
    jsonschema_rs.meta.validate(strict)
    # What the original accepts, written the strict way, the strict schema accepts...
    assert jsonschema_rs.validator_for(schema).is_valid(value)
    written = to_strict_arguments(value, schema)
    assert jsonschema_rs.validator_for(strict).is_valid(written)
    # ...and mapping the model's answer back gives the original arguments exactly.
    assert from_strict_arguments(written, schema) == value


@settings(max_examples=100)
@given(
    root_schema_and_value(),
    st.sampled_from(["not", "patternProperties", "if", "dependentRequired"]),
)
def test_an_unsupported_keyword_anywhere_is_refused_with_a_path_into_the_schema(
    pair: tuple[dict[str, Any], dict[str, Any]], keyword: str
) -> None:
    schema, _ = pair
    values = {
        "not": {"type": "null"},
        "patternProperties": {"^x": {"type": "string"}},
        "if": {"type": "object"},
        "dependentRequired": {},
    }
    poisoned = {
        **schema,
        "properties": {
            **schema["properties"],
            "bad": obj({"z": {"type": "string"}}, **{keyword: values[keyword]}),
        },
    }
    with pytest.raises(StrictSchemaError) as info:
        to_strict_schema(poisoned)
    assert info.value.path == f"parameters.properties.bad.{keyword}"
