"""Policies around composition wrappers, and wrappers around policy pipelines."""

from __future__ import annotations

import asyncio

from kosong.standard import error_code, with_policies
from kosong.standard.policies import (
    UNKNOWN_TOOL,
    ApprovalPolicy,
    ApprovalRequest,
    CachePolicy,
    MetricsPolicy,
    RepeatGuardPolicy,
)
from kosong.testing import RecordingListener
from kosong.tooling import ToolOk, ToolResult, Toolset, combined
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType
from tests.standard._std_tools import Scripted, Weather, make_call


async def run(toolset: Toolset, name: str, arguments: JsonType, call_id: str) -> ToolResult:
    result = await asyncio.wait_for(toolset.handle(make_call(name, arguments, call_id=call_id)), 5)
    assert result.tool_call_id == call_id
    return result


async def test_policies_around_a_wrapper_see_the_names_and_hints_the_model_sees() -> None:
    rm = Scripted(lambda n: ToolOk(output="removed"), name="rm", destructive_hint=True)
    ls = Scripted(lambda n: ToolOk(output="listed"), name="ls", read_only_hint=True)
    secret = Scripted(lambda n: ToolOk(output="never"), name="secret")
    requests: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        requests.append(request)
        return True

    metrics = MetricsPolicy()
    pipeline = with_policies(
        SimpleToolset([rm, ls, secret]).filtered(["rm", "ls"]).prefixed("fs_"),
        metrics,
        ApprovalPolicy(approve),
    )
    removed = await run(pipeline, "fs_rm", {"path": "/tmp/x"}, "c1")
    listed = await run(pipeline, "fs_ls", {}, "c2")
    hidden = await run(pipeline, "fs_secret", {}, "c3")
    assert removed.return_value.output == "removed" and listed.return_value.output == "listed"
    (request,) = requests  # only the destructive one, under the name the model used
    assert request.tool.name == "fs_rm" and request.arguments == {"path": "/tmp/x"}
    assert removed.metadata is not None and removed.metadata["tool_name"] == "fs_rm"
    assert hidden.return_value.is_error and secret.calls == 0
    counts = {name: m.calls for name, m in metrics.registry.snapshot().items()}
    assert counts == {"fs_rm": 1, "fs_ls": 1, UNKNOWN_TOOL: 1}


async def test_wrappers_around_a_pipeline_keep_its_policies_and_metadata() -> None:
    weather = Weather()
    inner = with_policies(SimpleToolset([weather]), RepeatGuardPolicy(2), CachePolicy())
    toolset = inner.renamed({"get_weather": "weather"}).prefixed("city_")
    first = await run(toolset, "city_weather", {"location": "Paris"}, "c1")
    second = await run(toolset, "city_weather", {"location": "Paris"}, "c2")
    third = await run(toolset, "city_weather", {"location": "Paris"}, "c3")
    assert len(weather.calls) == 1  # the pipeline's cache answered the second call
    assert second.metadata is not None
    cache = second.metadata["cache"]
    assert isinstance(cache, dict) and cache["hit"] is True
    # The pipeline inside sees the tool's own name; its metadata comes back with the result.
    assert first.metadata is not None and first.metadata["tool_name"] == "get_weather"
    assert error_code(third.return_value) == "REPEATED_CALL"


async def test_combined_pipelines_each_apply_their_own_policies() -> None:
    listener = RecordingListener()
    from kosong.standard.policies import EventHookPolicy

    audited = with_policies(
        SimpleToolset([Scripted(lambda n: "a", name="audited")]), EventHookPolicy(listener)
    )
    free = SimpleToolset([Scripted(lambda n: "f", name="free")])
    toolset = combined(audited, free)
    assert (await run(toolset, "audited", {}, "c1")).return_value.output == "a"
    assert (await run(toolset, "free", {}, "c2")).return_value.output == "f"
    assert listener.kinds() == ["tool_result"]  # only the audited part's call was heard


async def test_a_stream_through_a_wrapper_carries_the_tools_progress() -> None:
    from kosong.standard import report_progress

    async def work() -> str:
        report_progress(50, "half")
        return "done"

    tool = Scripted(lambda n: work(), name="work")
    pipeline = with_policies(SimpleToolset([tool]).prefixed("job_"), MetricsPolicy())
    async with pipeline.stream(make_call("job_work", {})) as events:
        seen = [(e.event, e.data.get("progress")) async for e in events]
    assert seen == [("tool_progress", 50), ("tool_result", None)]
