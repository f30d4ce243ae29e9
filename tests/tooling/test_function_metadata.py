"""`@tool`'s metadata: every field a class-based tool declares, and the output schema a
structured return annotation gives."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError
from typing_extensions import TypedDict

from kosong.message import ContentPart, TextPart
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool


class Weather(BaseModel):
    temperature: float = Field(alias="temp")
    conditions: str


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Span(TypedDict):
    start: int
    end: int


class Pair(NamedTuple):
    key: str
    value: int


class Params(BaseModel):
    city: str


class ClassBased(CallableTool2[Params]):
    name: str = "forecast"
    description: str = "The forecast."
    params: type[Params] = Params
    title: str | None = "Forecast"
    read_only_hint: bool | None = True
    idempotent_hint: bool | None = True
    open_world_hint: bool | None = True
    version: str | None = "1.2.0"
    cacheable: bool | None = True
    cache_ttl: int | float | None = 60
    deprecated: bool | None = True
    sunset_date: str | None = "2030-01-01"
    replacement: str | None = "forecast_v2"
    migration_guide: str | None = "https://example.com/v2"
    output_schema: dict[str, Any] | None = {"type": "object"}

    async def __call__(self, params: Params) -> ToolReturnValue:
        return ToolOk(output="{}")


def test_tool_takes_every_metadata_field_a_class_based_tool_can_set():
    @tool(
        title="Forecast",
        read_only_hint=True,
        idempotent_hint=True,
        open_world_hint=True,
        version="1.2.0",
        cacheable=True,
        cache_ttl=60,
        deprecated=True,
        sunset_date="2030-01-01",
        replacement="forecast_v2",
        migration_guide="https://example.com/v2",
        output_schema={"type": "object"},
    )
    def forecast(city: str) -> str:
        """The forecast."""
        return "{}"

    assert forecast.base.model_dump() == ClassBased().base.model_dump()
    assert forecast.model_dump()["readOnlyHint"] is True  # MCP's spelling on the wire


def test_tool_checks_metadata_as_a_class_based_tool_does():
    def f(path: str) -> str:
        """Delete a file."""
        return path

    with pytest.raises(ValidationError, match="read-only and destructive"):
        tool(read_only_hint=True, destructive_hint=True)(f)
    with pytest.raises(ValidationError, match="version"):
        tool(version="one")(f)
    with pytest.raises(ValidationError, match="add cacheable=True"):
        tool(cache_ttl=10)(f)
    with pytest.raises(ValueError, match="not a parameter"):
        tool(cacheable=True, cache_key_params=["nope"])(f)
    with pytest.raises(ValidationError, match="output_schema"):
        tool(output_schema={"type": "no such type"})(f)
    with pytest.raises(TypeError, match="unknown tool option"):
        tool(readonly=True)(f)  # pyright: ignore[reportCallIssue]


async def test_a_strict_function_tool_rejects_arguments_it_does_not_declare():
    @tool(strict=True)
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.base.parameters["additionalProperties"] is False
    refused = await add.call({"a": 1, "b": 2, "c": 3})
    assert refused.is_error and "'c' was unexpected" in refused.message
    assert (await add.call({"a": 1, "b": 2})).output == "3"


STRUCTURED: list[tuple[Any, dict[str, Any]]] = [
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (Point, {"type": "object", "properties": {"x": {"type": "integer"},
                                              "y": {"type": "integer"}}, "required": ["x", "y"]}),
    (Span, {"type": "object", "properties": {"start": {"type": "integer"},
                                             "end": {"type": "integer"}},
            "required": ["start", "end"]}),
    (Weather, {"type": "object", "properties": {"temp": {"type": "number"},
                                                "conditions": {"type": "string"}},
               "required": ["temp", "conditions"]}),
    (Weather | None, {"anyOf": [{"type": "object", "properties": {"temp": {"type": "number"},
                                                                "conditions": {"type": "string"}},
                                 "required": ["temp", "conditions"]}, {"type": "null"}]}),
]  # fmt: skip


@pytest.mark.parametrize(("annotation", "schema"), STRUCTURED, ids=lambda v: repr(v)[:30])
def test_a_structured_return_annotation_gives_the_output_schema(
    annotation: Any, schema: dict[str, Any]
):
    def f() -> Any:
        """F."""

    f.__annotations__["return"] = annotation
    assert tool(f).output_schema == schema
    assert tool(f).base.output_schema == schema  # what toolsets, formats and servers read


@pytest.mark.parametrize(
    "annotation",
    [str, None, Any, ToolReturnValue, ToolOk, TextPart, list[ContentPart], str | int, object],
    ids=repr,
)
def test_text_content_parts_results_and_untyped_returns_declare_no_output_schema(
    annotation: Any,
):
    def f() -> Any:
        """F."""

    f.__annotations__["return"] = annotation
    assert tool(f).output_schema is None

    def untyped():  # no annotation at all
        """F."""

    assert tool(untyped).output_schema is None


def test_a_declared_output_schema_wins_and_none_declares_none():
    @tool(output_schema={"type": "integer", "minimum": 0})
    def size() -> int:
        """Size."""
        return 1

    @tool(output_schema=None)
    def plain() -> int:
        """Plain."""
        return 1

    assert size.output_schema == {"type": "integer", "minimum": 0}
    assert plain.output_schema is None and plain.base.output_schema is None


def test_a_content_and_artifact_tool_declares_no_output_schema():
    @tool(response_format="content_and_artifact")
    def search(q: str) -> tuple[str, list[int]]:
        """Search."""
        return "found", [1]

    assert search.output_schema is None


async def _output(annotation: Any, value: Any) -> Any:
    def f() -> Any:
        """F."""
        return value

    f.__annotations__["return"] = annotation
    made = tool(f)
    result = await made.call({})
    assert isinstance(result.output, str) and made.output_schema is not None
    return made.output_schema, json.loads(result.output)


@given(st.lists(st.integers()), st.dictionaries(st.text(), st.integers()))
async def test_what_a_structured_tool_returns_fits_its_output_schema(
    numbers: list[int], mapping: dict[str, int]
):
    for annotation, value in [
        (list[int], numbers),
        (dict[str, int], mapping),
        (Point, Point(len(numbers), len(mapping))),
        (Span, Span(start=0, end=len(numbers))),
        (Weather, Weather(temp=len(numbers) / 3, conditions="fair")),
        (Pair, Pair("n", len(numbers))),
        (int, len(numbers)),
    ]:
        schema, data = await _output(annotation, value)
        jsonschema_rs.validate(schema, data)
