"""Tracing: an OpenTelemetry span for every call, when opentelemetry-api is installed.

Trace ids of the standard (`trace_YYYYMMDD_<12 hex>`) are handled by the pipeline for every
call (see `kosong.standard.trace`); this policy adds OpenTelemetry spans
(`pip install 'kosong[otel]'`). Each call gets a span named `execute_tool <tool name>` with the
GenAI semantic conventions' attributes (`gen_ai.operation.name`, `gen_ai.tool.name`,
`gen_ai.tool.call.id`), the standard's trace id (`kosong.trace_id`), the retry count and cache
outcome, and for a failure the status ERROR with the error code as `error.type`. The span is
current while the tool runs, so spans the tool (or a nested call) starts are its children.
Until an SDK is configured (a global tracer provider set), the policy makes no spans at all,
since nothing would record them; from then on it uses the provider's tracer.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from kosong.message import ToolCall
from kosong.standard.codes import error_code
from kosong.standard.context import CallContext
from kosong.standard.pipeline import Forward, ForwardNow, Policy
from kosong.tooling import ToolResult, ToolReturnValue

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

# Where the API keeps the global provider (None until one is set). `get_tracer_provider()`
# reads os.environ on each call until then, which costs more than the rest of the policy; when
# the environment names no provider, reading this global answers the same question.
_PROVIDER_GLOBAL = "_TRACER_PROVIDER"
_PROVIDER_VARIABLE = "OTEL_PYTHON_TRACER_PROVIDER"
_UNKNOWN = object()


class TracingPolicy(Policy):
    """Wrap every call in an OpenTelemetry span; see the module doc."""

    def __init__(self, tracer: Any | None = None) -> None:
        # With no tracer given, the global provider's is used once an SDK sets one up; until
        # then (`_pending`), calls make no spans at all: nothing would record them.
        """Record spans with `tracer`.

        `tracer` is an `opentelemetry.trace.Tracer`; by default the global provider's tracer
        named `kosong.standard`.

        Without opentelemetry-api installed the policy records no spans, and says so once in
        the log.
        """
        self._pending = tracer is None and otel_trace is not None
        if tracer is None and otel_trace is None:
            logger.warning("opentelemetry-api is not installed: TracingPolicy records no spans")
        self._tracer = tracer
        # Until a provider is set, each call checks the API's global for one: cheap, and
        # exact as long as the environment names none (checked at each call when it does, and
        # when the API keeps its global elsewhere).
        self._quick_check = (
            otel_trace is not None
            and getattr(otel_trace, _PROVIDER_GLOBAL, _UNKNOWN) is not _UNKNOWN
            and _PROVIDER_VARIABLE not in os.environ
        )

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True while no tracer records spans (see the module doc)."""
        if (  # the quick case of `_current_tracer` inlined: every call comes here
            self._pending
            and self._quick_check
            and getattr(otel_trace, _PROVIDER_GLOBAL, None) is None
        ):
            return True
        return self._current_tracer() is None

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """Pass the call on while no tracer records spans; else None (`run` makes the span)."""
        if (  # the quick case of `_current_tracer` inlined: every call comes here
            self._pending
            and self._quick_check
            and getattr(otel_trace, _PROVIDER_GLOBAL, None) is None
        ) or self._current_tracer() is None:
            return forward(call, ctx)
        return None

    def _current_tracer(self) -> Any | None:
        if self._pending and otel_trace is not None:
            if self._quick_check and getattr(otel_trace, _PROVIDER_GLOBAL, None) is None:
                return None
            provider = otel_trace.get_tracer_provider()
            if isinstance(provider, _SILENT):
                return None
            self._tracer = provider.get_tracer("kosong.standard")
            self._pending = False
        return self._tracer

    @property
    def enabled(self) -> bool:
        """Whether calls get spans now (False until an OpenTelemetry SDK is set up)."""
        return self._current_tracer() is not None

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
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
