"""Tools for the command-line examples of docs/mcp.md: one file, every kind of target.

    kosong tools list examples/weather_tools.py:tools          # a list of tools
    kosong serve examples/weather_tools.py:make_toolset        # a function returning a toolset
    kosong mcp examples/weather_tools.py:open_toolset --http   # an async one

`weather` returns a model, so its definition carries an output schema and MCP clients get
its value as `structuredContent`.
"""

from __future__ import annotations

from pydantic import BaseModel

from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset


class Weather(BaseModel):
    city: str
    temperature: float
    conditions: str


@tool(read_only_hint=True, title="Weather")
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@tool
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


tools = [weather, count_words]


def make_toolset() -> SimpleToolset:
    """The tools in a toolset (a factory: called when the command starts)."""
    return SimpleToolset(tools)


async def open_toolset() -> SimpleToolset:
    """The same, from an async factory (awaited in the loop the command serves from)."""
    return SimpleToolset(tools)
