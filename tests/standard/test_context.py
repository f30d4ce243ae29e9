"""The two contexts of a call: the tool's small view, and what the policies share."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.message import ToolCall
from kosong.standard import (
    RESERVED_METADATA,
    CallContext,
    Forward,
    Policy,
    PolicyContext,
    current_call,
    with_policies,
)
from kosong.standard.policies import DebugPolicy
from kosong.testing import ScriptedTool
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue
from tests.standard._std_tools import Weather, make_call, standard_data, toolset


class Keys(Policy):
    """Notes the arguments key of every call, refused ones included."""

    observes_refusals = True

    def __init__(self) -> None:
        self.keys: list[str | None] = []

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        self.keys.append(ctx.arguments_key)
        return await forward(call, ctx)


async def keys_of(*texts: str) -> list[str | None]:
    policy = Keys()
    pipeline = with_policies(toolset(Weather()), policy)
    for text in texts:
        await pipeline.handle(make_call("get_weather", text))
    return policy.keys


async def test_reordered_keys_and_spacing_share_an_arguments_key() -> None:
    keys = await keys_of(
        '{"location": "x", "unit": "c"}',
        '{"unit":"c","location":"x"}',
        ' { "unit" : "c" ,"location":"x"}',
    )
    assert len(set(keys)) == 1 and keys[0] is not None


async def test_a_json_string_argument_and_the_object_it_encodes_do_not_share_a_key() -> None:
    plain = json.dumps({"location": "x"})
    keys = await keys_of(plain, json.dumps(plain))
    assert None not in keys and keys[0] != keys[1]


async def test_different_values_have_different_keys() -> None:
    keys = await keys_of('{"location": "x"}', '{"location": "y"}', '{"location": "x", "unit": "k"}')
    assert len(set(keys)) == 3


async def test_arguments_the_toolset_refuses_have_no_key() -> None:
    assert await keys_of('{"location": ', '{"location": "x", "location": "y"}') == [None, None]


async def test_a_tool_sees_only_its_small_context() -> None:
    seen: dict[str, Any] = {}

    def body() -> ToolReturnValue:
        ctx = current_call()
        assert isinstance(ctx, CallContext)
        seen.update(
            id=ctx.tool_call_id,
            name=ctx.tool_name,
            trace=ctx.trace_id,
            public=sorted(name for name in dir(ctx) if not name.startswith("_")),
        )
        ctx.add_warning("careful")
        ctx.set_metadata("source", "cache-less")
        ctx.add_debug("step", "kept in debug mode")
        ctx.record_timing("network_ms", 1.5)
        seen["recorded"] = (ctx.warnings, ctx.metadata, ctx.timings, ctx.debug_info)
        return ToolOk(output="ok")

    pipeline = with_policies(toolset(ScriptedTool("probe", [body])), DebugPolicy())
    result = await pipeline.handle(make_call("probe", {}, "c9", trace_id="trace_given"))
    assert (seen["id"], seen["name"], seen["trace"]) == ("c9", "probe", "trace_given")
    # No pipeline state: no retries, cache, arguments, sinks, tool definition... What the tool
    # added is readable as plain fields (debug_info, metadata, timings, warnings): the result's
    # metadata reads them there.
    assert seen["public"] == [
        "add_debug",
        "add_warning",
        "debug_enabled",
        "debug_info",
        "elapsed_ms",
        "elicit",
        "log",  # to whoever made the call, as `sample` asks their model
        "metadata",
        "record_timing",
        "report_progress",
        "sample",
        "set_metadata",
        "timings",
        "tool_call_id",
        "tool_name",
        "trace_id",
        "warnings",
    ]
    assert seen["recorded"] == (
        ["careful"],
        {"source": "cache-less"},
        {"network_ms": 1.5},
        {"step": "kept in debug mode"},
    )
    metadata = standard_data(result)["metadata"]
    assert metadata["warnings"] == ["careful"]
    assert metadata["source"] == "cache-less"
    assert metadata["performance"]["network_ms"] == 1.5
    assert standard_data(result)["debug_info"]["step"] == "kept in debug mode"


@pytest.mark.parametrize("key", sorted(RESERVED_METADATA))
def test_a_tool_cannot_overwrite_the_pipelines_own_metadata(key: str) -> None:
    ctx = CallContext("c1", "tool", "trace_x")
    with pytest.raises(ValueError, match="written by the pipeline"):
        ctx.set_metadata(key, "forged")


@given(st.one_of(st.booleans(), st.floats(), st.text(), st.none(), st.integers()))
def test_progress_must_be_a_number_from_0_to_100_or_none(value: Any) -> None:
    # None is progress without a percentage (an MCP server's progress without a total).
    ctx = CallContext("c1", "tool", "trace_x")
    valid = value is None or (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and value == value  # not NaN
        and 0 <= value <= 100
    )
    if valid:
        ctx.report_progress(value)
    else:
        with pytest.raises(ValueError, match="from 0 to 100"):
            ctx.report_progress(value)
