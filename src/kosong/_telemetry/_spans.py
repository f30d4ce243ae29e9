"""One traced operation: its span (when there is a tracer), its clock, how it ended.

Every hook of `kosong._telemetry` starts one: the span is started with the attributes the
conventions want at creation (they matter for sampling), made current while the operation runs
so what it starts is its child, and ended with its status. Errors follow OpenTelemetry's
"Recording errors": `error.type` and the status ERROR with a short description.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kosong._telemetry._state import Telemetry, otel_trace

__all__ = ["Operation", "exception_type", "here"]

try:
    from opentelemetry import context as otel_context
except ImportError:  # pragma: no cover - depends on the environment
    otel_context = None

_DESCRIPTION_LIMIT = 300


class Operation:
    """A span (None without a tracer) and the start of the operation it covers."""

    __slots__ = ("_owned", "_token", "error_type", "span", "start", "telemetry")

    def __init__(
        self,
        telemetry: Telemetry,
        name: str,
        kind: str,
        attributes: Mapping[str, Any],
        *,
        parent: Any | None = None,
        links: Sequence[Any] = (),
    ) -> None:
        """Start the span `name` of `kind` ("CLIENT", "SERVER", "INTERNAL") under `parent`."""
        self.telemetry = telemetry
        self.error_type: str | None = None
        self._token: object | None = None
        self._owned = True
        self.span: Any | None = None
        if telemetry.tracer is not None and otel_trace is not None:
            self.span = telemetry.tracer.start_span(
                name,
                context=parent,
                kind=otel_trace.SpanKind[kind],
                attributes={k: v for k, v in attributes.items() if v is not None},
                links=list(links),
            )
        # Timed from after the span started, so a duration measured here (the time to the first
        # chunk, say) never exceeds the span's own.
        self.start = time.perf_counter()

    @classmethod
    def joining(cls, telemetry: Telemetry, span: Any) -> Operation:
        """An operation recorded on a span another instrumentation made and will end."""
        operation = cls(telemetry.without_tracer(), "", "INTERNAL", {})
        operation.span = span
        operation._owned = False
        return operation

    def set(self, key: str, value: Any) -> None:
        """Set an attribute (None is left out)."""
        if self.span is not None and value is not None:
            self.span.set_attribute(key, value)

    def fail(self, error_type: str, description: str) -> None:
        """Mark the operation failed: `error.type`, and the status ERROR."""
        self.error_type = error_type
        if self.span is not None and otel_trace is not None:
            self.span.set_attribute("error.type", error_type)
            self.span.set_status(
                otel_trace.Status(otel_trace.StatusCode.ERROR, description[:_DESCRIPTION_LIMIT])
            )

    def raised(self, error: BaseException) -> None:
        """Mark the operation failed by `error` (recorded as the span's exception event)."""
        if self.span is not None:
            self.span.record_exception(error)
        self.fail(exception_type(error), str(error) or type(error).__name__)

    def enter(self, outside: Any | None = None) -> None:
        """Make the span current: what runs now (and the tasks it starts) are its children.

        `outside`: the context to put the span in (the current one by default).
        """
        if self._owned and self.span is not None and otel_trace is not None:
            assert otel_context is not None
            context = otel_trace.set_span_in_context(self.span, outside)
            self._token = otel_context.attach(context)

    def leave(self) -> None:
        """Undo `enter`."""
        if self._token is not None and otel_context is not None:
            otel_context.detach(self._token)  # pyright: ignore[reportArgumentType]
            self._token = None

    def close(self, error: object) -> float:
        """Undo `enter`, mark the operation failed when `error` is an exception, and `end`."""
        self.leave()
        if isinstance(error, BaseException):
            self.raised(error)
        return self.end()

    def end(self) -> float:
        """End the span; the operation's duration in seconds."""
        elapsed = time.perf_counter() - self.start
        if self._owned and self.span is not None:
            self.span.end()
        return elapsed


def here() -> Any | None:
    """The current OpenTelemetry context."""
    return otel_context.get_current() if otel_context is not None else None


def exception_type(error: BaseException) -> str:
    """`error.type` for an exception: its status code when it has one, else its full name."""
    status: object = getattr(error, "status_code", None)
    if isinstance(status, int):
        return str(status)
    kind = type(error)
    return f"{kind.__module__}.{kind.__qualname__}"
