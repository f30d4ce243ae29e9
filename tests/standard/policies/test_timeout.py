"""TimeoutPolicy: a call over its limit is cancelled and answered with TIMEOUT."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import tracemalloc

import pytest

from kosong.standard import error_code, with_policies
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


async def test_timeout_answers_at_its_deadline_even_when_the_tool_swallows_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    ended = asyncio.Event()

    async def stubborn(n: int) -> ToolOk:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # swallowed: the tool goes on
                await release.wait()
        ended.set()
        return ToolOk(output="too late")

    policy = TimeoutPolicy(0.05, grace=0.05)
    pipeline = with_policies(toolset(Scripted(stubborn)), policy)
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await asyncio.wait_for(pipeline.handle(make_call("scripted", {})), 5)
    took = loop.time() - started
    assert error_code(result.return_value) == "TIMEOUT"
    # The deadline plus the grace (0.1 s), not whenever the tool ends: it never does by itself,
    # so any answer before the 5 s bound is the policy's (2 s leaves a busy machine room).
    assert 0.05 <= took < 2.0
    assert caplog.text.count("kept running") == 1
    assert not ended.is_set()  # still running, in the background, owned by the policy
    release.set()  # the stubborn task ends on its own, in the background
    await asyncio.wait_for(ended.wait(), 5)
    await asyncio.wait_for(policy.aclose(), 5)  # nothing left to stop


async def test_aclose_stops_the_calls_that_ignored_their_timeout() -> None:
    stopped = asyncio.Event()

    async def stubborn_once(n: int) -> ToolOk:
        with contextlib.suppress(asyncio.CancelledError):  # swallows the timeout's cancellation
            await asyncio.Event().wait()
        try:
            await asyncio.Event().wait()  # until cancelled again
        finally:
            stopped.set()
        return ToolOk(output="never")

    policy = TimeoutPolicy(0.05, grace=0.05)
    pipeline = with_policies(toolset(Scripted(stubborn_once)), policy)
    result = await asyncio.wait_for(pipeline.handle(make_call("scripted", {})), 5)
    assert error_code(result.return_value) == "TIMEOUT"
    assert not stopped.is_set()
    await asyncio.wait_for(policy.aclose(), 5)
    assert stopped.is_set()


async def test_the_callers_cancellation_still_cancels_the_tool_under_a_timeout() -> None:
    tool = Blocking()
    pending = with_policies(toolset(tool), TimeoutPolicy(30)).handle(make_call("blocking", {}))
    await asyncio.wait_for(tool.started.wait(), 5)
    assert isinstance(pending, asyncio.Future)
    pending.cancel()
    await asyncio.wait_for(tool.cancelled.wait(), 5)
    with pytest.raises(asyncio.CancelledError):
        await pending


async def test_finished_calls_are_released_at_once_while_a_long_call_runs() -> None:
    long_call = Blocking()
    pipeline = with_policies(
        toolset(long_call, Scripted(lambda n: ToolOk(output="x" * 10_000))), TimeoutPolicy(30)
    )
    pending = pipeline.handle(make_call("blocking", {}))
    await asyncio.wait_for(long_call.started.wait(), 5)
    tracemalloc.start()
    try:
        for _ in range(200):  # warm up: caches, free lists
            await pipeline.handle(make_call("scripted", {}))
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3000):
            await pipeline.handle(make_call("scripted", {}))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 3,000 results of 10 KB each would be 30 MB if they were kept.
    assert grown < 1_000_000, grown
    long_call.release.set()
    assert (await asyncio.wait_for(pending, 5)).return_value.output == "done 1"
