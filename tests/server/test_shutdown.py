"""Graceful shutdown: calls in flight get the grace period, open streams end with a final
event, and the health check says the server is draining."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests._waiting import until
from tests.server._procs import ServerProcess
from tests.server._sse import read_sse

pytestmark = pytest.mark.external  # `kosong serve` processes stopped by signals


async def test_sigterm_lets_short_runs_finish_and_ends_long_ones_with_an_error() -> None:
    server = ServerProcess("--grace", "1")
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            long_run = asyncio.ensure_future(
                read_sse(
                    c, "POST", f"{server.url}/tools/ticker/sse", json={"n": 1000, "delay": 0.05}
                )
            )
            short_run = asyncio.ensure_future(
                read_sse(c, "POST", f"{server.url}/tools/count/sse", json={"n": 10, "delay": 0.05})
            )

            async def in_flight() -> bool:
                return "kosong_server_runs_active 2" in (await c.get(f"{server.url}/metrics")).text

            await until(in_flight, "both runs to be in flight")
            log = await asyncio.to_thread(server.terminate)
            long_stream, short_stream = await asyncio.wait_for(
                asyncio.gather(long_run, short_run), 20
            )
    finally:
        server.kill()
    assert short_stream.final["data"] == "counted"
    error = long_stream.final["error"]
    assert error["code"] == "CANCELLED" and "the server shut down" in error["message"]
    assert server.proc.returncode is not None
    assert "Traceback" not in log
