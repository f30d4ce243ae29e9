"""Tracing: an OpenTelemetry span for every call, when opentelemetry-api is installed.

Trace ids of the standard (`trace_YYYYMMDD_<12 hex>`) are handled by the pipeline for every
call (see `current_trace_id` and `trace_scope` in `kosong.standard`); this policy puts each call
in an OpenTelemetry span (the `otel` extra): `execute_tool <tool name>`, as the GenAI semantic
conventions name it (`kosong.telemetry` says which), with the standard's trace id
(`kosong.trace_id`), the retry count and cache outcome, and for a failure the status ERROR
with the error code as `error.type`. The span is current while the tool runs, so spans the
tool (or a nested call) starts are its children.

A call `step` dispatched already has its span (kosong's telemetry makes one per call): the
policy adds its attributes to that span instead of making a second one. Elsewhere (a server's
pipeline, say) it makes the span. Until an SDK is configured (a global tracer provider set, or
`kosong.telemetry.configure`), the policy makes no spans at all, since nothing would record
them; from then on it uses kosong's tracer.
"""

from __future__ import annotations

import logging
from typing import Any

from kosong import _telemetry
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


class TracingPolicy(Policy):
    """Wrap every call in an OpenTelemetry span; see the module doc."""

    observes_refusals = True  # every call, refused ones too

    def __init__(self, tracer: Any | None = None, *, recheck_every: float = 1.0) -> None:
        """Record spans with `tracer`.

        `tracer` is an `opentelemetry.trace.Tracer`; by default kosong's tracer, once an SDK
        sets a provider up (or `kosong.telemetry.configure` gives one). Until then the policy
        looks for one at most every `recheck_every` seconds (asking OpenTelemetry reads the
        environment, which costs more than the rest of the policy): an SDK set up while calls
        are already running is used within that time.

        Without opentelemetry-api installed the policy records no spans, and says so once in
        the log.
        """
        if tracer is None and otel_trace is None:
            logger.warning("opentelemetry-api is not installed: TracingPolicy records no spans")
        self._given = _telemetry.Telemetry(tracer, None, False) if tracer is not None else None
        self._recheck_every = recheck_every

    def _telemetry(self) -> _telemetry.Telemetry | None:
        if self._given is not None:
            return self._given
        found = _telemetry.current(self._recheck_every)
        return found if found is not None and found.tracer is not None else None

    @property
    def enabled(self) -> bool:
        """Whether calls get spans now (False until an OpenTelemetry SDK is set up)."""
        return self._telemetry() is not None

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Pass the call on inside its span (the one already running for it, or a new one)."""
        execution = _telemetry.ToolExecution(
            self._telemetry(), call, ctx.tool if ctx.has_tool else None
        )
        with execution as span:
            if span is None:
                return await forward(call, ctx)
            span.set("kosong.trace_id", ctx.trace_id)
            result = await forward(call, ctx)
            span.set("kosong.retry_count", ctx.retry_count)
            span.set("kosong.cache_hit", bool(ctx.cache and ctx.cache.get("hit")))
            span.error_type = error_code(result.return_value)
            execution.finish(result)
            return result
