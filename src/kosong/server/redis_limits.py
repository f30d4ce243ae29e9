"""The rate limit's token buckets in Redis, shared by every process behind one balancer.

One hash per principal, taken atomically by a script, on the Redis server's clock. Needs the
`redis` package (the `server` extra); make the client with
`kosong.eventstore.redis_store.connect`.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from kosong.eventstore.redis_store import reachable
from kosong.server._limits import RateLimit, RateLimiter

__all__ = ["RedisRateLimiter"]

_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
if tokens == nil then tokens = burst else
  tokens = math.min(burst, tokens + (now - tonumber(b[2])) * rate) end
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return math.ceil(wait * 1000000)
"""


class RedisRateLimiter(RateLimiter):
    """Token buckets in Redis, one per principal, shared by every process."""

    def __init__(
        self, client: aioredis.Redis, limit: RateLimit, *, prefix: str = "kosong:rate:"
    ) -> None:
        """Apply `limit` to every key, with buckets under `prefix` in `client`."""
        self.limit = limit
        self._client = client
        self._prefix = prefix
        self._take = client.register_script(_TAKE)

    async def acquire(self, key: str) -> float:
        """Take one request for `key`: 0.0 when allowed, else the seconds to wait.

        Raises:
            StoreUnavailableError: Redis cannot be reached.
        """
        with reachable():
            waited: Any = await self._take(
                keys=[self._prefix + key], args=[repr(self.limit.rate), self.limit.burst]
            )
        return int(waited) / 1_000_000
