"""Tools and helpers shared by the tests of kosong.standard (`make_call` is kosong.testing's).

Each tool records its calls, so a test can prove how often the body ran.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, PrivateAttr

from kosong.standard import Policy
from kosong.standard.policies import (
    ApprovalPolicy,
    CachePolicy,
    DebugPolicy,
    DeprecationPolicy,
    EventHookPolicy,
    MetricsPolicy,
    RepeatGuardPolicy,
    RetryPolicy,
    SingleFlightPolicy,
    TimeoutPolicy,
    TracingPolicy,
    TruncationPolicy,
)
from kosong.testing import ScriptedTool
from kosong.testing import make_call as make_call  # the tests import it from here too
from kosong.tooling import CallableTool2, ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.simple import SimpleToolset


class WeatherParams(BaseModel):
    location: str
    unit: str = "celsius"


class Weather(CallableTool2[WeatherParams]):
    """The standard's example tool: read-only, cacheable, version 1.0.0."""

    name: str = "get_weather"
    description: str = "Current weather of a city"
    params: type[WeatherParams] = WeatherParams
    version = "1.0.0"
    cacheable = True
    cache_ttl = 600
    read_only_hint = True

    _calls: list[WeatherParams] = PrivateAttr(default_factory=list[WeatherParams])

    @property
    def calls(self) -> list[WeatherParams]:
        return self._calls

    async def __call__(self, params: WeatherParams) -> ToolReturnValue:
        self._calls.append(params)
        return ToolOk(output=json.dumps({"temperature": 25, "condition": "sunny"}))


class AnyParams(BaseModel):
    model_config = {"extra": "allow"}


class Scripted(ScriptedTool):
    """Named "scripted": answers call n with `script(n)` (a value, or an awaitable of one)."""

    def __init__(self, script: Callable[[int], Any], **metadata: Any) -> None:
        name = metadata.pop("name", "scripted")
        metadata.setdefault("description", "A tool that follows a script")
        super().__init__(name, script, **metadata)


class Blocking(CallableTool2[AnyParams]):
    """Waits on `release` (forever unless set); records start and cancellation in events."""

    name: str = "blocking"
    description: str = "A tool that waits until released"
    params: type[AnyParams] = AnyParams

    _started: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _release: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _cancelled: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _runs: int = PrivateAttr(default=0)
    _changed: asyncio.Condition = PrivateAttr(default_factory=asyncio.Condition)

    @property
    def started(self) -> asyncio.Event:
        return self._started

    @property
    def release(self) -> asyncio.Event:
        return self._release

    @property
    def cancelled(self) -> asyncio.Event:
        return self._cancelled

    @property
    def runs(self) -> int:
        return self._runs

    async def wait_runs(self, n: int) -> None:
        """Wait until the body has been entered `n` times."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._runs >= n)

    async def __call__(self, params: AnyParams) -> ToolReturnValue:
        async with self._changed:
            self._runs += 1
            self._changed.notify_all()
        self._started.set()
        try:
            await self._release.wait()
        except asyncio.CancelledError:
            self._cancelled.set()
            raise
        return ToolOk(output=f"done {self._runs}")


def toolset(*tools: Any) -> SimpleToolset:
    return SimpleToolset(list(tools))


def standard_data(value: ToolReturnValue | ToolResult) -> Any:
    """The standard's data of a result, untyped for tests: the call's `metadata` and
    `debug_info` (`ToolResult.metadata`), and the `error` details its value carries."""
    data: dict[str, Any] = {}
    if isinstance(value, ToolResult):
        if value.metadata is not None:
            metadata = dict(value.metadata)
            if "debug_info" in metadata:
                data["debug_info"] = metadata.pop("debug_info")
            data["metadata"] = metadata
        value = value.return_value
    part = (value.extras or {}).get("standard")
    if isinstance(part, dict) and "error" in part:
        data["error"] = part["error"]
    return data


def output_json(value: ToolReturnValue | ToolResult) -> Any:
    """A result's text output, parsed as JSON."""
    if isinstance(value, ToolResult):
        value = value.return_value
    assert isinstance(value.output, str)
    return json.loads(value.output)


def every_policy() -> list[Policy]:
    """Every policy, new, from the outside in, as the docs order them."""
    return [
        MetricsPolicy(),
        TracingPolicy(),
        EventHookPolicy(lambda event: None),
        DebugPolicy(include_arguments=True),
        DeprecationPolicy(),
        RepeatGuardPolicy(),
        ApprovalPolicy(lambda request: True),
        TruncationPolicy(),
        CachePolicy(),
        SingleFlightPolicy(),
        RetryPolicy(base_delay=0.001),
        TimeoutPolicy(10),
    ]
