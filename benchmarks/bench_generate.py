"""What `generate()` costs over iterating the raw SDK stream, and how soon tools start.

A local server (a separate process, so its work is not counted) streams a Chat Completions
answer of 2,000 chunks: 1,000 text fragments, then 10 tool calls of 100 fragments each. Timed,
in one run, alternating, medians of repeats:

- raw: `openai.AsyncOpenAI().chat.completions.create(stream=True)` iterated to the end,
  touching each chunk's delta (the floor: what any client pays for the stream);
- generate: `kosong.generate(OpenAIChat, ...)` on the same answer, merging every fragment,
  assembling calls by index, calling `on_tool_call` as each completes;
- step: `kosong.step(...)` with a SimpleToolset, so each call's tool starts while the stream
  goes on. For each call, the time from the chunk that completes it (the next call's first
  chunk, or the finish chunk for the last call) to its tool starting is reported, and every
  tool must start before the stream ends. The same is measured again replaying the SDK's
  chunk objects of one answer in-process (no network, no SDK parsing), to show kosong's own
  part of that time.

Run: `.venv/bin/python benchmarks/bench_generate.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import openai

from kosong import generate, step
from kosong.chat_provider.openai import OpenAIChat
from kosong.message import Message, ToolCall
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset

TEXT_CHUNKS = 1000
CALLS = 10
FRAGMENTS = 100  # per call, the first one carrying its id and name

SERVER = r"""
import sys
from aiohttp import web

body = open(sys.argv[1], "rb").read().split(b"\n\n")[:-1]

async def handle(request):
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for i in range(0, len(body), 100):  # a hundred events per write
        await response.write(b"".join(e + b"\n\n" for e in body[i : i + 100]))
    await response.write_eof()
    return response

app = web.Application()
app.router.add_post("/v1/chat/completions", handle)
ready = lambda *_: print("ready", flush=True)  # noqa: E731
web.run_app(app, host="127.0.0.1", port=int(sys.argv[2]), print=ready)
"""


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    data: dict[str, Any] = {
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices
    }  # fmt: skip
    if usage:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n"


def answer() -> tuple[str, list[int]]:
    """The SSE body, and for each call the index of the chunk that completes it."""
    events = [_chunk({"role": "assistant", "content": "word "}) for _ in range(TEXT_CHUNKS)]
    completing: list[int] = []
    for call in range(CALLS):
        if call:
            completing.append(len(events))
        head = {"name": "echo", "arguments": '{"text": "'}
        first = {"index": call, "id": f"call_{call}", "type": "function", "function": head}
        events.append(_chunk({"tool_calls": [first]}))
        for _ in range(FRAGMENTS - 2):
            events.append(
                _chunk({"tool_calls": [{"index": call, "function": {"arguments": "abcde"}}]})
            )
        events.append(_chunk({"tool_calls": [{"index": call, "function": {"arguments": '"}'}}]}))
    completing.append(len(events))
    events.append(_chunk({}, finish="tool_calls"))
    events.append(
        _chunk(None, usage={"prompt_tokens": 10, "completion_tokens": 2000, "total_tokens": 2010})
    )
    events.append("data: [DONE]\n\n")
    assert len(events) - 3 == TEXT_CHUNKS + CALLS * FRAGMENTS
    return "".join(events), completing


class Replay:
    """Chunk objects the SDK built, streamed again with no network; `last` keeps a live run's."""

    last: list[Any] = []
    response = None

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self._chunks:
            yield chunk


class Stamped:
    """Wraps the SDK stream: the time each chunk reached our code, and the end of the stream."""

    def __init__(self, stream: Any, stamps: list[float]) -> None:
        self._stream = stream
        self.response = stream.response
        self._stamps = stamps

    async def __aiter__(self) -> Any:
        Replay.last = []
        async for chunk in self._stream:
            self._stamps.append(time.perf_counter())
            Replay.last.append(chunk)
            yield chunk
        self._stamps.append(time.perf_counter())  # the end of the stream


def main(repeats: int) -> None:
    import socket
    import tempfile

    body, completing = answer()
    with tempfile.NamedTemporaryFile("w", suffix=".sse", delete=False) as f:
        f.write(body)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-c", SERVER, f.name, str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and "ready" in server.stdout.readline()
        asyncio.run(measure(f"http://127.0.0.1:{port}/v1", completing, repeats))
    finally:
        server.terminate()
        server.wait(timeout=10)


async def measure(url: str, completing: list[int], repeats: int) -> None:
    client = openai.AsyncOpenAI(api_key="k", base_url=url)
    provider = OpenAIChat(model="m", api_key="k", base_url=url)
    history = [Message(role="user", content="go")]
    messages: Any = [{"role": "user", "content": "go"}]

    async def raw() -> None:
        stream = await client.chat.completions.create(
            model="m",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            for choice in chunk.choices:
                _ = choice.delta

    calls: list[ToolCall] = []

    async def ours() -> None:
        calls.clear()
        result = await generate(provider, "", [], history, on_tool_call=calls.append)
        assert len(result.message.tool_calls or []) == CALLS

    timings: dict[str, list[float]] = {"raw": [], "generate": []}
    for _ in range(3):  # warm up both paths
        await raw()
        await ours()
    for _ in range(repeats):
        for name, run in (("raw", raw), ("generate", ours)):
            start = time.perf_counter()
            await run()
            timings[name].append(time.perf_counter() - start)

    # Latency: from the chunk completing a call to its tool starting.
    latencies: list[float] = []
    before_end = 0
    started: dict[str, float] = {}

    @tool
    async def echo(text: str) -> str:
        """Echo."""
        started[f"{len(started)}"] = time.perf_counter()
        return text

    toolset = SimpleToolset([echo])
    original = provider.client.chat.completions.create
    replayed: list[Any] = []  # the SDK's chunk objects of one answer, for the in-process run
    in_process: list[float] = []
    for replay in [False] * repeats + [True] * repeats:
        stamps: list[float] = []

        async def create(**kwargs: Any) -> Any:
            if replay:  # noqa: B023  # the same chunks without the network and the SDK's parsing
                return Stamped(Replay(replayed), stamps)  # noqa: B023
            return Stamped(await original(**kwargs), stamps)  # noqa: B023

        provider.client.chat.completions.create = create
        started.clear()
        result = await step(provider, "", toolset, history)
        await result.tool_results()
        end = stamps[-1]
        for call, chunk_index in enumerate(completing):
            delay = started[str(call)] - stamps[chunk_index]
            (in_process if replay else latencies).append(delay)
            before_end += started[str(call)] < end
        if not replayed:
            replayed.extend(Replay.last)
    provider.client.chat.completions.create = original
    await client.close()
    await provider.aclose()

    raw_ms = statistics.median(timings["raw"]) * 1e3
    ours_ms = statistics.median(timings["generate"]) * 1e3
    python = sys.version.split()[0]
    print(
        f"2,000-chunk answer with {CALLS} tool calls, {repeats} repeats, medians (Python {python})"
    )
    print("| path | ms per answer | (min) | vs raw |")
    print("|---|---:|---:|---:|")
    print(f"| raw SDK stream (floor) | {raw_ms:.1f} | {min(timings['raw']) * 1e3:.1f} | 1.00x |")
    best = min(timings["generate"]) * 1e3
    print(f"| kosong generate() | {ours_ms:.1f} | {best:.1f} | {ours_ms / raw_ms:.2f}x |")
    us = sorted(x * 1e6 for x in latencies)
    local = sorted(x * 1e6 for x in in_process)
    print()
    print("| last fragment -> tool start | over HTTP, µs | in-process replay, µs |")
    print("|---|---:|---:|")
    print(f"| median | {statistics.median(us):.0f} | {statistics.median(local):.0f} |")
    print(f"| p90 | {us[int(len(us) * 0.9)]:.0f} | {local[int(len(local) * 0.9)]:.0f} |")
    print(f"| max | {us[-1]:.0f} | {local[-1]:.0f} |")
    runs = len(latencies) + len(in_process)
    print(f"\ntools started before the stream ended: {before_end} of {runs}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    main(parser.parse_args().repeats)
