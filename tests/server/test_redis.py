"""Several processes share runs through Redis: a run resumes on another process, and a run
whose process was killed ends with an error there."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import redis.asyncio as aioredis

from kosong.eventstore.redis_store import RedisEventStore
from kosong.server import RateLimit
from kosong.server.redis_limits import RedisRateLimiter
from tests.server._procs import ServerProcess
from tests.server._sse import read_sse


async def test_the_redis_store_keeps_one_final_event_and_replays_after_any_position(
    redis_url: str,
) -> None:
    store = RedisEventStore.from_url(redis_url, prefix="t1:", ttl=30, lease=1)
    try:
        await store.open("runA", {"principal": "p", "tool": "t"})
        with pytest.raises(ValueError, match="exists"):
            await store.open("runA", {})
        assert await store.append("runA", "tool_progress", '{"n": 1}')
        assert await store.append("runA", "tool_result", '{"n": 2}', final=True)
        assert not await store.append("runA", "tool_error", "{}", final=True)
        events = await store.read("runA", "0")
        assert events is not None and [e.kind for e in events] == ["tool_progress", "tool_result"]
        assert events[-1].final and events[0].id.startswith("runA.")
        after_first = await store.read("runA", events[0].id.rpartition(".")[2])
        assert after_first == events[1:]
        info = await store.info("runA")
        assert info is not None and info.ended and info.meta == {"principal": "p", "tool": "t"}
        assert await store.read("nope", "0") is None and await store.info("nope") is None
        assert await store.ended(["runA", "nope"]) == {"runA", "nope"}
        replayed = await store.replay(events[0].id)
        assert replayed == ("runA", events[1:])
    finally:
        await store.aclose()


async def test_a_reader_waits_for_new_events_and_ends_a_run_whose_writer_died(
    redis_url: str,
) -> None:
    writer = RedisEventStore.from_url(redis_url, prefix="t2:", lease=0.3)
    reader = RedisEventStore.from_url(redis_url, prefix="t2:", lease=0.3)
    try:
        await writer.open("runB", {"tool": "t"})
        waiting = asyncio.ensure_future(reader.read("runB", "0", wait=5))
        await asyncio.sleep(0.05)
        await writer.append("runB", "tool_progress", "{}")
        got = await asyncio.wait_for(waiting, 5)
        assert got is not None and len(got) == 1
        info = await reader.info("runB")
        assert info is not None and info.writer_alive
        assert not await reader.end_abandoned("runB", "tool_error", "{}")  # alive: refused
    finally:
        await writer.aclose()  # gives its lease up, as a dead process would lose it
    try:
        info = await reader.info("runB")
        assert info is not None and not info.writer_alive and not info.ended
        assert await reader.end_abandoned("runB", "tool_error", '{"dead": true}')
        assert not await reader.end_abandoned("runB", "tool_error", "{}")
        events = await reader.read("runB", "0")
        assert events is not None and events[-1].final and events[-1].data == '{"dead": true}'
    finally:
        await reader.aclose()


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
