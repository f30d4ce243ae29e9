"""A FastMCP server, run as its users run one (`python _fastmcp_server.py`: stdio).

Its tools return what FastMCP's users return: a string (FastMCP wraps it as `{"result": ...}`
in `structuredContent` and marks the wrap in the output schema), a number, a model; `count`
reports progress without a total, as FastMCP's `ctx.report_progress(progress)` sends it.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP
from pydantic import BaseModel

server = FastMCP("fastmcp-test")


class Weather(BaseModel):
    city: str
    temperature: int


@server.tool
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, temperature=21)


@server.tool
async def count(to: int, ctx: Context) -> str:
    """Count, reporting progress without a total."""
    for i in range(1, to + 1):
        await ctx.report_progress(i)
    return f"counted to {to}"


if __name__ == "__main__":
    server.run(show_banner=False)
