"""kosong tour: tools defined in each supported way, and a batch of concurrent calls.

Run it with `.venv/bin/python examples/tools_tour.py`. It prints each tool's definition as the
model sees it, then dispatches a batch of calls at once (good ones, and the kinds of bad ones
models send) and prints every result. No call raises: failures are results too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from kosong.message import ToolCall
from kosong.tooling import (
    CallableTool,
    CallableTool2,
    ToolError,
    ToolOk,
    ToolReturnValue,
    tool,
)
from kosong.tooling.simple import SimpleToolset


# 1. CallableTool: a JSON Schema and an async __call__.
class Add(CallableTool):
    name: str = "add"
    description: str = "Add two numbers."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }

    async def __call__(self, a: float, b: float) -> ToolReturnValue:
        return ToolOk(output=str(a + b), brief=f"{a} + {b}")


# 2. CallableTool with a JSON array as arguments: unpacked as positional arguments.
class Total(CallableTool):
    name: str = "total"
    description: str = "Sum a list of numbers."
    parameters: dict[str, Any] = {"type": "array", "items": {"type": "number"}}

    async def __call__(self, *numbers: float) -> ToolReturnValue:
        return ToolOk(output=str(sum(numbers)))


# 3. CallableTool2: arguments validated into a pydantic model.
class WeatherParams(BaseModel):
    city: str = Field(description="City name")
    unit: str = Field(default="celsius", pattern="^(celsius|fahrenheit)$")


class Weather(CallableTool2[WeatherParams]):
    name = "get_weather"
    description = "Current weather of a city (simulated I/O of 0.2 s)."
    params = WeatherParams

    async def __call__(self, params: WeatherParams) -> ToolReturnValue:
        await asyncio.sleep(0.2)  # stands for a network call
        if params.city == "Atlantis":
            return ToolError(message=f"no weather station in {params.city}", brief="unknown city")
        temp = "25°C" if params.unit == "celsius" else "77°F"
        return ToolOk(output=f"{params.city}: sunny, {temp}", brief="weather fetched")


# 4. A plain (non-async) __call__ runs in a worker thread, never on the event loop.
class SlowHash(CallableTool2[WeatherParams]):
    name = "slow_hash"
    description = "A blocking computation (0.2 s of time.sleep)."
    params = WeatherParams

    def __call__(self, params: WeatherParams) -> ToolReturnValue:  # pyright: ignore[reportIncompatibleMethodOverride]
        time.sleep(0.2)
        return ToolOk(output=hashlib.sha256(params.city.encode()).hexdigest()[:12])


# 5. A plain function: @tool reads the schema from the signature and the docstring.
@tool(parse_docstring=True)
def convert(value: float, unit: Literal["km", "mi"] = "km") -> dict[str, float]:
    """Convert a distance between kilometres and miles.

    Args:
        value: The distance to convert.
        unit: The unit `value` is in.
    """
    factor = 0.621371 if unit == "km" else 1 / 0.621371
    return {"converted": round(value * factor, 3)}


# 6. A tool that crashes: the toolset turns the exception into a result.
class Crash(CallableTool):
    name: str = "crash"
    description: str = "Always fails."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    async def __call__(self) -> ToolReturnValue:
        raise ConnectionError("upstream closed the connection")


def call(call_id: str, name: str, arguments: str | None) -> ToolCall:
    return ToolCall(id=call_id, function=ToolCall.FunctionBody(name=name, arguments=arguments))


CALLS = [
    call("1", "add", '{"a": 1, "b": 2}'),
    call("2", "total", "[1, 2, 3.5]"),
    call("3", "get_weather", '{"city": "Beijing"}'),
    call("4", "get_weather", '{"city": "Boston", "unit": "fahrenheit"}'),
    call("5", "get_weather", '{"city": "Atlantis"}'),
    call("6", "slow_hash", '{"city": "Paris"}'),
    call("7", "crash", "{}"),
    call("7b", "convert", '{"value": 10, "unit": "mi"}'),
    call("8", "add", '{"a": 1}'),  # missing argument
    call("9", "add", '{"a": 1, "b": 2, "c": 3}'),  # unknown property
    call("10", "add", '{"a": 1, b: 2}'),  # not JSON
    call("11", "add", '{"a": 1, "a": 2, "b": 3}'),  # duplicate key
    call("12", "get_weather", '{"city": "Rome", "unit": "kelvin"}'),  # fails the pattern
    call("13", "translate", '{"text": "hi"}'),  # no such tool
]


async def main() -> None:
    toolset = SimpleToolset([Add(), Total(), Weather(), SlowHash(), convert, Crash()])
    print("Tools, as the model sees them:")
    for definition in toolset.tools:
        print(f"  {definition.name}: {json.dumps(definition.parameters, ensure_ascii=False)}")

    print(f"\nDispatching {len(CALLS)} calls at once...")
    started = time.perf_counter()
    results = await asyncio.gather(*(toolset.handle(c) for c in CALLS))
    elapsed = time.perf_counter() - started
    for c, result in zip(CALLS, results, strict=True):
        value = result.return_value
        status = "error" if value.is_error else "ok   "
        text = value.message if value.is_error else value.output
        print(f"  [{status}] {c.function.name}({c.function.arguments}) -> {text}")
    print(
        f"\nAll {len(CALLS)} calls took {elapsed:.2f} s: the four 0.2 s calls overlapped "
        "instead of adding up to 0.8 s."
    )


if __name__ == "__main__":
    asyncio.run(main())
