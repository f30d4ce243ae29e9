"""Handshake-era sessions: each belongs to the principal that opened it, a principal holds a
limited number, and abandoned ones end (`kosong.mcp._sessions.SessionKeeper`).

The server is the one `kosong serve` runs (`create_app` with two tokens, MCP at `/mcp`), on a
real socket; the sessions are opened by the official SDK's client where it can (legacy mode,
with a bearer token), by hand over HTTP where a test needs what the client never does (use
another principal's session id, open sessions and abandon them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import mcp_types as mcp
import pytest
from mcp.client.streamable_http import streamable_http_client

from kosong.mcp import MCPToolServer
from kosong.server import ServerConfig, create_app
from mcp import Client
from tests._waiting import until
from tests.mcp._mcp_http import Session, results
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
CONFIG = ServerConfig(tokens=TOKENS, rate_limit=None)  # the flood tests the sessions, not the rate


@dataclass
class Seen:
    """What the SDK's client got: the session ids it was given, whether its GET stream opened."""

    ids: list[str] = field(default_factory=list[str])
    streaming: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def sdk_client(url: str, token: str) -> AsyncIterator[tuple[Client, Seen]]:
    """The SDK's client in the handshake era with a bearer token, and what it got."""
    seen = Seen()

    async def remember(response: httpx2.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id and session_id not in seen.ids:
            seen.ids.append(session_id)
        if response.request.method == "GET" and response.status_code == 200:
            seen.streaming.set()

    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        event_hooks={"response": [remember]},
        timeout=httpx2.Timeout(10, read=60),
    ) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="legacy", read_timeout_seconds=10) as client:
            yield client, seen


async def _adds(client: Client, a: int, b: int) -> bool:
    result = await client.call_tool("add", {"a": a, "b": b})
    return result.content == [mcp.TextContent(text=str(a + b))]


def _comparable(response: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    headers = sorted((k, v) for k, v in response.headers.items() if k != "date")
    return response.status_code, response.content, headers


def keeping(**limits: Any) -> tuple[Any, MCPToolServer]:
    """The app `kosong serve` runs, its MCP server given `limits` (passed as a route of its own)."""
    server = MCPToolServer(kosong_toolset(), dns_rebinding_protection=False, **limits)
    return create_app(
        kosong_toolset(), CONFIG, routes=server.routes(), lifespans=[server.lifespan]
    ), server


# --- bound to the principal that opened it ------------------------------------------------------


async def test_another_principal_gets_404_for_a_session_as_for_an_unknown_one():
    async with (
        Uvicorn(create_app(kosong_toolset(), CONFIG, mcp=True)) as server,
        sdk_client(server.url, "alice-token") as (alice, seen),
        httpx.AsyncClient(timeout=10) as http,
    ):
        assert await _adds(alice, 1, 2)
        [session_id] = seen.ids
        bob = Session(http, server.url, "bob-token")
        bob.id = session_id
        nobody = Session(http, server.url, "bob-token")
        nobody.id = uuid.uuid4().hex
        listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
        for method, body in (("POST", listing), ("GET", None), ("DELETE", None)):
            async with asyncio.timeout(10):
                foreign = await http.request(method, server.url, json=body, headers=bob.headers())
                unknown = await http.request(
                    method, server.url, json=body, headers=nobody.headers()
                )
            assert foreign.status_code == 404, (method, foreign.text)
            assert _comparable(foreign) == _comparable(unknown), method
        # Bob's DELETE did not end it: Alice's session goes on.
        assert await _adds(alice, 2, 2)


async def test_another_principal_cannot_resume_a_session_s_stream_with_last_event_id():
    async with (
        Uvicorn(create_app(kosong_toolset(), CONFIG, mcp=True)) as server,
        httpx.AsyncClient(timeout=10) as http,
    ):
        alice = await Session(http, server.url, "alice-token").open()
        events = await alice.call(2, "reconnect")  # the stream is closed before the result
        assert not [r for r in results(events) if r.get("id") == 2]
        mine = await alice.resume(events[-1]["id"])  # the result is there to replay
        assert [r for r in results(mine) if r.get("id") == 2]
        bob = Session(http, server.url, "bob-token")
        bob.id = alice.id
        nobody = Session(http, server.url, "bob-token")
        nobody.id = uuid.uuid4().hex
        async with asyncio.timeout(10):
            stolen = await http.get(
                server.url, headers=bob.headers(**{"Last-Event-ID": events[-1]["id"]})
            )
            unknown = await http.get(
                server.url, headers=nobody.headers(**{"Last-Event-ID": events[-1]["id"]})
            )
    assert stolen.status_code == 404
    assert _comparable(stolen) == _comparable(unknown)
    assert b"resumed" not in stolen.content


# --- limited per principal ----------------------------------------------------------------------


async def test_an_initialize_flood_from_one_principal_is_bounded_and_locks_out_nobody():
    """250 abandoned `initialize`s from Alice against `kosong serve`'s defaults (100 each)."""
    async with (
        Uvicorn(create_app(kosong_toolset(), CONFIG, mcp=True)) as server,
        httpx.AsyncClient(timeout=10) as http,
    ):
        flood = [Session(http, server.url, "alice-token") for _ in range(250)]
        for batch in range(0, len(flood), 10):  # ten at a time: admissions race each other
            opened = await asyncio.gather(*(s.initialize() for s in flood[batch : batch + 10]))
            assert [r.status_code for r in opened] == [200] * len(opened)
        alive = [s for s in flood if await s.ping() == 200]
        async with sdk_client(server.url, "bob-token") as (bob, _):
            bob_adds = await _adds(bob, 3, 4)
        async with sdk_client(server.url, "alice-token") as (alice, _):
            alice_adds = await _adds(alice, 5, 6)
    assert 0 < len(alive) <= 100  # the most any principal holds; the rest were ended
    assert set(alive) <= set(flood[-110:])  # the oldest went first
    assert bob_adds and alice_adds


async def test_opening_one_more_ends_the_least_recently_used_idle_session_never_set_up_first():
    app, _ = keeping(max_sessions_per_principal=3)
    async with Uvicorn(app) as server, httpx.AsyncClient(timeout=10) as http:
        s1 = await Session(http, server.url, "alice-token").open()
        s2 = Session(http, server.url, "alice-token")
        assert (await s2.initialize()).status_code == 200  # never set up
        s3 = await Session(http, server.url, "alice-token").open()
        s4 = await Session(http, server.url, "alice-token").open()
        assert await s2.ping() == 404  # ended before s1, although s1 is older
        s5 = await Session(http, server.url, "alice-token").open()
        assert await s1.ping() == 404  # then the least recently used
        assert [await s.ping() for s in (s3, s4, s5)] == [200, 200, 200]
        bob = [await Session(http, server.url, "bob-token").open() for _ in range(3)]
        # Bob's sessions cost Alice none of hers.
        assert [await s.ping() for s in (s3, s4, s5, *bob)] == [200] * 6


async def test_a_principal_whose_sessions_are_all_busy_gets_429_with_retry_after():
    app, _ = keeping(max_sessions_per_principal=2)
    async with (
        Uvicorn(app) as server,
        httpx.AsyncClient(timeout=10) as http,
        contextlib.AsyncExitStack() as streams,
    ):
        busy = [await Session(http, server.url, "alice-token").open() for _ in range(2)]
        for session in busy:  # each holds its GET stream open: busy, never ended for room
            stream = await streams.enter_async_context(
                http.stream("GET", server.url, headers=session.headers())
            )
            assert stream.status_code == 200
        refused = await Session(http, server.url, "alice-token").initialize()
        bob = await Session(http, server.url, "bob-token").initialize()
        assert [await s.ping() for s in busy] == [200, 200]
        await streams.aclose()  # the streams end: the sessions are idle, and one can go
        again = Session(http, server.url, "alice-token")

        async def opened() -> bool:  # once the server saw the streams end (a 429 changes nothing)
            return (await again.initialize()).status_code != 429

        await until(opened, "a session to open once the streams ended")
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "5"
    answer = refused.json()
    assert answer["id"] is None and answer["error"]["code"] == -32600
    assert "Too many open sessions" in answer["error"]["message"]
    assert "mcp-session-id" not in refused.headers
    assert bob.status_code == 200  # another principal is not refused
    assert again.id  # it opened


async def test_a_request_without_a_session_that_is_no_initialize_ends_no_session():
    app, _ = keeping(max_sessions_per_principal=1)
    async with Uvicorn(app) as server, httpx.AsyncClient(timeout=10) as http:
        kept = await Session(http, server.url, "alice-token").open()
        stray = Session(http, server.url, "alice-token")  # no session id
        listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        refused = await http.post(server.url, json=listing, headers=stray.headers())
        assert refused.status_code == 400  # the SDK's: a session id is missing
        assert await kept.ping() == 200  # and it did not cost the session its place


async def test_a_session_its_client_deleted_no_longer_counts():
    app, _ = keeping(max_sessions_per_principal=1)
    async with Uvicorn(app) as server:
        for a in range(3):  # each client ends its session (DELETE) as it leaves
            async with sdk_client(server.url, "alice-token") as (alice, seen):
                assert await _adds(alice, a, 1)
            assert len(seen.ids) == 1


# --- ended when abandoned -----------------------------------------------------------------------


class EndedSessions(logging.Handler):
    """What the keeper logs, so a test can wait for it to end a session without asking it
    (a request would keep the session alive)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []
        self.changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.changed.set()

    async def wait_for(self, session: Session) -> None:
        async with asyncio.timeout(20):
            while not any(session.id in message for message in self.messages):
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
def ended() -> Iterator[EndedSessions]:
    handler = EndedSessions()
    logger = logging.getLogger("kosong.mcp._sessions")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_a_session_never_set_up_ends_sooner_than_an_idle_one(ended: EndedSessions):
    app, _ = keeping(session_setup_timeout=0.2, session_idle_timeout=2.0)
    async with Uvicorn(app) as server, httpx.AsyncClient(timeout=10) as http:
        abandoned = Session(http, server.url, "alice-token")
        assert (await abandoned.initialize()).status_code == 200
        idle = await Session(http, server.url, "alice-token").open()
        await ended.wait_for(abandoned)
        assert await idle.ping() == 200  # set up: it lives on
        assert await abandoned.ping() == 404
        await ended.wait_for(idle)
        assert await idle.ping() == 404


async def test_a_session_with_an_open_stream_is_not_idle(ended: EndedSessions):
    app, _ = keeping(session_setup_timeout=1.0, session_idle_timeout=1.0)
    async with (
        Uvicorn(app) as server,
        sdk_client(server.url, "alice-token") as (alice, seen),
        httpx.AsyncClient(timeout=10) as http,
    ):
        # The SDK's client holds a GET stream open; a hand-made session holds none.
        async with asyncio.timeout(10):
            await seen.streaming.wait()
        quiet = await Session(http, server.url, "alice-token").open()
        await ended.wait_for(quiet)  # the client's session was quiet for longer than that
        later = await Session(http, server.url, "alice-token").open()
        await ended.wait_for(later)  # and the keeper went round again, a whole timeout later
        assert await _adds(alice, 1, 1)  # it stayed
        assert await quiet.ping() == 404
    assert not any(seen.ids[0] in message for message in ended.messages)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_sessions_per_principal": 0},
        {"session_setup_timeout": 0},
        {"session_idle_timeout": -1},
        {"session_idle_timeout": float("nan")},
        {"session_setup_timeout": float("inf")},
    ],
)
def test_limits_that_are_not_positive_numbers_are_refused(limits: dict[str, Any]):
    with pytest.raises(ValueError, match="must be a positive"):
        MCPToolServer(kosong_toolset(), **limits)
