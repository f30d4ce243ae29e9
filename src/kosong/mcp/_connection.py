"""One MCP server connection, run by a supervising task of its own (private: see `MCPToolset`).

The SDK's client fails in different ways when a server dies (an `MCPError` over stdio; over
HTTP an unasked-for `CancelledError`, or a response that never comes), so no caller awaits it
directly: the connection (`mcp.Client` and a task group) lives in a supervising task, each call
runs in that group and hands its outcome to a future the caller awaits, and when the connection
ends, however it ends, every pending future fails with `ServerGone`. A vanished server is seen
by the transport's errors, or (handshake era, which has `ping`) by a ping unanswered within
`_PING_TIMEOUT` while calls are pending. The next call connects again. A 401 or 403, which the
SDK reports as "Server returned an error response", is said as "unauthorized" (`AuthWatch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as mcp
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kosong._telemetry import continued
from kosong.mcp._answering import Asking
from kosong.mcp._spec import AuthFailure, AuthWatch, ServerSpec, http_transport
from kosong.mcp._task_client import (
    PROGRESS,
    TasksClient,
    call_as_task,
    takes_task,
    task_transport,
)
from kosong.tooling.error import describe_exception
from mcp import Client

logger = logging.getLogger(__name__)

_PING_INTERVAL = 5.0
_PING_TIMEOUT = 10.0


class ServerGone(Exception):
    """The call could not be served: the connection ended or was not made (or refused)."""

    def __init__(self, message: str, auth: AuthFailure | None = None) -> None:
        super().__init__(message)
        self.auth = auth  # set when the server refused the credentials (401 or 403 over HTTP)


@dataclass(slots=True, eq=False)  # kept in a set: compared by identity
class _Call:
    """A call in flight: its request, the caller's future, the scope that cancels the request."""

    name: str
    arguments: dict[str, Any]
    read_timeout: float | None
    progress: ProgressFnT | None
    meta: dict[str, Any] | None
    as_task: bool
    future: asyncio.Future[mcp.CallToolResult]
    scope: anyio.CancelScope | None = None
    abandoned: bool = False

    def fail(self, error: Exception) -> None:
        if not self.future.done():
            self.future.set_exception(error)


@dataclass(slots=True)
class _Live:
    """What a running connection holds."""

    client: Client
    group: anyio.abc.TaskGroup
    stop: anyio.Event = field(default_factory=anyio.Event)
    calls: set[_Call] = field(default_factory=set[_Call])


class Connection:
    """A connection to one MCP server, made on first use and again after it ends."""

    def __init__(
        self,
        name: str,
        spec: ServerSpec,
        *,
        connect_timeout: float,
        on_tools_changed: Callable[[Connection], None],
        asking: Asking,
    ) -> None:
        self.name = name
        self.spec = spec
        self._asking = asking
        self._auth = AuthWatch()
        self._connect_timeout = connect_timeout
        self._on_tools_changed = on_tools_changed
        self._live: _Live | None = None
        self._starting: asyncio.Future[_Live] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._closed = False
        self._connects = 0
        self.last_error: str | None = None
        """Why the last connection ended or could not be made (None while all is well)."""

    # --- the supervisor --------------------------------------------------------------------

    async def _connected(self) -> _Live:
        """The live connection, made now if there is none (raises `ServerGone` if it fails)."""
        if self._live is not None:
            return self._live
        if self._closed:
            raise ServerGone(f"the MCP server `{self.name}` connection is closed")
        starting = self._starting
        if starting is None:
            loop = asyncio.get_running_loop()
            self._starting = starting = loop.create_future()
            self._supervisor = loop.create_task(self._supervise(starting))
        try:
            with anyio.fail_after(self._connect_timeout):
                return await asyncio.shield(starting)
        except TimeoutError:
            raise ServerGone(
                f"could not connect to the MCP server `{self.name}` within "
                f"{self._connect_timeout:g} seconds"
            ) from None

    def _client(self) -> Client:
        spec, asking = self.spec, self._asking
        transport = (
            http_transport(spec, self._auth) if spec.url is not None else stdio_client(spec.stdio())
        )
        return Client(
            task_transport(transport),  # 2025-11-25 task handles reach `call_as_task`
            mode="legacy" if spec.legacy_sse else "auto",  # the SSE transport predates 2026
            message_handler=self._on_message,
            elicitation_callback=asking.elicitation,
            sampling_callback=asking.sampling,
            list_roots_callback=asking.roots,
            extensions=[TasksClient()],  # task handles followed to their end
        )

    def _reason(self, error: BaseException) -> str:
        """Why a connection failed: "unauthorized..." when the server refused credentials."""
        failure = self._auth.failure
        if failure is not None:
            return failure.describe(f"the MCP server `{self.name}` ({self.spec.where})")
        return _describe(error)

    async def _supervise(self, starting: asyncio.Future[_Live]) -> None:
        reason = "the connection was closed"
        live: _Live | None = None
        try:
            async with (
                self._client() as client,
                anyio.create_task_group() as group,
            ):
                live = _Live(client, group)
                if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:  # 2026 has no ping
                    group.start_soon(self._ping, live)
                elif (tools := client.server_capabilities.tools) is not None and tools.list_changed:
                    # Listening before the connection counts as made: no change is missed.
                    await group.start(self._listen, client)
                self._live = live
                self.last_error = None
                if self._starting is starting:  # connected: no longer connecting
                    self._starting = None
                starting.set_result(live)  # only this task settles it
                self._connects += 1
                if self._connects > 1:  # a reconnection: the tools may have changed meanwhile
                    self._on_tools_changed(self)
                await live.stop.wait()
                group.cancel_scope.cancel()
        except asyncio.CancelledError:
            reason = "the connection was cancelled"
            raise
        except BaseException as e:  # whatever ended it, the calls get a result
            reason = self._reason(e)
            logger.warning("MCP server %r: connection ended: %s", self.name, reason)
        finally:
            if self._starting is starting:
                self._starting = None
                if not self._closed:
                    self.last_error = reason
            gone = self._forget(live, reason)
            if not starting.done():
                starting.set_exception(gone)
                starting.exception()  # retrieved: no "never retrieved" warning if nobody waits

    def _end(self, live: _Live, reason: str) -> None:
        """End the live connection (it failed); forgotten at once, so the next call reconnects."""
        if not live.stop.is_set():
            logger.warning("MCP server %r: %s", self.name, reason)
            live.stop.set()
        self._forget(live, reason)

    def _forget(self, live: _Live | None, reason: str) -> ServerGone:
        """`live` is over: no longer the connection, and its pending calls fail."""
        if live is not None and self._live is live:
            self._live = None
            if not self._closed:
                self.last_error = reason
        gone = self._gone(reason)
        for call in list(live.calls if live is not None else ()):
            call.fail(gone)
        return gone

    def _gone(self, reason: str) -> ServerGone:
        if self._auth.failure is not None:  # the reason says so already
            return ServerGone(reason, self._auth.failure)
        return ServerGone(f"the MCP server `{self.name}` is unreachable: {reason}")

    async def _ping(self, live: _Live) -> None:
        """While calls are pending, ping the server: one that does not answer is gone."""
        while True:
            await anyio.sleep(_PING_INTERVAL)
            if not live.calls:
                continue
            with anyio.move_on_after(_PING_TIMEOUT) as waited:
                with contextlib.suppress(MCPError):  # an error answer is an answer: it is there
                    await live.client.session.send_ping()
            if waited.cancelled_caught:
                self._end(
                    live, f"the server did not answer a ping within {_PING_TIMEOUT:g} seconds"
                )
                return

    async def _listen(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """2026 era: refresh the tools whenever the server says they changed."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    self._on_tools_changed(self)
        except Exception as e:  # boundary: no change notifications then; calls still work
            logger.info("MCP server %r: change notifications ended: %s", self.name, _describe(e))
            if not started:
                task_status.started()

    async def _on_message(self, message: IncomingMessage) -> None:
        """Handshake era: a `tools/list_changed` notification refreshes the tools."""
        if isinstance(message, mcp.ToolListChangedNotification):
            self._on_tools_changed(self)

    # --- what the toolset asks -------------------------------------------------------------

    async def list_tools(self) -> list[mcp.Tool]:
        """Every tool of the server (all pages).

        Raises:
            ServerGone: the server cannot be reached.
        """
        live = await self._connected()
        tools: list[mcp.Tool] = []
        cursor: str | None = None
        try:
            for _ in range(1000):  # a server that never stops paginating is cut off
                page = await live.client.list_tools(cursor=cursor, cache_mode="refresh")
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except Exception as e:  # boundary: whatever failed, the server is named in `errors`
            reason = self._reason(e)
            self._end(live, f"listing the tools failed: {reason}")
            raise self._gone(reason) from e
        return tools

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        read_timeout: float | None,
        progress: ProgressFnT | None,
        meta: dict[str, Any] | None = None,
        as_task: bool = False,
    ) -> mcp.CallToolResult:
        """Call a tool; cancelling the caller cancels the request (or task) on the server.

        `meta` goes in the request's `_meta`; `as_task` asks a 2025-11-25 server that takes
        tasks to run the call as one, followed to its end within `read_timeout`.

        Raises:
            ServerGone: the server cannot be reached, went away during the call, or refused
                its credentials (`auth` set).
            MCPError: the server answered with a protocol error (-32001 on timeout).
        """
        live = await self._connected()
        future = asyncio.get_running_loop().create_future()
        call = _Call(name, arguments, read_timeout, progress, meta, as_task, future)
        live.calls.add(call)
        try:
            live.group.start_soon(self._run, live, call)
            return await future
        except asyncio.CancelledError:
            call.abandoned = True
            if call.scope is not None:
                call.scope.cancel()  # the SDK tells the server (notifications/cancelled)
            raise
        finally:
            live.calls.discard(call)

    async def _run(self, live: _Live, call: _Call) -> None:
        PROGRESS.set(call.progress)  # for a task's status messages (this task's own context)
        with anyio.CancelScope() as scope:
            call.scope = scope
            if call.abandoned:
                return
            try:
                if call.as_task and takes_task(live.client.server_capabilities):
                    sent = self._task(live, call)
                else:
                    sent = live.client.call_tool(
                        call.name,
                        call.arguments,
                        read_timeout_seconds=call.read_timeout,
                        progress_callback=call.progress,
                        meta=cast(Any, call.meta),
                    )
                # Sent from this task, in the caller's trace (the trace context in its _meta).
                result = await continued(call.meta, sent)
            except MCPError as e:
                if e.code == mcp.INTERNAL_ERROR and self._auth.failure is not None:
                    call.fail(self._gone(self._reason(e)))
                elif e.code == mcp.CONNECTION_CLOSED:  # `_end` fails the call with the reason
                    self._end(live, f"the connection closed: {e.message}")
                else:
                    call.fail(e)
            except asyncio.CancelledError:
                if not call.abandoned and not live.stop.is_set():
                    # Not ours: the SDK's transport failed under the call (`_end` fails it).
                    self._end(live, "the transport failed during a call")
                raise
            except Exception as e:  # boundary: the call's failure is its caller's, not ours
                call.fail(e)
            else:
                if not call.future.done():
                    call.future.set_result(result)

    async def _task(self, live: _Live, call: _Call) -> mcp.CallToolResult:
        """The call as a 2025-11-25 task, within its timeout (then cancelled on the server)."""
        try:
            with anyio.fail_after(call.read_timeout):
                result = await call_as_task(
                    live.client.session,
                    call.name,
                    call.arguments,
                    progress=call.progress,
                    meta=call.meta,
                )
        except TimeoutError:
            raise MCPError(
                mcp.REQUEST_TIMEOUT, f"the task did not end within {call.read_timeout:g} seconds"
            ) from None
        if not result.is_error:  # checked against the output schema, as the SDK checks a call
            await live.client.session.validate_tool_result(call.name, result)
        return result

    async def close(self) -> None:
        """End the connection for good."""
        self._closed = True
        if self._live is not None:
            self._live.stop.set()
        supervisor = self._supervisor
        if supervisor is not None and not supervisor.done():
            with anyio.move_on_after(5):
                await asyncio.shield(supervisor)
            if not supervisor.done():
                supervisor.cancel()


def _describe(error: BaseException) -> str:
    """A readable reason, out of the exception groups the SDK's task groups raise."""
    while isinstance(error, BaseExceptionGroup):
        error = cast(BaseExceptionGroup[BaseException], error).exceptions[0]
    return describe_exception(error)
