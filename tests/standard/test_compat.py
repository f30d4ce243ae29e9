"""The backward-compatibility checker between two versions of a tool definition."""

from __future__ import annotations

from typing import Any

import pytest

from kosong.standard import check_compatibility
from kosong.tooling import Tool


def weather(
    properties: dict[str, Any], required: list[str] | None = None, **fields: Any
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        parameters["required"] = required
    return {"name": "get_weather", "description": "d", "parameters": parameters, **fields}


V1 = weather({"location": {"type": "string"}}, ["location"], version="1.0.0")


def kinds(old: Any, new: Any) -> list[tuple[str, bool]]:
    return [(c.kind, c.breaking) for c in check_compatibility(old, new).changes]


def test_the_standards_compatible_example() -> None:
    v2 = weather(
        {"location": {"type": "string"}, "unit": {"type": "string", "default": "celsius"}},
        ["location"],
        version="1.1.0",
    )
    report = check_compatibility(V1, v2)
    assert report.compatible
    assert kinds(V1, v2) == [("parameter_added_optional", False)]
    assert report.required_bump == "minor" and report.version_bump_ok is True


def test_the_standards_incompatible_example_is_a_rename() -> None:
    v2 = weather({"city": {"type": "string"}}, ["city"], version="2.0.0")
    report = check_compatibility(V1, v2)
    assert not report.compatible
    assert kinds(V1, v2) == [("parameter_renamed", True)]
    assert report.changes[0].path == "parameters.properties.location"
    assert "renamed to `city`" in report.changes[0].message
    assert report.required_bump == "major" and report.version_bump_ok is True


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (weather({}, []), [("parameter_removed", True)]),
        (weather({"location": {"type": "integer"}}, ["location"]), [("type_changed", True)]),
        (
            weather(
                {"location": {"type": "string"}, "country": {"type": "string"}},
                ["location", "country"],
            ),
            [("parameter_added_required", True)],
        ),
        (
            weather({"location": {"type": ["string", "null"]}}, ["location"]),
            [("type_widened", False)],
        ),
        (weather({"location": {"type": "string"}}, []), [("became_optional", False)]),
        (
            weather({"location": {"type": "string", "maxLength": 10}}, ["location"]),
            [("constraint_tightened", True)],
        ),
        (
            weather({"location": {"type": "string", "pattern": "^[A-Z]"}}, ["location"]),
            [("constraint_tightened", True)],
        ),
        (
            weather({"location": {"type": "string", "enum": ["Paris"]}}, ["location"]),
            [("enum_narrowed", True)],
        ),
        (
            {**weather({"location": {"type": "string"}}, ["location"]), "name": "weather"},
            [("tool_renamed", True)],
        ),
    ],
)
def test_each_kind_of_change_is_classified(
    new: dict[str, Any], expected: list[tuple[str, bool]]
) -> None:
    assert kinds(V1, new) == expected


def test_changes_inside_nested_objects_and_arrays_are_found() -> None:
    old = weather(
        {
            "filters": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "value": {"type": "number"}},
                    "required": ["field"],
                },
            }
        }
    )
    new = weather(
        {
            "filters": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "value": {"type": "integer"}},
                    "required": ["field", "value"],
                },
            }
        }
    )
    report = check_compatibility(old, new)
    assert [(c.kind, c.path) for c in report.changes] == [
        ("became_required", "parameters.properties.filters.items.properties.value"),
        ("type_changed", "parameters.properties.filters.items.properties.value"),
    ]


def test_integer_to_number_widens_and_enum_growth_is_compatible() -> None:
    old = weather({"n": {"type": "integer", "enum": [1, 2]}}, ["n"])
    new = weather({"n": {"type": "number", "enum": [1, 2, 3]}}, ["n"])
    assert kinds(old, new) == [("type_widened", False), ("enum_widened", False)]


def test_relaxed_constraints_and_opened_objects_are_compatible() -> None:
    old = weather(
        {"q": {"type": "string", "minLength": 3, "maxLength": 5}},
        ["q"],
    )
    old["parameters"]["additionalProperties"] = False
    new = weather({"q": {"type": "string", "minLength": 1}}, ["q"])
    assert check_compatibility(old, new).compatible
    assert check_compatibility(new, old).compatible is False  # and back: tightened and closed


def test_a_new_required_parameter_with_a_default_is_still_breaking() -> None:
    new = weather(
        {"location": {"type": "string"}, "unit": {"type": "string", "default": "c"}},
        ["location", "unit"],
    )
    (change,) = check_compatibility(V1, new).changes
    assert change.breaking and "default does not help" in change.message


def test_descriptions_do_not_matter() -> None:
    new = weather({"location": {"type": "string", "description": "The city"}}, ["location"])
    assert check_compatibility(V1, new).changes == []
    assert check_compatibility(V1, new).required_bump == "patch"


def test_version_bumps_are_checked_against_the_changes() -> None:
    breaking = weather({}, [], version="1.1.0")
    assert check_compatibility(V1, breaking).version_bump_ok is False
    assert check_compatibility(V1, {**breaking, "version": "2.0.0"}).version_bump_ok is True
    assert check_compatibility(V1, {**V1, "version": "0.9.0"}).version_bump_ok is False
    assert check_compatibility(V1, {**V1, "version": None}).version_bump_ok is None


def test_tools_and_mcp_definitions_are_accepted_and_the_report_reads_well() -> None:
    old = Tool.model_validate(V1)
    new = {
        "name": "get_weather",
        "inputSchema": {"type": "object", "properties": {}},
        "version": "1.0.1",
    }
    report = check_compatibility(old, new)
    text = str(report)
    assert text.startswith("get_weather 1.0.0 -> 1.0.1: INCOMPATIBLE (needs a major bump)")
    assert "BREAKING: parameters.properties.location: parameter removed" in text
    assert "the declared versions do not make the required bump" in text
    assert report.breaking == report.changes


def test_refs_are_inlined_before_comparing() -> None:
    old = weather({"where": {"$ref": "#/$defs/Place"}}, ["where"])
    old["parameters"]["$defs"] = {
        "Place": {"type": "object", "properties": {"city": {"type": "string"}}}
    }
    new = weather(
        {"where": {"type": "object", "properties": {"city": {"type": "string"}}}}, ["where"]
    )
    assert check_compatibility(old, new).changes == []
