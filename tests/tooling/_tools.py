"""Tool classes and helpers shared by the tooling tests.

This module uses `from __future__ import annotations` on purpose: every `__call__` here is
annotated with a *string* (`-> ToolOk`, `-> ToolReturnValue`), so adding these tools to a
SimpleToolset exercises the resolution of string return annotations.

Each tool records what its body received in `calls`, so a test can prove the body did (or did
not) run.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, PrivateAttr, RootModel

from kosong.testing import make_call as make_call  # the tests import it from here too
from kosong.tooling import CallableTool, CallableTool2, ParametersType, ToolOk, ToolReturnValue
from kosong.tooling.simple import SimpleToolset


async def handle(toolset: SimpleToolset, name: str, arguments: str | None) -> ToolReturnValue:
    """Handle one call and return the tool's return value (checking the call id came back)."""
    result = await toolset.handle(make_call(name, arguments, call_id="the-id"))
    assert result.tool_call_id == "the-id"
    return result.return_value


class _Recording(CallableTool):
    _calls: list[Any] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[Any]:
        """What the body received, one entry per run."""
        return self._calls


# --- CallableTool ------------------------------------------------------------------------------


class Add(_Recording):
    """Object schema with two required integers: keyword arguments."""

    name: str = "add"
    description: str = "Add two integers."
    parameters: ParametersType = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }

    async def __call__(self, a: int, b: int) -> ToolOk:
        self.calls.append((a, b))
        return ToolOk(output=str(a + b))


class Echo(_Recording):
    """Any object, no required field: returns the keyword arguments in `extras`."""

    name: str = "echo"
    description: str = "Echo the arguments."
    parameters: ParametersType = {"type": "object"}

    async def __call__(self, **kwargs: Any) -> ToolOk:
        self.calls.append(kwargs)
        return ToolOk(output="echoed", extras={"arguments": kwargs})


class Shout(_Recording):
    """A string schema: the whole argument is one string."""

    name: str = "shout"
    description: str = "Upper-case a text."
    parameters: ParametersType = {"type": "string"}

    async def __call__(self, text: str) -> ToolOk:
        self.calls.append(text)
        return ToolOk(output=text.upper())


WEATHER_SCHEMA: ParametersType = {
    "type": "object",
    "properties": {
        "location": {
            "type": "object",
            "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
            "required": ["latitude", "longitude"],
        },
        "units": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
}


class Weather(_Recording):
    """A nested object schema with a required field, `location`."""

    name: str = "weather"
    description: str = "Weather at a place."
    parameters: ParametersType = WEATHER_SCHEMA

    async def __call__(self, location: dict[str, float], units: str = "celsius") -> ToolOk:
        self.calls.append((location, units))
        return ToolOk(output=f"sunny at {location['latitude']}, {location['longitude']}")


# --- CallableTool2 -----------------------------------------------------------------------------


class AnyObject(RootModel[dict[str, Any]]):
    """Params that accept any JSON object as is."""


class Echo2(CallableTool2[AnyObject]):
    """Any object, no required field: returns the object in `extras`."""

    name: str = "echo2"
    description: str = "Echo the arguments."
    params: type[AnyObject] = AnyObject
    _calls: list[Any] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[Any]:
        return self._calls

    async def __call__(self, params: AnyObject) -> ToolOk:
        self.calls.append(params.root)
        return ToolOk(output="echoed", extras={"arguments": params.root})


class AddParams(BaseModel):
    a: int
    b: int


class Add2(CallableTool2[AddParams]):
    name: str = "add2"
    description: str = "Add two integers."
    params: type[AddParams] = AddParams

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


class Location(BaseModel):
    latitude: float
    longitude: float


class WeatherParams(BaseModel):
    location: Location
    units: str = "celsius"


class Weather2(CallableTool2[WeatherParams]):
    """A nested params model with a required field, `location`."""

    name: str = "weather2"
    description: str = "Weather at a place."
    params: type[WeatherParams] = WeatherParams
    _calls: list[Any] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[Any]:
        return self._calls

    async def __call__(self, params: WeatherParams) -> ToolOk:
        self.calls.append(params)
        return ToolOk(output=f"sunny at {params.location.latitude}")


class Text(RootModel[str]):
    """Params that are one string."""


class Shout2(CallableTool2[Text]):
    """A string schema through a params model."""

    name: str = "shout2"
    description: str = "Upper-case a text."
    params: type[Text] = Text

    async def __call__(self, params: Text) -> ToolOk:
        return ToolOk(output=params.root.upper())


def every_tool() -> SimpleToolset:
    """A toolset with one of each tool above."""
    return SimpleToolset([Add(), Echo(), Shout(), Weather(), Echo2(), Add2(), Weather2(), Shout2()])
