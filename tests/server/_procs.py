"""`kosong serve` and `kosong worker` in subprocesses, for the tests that stop them for real.

A redis-server of their own is tests._local.RedisProcess."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

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
