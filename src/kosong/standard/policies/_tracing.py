"""Tracing: an OpenTelemetry span for every call, when opentelemetry-api is installed.

Trace ids of the standard (`trace_YYYYMMDD_<12 hex>`) are handled by the pipeline for every
call (see `current_trace_id` and `trace_scope` in `kosong.standard`); this policy adds
OpenTelemetry spans (the `otel` extra). Each call gets a span named
`execute_tool <tool name>` with the GenAI semantic conventions' attributes
(`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`), the standard's trace id
(`kosong.trace_id`), the retry count and cache outcome, and for a failure the status ERROR with
the error code as `error.type`. The span is current while the tool runs, so spans the tool (or
a nested call) starts are its children. Until an SDK is configured (a global tracer provider
set), the policy makes no spans at all, since nothing would record them; from then on it uses
the provider's tracer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kosong.message import ToolCall
from kosong.standard._codes import error_code
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import ToolResult

try:
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - depends on the environment
    otel_trace = None

__all__ = ["OTEL_AVAILABLE", "TracingPolicy"]

logger = logging.getLogger(__name__)

OTEL_AVAILABLE = otel_trace is not None
"""Whether opentelemetry-api is installed."""

# Providers that record nothing: the API's stand-in until an SDK is set up, and the no-op one.
_SILENT: tuple[type, ...] = (
    (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)
    if otel_trace is not None
    else ()
)


class TracingPolicy(Policy):
    """Wrap every call in an OpenTelemetry span; see the module doc."""

    observes_refusals = True  # every call, refused ones too

    def __init__(self, tracer: Any | None = None, *, recheck_every: float = 1.0) -> None:
        """Record spans with `tracer`.

        `tracer` is an `opentelemetry.trace.Tracer`; by default the global provider's tracer
        named `kosong.standard`, once an SDK sets a provider up. Until then the policy looks for
        one at most every `recheck_every` seconds (asking OpenTelemetry reads the environment,
        which costs more than the rest of the policy): an SDK set up while calls are already
        running is used within that time.

        Without opentelemetry-api installed the policy records no spans, and says so once in
        the log.
        """
        if tracer is None and otel_trace is None:
            logger.warning("opentelemetry-api is not installed: TracingPolicy records no spans")
        self._tracer = tracer
        self._recheck_every = recheck_every
        self._next_look = 0.0

    def _current_tracer(self) -> Any | None:
        if self._tracer is None and otel_trace is not None:
            now = time.monotonic()
            if now >= self._next_look:
                self._next_look = now + self._recheck_every
                provider = otel_trace.get_tracer_provider()
                if not isinstance(provider, _SILENT):
                    self._tracer = provider.get_tracer("kosong.standard")
        return self._tracer

    @property
    def enabled(self) -> bool:
        """Whether calls get spans now (False until an OpenTelemetry SDK is set up)."""
        return self._current_tracer() is not None

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Pass the call on inside a span."""
        tracer = self._current_tracer()
        if tracer is None or otel_trace is None:
            return await forward(call, ctx)
        name = call.function.name
        with tracer.start_as_current_span(
            f"execute_tool {name}",
            kind=otel_trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call.id,
                "kosong.trace_id": ctx.trace_id,
            },
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await forward(call, ctx)
            except asyncio.CancelledError:
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, "cancelled"))
                raise
            code = error_code(result.return_value)
            span.set_attribute("kosong.retry_count", ctx.retry_count)
            span.set_attribute("kosong.cache_hit", bool(ctx.cache and ctx.cache.get("hit")))
            if code is not None:
                span.set_attribute("error.type", code)
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, code))
            return result
