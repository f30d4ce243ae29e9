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
from typing import Any

import pytest

from kosong.standard import to_envelope, with_policies
from kosong.standard.policies import CacheBackend, CacheEntry, CachePolicy, RedisCache
from kosong.tooling import ToolOk
from kosong.tooling.error import ToolTimeoutError
from tests._waiting import until
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
    await cache.set("short", CacheEntry(ToolOk(), now, now + 1.0))
    assert await cache.get("short") is not None
    (key,) = [k async for k in cache.client.scan_iter(match="*short")]
    assert 0 < await cache.client.pttl(key) <= 1000  # Redis holds the entry's own TTL...

    async def expired() -> bool:
        return not await cache.client.exists(key)

    await until(expired, "Redis to expire the entry")  # ...and drops it then
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
    assert "Cache lookup failed" in caplog.text and "ConnectionError" in caplog.text


@pytest.fixture
async def silent_redis() -> AsyncIterator[str]:
    """A server that accepts connections and never answers (a Redis that hangs)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_redis_that_never_answers_delays_no_call_past_the_timeout(
    silent_redis: str, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RedisCache.from_url(silent_redis, timeout=0.1)
    policy = CachePolicy(backend)
    tool = Weather()
    pipeline = with_policies(toolset(tool), policy)
    loop = asyncio.get_running_loop()
    try:
        for _ in range(3):
            started = loop.time()
            result = await asyncio.wait_for(
                pipeline.handle(make_call("get_weather", {"location": "x"})), 5
            )
            # One lookup and one store, each cut at the timeout: never stuck.
            assert loop.time() - started < 0.1 * 2 + 0.15
            assert not result.return_value.is_error
    finally:
        await backend.aclose()
    assert len(tool.calls) == 3  # uncached, every time
    assert policy.backend_failures == 6
    assert caplog.text.count("calls run uncached") == 1  # once per outage


async def test_an_outage_is_logged_again_only_after_the_cache_worked_in_between(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    class Flaky(CacheBackend):
        down = True

        async def get(self, key: str) -> CacheEntry | None:
            if self.down:
                raise ConnectionError("refused")
            return None

        async def set(self, key: str, entry: CacheEntry) -> None:
            if self.down:
                raise ConnectionError("refused")

        async def delete(self, key: str) -> None: ...

        async def clear(self) -> None: ...

    backend = Flaky()
    pipeline = with_policies(toolset(Weather()), CachePolicy(backend))
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    backend.down = False
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    backend.down = True
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    messages = [record.getMessage() for record in caplog.records]
    assert sum("calls run uncached" in m for m in messages) == 2
    assert sum(m.endswith("works again") for m in messages) == 1


def test_redis_cache_given_a_url_says_to_use_from_url() -> None:
    with pytest.raises(TypeError, match=r"RedisCache\.from_url"):
        RedisCache("redis://localhost:6379/0")  # type: ignore[arg-type]


CHILD = textwrap.dedent(
    """
    import asyncio, json
    import redis.asyncio as aioredis
    from kosong.standard import to_envelope, with_policies
    from kosong.standard.policies import CachePolicy, RedisCache
    from kosong.testing import ScriptedTool, make_call
    from kosong.tooling import ToolOk
    from kosong.tooling.simple import SimpleToolset

    async def weather(n):
        counter = aioredis.Redis.from_url({url!r})
        await counter.incr({counter_key!r})  # counts executions across processes
        await counter.aclose()
        return ToolOk(output=json.dumps({{"temperature": 25, "condition": "sunny"}}))

    async def main():
        cache = RedisCache.from_url({url!r}, prefix={prefix!r})
        tool = ScriptedTool("get_weather", weather, cacheable=True, cache_ttl=600, version="1.0.0")
        pipeline = with_policies(SimpleToolset([tool]), CachePolicy(cache))
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
    script = CHILD.format(url=redis_url, prefix=prefix, counter_key=counter_key)
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
