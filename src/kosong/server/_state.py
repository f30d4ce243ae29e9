"""What a server knows of its runs besides their events: keys, questions, attempts, the queue.

- The idempotency ledger: a caller's key (scoped by its principal) names the run it started,
  with a digest of the call; the same key again finds that run, never a new one, for the
  ledger's retention (`reserve`).
- Runs waiting for an answer (a call deferred by `ApprovalDecision.ask` or `defer`): the run,
  its tool and arguments, the question, since when and until when (`wait`, `waiting`); the
  answer, taken once (`answer`), which a worker finds when it takes the run again (`claim`).
- With workers (Redis only): each delivery of a queued run counts as an attempt (`claim`), so
  the worker that gets a run again knows the one before it died; and the count of runs waiting
  for a worker, bounded (`admit`).

`MemoryRunState` keeps them in this process (a server without Redis); `RedisRunState` in
Redis, beside each run's events (in the same hash slot), so every front end and worker sees
the same, and all of it survives the restart of any process.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kosong.utils.typing import JsonType

if TYPE_CHECKING:
    from kosong.eventstore.redis_store import RedisEventStore

__all__ = [
    "Claim",
    "IdempotencyConflictError",
    "MemoryRunState",
    "RedisRunState",
    "RunState",
    "Waiting",
]


class IdempotencyConflictError(ValueError):
    """An idempotency key already stands for another call (other tool or arguments)."""


@dataclass(frozen=True, slots=True)
class Waiting:
    """A run waiting for the answer to a question."""

    run_id: str
    tool: str
    arguments: JsonType
    question: str
    since: float
    """When it was first asked (Unix time, seconds)."""
    deadline: float | None = None
    """When it is denied if nobody answered (Unix time, seconds; None: never)."""

    def to_json(self) -> dict[str, JsonType]:
        """`{"id", "tool", "arguments", "question", "since"}` (since: ISO 8601, UTC)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.since))
        millis = int(self.since * 1000) % 1000
        return {
            "id": self.run_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "question": self.question,
            "since": f"{stamp}.{millis:03d}Z",
        }


@dataclass(frozen=True, slots=True)
class Claim:
    """A queued run, as a worker takes it."""

    attempt: int
    """1 for its first delivery; more when a worker that had it stopped before it ended."""
    meta: dict[str, str]
    """What the front end stored about the run (principal, tool, arguments...)."""
    answer: tuple[bool, str] | None
    """The answer the run waited for (approved, reason): it is queued again because of it."""


def key_digest(tool: str, arguments: JsonType) -> str:
    """What a key's call is compared by: its tool and arguments (canonical JSON)."""
    text = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _conflict(key: str) -> str:
    return (
        f"the idempotency key {key!r} was used for another call (another tool, or other "
        "arguments); a key stands for one call"
    )


def _ledger_id(principal: str, key: str) -> str:
    return hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()


class RunState(ABC):
    """See the module doc."""

    @abstractmethod
    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """Take `key` for `run_id`: None; or the run it already stands for.

        Raises:
            IdempotencyConflictError: the key stands for another call.
        """

    @abstractmethod
    async def release(self, principal: str, key: str, run_id: str) -> None:
        """Give `key` up, if it still stands for `run_id` (the run could not start)."""

    @abstractmethod
    async def wait(self, waiting: Waiting, principal: str) -> None:
        """Record that the run waits for an answer (listed until answered or ended)."""

    @abstractmethod
    async def answer(self, run_id: str, approved: bool, reason: str) -> bool:
        """Answer the run's question, once: False when it waits for none (or was answered).

        A queued run keeps the answer for the worker that takes it again (`claim`), as a new
        first attempt.
        """

    @abstractmethod
    async def unwait(self, run_id: str, principal: str) -> None:
        """The run waits no more (answered, timed out, or ended)."""

    @abstractmethod
    async def waiting(self, principal: str) -> list[Waiting]:
        """The runs of `principal` waiting for an answer, the oldest first."""

    @abstractmethod
    async def question(self, run_id: str) -> str | None:
        """The question the run waits on and nobody answered yet, if any."""

    async def admit(self, run_id: str, most: int | None) -> bool:
        """Count the run as queued, unless `most` are already (None: no bound)."""
        return True

    async def started(self, run_id: str) -> None:  # noqa: B027 - nothing queued by default
        """The run is no longer queued (a worker took it, or it ended)."""

    async def claim(self, run_id: str, worker: str) -> Claim | None:
        """Count a delivery of the run to `worker`; None when it has ended or is gone."""
        raise NotImplementedError("runs are only queued with Redis")


class MemoryRunState(RunState):
    """The state of the runs of this one process."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, str, float]] = {}  # ledger id -> run, digest, expiry
        self._waiting: dict[str, tuple[str, Waiting]] = {}  # run -> principal, question
        self._answers: dict[str, tuple[bool, str]] = {}

    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """See `RunState.reserve`."""
        now = time.monotonic()
        ledger = _ledger_id(principal, key)
        found = self._keys.get(ledger)
        if found is not None and found[2] > now:
            if found[1] != digest:
                raise IdempotencyConflictError(_conflict(key))
            return found[0]
        if len(self._keys) > 10_000:  # drop the expired ones now and then
            self._keys = {k: v for k, v in self._keys.items() if v[2] > now}
        self._keys[ledger] = (run_id, digest, now + ttl)
        return None

    async def release(self, principal: str, key: str, run_id: str) -> None:
        """See `RunState.release`."""
        ledger = _ledger_id(principal, key)
        found = self._keys.get(ledger)
        if found is not None and found[0] == run_id:
            del self._keys[ledger]

    async def wait(self, waiting: Waiting, principal: str) -> None:
        """See `RunState.wait`."""
        self._waiting[waiting.run_id] = (principal, waiting)
        self._answers.pop(waiting.run_id, None)

    async def answer(self, run_id: str, approved: bool, reason: str) -> bool:
        """See `RunState.answer`."""
        if run_id not in self._waiting or run_id in self._answers:
            return False
        self._answers[run_id] = (approved, reason)
        return True

    async def unwait(self, run_id: str, principal: str) -> None:
        """See `RunState.unwait`."""
        self._waiting.pop(run_id, None)
        self._answers.pop(run_id, None)

    async def waiting(self, principal: str) -> list[Waiting]:
        """See `RunState.waiting`."""
        found = [
            w for p, w in self._waiting.values() if p == principal and w.run_id not in self._answers
        ]
        return sorted(found, key=lambda w: w.since)

    async def question(self, run_id: str) -> str | None:
        """See `RunState.question`."""
        found = self._waiting.get(run_id)
        return None if found is None or run_id in self._answers else found[1].question


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

# KEYS: the run's meta hash (the store's). ARGV: worker
# -> false (gone or ended), or {attempt, field, value, ...}
_CLAIM = """
if redis.call('HGET', KEYS[1], 'ended') ~= '0' then return false end
local attempt = redis.call('HINCRBY', KEYS[1], 'q:attempt', 1)
redis.call('HSET', KEYS[1], 'q:worker', ARGV[1])
local all = redis.call('HGETALL', KEYS[1])
table.insert(all, 1, attempt)
return all
"""

# KEYS: meta, waiting index. ARGV: run, question, since (s), tool, arguments, deadline or ''
_WAIT = """
if redis.call('HGET', KEYS[1], 'ended') ~= '0' then return 0 end
redis.call('HDEL', KEYS[1], 'q:approved', 'q:reason')
redis.call('HSET', KEYS[1], 'q:question', ARGV[2], 'q:since', ARGV[3], 'q:tool', ARGV[4],
           'q:arguments', ARGV[5], 'q:deadline', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
"""

# KEYS: meta. ARGV: approved ('1'/'0'), reason -> 1, or 0 when it waits for nothing. The next
# claim is the answered run's first attempt.
_ANSWER = """
local m = redis.call('HMGET', KEYS[1], 'ended', 'q:question', 'q:approved')
if m[1] ~= '0' or not m[2] or m[3] then return 0 end
redis.call('HSET', KEYS[1], 'q:approved', ARGV[1], 'q:reason', ARGV[2], 'q:attempt', 0)
return 1
"""


_PREFIX = "kosong:"
_STALE_MS = 600_000
"""A run counted as queued this long without a worker taking it no longer counts (its front
end died before it could queue it)."""


class RedisRunState(RunState):
    """The state of runs in Redis, shared by every front end and worker."""

    def __init__(self, store: RedisEventStore) -> None:
        """Keep it beside the runs of `store` (with its client), other keys under `kosong:`."""
        from kosong.eventstore.redis_store import reachable

        self._reachable = reachable
        self._store = store
        self._client: Any = store.client
        self._reserve = self._client.register_script(_RESERVE)
        self._release = self._client.register_script(_RELEASE)
        self._admit = self._client.register_script(_ADMIT)
        self._claim = self._client.register_script(_CLAIM)
        self._wait = self._client.register_script(_WAIT)
        self._answer = self._client.register_script(_ANSWER)

    def _meta(self, run_id: str) -> str:
        return self._store.key(run_id, "m")

    def _index(self, principal: str) -> str:
        return f"{_PREFIX}waiting:{hashlib.sha256(principal.encode()).hexdigest()[:32]}"

    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """See `RunState.reserve`."""
        with self._reachable():
            ledger = f"{_PREFIX}idem:{_ledger_id(principal, key)}"
            found: Any = await self._reserve(
                keys=[ledger], args=[run_id, digest, math.ceil(ttl * 1000)]
            )
            if not found:
                return None
            if found[1] != digest:
                raise IdempotencyConflictError(_conflict(key))
            return str(found[0])

    async def release(self, principal: str, key: str, run_id: str) -> None:
        """See `RunState.release`."""
        with self._reachable():
            ledger = f"{_PREFIX}idem:{_ledger_id(principal, key)}"
            await self._release(keys=[ledger], args=[run_id])

    async def admit(self, run_id: str, most: int | None) -> bool:
        """See `RunState.admit`."""
        with self._reachable():
            now = math.floor(time.time() * 1000)
            args = [run_id, now, now - _STALE_MS, "" if most is None else most]
            return bool(await self._admit(keys=[f"{_PREFIX}queued"], args=args))

    async def started(self, run_id: str) -> None:
        """See `RunState.started`."""
        with self._reachable():
            await self._client.zrem(f"{_PREFIX}queued", run_id)

    async def claim(self, run_id: str, worker: str) -> Claim | None:
        """See `RunState.claim`."""
        with self._reachable():
            reply: Any = await self._claim(keys=[self._meta(run_id)], args=[worker])
            if not reply:
                return None
            attempt, fields = int(reply[0]), reply[1:]
            pairs = dict(zip(fields[::2], fields[1::2], strict=True))
            meta = {k[2:]: v for k, v in pairs.items() if k.startswith("m:")}
            approved = pairs.get("q:approved")
            answer = None if approved is None else (approved == "1", pairs.get("q:reason", ""))
            return Claim(attempt, meta, answer)

    async def wait(self, waiting: Waiting, principal: str) -> None:
        """See `RunState.wait`."""
        with self._reachable():
            text = json.dumps(waiting.arguments, ensure_ascii=False)
            deadline = "" if waiting.deadline is None else repr(waiting.deadline)
            await self._wait(
                keys=[self._meta(waiting.run_id), self._index(principal)],
                args=[waiting.run_id, waiting.question, repr(waiting.since), waiting.tool, text,
                      deadline],
            )  # fmt: skip

    async def answer(self, run_id: str, approved: bool, reason: str) -> bool:
        """See `RunState.answer`."""
        with self._reachable():
            done = await self._answer(
                keys=[self._meta(run_id)], args=["1" if approved else "0", reason]
            )
            return bool(done)

    async def unwait(self, run_id: str, principal: str) -> None:
        """See `RunState.unwait`."""
        with self._reachable():
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.hdel(self._meta(run_id), "q:question", "q:since", "q:approved", "q:reason",
                          "q:deadline", "q:tool", "q:arguments")  # fmt: skip
                pipe.zrem(self._index(principal), run_id)
                await pipe.execute()

    async def waiting(self, principal: str) -> list[Waiting]:
        """See `RunState.waiting`."""
        with self._reachable():
            index = self._index(principal)
            run_ids: list[str] = await self._client.zrange(index, 0, 999)
            if not run_ids:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for run_id in run_ids:
                    pipe.hmget(self._meta(run_id), "q:question", "q:since", "q:tool", "q:arguments",
                               "ended", "q:deadline", "q:approved")  # fmt: skip
                rows: list[Any] = await pipe.execute()
            found: list[Waiting] = []
            gone: list[str] = []
            for run_id, (question, since, tool, arguments, ended, deadline, approved) in zip(
                run_ids, rows, strict=True
            ):
                if not question or ended != "0" or approved:
                    gone.append(run_id)
                    continue
                until = float(deadline) if deadline else None
                found.append(Waiting(run_id, tool or "", json.loads(arguments or "null"), question,
                                     float(since), until))  # fmt: skip
            if gone:
                await self._client.zrem(index, *gone)
            return found

    async def question(self, run_id: str) -> str | None:
        """See `RunState.question`."""
        with self._reachable():
            found: Any = await self._client.hmget(self._meta(run_id), "q:question", "q:approved")
        return found[0] if found[0] and not found[1] else None
