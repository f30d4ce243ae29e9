"""The checks every request passes before any route: one pure ASGI middleware per concern.

`create_app` lists them in this order; the first that refuses answers, with the standard's
error envelope, and counts the refusal by reason in a `Counter` the app shares (`/metrics`):

1. `HostOriginMiddleware`: the `Host` must name an allowed host (421, against DNS rebinding),
   and an `Origin`, when sent, must be allowed (403).
2. `CrossSiteMiddleware`: a request that runs or changes something may not come from another
   site, nor be one that any page can send without the browser asking the server first (a
   "simple" request); see its doc.
3. `BearerTokenMiddleware`: a valid bearer token, when tokens are set (401 with
   `WWW-Authenticate`); it leaves who is calling in the scope under `PRINCIPAL`.
4. `RateLimitMiddleware`: the principal's rate (429 with `Retry-After`; 503 when the limiter's
   store cannot be reached: fail closed).
5. `BodySizeMiddleware`: the body size (413, from `Content-Length` before anything is read, or
   while a chunked body arrives, before the route sees any of it).

Each is Starlette's pure-ASGI middleware pattern (`__init__(app, **options)`, then
`__call__(scope, receive, send)`), small, and knows nothing of the others but `PRINCIPAL`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kosong.server._limits import MemoryRateLimiter, RateLimiter
from kosong.standard import CATALOG

__all__ = [
    "ANONYMOUS",
    "PRINCIPAL",
    "RETRY_AFTER_OUTAGE",
    "BearerTokenMiddleware",
    "BodySizeMiddleware",
    "CrossSiteMiddleware",
    "HostOriginMiddleware",
    "RateLimitMiddleware",
    "error_body",
    "now_timestamp",
    "route_path",
]

logger = logging.getLogger(__name__)

PRINCIPAL = "kosong.principal"
"""The scope key holding who is calling (the MCP mount reads it too)."""

ANONYMOUS = "anonymous"
"""The principal of a request without a token, where none is needed."""

RETRY_AFTER_OUTAGE = 2
"""The `Retry-After` (seconds) of a 503 answered because a store cannot be reached."""

Headers = Iterable[tuple[bytes, bytes]]


def error_body(code: str, message: str, **details: Any) -> bytes:
    """The JSON of an error that is not a tool's (refused before any tool ran)."""
    spec = CATALOG.get(code)
    error = {"code": code, "message": message, "retryable": bool(spec and spec.retryable),
             **details}  # fmt: skip
    body = {"success": False, "status": "error", "error": error}
    body["metadata"] = {"timestamp": now_timestamp()}
    return json.dumps(body).encode()


def now_timestamp() -> str:
    """Now, in ISO 8601 with milliseconds, UTC (`2026-01-01T00:00:00.000Z`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def refuse(
    scope: Scope,
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: Headers = (),
    before_end: Callable[[], Awaitable[None]] | None = None,
    **details: Any,
) -> None:
    """Answer the request with an error envelope (over HTTP, or a WebSocket's handshake)."""
    body = error_body(code, message, **details)
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    if scope["type"] == "websocket":
        await send({"type": "websocket.http.response.start", "status": status,
                    "headers": all_headers})  # fmt: skip
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    if before_end is None:
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.body", "body": body, "more_body": True})
    await before_end()
    await send({"type": "http.response.body", "body": b""})


def route_path(scope: Scope) -> str:
    """The path the routes see: without the `root_path` the app is mounted under, if any."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def _host_name(value: str) -> str:
    """`example.com` of `example.com:8000`, `[::1]` of `[::1]:8000`, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def _origin(value: str) -> str:
    return value.strip().lower().rstrip("/")


class HostOriginMiddleware:
    """Refuses a `Host` not allowed (421) and an `Origin` not allowed (403).

    Hosts are names at any port; `"*"` allows any. An origin is allowed when listed, or when
    its host is an allowed host (a page of this server, at any port); `"*"` allows any.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Collection[str],
        origins: Collection[str] = (),
        rejected: Counter[str] | None = None,
    ) -> None:
        """Pass requests to `app` whose `Host` is one of `hosts` and `Origin` allowed."""
        self.app = app
        self._any_host = "*" in hosts
        self._hosts = frozenset(h.lower() for h in hosts if h != "*")
        self._any_origin = "*" in origins
        self._origins = frozenset(_origin(o) for o in origins)
        self.rejected = rejected if rejected is not None else Counter[str]()

    def _origin_ok(self, origin: str) -> bool:
        origin = _origin(origin)
        if self._any_origin or origin in self._origins:
            return True
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and _host_name(rest) in self._hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check `Host` and `Origin`, then pass the request on."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        for key, value in scope["headers"]:
            if key == b"host":
                host = value
            elif key == b"origin":
                origin = value
        if not self._any_host and (
            host is None or _host_name(host.decode("latin-1")) not in self._hosts
        ):
            self.rejected["host"] += 1
            await refuse(
                scope, send, 421, "PERMISSION_DENIED",
                "this server does not answer to that Host; start it with the host name allowed "
                "(--allow-host)",
            )  # fmt: skip
            return
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            self.rejected["origin"] += 1
            await refuse(
                scope, send, 403, "PERMISSION_DENIED",
                "requests from this Origin are not allowed (--allow-origin)",
            )  # fmt: skip
            return
        await self.app(scope, receive, send)


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TRUSTED_SITES = frozenset({b"same-origin", b"none"})


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.partition(b";")[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and
                                            media.endswith(b"+json"))  # fmt: skip


class CrossSiteMiddleware:
    """No page of another site can make a request here that runs or changes something.

    Such a request (any method but GET, HEAD and OPTIONS; and a GET or HEAD that `starts`
    something, such as a run) is refused with 403 when the browser marks it as coming from
    another site (`Sec-Fetch-Site: cross-site`, or `same-site` without an `Origin` listed in
    `origins`: "site" ignores the port, so another port of localhost is the same site).

    Browsers that send no `Sec-Fetch-Site` (older ones, or a plain-HTTP host that is not this
    machine) still cannot reach it with a "simple" request, the only kind a page of another
    origin may send without the browser asking the server first (a CORS preflight, which
    this server never grants): a POST must declare a JSON body (415 otherwise: a form or a
    no-cors `fetch` can only send form or text bodies), and a GET that `starts` something
    must carry a header no such request can: `Sec-Fetch-Site` (`same-origin`, or `none`: what
    a browser sends for an address its user typed, and what a program may send) or a bearer
    `Authorization` (403 otherwise).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        starts: Callable[[Scope], bool],
        origins: Collection[str] = (),
        rejected: Counter[str] | None = None,
    ) -> None:
        """Guard `app`; `starts(scope)` says whether a GET or HEAD request starts something."""
        self.app = app
        self._starts = starts
        self._listed = frozenset(_origin(o).encode("latin-1") for o in origins if o != "*")
        self.rejected = rejected if rejected is not None else Counter[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request from another site that would act; pass the others on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        safe = method in _SAFE_METHODS
        if safe and not self._starts(scope):
            await self.app(scope, receive, send)
            return
        site = origin = content_type = authorization = None
        for key, value in scope["headers"]:
            if key == b"sec-fetch-site":
                site = value.strip().lower()
            elif key == b"origin":
                origin = value
            elif key == b"content-type":
                content_type = value
            elif key == b"authorization":
                authorization = value
        listed = origin is not None and _origin(origin.decode("latin-1")).encode() in self._listed
        if site == b"cross-site" or (site == b"same-site" and not listed):
            await self._refuse(
                scope, send, 403,
                f"a page of another site cannot run or change anything here (Sec-Fetch-Site: "
                f"{site.decode('latin-1')}); allow its origin with --allow-origin if it is yours",
            )  # fmt: skip
            return
        if method == "POST" and not _is_json(content_type):
            await self._refuse(
                scope, send, 415,
                "a POST body must be declared JSON (Content-Type: application/json), even when "
                "empty: a page of another site can send forms and text, not JSON",
            )  # fmt: skip
            return
        if safe and not (
            site in _TRUSTED_SITES
            or listed
            or (authorization is not None and authorization[:7].lower() == b"bearer ")
        ):
            await self._refuse(
                scope, send, 403,
                "starting a run with GET needs a header that a page of another site cannot "
                "send: Sec-Fetch-Site (a browser sends it; a program may send "
                "'Sec-Fetch-Site: none') or a bearer Authorization; or POST a JSON body",
            )  # fmt: skip
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, message: str) -> None:
        self.rejected["cross_site"] += 1
        code = "INVALID_PARAMS" if status == 415 else "PERMISSION_DENIED"
        await refuse(scope, send, status, code, message)


class BearerTokenMiddleware:
    """Puts who is calling in the scope (`PRINCIPAL`); with tokens, refuses others (401).

    Tokens are compared by their digests: a dict lookup whose time does not depend on how
    much of a wrong token matches. The `exempt` paths (exact) need no token.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        principals: Mapping[str, str],
        exempt: Collection[str] = (),
        rejected: Counter[str] | None = None,
    ) -> None:
        """Accept the tokens of `principals` (token -> principal); none: anyone, anonymous."""
        self.app = app
        self._principals = {
            hashlib.sha256(token.encode()).digest(): name for token, name in principals.items()
        }
        self._exempt = frozenset(exempt)
        self.rejected = rejected if rejected is not None else Counter[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Find the request's principal, or refuse it."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self._principals and route_path(scope) not in self._exempt:
            authorization = _header(scope, b"authorization")
            found = None
            if authorization is not None:
                scheme, _, token = authorization.partition(b" ")
                if scheme.lower() == b"bearer" and token.strip():
                    found = self._principals.get(hashlib.sha256(token.strip()).digest())
            if found is None:
                self.rejected["auth"] += 1
                challenge = 'Bearer realm="kosong"'
                if authorization is not None:
                    challenge += ', error="invalid_token"'
                await refuse(
                    scope, send, 401, "UNAUTHORIZED",
                    "a valid bearer token is needed (Authorization: Bearer <token>)",
                    [(b"www-authenticate", challenge.encode())],
                )  # fmt: skip
                return
            principal = found
        scope[PRINCIPAL] = principal
        await self.app(scope, receive, send)


class RateLimitMiddleware:
    """Takes one request from the principal's bucket: 429 with `Retry-After` when empty.

    The bucket is the principal's, or the client address's for anonymous requests. When the
    limiter cannot answer (its Redis is down), the request is refused with 503 and
    `Retry-After`: fail closed. The `exempt` paths (exact) are not limited.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        limiter: RateLimiter,
        exempt: Collection[str] = (),
        rejected: Counter[str] | None = None,
    ) -> None:
        """Limit the requests to `app` with `limiter`."""
        self.app = app
        self._limiter = limiter
        # The in-memory limiter answers without a coroutine: no await on every request.
        self._now = limiter.acquire_now if isinstance(limiter, MemoryRateLimiter) else None
        self._exempt = frozenset(exempt)
        self.rejected = rejected if rejected is not None else Counter[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Take a request from the bucket, or refuse it."""
        if scope["type"] not in ("http", "websocket") or route_path(scope) in self._exempt:
            await self.app(scope, receive, send)
            return
        principal: str = scope.get(PRINCIPAL, ANONYMOUS)
        key = principal if principal != ANONYMOUS else f"ip:{(scope.get('client') or ('?',))[0]}"
        try:
            wait = self._now(key) if self._now is not None else await self._limiter.acquire(key)
        except Exception as e:
            self.rejected["unavailable"] += 1
            logger.warning("The rate limiter cannot answer: %s", e or type(e).__name__)
            await refuse(
                scope, send, 503, "NETWORK_ERROR",
                "the rate limiter's store cannot be reached; try again shortly",
                [(b"retry-after", str(RETRY_AFTER_OUTAGE).encode())],
                retry_after=RETRY_AFTER_OUTAGE,
            )  # fmt: skip
            return
        if wait > 0:
            self.rejected["rate"] += 1
            seconds = max(1, math.ceil(wait))
            await refuse(
                scope, send, 429, "RATE_LIMITED",
                f"too many requests; retry after {seconds} seconds",
                [(b"retry-after", str(seconds).encode())], retry_after=seconds,
            )  # fmt: skip
            return
        await self.app(scope, receive, send)


_DISCARD_BYTES = 64 * 1024 * 1024
_DISCARD_SECONDS = 2.0


class BodySizeMiddleware:
    """Refuses a body over `max_body` bytes (413) before the route reads any of it."""

    def __init__(
        self, app: ASGIApp, *, max_body: int, rejected: Counter[str] | None = None
    ) -> None:
        """Pass on requests to `app` whose body is at most `max_body` bytes."""
        self.app = app
        self._max_body = max_body
        self.rejected = rejected if rejected is not None else Counter[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the body's size (announced, or as it arrives), then pass the request on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = chunked = None
        for key, value in scope["headers"]:
            if key == b"content-length":
                length = value
            elif key == b"transfer-encoding":
                chunked = value
        if length is not None:
            # At most 19 digits: a longer number is over any limit, and int() of thousands
            # of digits is refused (or slow).
            if not length.isdigit() or len(length) > 19 or int(length) > self._max_body:
                await self._too_large(scope, send, receive)
                return
        elif chunked is not None:
            body = await self._read_chunked(receive)
            if body is None:
                await self._too_large(scope, send, receive)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _read_chunked(self, receive: Receive) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)  # the client left; the route will see it leave
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    async def _too_large(self, scope: Scope, send: Send, receive: Receive) -> None:
        self.rejected["body"] += 1
        mib = self._max_body / (1024 * 1024)
        # The whole answer is sent, but not marked complete until what the client is still
        # sending was read and dropped (a little of it, for a short while): closing the
        # connection with unread data would reset it before a client that writes its whole
        # body first reads the answer.
        await refuse(
            scope, send, 413, "INVALID_PARAMS",
            f"the request body is larger than the limit of {self._max_body} bytes ({mib:g} MiB)",
            [(b"connection", b"close")], before_end=lambda: _discard(receive),
        )  # fmt: skip


async def _discard(
    receive: Receive, most: int = _DISCARD_BYTES, seconds: float = _DISCARD_SECONDS
) -> None:
    """Read and drop the rest of a request body: up to `most` bytes, `seconds` at most."""
    try:
        async with asyncio.timeout(seconds):
            while most > 0:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
                most -= len(message.get("body", b""))
    except TimeoutError:
        return


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` whole, then what `receive` gives (the disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
