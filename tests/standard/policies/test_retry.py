"""RetryPolicy: the standard's retry rules, the safety rule, backoff and the deadline."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kosong.standard import coded_error, error_code, with_policies
from kosong.standard.policies import DebugPolicy, RetryPolicy, RetryRule
from kosong.tooling import ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import (
    ToolNetworkError,
    ToolPermissionDeniedError,
    ToolQuotaExceededError,
    ToolRateLimitedError,
    ToolRuntimeError,
    ToolTimeoutError,
    ToolValidateError,
)
from tests.standard._std_tools import Scripted, make_call, standard_data, toolset

FAST: dict[str, Any] = {"base_delay": 0.001, "max_delay": 0.002}


def failing(error: ToolReturnValue, *, times: int = 100, **hints: Any) -> Scripted:
    return Scripted(lambda n: error if n < times else ToolOk(output="recovered"), **hints)


async def run(tool: Scripted, policy: RetryPolicy | None = None) -> ToolResult:
    pipeline = with_policies(toolset(tool), DebugPolicy(), policy or RetryPolicy(**FAST))
    return await asyncio.wait_for(pipeline.handle(make_call("scripted", {})), 10)


@pytest.mark.parametrize(
    ("error", "attempts"),
    [
        (ToolNetworkError("down"), 4),  # network errors: up to 3 retries
        (ToolTimeoutError("t", 1), 3),  # timeouts: up to 2 retries
        (ToolRateLimitedError("slow"), 4),
        (ToolValidateError("bad"), 1),  # invalid params: never
        (ToolPermissionDeniedError("t", "no"), 1),  # permission: never
        (ToolQuotaExceededError("spent"), 1),  # quota: never
        (ToolRuntimeError("boom"), 1),  # execution errors are not retryable in the catalog
        (coded_error("CITY_NOT_FOUND", "no"), 1),
    ],
)
async def test_retries_follow_the_standards_rules(error: ToolReturnValue, attempts: int) -> None:
    tool = failing(error, read_only_hint=True)
    result = await run(tool)
    assert tool.calls == attempts
    assert error_code(result.return_value) == error_code(error)
    debug = standard_data(result)["debug_info"]
    assert debug["retry_count"] == attempts - 1
    assert debug["attempt_codes"] == [error_code(error)] * attempts


async def test_a_retry_that_succeeds_returns_the_success() -> None:
    tool = failing(ToolNetworkError("flaky"), times=2, idempotent_hint=True)
    result = await run(tool)
    assert result.return_value.output == "recovered" and tool.calls == 3


async def test_an_error_that_says_it_is_retryable_gets_the_fallback_rule() -> None:
    tool = failing(coded_error("UPSTREAM_BUSY", "busy", retryable=True), read_only_hint=True)
    await run(tool)
    assert tool.calls == 3
    tool = failing(coded_error("UPSTREAM_BUSY", "busy", retryable=True), read_only_hint=True)
    await run(tool, RetryPolicy(retryable_rule=None, **FAST))
    assert tool.calls == 1


async def test_a_call_with_an_idempotency_key_is_retried_even_when_the_tool_is_not_safe() -> None:
    tool = failing(ToolNetworkError("down"), times=1)  # no hints: might be a write
    pipeline = with_policies(toolset(tool), DebugPolicy(), RetryPolicy(**FAST))
    call = make_call("scripted", {}, idempotency_key="order-42")
    result = await asyncio.wait_for(pipeline.handle(call), 10)
    assert result.return_value.output == "recovered" and tool.calls == 2


async def test_tools_not_safe_to_repeat_are_not_retried() -> None:
    tool = failing(ToolNetworkError("down"))  # no hints: might be a write
    result = await run(tool)
    assert tool.calls == 1
    assert "has no idempotency key" in standard_data(result)["debug_info"]["retry_skipped"]
    destructive = failing(ToolNetworkError("down"), destructive_hint=True)
    await run(destructive)
    assert destructive.calls == 1


async def test_tools_named_in_allow_are_retried_anyway() -> None:
    tool = failing(ToolNetworkError("down"), times=1)
    result = await run(tool, RetryPolicy(allow={"scripted"}, **FAST))
    assert result.return_value.output == "recovered" and tool.calls == 2


async def test_rate_limits_wait_retry_after() -> None:
    tool = failing(
        ToolRateLimitedError("slow down", retry_after=0.05), times=1, read_only_hint=True
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await run(
        tool, RetryPolicy(base_delay=10, max_delay=10)
    )  # the backoff would be 5-10 s
    assert result.return_value.output == "recovered"
    assert 0.05 <= loop.time() - started < 2


async def test_custom_rules_replace_the_defaults() -> None:
    tool = failing(ToolNetworkError("down"), read_only_hint=True)
    await run(tool, RetryPolicy(rules={"NETWORK_ERROR": RetryRule(1)}, **FAST))
    assert tool.calls == 2
    with pytest.raises(ValueError, match="negative"):
        RetryRule(-1)


async def test_no_retry_starts_if_its_wait_would_pass_the_deadline() -> None:
    tool = failing(ToolNetworkError("down"), read_only_hint=True)
    result = await run(tool, RetryPolicy(base_delay=1.0, max_delay=1.0, deadline=0.2))
    assert tool.calls == 1
    assert "deadline" in standard_data(result)["debug_info"]["retry_stopped"]


async def test_a_retry_still_running_at_the_deadline_is_stopped() -> None:
    cancelled = asyncio.Event()

    async def forever() -> ToolReturnValue:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    # The first attempt fails at once; the retry hangs until the deadline stops it.
    tool = Scripted(
        lambda n: ToolNetworkError("blip") if n == 0 else forever(), read_only_hint=True
    )
    result = await run(tool, RetryPolicy(base_delay=0.001, max_delay=0.001, deadline=0.1))
    assert error_code(result) == "TIMEOUT"
    assert "retry deadline of 0.1 seconds" in result.return_value.message
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_cancelling_during_the_backoff_ends_the_call_without_another_attempt() -> None:
    tool = failing(ToolNetworkError("down"), read_only_hint=True)
    pipeline = with_policies(toolset(tool), RetryPolicy(base_delay=30, max_delay=30, deadline=None))
    pending = pipeline.handle(make_call("scripted", {}))
    async with asyncio.timeout(5):
        await tool.wait_calls(1)
    assert isinstance(pending, asyncio.Future)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(pending, 5)
    assert tool.calls == 1


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0, rng=random.Random(7))
    for retry in range(1, 8):
        cap = min(4.0, 0.5 * 2 ** (retry - 1))
        for _ in range(50):
            assert cap / 2 <= policy.backoff(retry) <= cap
    samples = {round(policy.backoff(3), 6) for _ in range(20)}
    assert len(samples) > 1  # jitter: not the same wait every time


@pytest.mark.parametrize(
    "kwargs", [{"base_delay": -1}, {"max_delay": float("nan")}, {"deadline": 0}, {"deadline": -5}]
)
def test_invalid_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_zero_delays_are_allowed_and_a_negative_one_is_named() -> None:
    assert RetryPolicy(base_delay=0, max_delay=0).backoff(3) == 0
    with pytest.raises(ValueError, match="base_delay must be a non-negative number of seconds"):
        RetryPolicy(base_delay=-1)
