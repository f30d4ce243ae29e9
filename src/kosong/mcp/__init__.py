"""MCP both ways: serve any kosong toolset to MCP clients, and use MCP servers' tools as a toolset.

- `MCPToolServer`: a toolset as an MCP server, over streamable HTTP at `/mcp` (both protocol
  eras) and stdio, through the `kosong.standard` pipeline; `mcp_request()` gives a running
  tool the MCP request it serves. `python -m kosong.mcp MODULE:ATTR` serves a toolset.
- `MCPToolset`: the tools of MCP servers (URLs or stdio commands) as a kosong toolset
  (`MCPTool` each), each server's connection supervised on its own.
- `SessionEventStore`: resumable streams, event ids scoped per session, kept in an `EventLog`
  (`MemoryEventLog` by default).
- `ResourcePart`: a content part that is an MCP embedded resource.

Needs the `mcp` extra: `pip install 'kosong[mcp]'`.
"""

from kosong.mcp._answering import ElicitationRequest, SamplingRequest
from kosong.mcp._client import MCPTool, MCPToolset
from kosong.mcp._content import ResourcePart
from kosong.mcp._events import (
    EventLog,
    MemoryEventLog,
    SessionEvent,
    SessionEventStore,
    StoreEventLog,
)
from kosong.mcp._server import MCPToolServer, mcp_request
from kosong.mcp._spec import ServerSpec

__all__ = [
    "ElicitationRequest",
    "EventLog",
    "MCPTool",
    "MCPToolServer",
    "MCPToolset",
    "MemoryEventLog",
    "ResourcePart",
    "SamplingRequest",
    "ServerSpec",
    "SessionEvent",
    "SessionEventStore",
    "StoreEventLog",
    "mcp_request",
]
