"""Reading the server's SSE streams in tests, with httpx and httpx-sse."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource


@dataclass
class Stream:
    """What a client saw of one SSE response."""

    status: int
    headers: httpx.Headers
    events: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(event, id, data) of each event with data."""
    last_id: str = ""
    retry: int | None = None

    @property
    def kinds(self) -> list[str]:
        return [e[0] for e in self.events]

    @property
    def ids(self) -> list[str]:
        return [e[1] for e in self.events]

    @property
    def final(self) -> dict[str, Any]:
        assert self.events and self.events[-1][0] in ("tool_result", "tool_error"), self.kinds
        return self.events[-1][2]


async def read_sse(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    stop_after: int | None = None,
    last_event_id: str | None = None,
    **kwargs: Any,
) -> Stream:
    """Read a stream to its end, or drop the connection after `stop_after` data events."""
    headers = dict(kwargs.pop("headers", {}))
    if method == "POST" and "json" not in kwargs:  # the server takes POST bodies declared JSON
        headers.setdefault("Content-Type", "application/json")
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with client.stream(method, url, headers=headers, **kwargs) as response:
        stream = Stream(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            return stream
        async for sse in EventSource(response).aiter_sse():
            if sse.retry is not None:
                stream.retry = sse.retry
            if sse.id:
                stream.last_id = sse.id
            if stop_after == 0:  # the stream's first (id-only) event says the run started
                break
            if not sse.data:
                continue
            stream.events.append((sse.event, sse.id, json.loads(sse.data)))
            if stop_after is not None and len(stream.events) >= stop_after:
                break
    return stream
