"""A POST's body as `MCPToolServer` reads it before the SDK: peeked, its id checked, refused.

The SDK's handshake-era transport takes a JSON-RPC object it cannot read for a notification
(its model ignores unknown keys), so a request whose `id` is an object, an array, a boolean,
null or a float was answered `202` and never again. JSON-RPC makes it an Invalid Request
(`id: null`), MCP an id a string or an integer; `invalid_id_response` answers it with the
status and body of the SDK's 2026-era entry (which checks this already), so both eras agree.
"""

from __future__ import annotations

import json
from typing import cast

from mcp_types import INVALID_REQUEST
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive

__all__ = ["invalid_id_response", "peek_body", "read_message", "refusal"]


async def peek_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """The request's whole body (None if over `limit` bytes), and a `receive` giving it again.

    Only up to `limit` bytes are buffered: a bigger body is left to the SDK (which refuses one
    over its own limit with 413), and so is a client that leaves before sending all of it.
    """
    chunks: list[Message] = []
    size = 0
    while True:
        message = await receive()
        chunks.append(message)
        if message["type"] != "http.request":
            break  # the client left: let the SDK see it
        size += len(message.get("body", b""))
        if size > limit or not message.get("more_body", False):
            break
    complete = chunks[-1]["type"] == "http.request" and not chunks[-1].get("more_body", False)
    head = b"".join(m.get("body", b"") for m in chunks) if complete and size <= limit else None

    async def replay() -> Message:
        if chunks:
            return chunks.pop(0)
        return await receive()

    return head, replay


def read_message(body: bytes | None) -> dict[str, object] | None:
    """The JSON object `body` holds; None if it holds none (or was too big to read).

    What is not one object is left to the SDK, which answers it with its own errors.
    """
    if body is None:
        return None
    try:
        decoded: object = json.loads(body.decode())  # UTF-8 only, as the SDK reads it
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, object], decoded) if isinstance(decoded, dict) else None


def invalid_id_response(message: dict[str, object] | None) -> Response | None:
    """A 400 Invalid Request (`id: null`) if `message` is a request with an id of the wrong type.

    A request (an object with a `method`) that has an `id` must give a string or an integer
    (`1.0` is not one, as the SDK's `RequestId` has it); one without `id` is a notification.
    """
    if message is None or "method" not in message or "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and request_id is not True and request_id is not False
    ):
        return None
    return refusal(400, "Invalid Request: a request's id must be a string or an integer")


def refusal(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """A JSON-RPC Invalid Request error (`id: null`), answered with the HTTP `status`."""
    error = {"code": INVALID_REQUEST, "message": message}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status, headers)
