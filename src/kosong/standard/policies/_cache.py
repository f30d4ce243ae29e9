"""Cache: results of cacheable tools, kept for their TTL and served again to identical calls.

A tool is cached when it declares `cacheable=True`. Its entries live `cache_ttl` seconds (the
policy's `default_ttl` when the tool gives none) and are keyed on the tool's name, its version
and its arguments in canonical form, so key order and spacing do not matter; with
`cache_key_params`, only those arguments count. Only successes are stored: errors and timeouts
never are. A hit carries `metadata.cache = {hit, cached_at, ttl_remaining}`.

Entries are kept in memory by default (`MemoryCache`); `RedisCache`
(`kosong.standard.policies`) shares them between processes. Every hit hands out a copy of its
own: changing a result you got changes nothing another caller gets. A backend that fails (Redis
unreachable or not answering) never fails the call: the call runs uncached, the outage is
logged once (and its end), and `CachePolicy.backend_failures` counts the failed operations.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from kosong._seconds import positive_seconds
from kosong._timestamps import format_epoch
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._digest import arguments_digest
from kosong.standard._pipeline import Forward, Policy
from kosong.standard._values import restore_value, shared_copy
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
    """The result. Never handed out as it is: every hit gets a copy."""
    cached_at: float
    """When it was stored."""
    expires_at: float
    """When it stops being served."""


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
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self.clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry

    async def set(self, key: str, entry: CacheEntry) -> None:
        """Store `entry`, dropping the least recently used entry when full."""
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
        positive_seconds(default_ttl, "default_ttl")
        self.backend: CacheBackend = backend if backend is not None else MemoryCache(clock=clock)
        """The backend in use."""
        self.backend_failures = 0
        """How many backend operations failed (each call then ran uncached)."""
        self._ttl = default_ttl
        self._clock = clock
        self._namespace = namespace
        self._outage = False

    def key_for(self, tool: Tool, ctx: PolicyContext) -> str:
        """The cache key of this call."""
        params = tool.cache_key_params
        args = ctx.arguments
        if params is not None and isinstance(args, dict):
            subset = {name: args[name] for name in params if name in args}
            digest = arguments_digest(subset, ctx.written_as_string)
        else:
            digest = ctx.arguments_key
        return f"{self._namespace}{tool.name}:{tool.version or ''}:{digest}"

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Answer from the cache when possible; store what a cacheable tool returns."""
        tool = ctx.tool
        if tool.cacheable is not True:
            return await forward(call, ctx)
        key = self.key_for(tool, ctx)
        ctx.call_context.add_debug("cache_key", key)
        entry = await self._backend("lookup", self.backend.get, key)
        now = self._clock()
        if entry is not None and entry.expires_at > now:
            ctx.cache = {
                "hit": True,
                "cached_at": format_epoch(entry.cached_at),
                "ttl_remaining": round(entry.expires_at - now, 3),
            }
            return ToolResult(call.id, shared_copy(entry.value))  # each hit, a copy of its own
        result = await forward(call, ctx)
        value = result.return_value
        # A result shared from another identical call (single-flight) is stored by that call.
        if not value.is_error and not ctx.shared:
            stored_at = self._clock()
            ttl = tool.cache_ttl if tool.cache_ttl is not None else self._ttl
            # The caller gets the value the tool made; the cache keeps a copy of its own.
            entry = CacheEntry(shared_copy(value), stored_at, stored_at + ttl)
            await self._backend("store", self.backend.set, key, entry)
        return result

    async def _backend(
        self, what: str, method: Callable[..., Awaitable[_T]], *args: Any
    ) -> _T | None:
        """The backend's answer, or None when it fails: the call then runs uncached."""
        try:
            answer = await method(*args)
        except Exception as e:  # boundary: a backend's failure becomes an uncached call
            self.backend_failures += 1
            if not self._outage:
                self._outage = True
                logger.warning(
                    "Cache %s failed, calls run uncached until it works again: %s",
                    what,
                    describe_exception(e),
                )
            return None
        if self._outage:
            self._outage = False
            logger.warning("Cache %s works again", what)
        return answer


_T = TypeVar("_T")


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
