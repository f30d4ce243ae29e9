"""Cache: results of cacheable tools, kept for their TTL and served again to identical calls.

A tool is cached when it declares `cacheable=True`. Its entries live `cache_ttl` seconds (the
policy's `default_ttl` when the tool gives none) and are keyed on the tool's name, its version
and its arguments in canonical form, so key order and spacing do not matter; with
`cache_key_params`, only those arguments count. Only successes are stored: errors and timeouts
never are. A hit carries `metadata.cache = {hit, cached_at, ttl_remaining}`.

Entries are kept in memory by default (`MemoryCache`); `RedisCache`
(`kosong.standard.policies.redis_cache`) shares them between processes. A backend that fails
(Redis unreachable) never fails the call: it is logged, and the call runs uncached.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from kosong.message import ToolCall
from kosong.standard._values import restore_value, round3
from kosong.standard.context import UNPARSEABLE, CallContext, canonical_json
from kosong.standard.pipeline import Forward, ForwardNow, Policy
from kosong.standard.trace import format_epoch
from kosong.tooling import Tool, ToolResult, ToolReturnValue
from kosong.tooling.error import describe_exception

__all__ = [
    "CacheBackend",
    "CacheEntry",
    "CachePolicy",
    "MemoryCache",
    "entry_from_json",
    "entry_to_json",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A stored result and its lifetime (epoch seconds)."""

    value: ToolReturnValue
    """The result. Treat it as read-only: every hit hands out the same value."""
    cached_at: float
    """When it was stored."""
    expires_at: float
    """When it stops being served."""


# What `CacheEntry(...)` does, a step at a time: its slots' setters (see `CachePolicy.run`).
_new_entry = object.__new__
_set_value = cast(Any, CacheEntry).value.__set__
_set_cached_at = cast(Any, CacheEntry).cached_at.__set__
_set_expires_at = cast(Any, CacheEntry).expires_at.__set__


class CacheBackend(ABC):
    """Where cache entries live."""

    @abstractmethod
    async def get(self, key: str) -> CacheEntry | None:
        """The entry stored under `key`, or None (expired entries may be returned)."""

    @abstractmethod
    async def set(self, key: str, entry: CacheEntry) -> None:
        """Store `entry` under `key` until `entry.expires_at`."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Forget the entry under `key`, if any."""

    @abstractmethod
    async def clear(self) -> None:
        """Forget every entry."""


class MemoryCache(CacheBackend):
    """Entries in this process's memory, least recently used dropped beyond `max_entries`."""

    def __init__(self, max_entries: int = 1024, *, clock: Callable[[], float] = time.time) -> None:
        """Keep up to `max_entries` entries; `clock` gives epoch seconds (for tests).

        Raises:
            ValueError: `max_entries` is below 1.
        """
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._entries: OrderedDict[str, CacheEntry] = OrderedDict()
        self._max = max_entries
        self.clock = clock
        """The clock entries expire by."""

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> CacheEntry | None:
        """The live entry under `key`; an expired one is dropped."""
        return self.get_nowait(key)

    def get_nowait(self, key: str) -> CacheEntry | None:
        """`get`, without a coroutine: this backend never waits."""
        return self.get_at(key, self.clock())

    def get_at(self, key: str, now: float) -> CacheEntry | None:
        """`get_nowait` with the clock read by the caller (`now`)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= now:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry

    async def set(self, key: str, entry: CacheEntry) -> None:
        """Store `entry`, dropping the least recently used entry when full."""
        self.set_nowait(key, entry)

    def set_nowait(self, key: str, entry: CacheEntry) -> None:
        """`set`, without a coroutine: this backend never waits."""
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    async def delete(self, key: str) -> None:
        """Forget `key`."""
        self._entries.pop(key, None)

    async def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()


class CachePolicy(Policy):
    """Serve repeated calls to cacheable tools from a cache; see the module doc."""

    def __init__(
        self,
        backend: CacheBackend | None = None,
        *,
        default_ttl: float = 600.0,
        clock: Callable[[], float] = time.time,
        namespace: str = "",
    ) -> None:
        """Cache in `backend` (a new `MemoryCache` by default).

        Args:
            backend: Where entries live.
            default_ttl: Seconds an entry lives when its tool declares no `cache_ttl`.
            clock: Epoch seconds (for tests).
            namespace: Prefixed to every key, so several pipelines can share one backend
                without sharing entries.

        Raises:
            ValueError: `default_ttl` is not a positive number.
        """
        if not math.isfinite(default_ttl) or default_ttl <= 0:
            raise ValueError("default_ttl must be a positive number of seconds")
        self.backend: CacheBackend = backend if backend is not None else MemoryCache(clock=clock)
        """The backend in use."""
        self._ttl = default_ttl
        self._clock = clock
        self._namespace = namespace
        # When the entry last served was stored, and that time as text (one tuple, replaced
        # whole: safe across threads).
        self._stamp: tuple[float, str] = (math.nan, "")

    async def key_for(self, tool: Tool, ctx: CallContext) -> str | None:
        """The cache key of this call, or None when its arguments cannot be keyed."""
        key = self._key_now(tool, ctx)
        if not isinstance(key, _Later):
            return key
        params = tool.cache_key_params
        args = await ctx.arguments()
        if args is UNPARSEABLE:
            return None  # the toolset will refuse these arguments; nothing to cache
        if params is not None and isinstance(args, dict):
            subset = {name: args[name] for name in params if name in args}
            digest = hashlib.blake2b(canonical_json(subset).encode(), digest_size=16).hexdigest()
        else:
            digest = await ctx.arguments_digest()
        return f"{self._namespace}{tool.name}:{tool.version or ''}:{digest}"

    def _key_now(self, tool: Tool, ctx: CallContext) -> str | _Later | None:
        """`key_for` when it needs no waiting (the usual case), else `_LATER`."""
        if tool.cache_key_params is not None:
            return _LATER
        digest = ctx.arguments_digest_nowait()  # shared with the other policies of the call
        if digest is None:
            return _LATER
        if not ctx.arguments_parsed:
            return None
        return f"{self._namespace}{tool.name}:{tool.version or ''}:{digest}"

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True for calls to tools that are not cacheable."""
        tool = ctx.tool
        return tool is None or tool.cacheable is not True

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """A hit of the in-memory backend, answered without waiting; else None.

        A miss runs the tool, and another backend is awaited: both go through `run`.
        """
        tool = ctx.tool
        if tool is None or tool.cacheable is not True:
            return forward(call, ctx)
        backend = self.backend
        if tool.cache_key_params is not None or type(backend) is not MemoryCache:
            return None
        digest = ctx.arguments_digest_nowait()  # `_key_now` inlined: this runs on every hit
        if digest is None:
            return None
        if not ctx.arguments_parsed:
            return forward(call, ctx)  # as `run`: arguments that cannot be keyed pass
        key = f"{self._namespace}{tool.name}:{tool.version or ''}:{digest}"
        ctx.add_debug("cache_key", key)
        now = self._clock()
        # With one clock (the usual case), one reading serves the backend and the policy.
        entry = (
            backend.get_at(key, now) if backend.clock is self._clock else backend.get_nowait(key)
        )
        if entry is None:
            return None
        if entry.expires_at <= now:
            return None
        stamp = self._stamp  # the text of the last entry served: hits mostly repeat one
        if stamp[0] != entry.cached_at:
            stamp = self._stamp = (entry.cached_at, format_epoch(entry.cached_at))
        ctx.cache = {
            "hit": True,
            "cached_at": stamp[1],
            "ttl_remaining": round3(entry.expires_at - now),
        }
        return entry.value

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Answer from the cache when possible; store what a cacheable tool returns."""
        tool = ctx.tool
        if tool is None or tool.cacheable is not True:
            return await forward(call, ctx)
        # `_key_now` inlined: every call comes here.
        digest = ctx.arguments_digest_nowait() if tool.cache_key_params is None else None
        if digest is None:
            key = await self.key_for(tool, ctx)
        elif ctx.arguments_parsed:
            key = f"{self._namespace}{tool.name}:{tool.version or ''}:{digest}"
        else:
            key = None
        if key is None:
            return await forward(call, ctx)
        ctx.add_debug("cache_key", key)
        backend = self.backend
        # The in-memory backend is asked directly: its methods never wait, and awaiting them
        # would cost a coroutine each. A subclass may wait, so it is awaited like any backend.
        memory = backend if type(backend) is MemoryCache else None
        if memory is not None and memory.clock is self._clock:
            # With one clock (the usual case), one reading serves the backend and the policy.
            now = self._clock()
            entry = memory.get_at(key, now)
        else:
            entry = memory.get_nowait(key) if memory is not None else await self._lookup(key)
            now = self._clock()
        if entry is not None and entry.expires_at > now:
            ctx.cache = {
                "hit": True,
                "cached_at": format_epoch(entry.cached_at),
                "ttl_remaining": round3(entry.expires_at - now),
            }
            return ToolResult(call.id, entry.value)
        result = await forward(call, ctx)
        value = result.return_value
        # A result shared from another identical call (single-flight) is stored by that call.
        if not value.is_error and not ctx.shared:
            stored_at = self._clock()
            ttl = tool.cache_ttl if tool.cache_ttl is not None else self._ttl
            # `CacheEntry(value, stored_at, stored_at + ttl)` at half the cost (the frozen
            # dataclass' __init__ goes through object.__setattr__): every miss stores.
            entry = _new_entry(CacheEntry)
            _set_value(entry, value)
            _set_cached_at(entry, stored_at)
            _set_expires_at(entry, stored_at + ttl)
            if memory is not None:
                memory.set_nowait(key, entry)
            else:
                await self._store(key, entry)
        return result

    async def _lookup(self, key: str) -> CacheEntry | None:
        try:
            return await self.backend.get(key)
        except Exception as e:  # a cache outage must not fail calls
            logger.warning("Cache lookup failed, running uncached: %s", describe_exception(e))
            return None

    async def _store(self, key: str, entry: CacheEntry) -> None:
        try:
            await self.backend.set(key, entry)
        except Exception as e:
            logger.warning("Cache store failed, result not cached: %s", describe_exception(e))


class _Later:
    """`_key_now`'s answer when the key needs waiting for."""


_LATER = _Later()


def entry_to_json(entry: CacheEntry) -> dict[str, Any]:
    """A JSON-ready form of an entry, for backends that store text (the artifact is lost)."""
    return {
        "class": type(entry.value).__name__,
        "value": entry.value.model_dump(mode="json"),
        "cached_at": entry.cached_at,
        "expires_at": entry.expires_at,
    }


def entry_from_json(data: Mapping[str, Any]) -> CacheEntry:
    """Rebuild an entry written by `entry_to_json`.

    Raises:
        ValueError: `data` is not such an entry.
    """
    try:
        value = restore_value(str(data.get("class", "")), cast(dict[str, Any], data["value"]))
        return CacheEntry(value, float(data["cached_at"]), float(data["expires_at"]))
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a cache entry: {describe_exception(e)}") from e
