"""`RedisRunStore`: runs in Redis, shared by every process of a server (the `server` extra).

Each run is a hash (its record) and a stream (its events), both in the run's own hash slot,
so one script changes both atomically; beside them, the idempotency ledger (`idem:`), one
index of waiting runs per principal (`waiting:`) and the count of runs waiting for a worker
(`queued`). Asking and answering change a run and its principal's index in one script, so
the store needs one Redis (a Redis Cluster would refuse those scripts across hash slots).
A running run's keys are kept `running_ttl` seconds after its last change, a waiting one's
`waiting_ttl`, an ended one's `ttl`. Connection errors are raised as `StoreUnavailableError`
(`reachable`, which the server's Redis rate limiter uses too).

When Redis cannot be reached, every method raises `StoreUnavailableError` (the server answers
503 with `Retry-After`). A command that fails on a connection is tried once more on a new one
(`connect`): after Redis restarts, the connections left in the pool are dead, and the first
command on each must not be what fails a request or cuts a stream.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from collections.abc import Generator
from typing import Any, Self, cast

from kosong._extras import install_hint
from kosong.eventstore._store import (
    START,
    RunRecord,
    RunStore,
    StoredEvent,
    StoreUnavailableError,
    check_run_id,
    conflict,
    ledger_id,
)

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.commands.core import AsyncScript
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"the Redis store needs the redis package: {install_hint('redis')}") from e

__all__ = ["RedisRunStore", "connect", "reachable"]

_MAX_ID_PART = 2**64 - 1  # a Redis stream id is two unsigned 64-bit numbers
_STALE_MS = 600_000
"""A run counted as queued this long without a worker taking it no longer counts (its front
end died before it could queue it)."""


@contextlib.contextmanager
def reachable() -> Generator[None]:
    """Redis's connection errors and timeouts as `StoreUnavailableError`."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError) as e:
        raise StoreUnavailableError(f"Redis cannot be reached: {e or type(e).__name__}") from e


# KEYS: record. ARGV: ttl ms, field, value, ...
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS: record, events. ARGV: kind, data, final ('1'/'0'), ttl ms once ended, running ttl ms
# (a run created with a ttl of its own keeps it in its record, as `ttl`)
_APPEND = """
local m = redis.call('HMGET', KEYS[1], 'status', 'ttl')
if not m[1] or m[1] == 'done' then return false end
local id = redis.call('XADD', KEYS[2], '*', 'k', ARGV[1], 'd', ARGV[2], 'f', ARGV[3])
local ttl = ARGV[5]
if ARGV[3] == '1' then
  ttl = m[2] or ARGV[4]
  redis.call('HSET', KEYS[1], 'status', 'done')
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return id
"""

# KEYS: record, events. ARGV: running ttl ms -> the record (after), or false
_CLAIM = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'done' or status == 'waiting' then return false end
redis.call('HSET', KEYS[1], 'status', 'running')
redis.call('HINCRBY', KEYS[1], 'attempt', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: record, events, waiting index. ARGV: run, question, since (s), deadline or '',
# waiting ttl ms -> the record (after), or false
_ASK = """
local m = redis.call('HMGET', KEYS[1], 'status', 'principal')
if not m[1] or m[1] == 'done' then return false end
redis.call('HDEL', KEYS[1], 'approved', 'reason')
redis.call('HSET', KEYS[1], 'status', 'waiting', 'question', ARGV[2], 'since', ARGV[3],
           'deadline', ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: record, waiting index. ARGV: run, approved ('1'/'0'), reason -> the record, or false
_ANSWER = """
if redis.call('HGET', KEYS[1], 'status') ~= 'waiting' then return false end
redis.call('HSET', KEYS[1], 'status', 'queued', 'approved', ARGV[2], 'reason', ARGV[3],
           'attempt', 0)
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: ledger. ARGV: run id, digest, ttl ms -> false (taken) or {run, digest}
_RESERVE = """
local found = redis.call('HMGET', KEYS[1], 'run', 'digest')
if found[1] then return found end
redis.call('HSET', KEYS[1], 'run', ARGV[1], 'digest', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return false
"""

# KEYS: ledger. ARGV: run id
_RELEASE = """
if redis.call('HGET', KEYS[1], 'run') == ARGV[1] then redis.call('DEL', KEYS[1]) end
"""

# KEYS: queued (a sorted set: run -> time queued). ARGV: run, now ms, stale before ms, most
_ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if ARGV[4] ~= '' and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
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


def _fields(record: RunRecord) -> list[str]:
    fields: list[str] = []
    for name in ("principal", "tool", "arguments", "status", "attempt", "trace", "key", "asks"):
        value = getattr(record, name)
        if value is not None:
            fields += [name, str(value)]
    return fields


def _record(run_id: str, reply: Any) -> RunRecord | None:
    """A record from a hash: HGETALL's dict, or a script's list of fields and values."""
    if not reply:
        return None
    if isinstance(reply, list):
        fields = cast(list[str], reply)
        reply = dict(zip(fields[::2], fields[1::2], strict=True))
    got = cast(dict[str, str], reply)
    approved = got.get("approved")
    question = got.get("question") if got.get("status") == "waiting" else None
    return RunRecord(
        id=run_id,
        principal=got.get("principal", ""),
        tool=got.get("tool", ""),
        arguments=got.get("arguments", "{}"),
        trace=got.get("trace"),
        key=got.get("key"),
        status=cast(Any, got.get("status", "queued")),
        attempt=int(got.get("attempt", "0")),
        question=question,
        since=float(got["since"]) if question and got.get("since") else None,
        deadline=float(got["deadline"]) if question and got.get("deadline") else None,
        answer=None if approved is None else (approved == "1", got.get("reason", "")),
        asks=float(got["asks"]) if "asks" in got else None,
    )


class RedisRunStore(RunStore):
    """Runs in Redis, shared by every front end and worker of a server; see the module doc."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "kosong:",
        ttl: float = 600.0,
        running_ttl: float = 86_400.0,
        waiting_ttl: float = 30 * 86_400.0,
    ) -> None:
        """Use `client` (answering text: see `connect`), keys under `prefix`.

        Raises:
            TypeError: `client` is not a Redis client (use `RedisRunStore.from_url`).
            ValueError: a ttl is not positive.
        """
        if not isinstance(client, aioredis.Redis):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError("RedisRunStore needs a redis.asyncio.Redis; use from_url(url)")
        if min(ttl, running_ttl, waiting_ttl) <= 0:
            raise ValueError("the ttls must be positive")
        self.client = client
        """The Redis client."""
        self._prefix = prefix
        self._ttl_ms = math.ceil(ttl * 1000)
        self._running_ms = math.ceil(max(ttl, running_ttl) * 1000)
        self._waiting_ms = math.ceil(max(ttl, waiting_ttl) * 1000)
        self._create = client.register_script(_CREATE)
        self._append = client.register_script(_APPEND)
        self._claim = client.register_script(_CLAIM)
        self._ask = client.register_script(_ASK)
        self._answer = client.register_script(_ANSWER)
        self._reserve = client.register_script(_RESERVE)
        self._release = client.register_script(_RELEASE)
        self._admit = client.register_script(_ADMIT)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Connect to the Redis server at `url` (e.g. `redis://localhost:6379/0`)."""
        return cls(connect(url), **options)

    def _keys(self, run_id: str) -> list[str]:
        """The run's record and events, in one hash slot (`{run id}`)."""
        return [f"{self._prefix}run:{{{run_id}}}:m", f"{self._prefix}run:{{{run_id}}}:e"]

    def _index(self, principal: str) -> str:
        return f"{self._prefix}waiting:{hashlib.sha256(principal.encode()).hexdigest()[:32]}"

    async def _eval(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        with reachable():
            return await script(keys=keys, args=args)

    async def create(self, record: RunRecord, *, ttl: float | None = None) -> None:
        """Keep a new run; see `RunStore.create`."""
        check_run_id(record.id)
        fields = _fields(record)
        if ttl is not None:
            fields += ["ttl", str(max(1, math.ceil(ttl * 1000)))]
        created = await self._eval(
            self._create, self._keys(record.id)[:1], [self._running_ms, *fields]
        )
        if not created:
            raise ValueError(f"run {record.id!r} exists")

    async def get(self, run_id: str) -> RunRecord | None:
        """The run's record; see `RunStore.get`."""
        client: Any = self.client
        with reachable():
            reply: dict[str, str] = await client.hgetall(self._keys(run_id)[0])
        return _record(run_id, reply)

    async def append(self, run_id: str, kind: str, data: str, *, final: bool = False) -> str | None:
        """Add an event; see `RunStore.append`."""
        args = [kind, data, "1" if final else "0", self._ttl_ms, self._running_ms]
        added = await self._eval(self._append, self._keys(run_id), args)
        return None if added is None else f"{run_id}.{added}"

    async def read(
        self, run_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after `after`; see `RunStore.read`.

        `after` must be `0` or the id of one of the run's events (as an SSE client got it):
        checked, with the run's existence and the events already there, in one round trip;
        only then, when there are none yet, does it block waiting for some.
        """
        if after != START and not _is_entry_id(after):
            raise ValueError(f"{after!r} is not a position of run {run_id!r}")
        meta_key, events_key = self._keys(run_id)
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
                raise ValueError(f"{after!r} is not an event of run {run_id!r}")
            reply: Any = found[-1]
            if not reply and wait > 0:
                block = max(1, math.ceil(wait * 1000)) if wait != math.inf else 0
                reply = await self.client.xread({events_key: after}, count=limit, block=block)
        if not reply:
            return []
        entries = cast(list[tuple[str, dict[str, str]]], reply[0][1])
        return [
            StoredEvent(f"{run_id}.{entry_id}", fields["k"], fields["d"], fields["f"] == "1")
            for entry_id, fields in entries
        ]

    async def claim(self, run_id: str) -> RunRecord | None:
        """Take the run; see `RunStore.claim`."""
        reply = await self._eval(self._claim, self._keys(run_id), [self._running_ms])
        return _record(run_id, reply)

    async def ask(self, run_id: str, question: str, deadline: float | None) -> RunRecord | None:
        """The run waits; see `RunStore.ask`."""
        record = await self.get(run_id)
        if record is None:
            return None
        since, until = repr(time.time()), "" if deadline is None else repr(deadline)
        keys = [*self._keys(run_id), self._index(record.principal)]
        reply = await self._eval(
            self._ask, keys, [run_id, question, since, until, self._waiting_ms]
        )
        return _record(run_id, reply)

    async def answer(self, run_id: str, approved: bool, reason: str) -> RunRecord | None:
        """Answer the run's question; see `RunStore.answer`."""
        record = await self.get(run_id)
        if record is None:
            return None
        keys = [self._keys(run_id)[0], self._index(record.principal)]
        reply = await self._eval(self._answer, keys, [run_id, "1" if approved else "0", reason])
        return _record(run_id, reply)

    async def waiting(self, principal: str) -> list[RunRecord]:
        """The runs waiting; see `RunStore.waiting`."""
        index = self._index(principal)
        client: Any = self.client
        with reachable():
            run_ids: list[str] = await client.zrange(index, 0, 999)
            if not run_ids:
                return []
            async with client.pipeline(transaction=False) as pipe:
                for run_id in run_ids:
                    pipe.hgetall(self._keys(run_id)[0])
                rows: list[Any] = await pipe.execute()
            records = [_record(run_id, row) for run_id, row in zip(run_ids, rows, strict=True)]
            found = [r for r in records if r is not None and r.status == "waiting"]
            if len(found) < len(run_ids):  # the others were answered, ended or expired
                await client.zrem(index, *(set(run_ids) - {r.id for r in found}))
        return found

    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """Take `key`; see `RunStore.reserve`."""
        ledger = f"{self._prefix}idem:{ledger_id(principal, key)}"
        found = await self._eval(self._reserve, [ledger], [run_id, digest, math.ceil(ttl * 1000)])
        if not found:
            return None
        if found[1] != digest:
            raise conflict(key)
        return str(found[0])

    async def release(self, principal: str, key: str, run_id: str) -> None:
        """Give `key` up; see `RunStore.release`."""
        ledger = f"{self._prefix}idem:{ledger_id(principal, key)}"
        await self._eval(self._release, [ledger], [run_id])

    async def admit(self, run_id: str, most: int | None) -> bool:
        """Count the run as queued; see `RunStore.admit`."""
        now = math.floor(time.time() * 1000)
        args = [run_id, now, now - _STALE_MS, "" if most is None else most]
        return bool(await self._eval(self._admit, [f"{self._prefix}queued"], args))

    async def started(self, run_id: str) -> None:
        """The run is no longer queued; see `RunStore.started`."""
        with reachable():
            await self.client.zrem(f"{self._prefix}queued", run_id)

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.aclose()


def _is_entry_id(position: str) -> bool:
    """Whether `position` is a Redis stream entry id (`ms-seq`, or `ms`)."""
    parts = position.split("-")
    return len(parts) <= 2 and all(
        p.isascii() and p.isdigit() and len(p) <= 20 and int(p) <= _MAX_ID_PART for p in parts
    )
