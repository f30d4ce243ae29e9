"""`Guard`: the checks every request passes before any route, whatever is mounted.

In order: the `Host` against the allowed host names (421), the `Origin`, when sent, against
the allowed origins (403), the bearer token when tokens are set (401 with `WWW-Authenticate`;
`/healthz` is exempt), the rate limit of the principal (429 with `Retry-After`; `/healthz`
is exempt), and the body size (413, from `Content-Length` before anything is read, or while
a chunked body arrives, before the route sees any of it).

The principal (the token's name, or `"anonymous"`) is left in the scope under `PRINCIPAL`
for the routes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any

from kosong.server._config import ServerConfig
from kosong.server._limits import MemoryRateLimiter, RateLimiter

__all__ = ["PRINCIPAL", "Guard", "error_body", "now_timestamp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL = "kosong.principal"
"""The scope key holding who is calling."""

ANONYMOUS = "anonymous"


def error_body(code: str, message: str, **details: Any) -> bytes:
    """The JSON of an error that is not a tool's (refused before any tool ran)."""
    retryable = code in ("RATE_LIMITED", "NETWORK_ERROR", "TIMEOUT")
    error = {"code": code, "message": message, "retryable": retryable, **details}
    body = {"success": False, "status": "error", "error": error}
    body["metadata"] = {"timestamp": now_timestamp()}
    return json.dumps(body).encode()


def now_timestamp() -> str:
    """Now, in ISO 8601 with milliseconds, UTC (`2026-01-01T00:00:00.000Z`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _host_name(value: str) -> str:
    """`example.com` of `example.com:8000`, `[::1]` of `[::1]:8000`, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class Guard:
    """ASGI middleware applying the config's checks to every request; see the module doc."""

    def __init__(
        self, app: ASGIApp, config: ServerConfig, limiter: RateLimiter | None = None
    ) -> None:
        """Guard `app` as `config` says, taking requests from `limiter` (if any)."""
        self.app = app
        self._any_host = "*" in config.allowed_hosts
        self._hosts = frozenset(h.lower() for h in config.allowed_hosts if h != "*")
        self._any_origin = "*" in config.allowed_origins
        self._origins = frozenset(o.lower().rstrip("/") for o in config.allowed_origins)
        # Tokens are compared by their digests: a dict lookup whose time does not depend on
        # how much of a wrong token matches.
        self._principals = {
            hashlib.sha256(token.encode()).digest(): name
            for token, name in config.principals().items()
        }
        self._max_body = config.max_body
        self._limiter = limiter
        self._limit_now = limiter.acquire_now if isinstance(limiter, MemoryRateLimiter) else None
        self.rejected: Counter[str] = Counter()
        """Requests refused, by reason (host, origin, auth, rate, body)."""

    def _origin_ok(self, origin: str) -> bool:
        if self._any_origin:
            return True
        origin = origin.lower().rstrip("/")
        if origin in self._origins:
            return True
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and _host_name(rest) in self._hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then pass it on (or answer it with the refusal)."""
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        host = origin = authorization = length = chunked = None
        for key, value in scope["headers"]:
            if key == b"host":
                host = value
            elif key == b"origin":
                origin = value
            elif key == b"authorization":
                authorization = value
            elif key == b"content-length":
                length = value
            elif key == b"transfer-encoding":
                chunked = value
        if not self._any_host and (
            host is None or _host_name(host.decode("latin-1")) not in self._hosts
        ):
            await self._refuse(
                scope, send, "host", 421, "PERMISSION_DENIED",
                "this server does not answer to that Host; start it with the host name allowed "
                "(--allow-host)",
            )  # fmt: skip
            return
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            await self._refuse(
                scope, send, "origin", 403, "PERMISSION_DENIED",
                "requests from this Origin are not allowed (--allow-origin)",
            )  # fmt: skip
            return
        path: str = scope["path"]
        exempt = path == "/healthz"
        principal = ANONYMOUS
        if self._principals and not exempt:
            found = None
            if authorization is not None:
                scheme, _, token = authorization.partition(b" ")
                if scheme.lower() == b"bearer" and token.strip():
                    found = self._principals.get(hashlib.sha256(token.strip()).digest())
            if found is None:
                challenge = 'Bearer realm="kosong"'
                if authorization is not None:
                    challenge += ', error="invalid_token"'
                await self._refuse(
                    scope, send, "auth", 401, "UNAUTHORIZED",
                    "a valid bearer token is needed (Authorization: Bearer <token>)",
                    [(b"www-authenticate", challenge.encode())],
                )  # fmt: skip
                return
            principal = found
        scope[PRINCIPAL] = principal
        if self._limiter is not None and not exempt:
            key = (
                principal if principal != ANONYMOUS else f"ip:{(scope.get('client') or ('?',))[0]}"
            )
            limit_now = self._limit_now
            wait = limit_now(key) if limit_now is not None else await self._limiter.acquire(key)
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                await self._refuse(
                    scope, send, "rate", 429, "RATE_LIMITED",
                    f"too many requests; retry after {seconds} seconds",
                    [(b"retry-after", str(seconds).encode())], retry_after=seconds,
                )  # fmt: skip
                return
        if kind == "http":
            if length is not None:
                if not length.isdigit() or int(length) > self._max_body:
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
        mib = self._max_body / (1024 * 1024)
        # The whole answer is sent, but not marked complete until what the client is still
        # sending was read and dropped (a little of it, for a short while): closing the
        # connection with unread data would reset it before a client that writes its whole
        # body first reads the answer.
        await self._refuse(
            scope, send, "body", 413, "INVALID_PARAMS",
            f"the request body is larger than the limit of {self._max_body} bytes ({mib:g} MiB)",
            [(b"connection", b"close")], _before_end=lambda: _discard(receive),
        )  # fmt: skip

    async def _refuse(
        self,
        scope: Scope,
        send: Send,
        reason: str,
        status: int,
        code: str,
        message: str,
        headers: list[tuple[bytes, bytes]] | None = None,
        _before_end: Callable[[], Awaitable[None]] | None = None,
        **details: Any,
    ) -> None:
        self.rejected[reason] += 1
        body = error_body(code, message, **details)
        all_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *(headers or []),
        ]
        if scope["type"] == "websocket":
            await send({"type": "websocket.http.response.start", "status": status,
                        "headers": all_headers})  # fmt: skip
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": status, "headers": all_headers})
        if _before_end is None:
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.body", "body": body, "more_body": True})
        await _before_end()
        await send({"type": "http.response.body", "body": b""})


_DISCARD_BYTES = 64 * 1024 * 1024
_DISCARD_SECONDS = 2.0


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
