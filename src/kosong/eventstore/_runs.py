"""Runs: calls that outlive the requests, and the processes, that started them.

`start` creates the run's record (see the package doc for its life cycle), taking its
idempotency key, and submits it to the `Executor`. Whatever executes it calls `execute`: the
run is claimed (one more attempt), its call rebuilt from the record and streamed through the
pipeline, each event appended to its log, then the final event; or, when the call was deferred
for an approval, its question: the run waits, holding nothing but its record, until `answer`
(from any process) submits it again, approved, or ends it, denied. A run delivered again after
its executor died mid-call runs again if its tool is safe to repeat (a `tool_retrying` event
says so), or ends with an error saying it may or may not have taken effect.

A run whose client answers questions (`asks`) reaches it through the record, from whichever
process executes it: the tool's `elicit` or `sample` (`current_call()`) appends an
`input_request` event and waits for the `input_response` that `respond` appends (or `asks`
seconds); its `log` appends a `tool_log` event. Both are in kosong's own terms: a protocol's
front end puts them in its own words.

Responses only read the store (`follow`), from any position: a client that drops does not
touch the run, and one that comes back (anywhere) gets exactly the events it missed, then the
live ones. The store takes the first final event, whoever writes it (the execution, `cancel`,
`answer`, a question's deadline, the shutdown of a process executing runs here).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import math
import secrets
import time
from collections.abc import AsyncGenerator, Coroutine
from typing import Any, Literal, cast

from kosong._answers import Approve, answers_scope
from kosong.eventstore._executor import Executor, LocalExecutor
from kosong.eventstore._store import (
    START,
    RunRecord,
    RunStore,
    StoredEvent,
    StoreUnavailableError,
)
from kosong.message import Message, ToolCall
from kosong.standard import (
    ElicitAnswer,
    LogLevel,
    PolicyToolset,
    caller_scope,
    canonical_json,
    coded_error,
    is_safe_to_repeat,
    to_envelope,
)
from kosong.tooling import UNPARSED, ToolResult, ToolReturnValue, Unparsed, parse_arguments
from kosong.tooling.error import ToolCancelledError, ToolDeferredError, ToolPermissionDeniedError
from kosong.utils.typing import JsonType

__all__ = ["QueueFullError", "RunNotFoundError", "Runs", "ShuttingDownError"]

logger = logging.getLogger(__name__)

_FINAL_RETRY = 30.0
"""Seconds a final event that the store cannot take (Redis away) is tried again for."""

_SHUT_DOWN = "the server shut down"
"""Why the runs a server stops as it shuts down end (CANCELLED)."""


class RunNotFoundError(LookupError):
    """No run with this id for this principal (never was, expired, or someone else's)."""


class ShuttingDownError(RuntimeError):
    """The server is shutting down and starts no new run."""


class QueueFullError(RuntimeError):
    """As many runs wait for a worker as the queue may hold; try again shortly."""


def _final_data(result: ToolResult, tool: str) -> str:
    """A final event's data as stored: the result's JSON, its metadata made whole now.

    Every reader reads the same tool, time and trace; the wire's envelope is made from it
    (`Runs.wire_data`). An output that cannot be written as JSON still ends the run, with an
    error saying so.
    """
    try:
        metadata = to_envelope(result, tool_name=tool).dump()["metadata"]
        return ToolResult(result.tool_call_id, result.return_value, metadata=metadata).to_json()
    except Exception as e:  # the run must end whatever its output is
        logger.exception("Could not encode the result of run %s", result.tool_call_id)
        value = _failed(f"the result could not be encoded as JSON: {type(e).__name__}")
        return _final_data(ToolResult(result.tool_call_id, value), tool)


class Runs:
    """The runs of one app: started here, executed by its executor, followed from anywhere."""

    def __init__(
        self,
        pipeline: PolicyToolset,
        store: RunStore,
        *,
        executor: Executor | None = None,
        max_runs: int = 10_000,
        max_queued: int | None = None,
        idle: float = 1.0,
        key_ttl: float = 86_400.0,
    ) -> None:
        """Run calls through `pipeline`, kept in `store`.

        Runs are handed to `executor` (a queue's workers: at most `max_queued` waiting for
        one); without one, they run here, at most `max_runs` at once. A follower with nothing to
        read looks at its run's record every `idle` seconds. A run started with an
        idempotency key is kept `key_ttl` seconds after it ends.
        """
        self._pipeline = pipeline
        self.store = store
        self.executor: Executor = executor or LocalExecutor(self.execute, max_runs)
        self._max_queued = max_queued
        self._idle = idle
        self._key_ttl = key_ttl
        self._streams: dict[str, asyncio.Task[None]] = {}  # tasks of `execute` here, by run
        # The tools of the runs that asked their question here without a queue, by run: only
        # this process can run them again.
        self._asked: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.draining = False
        """Whether the server is shutting down (it starts no new run)."""
        self.followers = 0
        """Responses following a run right now."""
        self._unfollowed = asyncio.Event()  # set while no response follows a run
        self._unfollowed.set()

    @property
    def active(self) -> int:
        """Runs executing in this process."""
        return len(self._streams)

    @property
    def queued(self) -> bool:
        """Whether runs are handed to workers (with Redis), rather than executed here."""
        return self.executor.shared

    @staticmethod
    def wire_data(event: StoredEvent) -> str:
        """An event's data as a client reads it (any other's as stored).

        A final event's is the standard's lossless envelope, made from the stored result.
        """
        if not event.final:
            return event.data
        result = ToolResult.from_json(event.data)
        return json.dumps(to_envelope(result).dump(), ensure_ascii=False)

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
        asks: float | None = None,
    ) -> tuple[str, bool]:
        """Start a run of `call` (its id is the run's) for `principal`.

        Its id, and whether it is new (False: `key` already stood for that run, which is not
        run again). `arguments`: the call's, when already parsed (else its own text is read).
        `asks`: its client answers the tool's questions, each within that many seconds (see
        the module doc).

        Raises:
            ShuttingDownError: the server is shutting down.
            StoreFullError: too many runs are in flight in this process.
            QueueFullError: too many runs wait for a worker.
            IdempotencyConflictError: `key` stands for another call.
            StoreUnavailableError: the store (Redis) cannot be reached.
        """
        if self.draining:
            raise ShuttingDownError("the server is shutting down")
        run_id, tool = call.id, call.function.name
        if key is not None:
            arguments = self._parsed(call, arguments)
            unreadable = isinstance(arguments, Unparsed)  # then compared as written
            compared = canonical_json([tool, call.function.arguments if unreadable else arguments])
            digest = hashlib.sha256(compared.encode()).hexdigest()
            found = await self.store.reserve(principal, key, digest, run_id, self._key_ttl)
            if found is not None:
                return found, False
        text = (
            call.function.arguments or "{}"
            if isinstance(arguments, Unparsed)
            else json.dumps(arguments, ensure_ascii=False)
        )
        trace = call.extras.get("trace_id") if call.extras else None
        trace = trace if isinstance(trace, str) else None
        record = RunRecord(run_id, principal, tool, text, trace, key, asks=asks)
        try:
            await self._submit(record, key)
        except BaseException:
            if key is not None:
                with contextlib.suppress(Exception):
                    await self.store.release(principal, key, run_id)
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

    async def _submit(self, record: RunRecord, key: str | None) -> None:
        run_id = record.id
        if self.queued and not await self.store.admit(run_id, self._max_queued):
            raise QueueFullError(f"{self._max_queued} runs are waiting for a worker")
        try:
            await self.store.create(record, ttl=self._key_ttl if key is not None else None)
        except BaseException:
            await self.store.started(run_id)
            raise
        try:
            await self.executor.submit(run_id, record.tool)
        except Exception as e:  # the run cannot be executed: it ends here, saying why
            logger.warning("Could not start run %s: %s", run_id, e)
            value = _unavailable(f"the call could not be queued: {type(e).__name__}: {e}")
            await self._end(run_id, record.tool, value)
            await self.store.started(run_id)
            if isinstance(e, StoreUnavailableError | ConnectionError):
                raise StoreUnavailableError(f"the run could not be queued: {e}") from e
            raise

    # --- executing ------------------------------------------------------------------------

    async def execute(self, run_id: str) -> None:
        """Execute the run here (this process is its executor) until it ends or waits.

        A run delivered again (its last executor stopped mid-call) runs again when its tool
        is safe to repeat; otherwise it ends with an error saying it may or may not have
        taken effect. A run submitted again once approved runs with the approval.
        """
        if self.draining:  # taken as the worker stops: the queue delivers it again
            raise asyncio.CancelledError
        record = await self.store.claim(run_id)
        await self.store.started(run_id)
        if record is None:  # ended (cancelled), or waits for an answer
            return
        task = asyncio.current_task()
        if task is not None:
            self._streams[run_id] = task
        try:
            await self._execute(record)
        except asyncio.CancelledError:
            if self.draining and self.queued:  # a worker that stops: the queue goes on
                raise
            reason = _SHUT_DOWN if self.draining else "the call was stopped"
            value = ToolCancelledError(record.tool, reason)
            await self._end(run_id, record.tool, value)
            raise
        finally:
            self._streams.pop(run_id, None)

    async def _execute(self, record: RunRecord) -> None:
        """Stream the call, appending its events to the log, then its final event or question."""
        run_id, name = record.id, record.tool
        if record.attempt > 1:
            tool = self._pipeline.find_tool(name)
            if tool is None or not is_safe_to_repeat(tool):
                await self._end(run_id, name, _uncertain(record.key))
                return
            await self._append(run_id, "tool_retrying", _retrying(record))
        extras: dict[str, JsonType] = {}
        if record.trace is not None:
            extras["trace_id"] = record.trace
        if record.key is not None:
            extras["idempotency_key"] = record.key
        call = ToolCall(
            id=run_id,
            function=ToolCall.FunctionBody(name=name, arguments=record.arguments),
            extras=extras or None,
        )
        answer = record.answer
        approved = {run_id: Approve(answer[1])} if answer is not None and answer[0] else {}
        caller = _RecordCaller(self.store, record) if record.asks is not None else None
        # The call starts on the first iteration, in these scopes.
        with answers_scope(approved), caller_scope(caller):
            async with self._pipeline.stream(call) as stream:
                async for event in stream:
                    if not event.is_final:
                        data = json.dumps(event.data, ensure_ascii=False)
                        if not await self._append(run_id, event.event, data):
                            return  # ended elsewhere (cancelled): leaving stops the call
                        continue
                    result = event.result or ToolResult(run_id, _failed("no result"))
                    if result.tool_call_id != run_id:  # a call that never sent its final event
                        result = ToolResult(run_id, result.return_value)
                    deferred = result.return_value
                    if isinstance(deferred, ToolDeferredError) and deferred.kind == "approval":
                        await self._ask(record, deferred)
                    else:
                        await self._write_final(run_id, event.event, _final_data(result, name))

    async def _append(self, run_id: str, kind: str, data: str) -> bool:
        """Append one event of a run executing here; False once the run has ended."""
        try:
            return await self.store.append(run_id, kind, data) is not None
        except StoreUnavailableError as e:  # the event is lost; the run goes on
            logger.warning("Lost a %s event of run %s: %s", kind, run_id, e)
            return True

    async def _write_final(self, run_id: str, kind: str, data: str) -> bool:
        """Append the run's final event; tried again while the store is away (a while).

        Whether this ended the run (False: it had ended already, or the store stayed away).
        """
        deadline = time.monotonic() + _FINAL_RETRY
        delay = 0.1
        while True:
            try:
                return await self.store.append(run_id, kind, data, final=True) is not None
            except StoreUnavailableError as e:
                if time.monotonic() > deadline:
                    logger.warning("Lost the final event of run %s: %s", run_id, e)
                    return False
            await asyncio.sleep(delay)  # the store is away: try again a little later
            delay = min(delay * 2, 2.0)

    async def _end(self, run_id: str, tool: str, value: ToolReturnValue) -> bool:
        """End the run with `value` (the server's own final event)."""
        kind = "tool_error" if value.is_error else "tool_result"
        return await self._write_final(run_id, kind, _final_data(ToolResult(run_id, value), tool))

    # --- waiting --------------------------------------------------------------------------

    async def _ask(self, record: RunRecord, deferred: ToolDeferredError) -> None:
        """The run's call was deferred: it waits for an answer (denied once `within` passes)."""
        within = deferred.within
        deadline = None if within is None else time.time() + within
        asked = await self.store.ask(record.id, deferred.question, deadline)
        if asked is not None and not self.queued:
            self._asked[record.id] = record.tool
        if asked is not None and within is not None:
            expire = lambda: self._spawn(self._expire(asked))  # noqa: E731
            asyncio.get_running_loop().call_later(within, expire)

    async def _expire(self, record: RunRecord) -> None:
        """Deny a question nobody answered in time (whoever sees it first; one does)."""
        reason = f"nobody answered {record.question!r}"
        if record.deadline is not None and record.since is not None:
            reason += f" within {record.deadline - record.since:g} seconds"
        await self._answered(record.id, False, reason)

    async def answer(self, run_id: str, principal: str, approved: bool, reason: str) -> bool:
        """Answer the question the run waits on; False when it waits for none.

        Approved, the run is executed again (here, or by a worker) with the approval; denied,
        it ends with PERMISSION_DENIED and the reason.

        Raises:
            RunNotFoundError: no such run for this principal.
            StoreUnavailableError: the store, or the queue of an approved run, cannot be
                reached (then the run ends, saying so).
        """
        await self.find(run_id, principal)
        return await self._answered(run_id, approved, reason)

    async def _answered(self, run_id: str, approved: bool, reason: str) -> bool:
        record = await self.store.answer(run_id, approved, reason)
        if record is None:
            return False
        self._asked.pop(run_id, None)
        if not approved:
            value = ToolPermissionDeniedError(record.tool, reason or "the call was not approved")
            await self._end(run_id, record.tool, value)
        else:
            try:
                await self.executor.submit(run_id, record.tool, again=True)
            except StoreUnavailableError as e:  # nobody would execute it: it ends, saying why
                value = _unavailable(f"the approved call could not be queued: {e}")
                await self._end(run_id, record.tool, value)
                raise
        return True

    async def questions(self, run_id: str) -> dict[str, dict[str, Any]]:
        """The questions the run's tool asked its client that nobody answered yet, by key.

        Each is `{"key", "elicitation": {"message", "schema"}}` or `{"key", "sampling":
        {"messages", "system_prompt", "max_tokens", "temperature"}}`.
        """
        asked: dict[str, dict[str, Any]] = {}
        for event in await self.store.replay(run_id) or []:
            if event.kind in ("input_request", "input_response"):
                data = cast(dict[str, Any], json.loads(event.data))
                if event.kind == "input_request":
                    asked[data["key"]] = data
                else:
                    asked.pop(data["key"], None)
        return asked

    async def respond(self, run_id: str, key: str, response: dict[str, Any]) -> bool:
        """Answer the run's question `key`, wherever its tool waits for it.

        `response`: `{"action", "content"}` for an elicitation; `{"message"}` (a `Message`'s
        JSON) or `{"error"}` for a sampling request. False when it waits on no such question.
        """
        if key not in await self.questions(run_id):
            return False
        data = json.dumps({"key": key, "response": response}, ensure_ascii=False)
        return await self.store.append(run_id, "input_response", data) is not None

    async def waiting(self, principal: str) -> list[RunRecord]:
        """The runs of `principal` waiting for an answer (denying those past their time)."""
        found = await self.store.waiting(principal)
        now = time.time()
        late = [r for r in found if r.deadline is not None and r.deadline <= now]
        for record in late:
            await self._expire(record)
        return [r for r in found if r not in late]

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- reading --------------------------------------------------------------------------

    async def find(self, run_id: str, principal: str, tool: str | None = None) -> RunRecord:
        """The run `run_id` of `principal` (and of `tool`, if given).

        Raises:
            RunNotFoundError: no such run for them.
        """
        record = await self.store.get(run_id)
        if record is None or record.principal != principal or tool not in (None, record.tool):
            raise RunNotFoundError(run_id)
        return record

    async def follow(self, run_id: str, after: str = START) -> AsyncGenerator[StoredEvent, None]:
        """The run's events after position `after`, then each new one, to the final event.

        A run waiting past its question's deadline is denied here, and that final event is
        then read like any other.

        Raises:
            ValueError: `after` is not a position of the run (before the first event).
        """
        position = after
        ended_seen = False
        # Runs executed elsewhere may wait on a question whose deadline passed while their
        # executor is gone: looking at the record now and then is the one reason to stop
        # waiting; here, the store wakes readers and the run's own timer denies it.
        idle = self._idle if self.executor.shared else math.inf
        self.followers += 1
        self._unfollowed.clear()
        try:
            while True:
                batch = await self.store.read(run_id, position, wait=0.0 if ended_seen else idle)
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
                record = await self.store.get(run_id)
                if record is None:
                    return
                if record.ended:
                    ended_seen = True
                elif record.deadline is not None and record.deadline <= time.time():
                    await self._expire(record)
        finally:
            self.followers -= 1
            if not self.followers:
                self._unfollowed.set()

    async def result(self, run_id: str) -> ToolResult:
        """The run's result, once it ends (its final event).

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        async with contextlib.aclosing(self.follow(run_id)) as events:  # stop following now
            async for event in events:
                if event.final:
                    return ToolResult.from_json(event.data)
        value = _unavailable(f"run {run_id} expired before its result could be read")
        return ToolResult(run_id, value)

    # --- ending ---------------------------------------------------------------------------

    async def cancel(self, run_id: str, principal: str) -> Literal["cancelled", "finished"]:
        """Cancel the run: its log ends with a CANCELLED error and its call is stopped.

        Raises:
            RunNotFoundError: no such run for this principal.
        """
        record = await self.find(run_id, principal)
        stopped = ToolCancelledError(record.tool, "cancelled by its client")
        ended = await self._end(run_id, record.tool, stopped)
        if ended:  # out of the queue, or stopped where it runs (else it had ended already)
            with contextlib.suppress(Exception):
                await self.executor.cancel(run_id)
            with contextlib.suppress(Exception):
                await self.store.started(run_id)
        return "cancelled" if ended else "finished"

    async def drain(self, grace: float) -> None:
        """Start no new run; give the running ones `grace` seconds, then stop the rest.

        Without a queue, a stopped run ends with a CANCELLED error saying the server shut
        down, and the responses following them get the time to send it; so do the runs that
        wait on a question here, which nobody could answer once this process is gone. With
        a queue, a stopped run is left to it, which delivers it again to another worker.
        """
        self.draining = True
        if running := list(self._streams.values()):
            await asyncio.wait(running, timeout=grace)
        for task in list(self._streams.values()):
            task.cancel()  # with a queue, no final event from here: the queue goes on
        if running := list(self._streams.values()):
            await asyncio.wait(running, timeout=5)
        for run_id, tool in list(self._asked.items()):  # nobody can run them once this is gone
            await self._end(run_id, tool, ToolCancelledError(tool, _SHUT_DOWN))
        self._asked.clear()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        with contextlib.suppress(TimeoutError):  # the followers send the final events
            await asyncio.wait_for(self._unfollowed.wait(), 2.0)

    async def aclose(self) -> None:
        """Stop any run left (see `drain`)."""
        if self._streams:
            await self.drain(0)


class _RecordCaller:
    """A run's way back to its client, through its record (see the module doc)."""

    def __init__(self, store: RunStore, record: RunRecord) -> None:
        self._store = store
        self._run = record.id
        self._within = record.asks or 0.0
        self._keys = itertools.count()

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        answer = await self._ask("elicitation", {"message": message, "schema": schema})
        if answer is None:  # nobody answered: the user never chose
            return ElicitAnswer.cancel()
        action, content = answer.get("action"), answer.get("content")
        if action not in ("accept", "decline", "cancel"):
            return ElicitAnswer.decline()  # no answer at all: nothing was agreed to
        return ElicitAnswer(
            action, cast(dict[str, Any], content) if isinstance(content, dict) else None
        )

    async def sample(
        self,
        messages: list[Message],
        system_prompt: str,
        max_tokens: int,
        temperature: float | None,
    ) -> Message:
        asked = {
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in messages],
            "system_prompt": system_prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        answer = await self._ask("sampling", asked)
        if answer is None:
            raise RuntimeError(
                f"nobody answered the sampling request within {self._within:g} seconds"
            )
        if "message" not in answer:  # the client's refusal, in its front end's words
            raise RuntimeError(str(answer.get("error") or "the client did not sample"))
        return Message.model_validate(answer["message"])

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        entry = json.dumps({"level": level, "data": data, "logger": logger}, ensure_ascii=False)
        await self._store.append(self._run, "tool_log", entry)

    async def _ask(self, kind: str, question: dict[str, Any]) -> dict[str, Any] | None:
        """Ask `question`; the answer, or None once the run ended or `asks` seconds passed."""
        key = f"{kind}-{next(self._keys)}"
        data = json.dumps({"key": key, kind: question}, ensure_ascii=False)
        asked = await self._store.append(self._run, "input_request", data)
        if asked is None:  # the run has ended
            return None
        position = asked.rpartition(".")[2]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._within
        while (left := deadline - loop.time()) > 0:
            batch = await self._store.read(self._run, position, wait=left)
            if batch is None:
                return None
            for event in batch:
                if event.final:
                    return None
                if event.kind == "input_response":
                    found = cast(dict[str, Any], json.loads(event.data))
                    if found.get("key") == key:
                        answer: object = found.get("response")
                        return cast(dict[str, Any], answer) if isinstance(answer, dict) else None
            if batch:
                position = batch[-1].id.rpartition(".")[2]
        # Nobody answered in time: the question is closed, and a late answer is refused.
        closed = json.dumps({"key": key, "response": None})
        await self._store.append(self._run, "input_response", closed)
        return None


def _retrying(record: RunRecord) -> str:
    """The `tool_retrying` event of a run delivered again after its worker stopped."""
    return json.dumps(
        {
            "retry_count": record.attempt - 1,
            "max_retries": None,
            "delay_seconds": 0,
            "error": {
                "code": "NETWORK_ERROR",
                "message": "the worker running the call stopped before it finished; the "
                "tool is safe to repeat, so another worker runs it again",
            },
            "metadata": {"tool_name": record.tool, "tool_call_id": record.id},
        }
    )


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
