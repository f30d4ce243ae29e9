"""Serve any kosong toolset over MCP: streamable HTTP at `/mcp` (both protocol eras) and stdio.

    server = MCPToolServer(with_policies(SimpleToolset([...]), TimeoutPolicy(10)))
    app = server.app()                       # a Starlette app serving /mcp, or:
    routes, lifespan = server.routes(), server.lifespan   # to mount in an app of your own
    await server.run_stdio()                 # one client over stdin/stdout

It runs on the official SDK's low-level `mcp.server.Server`; every call goes through the
`kosong.standard` pipeline (a toolset that is not a `PolicyToolset` gets one without policies):

- `tools/list` gives each tool's input schema, annotations (`title`, the `*_hint` fields) and
  output schema where the tool declares one (`output_schema`);
- `tools/call` runs the call through the pipeline; a failure is an `isError` result the model
  can read, never a JSON-RPC error, except for an unknown tool (the protocol's -32602);
- a client that sends a progress token gets `notifications/progress` from `report_progress`;
- cancelling the request (`notifications/cancelled`, or closing the stream in the 2026 era)
  cancels the call, and so the tool;
- `notify_tools_changed()` sends `notifications/tools/list_changed` to every handshake-era
  session and every 2026-era `subscriptions/listen` stream;
- streams are resumable through a `SessionEventStore` (event ids scoped per session, the
  events kept in the run store);
- handshake-era sessions belong to the principal that opened them (kosong's guard's, or the
  SDK's authenticated user), are limited per principal and end when abandoned
  (`SessionKeeper`);
- a request whose id is neither a string nor an integer is an Invalid Request (`id: null`),
  in both eras, never taken for a notification;
- with telemetry on, each `tools/call` is a SERVER span of the MCP conventions;
- DNS-rebinding protection is on: only localhost Host and Origin headers by default;
- calls with an idempotency key (`_meta["kosong/idempotency_key"]`), and 2026-era calls whose
  client answers questions, are runs (`kosong.eventstore.Runs`: its own, in memory, or a
  kosong server's, `runs=`, as `create_app(mcp=True)` gives); given a server's runs, it
  serves MCP tasks (`io.modelcontextprotocol/tasks`), and with workers every call is a run
  they execute (see `_runs`).

A tool reaches back to its client with `current_call().elicit(...)`, `.sample(...)` and
`.log(...)`, in either era (`_asking`); `logging/setLevel` sets a handshake-era session's log
level (in the 2026-07-28 era each request says its level in `_meta`). `mcp_request()` gives a
tool the MCP request it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import itertools
import json
import logging
import os
import sys
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import Any, cast

import anyio
import mcp_types as mcp
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventStore
from mcp.server.streamable_http_manager import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    StreamableHTTPSessionManager,
)
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kosong import __version__, _telemetry
from kosong._seconds import positive_seconds
from kosong.eventstore import MemoryRunStore, Runs
from kosong.mcp._asking import BackChannel
from kosong.mcp._convert import mcp_progress, to_call_tool_result, to_mcp_tool
from kosong.mcp._events import SessionEventStore
from kosong.mcp._runs import RunCalls, error_result
from kosong.mcp._sessions import SESSION_HEADER, SessionKeeper, header, refusal
from kosong.message import ToolCall
from kosong.standard import LogLevel, PolicyToolset, caller_scope
from kosong.tooling import ToolResult, Toolset
from kosong.tooling.error import describe_exception
from kosong.utils.typing import JsonType

__all__ = ["MCPToolServer", "mcp_request"]

logger = logging.getLogger(__name__)

_LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The Host headers accepted by default (DNS-rebinding protection)."""

_LOCAL_ORIGINS: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
"""The Origin headers accepted by default (a request without Origin is accepted too)."""

_NOT_RUNNING = JSONResponse(
    {"error": "the MCP server is not running: enter MCPToolServer.lifespan first"},
    status_code=503,
)
"""The answer to a request that comes when the lifespan is not running."""

_REQUEST: contextvars.ContextVar[ServerRequestContext[Any, Any] | None] = contextvars.ContextVar(
    "kosong_mcp_request", default=None
)


def mcp_request() -> ServerRequestContext[Any, Any] | None:
    """The MCP request the running tool serves (None outside an `MCPToolServer` call).

    None too in a call that is a run (see `_runs`): it may execute in another process.

    Its `session` talks back to the client: `send_log_message`, `report_progress`, and, where
    the client offers them, sampling and elicitation requests.
    """
    return _REQUEST.get()


class _ToolsServer(Server[Any]):
    """The SDK's low-level server, announcing `tools.listChanged` in the handshake era too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class MCPToolServer:
    """A kosong toolset as an MCP server (see the module doc).

    One object serves any number of connections: HTTP sessions while its `lifespan` runs,
    and stdio through `run_stdio()`.
    """

    def __init__(
        self,
        toolset: Toolset,
        *,
        name: str = "kosong",
        version: str | None = None,
        instructions: str | None = None,
        event_store: EventStore | None = None,
        allowed_hosts: Sequence[str] = _LOCAL_HOSTS,
        allowed_origins: Sequence[str] = _LOCAL_ORIGINS,
        dns_rebinding_protection: bool = True,
        retry_interval_ms: int | None = 1000,
        session_idle_timeout: float | None = 30 * 60,
        session_setup_timeout: float | None = 30,
        max_sessions_per_principal: int | None = 100,
        stateless: bool = False,
        runs: Runs | None = None,
        input_timeout: float = 600.0,
    ) -> None:
        """Serve `toolset`.

        Args:
            toolset: The tools; put in a pipeline without policies unless it is a `PolicyToolset`.
            name: The server's name, as `initialize` and `server/discover` tell clients.
            version: The server's version (default: kosong's, as the SDK's servers give
                the SDK's).
            instructions: What the client's model should know about these tools.
            event_store: Where SSE events are kept for resumption; by default a
                `SessionEventStore` in the run store (`runs.store`).
            allowed_hosts: Host headers accepted (`host:port`, `*` for any port).
            allowed_origins: Origin headers accepted.
            dns_rebinding_protection: Check Host and Origin (on by default; turn it off only
                behind a proxy that checks them).
            retry_interval_ms: The SSE `retry:` the server suggests to reconnecting clients,
                sent with the priming event that opens each stream (None: neither).
            session_idle_timeout: Seconds after which an idle handshake-era session ends
                (idle: no request in flight and no stream open); None: never.
            session_setup_timeout: The same for a session whose client sent nothing after
                the `initialize` that opened it; None: `session_idle_timeout`.
            max_sessions_per_principal: Handshake-era sessions one principal may hold: opening
                one more ends their least recently used idle session, or, when all are busy,
                is refused with 429; None: no limit (the SDK's 10,000 in all still holds).
            stateless: Serve handshake-era requests without sessions (no GET stream, no
                resumption); 2026-era requests are stateless anyway.
            runs: The runs of a kosong server: calls that may take long become MCP tasks of
                those runs, and the calls that are runs (see the module doc) are its runs
                (default: runs of its own, in memory, and no tasks).
            input_timeout: Seconds a call that asked its client (`elicit`, `sample`) through
                a run waits for the answer; then `elicit` answers `cancel`, `sample` raises.

        Raises:
            ValueError: a timeout or the limit is not a positive number.
        """
        self._toolset: PolicyToolset = (
            toolset if isinstance(toolset, PolicyToolset) else PolicyToolset(toolset)
        )
        positive_seconds(input_timeout, "input_timeout")
        self._own_runs = runs is None
        self._runs = runs if runs is not None else Runs(self._toolset, MemoryRunStore())
        self._calls = RunCalls(
            self._runs, self._toolset, tasks=runs is not None, input_timeout=input_timeout
        )
        self._event_store = (
            event_store if event_store is not None else SessionEventStore(self._runs.store)
        )
        self._security = TransportSecuritySettings(
            enable_dns_rebinding_protection=dns_rebinding_protection,
            allowed_hosts=list(allowed_hosts),
            allowed_origins=list(allowed_origins),
        )
        self._retry_interval = retry_interval_ms
        self._stateless = stateless
        self._keeper = SessionKeeper(
            self._stream,
            per_principal=max_sessions_per_principal,
            idle_timeout=session_idle_timeout,
            setup_timeout=session_setup_timeout,
            on_end=self._session_ended,
        )
        self._ids = itertools.count(1)
        self._bus = InMemorySubscriptionBus()
        # Handshake-era sessions to tell about tool changes, by transport session id.
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        # The level each handshake-era session set with `logging/setLevel`.
        self._log_levels: dict[str, LogLevel] = {}
        self._managers: tuple[StreamableHTTPSessionManager, ...] | None = None  # streaming, plain
        self._server = _ToolsServer(
            name,
            version=version if version is not None else __version__,
            instructions=instructions,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        # Registered as a plain handler: it answers with the result's wire form (a dict).
        self._server.add_request_handler("tools/call", mcp.CallToolRequestParams, self._traced_call)
        self._server.add_request_handler(
            "logging/setLevel", mcp.SetLevelRequestParams, self._set_logging_level
        )
        self._server.add_notification_handler(
            "notifications/initialized", mcp.NotificationParams, self._session_initialized
        )
        if self._calls.tasks:
            self._calls.register(self._server)

    @property
    def toolset(self) -> PolicyToolset:
        """The pipeline calls go through."""
        return self._toolset

    @property
    def server(self) -> Server[Any]:
        """The SDK's low-level server (to serve it over a transport of your own)."""
        return self._server

    @property
    def event_store(self) -> EventStore:
        """Where SSE events are kept for resumption."""
        return self._event_store

    # --- the handlers ----------------------------------------------------------------------

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._toolset.find_tool(name)
        return None if tool is None else tool.parameters

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp.PaginatedRequestParams | None
    ) -> mcp.ListToolsResult:
        tools = [to_mcp_tool(tool) for tool in self._toolset.tools]
        for listed, tool in zip(tools, self._toolset.tools, strict=True):
            if self._calls.offers(tool):  # the 2025-11-25 era's word (the 2026 one has none)
                listed.execution = mcp.ToolExecution(task_support="optional")
        return mcp.ListToolsResult(tools=tools)

    async def _set_logging_level(
        self, ctx: ServerRequestContext[Any, Any], params: mcp.SetLevelRequestParams
    ) -> mcp.EmptyResult:
        """Handshake era: the session's tools log at `params.level` and above from now on."""
        key = _session_key(ctx)
        if key is not None:
            self._log_levels[key] = params.level
            if len(self._log_levels) > 10_000:
                self._log_levels.pop(next(iter(self._log_levels)))
        return mcp.EmptyResult()

    async def _traced_call(
        self, ctx: ServerRequestContext[Any, Any], params: mcp.CallToolRequestParams
    ) -> dict[str, Any]:
        """`tools/call` in the SERVER span of the MCP conventions, while telemetry is on.

        The client's trace context comes from `_meta`, the transport from how the request
        came (HTTP: `tcp`; stdio: `pipe`).
        """
        if _telemetry.current() is None:
            return await self._call_tool(ctx, params)
        traced = _telemetry.mcp_server_call(
            params.name,
            ctx.meta,
            arguments=params.arguments,
            request_id=ctx.request_id,
            session_id=_session_id(ctx),
            protocol_version=ctx.protocol_version,
            transport="pipe" if _headers(ctx) is None else "tcp",
        )
        with traced:
            try:
                result = await self._call_tool(ctx, params)
            except MCPError as e:
                traced.rpc_error(e.code, e.error.message)
                raise
            traced.finish(result)
            return result

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp.CallToolRequestParams
    ) -> dict[str, Any]:
        tool = self._toolset.find_tool(params.name)
        if tool is None:
            raise MCPError(mcp.INVALID_PARAMS, f"Unknown tool: {params.name}")
        key = _session_key(ctx)
        channel = BackChannel(ctx, lambda: self._log_levels.get(key) if key else None)
        try:
            if params.request_state is not None:  # a 2026-era retry, with the answers
                return await self._calls.resume(ctx, params, tool, channel)
            if self._calls.wants_run(tool, ctx, channel):
                return await self._calls.call(ctx, params, tool, channel)
            result = await self._run(ctx, params, channel)
            return to_call_tool_result(result.return_value, tool.output_schema)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never a JSON-RPC error: the model reads what went wrong
            logger.warning("MCP call to %r failed: %s", params.name, describe_exception(e))
            return error_result(f"Error running tool: {describe_exception(e)}")

    async def _run(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mcp.CallToolRequestParams,
        channel: BackChannel,
    ) -> ToolResult:
        """Run the call here; its tasks see the request and reach back through `channel`."""
        # The SDK parsed the arguments: the pipeline takes them as they are.
        arguments: JsonType = params.arguments if params.arguments is not None else {}
        call = ToolCall.model_construct(
            id=f"mcp-{next(self._ids)}",
            function=ToolCall.FunctionBody.model_construct(name=params.name, arguments=None),
        )
        token = _REQUEST.set(ctx)  # the call's task copies it; the tool reads it there
        try:
            with caller_scope(channel):
                meta = ctx.meta
                if meta is not None and meta.get("progress_token") is not None:
                    handled = asyncio.ensure_future(self._streamed(ctx, call, arguments))
                else:
                    handled = self._toolset.dispatch(call, arguments)
        finally:
            _REQUEST.reset(token)
        return handled if isinstance(handled, ToolResult) else await handled

    async def _streamed(
        self, ctx: ServerRequestContext[Any, Any], call: ToolCall, arguments: JsonType
    ) -> ToolResult:
        steps = 0
        async with self._toolset.stream(call, arguments) as events:
            async for event in events:
                if event.event == "tool_progress":
                    steps += 1
                    progress, total = mcp_progress(event.data, steps)
                    message = cast(str, event.data.get("message") or "") or None
                    try:
                        await ctx.session.report_progress(progress, total, message)
                    except Exception as e:
                        logger.debug("MCP progress not sent: %s", describe_exception(e))
            return await events.result()

    async def _session_initialized(
        self, ctx: ServerRequestContext[Any, Any], params: mcp.NotificationParams
    ) -> None:
        """Remember a handshake-era session, to tell it when the tools change."""
        key = _session_key(ctx)
        if key is not None:
            self._sessions[key] = ctx.session
            if len(self._sessions) > 10_000:
                self._sessions.popitem(last=False)

    def _session_ended(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._log_levels.pop(session_id, None)
        if isinstance(self._event_store, SessionEventStore):
            self._event_store.forget(session_id)

    # --- tool changes ----------------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        """Tell every client the tools changed (`notifications/tools/list_changed`).

        Handshake-era sessions get the notification on their standalone stream (kept for
        replay when the client is not listening); 2026-era clients get it on their
        `subscriptions/listen` streams. A session that cannot be reached is forgotten.
        """
        await self._bus.publish(ToolsListChanged())
        for key, session in list(self._sessions.items()):
            try:
                with anyio.fail_after(5):
                    await session.send_tool_list_changed()
            except Exception as e:  # the session is gone: forget it
                logger.info("Dropping MCP session %s: %s", key, describe_exception(e))
                self._sessions.pop(key, None)

    # --- HTTP ------------------------------------------------------------------------------

    def routes(self, path: str = "/mcp") -> list[BaseRoute]:
        """The route(s) serving MCP at `path`, to mount in a Starlette app with `lifespan`."""
        return [Route(path, endpoint=_ASGIEndpoint(self._asgi), methods=["GET", "POST", "DELETE"])]

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncGenerator[None]:
        """Run the HTTP side (the SDK's session managers) while the context is open.

        Usable as a Starlette `lifespan` (it takes the app and ignores it) or entered on its
        own; once it exits, it can be entered again.
        """
        if self._managers is not None:
            raise RuntimeError("this MCPToolServer's lifespan is already running")
        streaming = StreamableHTTPSessionManager(
            app=self._server,
            event_store=self._event_store,
            stateless=self._stateless,
            security_settings=self._security,
            retry_interval=self._retry_interval,
            session_idle_timeout=None,  # the keeper ends idle sessions (two timeouts, not one)
        )
        # 2026-era calls that cannot stream anything are answered as plain JSON: the SDK's
        # streaming mode costs a task and three event-loop turns per request (see `_asgi`).
        plain = StreamableHTTPSessionManager(
            app=self._server, stateless=True, json_response=True, security_settings=self._security
        )
        if self._own_runs:
            self._runs.draining = False  # it may be entered again
        async with streaming.run(), plain.run(), anyio.create_task_group() as tasks:
            self._managers = (streaming, plain)
            if not self._stateless:
                tasks.start_soon(self._keeper.expire)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
                self._managers = None
                self._sessions.clear()
                self._keeper.clear()
                if self._own_runs:  # its runs stop, those waiting for answers too
                    await self._runs.drain(0)

    def app(self, path: str = "/mcp") -> Starlette:
        """A Starlette app serving MCP at `path` (run it with uvicorn, say)."""
        return Starlette(routes=self.routes(path), lifespan=self.lifespan)

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        managers = self._managers
        if managers is None:
            await _NOT_RUNNING(scope, receive, send)
            return
        plain = managers[1]
        era = _era(scope)
        if era == "tools/call":
            # A 2026-era tools/call streams only progress (asked by a progress token) and
            # log messages (asked by a log level); without either marker in its body, it
            # goes to the plain JSON manager. A false marker (the word inside an argument)
            # only costs the streaming path; a body too big to look at goes there as well.
            head, replay = await _peek_body(receive, _PEEK_LIMIT)
            if head is not None and b'"progressToken"' not in head and b"logLevel" not in head:
                await _cancelled_on_disconnect(plain.handle_request(scope, replay, send), receive)
                return
            receive = replay
        if era != "handshake":
            await self._stream(scope, receive, send)
            return
        opens = False
        if scope.get("method") == "POST":
            # The SDK's handshake-era transport takes a request with an id of the wrong type
            # for a notification (202, never answered): refuse it first, as its 2026 era does.
            body, receive = await _peek_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
            message = _read_message(body)
            refused = _invalid_id_response(message)
            if refused is not None:
                await refused(scope, receive, send)
                return
            # Only an `initialize` opens a session; one we could not read might be one.
            opens = message is None or message.get("method") == "initialize"
            scope = self._as_negotiated(scope)
        if not self._stateless:
            await self._keeper.handle(scope, receive, send, opens=opens)
        else:
            await self._stream(scope, receive, send)

    def _as_negotiated(self, scope: Scope) -> Scope:
        """A session's request, with the protocol version its session negotiated if newer.

        The SDK primes a POST's stream (with `retry:`) only for 2025-11-25 or later, as older
        clients cannot read an event without data; a client whose session negotiated that
        reads them whatever version a request names (the conformance suite names an older one).
        """
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        session_id = header(headers, SESSION_HEADER)
        version = header(headers, b"mcp-protocol-version")
        session = self._sessions.get(session_id) if session_id is not None else None
        if session is None or version is None or version >= session.protocol_version:
            return scope  # versions are dates: a later one sorts after
        negotiated = session.protocol_version.encode("latin-1")
        changed = [(k, negotiated if k == b"mcp-protocol-version" else v) for k, v in headers]
        return {**scope, "headers": changed}

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the SDK's streaming manager, bound to its session's events."""
        managers = self._managers
        if managers is None:  # the lifespan ended while the request waited
            await _NOT_RUNNING(scope, receive, send)
            return
        store = self._event_store
        if isinstance(store, SessionEventStore):
            send = store.bind(scope, send)
        await managers[0].handle_request(scope, receive, send)

    # --- stdio -----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it closes stdin.

        The protocol gets a private copy of the process's stdout; from the moment this starts
        until the process exits, stdout itself (`print`, logging to stdout, a child process's
        output) goes to stderr, and `sys.stdout` is stderr while serving. So nothing a tool
        prints ever reaches the protocol stream: not while serving, not text still buffered
        from before (it is flushed to stderr first), not at shutdown (stdout is never handed
        back, and the stream is closed when serving ends).
        """
        wire = os.dup(1)
        os.set_inheritable(wire, False)  # a tool's child process must not write to the protocol
        os.dup2(2, 1)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # what was printed before serving lands on stderr too
        stdout = io.TextIOWrapper(os.fdopen(wire, "wb"), encoding="utf-8")
        printing = sys.stdout
        sys.stdout = sys.stderr
        try:
            async with stdio_server(stdout=anyio.wrap_file(stdout)) as (read_stream, write_stream):
                await self._server.run(
                    read_stream, write_stream, self._server.create_initialization_options()
                )
        finally:
            sys.stdout = printing
            with contextlib.suppress(OSError, ValueError):
                stdout.close()  # the client reads the end of the stream


class _ASGIEndpoint:
    """An ASGI app Starlette's `Route` mounts as it is (a bound method would be a view)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


_PEEK_LIMIT = 64 * 1024


def _era(scope: Scope) -> str:
    """The era of a request, as the SDK routes it.

    `"handshake"` (no protocol version, or a handshake one), `"tools/call"` (a 2026-era POST
    naming it) or `"2026"` (any other 2026-era request).
    """
    headers = scope.get("headers", ())
    version = header(headers, b"mcp-protocol-version")  # the first of each, as the SDK reads it
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return "handshake"
    posted = scope.get("method") == "POST"
    return "tools/call" if posted and header(headers, b"mcp-method") == "tools/call" else "2026"


async def _peek_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """The request's whole body (None if over `limit` bytes), and a `receive` giving it again.

    Only up to `limit` bytes are buffered: a bigger body is left to the SDK (which refuses one
    over its own limit with 413), and so is a client that leaves before sending all of it.
    """
    chunks: list[Message] = []
    size = 0
    while True:
        message = await receive()
        chunks.append(message)
        if message["type"] != "http.request":
            break  # the client left: let the SDK see it
        size += len(message.get("body", b""))
        if size > limit or not message.get("more_body", False):
            break
    complete = chunks[-1]["type"] == "http.request" and not chunks[-1].get("more_body", False)
    head = b"".join(m.get("body", b"") for m in chunks) if complete and size <= limit else None

    async def replay() -> Message:
        if chunks:
            return chunks.pop(0)
        return await receive()

    return head, replay


def _read_message(body: bytes | None) -> dict[str, object] | None:
    """The JSON object `body` holds; None if it holds none (or was too big to read).

    What is not one object is left to the SDK, which answers it with its own errors.
    """
    if body is None:
        return None
    try:
        decoded: object = json.loads(body.decode())  # UTF-8 only, as the SDK reads it
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, object], decoded) if isinstance(decoded, dict) else None


def _invalid_id_response(message: dict[str, object] | None) -> Response | None:
    """A 400 Invalid Request (`id: null`) if `message` is a request with an id of the wrong type.

    A request (an object with a `method`) that has an `id` must give a string or an integer
    (`1.0` is not one, as the SDK's `RequestId` has it); one without `id` is a notification.
    """
    if message is None or "method" not in message or "id" not in message:
        return None
    if type(message["id"]) in (str, int):  # exactly: true and false are not integers here
        return None
    return refusal(400, "Invalid Request: a request's id must be a string or an integer")


async def _cancelled_on_disconnect(answer: Awaitable[None], receive: Receive) -> None:
    """Await `answer`, cancelling it if the client disconnects first.

    The SDK's JSON mode does not watch for a client that leaves. A task waits for the
    disconnect, started only if the answer has to wait (most never yield to the event loop).
    """
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    left = False
    watcher: asyncio.Task[None] | None = None

    async def wait_for_disconnect() -> None:
        nonlocal left
        while (await receive())["type"] != "http.disconnect":
            pass
        left = True
        task.cancel()

    def start_watching() -> None:
        nonlocal watcher
        watcher = loop.create_task(wait_for_disconnect())

    starting = loop.call_soon(start_watching)
    try:
        await answer
    except asyncio.CancelledError:
        if left and task.uncancel() == 0:
            return  # the client left: nobody to answer, and nothing else cancelled us
        raise
    finally:
        starting.cancel()
        if watcher is not None:
            watcher.cancel()


def _headers(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The HTTP request's headers (None over stdio)."""
    return getattr(ctx.request, "headers", None)


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = _headers(ctx)
    session_id: object = headers.get("mcp-session-id") if headers is not None else None
    return session_id if isinstance(session_id, str) else None


def _session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    if _headers(ctx) is None:  # stdio: one connection per server run
        return f"stdio-{id(ctx.session.client_params)}"
    return _session_id(ctx)
