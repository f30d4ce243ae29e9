"""An OTLP/HTTP receiver for tests: what exporters send to `/v1/traces`, decoded.

It answers as a collector does (OTLP/HTTP with protobuf bodies, the `opentelemetry-proto`
messages the SDK's exporter sends), on a free loopback port, and keeps every span it gets.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests._local import serve_app


@dataclass
class ReceivedSpan:
    """One span as it arrived: ids in hex, attributes as plain values."""

    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    start: int
    """Start time, ns since the epoch."""
    attributes: dict[str, Any] = field(default_factory=dict[str, Any])


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class OTLPReceiver:
    """The receiver; `url` is its base URL (`http://127.0.0.1:PORT`)."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._arrived = asyncio.Condition()

    async def _traces(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf", request.content_type
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource in export.resource_spans:
            service = next(
                (_value(a.value) for a in resource.resource.attributes if a.key == "service.name"),
                "",
            )
            for scope in resource.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        ReceivedSpan(
                            service=service,
                            name=span.name,
                            kind=span.kind,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            start=span.start_time_unix_nano,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                        )
                    )
        async with self._arrived:
            self._arrived.notify_all()
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    async def wait_for(self, *names: str) -> None:
        """Until a span of each of `names` arrived (20 s at most)."""
        async with asyncio.timeout(20), self._arrived:
            await self._arrived.wait_for(lambda: set(names) <= {span.name for span in self.spans})

    def named(self, name: str) -> ReceivedSpan:
        (found,) = [span for span in self.spans if span.name == name]
        return found

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner, self.url = await serve_app(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
