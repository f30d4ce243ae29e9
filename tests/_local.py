"""What the tests start on this machine: a free loopback port, a redis-server of their own."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from aiohttp import web


def free_port() -> int:
    """A loopback port nothing listens on (the OS picks it; free once this returns)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def serve_app(app: web.Application) -> tuple[web.AppRunner, str]:
    """Start the aiohttp `app` on a port of 127.0.0.1 the OS picks: its runner (to clean up
    with `cleanup()`) and its base URL."""
    from aiohttp import web  # the tests that serve an app have it; the others need not load it

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # pyright: ignore[reportAttributeAccessIssue]
    return runner, f"http://127.0.0.1:{port}"


def missing(reason: str) -> NoReturn:
    """Something a test needs is missing: skip it, but in CI (`CI` set, as .ci/run does) fail,
    since CI installs everything and a skip there would hide a test that never ran."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


class RedisProcess:
    """A redis-server of its own on a free port, stopped and started again on the same port.

    `durable`: every write is on disk before Redis answers it (the append-only file, fsync
    always), so a restart loses nothing, as a production Redis that keeps a queue would be.
    """

    def __init__(self, *, durable: bool = False) -> None:
        self._durable = durable
        binary = shutil.which("redis-server")
        if binary is None:
            missing("redis-server is not installed (apt-get install redis-server; .ci/run does)")
        self._binary = binary
        self._dir = tempfile.mkdtemp(prefix="kosong-redis-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        """Start it (again) and wait until it answers PING."""
        self.proc = subprocess.Popen(
            [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self._durable else "no", "--appendfsync", "always",
             "--dir", self._dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop it for real (SIGTERM, then SIGKILL), and wait until it is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def close(self) -> None:
        """Stop it and remove its directory."""
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
