"""The checks every request passes before any route: what they share, and their order.

Each check is one pure-ASGI middleware (Starlette's pattern: `__init__(app, **options)`, then
`__call__(scope, receive, send)`), small, in a module of its own. `create_app` lists them in
this order; the first that refuses answers with the standard's error envelope (`refuse`) and
counts the refusal by reason in a `Counter` the app shares (`/metrics`):

1. `HostOriginMiddleware` (`_sites`): an allowed `Host` (421) and `Origin` (403), each header
   the checks read sent once (400).
2. `CrossSiteMiddleware` (`_sites`): nothing that runs or changes something from another site.
3. `BearerTokenMiddleware` (`_auth`): the bearer token (401, 403, 503); it leaves who is
   calling in the scope under `PRINCIPAL`.
4. `RateLimitMiddleware` (`_limits`): the principal's rate (429; 503: fail closed).
5. `BodySizeMiddleware` (`_body`): the body size (413, before the route reads any of it).

They know nothing of each other but `PRINCIPAL`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.types import Scope, Send

from kosong._keys import PRINCIPAL
from kosong._timestamps import now_timestamp
from kosong.standard import CATALOG

__all__ = [
    "ANONYMOUS",
    "PRINCIPAL",
    "RETRY_AFTER_OUTAGE",
    "error_body",
    "header",
    "refuse",
    "refuse_unavailable",
    "route_path",
]

ANONYMOUS = "anonymous"
"""The principal of a request without a token, where none is needed."""

RETRY_AFTER_OUTAGE = 2
"""The `Retry-After` (seconds) of a 503 answered because a store cannot be reached."""

Headers = Iterable[tuple[bytes, bytes]]

logger = logging.getLogger(__name__)


def error_body(code: str, message: str, **details: Any) -> bytes:
    """The JSON of an error that is not a tool's (refused before any tool ran)."""
    spec = CATALOG.get(code)
    error = {"code": code, "message": message, "retryable": bool(spec and spec.retryable),
             **details}  # fmt: skip
    body = {"success": False, "status": "error", "error": error}
    body["metadata"] = {"timestamp": now_timestamp()}
    return json.dumps(body).encode()


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
    # A WebSocket's handshake is refused with an HTTP response too (ASGI's denial response).
    kind = "websocket.http.response" if scope["type"] == "websocket" else "http.response"
    await send({"type": f"{kind}.start", "status": status, "headers": all_headers})
    if before_end is None:
        await send({"type": f"{kind}.body", "body": body})
        return
    await send({"type": f"{kind}.body", "body": body, "more_body": True})
    await before_end()
    await send({"type": f"{kind}.body", "body": b""})


async def refuse_unavailable(
    scope: Scope, send: Send, problem: str, message: str, error: Exception
) -> None:
    """Answer 503 (retry soon): a store the check needs failed (`error`, logged as `problem`)."""
    logger.warning("%s: %s", problem, error or type(error).__name__)
    await refuse(
        scope, send, 503, "NETWORK_ERROR", message,
        [(b"retry-after", str(RETRY_AFTER_OUTAGE).encode())], retry_after=RETRY_AFTER_OUTAGE,
    )  # fmt: skip


def route_path(scope: Scope) -> str:
    """The path the routes see: without the `root_path` the app is mounted under, if any."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the header `name` (lower case), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None
