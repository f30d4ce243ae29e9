"""Where runs' events are kept: a log per stream that readers follow and resume by event id.

Below both `kosong.server` (runs of tool calls, followed over SSE) and `kosong.mcp` (resumable
MCP streams), so neither imports the other. A store is protocol-neutral: the kind and the data
of an event are opaque text.

An `EventStore` keeps, per stream, an ordered log of events and a few words about the stream
(who opened it, for which tool). A writer appends; readers read the events after a position,
waiting for new ones, so replay and live delivery are the same read. A stream ends with
exactly one final event. Event ids carry their stream, `<stream id>.<position>` (position `0`:
before the first event), so whoever holds one (a browser's `Last-Event-ID`) is led back to the
stream and to the place in it.

- `MemoryEventStore`: the streams of this process, bounded in count and kept a while after
  they end.
- `RedisEventStore` (in `kosong.eventstore.redis_store`, needs `redis`): in Redis streams,
  shared by several processes, with leases so a dead writer's streams are ended.
"""

from kosong.eventstore._store import (
    START,
    EventStore,
    MemoryEventStore,
    StoredEvent,
    StoreFullError,
    StoreUnavailableError,
    StreamInfo,
    event_id,
    split_event_id,
)

__all__ = [
    "START",
    "EventStore",
    "MemoryEventStore",
    "StoreFullError",
    "StoreUnavailableError",
    "StoredEvent",
    "StreamInfo",
    "event_id",
    "split_event_id",
]
