"""See what an agent did: OpenTelemetry spans and metrics, as the GenAI conventions name them.

kosong records, once telemetry is on (docs/telemetry.md shows a whole trace):

- a span per model call, `chat {model}` (`generate_content {model}` for Gemini), from every
  provider's `generate`: provider, request parameters, response id, finish reasons, tokens
  (input, output, cache read and creation, reasoning), time to the first chunk, server address;
- a span per agent run, `invoke_agent {name}` around `agent_loop` (`agent_name=`), its steps'
  model calls and tool calls its children;
- a span per tool call `step` dispatches, `execute_tool {tool}`, with the tool's description and
  type and `error.type` from the error's code; a policy pipeline's `TracingPolicy` adds its
  attributes (retries, cache hit, the standard's trace id) to that same span;
- MCP's spans on both sides: `MCPToolset` (`tools/call {tool}`, or its attributes on the tool
  call's span) puts the trace context in the request's `_meta`, and `MCPToolServer` (a SERVER
  span under it) takes it from there, so one trace crosses the process boundary;
- the metrics `gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
  `gen_ai.client.operation.time_to_first_chunk`, `gen_ai.invoke_agent.duration`,
  `gen_ai.execute_tool.duration`, `mcp.client.operation.duration` and
  `mcp.server.operation.duration`.

Telemetry is on when an OpenTelemetry SDK is set up: a global tracer or meter provider that
records (`trace.set_tracer_provider(...)`, `opentelemetry-instrument`, the `OTEL_*` variables),
or the providers given to `configure`. Until then nothing of OpenTelemetry is called. Only
`opentelemetry-api` is needed (the `otel` extra); the SDK and exporters are the application's.

Content (the system prompt, messages, tool definitions, tool arguments and results) is never
recorded unless asked for: `configure(capture_content=True)`, or
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
"""

from __future__ import annotations

from typing import Any

from kosong import _telemetry
from kosong._extras import install_hint

__all__ = ["CAPTURE_VARIABLE", "configure", "enabled"]

CAPTURE_VARIABLE = _telemetry.CAPTURE_VARIABLE
"""The environment variable that opts into recording content (`true` to record it)."""


def configure(
    *,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    capture_content: bool | None = None,
    enabled: bool = True,
) -> None:
    """Turn kosong's telemetry on (or off), from now on.

    Without it, kosong uses the global providers as soon as an SDK sets them up (looked for at
    most once a second). After it, what it set holds until it is called again.

    Args:
        tracer_provider: Where kosong's spans go (an `opentelemetry.trace.TracerProvider`,
            say the SDK's); None: the global one.
        meter_provider: Where kosong's metrics go (an `opentelemetry.metrics.MeterProvider`);
            None: the global one.
        capture_content: Record content (messages, tool arguments and results, tool
            definitions) on the spans; None: as `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
            says (`true` to record), off when it is not set.
        enabled: False records nothing at all, whatever providers exist.

    Raises:
        ImportError: a provider was given but `opentelemetry-api` is not installed.
    """
    if (tracer_provider is not None or meter_provider is not None) and not _telemetry.installed():
        raise ImportError(f"kosong.telemetry needs opentelemetry-api: {install_hint('otel')}")
    _telemetry.configure(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        enabled=enabled,
    )


def enabled() -> bool:
    """Whether kosong records spans or metrics now."""
    return _telemetry.current() is not None
