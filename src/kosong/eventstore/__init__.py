"""Where runs' events are kept: a log per stream that readers follow and resume by event id.

Below both `kosong.server` (runs of tool calls, followed over SSE) and `kosong.mcp` (resumable
MCP streams), so neither imports the other.

- `EventStore`: the interface: open a stream, append events, read after a position (waiting
  for more), end a stream with exactly one final event; ids are `<stream>.<position>`.
- `MemoryEventStore`: in this process, bounded.
- `RedisEventStore` (in `kosong.eventstore.redis_store`, needs `redis`): in Redis streams, shared
  by several processes, with leases so a dead writer's streams are ended.
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
