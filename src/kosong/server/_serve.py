"""Running an app with uvicorn: `serve` (until a signal) and `serving` (in the background).

Both bind the listening socket first, so a port in use is an `OSError` that says so, and both
shut down gracefully: the socket stops accepting, runs in flight get the app's grace period,
those still running then end with an error event that the open streams deliver, and only then
does uvicorn close the connections. `work` runs a worker (`kosong worker`): a `Server` without
HTTP, taking runs from the queue in Redis; stopped, it leaves the runs it cannot finish in the
grace period to the queue, which delivers them again to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import uvicorn

from kosong.server._app import Server, as_toolset
from kosong.server._config import ServerConfig

__all__ = ["bind", "serve", "serving", "work"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: a free one).

    Raises:
        OSError: the address cannot be used; the message says which and why.
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # Named TCP (not protocol 0): asyncio sets TCP_NODELAY only on accepted sockets whose
    # protocol says TCP, and without it every answer on a kept-alive connection waits for the
    # client's delayed ACK (Nagle's algorithm), about 40 ms. Set on the listener too, which
    # accepted sockets inherit (any event loop).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as e:
        sock.close()
        error = OSError(f"cannot listen on {host}:{port}: {e.strerror or e}")
        error.errno = e.errno
        raise error from None
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, draining the app's runs before it closes connections."""

    def __init__(self, app: Any, *, signals: bool, log_level: str, **options: Any) -> None:
        self._runtime = getattr(getattr(app, "state", None), "kosong", None)
        grace = float(self._runtime.config.grace) if self._runtime is not None else 10.0
        options.setdefault("timeout_graceful_shutdown", max(1, round(grace + 5)))
        # Access lines are info: below that level none is printed, so none is made either.
        options.setdefault("access_log", log_level in ("trace", "debug", "info"))
        super().__init__(uvicorn.Config(app, log_level=log_level, lifespan="on", **options))
        self._signals = signals

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        if self._signals:
            with super().capture_signals():
                yield
        else:
            yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # stop accepting while the runs drain
        if self._runtime is not None:
            await self._runtime.drain()
        await super().shutdown(sockets)


async def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    sock: socket.socket | None = None,
    log_level: str = "info",
    **options: Any,
) -> None:
    """Serve `app` until SIGINT or SIGTERM, then shut down gracefully.

    Binds `host:port` (localhost by default) unless given a bound `sock`. More keyword
    arguments go to `uvicorn.Config` (`loop`, `http`, `access_log`...).

    Raises:
        OSError: the address cannot be used.
        RuntimeError: the app failed to start (Redis unreachable, say); the log says why.
    """
    sock = sock if sock is not None else bind(host, port)
    try:
        await _run(_Server(app, signals=True, log_level=log_level, **options), sock)
    finally:
        sock.close()


async def _run(server: _Server, sock: socket.socket) -> None:
    try:
        await server.serve(sockets=[sock])
    except SystemExit:  # uvicorn's way of saying the app's start-up failed
        raise RuntimeError("the app failed to start; see the log") from None


@contextlib.asynccontextmanager
async def serving(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning", **options: Any
) -> AsyncGenerator[str]:
    """Serve `app` in the background while the block runs; gives its base URL.

    Example:
        ```python skip
        async with serving(create_app(tools)) as url:
            ...  # http requests to url
        ```

    Leaving the block shuts the server down gracefully.

    Raises:
        OSError: the address cannot be used.
        RuntimeError: the app failed to start.
    """
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    server = _Server(app, signals=False, log_level=log_level, **options)
    task = asyncio.get_running_loop().create_task(_run(server, sock))
    try:
        while not server.started:
            if task.done():
                task.result()  # raises what stopped it
                raise RuntimeError("the server stopped while starting")
            await asyncio.sleep(0.005)
        name = f"[{host}]" if ":" in host else host
        yield f"http://{name}:{bound_port}"
    finally:
        server.should_exit = True
        try:
            await task
        finally:
            sock.close()


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
    async with contextlib.AsyncExitStack() as stack:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
                stack.callback(loop.remove_signal_handler, sig)
        await server.startup()
        stack.push_async_callback(server.aclose)
        if ready is not None:
            ready(server)
        await stop.wait()
