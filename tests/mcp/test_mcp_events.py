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
from kosong.mcp import MCPToolServer, SessionEventStore
from kosong.server import create_app
from tests._waiting import until
from tests.mcp._mcp_http import Session, results
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset


@pytest.fixture(
    params=[
        "default",
        "memory-store",
        pytest.param("redis-store", marks=pytest.mark.external),
        "app",
    ]
)
async def server(request: pytest.FixtureRequest) -> AsyncIterator[Uvicorn]:
    """An MCP server whose resumable events live in each kind of place.

    The store of its own runs (the default); a run store given (in memory, in Redis); and the
    app `create_app(mcp=True)` builds, which keeps them in the store of the app's runs.
    """
    kind: str = request.param
    redis: Any = None
    if kind == "app":
        app: Any = create_app(kosong_toolset(), mcp=True)
    else:
        events: SessionEventStore | None = None
        if kind == "memory-store":
            events = SessionEventStore(MemoryRunStore())
        elif kind == "redis-store":
            redis = connect(request.getfixturevalue("redis_url"))
            prefix = f"mcp-test:{uuid.uuid4().hex}:"
            events = SessionEventStore(RedisRunStore(redis, prefix=prefix))
        mcp_server = MCPToolServer(kosong_toolset(), retry_interval_ms=100, event_store=events)
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


def _notice(n: int) -> mcp.JSONRPCMessage:
    params = {"progressToken": 1, "progress": n}
    return mcp.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=params)


def _scope(principal: str, session_id: str | None = None) -> dict[str, Any]:
    headers = [(b"mcp-session-id", session_id.encode())] if session_id else []
    return {"type": "http", "method": "GET", "headers": headers, "kosong.principal": principal}


async def _ignore(message: Any) -> None:
    pass


async def _replay(store: SessionEventStore, event_id: str) -> tuple[str | None, list[Any]]:
    sent: list[EventMessage] = []

    async def collect(message: EventMessage) -> None:
        sent.append(message)

    stream = await store.replay_events_after(event_id, collect)
    return stream, [m.message for m in sent]


async def test_each_stream_is_a_record_of_the_run_store_bounded_as_runs_are():
    runs = MemoryRunStore(max_runs=2, max_events=3)
    store = SessionEventStore(runs)
    assert store.store is runs

    async def session() -> dict[str, str]:  # a request of session s1, in a context of its own
        store.bind(_scope("alice", "s1"), _ignore)
        ids = {"a0": await store.store_event("a", None), "b0": await store.store_event("b", None)}
        for n in range(1, 5):
            ids[f"a{n}"] = await store.store_event("a", _notice(n))
        ids["c0"] = await store.store_event("c", None)  # a third open stream: no room
        ids["b1"] = await store.store_event("b", _message(7))  # answered: stream b ends
        ids["d0"] = await store.store_event("d", None)  # room made by the ended stream
        return ids

    ids = await asyncio.create_task(session())

    async def replays() -> list[tuple[str | None, list[Any]]]:
        store.bind(_scope("alice", "s1"), _ignore)
        return [await _replay(store, ids[name]) for name in ("a0", "a1", "c0", "b0")]

    from_a0, from_a1, from_c0, from_b0 = await asyncio.create_task(replays())
    # Each stream replays its own events; past `max_events`, further ones are dropped.
    assert from_a0 == ("a", [_notice(1), _notice(2)]) and from_a1 == ("a", [_notice(2)])
    assert ids["a3"] == ids["a4"] == ids["a2"]  # dropped: the client resumes after the last kept
    assert from_c0 == (None, []) and ids["c0"].startswith("unstored-")
    assert from_b0 == (None, [])  # the ended stream was dropped to make room for d
    assert not ids["d0"].startswith("unstored-")


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

    async def open_session() -> str:  # as the SDK does: the response names the new session
        send = store.bind(_scope("alice"), _ignore)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"mcp-session-id", b"s1")]})  # fmt: skip
        first = await store.store_event("stream", None)
        await store.store_event("stream", _message(1))
        return first

    async def replay(principal: str) -> tuple[str | None, list[Any]]:
        store.bind(_scope(principal, "s1"), _ignore)
        return await _replay(store, first)

    first = await asyncio.create_task(open_session())  # each request in a context of its own
    assert await asyncio.create_task(replay("bob")) == (None, [])
    assert await asyncio.create_task(replay("alice")) == ("stream", [_message(1)])
    store.forget("s1")  # the session ended: nothing of it is replayed again
    assert await asyncio.create_task(replay("alice")) == (None, [])
