"""Handshake-era MCP sessions kept per principal: bound to it, limited, ended when abandoned.

The SDK's session manager binds a session to the credential that opened it: a request whose
`scope["user"]` is an `AuthenticatedUser` of another principal is answered `404 Session not
found`, exactly like an unknown session (so ids cannot be probed), and this holds for every
method: POST, the GET stream, a GET resuming with `Last-Event-ID`, and DELETE. `SessionKeeper`
stands in front of the manager and

- gives every request the principal kosong's guard found (`scope["kosong.principal"]`, the
  token's name or `"anonymous"`) as such a user, so the SDK's check applies to kosong's tokens
  (a user set by the SDK's own bearer-auth middleware is left as it is);
- keeps at most `per_principal` sessions for each principal: opening one more ends that
  principal's least recently used idle session, one that never got past `initialize` first;
  if all of them are busy (a request in flight or a stream open), the new one is refused with
  429 and `Retry-After`. Other principals are never touched;
- ends a session that has been idle (nothing in flight, no open stream) for `idle_timeout`
  seconds, or for the shorter `setup_timeout` while its client has sent nothing after the
  `initialize` request that opened it.

A session is ended the way a client ends it: a DELETE with its id, through the manager.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp_types import INVALID_REQUEST
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kosong._keys import PRINCIPAL
from kosong._seconds import optional_seconds

__all__ = ["PRINCIPAL", "SESSION_HEADER", "Owner", "SessionKeeper", "header", "owner_of", "refusal"]

logger = logging.getLogger(__name__)

Owner = tuple[str, str | None, str | None] | None
"""Who a session belongs to: the SDK's (client id, issuer, subject), or None for nobody."""

SESSION_HEADER = b"mcp-session-id"
_RETRY_AFTER = 5
"""Seconds a principal whose sessions are all busy is told to wait."""


@functools.lru_cache(maxsize=1024)
def _user(principal: str) -> AuthenticatedUser:
    """The SDK's user for a kosong principal (no token: the guard checked it already)."""
    return AuthenticatedUser(AccessToken(token="", client_id=principal, scopes=[]))


def owner_of(scope: Scope) -> Owner:
    """The principal a request speaks for, made the request's `user` if it has none yet.

    The SDK compares `authorization_context(scope["user"])` with the one that opened the
    session; this gives a request through kosong's guard the user of the guard's principal.
    """
    user: object = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        principal: object = scope.get(PRINCIPAL)
        if not isinstance(principal, str):
            return None
        user = scope["user"] = _user(principal)
    context = authorization_context(user)
    return context["client_id"], context["issuer"], context["subject"]


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of the header `name` (lowercase) among ASGI `headers`."""
    return next((v.decode("latin-1") for k, v in headers if k.lower() == name), None)


def refusal(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """A JSON-RPC Invalid Request error (`id: null`), answered with the HTTP `status`."""
    error = {"code": INVALID_REQUEST, "message": message}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status, headers)


@dataclass(slots=True, eq=False)
class _Session:
    id: str
    owner: Owner
    ending: Scope
    """The DELETE that ends it (the Host and user of the request that opened it)."""
    in_flight: int = 1
    used: float = field(default_factory=time.monotonic)
    """When the last request ended (or the first began)."""
    set_up: bool = False
    """Whether the client sent anything after the `initialize` that opened it."""


class SessionKeeper:
    """An ASGI wrapper in front of the SDK's session manager (see the module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_principal: int | None,
        idle_timeout: float | None,
        setup_timeout: float | None,
        on_end: Callable[[str], None],
    ) -> None:
        """Keep the sessions `app` (the manager's `handle_request`) opens.

        The limits are `MCPToolServer`'s `max_sessions_per_principal`, `session_idle_timeout`
        and `session_setup_timeout`; `on_end` is told the id of every session that ends.

        Raises:
            ValueError: a limit or a timeout is not a positive number.
        """
        if per_principal is not None and per_principal <= 0:
            raise ValueError("max_sessions_per_principal must be a positive number or None")
        self._app = app
        self._limit = per_principal
        self._idle_timeout = optional_seconds(idle_timeout, "session_idle_timeout")
        setup_timeout = optional_seconds(setup_timeout, "session_setup_timeout")
        self._setup_timeout = setup_timeout if setup_timeout is not None else idle_timeout
        self._on_end = on_end
        # Each principal's sessions, least recently used first.
        self._owned: dict[Owner, OrderedDict[str, _Session]] = {}
        self._opening: Counter[Owner] = Counter()  # requests that may open a session, now

    def clear(self) -> None:
        """Forget every session (the manager that held them stopped)."""
        self._owned.clear()
        self._opening.clear()

    def count(self, owner: Owner) -> int:
        """How many sessions `owner` holds."""
        return len(self._owned.get(owner, ()))

    async def handle(self, scope: Scope, receive: Receive, send: Send, *, opens: bool) -> None:
        """Serve one request, keeping account of the session it opens, uses or ends.

        `opens`: the request may open a session (a POST that may be an `initialize`); the SDK
        answers any other request without a session id 400, and that costs no room.
        """
        owner = owner_of(scope)
        session_id = header(scope.get("headers", ()), SESSION_HEADER)
        if session_id is None:
            await self._open(owner, scope, receive, send, admit=opens)
            return
        owned = self._owned.get(owner)
        session = owned.get(session_id) if owned is not None else None
        if session is None:
            # Not one we keep for this principal: the SDK answers 404, as for any unknown id.
            await self._app(scope, receive, send)
            return
        session.in_flight += 1
        session.set_up = True
        self._owned[owner].move_to_end(session.id)
        statuses: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, watch)
        finally:
            self._release(session)
            # Gone (404), or ended by its client: the SDK holds it no more.
            status = statuses[0] if statuses else 0
            if status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300):
                self._forget(session)

    async def _open(
        self, owner: Owner, scope: Scope, receive: Receive, send: Send, *, admit: bool
    ) -> None:
        """Serve a request without a session id; keep the session it opens, if it does.

        `admit`: make room first (it may be an `initialize`). Another request is not expected
        to open one, but one it opens all the same is kept too, never left out of account.
        """
        if admit and not await self._make_room(owner):
            logger.warning(
                "Refusing a new MCP session: %s holds %d busy sessions", owner, self.count(owner)
            )
            message = "Too many open sessions for this principal: end one (DELETE) or retry later"
            response = refusal(429, message, {"Retry-After": str(_RETRY_AFTER)})
            await response(scope, receive, send)
            return
        self._opening[owner] += 1
        opened: _Session | None = None

        async def learn(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = header(message.get("headers", ()), SESSION_HEADER)
                if session_id is not None:  # the SDK keeps a session it answered below 400
                    opened = self._keep(session_id, owner, scope)
            await send(message)

        try:
            await self._app(scope, receive, learn)
        finally:
            self._opening -= Counter([owner])  # a count that reaches 0 is dropped
            if opened is not None:
                self._release(opened)

    async def _make_room(self, owner: Owner) -> bool:
        """Whether `owner` may open one more session, ending an idle one of theirs if need be."""
        if self._limit is None:
            return True
        while self.count(owner) + self._opening[owner] >= self._limit:
            victim = self._victim(owner)
            if victim is None:
                return False
            logger.info("Ending MCP session %s of %s to make room for a new one", victim.id, owner)
            await self._end(victim)
        return True

    def _victim(self, owner: Owner) -> _Session | None:
        """The owner's least recently used idle session, one never set up first."""
        owned = self._owned.get(owner)
        idle = [] if owned is None else [s for s in owned.values() if not s.in_flight]
        return next((s for s in idle if not s.set_up), idle[0] if idle else None)

    def _keep(self, session_id: str, owner: Owner, scope: Scope) -> _Session:
        headers = [(SESSION_HEADER, session_id.encode("latin-1"))]
        host = header(scope.get("headers", ()), b"host")
        if host is not None:
            headers.append((b"host", host.encode("latin-1")))
        # The DELETE its client would send, in the scope (and as the user) that opened it.
        ending = dict(scope, method="DELETE", query_string=b"", headers=headers, client=None)
        session = _Session(session_id, owner, ending)
        self._owned.setdefault(owner, OrderedDict())[session_id] = session
        return session

    def _release(self, session: _Session) -> None:
        session.in_flight -= 1
        session.used = time.monotonic()

    def _forget(self, session: _Session) -> None:
        owned = self._owned.get(session.owner)
        if owned is None or owned.pop(session.id, None) is None:
            return
        if not owned:
            del self._owned[session.owner]
        self._on_end(session.id)

    async def _end(self, session: _Session) -> None:
        """Forget the session now, then have the manager end it as a client's DELETE would."""
        self._forget(session)
        body: Iterator[Message] = iter([{"type": "http.request", "body": b"", "more_body": False}])

        async def receive() -> Message:
            return next(body, {"type": "http.disconnect"})

        async def discard(message: Message) -> None:
            pass

        try:
            with anyio.CancelScope(shield=True):  # a session half-ended is still held
                await self._app(dict(session.ending), receive, discard)
        except Exception:
            logger.exception("Ending MCP session %s failed", session.id)

    async def expire(self) -> None:
        """End idle sessions as their timeouts run out, until cancelled."""
        timeouts = [t for t in (self._idle_timeout, self._setup_timeout) if t is not None]
        if not timeouts:
            return
        tick = min(max(min(timeouts) / 4, 0.05), 30.0)
        while True:
            await anyio.sleep(tick)
            now = time.monotonic()
            for session in [s for owned in self._owned.values() for s in owned.values()]:
                timeout = self._idle_timeout if session.set_up else self._setup_timeout
                if not session.in_flight and timeout is not None and now - session.used >= timeout:
                    logger.info("MCP session %s idle for %.0f s: ending it", session.id, timeout)
                    await self._end(session)
