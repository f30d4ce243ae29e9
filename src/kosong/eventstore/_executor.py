"""Where runs execute: the `Executor` protocol, and `LocalExecutor`, tasks of this process.

An executor is handed a run's id (`submit`) and has `Runs.execute(run_id)` called on it,
somewhere: in a task of this process (`LocalExecutor`, a server without Redis), or on any
worker that takes it from the queue in Redis (`RunQueue` in `kosong.server`). Whatever executes
it, a run is executed the same way (see `Runs.execute`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Protocol

from kosong.eventstore._store import StoreFullError

__all__ = ["Executor", "LocalExecutor"]


class Executor(Protocol):
    """Executes runs: `Runs.execute(run_id)` for each run submitted."""

    shared: bool
    """Whether runs may execute in other processes (then whoever waits on a run reads its
    record again, now and then)."""

    async def submit(self, run_id: str, tool: str, *, again: bool = False) -> None:
        """Execute the run (`again`: once more, after it waited for an answer).

        Raises:
            StoreFullError: this executor takes no more runs right now.
        """
        ...

    async def cancel(self, run_id: str) -> None:
        """Stop executing the run, wherever it runs (its final event is written already)."""
        ...


class LocalExecutor:
    """Runs executed by tasks of this process, at most `most` at once."""

    shared = False

    def __init__(
        self, execute: Callable[[str], Coroutine[object, object, None]], most: int
    ) -> None:
        """Execute each run submitted with `execute(run_id)`."""
        self._execute = execute
        self._most = most
        self._tasks: dict[str, asyncio.Task[None]] = {}  # the runs executing here, by id

    async def submit(self, run_id: str, tool: str, *, again: bool = False) -> None:
        """Start a task executing the run; see `Executor.submit`."""
        if len(self._tasks) >= self._most:
            raise StoreFullError(f"{len(self._tasks)} runs are in flight, the most allowed")
        task = asyncio.get_running_loop().create_task(self._execute(run_id))
        self._tasks[run_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(run_id, None))

    async def cancel(self, run_id: str) -> None:
        """Cancel the run's task, if it runs here."""
        task = self._tasks.get(run_id)
        if task is not None:
            task.cancel()
