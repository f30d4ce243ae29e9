"""TimeoutPolicy: a call over its limit is cancelled and answered with TIMEOUT."""

from __future__ import annotations

import asyncio

import pytest

from kosong.standard.codes import error_code
from kosong.standard.pipeline import with_policies
from kosong.standard.policies import RetryPolicy, TimeoutPolicy
from kosong.tooling import ToolOk
from kosong.tooling.error import ToolTimeoutError
from tests.standard._std_tools import Blocking, Scripted, make_call, toolset


async def test_a_call_over_the_limit_gets_timeout_and_its_task_is_cancelled() -> None:
    tool = Blocking()
    pipeline = with_policies(toolset(tool), TimeoutPolicy(0.05))
    result = await asyncio.wait_for(pipeline.handle(make_call("blocking", {})), 5)
    assert isinstance(result.return_value, ToolTimeoutError)
    assert error_code(result.return_value) == "TIMEOUT"
    assert "within its time limit of 0.05 seconds" in result.return_value.message
    await asyncio.wait_for(tool.cancelled.wait(), 5)


async def test_a_fast_call_is_untouched() -> None:
    pipeline = with_policies(toolset(Scripted(lambda n: ToolOk(output="quick"))), TimeoutPolicy(5))
    result = await pipeline.handle(make_call("scripted", {}))
    assert result.return_value.output == "quick"


async def test_per_tool_limits_override_the_default() -> None:
    slow, quick = Blocking(), Blocking(name="other")
    policy = TimeoutPolicy(0.05, per_tool={"blocking": None})
    pipeline = with_policies(toolset(slow, quick), policy)
    assert policy.limit_for("blocking") is None and policy.limit_for("other") == 0.05
    unlimited = pipeline.handle(make_call("blocking", {}))
    limited = await asyncio.wait_for(pipeline.handle(make_call("other", {})), 5)
    assert error_code(limited.return_value) == "TIMEOUT"
    await asyncio.wait_for(slow.started.wait(), 5)
    slow.release.set()
    assert (await asyncio.wait_for(unlimited, 5)).return_value.output == "done 1"


async def test_timeouts_of_a_read_only_tool_are_retried_twice() -> None:
    tool = Blocking(read_only_hint=True)
    pipeline = with_policies(toolset(tool), RetryPolicy(base_delay=0.001), TimeoutPolicy(0.02))
    result = await asyncio.wait_for(pipeline.handle(make_call("blocking", {})), 5)
    assert error_code(result.return_value) == "TIMEOUT"
    assert tool.runs == 3  # the first attempt and two retries


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan")])
def test_limits_must_be_positive_numbers(seconds: float) -> None:
    with pytest.raises(ValueError, match="positive number"):
        TimeoutPolicy(seconds)
    with pytest.raises(ValueError, match="positive number"):
        TimeoutPolicy(1, per_tool={"x": seconds})


def test_one_policy_serves_calls_on_several_event_loops() -> None:
    policy = TimeoutPolicy(0.05)

    async def one_call() -> str | None:
        pipeline = with_policies(toolset(Blocking()), policy)
        result = await asyncio.wait_for(pipeline.handle(make_call("blocking", {})), 5)
        return error_code(result.return_value)

    # Each loop gets its own watchdog; a later loop must not use a closed one's.
    assert [asyncio.run(one_call()) for _ in range(3)] == ["TIMEOUT"] * 3
