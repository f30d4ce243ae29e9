"""Tools with structured output, served by `kosong mcp` in the tests (`tools`, or `make_tools`)."""

from __future__ import annotations

from pydantic import BaseModel

from kosong.tooling import tool


class Weather(BaseModel):
    city: str
    temperature: float
    conditions: str


@tool(read_only_hint=True, title="Weather")
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@tool
def count(words: list[str]) -> int:
    """Count words."""
    return len(words)


tools = [weather, count]


async def make_tools() -> list[object]:
    """The same tools, from an async factory."""
    return [weather, count]


def make_toolset() -> object:
    """The same tools in a toolset, from a sync factory."""
    from kosong.tooling.simple import SimpleToolset

    return SimpleToolset([weather, count])
