"""Times written as ISO 8601, UTC, with milliseconds when not zero (`kosong._timestamps`)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from kosong._timestamps import format_epoch, now_timestamp


def _written(moment: datetime) -> str:
    """The reference: what a timestamp must read, written with `strftime`."""
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_timestamps_are_utc_with_z_and_milliseconds_when_needed() -> None:
    assert _written(datetime(2024, 1, 1, tzinfo=UTC)) == "2024-01-01T00:00:00Z"
    assert (
        _written(datetime(2024, 1, 1, 0, 0, 0, 127_500, tzinfo=UTC)) == "2024-01-01T00:00:00.127Z"
    )
    assert format_epoch(datetime(2024, 1, 1, tzinfo=UTC).timestamp()) == "2024-01-01T00:00:00Z"
    assert format_epoch(1_704_067_200.1275) == "2024-01-01T00:00:00.127Z"


@given(st.lists(st.floats(min_value=0, max_value=4_102_444_800), min_size=1, max_size=20))
def test_epoch_times_are_written_as_the_reference_writes_them(times: list[float]) -> None:
    # Several times in a row, and each again: remembered texts must belong to their time.
    for seconds in [*times, *reversed(times)]:
        whole = int(seconds // 1)
        millis = int((seconds - whole) * 1000)
        moment = datetime.fromtimestamp(whole, UTC).replace(microsecond=millis * 1000)
        assert format_epoch(seconds) == _written(moment)


def test_now_timestamp_is_the_current_time() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = datetime.fromisoformat(now_timestamp().replace("Z", "+00:00"))
    assert before <= stamp <= datetime.now(UTC)
