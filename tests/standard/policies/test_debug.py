"""DebugPolicy: results carry debug_info for developers."""

from __future__ import annotations

from kosong.standard import current_call, to_envelope, with_policies
from kosong.standard.policies import CachePolicy, DebugPolicy, MetricsPolicy
from kosong.tooling import ToolOk, ToolReturnValue
from tests.standard._std_tools import Scripted, Weather, make_call, toolset


async def test_debug_info_reports_what_happened_to_the_call() -> None:
    pipeline = with_policies(toolset(Weather()), DebugPolicy(), CachePolicy())
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    hit = to_envelope(await pipeline.handle(make_call("get_weather", {"location": "x"}))).dump()
    debug = hit["debug_info"]
    assert debug["cache_hit"] is True and debug["retry_count"] == 0
    assert debug["trace_id"] == hit["metadata"]["trace_id"]
    assert debug["cache_key"].startswith("get_weather:1.0.0:")
    assert debug["execution_time_ms"] >= 0


async def test_tools_can_add_their_own_debug_details() -> None:
    async def body(n: int) -> ToolReturnValue:
        ctx = current_call()
        assert ctx is not None
        ctx.add_debug("internal_api_response", {"status": 200, "body": "..."})
        ctx.add_debug("query_duration_ms", 45)
        return ToolOk()

    result = await with_policies(toolset(Scripted(body)), DebugPolicy()).handle(
        make_call("scripted", {})
    )
    debug = to_envelope(result).dump()["debug_info"]
    assert debug["internal_api_response"] == {"status": 200, "body": "..."}
    assert debug["query_duration_ms"] == 45


async def test_arguments_are_included_only_when_asked() -> None:
    pipeline = with_policies(toolset(Weather()), DebugPolicy(include_arguments=True))
    result = await pipeline.handle(make_call("get_weather", {"location": "x"}))
    assert to_envelope(result).dump()["debug_info"]["arguments"] == '{"location": "x"}'


async def test_without_debug_mode_there_is_no_debug_info() -> None:
    async def body(n: int) -> ToolReturnValue:
        ctx = current_call()
        assert ctx is not None and not ctx.debug_enabled
        ctx.add_debug("ignored", 1)
        return ToolOk()

    result = await with_policies(toolset(Scripted(body)), MetricsPolicy()).handle(
        make_call("scripted", {})
    )
    assert "debug_info" not in to_envelope(result).dump()
