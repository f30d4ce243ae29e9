"""The run queue, the `Executor` of a server with Redis: runs handed to workers through Docket.

Docket (`pydocket`, the distributed task engine FastMCP runs MCP background tasks on) keeps
the queue in Redis streams with a consumer group: a front end adds a run (`submit`), one
worker takes it, and renews its lease on it while it runs; a run whose worker stops renewing
(killed, cut off) is delivered again to another worker once the lease has run out. Docket
also holds the cluster-wide concurrency limits (`ConcurrencyLimit`: slots in Redis, the
calls over the limit parked until one is free) and cancels a running task on any worker.

A queued task carries only the run's id and tool: the worker executes it (`Runs.execute`,
which finds the call in the run's record). A tool that may only run N calls at once
(`sequential = True`, or a `ConcurrencyPolicy` of the pipeline) is queued as a task with a
`ConcurrencyLimit` of N on its name, so the limit holds across every worker.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from kosong._extras import install_hint
from kosong.eventstore import StoreUnavailableError

try:
    from docket import ConcurrencyLimit, CurrentExecution, Docket, Execution, Worker
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"workers need the pydocket package: {install_hint('server')}") from e

__all__ = ["RunQueue"]

logger = logging.getLogger(__name__)


class _OneLine(logging.Filter):
    """Docket's logs of a Redis outage in one line each (expected: a traceback looks like a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and _is_outage(error):
            record.msg = f"{record.msg}: {type(error).__name__}: {error}"
            record.exc_info = None
            record.exc_text = None
        return True


def _is_outage(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_is_outage(e) for e in error.exceptions)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType, reportUnknownMemberType]
    return isinstance(error, RedisConnectionError | RedisTimeoutError | OSError)


async def _once_more(send: Callable[[], Awaitable[object]]) -> None:
    """Send a command, and once more if its connection failed.

    After Redis restarts, the pool's connections are dead, and only the first command on each
    finds out (adding a run twice is harmless: its key is the run's id, and Docket keeps one
    task per key). A failure that remains is an outage: `StoreUnavailableError`, as the store says.
    """
    try:
        try:
            await send()
        except RedisConnectionError:
            await send()
    except (RedisConnectionError, RedisTimeoutError) as e:
        raise StoreUnavailableError(f"the queue's Redis cannot be reached: {e}") from e


def _quiet_outages() -> None:
    for name in [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "docket"]:
        found = logging.getLogger(name)
        if not any(isinstance(f, _OneLine) for f in found.filters):
            found.addFilter(_OneLine())


class RunQueue:
    """Runs queued in Redis for the workers; see the module doc."""

    shared = True
    """Runs execute on any worker (an `Executor` whose runs are elsewhere)."""

    def __init__(self, url: str, limit: Callable[[str], int | None]) -> None:
        """Queue runs in the Redis at `url`; `limit(tool)` says how many may run at once."""
        self.docket = Docket(name="kosong-runs", url=url)
        _quiet_outages()
        self._limit = limit
        self._execute: Callable[[str], Awaitable[None]] | None = None
        self._entered = False

    async def open(self) -> None:
        """Connect to Redis.

        Raises:
            redis.exceptions.RedisError: Redis cannot be reached.
        """
        if not self._entered:
            await self.docket.__aenter__()
            self._entered = True

    async def aclose(self) -> None:
        """Disconnect."""
        if self._entered:
            self._entered = False
            await self.docket.__aexit__(None, None, None)

    def task_name(self, limit: int | None) -> str:
        """The name of the task that runs a tool limited to `limit` calls at once."""
        name = "kosong_run" if limit is None else f"kosong_run_{limit}"
        if name not in self.docket.tasks:
            self.docket.register(self._function(limit), names=[name])
        return name

    def _function(self, limit: int | None) -> Callable[..., Awaitable[None]]:
        if limit is None:

            async def kosong_run(run_id: str, tool: str) -> None:
                await self._run(run_id)

            return kosong_run

        async def kosong_run_limited(
            run_id: str,
            tool: str,
            concurrency: ConcurrencyLimit = ConcurrencyLimit("tool", limit),  # noqa: B008 - Docket's injection
        ) -> None:
            await self._run(run_id)

        return kosong_run_limited

    async def _run(self, run_id: str) -> None:
        if self._execute is None:  # a front end only never takes a task
            raise RuntimeError("this process runs no calls")
        await self._execute(run_id)

    async def submit(self, run_id: str, tool: str, *, again: bool = False) -> None:
        """Hand the run to a worker (the task's key is the run's id).

        `again`: the run was answered and goes on, under a key of its own (Docket keeps one
        task per key, and the one that asked may not have finished yet); `cancel` does not
        reach it on its worker, where the run stops at its next event once it has ended.
        """
        name = self.task_name(self._limit(tool))
        key = f"{run_id}-{secrets.token_hex(4)}" if again else run_id
        await _once_more(lambda: self.docket.add(name, key=key)(run_id=run_id, tool=tool))

    async def cancel(self, run_id: str) -> None:
        """Take the run out of the queue, or stop it on the worker running it."""
        await _once_more(lambda: self.docket.cancel(run_id))

    async def work(
        self,
        execute: Callable[[str], Awaitable[None]],
        tools: list[str],
        *,
        concurrency: int,
        lease: float,
        name: str | None = None,
    ) -> None:
        """Run queued runs with `execute(run_id)`, up to `concurrency` at once, until cancelled.

        `tools`: the tools this worker can run (the tasks of their limits are registered, so
        runs queued by a front end serving the same tools find them). A worker that stops
        lets its runs go: they are delivered again to another worker once `lease` has passed.
        """
        self._execute = execute
        for tool in tools:
            self.task_name(self._limit(tool))
        self.task_name(None)
        worker = Worker(
            self.docket,
            name=name,
            concurrency=concurrency,
            redelivery_timeout=timedelta(seconds=lease),
            reconnection_delay=timedelta(seconds=min(1.0, lease)),
            minimum_check_interval=timedelta(milliseconds=100),
            schedule_automatic_tasks=False,
            fallback_task=self._fallback,
        )
        async with worker:
            await worker.run_forever()

    async def _fallback(
        self,
        *args: Any,
        execution: Execution = CurrentExecution(),  # noqa: B008 - Docket's injection
        **kwargs: Any,
    ) -> None:
        """Run a run queued under a limit this worker does not know, without it; warn."""
        run_id = kwargs.get("run_id", args[0] if args else None)
        if not isinstance(run_id, str) or not execution.function_name.startswith("kosong_run"):
            logger.warning("Dropping the unknown task %r", execution.function_name)
            return
        logger.warning(
            "Run %s was queued as %s, which this worker does not know (do the front ends and "
            "the workers serve the same tools?); running it without its limit",
            run_id, execution.function_name,
        )  # fmt: skip
        await self._run(run_id)
