"""The MCP servers the client tests talk to, in this process: ours and one on the SDK alone."""

from __future__ import annotations

import pytest

from kosong.mcp import MCPToolServer
from tests.mcp._mcp_servers import Probe, Uvicorn, kosong_toolset, sdk_server


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
async def ours(probe: Probe):
    """Our MCPToolServer over HTTP, in this process."""
    server = MCPToolServer(kosong_toolset(probe), name="ours")
    async with Uvicorn(server.app()) as running:
        running.mcp = server  # type: ignore[attr-defined]
        yield running


@pytest.fixture
async def sdk(probe: Probe):
    """A server written on the SDK's low-level Server, over HTTP, in this process."""
    async with Uvicorn(sdk_server(probe).streamable_http_app()) as running:
        yield running
