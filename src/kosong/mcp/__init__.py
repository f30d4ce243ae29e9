"""MCP both ways: serve any kosong toolset to MCP clients, and use MCP servers' tools as a toolset.

- `MCPToolServer` (`kosong.mcp.server`): a toolset as an MCP server, over streamable HTTP at
  `/mcp` (both protocol eras) and stdio, through the `kosong.standard` pipeline.
- `MCPToolset` (`kosong.mcp.client`): the tools of MCP servers (URLs or stdio commands) as a
  kosong toolset, each server's connection supervised on its own.
- `SessionEventStore` (`kosong.mcp.events`): resumable streams, event ids scoped per session.
- `ResourcePart` (`kosong.mcp.content`): a content part that is an MCP embedded resource.

Needs the `mcp` extra: `pip install 'kosong[mcp]'`.
"""

from kosong.mcp.client import MCPTool, MCPToolset, ServerSpec
from kosong.mcp.content import ResourcePart
from kosong.mcp.events import EventLog, MemoryEventLog, SessionEventStore, StoredEvent
from kosong.mcp.server import MCPToolServer, mcp_request

__all__ = [
    "EventLog",
    "MCPTool",
    "MCPToolServer",
    "MCPToolset",
    "MemoryEventLog",
    "ResourcePart",
    "ServerSpec",
    "SessionEventStore",
    "StoredEvent",
    "mcp_request",
]
