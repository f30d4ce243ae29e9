"""Runs: where they are kept (one record per run, its events, what it waits on) and executed.

Below both `kosong.server` (HTTP runs, approvals that wait, idempotency) and `kosong.mcp` (MCP
tasks, input requests, resumable MCP streams), so neither imports the other; the store knows
nothing of either protocol: an event's kind and data are opaque text.

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

`Runs` starts runs of a pipeline's calls, executes them through an `Executor` (tasks of this
process, or a server's workers) and follows them; both servers serve their runs with it.
"""

from kosong.eventstore._executor import Executor
from kosong.eventstore._runs import QueueFullError, RunNotFoundError, Runs, ShuttingDownError
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
    "Executor",
    "IdempotencyConflictError",
    "MemoryRunStore",
    "QueueFullError",
    "RunNotFoundError",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "Runs",
    "ShuttingDownError",
    "StoreFullError",
    "StoreUnavailableError",
    "StoredEvent",
    "event_id",
    "split_event_id",
]
