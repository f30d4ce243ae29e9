"""The size of a request's body: refused past the limit before the route reads any of it."""

from __future__ import annotations

import asyncio
from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kosong.server._guard import refuse

__all__ = ["BodySizeMiddleware"]

_DISCARD_BYTES = 64 * 1024 * 1024
_DISCARD_SECONDS = 2.0


class BodySizeMiddleware:
    """Refuses a body over `max_body` bytes (413) before the route reads any of it."""

    def __init__(self, app: ASGIApp, *, max_body: int, rejected: Counter[str]) -> None:
        """Pass on requests to `app` whose body is at most `max_body` bytes."""
        self.app = app
        self._max_body = max_body
        self.rejected = rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the body's size (announced, or as it arrives), then pass the request on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"])
        length = sent.get(b"content-length")
        if length is not None:
            # At most 19 digits: a longer number is over any limit, and int() of thousands
            # of digits is refused (or slow).
            if not length.isdigit() or len(length) > 19 or int(length) > self._max_body:
                await self._too_large(scope, send, receive)
                return
        elif b"transfer-encoding" in sent:
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


async def _discard(receive: Receive) -> None:
    """Read and drop the rest of a request body: up to `_DISCARD_BYTES`, for a short while."""
    most = _DISCARD_BYTES
    try:
        async with asyncio.timeout(_DISCARD_SECONDS):
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
