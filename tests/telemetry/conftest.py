"""Telemetry tests record with the real OpenTelemetry SDK: in-memory span and metric readers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kosong import _telemetry
from kosong.telemetry import configure
from tests.telemetry._recorded import Recorded


@pytest.fixture
def otel() -> Iterator[Recorded]:
    """kosong configured with an SDK tracer and meter provider; content not captured."""
    recorded = Recorded()
    configure(tracer_provider=recorded.tracers, meter_provider=recorded.meters)
    try:
        yield recorded
    finally:
        recorded.shutdown()
        _telemetry.reset()


@pytest.fixture
def otel_content() -> Iterator[Recorded]:
    """The same, with content captured (`capture_content=True`)."""
    recorded = Recorded()
    configure(
        tracer_provider=recorded.tracers, meter_provider=recorded.meters, capture_content=True
    )
    try:
        yield recorded
    finally:
        recorded.shutdown()
        _telemetry.reset()
