"""Tools the server tests serve (also loaded by `kosong serve tests/server/_tools.py:tools`)."""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel

from kosong.standard import coded_error, report_progress
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool

GATES: dict[str, asyncio.Event] = {}
"""Gates the `gated` tool waits on, by name (in-process tests open them)."""
STARTED: dict[str, asyncio.Event] = {}
CANCELLED: list[str] = []
TOUCHED: list[str] = []
"""The tags of the `touch` calls that ran (in-process tests read it)."""


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def count(n: int = 10, delay: float = 0.01) -> str:
    """Report progress n times, `delay` seconds apart, then answer "counted"."""
    for i in range(n):
        await asyncio.sleep(delay)
        report_progress((i + 1) * 100 / n, f"step {i + 1}")
    return "counted"


@tool
async def gated(name: str, steps: int = 2) -> str:
    """Report `steps` progress events, then wait for the gate `name` to open."""
    STARTED.setdefault(name, asyncio.Event()).set()
    for i in range(steps):
        report_progress((i + 1) * 100 / (steps + 1), f"before the gate {i + 1}")
    try:
        await GATES.setdefault(name, asyncio.Event()).wait()
    except asyncio.CancelledError:
        CANCELLED.append(name)
        raise
    report_progress(100, "through the gate")
    return f"opened {name}"


@tool
async def touch(tag: str = "") -> str:
    """Record that a call ran, with its tag: what a request that must not run a tool tries."""
    TOUCHED.append(tag)
    return f"touched {tag}"


@tool
async def fail(code: str, retry_after: float | None = None) -> ToolReturnValue:
    """Fail with the error code `code`."""
    return coded_error(code, f"failed with {code}", retry_after=retry_after)


@tool
async def echo(text: str, tags: list[str] | None = None, flag: bool = False) -> str:
    """Echo the arguments back."""
    return f"{text}|{','.join(tags or [])}|{flag}"


@tool
async def ticker(n: int = 100, delay: float = 0.05) -> str:
    """A long run: n progress events `delay` seconds apart, with the process id."""
    for i in range(n):
        await asyncio.sleep(delay)
        report_progress((i + 1) * 100 / n, f"{os.getpid()}")
    return f"ticked {n}"


class KeyParams(BaseModel):
    key: str


class Stamp(CallableTool2[KeyParams]):
    """A cacheable tool answering with the process that ran it."""

    name: str = "stamp"
    description: str = "The id of the process that ran the call (cached 60 s)."
    params: type[KeyParams] = KeyParams
    cacheable = True
    cache_ttl = 60

    async def __call__(self, params: KeyParams) -> ToolReturnValue:
        return ToolOk(output=f"{params.key}@{os.getpid()}")


tools = [add, count, gated, touch, fail, echo, ticker, Stamp()]
