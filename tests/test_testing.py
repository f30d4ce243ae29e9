"""kosong.testing: the doubles behave as documented."""

from __future__ import annotations

import asyncio
import json

import pytest

from kosong.standard import with_policies
from kosong.standard.policies import EventHookPolicy
from kosong.testing import RecordingListener, ScriptedTool, make_call
from kosong.tooling import ToolError, ToolOk
from kosong.tooling.simple import SimpleToolset


def test_make_call_encodes_dicts_sends_text_as_is_and_numbers_its_ids() -> None:
    first, second = make_call("t", {"a": 1}), make_call("t", '{"broken')
    assert first.function.arguments == json.dumps({"a": 1})
    assert second.function.arguments == '{"broken'
    assert first.id != second.id and first.id.startswith("call-")
    assert make_call("t").function.arguments is None
    given = make_call("t", {}, "c1", trace_id="trace_x")
    assert given.id == "c1" and given.extras == {"trace_id": "trace_x"}


async def test_scripted_tool_plays_its_steps_and_repeats_the_last() -> None:
    async def later() -> ToolOk:
        await asyncio.sleep(0)
        return ToolOk(output="awaited")

    tool = ScriptedTool("t", ["text", RuntimeError("boom"), later, ToolError(message="no")])
    toolset = SimpleToolset([tool])
    values = [(await toolset.handle(make_call("t", {"i": i}))).return_value for i in range(5)]
    assert values[0].output == "text"
    assert values[1].message == "Error running tool: RuntimeError: boom"
    assert values[2].output == "awaited"
    assert values[3].message == values[4].message == "no"
    assert tool.calls == 5 and tool.arguments[4] == {"i": 4}


async def test_a_script_may_be_a_function_of_the_call_number() -> None:
    tool = ScriptedTool("t", lambda n: f"call {n}", read_only_hint=True)
    assert tool.read_only_hint is True
    toolset = SimpleToolset([tool])
    outputs = [(await toolset.handle(make_call("t", {}))).return_value.output for _ in range(3)]
    assert outputs == ["call 0", "call 1", "call 2"]


def test_an_empty_script_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one step"):
        ScriptedTool("t", [])


async def test_a_gated_tool_holds_its_calls_until_released() -> None:
    tool = ScriptedTool("t", ["done"], gated=True)
    pending = [SimpleToolset([tool]).handle(make_call("t", {})) for _ in range(2)]
    await asyncio.wait_for(tool.wait_calls(2), 5)
    assert not any(p.done() for p in pending if isinstance(p, asyncio.Future))
    tool.release()
    results = await asyncio.wait_for(asyncio.gather(*pending), 5)
    assert [r.return_value.output for r in results] == ["done", "done"]


async def test_recording_listener_keeps_every_event_by_call() -> None:
    listener = RecordingListener()
    toolset = with_policies(SimpleToolset([ScriptedTool("t", ["ok"])]), EventHookPolicy(listener))
    first, second = make_call("t", {}), make_call("t", {})
    await toolset.handle(first)
    await toolset.handle(second)
    assert listener.kinds() == ["tool_result", "tool_result"]
    assert [e.event for e in listener.of(first.id)] == ["tool_result"]
    assert len(listener.finals([second.id])) == 1
