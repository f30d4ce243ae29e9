"""Every behaviour of seeds/004 (the Kimi agent SDK's external tools), with kosong's API.

The Go SDK takes an argument struct and options; kosong takes a function whose only parameter
is a pydantic model, dataclass or TypedDict (or plain parameters), and the same options as
keyword arguments.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from kosong.tooling import FunctionTool, ToolError, ToolException, tool
from kosong.tooling.error import ToolRuntimeError
from kosong.tooling.simple import SimpleToolset
from tests.tooling._tools import handle, make_call


class WeatherArgs(BaseModel):
    location: str = Field(description="City name to get weather for")
    unit: str = Field(default="", description="Temperature unit (celsius or fahrenheit)")


class WeatherResult(BaseModel):
    temperature: float
    condition: str


def get_weather(args: WeatherArgs) -> str:
    return f"Weather in {args.location}: 22°C"


def test_step_1_3_argument_struct_and_create_tool() -> None:
    made = FunctionTool.from_function(get_weather, description="Get current weather for a location")
    assert made.name == "get_weather"  # derived from the function's name
    assert made.description == "Get current weather for a location"
    assert made.base.parameters == {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name to get weather for"},
            "unit": {
                "type": "string",
                "description": "Temperature unit (celsius or fahrenheit)",
                "default": "",
            },
        },
        "required": ["location"],
    }


async def test_step_2_return_string_stringer_or_json() -> None:
    class Celsius:
        def __init__(self, degrees: float) -> None:
            self.degrees = degrees

        def __str__(self) -> str:  # Go's fmt.Stringer
            return f"{self.degrees}°C"

    def as_string(args: WeatherArgs) -> str:
        return f"Weather in {args.location}: 22°C"

    def as_stringer(args: WeatherArgs) -> Celsius:
        return Celsius(22.0)

    def as_struct(args: WeatherArgs) -> WeatherResult:
        return WeatherResult(temperature=22.0, condition="Sunny")

    outputs = []
    for func in (as_string, as_stringer, as_struct):
        made = FunctionTool.from_function(func, description="Weather.")
        outputs.append((await made.call({"location": "Beijing"})).output)
    assert outputs == [
        "Weather in Beijing: 22°C",
        "22.0°C",
        '{"temperature":22.0,"condition":"Sunny"}',
    ]


def test_option_with_name() -> None:
    made = FunctionTool.from_function(get_weather, name="my_custom_tool", description="W.")
    assert made.name == made.base.name == "my_custom_tool"


def test_option_with_description() -> None:
    made = FunctionTool.from_function(
        get_weather, description="A detailed description of what this tool does"
    )
    assert made.base.description == "A detailed description of what this tool does"


def test_option_with_field_description_overrides_the_structs_own() -> None:
    made = FunctionTool.from_function(
        get_weather,
        description="W.",
        field_descriptions={"location": "The city name, e.g., 'Beijing' or 'New York'"},
    )
    assert made.args["location"]["description"] == "The city name, e.g., 'Beijing' or 'New York'"
    assert made.args["unit"]["description"] == "Temperature unit (celsius or fahrenheit)"
    # The struct's own schema is not changed for other tools.
    assert WeatherArgs.model_fields["location"].description == "City name to get weather for"


async def test_option_with_schema_bypasses_generation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search query"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        "required": ["query"],
    }

    def search(query: str, limit: int = 10) -> list[str]:
        return [f"{query} #{i}" for i in range(1, limit + 1)]

    made = FunctionTool.from_function(search, description="Search.", schema=schema)
    assert made.base.parameters == schema
    assert (await made.call({"query": "go", "limit": 2})).output == '["go #1","go #2"]'
    refused = await made.call({"query": "go", "limit": 0})
    assert refused.is_error and "limit: 0 is less than the minimum of 1" in refused.message


@dataclasses.dataclass
class Inner:
    name: str


def test_type_mappings() -> None:
    def f(
        s: str, b: bool, i: int, f64: float, obj: Inner, arr: list[int], m: dict[str, float]
    ) -> str:
        return ""

    props = FunctionTool.from_function(f, description="Types.").args
    assert props["s"] == {"type": "string"}
    assert props["b"] == {"type": "boolean"}
    assert props["i"] == {"type": "integer"}
    assert props["f64"] == {"type": "number"}
    assert props["obj"]["type"] == "object" and props["obj"]["required"] == ["name"]
    assert props["arr"] == {"type": "array", "items": {"type": "integer"}}
    assert props["m"] == {"type": "object", "additionalProperties": {"type": "number"}}


class SearchOptions(BaseModel):
    safe: bool = True


class SearchArgs(BaseModel):
    query: str = Field(description="The search query string")
    limit: int = Field(default=0, description="Maximum number of results")  # omitempty
    options: SearchOptions | None = None  # a pointer: optional


def test_required_by_default_optional_with_a_default_or_none() -> None:
    def search(args: SearchArgs) -> str:
        return ""

    schema = FunctionTool.from_function(search, description="Search.").base.parameters
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["description"] == "The search query string"
    assert schema["properties"]["limit"]["description"] == "Maximum number of results"
    assert schema["properties"]["options"]["default"] is None


class CustomerInfo(BaseModel):
    name: str
    email: str


class OrderItem(BaseModel):
    product_id: str
    quantity: int


class OrderArgs(BaseModel):
    customer: CustomerInfo
    items: list[OrderItem]


async def test_nested_structs_are_fully_supported_and_inlined() -> None:
    def place_order(args: OrderArgs) -> str:
        return f"{args.customer.name}: {sum(i.quantity for i in args.items)} items"

    made = FunctionTool.from_function(place_order, description="Place an order.")
    assert made.base.parameters == {
        "type": "object",
        "properties": {
            "customer": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                "required": ["name", "email"],
            },
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "product_id": {"type": "string"},
                        "quantity": {"type": "integer"},
                    },
                    "required": ["product_id", "quantity"],
                },
            },
        },
        "required": ["customer", "items"],
    }
    order = {
        "customer": {"name": "Ada", "email": "ada@example.com"},
        "items": [{"product_id": "p1", "quantity": 2}, {"product_id": "p2", "quantity": 1}],
    }
    assert (await made.call(order)).output == "Ada: 3 items"


@pytest.mark.parametrize(
    "annotation",
    [Callable[[int], int], asyncio.Queue, Any.__class__],
    ids=["func", "chan", "a class"],
)
def test_unsupported_types_are_refused_at_creation(annotation: Any) -> None:
    def f(x: Any) -> str:
        return ""

    f.__annotations__["x"] = annotation
    with pytest.raises(TypeError, match="parameter `x` of tool `f`"):
        FunctionTool.from_function(f, description="F.")


class DivideArgs(BaseModel):
    dividend: float
    divisor: float


async def test_errors_are_sent_back_to_the_model() -> None:
    def divide(args: DivideArgs) -> float:
        if args.divisor == 0:
            raise ToolException("cannot divide by zero")
        return args.dividend / args.divisor

    def divide_crashing(args: DivideArgs) -> float:
        if args.divisor == 0:
            raise ValueError("cannot divide by zero")
        return args.dividend / args.divisor

    toolset = SimpleToolset(
        [
            FunctionTool.from_function(divide, description="Divide."),
            FunctionTool.from_function(divide_crashing, description="Divide."),
        ]
    )
    arguments = '{"dividend": 1, "divisor": 0}'
    expected = await handle(toolset, "divide", arguments)
    crashed = await handle(toolset, "divide_crashing", arguments)
    assert type(expected) is ToolError and expected.message == "cannot divide by zero"
    assert isinstance(crashed, ToolRuntimeError)
    assert crashed.message == "Error running tool: ValueError: cannot divide by zero"
    assert (await handle(toolset, "divide", '{"dividend": 1, "divisor": 4}')).output == "0.25"


class CalculatorArgs(BaseModel):
    operation: Literal["add", "subtract", "multiply", "divide"] = Field(
        description="One of: add, subtract, multiply, divide"
    )
    a: float = Field(description="First operand")
    b: float = Field(description="Second operand")


class CalculatorResult(BaseModel):
    result: float
    operation: str


def calculate(args: CalculatorArgs) -> CalculatorResult:
    ops = {
        "add": lambda: args.a + args.b,
        "subtract": lambda: args.a - args.b,
        "multiply": lambda: args.a * args.b,
        "divide": lambda: args.a / args.b if args.b else None,
    }
    result = ops[args.operation]()
    if result is None:
        raise ToolException("division by zero")
    return CalculatorResult(result=result, operation=args.operation)


async def test_multiple_tools_at_once_and_the_complete_example() -> None:
    @tool
    def search(query: str) -> list[str]:
        """Search."""
        return [query.upper()]

    weather_tool = FunctionTool.from_function(get_weather, name="get_weather", description="W.")
    calculator_tool = tool(name="calculator", description="Perform basic arithmetic operations")(
        calculate
    )
    toolset = SimpleToolset([weather_tool, calculator_tool, search])
    assert [t.name for t in toolset.tools] == ["get_weather", "calculator", "search"]

    calls = [
        make_call("calculator", '{"operation": "multiply", "a": 123, "b": 456}', "c1"),
        make_call("get_weather", '{"location": "Beijing"}', "c2"),
        make_call("search", '{"query": "kimi"}', "c3"),
        make_call("calculator", '{"operation": "divide", "a": 1, "b": 0}', "c4"),
    ]
    results = await asyncio.wait_for(
        asyncio.gather(*(toolset.handle(c) for c in calls)), timeout=10
    )  # fmt: skip
    by_id = {r.tool_call_id: r.return_value for r in results}
    assert json.loads(str(by_id["c1"].output)) == {"result": 56088.0, "operation": "multiply"}
    assert by_id["c2"].output == "Weather in Beijing: 22°C"
    assert by_id["c3"].output == '["KIMI"]'
    assert by_id["c4"].is_error and by_id["c4"].message == "division by zero"
