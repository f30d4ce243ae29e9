"""One `kosong serve --token` process for the interop tests, started as users start it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server._procs import ServerProcess

TOKEN = "interop-s3cret"
TOOLS = str(Path(__file__).parent / "_tools.py") + ":tools"


@pytest.fixture(scope="session")
def kosong_mcp() -> Iterator[str]:
    """The `/mcp` URL of `kosong serve tests/interop/_tools.py:tools --token TOKEN`."""
    server = ServerProcess("--token", TOKEN, target=TOOLS)
    try:
        yield f"{server.url}/mcp"
    finally:
        log = server.terminate()
        assert "Traceback" not in log, log
