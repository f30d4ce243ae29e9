"""Resumable MCP streams: an event store whose event ids are scoped to one session.

The MCP SDK's streamable HTTP transport stores every message it sends on an SSE stream in an
`EventStore` and replays what came after a reconnecting client's `Last-Event-ID`. It hands
one store all sessions' events and tells it neither which session stores nor which one asks,
so a store keyed by event id alone replays one session's messages to anyone holding its ids.

`SessionEventStore` closes that: `MCPToolServer` binds every HTTP request to its session (its
`Mcp-Session-Id`, or the id the server gives it when it opens one); the store files each
event under that session and replays only the requesting session's events, and only to the
principal that opened it (the SDK's manager refuses another principal first; the store does
not rely on it).

The events are kept in a `kosong.eventstore.RunStore`, the one the server's runs use: each
stream of each session is a record (the session as its principal, the stream as its tool),
opened by the stream's first event and ended by its JSON-RPC response, so it is kept, bounded
and expired as runs are (in memory, or in Redis, where a stream resumes on another process).
A stream the store cannot take (it is full) is served but not resumable, said once in the log.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from mcp.server import streamable_http
from mcp.server.streamable_http import EventCallback, EventMessage
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse
from pydantic import TypeAdapter
from starlette.types import Message, Scope, Send

from kosong.eventstore import MemoryRunStore, RunRecord, RunStore, StoreFullError, split_event_id
from kosong.mcp._sessions import SESSION_HEADER, Owner, header, owner_of

__all__ = ["SessionEventStore"]

logger = logging.getLogger(__name__)


_MESSAGE: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)


@dataclass(slots=True)
class _Binding:
    """The session an HTTP request belongs to (its store key) and the principal that opened it."""

    key: str
    owner: Owner


_BINDING: contextvars.ContextVar[_Binding | None] = contextvars.ContextVar(
    "kosong_mcp_session", default=None
)


class SessionEventStore(streamable_http.EventStore):
    """The SDK's `EventStore`, scoped per session (see the module doc).

    Bind each request with `bind(scope, send)` before the SDK handles it (`MCPToolServer` does);
    an event stored or asked for outside any bound request is refused (nothing is stored, no
    replay), never mixed with a session's.
    """

    def __init__(self, store: RunStore | None = None) -> None:
        """Keep events in `store` (a `MemoryRunStore` of its own by default)."""
        self._store = store if store is not None else MemoryRunStore()
        self._bindings: OrderedDict[str, _Binding] = OrderedDict()
        self._opened: OrderedDict[str, None] = OrderedDict()
        self._full_logged = False

    @property
    def store(self) -> RunStore:
        """Where the events are kept."""
        return self._store

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
        binding = self._bindings.get(session_id) if session_id is not None else None
        if binding is None or binding.owner != owner:  # a new key, with nothing of the session's
            binding = _Binding(secrets.token_hex(16), owner)
            if session_id is not None and session_id not in self._bindings:
                self._remember(session_id, binding)
        _BINDING.set(binding)
        if session_id is not None:
            return send

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

    def _remember(self, session_id: str, binding: _Binding) -> None:
        self._bindings[session_id] = binding
        if len(self._bindings) > 100_000:  # sessions end without telling the store
            self._bindings.popitem(last=False)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep the event under the current request's session and return its id."""
        binding = _BINDING.get()
        if binding is None:  # not a request we bound: keep nothing that anyone could replay
            return f"unbound-{secrets.token_hex(8)}"
        digest = hashlib.blake2b(f"{binding.key}\0{stream_id}".encode(), digest_size=16)
        key = f"mcp-{digest.hexdigest()}"  # a stream of a session; store ids allow few characters
        if key not in self._opened:
            try:
                # The session as the record's principal, the stream as its tool.
                await self._store.create(RunRecord(key, binding.key, stream_id, status="running"))
            except ValueError:  # opened already (by this process before a restart, or another)
                pass
            except StoreFullError:
                if not self._full_logged:
                    self._full_logged = True
                    logger.warning("The event store is full: new MCP streams are not resumable")
                return f"unstored-{secrets.token_hex(8)}"
            self._opened[key] = None
            if len(self._opened) > 100_000:  # streams end without telling the store
                self._opened.popitem(last=False)
        data = "" if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        final = isinstance(message, JSONRPCResponse | JSONRPCError)  # its request is answered
        stored = await self._store.append(key, "mcp", data, final=final)
        if final:
            self._opened.pop(key, None)
        return stored if stored is not None else f"unstored-{secrets.token_hex(8)}"

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        """Replay the current session's events after `last_event_id`; None if it has none."""
        binding = _BINDING.get()
        parts = split_event_id(last_event_id)
        if binding is None or parts is None:
            return None
        record = await self._store.get(parts[0])
        if record is None or record.principal != binding.key:  # another session's, or none
            return None
        replayed = await self._store.replay(*parts)
        if replayed is None:
            return None
        for event in replayed:
            if event.data:  # a priming event has nothing to replay
                await send_callback(EventMessage(_MESSAGE.validate_json(event.data), event.id))
        return record.tool
