"""MCP spoken by hand over HTTP, for what the SDK's client never sends or never shows.

- `Session`: a handshake-era session (initialize, calls, resumption with `Last-Event-ID`);
- `sse_events` and `results`: the events of an SSE body, and the JSON-RPC messages in them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

VERSION = "2025-11-25"  # resumption (priming events, Last-Event-ID) came with this version


def sse_events(text: str) -> list[dict[str, str]]:
    """The SSE events of a body: each a dict of its fields (a test's parser, not a library's)."""
    events: list[dict[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if ":" in line and not line.startswith(":"):
                key, _, value = line.partition(":")
                fields[key] = fields.get(key, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


def results(events: list[dict[str, str]]) -> list[Any]:
    """The JSON-RPC messages the events carry."""
    return [json.loads(e["data"]) for e in events if e.get("data")]


class Session:
    """A handshake-era session spoken by hand over HTTP (`token`: its bearer token, if any)."""

    def __init__(self, http: httpx.AsyncClient, url: str, token: str | None = None) -> None:
        self.http, self.url, self.id = http, url, ""
        self.auth = {"Authorization": f"Bearer {token}"} if token else {}

    def headers(self, **more: str) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            **self.auth,
        }
        if self.id:
            headers["Mcp-Session-Id"] = self.id
        return {**headers, **more}

    async def initialize(self) -> httpx.Response:
        """Send `initialize` (and nothing after it); the session's id is kept if it opened."""
        init = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {},
                       "clientInfo": {"name": "by-hand", "version": "0"}},
        }  # fmt: skip
        response = await self.http.post(self.url, json=init, headers=self.headers())
        if response.status_code == 200:
            self.id = response.headers["mcp-session-id"]
        return response

    async def open(self) -> Session:
        """Open the session as a client does: `initialize`, then `notifications/initialized`."""
        response = await self.initialize()
        assert response.status_code == 200, response.text
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (
            await self.http.post(self.url, json=note, headers=self.headers())
        ).status_code == 202
        return self

    async def call(self, request_id: int, name: str) -> list[dict[str, str]]:
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": name, "arguments": {}}}  # fmt: skip
        response = await self.http.post(self.url, json=body, headers=self.headers())
        assert response.status_code == 200
        return sse_events(response.text)

    async def ping(self) -> int:
        """The status of a `ping` on the session: 200 while it lives, 404 once it ended."""
        body = {"jsonrpc": "2.0", "id": "ping", "method": "ping"}
        return (await self.http.post(self.url, json=body, headers=self.headers())).status_code

    async def resume(self, last_event_id: str) -> list[dict[str, str]]:
        """GET with Last-Event-ID; the events until the stream ends or a response arrives."""
        seen = ""
        headers = self.headers(**{"Last-Event-ID": last_event_id})
        try:
            async with (
                asyncio.timeout(3),
                self.http.stream("GET", self.url, headers=headers) as response,
            ):
                async for chunk in response.aiter_text():
                    seen += chunk
                    if '"result"' in seen:
                        break
        except TimeoutError:
            pass  # nothing (more) came: what was seen is the answer
        return sse_events(seen)
