"""A local HTTP server that answers as the providers' APIs do: SSE streams, errors, drops.

Each test queues `Reply`s; every request takes the next one and is recorded (path, headers,
JSON body). A reply can hold back an event until the test sets an `asyncio.Event` (to prove
what happens before the stream ends), drop the connection mid-stream, or answer an error.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

import pytest
from aiohttp import web
from tests._local import serve_app

SDK_SUBCLASSES_AIOHTTP = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession from ClientSession is discouraged"
    ":DeprecationWarning"
)
"""google-genai subclasses aiohttp's ClientSession when aiohttp is installed, which aiohttp
warns against (the SDK's matter, not ours); tests that let the Gemini client send a request
take that one warning."""


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event; `data` is JSON-encoded unless it is a string."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


@dataclass
class Reply:
    """What the server answers to one request."""

    events: list[str] = field(default_factory=list[str])
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict[str, str])
    body: Any = None
    """A JSON body instead of a stream (for errors)."""
    text: str | None = None
    """A plain-text or HTML body instead of a stream (with `content_type`)."""
    content_type: str = "text/plain"
    drop_after: int | None = None
    """Close the connection, unfinished, after this many events."""
    hold: dict[int, asyncio.Event] = field(default_factory=dict[int, asyncio.Event])
    """Before sending event i, wait until this event is set."""


@dataclass
class Request:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""
    """The query string (`alt=sse`)."""


class WireServer:
    """The server; `url` is its base URL (`http://127.0.0.1:PORT`)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Request] = []
        self.sent_all: list[asyncio.Event] = []
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.closers: list[Callable[[], Awaitable[None]]] = []
        """Called when the server stops (say, the clients of the providers under test)."""

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.requests.append(
            Request(request.path, dict(request.headers), body, request.query_string)
        )
        if not self.replies:
            return web.json_response({"error": {"message": "no reply queued"}}, status=599)
        reply = self.replies.popleft()
        if reply.text is not None:
            return web.Response(
                text=reply.text,
                status=reply.status,
                headers=reply.headers,
                content_type=reply.content_type,
            )
        if reply.body is not None or not reply.events:
            return web.json_response(reply.body or {}, status=reply.status, headers=reply.headers)
        response = web.StreamResponse(
            status=reply.status,
            headers={"Content-Type": "text/event-stream", **reply.headers},
        )
        await response.prepare(request)
        for i, event in enumerate(reply.events):
            if i in reply.hold:
                await asyncio.wait_for(reply.hold[i].wait(), timeout=10)
            if reply.drop_after == i:
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(event.encode())
        await response.write_eof()
        return response

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner, self.url = await serve_app(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for close in self.closers:
            await close()
        assert self._runner is not None
        await self._runner.cleanup()


# --- OpenAI Chat Completions -----------------------------------------------------------------


def chat_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    id: str = "chatcmpl-1",
) -> str:
    """One Chat Completions stream chunk, as the API sends it."""
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    chunk: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "test-model",
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = usage
    return sse(chunk)


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    return {"tool_calls": [call]}


USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 20},
}

DONE = sse("[DONE]")


def chat_text_reply(*pieces: str, **reply: Any) -> Reply:
    events = [chat_chunk({"role": "assistant", "content": ""})]
    events += [chat_chunk({"content": p}) for p in pieces]
    events += [chat_chunk({}, finish_reason="stop"), chat_chunk(None, usage=USAGE), DONE]
    return Reply(events=events, **reply)


# --- Anthropic Messages --------------------------------------------------------------------


def anthropic_event(data: dict[str, Any]) -> str:
    return sse(data, event=data["type"])


def anthropic_reply(
    blocks: list[dict[str, Any]], stop_reason: str = "end_turn", **reply: Any
) -> Reply:
    """A Messages stream; each block is {"type": "text"|"thinking"|"tool_use", ...} with its
    pieces in "pieces" (text, thinking or partial JSON), and "signature" for thinking."""
    events = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 1,
                              "cache_read_input_tokens": 40, "cache_creation_input_tokens": 10},
                },
            }
        ),
        sse({"type": "ping"}, event="ping"),
    ]  # fmt: skip
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in block["pieces"]]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in block["pieces"]]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in block["pieces"]]
        events.append(
            anthropic_event({"type": "content_block_start", "index": index, "content_block": start})
        )
        events += [
            anthropic_event({"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(anthropic_event({"type": "content_block_stop", "index": index}))
    events.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 42},
            }
        )
    )
    events.append(anthropic_event({"type": "message_stop"}))
    return Reply(events=events, **reply)


# --- OpenAI Responses ----------------------------------------------------------------------


def _response(status: str, output: list[Any], usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": "resp_1", "object": "response", "created_at": 1700000000, "model": "test-model",
        "status": status, "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "usage": usage, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
    }  # fmt: skip


def responses_reply(items: list[dict[str, Any]], **reply: Any) -> Reply:
    """A Responses stream; items are {"type": "message", "pieces": [...]} or
    {"type": "function_call", "call_id", "name", "pieces": [...]}, or reasoning summaries."""
    seq = 0

    def event(data: dict[str, Any]) -> str:
        nonlocal seq
        seq += 1
        return sse({**data, "sequence_number": seq}, event=data["type"])

    events = [event({"type": "response.created", "response": _response("in_progress", [], None)})]
    for index, item in enumerate(items):
        item_id = f"item_{index}"
        if item["type"] == "message":
            added = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            events.append(
                event({"type": "response.output_item.added", "output_index": index, "item": added})
            )
            for piece in item["pieces"]:
                events.append(
                    event(
                        {
                            "type": "response.output_text.delta",
                            "item_id": item_id,
                            "output_index": index,
                            "content_index": 0,
                            "delta": piece,
                            "logprobs": [],
                        }
                    )
                )
            done = {
                **added,
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "".join(item["pieces"]), "annotations": []}
                ],
            }
        elif item["type"] == "reasoning":
            added = {"type": "reasoning", "id": item_id, "summary": []}
            events.append(
                event({"type": "response.output_item.added", "output_index": index, "item": added})
            )
            for piece in item["pieces"]:
                events.append(
                    event(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": item_id,
                            "output_index": index,
                            "summary_index": 0,
                            "delta": piece,
                        }
                    )
                )
            done = added
        else:
            added = {
                "type": "function_call",
                "id": item_id,
                "call_id": item["call_id"],
                "name": item["name"],
                "arguments": "",
                "status": "in_progress",
            }
            events.append(
                event({"type": "response.output_item.added", "output_index": index, "item": added})
            )
            for piece in item["pieces"]:
                events.append(
                    event(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": item_id,
                            "output_index": index,
                            "delta": piece,
                        }
                    )
                )
            done = {**added, "arguments": "".join(item["pieces"]), "status": "completed"}
        events.append(
            event({"type": "response.output_item.done", "output_index": index, "item": done})
        )
    usage = {
        "input_tokens": 90,
        "output_tokens": 12,
        "total_tokens": 102,
        "input_tokens_details": {"cached_tokens": 30},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    events.append(
        event({"type": "response.completed", "response": _response("completed", [], usage)})
    )
    return Reply(events=events, **reply)


# --- Gemini (generateContent / streamGenerateContent) -------------------------------------


GEMINI_USAGE = {
    "promptTokenCount": 120,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 12,
    "cachedContentTokenCount": 100,
    "totalTokenCount": 162,
}


def gemini_chunk(
    parts: list[dict[str, Any]],
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    response_id: str = "resp-gemini-1",
) -> dict[str, Any]:
    """One `GenerateContentResponse` (a whole answer, or one chunk of a stream)."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    chunk: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-3.8-flash",
        "responseId": response_id,
    }
    if usage is not None:
        chunk["usageMetadata"] = usage
    return chunk


def gemini_reply(*chunks: list[dict[str, Any]], **reply: Any) -> Reply:
    """A `streamGenerateContent?alt=sse` stream: one chunk per list of parts, then a last
    chunk with an empty text part, `finishReason: STOP` and the usage."""
    events = [sse(gemini_chunk(parts)) for parts in chunks]
    events.append(sse(gemini_chunk([{"text": ""}], finish_reason="STOP", usage=GEMINI_USAGE)))
    return Reply(events=events, **reply)
