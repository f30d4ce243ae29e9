from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue
from kosong.tooling.error import ToolValidateError
from kosong.utils.typing import JsonType


class SearchParams(BaseModel):
    """Search parameters."""

    query: str = Field(description="What to search for", min_length=1)
    max_results: int = Field(default=10, alias="max-results", ge=1, le=100)
    mode: Literal["web", "news"] = "web"


class Search(CallableTool2[SearchParams]):
    name: str = "search"
    description: str = "Search"
    params: type[SearchParams] = SearchParams

    async def __call__(self, params: SearchParams) -> ToolReturnValue:
        return ToolOk(output=f"{params.query}:{params.max_results}:{params.mode}")


def _titles(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = ["title"] if "title" in node and not isinstance(node.get("title"), dict) else []
        return found + [t for v in node.values() for t in _titles(v)]
    if isinstance(node, list):
        return [t for v in node for t in _titles(v)]
    return []


def test_schema_uses_aliases_and_keeps_defaults_and_constraints() -> None:
    schema = Search().base.parameters
    props = schema["properties"]
    assert set(props) == {"query", "max-results", "mode"}
    assert props["max-results"] == {"type": "integer", "default": 10, "minimum": 1, "maximum": 100}
    assert props["query"]["minLength"] == 1
    assert props["mode"] == {"type": "string", "enum": ["web", "news"], "default": "web"}
    assert schema["required"] == ["query"]
    assert _titles(schema) == []


def test_alias_is_what_the_model_sends() -> None:
    result = asyncio.run(Search().call({"query": "py", "max-results": 3}))
    assert result.output == "py:3:web"


class Location(BaseModel):
    latitude: float = Field(description="lat")
    longitude: float


class MapParams(BaseModel):
    center: Location = Field(description="map center")
    marks: list[Location] = []


class MapTool(CallableTool2[MapParams]):
    name: str = "map"
    description: str = "map"
    params: type[MapParams] = MapParams

    async def __call__(self, params: MapParams) -> ToolReturnValue:
        return ToolOk(output=str(params.center.latitude))


def test_nested_models_are_inlined_without_defs() -> None:
    schema = MapTool().base.parameters
    assert "$defs" not in schema
    assert "$ref" not in str(schema)
    center = schema["properties"]["center"]
    assert center["description"] == "map center"
    assert center["properties"]["latitude"] == {"type": "number", "description": "lat"}
    assert schema["properties"]["marks"]["items"]["required"] == ["latitude", "longitude"]


def test_nested_validation_error_names_the_path() -> None:
    result = asyncio.run(MapTool().call({"center": {"latitude": "north", "longitude": 1}}))
    assert isinstance(result, ToolValidateError)
    assert "center.latitude" in result.message


class Node(BaseModel):
    value: int
    children: list[Node] = []


class TreeParams(BaseModel):
    root: Node


class TreeTool(CallableTool2[TreeParams]):
    name: str = "tree"
    description: str = "sum a tree"
    params: type[TreeParams] = TreeParams

    async def __call__(self, params: TreeParams) -> ToolReturnValue:
        def total(node: Node) -> int:
            return node.value + sum(total(c) for c in node.children)

        return ToolOk(output=str(total(params.root)))


def test_recursive_params_keep_the_recursion_as_a_reference() -> None:
    schema = TreeTool().base.parameters
    assert schema["properties"]["root"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"
    }
    assert set(schema["$defs"]) == {"Node"}
    tree: JsonType = {"root": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}}
    assert asyncio.run(TreeTool().call(tree)).output == "6"


def test_class_attributes_without_annotations_are_fields() -> None:
    class Plain(CallableTool2[SearchParams]):
        name = "plain"
        description = "plain attrs"
        params = SearchParams

        async def __call__(self, params: SearchParams) -> ToolReturnValue:
            return ToolOk(output=params.query)

    tool = Plain()
    assert (tool.name, tool.base.name, tool.base.description) == ("plain", "plain", "plain attrs")


def test_constructor_arguments_override_class_attributes() -> None:
    tool = Search(name="web_search", description="Search the web")
    assert (tool.base.name, tool.base.description) == ("web_search", "Search the web")
    assert Search().base.name == "search"


def test_everything_can_come_from_the_constructor() -> None:
    class Generic(CallableTool2[SearchParams]):
        async def __call__(self, params: SearchParams) -> ToolReturnValue:
            return ToolOk(output=params.query)

    tool = Generic(name="g", description="d", params=SearchParams)
    assert tool.base.parameters["required"] == ["query"]


def test_bad_name_fails_when_the_tool_is_created() -> None:
    with pytest.raises(ValidationError, match="tool name"):
        Search(name="bad name")


def test_array_arguments_are_a_validation_error() -> None:
    result = asyncio.run(Search().call([1, 2]))
    assert isinstance(result, ToolValidateError)
    # What the model reads names no internal model, and shows the value as JSON.
    assert result.message == (
        "Error validating JSON arguments: the arguments must be a JSON object of the tool's "
        "parameters (got [1, 2])"
    )


def test_many_errors_are_reported_together_but_capped() -> None:
    class Many(BaseModel):
        a: int
        b: int
        c: int
        d: int
        e: int
        f: int
        g: int

    class ManyTool(CallableTool2[Many]):
        name: str = "many"
        description: str = "d"
        params: type[Many] = Many

        async def __call__(self, params: Many) -> ToolReturnValue:
            return ToolOk(output="")

    result = asyncio.run(ManyTool().call({}))
    assert result.message.count("Field required") == 5
    assert "and 2 more" in result.message


def test_schema_is_built_once_per_params_class() -> None:
    assert Search().base.parameters is Search(name="other").base.parameters
