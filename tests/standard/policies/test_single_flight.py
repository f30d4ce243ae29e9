"""SingleFlightPolicy: identical concurrent calls to safe tools share one run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kosong.standard import to_envelope, with_policies
from kosong.standard.policies import DebugPolicy, SingleFlightPolicy
from tests.standard._std_tools import Blocking, make_call, toolset


def shared(tool: Blocking, policy: SingleFlightPolicy | None = None) -> Any:
    return with_policies(toolset(tool), DebugPolicy(), policy or SingleFlightPolicy())


async def test_identical_concurrent_calls_to_a_read_only_tool_run_once() -> None:
    tool = Blocking(read_only_hint=True)
    policy = SingleFlightPolicy()
    pipeline = shared(tool, policy)
    calls = [pipeline.handle(make_call("blocking", {"q": 1, "r": 2}, f"c{i}")) for i in range(3)]
    calls.append(pipeline.handle(make_call("blocking", {"r": 2, "q": 1}, "c3")))  # same, reordered
    async with asyncio.timeout(5):
        await tool.started.wait()
        # Every call has joined by now: they started before the tool's own task could run.
        assert policy.in_flight == 1
        tool.release.set()
        results = await asyncio.gather(*calls)
    assert tool.runs == 1
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert {r.return_value.output for r in results} == {"done 1"}
    shared_flags = [to_envelope(r).dump()["debug_info"]["shared_execution"] for r in results]
    assert shared_flags == [False, True, True, True]
    assert policy.in_flight == 0


async def test_tools_that_are_not_safe_to_repeat_always_run() -> None:
    tool = Blocking()  # no hints
    pipeline = shared(tool)
    calls = [pipeline.handle(make_call("blocking", {}, f"c{i}")) for i in range(2)]
    async with asyncio.timeout(5):
        await tool.wait_runs(2)
        tool.release.set()
        await asyncio.gather(*calls)
    assert tool.runs == 2


async def test_tools_named_in_also_are_shared() -> None:
    tool = Blocking()
    pipeline = shared(tool, SingleFlightPolicy(also={"blocking"}))
    calls = [pipeline.handle(make_call("blocking", {}, f"c{i}")) for i in range(2)]
    async with asyncio.timeout(5):
        await tool.started.wait()
        tool.release.set()
        await asyncio.gather(*calls)
    assert tool.runs == 1


async def test_different_arguments_run_separately() -> None:
    tool = Blocking(idempotent_hint=True)
    pipeline = shared(tool)
    calls = [pipeline.handle(make_call("blocking", {"n": i}, f"c{i}")) for i in range(2)]
    async with asyncio.timeout(5):
        await tool.wait_runs(2)
        tool.release.set()
        await asyncio.gather(*calls)


async def test_a_cancelled_waiter_leaves_the_shared_run_alone() -> None:
    tool = Blocking(read_only_hint=True)
    pipeline = shared(tool)
    leader = pipeline.handle(make_call("blocking", {}, "leader"))
    follower = pipeline.handle(make_call("blocking", {}, "follower"))
    async with asyncio.timeout(5):
        await tool.started.wait()
        assert isinstance(follower, asyncio.Future)
        follower.cancel()
        with pytest.raises(asyncio.CancelledError):
            await follower
        assert not tool.cancelled.is_set()
        tool.release.set()
        assert (await leader).return_value.output == "done 1"


async def test_when_the_running_call_is_cancelled_a_waiter_takes_over() -> None:
    tool = Blocking(read_only_hint=True)
    pipeline = shared(tool)
    leader = pipeline.handle(make_call("blocking", {}, "leader"))
    async with asyncio.timeout(5):
        await tool.started.wait()
        follower = pipeline.handle(make_call("blocking", {}, "follower"))
        await asyncio.sleep(0)  # one loop turn: the follower's task starts waiting on the leader

        assert isinstance(leader, asyncio.Future)
        leader.cancel()
        await tool.cancelled.wait()
        await tool.wait_runs(2)  # the follower runs the tool itself
        tool.release.set()
        result = await follower
    assert result.return_value.output == "done 2"
    assert to_envelope(result).dump()["debug_info"]["shared_execution"] is False
