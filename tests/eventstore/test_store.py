"""The run stores, memory and Redis, held to one contract: a run's record and its life cycle
(queued → running → waiting → queued → running → done), one final event whoever writes it,
replay after any position, idempotency keys, the waiting list. Redis is a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from kosong.eventstore import (
    IdempotencyConflictError,
    MemoryRunStore,
    RunRecord,
    RunStore,
    split_event_id,
)
from kosong.eventstore._store import check_run_id
from kosong.eventstore.redis_store import RedisRunStore


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.external)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RunStore]:
    if request.param == "memory":
        yield MemoryRunStore(ttl=30)
        return
    redis_url: str = request.getfixturevalue("redis_url")
    found = RedisRunStore.from_url(redis_url, prefix=f"t-{time.monotonic_ns()}:", ttl=30)
    try:
        yield found
    finally:
        await found.aclose()


def _record(run_id: str = "runA", principal: str = "p") -> RunRecord:
    return RunRecord(run_id, principal, "t", '{"a": 1}', "trace_x", "key-1")


async def test_a_run_keeps_one_final_event_and_replays_after_any_position(store: RunStore) -> None:
    await store.create(_record())
    with pytest.raises(ValueError, match="exists"):
        await store.create(_record())
    assert await store.append("runA", "tool_progress", '{"n": 1}')
    assert await store.append("runA", "tool_result", '{"n": 2}', final=True)
    assert not await store.append("runA", "tool_error", "{}", final=True)
    events = await store.read("runA", "0")
    assert events is not None and [e.kind for e in events] == ["tool_progress", "tool_result"]
    assert events[-1].final and events[0].id.startswith("runA.")
    after_first = await store.read("runA", events[0].id.rpartition(".")[2])
    assert after_first == events[1:]
    record = await store.get("runA")
    assert record is not None and record.ended and record.status == "done"
    assert (record.principal, record.tool, record.arguments) == ("p", "t", '{"a": 1}')
    assert (record.trace, record.key) == ("trace_x", "key-1")
    assert await store.read("nope", "0") is None and await store.get("nope") is None
    assert await store.replay("runA", events[0].id.rpartition(".")[2]) == events[1:]
    assert await store.replay("runA") == events and await store.replay("nope") is None
    with pytest.raises(ValueError, match="position"):
        await store.read("runA", "x")


async def test_a_run_goes_through_its_life_cycle(store: RunStore) -> None:
    await store.create(_record())
    assert (await store.get("runA")).status == "queued"  # type: ignore[union-attr]
    claimed = await store.claim("runA")
    assert claimed is not None and (claimed.status, claimed.attempt) == ("running", 1)
    asked = await store.ask("runA", "may I?", time.time() + 60)
    assert asked is not None and asked.status == "waiting" and asked.question == "may I?"
    assert asked.since is not None and asked.deadline is not None
    assert await store.claim("runA") is None  # nothing to run until it is answered
    assert [r.id for r in await store.waiting("p")] == ["runA"]
    assert await store.waiting("someone else") == []
    answered = await store.answer("runA", True, "fine")
    assert (
        answered is not None and answered.status == "queued" and answered.answer == (True, "fine")
    )
    assert await store.answer("runA", False, "too late") is None  # answered once
    assert await store.waiting("p") == []
    again = await store.claim("runA")  # a new first attempt, with its answer
    assert again is not None and again.attempt == 1 and again.answer == (True, "fine")
    redelivered = await store.claim("runA")  # its executor died: the attempt counts
    assert redelivered is not None and redelivered.attempt == 2
    await store.append("runA", "tool_result", "{}", final=True)
    assert await store.claim("runA") is None and await store.ask("runA", "?", None) is None


async def test_a_reader_waits_for_new_events(store: RunStore) -> None:
    await store.create(_record("runB"))
    waiting = asyncio.ensure_future(store.read("runB", "0", wait=30))
    await store.append("runB", "tool_progress", "{}")
    got = await asyncio.wait_for(waiting, 30)
    assert got is not None and len(got) == 1
    assert await store.read("runB", got[0].id.rpartition(".")[2], wait=0.01) == []


async def test_an_idempotency_key_stands_for_one_call(store: RunStore) -> None:
    assert await store.reserve("p", "k", "digest-1", "run1", 60) is None
    assert await store.reserve("p", "k", "digest-1", "run2", 60) == "run1"
    assert await store.reserve("q", "k", "digest-1", "run3", 60) is None  # per principal
    with pytest.raises(IdempotencyConflictError, match="another call"):
        await store.reserve("p", "k", "digest-2", "run4", 60)
    await store.release("p", "k", "other-run")  # not its run: kept
    assert await store.reserve("p", "k", "digest-1", "run5", 60) == "run1"
    await store.release("p", "k", "run1")
    assert await store.reserve("p", "k", "digest-1", "run6", 60) is None


def test_run_ids_with_a_trailing_newline_are_not_ids() -> None:
    assert split_event_id("run_1.3") == ("run_1", "3")
    assert split_event_id("run_1\n.3") is None
    with pytest.raises(ValueError, match="run id"):
        check_run_id("run_1\n")
