"""CachePolicy with the in-memory backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from kosong.standard import coded_error, to_envelope, with_policies
from kosong.standard.policies import (
    CacheBackend,
    CacheEntry,
    CachePolicy,
    MemoryCache,
    TimeoutPolicy,
)
from kosong.tooling import ToolOk, ToolResult
from tests.standard._std_tools import Scripted, Weather, make_call, output_json, toolset

JAN_1 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def cached(tool: Any, **policy: Any) -> tuple[Any, CachePolicy]:
    cache = CachePolicy(**policy)
    return with_policies(toolset(tool), cache), cache


async def call(pipeline: Any, arguments: Any, call_id: str = "c") -> ToolResult:
    return await asyncio.wait_for(pipeline.handle(make_call("get_weather", arguments, call_id)), 5)


async def test_an_identical_call_is_served_from_the_cache() -> None:
    tool = Weather()
    pipeline, _ = cached(tool)
    first = await call(pipeline, {"location": "Beijing", "unit": "celsius"}, "a")
    second = await call(pipeline, {"unit": "celsius", "location": "Beijing"}, "b")  # other order
    assert len(tool.calls) == 1
    assert second.tool_call_id == "b"
    assert second.return_value.output == first.return_value.output
    assert "cache" not in to_envelope(first).dump()["metadata"]
    cache = to_envelope(second).dump()["metadata"]["cache"]
    assert cache["hit"] is True and 599 < cache["ttl_remaining"] <= 600


async def test_the_standards_cache_hit_example_from_a_real_run() -> None:
    clock = Clock(JAN_1)
    pipeline, _ = cached(Weather(), clock=clock)
    await call(pipeline, {"location": "Beijing"})
    clock.now = JAN_1 + 300
    hit = to_envelope(await call(pipeline, {"location": "Beijing"})).dump()
    assert hit["data"] == {"temperature": 25, "condition": "sunny"}
    assert hit["metadata"]["tool_name"] == "get_weather"
    assert hit["metadata"]["cache"] == {
        "hit": True,
        "cached_at": "2024-01-01T00:00:00Z",
        "ttl_remaining": 300,
    }


async def test_entries_expire_after_the_tools_ttl() -> None:
    clock = Clock(JAN_1)
    tool = Weather()
    pipeline, _ = cached(tool, clock=clock)
    await call(pipeline, {"location": "x"})
    clock.now += 599
    await call(pipeline, {"location": "x"})
    assert len(tool.calls) == 1
    clock.now += 2  # past the 600 s of cache_ttl
    await call(pipeline, {"location": "x"})
    assert len(tool.calls) == 2


async def test_the_default_ttl_applies_when_the_tool_has_none() -> None:
    clock = Clock(JAN_1)
    tool = Scripted(lambda n: ToolOk(output=str(n)), name="get_weather", cacheable=True)
    pipeline, _ = cached(tool, clock=clock, default_ttl=10)
    await call(pipeline, {})
    clock.now += 11
    assert (await call(pipeline, {})).return_value.output == "1"


async def test_different_arguments_are_different_entries() -> None:
    tool = Weather()
    pipeline, _ = cached(tool)
    await call(pipeline, {"location": "Beijing"})
    await call(pipeline, {"location": "Paris"})
    await call(pipeline, {"location": "Beijing", "unit": "fahrenheit"})
    assert len(tool.calls) == 3


async def test_only_cache_key_params_make_the_key() -> None:
    tool = Weather(cache_key_params=["location"])
    pipeline, _ = cached(tool)
    await call(pipeline, {"location": "Beijing", "unit": "celsius"})
    await call(pipeline, {"location": "Beijing", "unit": "fahrenheit"})
    assert len(tool.calls) == 1


async def test_errors_and_timeouts_are_never_cached() -> None:
    failing = Scripted(
        lambda n: coded_error("CITY_NOT_FOUND", "no"), name="get_weather", cacheable=True
    )
    pipeline, _ = cached(failing)
    await call(pipeline, {})
    await call(pipeline, {})
    assert failing.calls == 2

    async def slow(n: int) -> Any:
        if n == 0:
            await asyncio.Event().wait()  # times out
        return ToolOk(output="late")

    slow_tool = Scripted(slow, name="get_weather", cacheable=True)
    backend = MemoryCache()
    pipeline = with_policies(toolset(slow_tool), CachePolicy(backend), TimeoutPolicy(0.02))
    assert (await call(pipeline, {})).return_value.is_error
    assert len(backend) == 0
    assert (await call(pipeline, {})).return_value.output == "late"
    assert len(backend) == 1


async def test_tools_that_are_not_cacheable_always_run() -> None:
    tool = Scripted(lambda n: ToolOk(output=str(n)), name="get_weather")
    pipeline, _ = cached(tool)
    await call(pipeline, {})
    await call(pipeline, {})
    assert tool.calls == 2


async def test_a_new_tool_version_does_not_get_the_old_versions_entries() -> None:
    backend = MemoryCache()
    v1, v2 = Weather(), Weather(version="2.0.0")
    await call(with_policies(toolset(v1), CachePolicy(backend)), {"location": "x"})
    await call(with_policies(toolset(v2), CachePolicy(backend)), {"location": "x"})
    assert len(v1.calls) == len(v2.calls) == 1


async def test_arguments_that_do_not_parse_bypass_the_cache() -> None:
    tool = Weather()
    backend = MemoryCache()
    pipeline = with_policies(toolset(tool), CachePolicy(backend))
    result = await call(pipeline, '{"location": ')
    assert result.return_value.is_error and "parsing JSON" in result.return_value.message
    assert len(backend) == 0


class DownBackend(CacheBackend):
    async def get(self, key: str) -> CacheEntry | None:
        raise ConnectionError("cache is down")

    async def set(self, key: str, entry: CacheEntry) -> None:
        raise ConnectionError("cache is down")

    async def delete(self, key: str) -> None:
        raise ConnectionError("cache is down")

    async def clear(self) -> None:
        raise ConnectionError("cache is down")


async def test_a_failing_backend_never_fails_the_call(caplog: pytest.LogCaptureFixture) -> None:
    tool = Weather()
    pipeline, _ = cached(tool, backend=DownBackend())
    result = await call(pipeline, {"location": "x"})
    assert not result.return_value.is_error
    assert "Cache lookup failed" in caplog.text and "ConnectionError: cache is down" in caplog.text


async def test_memory_cache_drops_the_least_recently_used_entry() -> None:
    cache = MemoryCache(max_entries=2)
    entry = CacheEntry(ToolOk(output="v"), 0, 1e12)
    await cache.set("a", entry)
    await cache.set("b", entry)
    await cache.get("a")  # a is now the most recently used
    await cache.set("c", entry)
    assert await cache.get("b") is None
    assert await cache.get("a") is entry and await cache.get("c") is entry
    await cache.delete("a")
    assert len(cache) == 1
    await cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError):
        MemoryCache(max_entries=0)
    with pytest.raises(ValueError):
        CachePolicy(default_ttl=0)


async def test_a_cached_result_is_never_modified_by_later_hits() -> None:
    backend = MemoryCache()
    pipeline = with_policies(toolset(Weather()), CachePolicy(backend))
    await call(pipeline, {"location": "x"})
    hit = await call(pipeline, {"location": "x"})
    (entry,) = [await backend.get(k) for k in list(backend._entries)]
    assert entry is not None and entry.value.extras is None
    # The hit's metadata is the call's own; the value it got is a copy of the entry.
    assert hit.metadata is not None and hit.metadata["cache"]["hit"] is True  # type: ignore[index]
    assert hit.return_value is not entry.value
    assert output_json(hit)["temperature"] == 25


async def test_memory_cache_drops_the_least_recently_used_and_expired_entries() -> None:
    clock = Clock(JAN_1)
    cache = MemoryCache(max_entries=2, clock=clock)
    entry = CacheEntry(ToolOk(output="v"), JAN_1, JAN_1 + 10)
    await cache.set("a", entry)
    await cache.set("b", entry)
    assert await cache.get("a") is entry  # a is now the most recently used
    await cache.set("c", entry)
    assert await cache.get("b") is None and await cache.get("c") is entry
    clock.now += 10
    assert await cache.get("a") is None and len(cache) == 1  # expired and dropped


class CountingCache(MemoryCache):
    """A MemoryCache subclass: its own get and set must be the ones used."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.sets = 0

    async def get(self, key: str) -> CacheEntry | None:
        self.gets += 1
        await asyncio.sleep(0)  # a subclass may wait
        return await super().get(key)

    async def set(self, key: str, entry: CacheEntry) -> None:
        self.sets += 1
        await super().set(key, entry)


async def test_a_memory_cache_subclass_is_used_through_its_own_methods() -> None:
    backend = CountingCache()
    tool = Weather()
    pipeline, _ = cached(tool, backend=backend)
    await call(pipeline, {"location": "x"})
    await call(pipeline, {"location": "x"})
    assert (backend.gets, backend.sets, len(tool.calls)) == (2, 1, 1)
