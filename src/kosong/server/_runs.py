"""Runs: streamed calls that outlive the connections, and the processes, that started them.

A run is one call through the pipeline whose events are appended to the event store as they
happen. Responses only read the store, from any position, so a client that drops does not
touch the run, and one that comes back (here or, with a shared store, on another process)
gets exactly the events it missed, then the live ones.

Where a run executes: without Redis, in a task of the process that accepted it. With Redis,
it is queued (`RunQueue`) and a worker takes it (a `kosong worker`, or a front end's own
slots); the worker finds the call in the run's record (`run_claimed`). A worker that dies
leaves its runs to the queue, which delivers them again: a tool that is safe to repeat runs
again (its log says so with a `tool_retrying` event), any other ends with an error saying
it may or may not have taken effect. Each process keeps one record (`_Run`) per run it
executes.

A run always ends with exactly one final event: the call's result or error, or an error
saying why it could not finish (cancelled by its client, the server shut down, the process
running it died). One method writes it, whoever ends the run: `_write_final`; the store takes
one final event per run, whichever comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

from kosong._answers import Approve, answers_scope
from kosong.eventstore import (
    START,
    EventStore,
    StoredEvent,
    StoreFullError,
    StoreUnavailableError,
    StreamInfo,
)
from kosong.message import ToolCall
from kosong.server._state import IdempotencyConflictError, RunState, Waiting, key_digest
from kosong.standard import (
    PolicyToolset,
    ToolEvent,
    coded_error,
    from_envelope,
    is_safe_to_repeat,
    to_envelope,
)
from kosong.standard.policies import EventHookPolicy
from kosong.tooling import UNPARSED, ToolResult, ToolReturnValue, Unparsed, parse_arguments
from kosong.tooling.error import ToolCancelledError, ToolDeferredError, ToolPermissionDeniedError
from kosong.utils.typing import JsonType

if TYPE_CHECKING:
    from kosong.server._queue import RunQueue

__all__ = [
    "IdempotencyConflictError",
    "QueueFullError",
    "RunNotFoundError",
    "Runs",
    "ShuttingDownError",
    "error_event_data",
]


logger = logging.getLogger(__name__)

_FINAL_RETRY = 30.0
"""Seconds a final event that the store cannot take (Redis away) is tried again for."""


class RunNotFoundError(LookupError):
    """No run with this id for this principal (never was, expired, or someone else's)."""


class ShuttingDownError(RuntimeError):
    """The server is shutting down and starts no new run."""


class QueueFullError(RuntimeError):
    """As many runs wait for a worker as the queue may hold; try again shortly."""


def error_event_data(run_id: str, tool: str, value: ToolReturnValue) -> str:
    """The data of a final event the server writes itself."""
    return json.dumps(to_envelope(ToolResult(run_id, value), tool_name=tool).dump())


def _event_data(event: ToolEvent) -> str:
    """An event's data as JSON text; a final event carries the lossless envelope."""
    try:
        if event.result is not None:
            return json.dumps(to_envelope(event.result).dump(), ensure_ascii=False)
        return json.dumps(event.data, ensure_ascii=False)
    except Exception as e:  # an output that cannot be written as JSON still ends the run
        logger.exception("Could not encode a %s event", event.event)
        tool = str(_metadata(event).get("tool_name") or "unknown")
        value = _failed(f"the result could not be encoded as JSON: {type(e).__name__}")
        return error_event_data("", tool, value)


_Append = tuple[str, str, bool, "asyncio.Future[bool] | None"]


@dataclass(slots=True, eq=False)
class _Run:
    """A run executing in this process."""

    id: str
    tool: str
    principal: str
    call: ToolCall | None = None
    """The call, to run again once an answer came (a run that waits, executed here)."""
    arguments: JsonType | Unparsed = UNPARSED
    task: asyncio.Future[ToolResult] | None = None
    pending: deque[_Append] | None = None
    """Events waiting for this run's writer task (a store that cannot append at once)."""
    ended: bool = False
    """Its final event is written (or on its way), or this process writes none."""
    released: bool = False
    """Stopped by a worker that stops: the queue delivers it again, to another worker."""
    final: asyncio.Future[bool] | None = None
    """The writing of its final event (or of its question, when its call was deferred)."""
    deferred: ToolDeferredError | None = None
    """Its call was deferred for an approval: it waits for an answer, not running."""


class Runs:
    """The runs of one app: started here, executed here or by workers, followed from anywhere."""

    def __init__(
        self,
        pipeline: PolicyToolset,
        store: EventStore,
        state: RunState,
        *,
        queue: RunQueue | None = None,
        max_runs: int = 10_000,
        max_queued: int | None = None,
        idle: float = 1.0,
        key_ttl: float = 86_400.0,
    ) -> None:
        """Run calls through `pipeline`, their events into `store`.

        With a `queue`, runs are handed to workers (at most `max_queued` waiting for one);
        without, they run here, at most `max_runs` at once. With a shared store, a follower
        with nothing to read checks on its run every `idle` seconds. A run started with an
        idempotency key is kept `key_ttl` seconds after it ends.
        """
        # The pipeline with one more policy outside: every event of a run comes to
        # `_on_event` as it happens, straight from the call's own task.
        self._pipeline = pipeline.wrap(EventHookPolicy(self._on_event))
        self.store = store
        self.state = state
        self.queue = queue
        self._max_runs = max_runs
        self._max_queued = max_queued
        self._idle = idle
        self._key_ttl = key_ttl
        self._runs: dict[str, _Run] = {}
        self._asking: dict[str, _Run] = {}
        """Runs started here that wait for an answer (without a queue: run here again)."""
        self._writers: set[asyncio.Task[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self.draining = False
        """Whether the server is shutting down (it starts no new run)."""
        self.followers = 0
        """Responses following a run right now."""

    @property
    def active(self) -> int:
        """Runs executing in this process."""
        return len(self._runs)

    @property
    def queued(self) -> bool:
        """Whether runs are handed to workers (with Redis), rather than executed here."""
        return self.queue is not None

    @staticmethod
    def new_id() -> str:
        """A fresh run id: 128 random bits, unguessable."""
        return secrets.token_hex(16)

    # --- starting -------------------------------------------------------------------------

    async def start(
        self,
        call: ToolCall,
        principal: str,
        arguments: JsonType | Unparsed = UNPARSED,
        *,
        key: str | None = None,
    ) -> tuple[str, bool]:
        """Start a run of `call` (its id is the run's) for `principal`.

        Its id, and whether it is new (False: `key` already stood for that run, which is not
        run again). `arguments`: the call's, when already parsed (else its own text is read).

        Raises:
            ShuttingDownError: the server is shutting down.
            StoreFullError: too many runs are in flight in this process.
            QueueFullError: too many runs wait for a worker.
            IdempotencyConflictError: `key` stands for another call.
            StoreUnavailableError: the store (Redis) cannot be reached.
        """
        if self.draining:
            raise ShuttingDownError("the server is shutting down")
        if self.queue is None and len(self._runs) >= self._max_runs:
            raise StoreFullError(f"{len(self._runs)} runs are in flight, the most allowed")
        run_id, tool = call.id, call.function.name
        if key is not None:
            arguments = self._parsed(call, arguments)
            unreadable = isinstance(arguments, Unparsed)  # then compared as written
            digest = key_digest(tool, call.function.arguments if unreadable else arguments)
            found = await self.state.reserve(principal, key, digest, run_id, self._key_ttl)
            if found is not None:
                return found, False
        try:
            await self._open(call, principal, arguments, key)
        except BaseException:
            if key is not None:
                with contextlib.suppress(Exception):
                    await self.state.release(principal, key, run_id)
            raise
        return run_id, True

    def _parsed(self, call: ToolCall, arguments: JsonType | Unparsed) -> JsonType | Unparsed:
        tool = self._pipeline.find_tool(call.function.name)
        if isinstance(arguments, Unparsed) and tool is not None:
            with contextlib.suppress(ValueError):  # unreadable: left unparsed
                return parse_arguments(
                    call.function.arguments,
                    self._pipeline.limits,
                    expects_object=tool.expects_object,
                )
        return arguments

    async def _open(
        self, call: ToolCall, principal: str, arguments: JsonType | Unparsed, key: str | None
    ) -> None:
        run_id, tool = call.id, call.function.name
        meta = {"principal": principal, "tool": tool}
        trace = call.extras.get("trace_id") if call.extras else None
        if isinstance(trace, str):
            meta["trace"] = trace
        if key is not None:
            meta["key"] = key
        ttl = self._key_ttl if key is not None else None
        if self.queue is None:
            await self.store.open(run_id, meta, ttl=ttl)
            self._execute(_Run(run_id, tool, principal, call, arguments), call, arguments)
            self._watch_runs()
            return
        meta["arguments"] = (
            call.function.arguments or "{}"
            if isinstance(arguments, Unparsed)
            else json.dumps(arguments, ensure_ascii=False)
        )
        if not await self.state.admit(run_id, self._max_queued):
            raise QueueFullError(f"{self._max_queued} runs are waiting for a worker")
        try:
            await self.store.open(run_id, meta, ttl=ttl, leased=False)
        except BaseException:
            await self.state.started(run_id)
            raise
        try:
            await self.queue.enqueue(run_id, tool)
        except Exception as e:  # the run cannot be queued: it ends here, saying why
            logger.warning("Could not queue run %s: %s", run_id, e)
            value = _unavailable(f"the call could not be queued: {type(e).__name__}: {e}")
            await self._write_final(run_id, "tool_error", error_event_data(run_id, tool, value))
            await self.state.started(run_id)
            raise StoreUnavailableError(f"the run could not be queued: {e}") from e

    def _execute(
        self,
        run: _Run,
        call: ToolCall,
        arguments: JsonType | Unparsed,
        answer: Approve | None = None,
    ) -> None:
        """Run the call here, its events going to the run's log (`answer`: it was approved)."""
        self._runs[run.id] = run
        with answers_scope({run.id: answer} if answer is not None else {}):
            handled = self._pipeline.dispatch(call, arguments)  # may send events at once
        if isinstance(handled, ToolResult):  # answered without a task
            self._done(run, handled)
            return
        run.task = handled
        handled.add_done_callback(partial(self._done, run))

    async def run_claimed(self, run_id: str, worker: str) -> None:
        """Execute a queued run here (this process is a worker that took it) to its end.

        A run delivered again (its last worker stopped before it ended) runs again when its
        tool is safe to repeat, or when it had only been waiting for an answer; otherwise it
        ends with an error saying it may or may not have taken effect. A run queued again
        because its question was answered runs with the answer.
        """
        if self.draining:  # taken as the worker stops: the queue delivers it again
            raise asyncio.CancelledError
        claim = await self.state.claim(run_id, worker)
        await self.state.started(run_id)
        if claim is None:  # ended (cancelled) or expired before a worker took it
            return
        meta = claim.meta
        name = meta.get("tool", "")
        answer = claim.answer
        extras: dict[str, JsonType] = {}
        if "trace" in meta:
            extras["trace_id"] = meta["trace"]
        if "key" in meta:
            extras["idempotency_key"] = meta["key"]
        call = ToolCall(
            id=run_id,
            function=ToolCall.FunctionBody(name=name, arguments=meta.get("arguments", "{}")),
            extras=extras or None,
        )
        run = _Run(run_id, name, meta.get("principal", ""), call)
        writing = getattr(self.store, "writing", None)
        if writing is not None:
            writing(run_id)
        self._runs[run_id] = run
        try:
            if answer is not None:  # answered: it waits no more, and runs (or is denied)
                await self.state.unwait(run_id, run.principal)
                if not answer[0]:
                    await self._deny(run_id, name, answer[1])
                    return
            if claim.attempt > 1 and answer is None:
                tool = self._pipeline.find_tool(name)
                if tool is None or not is_safe_to_repeat(tool):
                    value = _uncertain(meta.get("key"))
                    await self._write_final(
                        run_id, "tool_error", error_event_data(run_id, name, value)
                    )
                    return
                self._append(run, "tool_retrying", _retrying(call, claim.attempt), False)
            self._execute(run, call, UNPARSED, Approve(answer[1]) if answer else None)
            task = run.task
            if task is not None:
                try:
                    await asyncio.wait([task])  # ended by itself, or stopped from here
                except asyncio.CancelledError:  # a DELETE through the queue, or the worker stops
                    task.cancel()
                    raise
                if run.released:  # not done: the queue keeps it for another worker
                    raise asyncio.CancelledError
            if run.final is not None:
                await run.final
        finally:
            self._runs.pop(run_id, None)
            if writing is not None:
                writing(run_id, False)

    # --- events ---------------------------------------------------------------------------

    def _on_event(self, event: ToolEvent) -> None:
        run = self._runs.get(_call_id(event))
        if run is None or run.ended:
            return
        if event.is_final and event.result is not None:
            value = event.result.return_value
            if isinstance(value, ToolDeferredError) and value.kind == "approval":
                run.deferred = value  # no final event: the run waits (see `_done`)
                return
        data = _event_data(event)
        if event.is_final:
            self._write_final(run.id, event.event, data)
        else:
            self._append(run, event.event, data, False)

    def _write_final(
        self, run_id: str, kind: str, data: str, *, abandoned: bool = False
    ) -> asyncio.Future[bool]:
        """Write the run's final event: the one method that does (see the module doc).

        For a run executing here, in order after its other events; for any other, straight to
        the store (`abandoned`: only if its writer is gone). Resolves to whether this ended
        the run (False: it had ended already).
        """
        loop = asyncio.get_running_loop()
        run = self._runs.get(run_id)
        if run is None or abandoned:
            store = self.store
            if abandoned:
                return loop.create_task(store.end_abandoned(run_id, kind, data))
            return loop.create_task(_appended(store.append(run_id, kind, data, final=True)))
        if run.ended:
            done: asyncio.Future[bool] = loop.create_future()
            done.set_result(False)
            return done
        run.ended = True
        final = self._append(run, kind, data, True)
        assert final is not None
        run.final = final
        return final

    def _append(self, run: _Run, kind: str, data: str, final: bool) -> asyncio.Future[bool] | None:
        """Append in order: at once when the store can, else by a writer task for the run.

        A future of the appending for a final event.
        """
        if run.pending is None:
            appended = self.store.append_nowait(run.id, kind, data, final=final)
            if appended is not None:
                if not appended:  # ended elsewhere (cancelled, taken for dead): stop the call
                    self._stop(run)
                if not final:
                    return None
                done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
                done.set_result(appended)
                return done
            run.pending = deque()
            writer = asyncio.get_running_loop().create_task(self._write(run, run.pending))
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        future = asyncio.get_running_loop().create_future() if final else None
        run.pending.append((kind, data, final, future))
        return future

    async def _write(self, run: _Run, pending: deque[_Append]) -> None:
        try:
            while pending:
                kind, data, final, future = pending[0]
                appended = await self._store_event(run.id, kind, data, final)
                pending.popleft()
                if future is not None and not future.done():
                    future.set_result(appended)
                if not appended and not final:  # ended elsewhere: stop the call
                    for _, _, _, waiting in pending:
                        if waiting is not None and not waiting.done():
                            waiting.set_result(False)
                    pending.clear()
                    self._stop(run)
        finally:
            run.pending = None

    async def _store_event(self, run_id: str, kind: str, data: str, final: bool) -> bool:
        """Append one event; a final one is tried again while the store is away (a while)."""
        deadline = time.monotonic() + _FINAL_RETRY
        delay = 0.1
        while True:
            try:
                return await self.store.append(run_id, kind, data, final=final) is not None
            except StoreUnavailableError as e:
                if not final or time.monotonic() > deadline:
                    logger.warning("Lost a %s event of run %s: %s", kind, run_id, e)
                    return not final
            except Exception:  # the store failed: this event is lost, say so
                logger.exception("Could not store a %s event of run %s", kind, run_id)
                return not final
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _stop(self, run: _Run) -> None:
        if run.task is not None:
            run.task.cancel()

    def _done(self, run: _Run, outcome: asyncio.Future[ToolResult] | ToolResult) -> None:
        """The call ended (its task, or at once): its final event, if the pipeline sent none."""
        try:
            if run.ended:
                return
            if run.deferred is not None:  # waits for an answer: its question is recorded
                run.final = self._track(self._ask(run, run.deferred))
                return
            # No final event from the pipeline: cancelled, or broken. It still ends with one.
            if isinstance(outcome, ToolResult):
                value = outcome.return_value
            elif outcome.cancelled():
                value = ToolCancelledError(run.tool, "the call was stopped")
            elif (error := outcome.exception()) is not None:
                value = _failed(f"the server failed while running the call: {error!r}")
            else:
                value = outcome.result().return_value
            kind = "tool_error" if value.is_error else "tool_result"
            self._write_final(run.id, kind, error_event_data(run.id, run.tool, value))
        finally:
            if self.queue is None:  # a queued run's record goes when `run_claimed` returns
                self._runs.pop(run.id, None)

    def _watch_runs(self) -> None:
        if self.store.shared and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        """Cancel the runs of this process that were ended elsewhere (a shared store)."""
        while True:
            await asyncio.sleep(self._idle)
            if not self._runs:
                continue
            try:
                ended = await self.store.ended(list(self._runs))
            except asyncio.CancelledError:
                raise
            except Exception as e:
                logger.warning("Could not check the runs in the store: %s", e)
                continue
            for run_id in ended:
                run = self._runs.get(run_id)
                if run is not None:
                    run.ended = True
                    self._stop(run)

    # --- reading --------------------------------------------------------------------------

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
                    data = error_event_data(run_id, tool, value)
                    await self._write_final(run_id, "tool_error", data, abandoned=True)
        finally:
            self.followers -= 1

    async def result(self, run_id: str) -> ToolResult:
        """The run's result, once it ends (its final event).

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        async for event in self.follow(run_id):
            if event.final:
                return from_envelope(event.data, tool_call_id=run_id)
        value = _unavailable(f"run {run_id} expired before its result could be read")
        return ToolResult(run_id, value)

    # --- ending ---------------------------------------------------------------------------

    async def cancel(self, run_id: str, principal: str) -> Literal["cancelled", "finished"]:
        """Cancel the run: its stream ends with a CANCELLED error and its task is cancelled.

        Raises:
            RunNotFoundError: no such run for this principal.
        """
        info = await self.find(run_id, principal)
        if info.ended:
            return "finished"
        tool = info.meta.get("tool", "unknown")
        value = ToolCancelledError(tool, "cancelled by its client")
        ended_here = await self._write_final(
            run_id, "tool_error", error_event_data(run_id, tool, value)
        )
        run = self._runs.get(run_id)
        if run is not None:
            self._stop(run)
        self._asking.pop(run_id, None)
        if ended_here:  # a question it waited on is moot
            with contextlib.suppress(Exception):
                await self.state.unwait(run_id, principal)
        if ended_here and self.queue is not None:
            # Out of the queue, or stopped on its worker (whose watcher would stop it too).
            with contextlib.suppress(Exception):
                await self.queue.cancel(run_id)
            with contextlib.suppress(Exception):
                await self.state.started(run_id)
        return "cancelled" if ended_here else "finished"

    async def question(self, run_id: str) -> str | None:
        """The question the run waits on, unanswered, if any."""
        return await self.state.question(run_id)

    async def answer(self, run_id: str, principal: str, approved: bool, reason: str) -> bool:
        """Answer the question the run waits on; False when it waits for none.

        Approved, the run goes on (here, or queued again for a worker); denied, it ends with
        PERMISSION_DENIED and the reason.

        Raises:
            RunNotFoundError: no such run for this principal.
        """
        info = await self.find(run_id, principal)
        if info.ended or not await self.state.answer(run_id, approved, reason):
            return False
        tool = info.meta.get("tool", "unknown")
        if not approved:
            await self.state.unwait(run_id, principal)
            await self._deny(run_id, tool, reason)
            self._asking.pop(run_id, None)
        elif self.queue is not None:
            await self.queue.enqueue(run_id, tool, again=True)
        else:
            await self.state.unwait(run_id, principal)
            run = self._asking.pop(run_id, None)
            if run is not None and run.call is not None:
                again = _Run(run_id, run.tool, run.principal, run.call, run.arguments)
                self._execute(again, run.call, run.arguments, Approve(reason))
        return True

    async def _deny(self, run_id: str, tool: str, reason: str) -> None:
        value = ToolPermissionDeniedError(tool, reason or "the call was not approved")
        await self._write_final(run_id, "tool_error", error_event_data(run_id, tool, value))

    async def _ask(self, run: _Run, deferred: ToolDeferredError) -> bool:
        """Record the run's question (its call was deferred); deny it once `within` passes."""
        text = run.call.function.arguments if run.call is not None else None
        arguments = run.arguments if not isinstance(run.arguments, Unparsed) else _json(text)
        since = time.time()
        within = deferred.within
        deadline = None if within is None else since + within
        waiting = Waiting(run.id, run.tool, arguments, deferred.question, since, deadline)
        if self.queue is None:
            self._asking[run.id] = run
        await self.state.wait(waiting, run.principal)
        if within is not None:
            loop = asyncio.get_running_loop()
            loop.call_later(within, lambda: self._track(self._expire(waiting, run.principal)))
        return False

    async def _expire(self, waiting: Waiting, principal: str) -> None:
        """Deny a question nobody answered in time (whoever notices first: one does it)."""
        reason = f"nobody answered {waiting.question!r}"
        if waiting.deadline is not None:
            reason += f" within {waiting.deadline - waiting.since:g} seconds"
        with contextlib.suppress(RunNotFoundError):
            await self.answer(waiting.run_id, principal, False, reason)

    async def waiting(self, principal: str) -> list[Waiting]:
        """The runs of `principal` waiting for an answer (denying those past their time)."""
        found = await self.state.waiting(principal)
        now = time.time()
        late = [w for w in found if w.deadline is not None and w.deadline <= now]
        for waiting in late:
            await self._expire(waiting, principal)
        return [w for w in found if w not in late]

    def _track(self, work: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)
        return task

    async def drain(self, grace: float) -> None:
        """Start no new run; give the running ones `grace` seconds, then stop the rest.

        Without a queue, a stopped run ends with a CANCELLED error saying the server shut
        down, and the responses following them get the time to send it. With one, it is left
        to the queue, which delivers it again to another worker.
        """
        self.draining = True
        for run in list(self._asking.values()):  # waiting here: nobody can answer them now
            value = ToolCancelledError(run.tool, "the server shut down")
            self._write_final(run.id, "tool_error", error_event_data(run.id, run.tool, value))
        self._asking.clear()
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for run in list(self._runs.values()):
            if run.task is None or run.task.done():
                continue
            if self.queue is not None:
                run.ended = run.released = True  # no final event from here: the queue goes on
            else:
                value = ToolCancelledError(run.tool, "the server shut down")
                self._write_final(run.id, "tool_error", error_event_data(run.id, run.tool, value))
            run.task.cancel()
        tasks = [run.task for run in self._runs.values() if run.task is not None]
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
        """Stop the watcher and stop any run left (see `drain`)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if self._runs:
            await self.drain(0)


async def _appended(append: Any) -> bool:
    return await append is not None


def _retrying(call: ToolCall, attempt: int) -> str:
    """The `tool_retrying` event of a run delivered again after its worker stopped."""
    return json.dumps(
        {
            "retry_count": attempt - 1,
            "max_retries": None,
            "delay_seconds": 0,
            "error": {
                "code": "NETWORK_ERROR",
                "message": "the worker running the call stopped before it finished; the "
                "tool is safe to repeat, so another worker runs it again",
            },
            "metadata": {"tool_name": call.function.name, "tool_call_id": call.id},
        }
    )


def _json(text: str | None) -> JsonType:
    """The arguments' text as JSON, or as the text itself when it is not JSON."""
    try:
        return json.loads(text or "{}")
    except ValueError:
        return text


def _call_id(event: ToolEvent) -> str:
    """The id of the call an event belongs to (a run's id)."""
    if event.result is not None:
        return event.result.tool_call_id
    return str(_metadata(event).get("tool_call_id") or "")


def _metadata(event: ToolEvent) -> dict[str, Any]:
    metadata: object = event.data.get("metadata")
    return cast(dict[str, Any], metadata) if isinstance(metadata, dict) else {}


def _failed(message: str) -> ToolReturnValue:
    return coded_error("EXECUTION_ERROR", message)


def _unavailable(message: str) -> ToolReturnValue:
    return coded_error("NETWORK_ERROR", message, retryable=True)


def _uncertain(key: str | None) -> ToolReturnValue:
    """A run whose worker stopped mid-call, of a tool that is not safe to repeat."""
    named = f" (idempotency key {key!r})" if key else ""
    return coded_error(
        "NETWORK_ERROR",
        "the worker running this call stopped before it finished; the call may or may not "
        f"have taken effect, and it is not run again, since the tool is not safe to repeat"
        f"{named}",
        retryable=False,
        uncertain=True,
        idempotency_key=key,
    )
