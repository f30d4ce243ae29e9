"""Runs' events in Redis, so several processes behind one balancer share them.

- `RedisEventStore`: the events of runs in Redis streams (one per run, `XADD` / `XREAD`), so a
  client resumes a run on any process. Each process holds a lease in Redis while it lives;
  a run whose writing process lost its lease (killed, frozen) is ended by whichever process
  a client is following it from, with a final event saying so.

Needs the `redis` package (the `server` extra). Every key starts with `prefix`;
the keys of one run share a hash tag, so the scripts also work on a Redis Cluster. `connect`
makes the client, and `reachable()` turns Redis's connection errors into
`StoreUnavailableError` (the server's Redis rate limiter uses both).

When Redis cannot be reached, every method raises `StoreUnavailableError` (the server answers
503 with `Retry-After`). A command that fails on a connection is tried once more on a new one
(`connect`): after Redis restarts, the connections left in the pool are dead, and the first
command on each must not be what fails a request or cuts a stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Self, cast

from kosong._extras import install_hint
from kosong.eventstore._store import (
    START,
    EventStore,
    StoredEvent,
    StoreUnavailableError,
    StreamInfo,
    check_stream_id,
)

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"the Redis store needs the redis package: {install_hint('redis')}") from e

__all__ = ["RedisEventStore", "connect", "reachable"]

logger = logging.getLogger(__name__)

_MAX_ID_PART = 2**64 - 1  # a Redis stream id is two unsigned 64-bit numbers


@contextlib.contextmanager
def reachable() -> Generator[None]:
    """Redis's connection errors and timeouts as `StoreUnavailableError`."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError) as e:
        raise StoreUnavailableError(f"Redis cannot be reached: {e or type(e).__name__}") from e


_OPEN = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS: meta, events. ARGV: kind, data, final ('1'/'0'), ttl ms once ended, ttl ms while running
# (a stream opened with a ttl of its own keeps it in its meta, as `ttl`)
_APPEND = """
local m = redis.call('HMGET', KEYS[1], 'ended', 'ttl')
if m[1] ~= '0' then return false end
local id = redis.call('XADD', KEYS[2], '*', 'k', ARGV[1], 'd', ARGV[2], 'f', ARGV[3])
if ARGV[3] == '1' then
  local ttl = m[2] or ARGV[4]
  redis.call('HSET', KEYS[1], 'ended', '1')
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
return id
"""

# KEYS: meta, events. ARGV: kind, data, ttl ms, owner key prefix (a stream without an owner,
# opened unleased, is never abandoned)
_END_ABANDONED = """
local m = redis.call('HMGET', KEYS[1], 'ended', 'owner', 'ttl')
if m[1] ~= '0' or m[2] == '' then return false end
if redis.call('EXISTS', ARGV[4] .. m[2]) == 1 then return false end
local id = redis.call('XADD', KEYS[2], '*', 'k', ARGV[1], 'd', ARGV[2], 'f', '1')
redis.call('HSET', KEYS[1], 'ended', '1')
redis.call('PEXPIRE', KEYS[1], m[3] or ARGV[3])
redis.call('PEXPIRE', KEYS[2], m[3] or ARGV[3])
return id
"""

# KEYS: meta. ARGV: owner key prefix. -> {alive, field, value, ...} or false
_INFO = """
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then return false end
local owner = ''
for i = 1, #all, 2 do if all[i] == 'owner' then owner = all[i + 1] end end
local alive = 1
if owner ~= '' then alive = redis.call('EXISTS', ARGV[1] .. owner) end
table.insert(all, 1, alive)
return all
"""


def connect(url: str, *, max_connections: int = 2048, **options: Any) -> aioredis.Redis:
    """A `redis.asyncio.Redis` client for `url` that answers text (as the store expects).

    Each response following a run waits on Redis with a connection of its own (a blocking
    `XREAD`), so the pool is large, and a request finding it exhausted waits for a
    connection (up to 30 seconds) rather than failing. A command whose connection fails is
    sent once more, at once, on a new connection: the pool's connections die with a Redis
    restart, and only the first command on each finds out. (A command whose reply was lost
    may so run twice; the store's scripts take one final event per run whatever happens.)
    """
    options.setdefault("decode_responses", True)
    options.setdefault("socket_connect_timeout", 5)
    options.setdefault("health_check_interval", 30)
    options.setdefault("retry", Retry(NoBackoff(), 1))
    pool = aioredis.BlockingConnectionPool.from_url(  # pyright: ignore[reportUnknownMemberType]
        url, max_connections=max_connections, timeout=30, **options
    )
    return aioredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


class RedisEventStore(EventStore):
    """Events of runs in Redis streams, shared by every process using the same server.

    A run's events live `ttl` seconds after it ends. While this process lives it renews a
    lease every `lease / 3` seconds; a process that does not renew it for `lease` seconds is
    taken for dead, and the runs it was writing are ended by the next reader that waits on
    them (`end_abandoned`). While a run is running, its keys are renewed by its writer too,
    so they never expire under it.
    """

    shared = True

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "kosong:",
        ttl: float = 600.0,
        lease: float = 5.0,
    ) -> None:
        """Use `client` (answering text: see `connect`), keys under `prefix`.

        Raises:
            TypeError: `client` is not a Redis client (use `RedisEventStore.from_url`).
            ValueError: `ttl` or `lease` is not positive.
        """
        if not isinstance(client, aioredis.Redis):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("RedisEventStore needs a redis.asyncio.Redis; use from_url(url)")
        if ttl <= 0 or lease <= 0:
            raise ValueError("ttl and lease must be positive")
        self.client = client
        """The Redis client."""
        self._prefix = prefix
        self._ttl_ms = math.ceil(ttl * 1000)
        self._running_ttl_ms = max(self._ttl_ms, 600_000)
        self._lease = lease
        self.owner = secrets.token_hex(8)
        """This process's id among the writers."""
        self._owner_prefix = f"{prefix}owner:"
        self._writing: set[str] = set()
        self._keepalive: asyncio.Task[None] | None = None
        self._open = client.register_script(_OPEN)
        self._append = client.register_script(_APPEND)
        self._end_abandoned = client.register_script(_END_ABANDONED)
        self._info = client.register_script(_INFO)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Connect to the Redis server at `url` (e.g. `redis://localhost:6379/0`)."""
        return cls(connect(url), **options)

    def _keys(self, stream_id: str) -> list[str]:
        return [self.key(stream_id, "m"), self.key(stream_id, "e")]

    def key(self, stream_id: str, suffix: str) -> str:
        """The Redis key `suffix` of the stream `stream_id`, in the same hash slot as its own.

        For what others keep beside a stream (a run's state, say), so that a script can
        touch both, on a Redis Cluster too. The store itself uses the suffixes `m` and `e`.
        """
        return f"{self._prefix}run:{{{stream_id}}}:{suffix}"

    async def _renew(self) -> None:
        await self.client.set(
            self._owner_prefix + self.owner, "1", px=math.ceil(self._lease * 1000)
        )

    async def _keep_alive(self) -> None:
        last_keys = time.monotonic()
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self._renew()
                if time.monotonic() - last_keys > self._running_ttl_ms / 4000 and self._writing:
                    last_keys = time.monotonic()
                    async with self.client.pipeline(transaction=False) as pipe:
                        for stream_id in list(self._writing):
                            for key in self._keys(stream_id):
                                pipe.pexpire(key, self._running_ttl_ms)
                        await pipe.execute()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # Redis away: try again at the next beat
                logger.warning("Could not renew the lease in Redis: %s", e)

    async def open(
        self,
        stream_id: str,
        meta: Mapping[str, str],
        *,
        ttl: float | None = None,
        leased: bool = True,
    ) -> None:
        """Start a stream (written by this process, when `leased`); see `EventStore.open`."""
        check_stream_id(stream_id)
        fields: list[str] = ["ended", "0", "owner", self.owner if leased else ""]
        if ttl is not None:
            fields += ["ttl", str(max(1, math.ceil(ttl * 1000)))]
        for key, value in meta.items():
            fields += [f"m:{key}", value]
        with reachable():
            if self._keepalive is None:
                await self._renew()
                self._keepalive = asyncio.get_running_loop().create_task(self._keep_alive())
            created = await self._open(
                keys=self._keys(stream_id)[:1], args=[self._running_ttl_ms, *fields]
            )
        if not created:
            raise ValueError(f"stream {stream_id!r} exists")
        if leased:
            self._writing.add(stream_id)

    def writing(self, stream_id: str, now: bool = True) -> None:
        """Say this process writes the stream now (`now=False`: no longer).

        While it does, its keys are renewed with the lease, so they never expire under a
        long run (`open` says so for the streams this process opens leased).
        """
        if now:
            self._writing.add(stream_id)
            if self._keepalive is None:
                self._keepalive = asyncio.get_running_loop().create_task(self._keep_alive())
        else:
            self._writing.discard(stream_id)

    async def append(
        self, stream_id: str, kind: str, data: str, *, final: bool = False
    ) -> str | None:
        """Add an event; see `EventStore.append`."""
        with reachable():
            added: Any = await self._append(
                keys=self._keys(stream_id),
                args=[kind, data, "1" if final else "0", self._ttl_ms, self._running_ttl_ms],
            )
        if final or added is None:
            self._writing.discard(stream_id)
        return None if added is None else f"{stream_id}.{added}"

    async def read(
        self, stream_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after `after`; see `EventStore.read`.

        `after` must be `0` or the id of one of the stream's events (as an SSE client got it):
        checked, with the stream's existence and the events already there, in one round
        trip; only then, when there are none yet, does it block waiting for some.
        """
        if after != START and not _is_entry_id(after):
            raise ValueError(f"{after!r} is not a position of stream {stream_id!r}")
        meta_key, events_key = self._keys(stream_id)
        with reachable():
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.exists(meta_key)
                if after != START:
                    pipe.xrange(events_key, min=after, max=after, count=1)
                pipe.xread({events_key: after}, count=limit)
                found: list[Any] = await pipe.execute()
            if not found[0]:
                return None
            if after != START and not found[1]:
                raise ValueError(f"{after!r} is not an event of stream {stream_id!r}")
            reply: Any = found[-1]
            if not reply and wait > 0:
                block = max(1, math.ceil(wait * 1000))
                reply = await self.client.xread({events_key: after}, count=limit, block=block)
        if not reply:
            return []
        entries = cast(list[tuple[str, dict[str, str]]], reply[0][1])
        return [
            StoredEvent(f"{stream_id}.{entry_id}", fields["k"], fields["d"], fields["f"] == "1")
            for entry_id, fields in entries
        ]

    async def info(self, stream_id: str) -> StreamInfo | None:
        """What is known of the stream, and whether its writer lives; see `EventStore.info`."""
        with reachable():
            reply: Any = await self._info(keys=self._keys(stream_id)[:1], args=[self._owner_prefix])
        if not reply:
            return None
        alive, fields = int(reply[0]), cast(list[str], reply[1:])
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        meta = {k[2:]: v for k, v in pairs.items() if k.startswith("m:")}
        # This process writes it: alive, whatever its lease says (a loaded loop may renew
        # it late, and a process must never end its own runs as abandoned).
        alive = alive or pairs.get("owner") == self.owner
        return StreamInfo(stream_id, meta, pairs.get("ended") == "1", bool(alive))

    async def ended(self, stream_ids: Sequence[str]) -> set[str]:
        """Which streams have ended (or are gone); see `EventStore.ended`."""
        if not stream_ids:
            return set()
        with reachable():
            async with self.client.pipeline(transaction=False) as pipe:
                for stream_id in stream_ids:
                    pipe.hget(self._keys(stream_id)[0], "ended")
                flags: list[Any] = await pipe.execute()
        return {s for s, flag in zip(stream_ids, flags, strict=True) if flag != "0"}

    async def end_abandoned(self, stream_id: str, kind: str, data: str) -> bool:
        """End the stream with this final event if its writer is gone; see `EventStore`."""
        info = await self.info(stream_id)
        if info is None or info.writer_alive:
            return False
        with reachable():
            added = await self._end_abandoned(
                keys=self._keys(stream_id), args=[kind, data, self._ttl_ms, self._owner_prefix]
            )
        return added is not None

    async def aclose(self) -> None:
        """Stop renewing the lease, give it up, and close the client's connections."""
        task, self._keepalive = self._keepalive, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            with contextlib.suppress(Exception):
                await self.client.delete(self._owner_prefix + self.owner)
        await self.client.aclose()


def _is_entry_id(position: str) -> bool:
    """Whether `position` is a Redis stream entry id (`ms-seq`, or `ms`)."""
    parts = position.split("-")
    return len(parts) <= 2 and all(
        p.isascii() and p.isdigit() and len(p) <= 20 and int(p) <= _MAX_ID_PART for p in parts
    )
