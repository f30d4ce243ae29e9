"""The two contexts of a call: the tool's small view, and what the policies share."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.message import Message, ToolCall
from kosong.standard import (
    RESERVED_METADATA,
    CallContext,
    ElicitAnswer,
    Forward,
    Policy,
    PolicyContext,
    arguments_digest,
    caller_scope,
    current_call,
    elicit_with,
    with_policies,
)
from kosong.standard.policies import DebugPolicy
from kosong.testing import ScriptedTool
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue
from tests.standard._std_tools import Weather, make_call, standard_data, toolset
from tests.tooling._strategies import json_values


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


@given(json_values())
def test_the_key_ignores_key_order_for_any_json_object(value: Any) -> None:

    if isinstance(value, dict):
        reordered = dict(reversed(list(value.items())))
        assert arguments_digest(value, False) == arguments_digest(reordered, False)
    assert arguments_digest({"v": value}, False) != arguments_digest({"v": value}, True)


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
        return ToolOk(output="ok")

    pipeline = with_policies(toolset(ScriptedTool("probe", [body])), DebugPolicy())
    result = await pipeline.handle(make_call("probe", {}, "c9", trace_id="trace_given"))
    assert (seen["id"], seen["name"], seen["trace"]) == ("c9", "probe", "trace_given")
    # No pipeline state: no retries, cache, arguments, sinks, tool definition...
    assert seen["public"] == [
        "add_debug",
        "add_warning",
        "debug_enabled",
        "elapsed_ms",
        "elicit",
        "log",  # to whoever made the call, as `sample` asks their model
        "record_timing",
        "report_progress",
        "sample",
        "set_metadata",
        "tool_call_id",
        "tool_name",
        "trace_id",
    ]
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


class Recording:
    """A caller that records what the tool sent it (what an MCP server's client would get)."""

    def __init__(self) -> None:
        self.sampled: list[tuple[list[Any], str, int, float | None]] = []
        self.logged: list[tuple[str, Any, str | None]] = []

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        return ElicitAnswer.accept({"name": "Ada"})

    async def sample(
        self, messages: list[Any], system_prompt: str, max_tokens: int, temperature: float | None
    ) -> Message:
        self.sampled.append((messages, system_prompt, max_tokens, temperature))
        return Message(role="assistant", content="sampled")

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        self.logged.append((level, data, logger))


async def test_sample_and_log_reach_the_caller_in_scope() -> None:
    caller = Recording()
    ctx = CallContext("c1", "tool", "trace_x")
    with caller_scope(caller):
        answer = await ctx.sample("Hi", system_prompt="Be brief.", max_tokens=10)
        await ctx.log("notice", {"step": 1}, logger="db")
        asked = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
    assert answer.extract_text() == "sampled" and asked.content == {"name": "Ada"}
    assert caller.sampled == [([Message(role="user", content="Hi")], "Be brief.", 10, None)]
    assert caller.logged == [("notice", {"step": 1}, "db")]
    with pytest.raises(ValueError, match="level must be one of debug, info"):
        await ctx.log("verbose", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        await ctx.sample("Hi", max_tokens=0)


async def test_without_a_caller_sample_raises_and_elicit_declines() -> None:
    ctx = CallContext("c1", "tool", "trace_x")
    with pytest.raises(RuntimeError, match="nobody who made this call can sample"):
        await ctx.sample("Hi")
    assert (await ctx.elicit("Name?", {"type": "object"})).action == "decline"
    alone = elicit_with(Recording().elicit)  # an elicitor alone: it cannot sample
    with alone, pytest.raises(RuntimeError, match="cannot sample"):
        await ctx.sample("Hi")
