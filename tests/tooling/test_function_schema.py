"""The schema a FunctionTool reads from a signature: types, defaults, descriptions, structs."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import io
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Annotated, Any, Literal, NamedTuple, Optional, Union

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from kosong.tooling import FunctionTool, Injected, tool
from kosong.tooling._schema import model_parameters_schema


def _walk(node: Any) -> list[str]:
    """Every key of every dict in a JSON value, depth first."""
    if isinstance(node, dict):
        return [k for k, v in node.items() for k in [k, *_walk(v)]]
    if isinstance(node, list):
        return [k for v in node for k in _walk(v)]
    return []


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(description="Street and number")
    city: str


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Window(TypedDict):
    start: datetime.date
    end: datetime.date


async def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    nothing: None,
    tags: list[str],
    pair: tuple[int, str],
    unique: set[int],
    scores: dict[str, float],
    mode: Literal["fast", "slow"],
    color: Color,
    maybe: Optional[int],  # noqa: UP045 - the Optional spelling is part of what is tested
    either: Union[int, str],  # noqa: UP007
    when: datetime.datetime,
    day: datetime.date,
    ident: uuid.UUID,
    amount: decimal.Decimal,
    address: Address,
    point: Point,
    window: Window,
    limit: int = 10,
) -> str:
    """Take one of everything."""
    return "ok"


def test_every_listed_type_gets_its_json_schema() -> None:
    props = FunctionTool.from_function(everything).args
    assert props["text"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean"}
    assert props["nothing"] == {"type": "null"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["unique"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["maybe"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["ident"] == {"type": "string", "format": "uuid"}
    assert props["amount"]["anyOf"][0] == {"type": "number"}
    assert props["address"]["properties"]["street"]["description"] == "Street and number"
    assert props["address"]["required"] == ["street", "city"]
    assert props["point"]["properties"]["y"] == {"type": "number", "default": 0.0}
    assert props["window"]["required"] == ["start", "end"]
    assert props["limit"] == {"type": "integer", "default": 10}


def test_schema_is_flat_without_titles_or_defs() -> None:
    schema = FunctionTool.from_function(everything).base.parameters
    keys = _walk(schema)
    assert "title" not in keys and "$defs" not in keys and "$ref" not in keys
    assert schema["type"] == "object"
    jsonschema_rs.meta.validate(schema)


def test_parameters_with_defaults_are_optional_and_show_the_default() -> None:
    @tool
    def search(query: str, limit: int = 5, mode: Color = Color.BLUE, tag: str | None = None) -> str:
        """Search."""
        return query

    schema = search.base.parameters
    assert schema["required"] == ["query"]
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["mode"]["default"] == "blue"  # the JSON value, not the member
    assert schema["properties"]["tag"]["default"] is None


def test_a_default_json_cannot_hold_leaves_the_parameter_optional_without_default() -> None:
    sentinel = object()

    @tool
    def f(a: Any = sentinel) -> str:
        """F."""
        return "x"

    assert f.base.parameters["properties"]["a"] == {}
    assert "required" not in f.base.parameters


def test_no_parameters_give_an_empty_object_schema() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.base.parameters == {"type": "object", "properties": {}}


def test_annotated_string_and_field_describe_and_constrain() -> None:
    @tool
    def f(
        a: Annotated[int, "scale factor"],
        b: Annotated[int, Field(description="at least one", ge=1)],
        c: Annotated[str, Field(max_length=3)] = "abc",
    ) -> str:
        """F."""
        return ""

    props = f.args
    assert props["a"] == {"type": "integer", "description": "scale factor"}
    assert props["b"] == {"type": "integer", "description": "at least one", "minimum": 1}
    assert props["c"] == {"type": "string", "maxLength": 3, "default": "abc"}


async def test_constraints_from_annotated_field_are_enforced() -> None:
    @tool
    def f(b: Annotated[int, Field(ge=1)]) -> str:
        """F."""
        return str(b)

    bad = await f.call({"b": 0})
    assert bad.is_error and "b: Input should be greater than or equal to 1" in bad.message
    assert (await f.call({"b": 1})).output == "1"


def test_unannotated_parameter_accepts_any_json() -> None:
    @tool
    def echo(value) -> str:
        """Echo."""
        return str(value)

    assert echo.args == {"value": {}}


@pytest.mark.parametrize("name", ["json", "copy", "schema", "model_name", "_private", "validate"])
async def test_parameter_names_that_clash_with_pydantic_still_work(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def f({name}: int) -> int:\n    '''F.'''\n    return {name} * 2", namespace)
    f = FunctionTool.from_function(namespace["f"])
    assert f.args == {name: {"type": "integer"}}
    assert (await f.call({name: 21})).output == "42"
    assert f.invoke({name: 1}) == 2


# --- argument structs ---------------------------------------------------------------------------


class WeatherArgs(BaseModel):
    location: str = Field(description="City name to get weather for")
    unit: str = Field(default="celsius", description="Temperature unit")


async def test_a_lone_model_parameter_is_the_argument_struct() -> None:
    @tool
    def get_weather(args: WeatherArgs) -> str:
        """Get current weather for a location."""
        assert isinstance(args, WeatherArgs)
        return f"{args.location}: 22 {args.unit}"

    assert get_weather.params is WeatherArgs
    assert get_weather.base.parameters == model_parameters_schema(WeatherArgs)
    assert get_weather.base.parameters["required"] == ["location"]
    assert (await get_weather.call({"location": "Paris"})).output == "Paris: 22 celsius"


async def test_dataclass_and_typeddict_structs_are_received_as_instances() -> None:
    @tool
    def move(p: Point) -> str:
        """Move."""
        assert isinstance(p, Point)
        return f"{p.x},{p.y}"

    @tool
    def span(w: Window) -> str:
        """Span."""
        return str((w["end"] - w["start"]).days)

    assert move.base.parameters["properties"] == {
        "x": {"type": "number"},
        "y": {"type": "number", "default": 0.0},
    }
    assert (await move.call({"x": 1.5})).output == "1.5,0.0"
    assert (await span.call({"start": "2024-01-01", "end": "2024-01-31"})).output == "30"
    bad = await move.call({"x": "east"})
    assert bad.is_error
    assert bad.message.endswith(
        'x: Input should be a valid number, unable to parse string as a number (got "east")'
    )


class _ModelSpot(BaseModel):
    lat: float
    lon: float


class ModelPlace(BaseModel):
    city: str
    spot: _ModelSpot


@dataclasses.dataclass
class _DataSpot:
    lat: float
    lon: float


@dataclasses.dataclass
class DataPlace:
    city: str
    spot: _DataSpot


class _DictSpot(TypedDict):
    lat: float
    lon: float


class DictPlace(TypedDict):
    city: str
    spot: _DictSpot


class TuplePlace(NamedTuple):
    city: str
    spot: _ModelSpot


@pytest.mark.parametrize("struct", [ModelPlace, DataPlace, DictPlace, TuplePlace])
async def test_argument_structs_of_every_kind_give_a_flat_schema(struct: type[Any]) -> None:
    def locate(place: Any) -> str:
        """Locate a place."""
        assert isinstance(place, struct if struct is not DictPlace else dict)
        spot = place["spot"] if isinstance(place, dict) else place.spot
        lat = spot["lat"] if isinstance(spot, dict) else spot.lat
        city = place["city"] if isinstance(place, dict) else place.city
        return f"{city} {lat}"

    locate.__annotations__["place"] = struct
    made = tool(locate)
    assert made.base.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "spot": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
            },
        },
        "required": ["city", "spot"],
    }
    result = await made.call({"city": "Oslo", "spot": {"lat": 59.9, "lon": 10.7}})
    assert result.output == "Oslo 59.9"


class _Tree(BaseModel):
    name: str
    children: list[_Tree] = []


def test_a_recursive_struct_keeps_defs_only_for_the_cycle() -> None:
    @tool
    def walk(tree: _Tree) -> str:
        """Walk a tree."""
        return tree.name

    parameters = walk.base.parameters
    assert parameters["properties"]["name"] == {"type": "string"}
    assert parameters["properties"]["children"]["items"] == {"$ref": "#/$defs/_Tree"}
    assert list(parameters["$defs"]) == ["_Tree"]


async def test_struct_with_an_injected_parameter_is_still_a_struct() -> None:
    @tool
    def get_weather(args: WeatherArgs, units_table: Injected[dict[str, str]]) -> str:
        """Weather."""
        return units_table[args.unit]

    assert set(get_weather.args) == {"location", "unit"}
    bound = get_weather.inject(units_table={"celsius": "C"})
    assert (await bound.call({"location": "Oslo"})).output == "C"


# --- args_schema and schema= ------------------------------------------------------------------


class CalculatorInput(BaseModel):
    a: int = Field(description="first number")
    b: int = Field(description="second number")


async def test_args_schema_replaces_the_signature_and_fields_are_keyword_arguments() -> None:
    @tool(args_schema=CalculatorInput)
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    assert multiply.params is CalculatorInput
    assert multiply.args["a"] == {"type": "integer", "description": "first number"}
    assert (await multiply.call({"a": 6, "b": 7})).output == "42"


def test_args_schema_that_does_not_fit_the_function_is_a_type_error() -> None:
    def needs_c(a: int, c: int) -> int:
        """X."""
        return a

    with pytest.raises(TypeError, match="requires 'c', which `args_schema` CalculatorInput"):
        FunctionTool.from_function(needs_c, args_schema=CalculatorInput)

    def only_a(a: int) -> int:
        """X."""
        return a

    with pytest.raises(TypeError, match=r"has field\(s\) 'b', which .* does not take"):
        FunctionTool.from_function(only_a, args_schema=CalculatorInput)


SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Search query"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["query"],
}


async def test_explicit_schema_is_used_as_is_and_validated_with_jsonschema() -> None:
    @tool(schema=SEARCH_SCHEMA)
    def search(query: str, limit: int = 10) -> str:
        """Search the web."""
        return f"{query}:{limit}"

    assert search.base.parameters == SEARCH_SCHEMA
    assert (await search.call({"query": "kosong"})).output == "kosong:10"
    bad = await search.call({"query": "x", "limit": 1000})
    assert bad.is_error and "limit: 1000 is greater than the maximum of 100" in bad.message
    extra = await search.call({"query": "x", "page": 2})
    assert extra.is_error and "unexpected argument(s) 'page'" in extra.message


async def test_explicit_schema_with_kwargs_passes_every_property() -> None:
    @tool(schema=SEARCH_SCHEMA)
    def search(**kwargs: Any) -> str:
        """Search."""
        return ",".join(sorted(kwargs))

    assert (await search.call({"query": "q", "limit": 3})).output == "limit,query"


def test_explicit_schema_must_be_valid_and_an_object_and_cover_required_parameters() -> None:
    def f(query: str) -> str:
        """F."""
        return query

    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        FunctionTool.from_function(f, schema={"type": "object", "properties": {"q": {"type": 3}}})
    with pytest.raises(ValueError, match="must describe an object"):
        FunctionTool.from_function(f, schema={"type": "array"})
    with pytest.raises(TypeError, match="requires 'query', which the `schema` does not define"):
        FunctionTool.from_function(f, schema={"type": "object", "properties": {}})
    with pytest.raises(ValueError, match="not both"):
        FunctionTool.from_function(f, schema=SEARCH_SCHEMA, args_schema=CalculatorInput)


# --- refused at creation ----------------------------------------------------------------------


class Opaque:
    """An arbitrary class JSON Schema knows nothing about."""


@pytest.mark.parametrize(
    ("annotation", "words"),
    [
        (Callable[[int], int], "a callable, a stream or a file handle"),
        (Generator[int, None, None], "a callable, a stream or a file handle"),
        (Iterator[int], "a callable, a stream or a file handle"),
        (io.TextIOWrapper, "a callable, a stream or a file handle"),
        (Opaque, "which JSON Schema cannot describe"),
        (list[Opaque], "which JSON Schema cannot describe"),
        (dict[str, Callable[[], None]], "a callable, a stream or a file handle"),
    ],
)
def test_types_json_schema_cannot_describe_are_a_type_error_naming_the_parameter(
    annotation: Any, words: str
) -> None:
    def f(ok: int, bad: Any) -> str:
        """F."""
        return ""

    f.__annotations__["bad"] = annotation
    with pytest.raises(TypeError, match=f"parameter `bad` of tool `f`.*{words}"):
        FunctionTool.from_function(f)


def test_var_positional_is_refused_and_var_keyword_needs_an_explicit_schema() -> None:
    def star(*items: int) -> str:
        """Star."""
        return ""

    def kw(a: int, **options: Any) -> str:
        """Kw."""
        return ""

    with pytest.raises(TypeError, match=r"takes \*items, but a model sends arguments by name"):
        FunctionTool.from_function(star)
    with pytest.raises(TypeError, match=r"takes \*\*kwargs.*pass `schema=` or `args_schema=`"):
        FunctionTool.from_function(kw)


def test_a_field_as_default_is_refused_with_the_fix() -> None:
    def f(a: int = Field(default=1)) -> str:
        """F."""
        return ""

    with pytest.raises(TypeError, match=r"put the Field in the annotation"):
        FunctionTool.from_function(f)


def test_unresolvable_annotation_is_a_type_error() -> None:
    def f(a: NotDefinedAnywhere) -> str:  # type: ignore[name-defined] # noqa: F821
        """F."""
        return ""

    with pytest.raises(TypeError, match="cannot be resolved"):
        FunctionTool.from_function(f)


# --- generated schemas agree with pydantic's, and validation with the schema -------------------

_SCALARS: list[Any] = [int, str, float, bool, datetime.date, uuid.UUID, Color, Literal["a", "b"]]


def _types(depth: int) -> st.SearchStrategy[Any]:
    base = st.sampled_from([*_SCALARS, Address, Point, Window])
    if depth == 0:
        return base
    inner = _types(depth - 1)
    return st.one_of(
        base,
        inner.map(lambda t: list[t]),
        inner.map(lambda t: dict[str, t]),
        inner.map(lambda t: Optional[t]),  # noqa: UP045
        inner.map(lambda t: Annotated[t, "described"]),
        st.tuples(inner, inner).map(lambda ab: Union[ab[0], ab[1]]),  # noqa: UP007
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_types(2), min_size=1, max_size=4), st.data())
def test_generated_schema_equals_pydantics_schema_of_the_params_model(
    annotations: list[Any], data: st.DataObject
) -> None:
    parameters = [f"p{i}" for i in range(len(annotations))]
    optional = data.draw(st.sets(st.sampled_from(parameters)))
    source = ", ".join(f"{p}=None" if p in optional else p for p in parameters)
    namespace: dict[str, Any] = {}
    # Keyword-only, so required and optional parameters can come in any order.
    exec(f"def f(*, {source}):\n    '''F.'''\n    return ''", namespace)
    func = namespace["f"]
    func.__annotations__ = {p: (Optional[t] if p in optional else t)  # noqa: UP045
                            for p, t in zip(parameters, annotations, strict=True)}  # fmt: skip
    made = FunctionTool.from_function(func)
    assert made.base.parameters == model_parameters_schema(made.params)
    jsonschema_rs.meta.validate(made.base.parameters)


@settings(max_examples=100, deadline=None)
@given(
    st.fixed_dictionaries(
        {"count": st.integers(), "ratio": st.floats(allow_nan=False, allow_infinity=False)},
        optional={
            "tags": st.lists(st.text(max_size=5), max_size=3),
            "mode": st.sampled_from(["fast", "slow"]),
        },
    )
)
async def test_arguments_that_fit_the_schema_are_accepted_by_the_tool(args: dict[str, Any]) -> None:
    @tool
    async def f(
        count: int,
        ratio: float,
        tags: list[str] | None = None,
        mode: Literal["fast", "slow"] = "fast",
    ) -> dict[str, Any]:
        """F."""
        return {"count": count, "ratio": ratio, "tags": tags, "mode": mode}

    assert jsonschema_rs.validator_for(f.base.parameters).is_valid(args)
    result = await f.call(args)
    assert not result.is_error, result.message


def test_a_return_annotation_that_cannot_be_resolved_does_not_matter() -> None:
    # This module has `from __future__ import annotations`: "LocalResult" stays a string.
    class LocalResult(BaseModel):
        value: int

    def compute(a: int) -> LocalResult:
        """Compute."""
        return LocalResult(value=a)

    assert FunctionTool.from_function(compute).args == {"a": {"type": "integer"}}


def test_union_members_keep_their_written_order_across_tools() -> None:
    # Union[int, str] == Union[str, int] for typing; the schemas must still differ.
    @tool
    def first(x: Union[int, str]) -> str:  # noqa: UP007
        """First."""
        return ""

    @tool
    def second(x: Union[str, int]) -> str:  # noqa: UP007
        """Second."""
        return ""

    assert first.args["x"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert second.args["x"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]


async def test_args_schema_fields_the_function_does_not_name_go_to_its_kwargs() -> None:
    class Wide(BaseModel):
        a: int
        b: int = 2

    def f(a: int, **rest: int) -> str:
        """F."""
        return f"{a} {rest}"

    made = FunctionTool.from_function(f, args_schema=Wide)
    assert (await made.call({"a": 1})).output == "1 {'b': 2}"
    assert made.invoke({"a": 5, "b": 7}) == "5 {'b': 7}"
