"""`kosong serve` and redis-server in subprocesses, for the tests that stop them for real."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

TOOLS = str(Path(__file__).parent / "_tools.py") + ":tools"


class ServerProcess:
    """`python -m kosong serve` on a free port; `url` once it listens."""

    command = "serve"
    ready = r"at (http://\S+) "

    def __init__(
        self,
        *args: str,
        target: str = TOOLS,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        port = ["--port", "0"] if self.command == "serve" else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kosong", self.command, target, *port,
             "--log-level", "warning", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment, cwd=cwd,
        )  # fmt: skip
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(self.ready, line)
            if found:
                self.url = found.group(1) if found.groups() else ""
                self.log: list[str] = []
                # Read what it writes from now on, so a full pipe never blocks it.
                self._reader = threading.Thread(target=self._read, daemon=True)
                self._reader.start()
                return
            if not line and self.proc.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"the server did not start: {line!r}")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    def _close(self) -> None:
        if hasattr(self, "_reader"):
            self._reader.join(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def kill(self) -> None:
        """SIGKILL: the process dies at once, without any clean-up."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._close()

    def terminate(self) -> str:
        """SIGTERM, then wait for a graceful end; what it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self._close()
        return "".join(self.log)


class WorkerProcess(ServerProcess):
    """`python -m kosong worker`, once it takes runs."""

    command = "worker"
    ready = r"kosong: worker running"


class RedisProcess:
    """A redis-server of its own on a free port, stopped and started again on the same port.

    `durable`: every write is on disk before Redis answers it (the append-only file, fsync
    always), so a restart loses nothing, as a production Redis that keeps a queue would be.
    """

    def __init__(self, *, durable: bool = False) -> None:
        self._durable = durable
        binary = shutil.which("redis-server")
        if binary is None:
            reason = "redis-server is not installed (apt-get install redis-server); .ci/run does"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        self._binary = binary
        self._dir = tempfile.mkdtemp(prefix="kosong-redis-")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
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
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
