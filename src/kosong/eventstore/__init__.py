"""Where runs are kept: one record per run, its events, and what it waits on.

Below both `kosong.server` (HTTP runs, approvals that wait, idempotency) and `kosong.mcp` (MCP
tasks, resumable MCP streams), so neither imports the other; the store knows nothing of either
protocol: an event's kind and data are opaque text.

A run (`RunRecord`) is a call that may outlive its request: its id, principal, tool and
arguments, idempotency key, attempt, and where it is in its life, `status`:

    queued ──claim──► running ──final event──► done
      ▲                  │
      │                  ask (the call was deferred: a question)
      │                  ▼
      └──answer──── waiting ──(denied, timed out, cancelled: a final event)──► done

Its events are an ordered log that readers follow and resume by event id, so replay and live
delivery are the same read; a run ends with exactly one final event, whoever appends it.
Event ids carry their run, `<run id>.<position>` (position `0`: before the first event), so
whoever holds one (a browser's `Last-Event-ID`) is led back to the run and to the place in it.

- `MemoryRunStore`: the runs of this process, bounded in count and kept a while after they
  end.
- `RedisRunStore` (in `kosong.eventstore.redis_store`, needs `redis`): in Redis, shared by
  every front end and worker; all of it survives the restart of any process.
"""

from kosong.eventstore._store import (
    START,
    IdempotencyConflictError,
    MemoryRunStore,
    RunRecord,
    RunStatus,
    RunStore,
    StoredEvent,
    StoreFullError,
    StoreUnavailableError,
    event_id,
    split_event_id,
)

__all__ = [
    "START",
    "IdempotencyConflictError",
    "MemoryRunStore",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "StoreFullError",
    "StoreUnavailableError",
    "StoredEvent",
    "event_id",
    "split_event_id",
]
