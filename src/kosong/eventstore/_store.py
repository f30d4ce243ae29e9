"""`RunRecord`, `RunStore` (the interface of run stores), `MemoryRunStore`: see the package."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import math
import re
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

logger = logging.getLogger(__name__)

START = "0"
"""The position before a run's first event."""

_RUN_ID = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")
# A position: a number, or two joined by `-` (a Redis stream entry id), ASCII digits without
# leading zeros, at most 20 each (2**64 has 20): anything else is no position of any store.
_POSITION = re.compile(r"\A(?:0|[1-9][0-9]{0,19})(?:-(?:0|[1-9][0-9]{0,19}))?\Z")

RunStatus: TypeAlias = Literal["queued", "running", "waiting", "done"]
"""Where a run is in its life: queued → running → (waiting → queued → running)... → done."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run: a call that may outlive its request, and where it is in its life.

    Its events are kept beside it (`RunStore.append` / `read`); the last one is its result.
    """

    id: str
    """The run's id (its call's id)."""
    principal: str
    """Who started it: only they may read, answer or cancel it."""
    tool: str
    """The tool called."""
    arguments: str = "{}"
    """The call's arguments, as JSON text."""
    trace: str | None = None
    """The call's trace id."""
    key: str | None = None
    """The idempotency key it was started with."""
    status: RunStatus = "queued"
    """Queued (for an executor), running, waiting (for an answer), or done (its final event
    is stored)."""
    attempt: int = 0
    """Executions of it so far (`claim`): more than one means one stopped mid-call."""
    question: str | None = None
    """What it waits on (an approval's question), while waiting."""
    since: float | None = None
    """When it started waiting (Unix time, seconds)."""
    deadline: float | None = None
    """When a question nobody answered is denied (Unix time, seconds; None: never)."""
    answer: tuple[bool, str] | None = None
    """The answer it got (approved, reason), until an executor takes it again."""
    asks: float | None = None
    """Seconds a question of its tool waits for its client's answer, when its client answers
    questions (an MCP task, or an MCP client that takes elicitation or sampling); None: the
    tool's questions are declined."""

    @property
    def ended(self) -> bool:
        """Whether its final event is stored."""
        return self.status == "done"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a run, as stored."""

    id: str
    """`"<run id>.<position>"`: where the event sits, usable as an SSE id."""
    kind: str
    """The event's kind (the SSE event name: `tool_progress`, `tool_result`...)."""
    data: str
    """The event's data, as text (JSON for tool events)."""
    final: bool = False
    """Whether this is the run's last event."""


class StoreFullError(RuntimeError):
    """The store holds as many running runs as it may; try again later."""


class StoreUnavailableError(ConnectionError):
    """The store cannot be reached right now (its Redis is down, say); try again later.

    A store raises it from any method; the server answers 503 with `Retry-After`.
    """


class IdempotencyConflictError(ValueError):
    """An idempotency key already stands for another call (other tool or arguments)."""


def event_id(run_id: str, position: str) -> str:
    """The id of the event at `position` of `run_id`."""
    return f"{run_id}.{position}"


def split_event_id(text: str) -> tuple[str, str] | None:
    """`(run id, position)` of an event id, or None when it is not one.

    A position is ASCII digits without leading zeros, or two such numbers joined by `-`;
    whether the run has it is for its store to say (`RunStore.read`).
    """
    run_id, dot, position = text.rpartition(".")
    if not dot or not _POSITION.match(position) or not _RUN_ID.match(run_id):
        return None
    return run_id, position


def check_run_id(run_id: str) -> None:
    """Raise ValueError unless `run_id` is 1 to 128 of `A-Z a-z 0-9 _ -`."""
    if not _RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r} must be 1 to 128 of A-Z a-z 0-9 _ -")


def ledger_id(principal: str, key: str) -> str:
    """Where a principal's idempotency key is kept."""
    return hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()


def conflict(key: str) -> IdempotencyConflictError:
    """The error for a key that stands for another call."""
    return IdempotencyConflictError(
        f"the idempotency key {key!r} was used for another call (another tool, or other "
        "arguments); a key stands for one call"
    )


class RunStore(ABC):
    """Where runs are kept: their records, events, questions and idempotency keys."""

    @abstractmethod
    async def create(self, record: RunRecord, *, ttl: float | None = None) -> None:
        """Keep a new run; `ttl`: seconds it is kept once done (default: the store's).

        Raises:
            ValueError: the run id is not valid, or a run with this id exists.
            StoreFullError: the store holds as many running runs as it may.
        """

    @abstractmethod
    async def get(self, run_id: str) -> RunRecord | None:
        """The run's record; None when unknown or expired."""

    @abstractmethod
    async def append(self, run_id: str, kind: str, data: str, *, final: bool = False) -> str | None:
        """Add an event at the end of the run's log; `final` ends the run (status done).

        Returns the new event's id; None, appending nothing, when the run has ended already
        (or is unknown): one final event per run, whoever appends it.
        """

    @abstractmethod
    async def read(
        self, run_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after position `after` (up to `limit`), or None for an unknown run.

        When there are none yet and the run has not ended, waits up to `wait` seconds for
        some (`math.inf`: until some come); an empty list means none came (or the run has
        ended and all were read).

        Raises:
            ValueError: `after` is not a position of this run (not of the form
                `split_event_id` accepts, or past its last event).
        """

    @abstractmethod
    async def claim(self, run_id: str) -> RunRecord | None:
        """Take the run to execute it (running, one more attempt).

        None when it is done, or waiting for an answer.
        """

    @abstractmethod
    async def ask(self, run_id: str, question: str, deadline: float | None) -> RunRecord | None:
        """The run waits for an answer to `question` (listed by `waiting`); None once done."""

    @abstractmethod
    async def answer(self, run_id: str, approved: bool, reason: str) -> RunRecord | None:
        """Answer the run's question, once.

        The run is queued again with the answer, as a new first attempt. None when it waits
        for none (or someone answered first).
        """

    @abstractmethod
    async def waiting(self, principal: str) -> list[RunRecord]:
        """The runs of `principal` waiting for an answer, the oldest first."""

    @abstractmethod
    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """Take `key` for `run_id` for `ttl` seconds: None; or the run it already stands for.

        Raises:
            IdempotencyConflictError: the key stands for another call (another `digest`).
        """

    @abstractmethod
    async def release(self, principal: str, key: str, run_id: str) -> None:
        """Give `key` up, if it still stands for `run_id` (the run could not start)."""

    async def admit(self, run_id: str, most: int | None) -> bool:
        """Count the run as queued, unless `most` are already (None: no bound)."""
        return True

    async def started(self, run_id: str) -> None:  # noqa: B027 - nothing counted by default
        """The run is no longer queued (an executor took it, or it ended)."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the store holds (connections)."""

    async def replay(self, run_id: str, after: str = START) -> list[StoredEvent] | None:
        """Every event of the run after position `after` stored so far; None if unknown.

        For readers of a whole log, and protocols that replay what was missed and then go on
        by themselves (MCP).
        """
        position = after
        events: list[StoredEvent] = []
        try:
            while True:
                batch = await self.read(run_id, position)
                if batch is None:
                    return None
                if not batch:
                    return events
                events += batch
                position = batch[-1].id.rpartition(".")[2]
        except ValueError:
            return None


@dataclass(slots=True)
class _Run:
    record: RunRecord
    ttl: float
    events: list[StoredEvent] = field(default_factory=list[StoredEvent])
    expires_at: float = 0.0
    appended: asyncio.Event = field(default_factory=asyncio.Event)  # set (and renewed) by append


class MemoryRunStore(RunStore):
    """The runs of this process, in memory: bounded, and kept `ttl` seconds after they end.

    At most `max_runs` runs are kept: creating one more drops the runs that ended longest
    ago, and fails with `StoreFullError` when every run is still going. A run keeps at most
    `max_events` events: past that, further events other than the final one are dropped (and
    logged once).
    """

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        max_runs: int = 10_000,
        max_events: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Keep ended runs `ttl` seconds; at most `max_runs` runs, `max_events` each.

        Raises:
            ValueError: a bound is not positive.
        """
        if ttl <= 0 or max_runs < 1 or max_events < 1:
            raise ValueError("ttl, max_runs and max_events must be positive")
        self._ttl = ttl
        self._max_runs = max_runs
        self._max_events = max_events
        self._clock = clock
        self._runs: dict[str, _Run] = {}
        # Ended runs in the order they ended, which is the order they expire in (a run kept
        # longer than the store's ttl may keep the ones after it a while past their time:
        # they are hidden from readers as soon as they expire, and dropped first when the
        # store is full).
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._keys: dict[str, tuple[str, str, float]] = {}  # ledger id -> run, digest, expiry

    def _purge(self, room: int = 0) -> None:
        now = self._clock()
        while self._ended:
            oldest = next(iter(self._ended))
            run = self._runs.get(oldest)
            full = len(self._runs) + room > self._max_runs
            if run is not None and run.expires_at > now and not full:
                break
            self._ended.popitem(last=False)
            self._runs.pop(oldest, None)

    def _get(self, run_id: str) -> _Run | None:
        run = self._runs.get(run_id)
        if run is not None and run.record.ended and run.expires_at <= self._clock():
            self._purge()
            return None
        return run

    async def create(self, record: RunRecord, *, ttl: float | None = None) -> None:
        """Keep a new run; see `RunStore.create`."""
        check_run_id(record.id)
        self._purge(room=1)
        if record.id in self._runs:
            raise ValueError(f"run {record.id!r} exists")
        if len(self._runs) >= self._max_runs:
            raise StoreFullError(f"{len(self._runs)} runs are going, the most allowed")
        self._runs[record.id] = _Run(record, self._ttl if ttl is None else ttl)

    async def get(self, run_id: str) -> RunRecord | None:
        """The run's record; see `RunStore.get`."""
        run = self._get(run_id)
        return None if run is None else run.record

    async def append(self, run_id: str, kind: str, data: str, *, final: bool = False) -> str | None:
        """Add an event; see `RunStore.append`."""
        run = self._runs.get(run_id)
        if run is None or run.record.ended:
            return None
        events = run.events
        if len(events) >= self._max_events and not final:
            if len(events) == self._max_events:
                logger.warning("Run %s reached %d events; dropping more", run_id, len(events))
            return events[-1].id  # dropped: a reader resumes after the last one kept
        new_id = f"{run_id}.{len(events) + 1}"
        events.append(StoredEvent(new_id, kind, data, final))
        if final:
            run.record = dataclasses.replace(run.record, status="done", question=None)
            run.expires_at = self._clock() + run.ttl
            self._ended[run_id] = None
        run.appended.set()
        run.appended = asyncio.Event()
        return new_id

    async def read(
        self, run_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after `after`; see `RunStore.read`."""
        run = self._get(run_id)
        if run is None:
            return None
        if not (after.isascii() and after.isdigit()) or int(after) > len(run.events):
            raise ValueError(f"{after!r} is not a position of run {run_id!r}")
        start = int(after)
        if start == len(run.events) and not run.record.ended and wait > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if wait == math.inf else wait):
                    await run.appended.wait()
        return run.events[start : start + limit]

    def _change(self, run_id: str, **changes: object) -> RunRecord | None:
        run = self._get(run_id)
        if run is None or run.record.ended:
            return None
        run.record = dataclasses.replace(run.record, **changes)
        return run.record

    async def claim(self, run_id: str) -> RunRecord | None:
        """Take the run; see `RunStore.claim`."""
        record = await self.get(run_id)
        if record is None or record.status == "waiting":  # waits for its answer first
            return None
        return self._change(run_id, status="running", attempt=record.attempt + 1)

    async def ask(self, run_id: str, question: str, deadline: float | None) -> RunRecord | None:
        """The run waits; see `RunStore.ask`."""
        return self._change(run_id, status="waiting", question=question, since=time.time(),
                            deadline=deadline, answer=None)  # fmt: skip

    async def answer(self, run_id: str, approved: bool, reason: str) -> RunRecord | None:
        """Answer the run's question; see `RunStore.answer`."""
        record = await self.get(run_id)
        if record is None or record.status != "waiting":
            return None
        return self._change(
            run_id, status="queued", question=None, answer=(approved, reason), attempt=0
        )

    async def waiting(self, principal: str) -> list[RunRecord]:
        """The runs waiting; see `RunStore.waiting`."""
        found = [
            run.record
            for run in self._runs.values()
            if run.record.status == "waiting" and run.record.principal == principal
        ]
        return sorted(found, key=lambda r: r.since or 0.0)

    async def reserve(
        self, principal: str, key: str, digest: str, run_id: str, ttl: float
    ) -> str | None:
        """Take `key`; see `RunStore.reserve`."""
        now = time.monotonic()
        ledger = ledger_id(principal, key)
        found = self._keys.get(ledger)
        if found is not None and found[2] > now:
            if found[1] != digest:
                raise conflict(key)
            return found[0]
        if len(self._keys) > 10_000:  # drop the expired ones now and then
            self._keys = {k: v for k, v in self._keys.items() if v[2] > now}
        self._keys[ledger] = (run_id, digest, now + ttl)
        return None

    async def release(self, principal: str, key: str, run_id: str) -> None:
        """Give `key` up; see `RunStore.release`."""
        ledger = ledger_id(principal, key)
        found = self._keys.get(ledger)
        if found is not None and found[0] == run_id:
            del self._keys[ledger]
