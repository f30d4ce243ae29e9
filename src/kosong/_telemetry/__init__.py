"""kosong's OpenTelemetry instrumentation: the hooks kosong's own modules call (private).

Users turn it on and off with `kosong.telemetry.configure` (or an OpenTelemetry SDK set up in
the usual ways); what is recorded is described there and in docs/telemetry.md. Each hook costs
one check while telemetry is off (`_state.current()`), and only `opentelemetry-api` is needed:

- `model_call` (`_model`): the span of one `generate`;
- `traced_agent_loop` and `agent_run` (`_agent`): the span of one `agent_loop`;
- `dispatch` and `ToolExecution` (`_tools`): the span of a tool call, made once, which a
  pipeline's `TracingPolicy` and `MCPToolset` add to;
- `MCPClientCall`, `carry_context`, `continued`, `mcp_server_call` (`_mcp`): MCP's spans and
  the trace context in `_meta`.

The conventions followed are OpenTelemetry's GenAI semantic conventions (Development status),
as open-telemetry/semantic-conventions-genai has them at the commits cited in
docs/telemetry.md ("Conventions followed").
"""

from kosong._telemetry._agent import AgentRun, agent_run, traced_agent_loop
from kosong._telemetry._mcp import (
    MCPClientCall,
    MCPServerCall,
    carry_context,
    continued,
    mcp_server_call,
)
from kosong._telemetry._model import ModelCall, model_call
from kosong._telemetry._state import (
    CAPTURE_VARIABLE,
    Telemetry,
    configure,
    current,
    installed,
    reset,
)
from kosong._telemetry._tools import ToolExecution, ToolSpan, dispatch, tool_span

__all__ = [
    "CAPTURE_VARIABLE",
    "AgentRun",
    "MCPClientCall",
    "MCPServerCall",
    "ModelCall",
    "Telemetry",
    "ToolExecution",
    "ToolSpan",
    "agent_run",
    "carry_context",
    "configure",
    "continued",
    "current",
    "dispatch",
    "installed",
    "mcp_server_call",
    "model_call",
    "reset",
    "tool_span",
    "traced_agent_loop",
]
