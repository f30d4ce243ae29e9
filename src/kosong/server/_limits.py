"""Rate limits per principal: a token bucket of `burst` requests refilled at `rate` per second."""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from kosong.server._guard import ANONYMOUS, PRINCIPAL, refuse, refuse_unavailable, route_path

__all__ = ["MemoryRateLimiter", "RateLimit", "RateLimitMiddleware", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """`rate` requests per second per principal, with bursts of up to `burst`."""

    rate: float
    """Requests per second, sustained."""
    burst: int
    """Requests allowed at once after a quiet spell."""

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)) or self.burst < 1:
            raise ValueError("a rate limit needs a positive finite rate and a burst of at least 1")

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """`"100/s"`, `"600/m"`, `"100/s,burst=200"` (the burst defaults to one second's worth).

        Raises:
            ValueError: the text is not of that form.
        """
        spec, _, burst_part = text.replace(" ", "").partition(",")
        count, slash, unit = spec.partition("/")
        seconds = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(unit)
        try:
            rate = float(count) / seconds if slash and seconds else math.nan
            burst = (
                int(burst_part.removeprefix("burst=")) if burst_part else max(1, math.ceil(rate))
            )
            return cls(rate, burst)
        except ValueError:
            raise ValueError(
                f"rate limit {text!r} must look like '100/s', '600/m' or '100/s,burst=200'"
            ) from None


class RateLimiter(ABC):
    """Decides, per principal, whether a request may go ahead."""

    @abstractmethod
    async def acquire(self, key: str) -> float:
        """Take one request for `key`: 0.0 when allowed, else the seconds to wait."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the limiter holds."""


class MemoryRateLimiter(RateLimiter):
    """A token bucket per key, in this process.

    The least recently seen keys are dropped past `max_keys`.
    """

    def __init__(
        self,
        limit: RateLimit,
        *,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Apply `limit` to every key."""
        self.limit = limit
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def acquire(self, key: str) -> float:
        """Take one request for `key`; see `RateLimiter.acquire`."""
        now = self._clock()
        rate, burst = self.limit.rate, self.limit.burst
        buckets = self._buckets
        found = buckets.pop(key, None)
        tokens = float(burst) if found is None else min(burst, found[0] + (now - found[1]) * rate)
        if tokens >= 1.0:
            buckets[key] = (tokens - 1.0, now)
            wait = 0.0
        else:
            buckets[key] = (tokens, now)
            wait = (1.0 - tokens) / rate
        if len(buckets) > self._max_keys:
            buckets.popitem(last=False)
        return wait


class RateLimitMiddleware:
    """Takes one request from the principal's bucket: 429 with `Retry-After` when empty.

    The bucket is the principal's, or the client address's for anonymous requests. When the
    limiter cannot answer (its Redis is down), the request is refused with 503 and
    `Retry-After`: fail closed. The `exempt` paths (exact) are not limited.
    """

    def __init__(
        self, app: ASGIApp, *, limiter: RateLimiter, exempt: Collection[str], rejected: Counter[str]
    ) -> None:
        """Limit the requests to `app` with `limiter`."""
        self.app = app
        self._limiter = limiter
        self._exempt = frozenset(exempt)
        self.rejected = rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Take a request from the bucket, or refuse it."""
        if scope["type"] not in ("http", "websocket") or route_path(scope) in self._exempt:
            await self.app(scope, receive, send)
            return
        principal: str = scope.get(PRINCIPAL, ANONYMOUS)
        key = principal if principal != ANONYMOUS else f"ip:{(scope.get('client') or ('?',))[0]}"
        try:
            wait = await self._limiter.acquire(key)
        except Exception as e:
            self.rejected["unavailable"] += 1
            await refuse_unavailable(
                scope, send, "The rate limiter cannot answer",
                "the rate limiter's store cannot be reached; try again shortly", e,
            )  # fmt: skip
            return
        if wait > 0:
            self.rejected["rate"] += 1
            seconds = max(1, math.ceil(wait))
            await refuse(
                scope, send, 429, "RATE_LIMITED",
                f"too many requests; retry after {seconds} seconds",
                [(b"retry-after", str(seconds).encode())], retry_after=seconds,
            )  # fmt: skip
            return
        await self.app(scope, receive, send)
