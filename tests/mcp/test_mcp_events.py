"""Resumable streams: SessionEventStore replays a session's own events, and no other session's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import mcp_types as mcp
import pytest
from mcp.server.streamable_http import EventMessage

from kosong.eventstore import MemoryRunStore
from kosong.eventstore.redis_store import RedisRunStore, connect
from kosong.mcp import MCPToolServer, MemoryEventLog, SessionEventStore, StoreEventLog
from kosong.server import create_app
from tests._waiting import until
from tests.mcp._mcp_http import Session, results
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset


@pytest.fixture(params=["memory-log", "server-store", "redis-store", "app"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[Uvicorn]:
    """An MCP server whose resumable events live in each kind of place.

    Its own memory log; a `kosong.server` event store (in memory, in Redis) through
    `StoreEventLog`; and the app `create_app(mcp=True)` builds, which uses its own store.
    """
    kind: str = request.param
    redis: Any = None
    if kind == "app":
        app: Any = create_app(kosong_toolset(), mcp=True)
    else:
        log: Any = MemoryEventLog()
        if kind == "server-store":
            log = StoreEventLog(MemoryRunStore())
        elif kind == "redis-store":
            redis = connect(request.getfixturevalue("redis_url"))
            log = StoreEventLog(RedisRunStore(redis, prefix=f"mcp-test:{uuid.uuid4().hex}:"))
        mcp_server = MCPToolServer(
            kosong_toolset(), retry_interval_ms=100, event_store=SessionEventStore(log)
        )
        app = mcp_server.app()
    try:
        async with Uvicorn(app) as running:
            yield running
    finally:
        if redis is not None:
            await redis.aclose()


async def test_a_closed_stream_is_resumed_with_last_event_id(server: Uvicorn):
    async with httpx.AsyncClient(timeout=10) as http:
        session = await Session(http, server.url).open()
        before = await session.call(2, "reconnect")
        # The server closed the stream mid-call: a priming event (id, retry), no result.
        assert before and before[0]["id"] and before[0].get("retry")
        assert not [r for r in results(before) if r.get("id") == 2]
        after = await session.resume(before[-1]["id"])
    answers = [r for r in results(after) if r.get("id") == 2]
    assert answers and answers[0]["result"]["content"] == [{"type": "text", "text": "resumed"}]


async def test_another_session_cannot_replay_a_sessions_events(server: Uvicorn):
    async with httpx.AsyncClient(timeout=10) as http:
        owner = await Session(http, server.url).open()
        thief = await Session(http, server.url).open()
        events = await owner.call(2, "reconnect")

        async def stored() -> list[Any]:  # the owner reads the result: it is stored by now
            return [r for r in results(await owner.resume(events[-1]["id"])) if r.get("id") == 2]

        mine = await until(stored, "the result to be stored")
        stolen = await thief.resume(events[-1]["id"])
    assert not [r for r in results(stolen) if r.get("id") == 2]
    assert mine


def _message(request_id: int) -> mcp.JSONRPCMessage:
    return mcp.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"n": request_id})


async def test_memory_log_scopes_ids_and_streams_per_session():
    log = MemoryEventLog(max_events=10)
    a1 = await log.append("a", "s1", None)
    a2 = await log.append("a", "s1", _message(1))
    await log.append("a", "s2", _message(2))
    a4 = await log.append("a", "s1", _message(3))
    b1 = await log.append("b", "s1", _message(4))
    assert a1 == b1  # ids are per session: only the session's own lookups find them
    found = await log.after("a", a1)
    assert found is not None
    stream, events = found
    assert stream == "s1" and [e.event_id for e in events] == [a2, a4]
    assert await log.after("c", a1) is None
    assert await log.after("a", "no-such-id") is None


async def test_memory_log_is_bounded_in_events_and_sessions():
    log = MemoryEventLog(max_events=2, max_sessions=2)
    first = await log.append("a", "s", _message(1))
    for i in range(3):
        await log.append("a", "s", _message(i))
    assert await log.after("a", first) is None  # dropped: the oldest of three
    await log.append("b", "s", None)
    await log.append("c", "s", None)  # a third session: "a" goes
    assert "a" not in log._sessions
    with pytest.raises(ValueError):
        MemoryEventLog(max_events=0)


async def test_store_outside_a_bound_request_keeps_nothing_replayable():
    store = SessionEventStore()
    event_id = await store.store_event("s", _message(1))
    sent: list[EventMessage] = []

    async def send(message: EventMessage) -> None:
        sent.append(message)

    assert await store.replay_events_after(event_id, send) is None
    assert sent == []


async def test_the_store_replays_a_session_s_events_only_to_the_principal_that_opened_it():
    """Even a request that reached the store with another principal's session id gets nothing
    (the SDK's manager answers such a request 404 before; the store does not rely on it)."""
    store = SessionEventStore()

    def scope(principal: str, session_id: str | None = None) -> dict[str, Any]:
        headers = [(b"mcp-session-id", session_id.encode())] if session_id else []
        return {"type": "http", "method": "GET", "headers": headers, "kosong.principal": principal}

    async def ignore(message: Any) -> None:
        pass

    async def open_session() -> str:  # as the SDK does: the response names the new session
        send = store.bind(scope("alice"), ignore)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"mcp-session-id", b"s1")]})  # fmt: skip
        first = await store.store_event("stream", None)
        await store.store_event("stream", _message(1))
        return first

    async def replay(principal: str) -> tuple[str | None, list[EventMessage]]:
        store.bind(scope(principal, "s1"), ignore)
        sent: list[EventMessage] = []

        async def collect(message: EventMessage) -> None:
            sent.append(message)

        return await store.replay_events_after(first, collect), sent

    first = await asyncio.create_task(open_session())  # each request in a context of its own
    assert await asyncio.create_task(replay("bob")) == (None, [])
    stream, sent = await asyncio.create_task(replay("alice"))
    assert stream == "stream" and [m.message for m in sent] == [_message(1)]
    store.forget("s1")  # the session ended: nothing of it is replayed again
    assert await asyncio.create_task(replay("alice")) == (None, [])
