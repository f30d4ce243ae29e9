"""What the SDK recorded: finished spans by name, metric points by instrument."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorded:
    """An SDK tracer provider and meter provider that keep what they record in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracers = TracerProvider()
        self.tracers.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._ended = _Ended()
        self.tracers.add_span_processor(self._ended)
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

    async def ended(self, count: int) -> None:
        """Until `count` spans have ended (10 s at most)."""
        async with asyncio.timeout(10):
            while True:
                ended = self._ended.waiter()  # before looking: no end is missed in between
                if len(self.spans) >= count:
                    return
                await ended.wait()

    def shutdown(self) -> None:
        self.tracers.shutdown()
        self.meters.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes, as plain values."""
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


class _Ended(SpanProcessor):
    """Wakes a waiting test each time a span ends (spans may end on another thread)."""

    def __init__(self) -> None:
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def waiter(self) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters.append((asyncio.get_running_loop(), event))
        return event

    def on_end(self, span: ReadableSpan) -> None:
        waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)
