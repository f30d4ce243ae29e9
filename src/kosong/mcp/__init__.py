"""MCP both ways: serve any kosong toolset to MCP clients, and use MCP servers' tools as a toolset.

- `MCPToolServer` (`kosong.mcp.server`): a toolset as an MCP server, over streamable HTTP at
  `/mcp` (both protocol eras) and stdio, through the `kosong.standard` pipeline.
- `SessionEventStore` (`kosong.mcp.events`): resumable streams, event ids scoped per session.

Needs the `mcp` extra: `pip install 'kosong[mcp]'`.
"""

from kosong.mcp.events import EventLog, MemoryEventLog, SessionEventStore, StoredEvent
from kosong.mcp.server import MCPToolServer, mcp_request

__all__ = [
    "EventLog",
    "MCPToolServer",
    "MemoryEventLog",
    "SessionEventStore",
    "StoredEvent",
    "mcp_request",
]
