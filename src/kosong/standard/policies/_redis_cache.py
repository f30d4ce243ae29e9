"""`RedisCache`: cache entries in Redis, shared by every process that uses the same server.

Needs the `redis` package (the `redis` extra). Entries are JSON under
`<prefix><key>`, with Redis expiring them at their TTL; a result's `artifact` (a Python object)
is not stored. Every operation has a time limit (`timeout`, 0.25 s by default): a Redis that
accepts connections but does not answer makes the operation fail with `TimeoutError` at the
limit, and `CachePolicy` then runs the call uncached.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable
from typing import Any, Self, cast

from kosong._extras import install_hint
from kosong._seconds import positive_seconds
from kosong.standard.policies._cache import (
    CacheBackend,
    CacheEntry,
    entry_from_json,
    entry_to_json,
)

try:
    import redis.asyncio as aioredis
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"RedisCache needs the redis package: {install_hint('redis')}") from e

__all__ = ["RedisCache"]


class RedisCache(CacheBackend):
    """Cache entries in Redis; see the module doc."""

    def __init__(
        self, client: aioredis.Redis, *, prefix: str = "kosong:cache:", timeout: float = 0.25
    ) -> None:
        """Use `client` (a `redis.asyncio.Redis`), storing keys under `prefix`.

        Args:
            client: The Redis client (`RedisCache.from_url(url)` makes one from a URL).
            prefix: Put in front of every key.
            timeout: Seconds each operation may take before it fails.

        Raises:
            TypeError: `client` is a URL string, not a Redis client.
            ValueError: `timeout` is not a positive number.
        """
        if isinstance(client, str):  # the likely mistake, said at once
            raise TypeError(
                f"RedisCache needs a redis.asyncio.Redis client, got {client!r} (a URL: use "
                "RedisCache.from_url(url))"
            )
        positive_seconds(timeout, "timeout")
        self._client = client
        self._prefix = prefix
        self._timeout = timeout

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = "kosong:cache:", timeout: float = 0.25, **options: Any
    ) -> Self:
        """Use the server at `url` (e.g. `redis://localhost:6379/0`); connects on first use.

        `options` go to `redis.asyncio.Redis.from_url`.
        """
        client = aioredis.Redis.from_url(url, **options)  # pyright: ignore[reportUnknownMemberType]
        return cls(client, prefix=prefix, timeout=timeout)

    @property
    def timeout(self) -> float:
        """Seconds each operation may take before it fails with `TimeoutError`."""
        return self._timeout

    @property
    def client(self) -> aioredis.Redis:
        """The Redis client."""
        return self._client

    async def get(self, key: str) -> CacheEntry | None:
        """The entry under `key`, or None."""
        async with asyncio.timeout(self._timeout):
            raw: Any = await self._client.get(self._prefix + key)
        if raw is None:
            return None
        return entry_from_json(json.loads(raw))

    async def set(self, key: str, entry: CacheEntry) -> None:
        """Store `entry`; Redis drops it at `entry.expires_at`."""
        ttl_ms = max(1, math.ceil((entry.expires_at - entry.cached_at) * 1000))
        text = json.dumps(entry_to_json(entry), ensure_ascii=False)
        async with asyncio.timeout(self._timeout):
            await self._client.set(self._prefix + key, text, px=ttl_ms)

    async def delete(self, key: str) -> None:
        """Forget `key`."""
        async with asyncio.timeout(self._timeout):
            await self._client.delete(self._prefix + key)

    async def clear(self) -> None:
        """Forget every entry under this cache's prefix."""
        pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in self._prefix) + "*"
        scan = cast(
            Callable[..., AsyncIterator[Any]],
            self._client.scan_iter,  # pyright: ignore[reportUnknownMemberType]
        )
        async with asyncio.timeout(self._timeout):
            keys: list[Any] = [k async for k in scan(match=pattern)]
            if keys:
                await self._client.delete(*keys)

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._client.aclose()
