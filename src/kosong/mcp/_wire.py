"""A POST's body as `MCPToolServer` reads it before the SDK does: peeked, and its id checked.

The SDK's handshake-era transport takes any JSON-RPC object it cannot read as a request for a
notification (its notification model ignores unknown keys), so a request whose `id` is an
object, an array, a boolean, null or a float was answered `202` and never answered again.
JSON-RPC says such a message is an Invalid Request, answered with `id: null`; MCP says an id
is a string or an integer. `invalid_id_response` answers it so, with the very status and body
the SDK's 2026-era entry gives (which already checks this), so both eras agree.
"""

from __future__ import annotations

import json

from mcp_types import INVALID_REQUEST
from starlette.responses import Response
from starlette.types import Message, Receive

__all__ = ["invalid_id_response", "peek_body"]


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


def invalid_id_response(body: bytes) -> Response | None:
    """A 400 Invalid Request (`id: null`) if `body` is a request with an id of the wrong type.

    A request (an object with a `method`) that has an `id` must give a string or an integer
    (`1.0` is not one, as the SDK's `RequestId` has it); one without `id` is a notification,
    and anything that is not a JSON object is left to the SDK's own errors.
    """
    try:
        decoded: object = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers a parse error
    if not isinstance(decoded, dict) or "method" not in decoded or "id" not in decoded:
        return None
    request_id: object = decoded["id"]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and request_id is not True and request_id is not False
    ):
        return None
    error = {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: a request's id must be a string or an integer",
    }
    return Response(
        json.dumps({"jsonrpc": "2.0", "error": error, "id": None}, separators=(",", ":")),
        status_code=400,
        media_type="application/json",
    )
