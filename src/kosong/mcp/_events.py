"""Resumable MCP streams: an event store whose event ids are scoped to one session.

The MCP SDK's streamable HTTP transport stores every message it sends on an SSE stream in an
`EventStore` and, when a client reconnects with `Last-Event-ID`, replays what came after. The
SDK hands the store one store for all sessions and tells it neither which session stores nor
which one asks for a replay, so a store keyed by event id alone replays one session's messages
to any client that presents (or guesses) its ids.

`SessionEventStore` closes that: `MCPToolServer` binds every HTTP request to the session it
belongs to (its `Mcp-Session-Id`, or the id the server gives it when it opens a session), and
the store files each event under that session and replays only the requesting session's
events, and only to the principal that opened the session (the SDK's manager refuses another
principal's request for the session before it gets here; the store does not rely on it).
Where the events are kept is an `EventLog`: `MemoryEventLog` by default, bounded per session
and in sessions; `StoreEventLog` keeps them in a `kosong.eventstore.RunStore`, the same
store the server's runs use (so with Redis, a session's stream resumes on another process).
"""

from __future__ import annotations

import contextvars
import hashlib
import itertools
import logging
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mcp.server import streamable_http
from mcp.server.streamable_http import EventCallback, EventMessage
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse
from pydantic import TypeAdapter
from starlette.types import Message, Scope, Send

from kosong.eventstore import RunRecord, RunStore, StoreFullError, split_event_id
from kosong.mcp._sessions import SESSION_HEADER, Owner, header, owner_of

__all__ = ["EventLog", "MemoryEventLog", "SessionEvent", "SessionEventStore", "StoreEventLog"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One message of one stream of one session, as an `EventLog` keeps it."""

    event_id: str
    """The id the client sees (`id:` of the SSE event)."""
    stream_id: str
    """The stream it was sent on (a request's id, or the session's standalone stream)."""
    message: JSONRPCMessage | None
    """The message; None for the priming event that opens a stream."""


class EventLog(Protocol):
    """Where a `SessionEventStore` keeps events, per session."""

    async def append(self, session: str, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep an event of `session` and return its id (unique within the session)."""
        ...

    async def after(self, session: str, event_id: str) -> tuple[str, list[SessionEvent]] | None:
        """The stream of `session`'s event `event_id`, and the events on it that came after.

        None when `session` has no event `event_id` (unknown, or dropped since).
        """
        ...


@dataclass(slots=True)
class _Session:
    events: deque[SessionEvent]
    ids: Callable[[], int] = field(default_factory=lambda: itertools.count(1).__next__)


class MemoryEventLog:
    """An in-memory `EventLog`: the last `max_events` events of the last `max_sessions` sessions."""

    def __init__(self, *, max_events: int = 1000, max_sessions: int = 10_000) -> None:
        """Keep at most `max_events` per session, for at most `max_sessions` sessions.

        Raises:
            ValueError: a bound is not a positive number.
        """
        if max_events <= 0 or max_sessions <= 0:
            raise ValueError("max_events and max_sessions must be positive")
        self._max_events = max_events
        self._max_sessions = max_sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    async def append(self, session: str, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep an event; the oldest session goes when there are too many."""
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = _Session(deque(maxlen=self._max_events))
            if len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session)
        event = SessionEvent(str(state.ids()), stream_id, message)
        state.events.append(event)
        return event.event_id

    async def after(self, session: str, event_id: str) -> tuple[str, list[SessionEvent]] | None:
        """The stream of the session's event `event_id` and its later events on that stream."""
        state = self._sessions.get(session)
        if state is None:
            return None
        events = list(state.events)
        for i, event in enumerate(events):
            if event.event_id == event_id:
                stream = event.stream_id
                return stream, [e for e in events[i + 1 :] if e.stream_id == stream]
        return None


class StoreEventLog:
    """An `EventLog` in a `kosong.eventstore.RunStore`: each (session, stream) is a store run.

    A store stream is opened on a stream's first event, with the session in its metadata, and
    ends with the stream's JSON-RPC response: replaying checks that the stream belongs to the
    asking session, so no session replays another's. A stream the store cannot take (it is
    full) is served but not resumable, and said so once in the log.
    """

    def __init__(self, store: RunStore) -> None:
        """Keep events in `store` (say the app's: `app.state.kosong.store`)."""
        self._store = store
        self._opened: OrderedDict[str, None] = OrderedDict()
        self._full_logged = False

    async def append(self, session: str, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep an event in the store; its id is the store's."""
        key = _store_stream(session, stream_id)
        if key not in self._opened:
            try:
                # The session as the run's principal, the stream as its tool.
                await self._store.create(RunRecord(key, session, stream_id, status="running"))
            except ValueError:  # opened already (by this process before a restart, or another)
                pass
            except StoreFullError:
                if not self._full_logged:
                    self._full_logged = True
                    logger.warning("The event store is full: new MCP streams are not resumable")
                return f"unstored-{secrets.token_hex(8)}"
            self._opened[key] = None
            if len(self._opened) > 100_000:  # streams end without telling the log
                self._opened.popitem(last=False)
        data = "" if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        final = isinstance(message, JSONRPCResponse | JSONRPCError)  # its request is answered
        stored = await self._store.append(key, "mcp", data, final=final)
        if final:
            self._opened.pop(key, None)
        return stored if stored is not None else f"unstored-{secrets.token_hex(8)}"

    async def after(self, session: str, event_id: str) -> tuple[str, list[SessionEvent]] | None:
        """The session's stream of `event_id` and its later events; None for anyone else's."""
        parts = split_event_id(event_id)
        if parts is None:
            return None
        info = await self._store.get(parts[0])
        if info is None or info.principal != session:
            return None
        replayed = await self._store.replay(event_id)
        if replayed is None:
            return None
        stream_id = info.tool
        return stream_id, [
            SessionEvent(
                event.id,
                stream_id,
                _MESSAGE.validate_json(event.data) if event.data else None,
            )
            for event in replayed[1]
        ]


def _store_stream(session: str, stream_id: str) -> str:
    """The store stream of one stream of one session (store ids allow few characters)."""
    digest = hashlib.blake2b(f"{session}\0{stream_id}".encode(), digest_size=16).hexdigest()
    return f"mcp-{digest}"


_MESSAGE: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)


@dataclass(slots=True)
class _Binding:
    """The session an HTTP request belongs to: named by its id, or found out from the response."""

    key: str
    owner: Owner
    """The principal that opened the session (see `kosong.mcp._sessions.owner_of`)."""


_BINDING: contextvars.ContextVar[_Binding | None] = contextvars.ContextVar(
    "kosong_mcp_session", default=None
)


class SessionEventStore(streamable_http.EventStore):
    """The SDK's `EventStore`, scoped per session (see the module doc).

    Bind each request with `bind(scope, send)` before the SDK handles it (`MCPToolServer` does);
    an event stored or asked for outside any bound request is refused (nothing is stored, no
    replay), never mixed with a session's.
    """

    def __init__(self, log: EventLog | None = None) -> None:
        """Keep events in `log` (a `MemoryEventLog` by default)."""
        self._log: EventLog = log if log is not None else MemoryEventLog()
        self._bindings: OrderedDict[str, _Binding] = OrderedDict()

    @property
    def log(self) -> EventLog:
        """Where the events are kept."""
        return self._log

    def bind(self, scope: Scope, send: Send) -> Send:
        """Bind the request of `scope` to its session; return the `send` to answer it with.

        A request naming a session (`Mcp-Session-Id`) is bound to it, if it speaks for the
        principal that opened the session; another principal's request is bound to a key of
        its own, which has no events. One that does not name a session (the request opening
        one) is bound to a new key, which becomes the session's once the response names its
        id: the SDK stores the new session's events from a task started inside this request,
        which keeps this binding.
        """
        owner = owner_of(scope)
        session_id = header(scope.get("headers", ()), SESSION_HEADER)
        if session_id is not None:
            binding = self._bindings.get(session_id)
            if binding is None:
                binding = self._remember(session_id, _Binding(secrets.token_hex(16), owner))
            elif binding.owner != owner:
                binding = _Binding(secrets.token_hex(16), owner)  # nothing of the session's
            _BINDING.set(binding)
            return send
        binding = _Binding(secrets.token_hex(16), owner)
        _BINDING.set(binding)

        async def send_and_learn(message: Message) -> None:
            if message["type"] == "http.response.start":
                session_id = header(message.get("headers", ()), SESSION_HEADER)
                if session_id is not None:
                    self._remember(session_id, binding)
            await send(message)

        return send_and_learn

    def forget(self, session_id: str) -> None:
        """Drop what binds requests to the session `session_id`, which has ended.

        Its events are never replayed again: a later request naming it is bound to a key of
        its own. `MCPToolServer` calls this when a session ends; without it, bindings go
        oldest first past 100,000.
        """
        self._bindings.pop(session_id, None)

    def _remember(self, session_id: str, binding: _Binding) -> _Binding:
        self._bindings[session_id] = binding
        if len(self._bindings) > 100_000:  # sessions end without telling the store
            self._bindings.popitem(last=False)
        return binding

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep the event under the current request's session and return its id."""
        binding = _BINDING.get()
        if binding is None:  # not a request we bound: keep nothing that anyone could replay
            return f"unbound-{secrets.token_hex(8)}"
        return await self._log.append(binding.key, stream_id, message)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        """Replay the current session's events after `last_event_id`; None if it has none."""
        binding = _BINDING.get()
        if binding is None:
            return None
        found = await self._log.after(binding.key, last_event_id)
        if found is None:
            return None
        stream_id, events = found
        for event in events:
            if event.message is not None:  # a priming event has nothing to replay
                await send_callback(EventMessage(event.message, event.event_id))
        return stream_id
