"""Several processes share runs through Redis: a run resumes on another process, and goes on
when the front end that took it dies; the result cache and the rate limits are shared."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import redis.asyncio as aioredis

from kosong.server import RateLimit
from kosong.server.redis_limits import RedisRateLimiter
from tests.server._procs import ServerProcess
from tests.server._sse import read_sse

pytestmark = pytest.mark.external  # `kosong serve` processes sharing a redis-server


async def test_redis_rate_limits_are_shared(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    one = RedisRateLimiter(client, RateLimit(1, 2), prefix="t3:")
    two = RedisRateLimiter(client, RateLimit(1, 2), prefix="t3:")
    try:
        waits = [await one.acquire("k"), await two.acquire("k"), await one.acquire("k")]
    finally:
        await client.aclose()
    assert waits[:2] == [0.0, 0.0] and 0 < waits[2] <= 1.0


async def test_processes_sharing_redis_share_the_result_cache_and_the_rate_limits(
    redis_url: str,
) -> None:
    limit = ("--rate-limit", "1/m,burst=3")
    a = ServerProcess("--redis", redis_url, *limit)
    b = ServerProcess("--redis", redis_url, *limit)
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            first = await c.post(f"{a.url}/tools/stamp", json={"key": "k"})
            cached = await c.post(f"{b.url}/tools/stamp", json={"key": "k"})
            third = await c.get(f"{a.url}/tools")
            limited = await c.get(f"{b.url}/tools")  # the fourth request of this client
    finally:
        a.kill()
        b.kill()
    assert first.status_code == cached.status_code == third.status_code == 200
    assert cached.json()["data"] == first.json()["data"]  # ran on A, served on B
    assert cached.json()["metadata"]["cache"]["hit"] is True
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 1


async def test_runs_resume_on_another_process_and_go_on_when_the_front_end_that_took_them_dies(
    redis_url: str,
) -> None:
    # A takes the requests and runs nothing itself; B's worker slots run every call.
    a = ServerProcess("--redis", redis_url, "--lease", "1", "--workers", "0")
    b = ServerProcess("--redis", redis_url, "--lease", "1")
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            runs = 20
            started = await asyncio.gather(
                *(
                    read_sse(
                        c,
                        "POST",
                        f"{a.url}/tools/ticker/sse",
                        json={"n": 40, "delay": 0.05},
                        stop_after=2,
                    )
                    for _ in range(runs)
                )
            )
            finished = await read_sse(c, "POST", f"{a.url}/tools/count/sse",
                                      json={"n": 3, "delay": 0})  # fmt: skip
            a.kill()  # SIGKILL: the runs it took go on (they run on B)
            resumed = await asyncio.gather(
                *(
                    read_sse(
                        c, "GET", f"{b.url}{s.headers['content-location']}", last_event_id=s.last_id
                    )
                    for s in started
                )
            )
            replayed = await read_sse(c, "GET", f"{b.url}{finished.headers['content-location']}")
    finally:
        a.kill()
        b.kill()
    for first, rest in zip(started, resumed, strict=True):
        numbers = [int(i.rpartition("-")[0].rpartition(".")[2] or 0) for i in first.ids + rest.ids]
        assert len(set(first.ids + rest.ids)) == len(first.ids + rest.ids)  # no duplicate
        assert numbers == sorted(numbers)
        assert rest.kinds[-1] == "tool_result" and set(rest.kinds[:-1]) <= {"tool_progress"}
        assert len(first.events + rest.events) == 41  # every event once: no gap
        assert rest.final["data"] == "ticked 40"
    assert replayed.events == finished.events
