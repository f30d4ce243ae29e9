"""The switch: whether kosong records spans and metrics, with which tracer and meter.

Telemetry is on when a tracer provider or a meter provider that records is in use: the ones
given to `configure`, else the global ones OpenTelemetry's API gives (set by an SDK's setup,
`opentelemetry-instrument`, or an `OTEL_PYTHON_*_PROVIDER` variable). Until then `current()`
answers None and nothing else of OpenTelemetry is called. Without `configure`, the global
providers are looked at again at most once a second, so an SDK set up after kosong's first call
is used from then on.

Content (messages, tool arguments and results, tool definitions) is recorded only when asked:
`configure(capture_content=True)`, or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
set to `true` (or `span_only` / `span_and_event`, the values OpenTelemetry's GenAI
instrumentations take).
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from typing import Any

try:
    from opentelemetry import metrics as otel_metrics
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - depends on the environment
    otel_metrics = None
    otel_trace = None

__all__ = [
    "CAPTURE_VARIABLE",
    "SCOPE",
    "Telemetry",
    "configure",
    "current",
    "installed",
    "otel_trace",
    "reset",
]

SCOPE = "kosong"
"""The instrumentation scope of kosong's tracer and meter."""

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that opts into recording content."""

_CAPTURE_VALUES = frozenset({"true", "1", "yes", "span_only", "span_and_event"})

# Bucket boundaries the conventions advise (gen-ai-metrics.md, mcp.md).
_SECONDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_TOKENS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
_MCP_SECONDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class Telemetry:
    """What kosong records with, once telemetry is on: a tracer, the metric instruments."""

    def __init__(self, tracer: Any | None, meter: Any | None, capture_content: bool) -> None:
        self.tracer = tracer
        """The tracer spans are made with (None: no spans)."""
        self.capture_content = capture_content
        """Whether content is recorded on spans (the conventions' opt-in attributes)."""
        self.metrics = meter is not None
        """Whether metrics are recorded."""
        self.operation_duration = _histogram(
            meter, "gen_ai.client.operation.duration", "s", "GenAI operation duration.", _SECONDS
        )
        self.token_usage = _histogram(
            meter,
            "gen_ai.client.token.usage",
            "{token}",
            "Number of input and output tokens used.",
            _TOKENS,
        )
        self.time_to_first_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            "Time to receive the first chunk, measured from when the client issues the "
            "generation request to when the first chunk is received in the response stream.",
            _SECONDS,
        )
        self.agent_duration = _histogram(
            meter, "gen_ai.invoke_agent.duration", "s", "GenAI agent invocation duration.", _SECONDS
        )
        self.tool_duration = _histogram(
            meter, "gen_ai.execute_tool.duration", "s", "GenAI tool execution duration.", _SECONDS
        )
        self.mcp_client_duration = _histogram(
            meter,
            "mcp.client.operation.duration",
            "s",
            "The duration of the MCP request or notification as observed on the sender from the "
            "time it was sent until the response or ack is received.",
            _MCP_SECONDS,
        )
        self.mcp_server_duration = _histogram(
            meter,
            "mcp.server.operation.duration",
            "s",
            "MCP request or notification duration as observed on the receiver from the time it "
            "was received until the result or ack is sent.",
            _MCP_SECONDS,
        )

    def without_tracer(self) -> Telemetry:
        """The same instruments, and no spans (for an operation that adds to another's span)."""
        quiet = copy.copy(self)
        quiet.tracer = None
        return quiet


def _histogram(
    meter: Any | None, name: str, unit: str, description: str, buckets: tuple[float, ...]
) -> Any | None:
    if meter is None:
        return None
    return meter.create_histogram(
        name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
    )


@dataclass
class _Switch:
    telemetry: Telemetry | None = None
    fixed: bool = False
    """Set by `configure`: the global providers are not looked at again."""
    next_look: float = 0.0


_SWITCH = _Switch()


def current(recheck_every: float = 1.0) -> Telemetry | None:
    """What to record with, or None when telemetry is off (the cheap answer while it is off)."""
    switch = _SWITCH
    if switch.telemetry is not None or switch.fixed:
        return switch.telemetry
    now = time.monotonic()
    if now >= switch.next_look:
        switch.next_look = now + recheck_every
        switch.telemetry = _build(None, None, None, enabled=True)
    return switch.telemetry


def installed() -> bool:
    """Whether opentelemetry-api is installed."""
    return otel_trace is not None


def reset() -> None:
    """Back to the start: nothing configured, the global providers looked at on next use."""
    _SWITCH.telemetry = None
    _SWITCH.fixed = False
    _SWITCH.next_look = 0.0


def configure(
    *,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    capture_content: bool | None = None,
    enabled: bool = True,
) -> Telemetry | None:
    """Set what kosong records with from now on (see `kosong.telemetry.configure`)."""
    telemetry = _build(tracer_provider, meter_provider, capture_content, enabled=enabled)
    _SWITCH.telemetry = telemetry
    _SWITCH.fixed = True
    return telemetry


def _build(
    tracer_provider: Any | None,
    meter_provider: Any | None,
    capture_content: bool | None,
    *,
    enabled: bool,
) -> Telemetry | None:
    if not enabled or otel_trace is None or otel_metrics is None:
        return None
    tracers = tracer_provider if tracer_provider is not None else otel_trace.get_tracer_provider()
    meters = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
    tracer = None if _stand_in(tracers) else tracers.get_tracer(SCOPE)
    meter = None if _stand_in(meters) else meters.get_meter(SCOPE)
    if tracer is None and meter is None:
        return None
    if capture_content is None:
        capture_content = os.environ.get(CAPTURE_VARIABLE, "").strip().lower() in _CAPTURE_VALUES
    return Telemetry(tracer, meter, capture_content)


def _stand_in(provider: object) -> bool:
    """Whether a provider is one of the API's own, which record nothing (proxy or no-op).

    The API's stand-ins are the classes it defines itself (the metrics proxy is not public).
    """
    return type(provider).__module__.startswith(("opentelemetry.trace", "opentelemetry.metrics"))
