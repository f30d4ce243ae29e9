"""What the interop tests serve: `kosong serve tests/interop/_tools.py:tools --token T`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class CityParams(BaseModel):
    city: str


class Forecast(CallableTool2[CityParams]):
    """A tool that declares its output's schema: its result is structured content too."""

    name: str = "forecast"
    description: str = "Tomorrow's forecast for a city."
    params: type[CityParams] = CityParams
    output_schema: dict[str, Any] | None = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "high": {"type": "integer"},
                       "sky": {"type": "string", "enum": ["clear", "cloudy", "rain"]}},
        "required": ["city", "high", "sky"],
    }  # fmt: skip

    async def __call__(self, params: CityParams) -> ToolReturnValue:
        return ToolOk(output=json.dumps({"city": params.city, "high": 21, "sky": "clear"}))


tools = [add, Forecast()]
