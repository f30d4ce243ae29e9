"""`EventStore`, the interface of event stores, and `MemoryEventStore`; see the package doc."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

logger = logging.getLogger(__name__)

START = "0"
"""The position before a stream's first event."""

_STREAM_ID = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")
# A position: a number, or two joined by `-` (a Redis stream entry id), ASCII digits without
# leading zeros, at most 20 each (2**64 has 20): anything else is no position of any store.
_POSITION = re.compile(r"\A(?:0|[1-9][0-9]{0,19})(?:-(?:0|[1-9][0-9]{0,19}))?\Z")


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a stream, as stored."""

    id: str
    """`"<stream id>.<position>"`: where the event sits, usable as an SSE id."""
    kind: str
    """The event's kind (the SSE event name: `tool_progress`, `tool_result`...)."""
    data: str
    """The event's data, as text (JSON for tool events)."""
    final: bool = False
    """Whether this is the stream's last event."""


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """What a store knows about a stream."""

    stream_id: str
    """The stream's id."""
    meta: Mapping[str, str]
    """What the writer said about the stream when opening it (principal, tool name...)."""
    ended: bool
    """Whether the final event was appended."""
    writer_alive: bool
    """Whether the process writing the stream still runs (always True in one process)."""


class StoreFullError(RuntimeError):
    """The store holds as many running streams as it may; try again later."""


class StoreUnavailableError(ConnectionError):
    """The store cannot be reached right now (its Redis is down, say); try again later.

    A store raises it from any method; the server answers 503 with `Retry-After`.
    """


def event_id(stream_id: str, position: str) -> str:
    """The id of the event at `position` of `stream_id`."""
    return f"{stream_id}.{position}"


def split_event_id(text: str) -> tuple[str, str] | None:
    """`(stream id, position)` of an event id, or None when it is not one.

    A position is ASCII digits without leading zeros, or two such numbers joined by `-`;
    whether the stream has it is for its store to say (`EventStore.read`).
    """
    stream_id, dot, position = text.rpartition(".")
    if not dot or not _POSITION.match(position) or not _STREAM_ID.match(stream_id):
        return None
    return stream_id, position


def check_stream_id(stream_id: str) -> None:
    """Raise ValueError unless `stream_id` is 1 to 128 of `A-Z a-z 0-9 _ -`."""
    if not _STREAM_ID.match(stream_id):
        raise ValueError(f"stream id {stream_id!r} must be 1 to 128 of A-Z a-z 0-9 _ -")


class EventStore(ABC):
    """Where the events of streams are kept; see the module doc."""

    shared: bool = False
    """Whether other processes read and write the same streams (so a stream's writer may be
    elsewhere, and may die)."""

    @abstractmethod
    async def open(
        self,
        stream_id: str,
        meta: Mapping[str, str],
        *,
        ttl: float | None = None,
        leased: bool = True,
    ) -> None:
        """Start the stream `stream_id`, with `meta` about it.

        `ttl`: seconds the stream is kept once it ends (default: the store's). `leased`: the
        stream is written by this process, and ended as abandoned (`end_abandoned`) once this
        process is gone; False for a stream whose writers come and go (a queue of runs, whose
        dead workers the queue itself replaces).

        Raises:
            ValueError: the stream id is not valid, or a stream with this id exists.
            StoreFullError: the store holds as many running streams as it may.
        """

    @abstractmethod
    async def append(
        self, stream_id: str, kind: str, data: str, *, final: bool = False
    ) -> str | None:
        """Add an event at the end of the stream; `final` ends the stream.

        Returns the new event's id; None, appending nothing, when the stream has already
        ended (or is unknown): one final event per stream, whoever appends it.
        """

    def append_nowait(
        self, stream_id: str, kind: str, data: str, *, final: bool = False
    ) -> bool | None:
        """`append` without waiting, when the store can: its answer, or None if it cannot.

        None means nothing was appended: use `append`. A store of this process always can.
        """
        return None

    @abstractmethod
    async def read(
        self, stream_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after position `after` (up to `limit`), or None for an unknown stream.

        When there are none yet and the stream has not ended, waits up to `wait` seconds for
        some (`math.inf`: until some come); an empty list means none came (or the stream has
        ended and all were read).

        Raises:
            ValueError: `after` is not a position of this stream (not of the form
                `split_event_id` accepts, or past its last event).
            StoreUnavailableError: the store cannot be reached.
        """

    @abstractmethod
    async def info(self, stream_id: str) -> StreamInfo | None:
        """What the store knows about `stream_id`; None when unknown or expired."""

    @abstractmethod
    async def ended(self, stream_ids: Sequence[str]) -> set[str]:
        """Which of `stream_ids` have ended (or are gone)."""

    async def end_abandoned(self, stream_id: str, kind: str, data: str) -> bool:
        """Append a final event if the stream's writer is gone and it has not ended.

        True when this call ended the stream. A store of one process has no writer to lose.
        """
        return False

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release what the store holds (connections, tasks)."""

    async def replay(self, last_event_id: str) -> tuple[str, list[StoredEvent]] | None:
        """The stream of `last_event_id` and every event after it stored so far; None if unknown.

        For protocols that replay what was missed and then go on by themselves (MCP).
        """
        parts = split_event_id(last_event_id)
        if parts is None:
            return None
        stream_id, position = parts
        events: list[StoredEvent] = []
        try:
            while True:
                batch = await self.read(stream_id, position)
                if batch is None:
                    return None
                if not batch:
                    return stream_id, events
                events += batch
                position = batch[-1].id.rpartition(".")[2]
        except ValueError:
            return None


class _Stream:
    __slots__ = ("ended", "events", "expires_at", "meta", "ttl", "waiters")

    def __init__(self, meta: Mapping[str, str], ttl: float) -> None:
        self.meta = dict(meta)
        self.ttl = ttl
        self.events: list[StoredEvent] = []
        self.ended = False
        self.expires_at = 0.0
        self.waiters: list[asyncio.Future[None]] = []


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class MemoryEventStore(EventStore):
    """The streams of this process, in memory: bounded, and kept `ttl` seconds after they end.

    At most `max_streams` streams are kept: opening one more drops the streams that ended
    longest ago, and fails with `StoreFullError` when every stream is still running. A stream
    keeps at most `max_events` events: past that, further events other than the final one are
    dropped (and logged once).
    """

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        max_streams: int = 10_000,
        max_events: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Keep ended streams `ttl` seconds; at most `max_streams` streams, `max_events` each.

        Raises:
            ValueError: a bound is not positive.
        """
        if ttl <= 0 or max_streams < 1 or max_events < 1:
            raise ValueError("ttl, max_streams and max_events must be positive")
        self._ttl = ttl
        self._max_streams = max_streams
        self._max_events = max_events
        self._clock = clock
        self._streams: dict[str, _Stream] = {}
        # Ended streams in the order they ended, which is the order they expire in (a stream
        # kept longer than the store's ttl may keep the ones after it a while past their
        # time: they are hidden from readers as soon as they expire, and dropped first when
        # the store is full).
        self._ended: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._streams)

    def _purge(self, room: int = 0) -> None:
        now = self._clock()
        while self._ended:
            oldest = next(iter(self._ended))
            stream = self._streams.get(oldest)
            full = len(self._streams) + room > self._max_streams
            if stream is not None and stream.expires_at > now and not full:
                break
            self._ended.popitem(last=False)
            self._streams.pop(oldest, None)

    def _get(self, stream_id: str) -> _Stream | None:
        stream = self._streams.get(stream_id)
        if stream is not None and stream.ended and stream.expires_at <= self._clock():
            self._purge()
            return None
        return stream

    async def open(
        self,
        stream_id: str,
        meta: Mapping[str, str],
        *,
        ttl: float | None = None,
        leased: bool = True,
    ) -> None:
        """Start a stream; see `EventStore.open`."""
        check_stream_id(stream_id)
        self._purge(room=1)
        if stream_id in self._streams:
            raise ValueError(f"stream {stream_id!r} exists")
        if len(self._streams) >= self._max_streams:
            raise StoreFullError(f"{len(self._streams)} streams are running, the most allowed")
        self._streams[stream_id] = _Stream(meta, self._ttl if ttl is None else ttl)

    async def append(
        self, stream_id: str, kind: str, data: str, *, final: bool = False
    ) -> str | None:
        """Add an event; see `EventStore.append`."""
        return self._append(stream_id, kind, data, final)

    def append_nowait(self, stream_id: str, kind: str, data: str, *, final: bool = False) -> bool:
        """Add an event, at once; see `EventStore.append`."""
        return self._append(stream_id, kind, data, final) is not None

    def _append(self, stream_id: str, kind: str, data: str, final: bool) -> str | None:
        stream = self._streams.get(stream_id)
        if stream is None or stream.ended:
            return None
        events = stream.events
        if len(events) >= self._max_events and not final:
            if len(events) == self._max_events:
                logger.warning("Stream %s reached %d events; dropping more", stream_id, len(events))
            return events[-1].id  # dropped: a reader resumes after the last one kept
        event_id = f"{stream_id}.{len(events) + 1}"
        events.append(StoredEvent(event_id, kind, data, final))
        if final:
            stream.ended = True
            stream.expires_at = self._clock() + stream.ttl
            self._ended[stream_id] = None
        if stream.waiters:
            for waiter in stream.waiters:
                _wake(waiter)
            stream.waiters.clear()
        return event_id

    async def read(
        self, stream_id: str, after: str, *, wait: float = 0.0, limit: int = 256
    ) -> list[StoredEvent] | None:
        """The events after `after`; see `EventStore.read`."""
        stream = self._get(stream_id)
        if stream is None:
            return None
        if not (after.isascii() and after.isdigit()) or int(after) > len(stream.events):
            raise ValueError(f"{after!r} is not a position of stream {stream_id!r}")
        start = int(after)
        if start == len(stream.events) and not stream.ended and wait > 0:
            # A future of its own, woken by the next append or by a timer: cheaper than
            # asyncio.wait / wait_for, and every event of every stream comes this way.
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            stream.waiters.append(waiter)
            timer = loop.call_later(wait, _wake, waiter) if wait != math.inf else None
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                with contextlib.suppress(ValueError):  # gone when an append woke it
                    stream.waiters.remove(waiter)
        return stream.events[start : start + limit]

    async def info(self, stream_id: str) -> StreamInfo | None:
        """What is known of the stream; see `EventStore.info`."""
        stream = self._get(stream_id)
        if stream is None:
            return None
        return StreamInfo(stream_id, stream.meta, stream.ended, True)

    async def ended(self, stream_ids: Sequence[str]) -> set[str]:
        """Which streams have ended; see `EventStore.ended`."""
        out: set[str] = set()
        for stream_id in stream_ids:
            stream = self._get(stream_id)
            if stream is None or stream.ended:
                out.add(stream_id)
        return out
