"""Runs: streamed calls that outlive the connections that started or follow them.

A run is one call through the pipeline, in a task of this process, whose events are appended
to the event store as they happen. Responses only read the store, from any position, so a
client that drops does not touch the run, and one that comes back (here or, with a shared
store, on another process) gets exactly the events it missed, then the live ones.

A run always ends with one final event: the call's result or error, or an error saying why
it could not finish (cancelled by its client, the server shut down, the process running it
died). The store takes one final event per run, whoever writes it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
from collections import deque
from collections.abc import AsyncIterator
from functools import partial
from typing import Any, Literal, cast

from kosong.eventstore._store import (
    START,
    EventStore,
    StoredEvent,
    StoreFullError,
    StoreUnavailableError,
    StreamInfo,
)
from kosong.message import ToolCall
from kosong.standard import PolicyToolset, ToolEvent, coded_error, to_envelope
from kosong.standard.policies import EventHookPolicy
from kosong.tooling import ToolResult, ToolReturnValue

__all__ = ["RunNotFoundError", "Runs", "ShuttingDownError", "error_event_data"]


logger = logging.getLogger(__name__)


class RunNotFoundError(LookupError):
    """No run with this id for this principal (never was, expired, or someone else's)."""


class ShuttingDownError(RuntimeError):
    """The server is shutting down and starts no new run."""


def error_event_data(run_id: str, tool: str, value: ToolReturnValue) -> str:
    """The data of a final `tool_error` event the server writes itself."""
    return json.dumps(to_envelope(ToolResult(run_id, value), tool_name=tool).dump())


def _event_data(event: ToolEvent) -> str:
    """An event's data as JSON text; a final event carries the lossless envelope."""
    try:
        if event.result is not None:
            return json.dumps(to_envelope(event.result).dump(), ensure_ascii=False)
        return json.dumps(event.data, ensure_ascii=False)
    except Exception as e:  # an output that cannot be written as JSON still ends the run
        logger.exception("Could not encode a %s event", event.event)
        metadata: object = event.data.get("metadata")
        known = cast(dict[str, Any], metadata) if isinstance(metadata, dict) else {}
        tool = str(known.get("tool_name") or "")
        value = _failed(f"the result could not be encoded as JSON: {type(e).__name__}")
        return error_event_data("", tool or "unknown", value)


class Runs:
    """The runs of one app: started here, followed from anywhere the store reaches."""

    def __init__(
        self,
        pipeline: PolicyToolset,
        store: EventStore,
        *,
        max_runs: int = 10_000,
        idle: float = 1.0,
    ) -> None:
        """Run calls through `pipeline`, their events into `store`.

        At most `max_runs` run at once in this process; with a shared store, a follower with
        nothing to read checks on its run every `idle` seconds.
        """
        # The pipeline with one more policy outside: every event of a run comes to
        # `_on_event` as it happens, straight from the call's own task.
        self._pipeline = pipeline.wrap(EventHookPolicy(self._on_event))
        self.store = store
        self._max_runs = max_runs
        self._idle = idle
        self._tasks: dict[str, asyncio.Task[ToolResult]] = {}
        self._tools: dict[str, str] = {}  # run id -> tool name, while it runs
        self._finished: set[str] = set()  # runs whose final event came from the pipeline
        self._pending: dict[str, deque[tuple[str, str, bool]]] = {}  # appends to await
        self._writers: set[asyncio.Task[None]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._draining = False
        self.followers = 0
        """Responses following a run right now."""

    @property
    def active(self) -> int:
        """Runs in flight in this process."""
        return len(self._tasks)

    @property
    def draining(self) -> bool:
        """Whether the server is shutting down."""
        return self._draining

    async def start(self, call: ToolCall, principal: str) -> str:
        """Start a run of `call` for `principal`; its id (also the call's id).

        Raises:
            ShuttingDownError: the server is shutting down.
            StoreFullError: too many runs are in flight.
        """
        if self._draining:
            raise ShuttingDownError("the server is shutting down")
        if len(self._tasks) >= self._max_runs:
            raise StoreFullError(f"{len(self._tasks)} runs are in flight, the most allowed")
        run_id = call.id
        await self.store.open(run_id, {"principal": principal, "tool": call.function.name})
        self._tools[run_id] = call.function.name
        handled = self._pipeline.handle(call)  # may send events at once (an eager task)
        if isinstance(handled, asyncio.Task):
            self._tasks[run_id] = handled
            handled.add_done_callback(partial(self._done, run_id))
        else:  # answered without a task (or refused before one): no events were sent
            self._end(run_id, cast(ToolResult, handled))
        if self.store.shared and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        return run_id

    @staticmethod
    def new_id() -> str:
        """A fresh run id: 128 random bits, unguessable."""
        return secrets.token_hex(16)

    def _on_event(self, event: ToolEvent) -> None:
        run_id = _call_id(event)
        if run_id not in self._tools:
            return
        if event.is_final:
            self._finished.add(run_id)
        self._append(run_id, event.event, _event_data(event), event.is_final)

    def _append(self, run_id: str, kind: str, data: str, final: bool) -> None:
        """Append in order: at once when the store can, else by a writer task for the run."""
        pending = self._pending.get(run_id)
        if pending is None:
            appended = self.store.append_nowait(run_id, kind, data, final=final)
            if appended is not None:
                if not appended:
                    self._stop(run_id)
                return
            pending = self._pending[run_id] = deque()
            writer = asyncio.get_running_loop().create_task(self._write(run_id, pending))
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        pending.append((kind, data, final))

    async def _write(self, run_id: str, pending: deque[tuple[str, str, bool]]) -> None:
        try:
            while pending:
                kind, data, final = pending[0]
                try:
                    appended = await self.store.append(run_id, kind, data, final=final) is not None
                except StoreUnavailableError as e:  # the store is away: this event is lost
                    logger.warning("Could not store a %s event of run %s: %s", kind, run_id, e)
                    appended = True
                except Exception:  # the store failed: this event is lost, say so
                    logger.exception("Could not store a %s event of run %s", kind, run_id)
                    appended = True
                pending.popleft()
                if not appended:  # ended elsewhere (cancelled, taken for dead): stop the call
                    pending.clear()
                    self._stop(run_id)
        finally:
            self._pending.pop(run_id, None)

    def _stop(self, run_id: str) -> None:
        task = self._tasks.get(run_id)
        if task is not None:
            task.cancel()

    def _done(self, run_id: str, task: asyncio.Task[ToolResult]) -> None:
        self._tasks.pop(run_id, None)
        if run_id not in self._tools:  # already ended by us (cancelled, shut down)
            self._finished.discard(run_id)
            return
        if run_id in self._finished:
            self._finished.discard(run_id)
            self._tools.pop(run_id, None)
            return
        # No final event from the pipeline: cancelled (a DELETE, the shutdown, a run ended
        # elsewhere), or broken. The run still ends with one, saying why.
        if task.cancelled():
            value = _unavailable("the server stopped the call before it finished")
        else:
            error = task.exception()
            value = (
                _failed(f"the server failed while running the call: {error!r}")
                if error is not None
                else task.result().return_value
            )
        self._end(run_id, ToolResult(run_id, value))

    def _end(self, run_id: str, result: ToolResult) -> None:
        """Write the final event of a run whose pipeline sent none."""
        tool = self._tools.pop(run_id, "unknown")
        kind = "tool_error" if result.return_value.is_error else "tool_result"
        self._append(run_id, kind, error_event_data(run_id, tool, result.return_value), True)

    async def _watch(self) -> None:
        """Cancel the runs of this process that were ended elsewhere (a shared store)."""
        while True:
            await asyncio.sleep(self._idle)
            if not self._tasks:
                continue
            try:
                ended = await self.store.ended(list(self._tasks))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                logger.warning("Could not check the runs in the store: %s", e)
                continue
            for run_id in ended:
                task = self._tasks.get(run_id)
                if task is not None:
                    task.cancel()

    async def find(self, run_id: str, principal: str, tool: str | None = None) -> StreamInfo:
        """The run `run_id` of `principal` (and of `tool`, if given).

        Raises:
            RunNotFoundError: no such run for them.
        """
        info = await self.store.info(run_id)
        if (
            info is None
            or info.meta.get("principal") != principal
            or (tool is not None and info.meta.get("tool") != tool)
        ):
            raise RunNotFoundError(run_id)
        return info

    async def follow(self, run_id: str, after: str = START) -> AsyncIterator[StoredEvent]:
        """The run's events after position `after`, then each new one, to the final event.

        A run whose writer died is ended here with an error event, which is then read like
        any other.

        Raises:
            ValueError: `after` is not a position of the run (before the first event).
        """
        store = self.store
        position = after
        ended_seen = False
        # Only a shared store has writers that may die unseen: checking on them is the one
        # reason to stop waiting; a store of this process wakes readers when its runs end.
        idle = self._idle if store.shared else math.inf
        self.followers += 1
        try:
            while True:
                batch = await store.read(run_id, position, wait=0.0 if ended_seen else idle)
                if batch is None:
                    return
                if batch:
                    for event in batch:
                        yield event
                        if event.final:
                            return
                    position = batch[-1].id.rpartition(".")[2]
                    continue
                if ended_seen:
                    return  # resumed after the final event: nothing more will come
                info = await store.info(run_id)
                if info is None:
                    return
                if info.ended:
                    ended_seen = True
                elif not info.writer_alive:
                    tool = info.meta.get("tool", "unknown")
                    value = _unavailable(
                        "the server process running this call stopped before it finished "
                        "(killed, or cut off from Redis); the call may or may not have "
                        "taken effect"
                    )
                    await store.end_abandoned(
                        run_id, "tool_error", error_event_data(run_id, tool, value)
                    )
        finally:
            self.followers -= 1

    async def cancel(self, run_id: str, principal: str) -> Literal["cancelled", "finished"]:
        """Cancel the run: its stream ends with a CANCELLED error and its task is cancelled.

        Raises:
            RunNotFoundError: no such run for this principal.
        """
        info = await self.find(run_id, principal)
        if info.ended:
            return "finished"
        value = coded_error("CANCELLED", "the call was cancelled by its client", retryable=False)
        tool = info.meta.get("tool", "unknown")
        ended_here = (
            await self.store.append(
                run_id, "tool_error", error_event_data(run_id, tool, value), final=True
            )
            is not None
        )
        if run_id in self._tasks:
            self._tools.pop(run_id, None)  # its own final event, if it sends one, is late
            self._stop(run_id)
        # On another process, the run's task is cancelled by that process's watcher.
        return "cancelled" if ended_here else "finished"

    def reopen(self) -> None:
        """Start runs again (the app is served anew after a shutdown)."""
        self._draining = False

    async def drain(self, grace: float) -> None:
        """Start no new run; give the running ones `grace` seconds, then cancel the rest.

        The cancelled runs end with an error event saying the server shut down, and the
        responses following them get the time to send it.
        """
        self._draining = True
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        shutdown = _unavailable("the server shut down before the call finished; call again")
        for run_id, task in list(self._tasks.items()):
            if run_id in self._tools:  # ended first, so the reason is the final event
                self._end(run_id, ToolResult(run_id, shutdown))
            task.cancel()
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        await asyncio.sleep(0)  # the done callbacks: the final events are written
        if self._writers:
            await asyncio.wait(list(self._writers), timeout=5)
        for _ in range(100):  # let the followers send the final events (at most ~2 s)
            if not self.followers:
                break
            await asyncio.sleep(0.02)

    async def aclose(self) -> None:
        """Stop the watcher and cancel any run left (their final events are written)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if self._tasks:
            await self.drain(0)


def _call_id(event: ToolEvent) -> str:
    """The id of the call an event belongs to (a run's id)."""
    if event.result is not None:
        return event.result.tool_call_id
    metadata: object = event.data.get("metadata")
    known = cast(dict[str, Any], metadata) if isinstance(metadata, dict) else {}
    return str(known.get("tool_call_id") or "")


def _failed(message: str) -> ToolReturnValue:
    return coded_error("EXECUTION_ERROR", message)


def _unavailable(message: str) -> ToolReturnValue:
    return coded_error("NETWORK_ERROR", message, retryable=True)
