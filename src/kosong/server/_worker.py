"""`work`: a process that executes queued runs for any number of front ends (`kosong worker`).

A worker is a `Server` without HTTP: the same pipeline (the toolset's, with the server's
metrics and cache), the same runs and store, taking runs from the queue in Redis instead of
from requests. It stops on SIGINT or SIGTERM: it takes no more runs, gives those it has the
grace period, and leaves the rest to the queue, which delivers them again to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable

from kosong.server._app import Server, as_toolset
from kosong.server._config import ServerConfig

__all__ = ["work"]


async def work(
    toolset: object,
    config: ServerConfig,
    *,
    ready: Callable[[Server], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Execute the runs queued in `config.redis_url`, `config.workers` at once, until stopped.

    Stops on SIGINT or SIGTERM (or when `stop` is set); `ready(server)` is called once it
    takes runs.

    Raises:
        ValueError: `config` has no `redis_url`, or `workers` is 0.
        ConnectionError: Redis cannot be reached.
    """
    if config.redis_url is None or config.workers < 1:
        raise ValueError("a worker needs config.redis_url and config.workers >= 1")
    server = Server(as_toolset(toolset), config)
    stop = stop if stop is not None else asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    try:
        await server.startup()
        try:
            if ready is not None:
                ready(server)
            await stop.wait()
        finally:
            await server.aclose()
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
