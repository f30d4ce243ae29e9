"""`kosong serve` (and `bind`) answer each request of a kept-alive connection at once.

Without TCP_NODELAY on the accepted sockets, Nagle's algorithm holds the end of each answer
until the client's delayed ACK: about 40 ms per request on one kept-alive connection.
"""

from __future__ import annotations

import socket
import statistics
import time

import httpx
import pytest

from kosong.server import bind
from tests.server._procs import ServerProcess


def test_bind_makes_a_tcp_socket_whose_connections_send_at_once() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP  # what asyncio checks before setting NODELAY
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        with socket.create_connection(sock.getsockname(), timeout=5):
            accepted, _ = sock.accept()
            with accepted:  # inherited from the listener, whatever the event loop does
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


@pytest.mark.external  # a `kosong serve` process
async def test_every_request_on_a_kept_alive_connection_to_kosong_serve_is_answered_at_once(
) -> None:  # fmt: skip
    server = ServerProcess()
    try:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=10) as c:
            for _ in range(5):  # warm-up: imports, the first connection
                assert (await c.post("/tools/add", json={"a": 1, "b": 2})).status_code == 200
            took: list[float] = []
            for n in range(40):
                start = time.perf_counter()
                response = await c.post("/tools/add", json={"a": n, "b": 1})
                took.append((time.perf_counter() - start) * 1000)
                assert response.json()["data"] == n + 1
    finally:
        server.kill()
    median = statistics.median(took)
    assert median < 10, f"median {median:.1f} ms over one kept-alive connection: {took}"
