"""Fixtures for the chat provider tests: a local HTTP server speaking each provider's wire."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _wire import WireServer


@pytest.fixture
async def wire() -> AsyncIterator[WireServer]:
    """A local server on a free loopback port; each test queues the replies it needs."""
    async with WireServer() as server:
        yield server
