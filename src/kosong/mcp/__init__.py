"""MCP both ways: serve any kosong toolset to MCP clients, and use MCP servers' tools as a toolset.

- `MCPToolServer`: a toolset as an MCP server, over streamable HTTP at `/mcp` (both protocol
  eras) and stdio, through the `kosong.standard` pipeline; a tool asks the client's user
  with `current_call().elicit(...)`, its model with `.sample(...)`, and logs to it with
  `.log(...)` (either era), and `ask_user_to_approve` makes `elicit` an `ApprovalPolicy`
  hook; `mcp_request()` gives a running tool the MCP request it serves.
  `kosong mcp TARGET` (or `python -m kosong.mcp TARGET`) serves a toolset.
- `MCPToolset`: the tools of MCP servers (URLs, over streamable HTTP or the legacy HTTP+SSE
  transport, or stdio commands, or a `ServerSpec` with credentials; or an `mcpServers` file,
  `MCPToolset.from_config`) as a kosong toolset (`MCPTool` each), each server's connection
  supervised on its own; the model reads their results' content, their structured content is
  the data; tools that run as tasks are followed to their results; it answers what servers
  ask back (`ElicitationRequest`, `SamplingRequest`, roots).
- `SessionEventStore`: resumable streams, event ids scoped per session, kept in a run store
  (`kosong.eventstore`: the server's own, by default).
- `ResourcePart`: a content part that is an MCP embedded resource.

Needs the `mcp` extra.
"""

from kosong.mcp._answering import ElicitationRequest, SamplingRequest
from kosong.mcp._approve import ask_user_to_approve
from kosong.mcp._client import MCPTool, MCPToolset
from kosong.mcp._convert import ResourcePart
from kosong.mcp._events import SessionEventStore
from kosong.mcp._server import MCPToolServer, mcp_request
from kosong.mcp._spec import ServerSpec

__all__ = [
    "ElicitationRequest",
    "MCPTool",
    "MCPToolServer",
    "MCPToolset",
    "ResourcePart",
    "SamplingRequest",
    "ServerSpec",
    "SessionEventStore",
    "ask_user_to_approve",
    "mcp_request",
]
