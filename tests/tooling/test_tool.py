from __future__ import annotations

import pytest
from pydantic import ValidationError

from kosong.tooling import Tool


def test_tool_keeps_its_definition() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tool = Tool(name="get_weather", description="Weather of a city", parameters=schema)
    assert tool.model_dump() == {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": schema,
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "invalid_type"},
        {"type": "object", "properties": {"a": {"type": "strin"}}},
        {"type": "object", "required": "a"},
        {"type": "object", "properties": {"a": {"minimum": "zero"}}},
    ],
)
def test_invalid_json_schema_fails_when_the_tool_is_defined(schema: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="not a valid JSON Schema"):
        Tool(name="bad", description="d", parameters=schema)


@pytest.mark.parametrize(
    "name", ["", "has space", "1starts_with_digit", "x" * 65, "dot.ted", "中文", "add\n", "\nadd"]
)
def test_tool_name_that_models_reject_fails_at_definition(name: str) -> None:
    with pytest.raises(ValidationError, match="tool name"):
        Tool(name=name, description="d", parameters={"type": "object"})


@pytest.mark.parametrize("name", ["a", "_private", "get-weather", "x" * 64, "Add2"])
def test_usual_tool_names_are_accepted(name: str) -> None:
    assert Tool(name=name, description="d", parameters={"type": "object"}).name == name


def test_non_object_parameter_schemas_are_allowed() -> None:
    tool = Tool(
        name="sum", description="d", parameters={"type": "array", "items": {"type": "number"}}
    )
    assert tool.parameters["type"] == "array"
