"""MCP calls that are runs, across processes: a tool's questions go through the run's record.

Two `kosong serve --redis` front ends and a `kosong worker`, real processes on a real Redis.
The official MCP client (2026-07-28) reaches the front ends through a proxy that sends each
connection to the next one, and closes its connection after each request, so the rounds of
one call land on different front ends: the tool, on the worker, asks its client's user
(elicitation) and then its model (sampling), each answer arriving by a retry on the other
front end, and the call starts once. In the handshake era the same call, a run on the worker,
asks on the call's own stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as mcp
import pytest
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.server._procs import ServerProcess, WorkerProcess

pytestmark = pytest.mark.external  # `kosong serve` and `kosong worker` processes, a redis-server

TOOLS = str(Path(__file__).parents[1] / "server" / "_cluster_tools.py") + ":tools"


class RoundRobin:
    """A TCP proxy that sends each new connection to the next of `ports`, noting which."""

    def __init__(self, ports: list[int]) -> None:
        self._ports = ports
        self._turn = itertools.cycle(range(len(ports)))
        self.calls: list[int] = []
        """The front end (by index) each `tools/call` request went to, in order."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = next(self._turn)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._ports[index])
        head = await reader.read(65536)
        if b"mcp-method: tools/call" in head.lower():
            self.calls.append(index)
        up_writer.write(head)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        try:
            yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        finally:
            server.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


class Processes:
    """Two front ends (no workers of their own) and one worker, on the session's Redis."""

    def __init__(self, redis_url: str, effects: Path) -> None:
        env = {"KOSONG_TEST_EFFECTS": str(effects)}
        self.effects = effects
        self.all: list[ServerProcess] = []
        for _ in range(2):
            self.all.append(ServerProcess("--redis", redis_url, "--workers", "0", "--rate-limit",
                                          "off", target=TOOLS, env=env))  # fmt: skip
        self.all.append(WorkerProcess("--redis", redis_url, target=TOOLS, env=env))
        self.fronts = self.all[:2]
        self.worker = self.all[2]

    def started(self) -> list[str]:
        """Each line `interview` wrote when it started: `interview started <pid>`."""
        return self.effects.read_text().splitlines() if self.effects.exists() else []


@pytest.fixture
def processes(redis_url: str, tmp_path: Path) -> Iterator[Processes]:
    # A Redis database of its own: no worker of another test takes these runs.
    started = Processes(redis_url.rpartition("/")[0] + "/6", tmp_path / "effects.log")
    try:
        yield started
    finally:
        for process in started.all:
            process.terminate()


class Answers:
    """The client's user and model: what they were asked, and their answers."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: Any) -> mcp.ElicitResult:
        self.asked.append(params.message)
        return mcp.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(
        self, context: ClientRequestContext, params: mcp.CreateMessageRequestParams
    ) -> mcp.CreateMessageResult:
        self.asked.append(params.messages[0].content.text)  # pyright: ignore[reportAttributeAccessIssue]
        text = mcp.TextContent(text="tide pools")
        return mcp.CreateMessageResult(role="assistant", content=text, model="client-model")


def _port(url: str) -> int:
    return int(url.rpartition(":")[2])


async def test_the_rounds_of_one_call_are_answered_on_different_front_ends(
    processes: Processes,
) -> None:
    proxy = RoundRobin([_port(front.url) for front in processes.fronts])
    answers = Answers()
    async with proxy.running() as base:
        # A new connection for every request: the proxy sends each to the next front end.
        http = httpx2.AsyncClient(headers={"Connection": "close"}, timeout=30)
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with (
            http,
            Client(transport, elicitation_callback=answers.elicit,
                   sampling_callback=answers.sample) as client,
        ):  # fmt: skip
            assert client.protocol_version == "2026-07-28"
            result = await asyncio.wait_for(client.call_tool("interview", {}), 30)
    worker = processes.worker.proc.pid
    assert result.content == [mcp.TextContent(text=f"Ada: tide pools (ran in {worker})")]
    assert answers.asked == ["Your name?", "A line for Ada."]
    # Three rounds (the call, the retry with the name, the retry with the line), on both front
    # ends; the tool started once, on the worker, and waited there for each answer.
    assert len(proxy.calls) == 3 and set(proxy.calls) == {0, 1}
    assert processes.started() == [f"interview started {worker}"]


async def test_a_handshake_era_call_run_by_a_worker_asks_on_its_own_stream(
    processes: Processes,
) -> None:
    answers = Answers()
    async with Client(f"{processes.fronts[0].url}/mcp", mode="legacy",
                      elicitation_callback=answers.elicit,
                      sampling_callback=answers.sample) as client:  # fmt: skip
        result = await asyncio.wait_for(client.call_tool("interview", {}), 30)
    worker = processes.worker.proc.pid
    assert result.content == [mcp.TextContent(text=f"Ada: tide pools (ran in {worker})")]
    assert answers.asked == ["Your name?", "A line for Ada."]
    assert processes.started() == [f"interview started {worker}"]
