"""What the SDK recorded: finished spans by name, metric points by instrument."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorded:
    """An SDK tracer provider and meter provider that keep what they record in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracers = TracerProvider()
        self.tracers.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])

    @property
    def spans(self) -> list[ReadableSpan]:
        """The finished spans, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called `name`."""
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.spans]}"
        return found[0]

    def attributes(self, name: str) -> dict[str, Any]:
        return dict(self.span(name).attributes or {})

    def points(self, metric: str) -> list[Any]:
        """The data points of one instrument (histogram points: count, sum, attributes)."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found

    def shutdown(self) -> None:
        self.tracers.shutdown()
        self.meters.shutdown()


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id
