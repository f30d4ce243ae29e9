"""Trace ids, event ids and timestamps."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from kosong.standard.trace import (
    TRACE_ID_PATTERN,
    current_trace_id,
    format_timestamp,
    new_event_id,
    new_trace_id,
    trace_scope,
)


def test_new_trace_ids_have_the_standards_form_and_are_unique() -> None:
    ids = {new_trace_id() for _ in range(1000)}
    assert len(ids) == 1000
    today = datetime.now(UTC).strftime("%Y%m%d")
    for trace_id in ids:
        assert TRACE_ID_PATTERN.match(trace_id)
        assert trace_id[6:14] == today or trace_id[6:14] >= today  # across midnight


def test_event_ids_have_their_own_prefix() -> None:
    assert re.match(r"^evt_[0-9]{8}_[0-9a-f]{12}$", new_event_id())


def test_trace_scope_sets_and_restores_the_current_trace() -> None:
    assert current_trace_id() is None
    with trace_scope() as outer:
        assert current_trace_id() == outer and TRACE_ID_PATTERN.match(outer)
        with trace_scope("trace_given") as inner:
            assert inner == current_trace_id() == "trace_given"
        assert current_trace_id() == outer
    assert current_trace_id() is None
    with pytest.raises(ValueError), trace_scope(""):
        pass


def test_timestamps_are_utc_with_z_and_milliseconds_when_needed() -> None:
    assert format_timestamp(datetime(2024, 1, 1, tzinfo=UTC)) == "2024-01-01T00:00:00Z"
    assert (
        format_timestamp(datetime(2024, 1, 1, 0, 0, 0, 127_500, tzinfo=UTC))
        == "2024-01-01T00:00:00.127Z"
    )
