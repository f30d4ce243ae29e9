"""RedisCache against a real redis-server that the tests start (see conftest.redis_url)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kosong.standard.envelope import to_envelope
from kosong.standard.pipeline import with_policies
from kosong.standard.policies import CacheEntry, CachePolicy, RedisCache
from kosong.tooling import ToolOk
from kosong.tooling.error import ToolTimeoutError
from tests.standard._std_tools import Weather, make_call, toolset


@pytest.fixture
async def cache(redis_url: str) -> AsyncIterator[RedisCache]:
    backend = RedisCache.from_url(redis_url, prefix=f"test:{os.urandom(4).hex()}:")
    try:
        yield backend
    finally:
        await backend.clear()
        await backend.aclose()


async def test_entries_round_trip_through_redis(cache: RedisCache) -> None:
    value = ToolOk(output='{"a": 1}', message="m", brief="b", extras={"rows": 3})
    now = datetime.now(UTC).timestamp()
    await cache.set("k", CacheEntry(value, now, now + 60))
    entry = await cache.get("k")
    assert entry is not None
    assert entry.value == value and type(entry.value) is ToolOk
    assert (entry.cached_at, entry.expires_at) == (now, now + 60)
    assert await cache.get("missing") is None


async def test_error_classes_survive_the_trip(cache: RedisCache) -> None:
    value = ToolTimeoutError("t", 3)
    await cache.set("err", CacheEntry(value, 0, 1e12))
    entry = await cache.get("err")
    assert entry is not None and type(entry.value) is ToolTimeoutError and entry.value == value


async def test_redis_expires_entries_at_their_ttl(cache: RedisCache) -> None:
    now = datetime.now(UTC).timestamp()
    await cache.set("short", CacheEntry(ToolOk(), now, now + 0.05))
    assert await cache.get("short") is not None
    await asyncio.sleep(0.1)  # past the 50 ms TTL: Redis must have expired it
    assert await cache.get("short") is None


async def test_clear_removes_only_this_caches_keys(cache: RedisCache, redis_url: str) -> None:
    other = RedisCache.from_url(redis_url, prefix="other-prefix:")
    try:
        await other.set("keep", CacheEntry(ToolOk(), 0, 1e12))
        await cache.set("drop", CacheEntry(ToolOk(), 0, 1e12))
        await cache.clear()
        assert await cache.get("drop") is None
        assert await other.get("keep") is not None
    finally:
        await other.clear()
        await other.aclose()


async def test_a_pipeline_serves_hits_from_redis(cache: RedisCache) -> None:
    tool = Weather()
    pipeline = with_policies(toolset(tool), CachePolicy(cache))
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    hit = await pipeline.handle(make_call("get_weather", {"location": "x"}))
    assert len(tool.calls) == 1
    assert to_envelope(hit).dump()["metadata"]["cache"]["hit"] is True


async def test_an_unreachable_redis_does_not_fail_calls(caplog: pytest.LogCaptureFixture) -> None:
    down = RedisCache.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        result = await with_policies(toolset(Weather()), CachePolicy(down)).handle(
            make_call("get_weather", {"location": "x"})
        )
    finally:
        await down.aclose()
    assert not result.return_value.is_error
    assert "Cache lookup failed" in caplog.text


CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    sys.path.insert(0, {tests!r})
    import redis.asyncio as aioredis
    from _std_tools import Weather, make_call, toolset
    from kosong.standard.envelope import to_envelope
    from kosong.standard.pipeline import with_policies
    from kosong.standard.policies import CachePolicy
    from kosong.standard.policies import RedisCache
    from kosong.tooling import ToolOk

    class CountingWeather(Weather):
        async def __call__(self, params):
            counter = aioredis.Redis.from_url({url!r})
            await counter.incr({counter_key!r})  # counts executions across processes
            await counter.aclose()
            return await super().__call__(params)

    async def main():
        cache = RedisCache.from_url({url!r}, prefix={prefix!r})
        pipeline = with_policies(toolset(CountingWeather()), CachePolicy(cache))
        result = await pipeline.handle(make_call("get_weather", {{"location": "Beijing"}}))
        await cache.aclose()
        print(json.dumps(to_envelope(result).dump()))

    asyncio.run(main())
    """
)


def run_child(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_two_processes_share_the_cache(redis_url: str) -> None:
    prefix = f"shared:{os.urandom(4).hex()}:"
    counter_key = f"{prefix}executions"
    script = CHILD.format(
        tests=str(Path(__file__).parents[1]), url=redis_url, prefix=prefix, counter_key=counter_key
    )
    first = await asyncio.to_thread(run_child, script)
    second = await asyncio.to_thread(run_child, script)
    assert first["data"] == second["data"] == {"temperature": 25, "condition": "sunny"}
    assert "cache" not in first["metadata"]  # type: ignore[operator]
    assert second["metadata"]["cache"]["hit"] is True  # type: ignore[index]
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    try:
        count: Any = await client.get(counter_key)
        assert int(count) == 1  # the tool ran once, in the first process
        await client.delete(counter_key)
        async for key in client.scan_iter(match=f"{prefix}*"):
            await client.delete(key)
    finally:
        await client.aclose()
