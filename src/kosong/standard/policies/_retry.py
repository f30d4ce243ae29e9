"""Retry: call again after errors that a retry may fix, following the standard's rules.

The default rules (`DEFAULT_RULES`), by error code:

    NETWORK_ERROR   up to 3 retries, exponential backoff with jitter
    TIMEOUT         up to 2 retries, exponential backoff with jitter
    RATE_LIMITED    up to 3 retries, waiting the error's `retry_after` when it gives one
    anything else   never (INVALID_PARAMS, PERMISSION_DENIED, QUOTA_EXCEEDED...), unless the
                    error itself says `retryable: true` (then up to 2 retries)

Cancellation is never retried: it ends the call. Only tools that are safe to repeat are
retried: those whose hints say they are idempotent or read-only, those named in `allow`, and
calls that carry an idempotency key (`ToolCall.extras["idempotency_key"]`, which a kosong
server honours: the same key never runs a tool twice). A retried write could apply its side
effect twice, so other calls get their first error back.

All retries happen within an overall deadline, counted from the first attempt: no retry starts
if its wait would pass the deadline, and an attempt still running at the deadline is stopped
with a TIMEOUT error. Each retry emits one `tool_retrying` event and counts in the metrics.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kosong._seconds import optional_seconds, positive_seconds
from kosong.message import ToolCall
from kosong.standard._codes import ErrorCode, error_code, error_details, retry_after
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_safe_to_repeat
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import ToolResult, ToolReturnValue
from kosong.tooling.error import ToolTimeoutError

__all__ = ["DEFAULT_RULES", "RetryPolicy", "RetryRule"]


@dataclass(frozen=True, slots=True)
class RetryRule:
    """How often to retry one kind of error."""

    max_retries: int
    """Retries after the first attempt (so at most `max_retries + 1` attempts)."""
    honor_retry_after: bool = False
    """Wait the error's `retry_after` seconds instead of the backoff, when it gives one."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries cannot be negative")


DEFAULT_RULES: Mapping[str, RetryRule] = MappingProxyType(
    {
        ErrorCode.NETWORK_ERROR.value: RetryRule(3),
        ErrorCode.TIMEOUT.value: RetryRule(2),
        ErrorCode.RATE_LIMITED.value: RetryRule(3, honor_retry_after=True),
    }
)
"""The standard's retry rules, by error code."""


class RetryPolicy(Policy):
    """Retry failed calls by error code, with exponential backoff and jitter, within a deadline.

    See the module doc for the rules and the safety condition.
    """

    def __init__(
        self,
        *,
        rules: Mapping[str, RetryRule] = DEFAULT_RULES,
        retryable_rule: RetryRule | None = RetryRule(2),
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        deadline: float | None = 60.0,
        allow: Iterable[str] = (),
        rng: random.Random | None = None,
    ) -> None:
        """Configure the retries.

        Args:
            rules: The rule for each error code; codes not listed are not retried.
            retryable_rule: The rule for errors of other codes that say `retryable: true`
                (None: never retry those).
            base_delay: The first backoff, in seconds; each retry doubles it.
            max_delay: The longest backoff, in seconds.
            deadline: Seconds from the first attempt after which nothing is retried
                (None: no deadline).
            allow: Names of tools to retry even though their hints do not say they are safe
                to repeat.
            rng: The source of jitter (for reproducible tests).

        Raises:
            ValueError: a delay or the deadline is not a positive number.
        """
        self._base = positive_seconds(base_delay, "base_delay", zero=True)
        self._max = max(positive_seconds(max_delay, "max_delay", zero=True), base_delay)
        self._deadline = optional_seconds(deadline, "deadline")
        self._rules = dict(rules)
        self._retryable_rule = retryable_rule
        self._allow = frozenset(allow)
        self._rng = rng or random.Random()

    def rule_for(self, value: ToolReturnValue) -> RetryRule | None:
        """The rule that applies to an error result, or None when it is not retried."""
        code = error_code(value)
        if code is None:
            return None
        rule = self._rules.get(code)
        if rule is not None:
            return rule
        if code in self._rules or self._retryable_rule is None:
            return None
        return self._retryable_rule if error_details(value).get("retryable") is True else None

    def backoff(self, retry: int) -> float:
        """The wait before retry number `retry` (1, 2...): exponential, with "equal jitter".

        Half the exponential delay is fixed and half random, so waits grow with each retry
        while concurrent callers still spread out.
        """
        delay = min(self._max, self._base * 2 ** (retry - 1))
        return delay / 2 + self._rng.uniform(0, delay / 2)

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Pass the call on; retry it while the rules allow and the deadline permits."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await forward(call, ctx)
        value = result.return_value
        if not value.is_error:
            return result
        safe = (
            ctx.tool_name in self._allow
            or is_safe_to_repeat(ctx.tool)
            or _has_idempotency_key(call)
        )
        retries = 0
        while True:
            code = error_code(value) or ErrorCode.EXECUTION_ERROR.value
            ctx.attempt_codes.append(code)
            rule = self.rule_for(value)
            if rule is None or retries >= rule.max_retries:
                return result
            if not safe:
                ctx.call_context.add_debug(
                    "retry_skipped",
                    f"{code} is retryable, but `{ctx.tool_name}` is not marked idempotent or "
                    "read-only and the call has no idempotency key, so it is not repeated",
                )
                return result
            wait = retry_after(value) if rule.honor_retry_after else None
            if wait is None:
                wait = self.backoff(retries + 1)
            remaining = None
            if self._deadline is not None:
                remaining = started + self._deadline - loop.time()
                if wait >= remaining:
                    ctx.call_context.add_debug(
                        "retry_stopped", f"the {self._deadline:g} s deadline is near"
                    )
                    return result
            retries += 1
            ctx.retry_count = retries
            if ctx.has_listeners:
                ctx.emit(
                    "tool_retrying",
                    {
                        "retry_count": retries,
                        "max_retries": rule.max_retries,
                        "delay_seconds": round(wait, 3),
                        "error": {"code": code, "message": value.message},
                        "metadata": ctx.event_metadata(),
                    },
                )
            await asyncio.sleep(wait)
            if remaining is None:
                result = await forward(call, ctx)
            else:
                result = await self._attempt_until(call, ctx, forward, started)
            value = result.return_value
            if not value.is_error:
                return result

    async def _attempt_until(
        self, call: ToolCall, ctx: PolicyContext, forward: Forward, started: float
    ) -> ToolResult:
        assert self._deadline is not None
        try:
            async with asyncio.timeout_at(started + self._deadline) as scope:
                return await forward(call, ctx)
        except TimeoutError:
            if not scope.expired():  # pyright: ignore[reportPossiblyUnboundVariable] - entered
                raise
        return ToolResult(
            call.id, ToolTimeoutError(call.function.name, self._deadline, what="retry deadline")
        )


def _has_idempotency_key(call: ToolCall) -> bool:
    key = call.extras.get("idempotency_key") if call.extras else None
    return isinstance(key, str) and bool(key)
