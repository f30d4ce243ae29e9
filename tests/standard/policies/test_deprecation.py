"""DeprecationPolicy: TOOL_DEPRECATED after the sunset date, a warning before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kosong.standard import to_envelope, with_policies
from kosong.standard.policies import DeprecationPolicy
from kosong.tooling import ToolOk, ToolResult
from kosong.tooling.error import ToolDeprecatedError
from tests.standard._std_tools import Scripted, make_call, toolset

GUIDE = "https://docs.example.com/migration/weather-v1-to-v2"


def old_weather(**fields: Any) -> Scripted:
    return Scripted(
        lambda n: ToolOk(output="sunny", message="from v1"),
        name="get_weather_v1",
        version="1.0.0",
        **fields,
    )


async def call_at(tool: Scripted, now: datetime, **policy: Any) -> ToolResult:
    pipeline = with_policies(toolset(tool), DeprecationPolicy(clock=lambda: now, **policy))
    return await pipeline.handle(make_call("get_weather_v1", {}))


async def test_after_the_sunset_the_call_gets_tool_deprecated_and_does_not_run() -> None:
    tool = old_weather(
        deprecated=True, sunset_date="2026-12-31", replacement="get_weather", migration_guide=GUIDE
    )
    result = await call_at(tool, datetime(2027, 1, 1, tzinfo=UTC))
    assert isinstance(result.return_value, ToolDeprecatedError)
    assert tool.calls == 0
    # The standard's deprecation response.
    error = to_envelope(result).dump()["error"]
    assert error == {
        "code": "TOOL_DEPRECATED",
        "message": "Tool `get_weather_v1` is deprecated and was retired on 2026-12-31; use "
        f"`get_weather` instead (migration guide: {GUIDE})",
        "retryable": False,
        "replacement": "get_weather",
        "sunset_date": "2026-12-31",
        "migration_guide": GUIDE,
    }


async def test_on_the_sunset_day_itself_the_tool_still_works() -> None:
    tool = old_weather(deprecated=True, sunset_date="2026-12-31")
    result = await call_at(tool, datetime(2026, 12, 31, 23, 59, tzinfo=UTC))
    assert not result.return_value.is_error


async def test_before_the_sunset_the_call_runs_with_a_warning_in_its_metadata() -> None:
    tool = old_weather(
        deprecated=True, sunset_date="2026-12-31", replacement="get_weather", migration_guide=GUIDE
    )
    result = await call_at(tool, datetime(2026, 6, 1, tzinfo=UTC))
    assert tool.calls == 1
    metadata = to_envelope(result).dump()["metadata"]
    warning = (
        "Tool `get_weather_v1` is deprecated and will be retired after 2026-12-31; use "
        f"`get_weather` instead (migration guide: {GUIDE})."
    )
    assert metadata["warnings"] == [warning]
    assert metadata["deprecation"] == {
        "deprecated": True,
        "sunset_date": "2026-12-31",
        "replacement": "get_weather",
        "migration_guide": GUIDE,
    }
    assert result.return_value.message == f"from v1\n{warning}"
    assert result.return_value.output == "sunny"


async def test_the_model_warning_can_be_left_out_of_the_message() -> None:
    tool = old_weather(deprecated=True)
    result = await call_at(tool, datetime(2026, 6, 1, tzinfo=UTC), warn_model=False)
    assert result.return_value.message == "from v1"
    assert to_envelope(result).dump()["metadata"]["warnings"]


async def test_a_sunset_date_time_is_compared_to_the_instant() -> None:
    tool = old_weather(sunset_date="2026-12-31T12:00:00+00:00")
    assert not (
        await call_at(tool, datetime(2026, 12, 31, 11, 59, tzinfo=UTC))
    ).return_value.is_error
    assert (await call_at(tool, datetime(2026, 12, 31, 12, 1, tzinfo=UTC))).return_value.is_error


async def test_tools_that_are_not_deprecated_are_untouched() -> None:
    tool = old_weather()
    result = await call_at(tool, datetime(2030, 1, 1, tzinfo=UTC))
    metadata = to_envelope(result).dump()["metadata"]
    assert "warnings" not in metadata and "deprecation" not in metadata
    assert result.return_value.message == "from v1"
