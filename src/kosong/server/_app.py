"""`create_app`: any toolset served over HTTP and SSE, through the standard's pipeline.

Routes (every one behind the checks of `_guard`, and so is anything mounted later):

    GET    /healthz                 {"status": "ok"} (503 while shutting down, or Redis is away)
    GET    /metrics                 Prometheus text: the metrics policy's, and the server's
    GET    /tools                   {"tools": [definition, ...]}
    GET    /dialects                what each provider rejects or ignores in the tools' schemas
    GET    /tools/{name}            one definition (404 for an unknown tool)
    POST   /tools/{name}            call: JSON body = arguments -> the envelope, with the
                                    HTTP status of the standard's error code
    GET    /tools/{name}/sse        call streamed as SSE (arguments as query parameters;
                                    a request no page of another site can make, see
                                    `CrossSiteMiddleware`)
    POST   /tools/{name}/sse        the same, arguments as a JSON body
    GET    /runs?state=waiting      the caller's runs waiting for an answer (approvals)
    GET    /runs/{run_id}           a run's events (from `Last-Event-ID` on), then live ones
    POST   /runs/{run_id}/input     answer the question a run waits on (202)
    DELETE /runs/{run_id}           cancel a run

A call may carry an `Idempotency-Key` header: the first call with a key starts a run, and
any later call with the same key (from the same principal) gets that run, never a new one:
its result, or its stream from the start; the same key with another tool or other arguments
is refused with 422. With Redis, every call is a run handed to the workers (a full queue is
refused with 429 and `Retry-After`).

`/` is the inspector's page (`_inspector`), unless `ServerConfig(inspector=False)`.

Every answer that is not a tool's result is the standard's error envelope too: an unknown
path (404), a method a route does not take (405), a store that cannot be reached (503 with
`Retry-After`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from kosong._timestamps import format_epoch
from kosong.dialects import SOURCES, check_tools
from kosong.eventstore import (
    START,
    IdempotencyConflictError,
    MemoryRunStore,
    QueueFullError,
    RunNotFoundError,
    RunRecord,
    Runs,
    RunStore,
    ShuttingDownError,
    StoreFullError,
    StoreUnavailableError,
    split_event_id,
)
from kosong.message import ToolCall
from kosong.server._auth import BearerTokenMiddleware
from kosong.server._body import BodySizeMiddleware
from kosong.server._config import ServerConfig
from kosong.server._guard import ANONYMOUS, PRINCIPAL, RETRY_AFTER_OUTAGE, error_body
from kosong.server._inspector import inspector_routes, public_paths
from kosong.server._limits import MemoryRateLimiter, RateLimiter, RateLimitMiddleware
from kosong.server._resource import METADATA_PATH, metadata_route
from kosong.server._sites import CrossSiteMiddleware, HostOriginMiddleware
from kosong.standard import CATALOG, PolicyToolset, error_code, to_envelope, with_policies
from kosong.standard.policies import (
    CachePolicy,
    ConcurrencyPolicy,
    MemoryCache,
    MetricsPolicy,
    MetricsRegistry,
)
from kosong.tooling import UNPARSED, Tool, Toolset, Unparsed
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType

__all__ = ["Server", "as_toolset", "create_app", "query_arguments"]

logger = logging.getLogger(__name__)

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]

_JSON = "application/json"


def as_toolset(target: object) -> Toolset:
    """`target` as a toolset: a `Toolset` itself, or tools in a `SimpleToolset`.

    A tool, or a list (tuple, set) of tools.

    Raises:
        TypeError: `target` is none of these.
    """
    if isinstance(target, Toolset):
        return target
    if isinstance(target, Tool):
        raise TypeError(
            f"`{target.name}` is a definition only (a Tool); serve a callable tool "
            "(CallableTool, CallableTool2, @tool) or a Toolset"
        )
    if isinstance(target, list | tuple | set | frozenset):
        return SimpleToolset(list(cast(Iterable[Any], target)))
    try:
        return SimpleToolset([target])  # pyright: ignore[reportArgumentType]
    except Exception:
        raise TypeError(
            f"expected a Toolset, a tool or a list of tools, got {type(target).__name__}"
        ) from None


def _json(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(text, status, headers=headers, media_type=_JSON)


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None, **details: Any
) -> Response:
    return Response(error_body(code, message, **details), status, headers=headers, media_type=_JSON)


def _not_allowed(allow: str) -> Response:
    return _error(405, "INVALID_PARAMS", f"this route takes {allow}", {"Allow": allow})


def _unavailable(message: str) -> Response:
    seconds = RETRY_AFTER_OUTAGE
    return _error(503, "NETWORK_ERROR", message, {"Retry-After": str(seconds)}, retry_after=seconds)


async def _store_unavailable(request: Request, exc: Exception) -> Response:
    logger.warning("%s %s: %s", request.method, request.url.path, exc)
    return _unavailable(f"{exc}; try again shortly")


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's refusals (no such route, a method it does not take), the routes' 400s."""
    assert isinstance(exc, HTTPException)  # the only exceptions it is registered for
    if exc.status_code == 404:
        return _error(404, "RESOURCE_NOT_FOUND", f"nothing at {request.url.path}", exc.headers)
    return _error(exc.status_code, "INVALID_PARAMS", exc.detail, exc.headers)


async def _no_run(request: Request, exc: Exception) -> Response:
    """A run the caller cannot see (`RunNotFoundError`, raised with its id): 404."""
    ttl: float = request.app.state.kosong.config.run_ttl
    return _error(
        404, "RESOURCE_NOT_FOUND",
        f"no run {exc.args[0]} here: it never existed, it belongs to another principal, or it "
        f"ended more than {ttl:g} seconds ago and was forgotten",
    )  # fmt: skip


_REJECTED = ("auth", "body", "cross_site", "header", "host", "origin", "rate", "unavailable")
"""The reasons `/metrics` counts refused requests by (each one always shown)."""


def _starts_run(scope: Scope) -> bool:
    """Whether a GET (or HEAD) starts a run: `.../tools/{name}/sse` (any prefix), not resuming."""
    parts = scope["path"].rsplit("/", 3)
    if len(parts) != 4 or parts[1] != "tools" or parts[3] != "sse":
        return False
    return not any(key == b"last-event-id" and value for key, value in scope["headers"])


class Server:
    """What an app serves with: its pipeline, runs, store and checks (`app.state.kosong`)."""

    def __init__(self, toolset: Toolset, config: ServerConfig) -> None:
        """Serve `toolset` as `config` says (see `create_app`)."""
        self.config = config
        self.redis: Any = None
        limiter: RateLimiter | None = None
        cache_backend: Any = None
        store = config.run_store
        queue: Any = None
        if config.redis_url is not None:
            from kosong.eventstore.redis_store import RedisRunStore, connect
            from kosong.server._queue import RunQueue
            from kosong.server.redis_limits import RedisRateLimiter
            from kosong.standard.policies import RedisCache

            self.redis = connect(config.redis_url)
            store = RedisRunStore(self.redis, ttl=config.run_ttl)
            queue = RunQueue(config.redis_url, self._limit_of)
            if config.rate_limit is not None:
                limiter = RedisRateLimiter(self.redis, config.rate_limit)
            cache_backend = RedisCache(self.redis)
        elif config.rate_limit is not None:
            limiter = MemoryRateLimiter(config.rate_limit)
        self.store: RunStore = store if store is not None else MemoryRunStore(ttl=config.run_ttl)
        self.toolset, self.metrics = _pipeline(toolset, cache_backend)
        self.queue = queue
        """The run queue (with Redis), which workers take runs from."""
        self.runs = Runs(
            self.toolset, self.store, executor=queue, max_runs=config.max_runs,
            max_queued=config.max_queued, idle=config.idle, key_ttl=config.key_ttl,
        )  # fmt: skip
        self.worker_name = secrets.token_hex(4)
        """This process's name among the queue's workers."""
        self._work: Any = None
        self.limiter = limiter
        self.rejected: Counter[str] = Counter()
        """Requests refused before any route, by reason (the reasons `/metrics` shows)."""
        self._drain: Any = None
        self._shutdown: Any = None
        self._watcher: Any = None

    def _limit_of(self, tool_name: str) -> int | None:
        """How many calls of the tool may run at once across the workers (None: any)."""
        tool = self.toolset.find_tool(tool_name)
        if tool is None:
            return None
        policy = self.toolset.find_policy(ConcurrencyPolicy)
        return policy.limit_for(tool) if policy is not None else (1 if tool.sequential else None)

    async def drain(self) -> None:
        """Shut down gracefully (once): runs get the grace period, then stop.

        A stopped run ends with an error; a queued one goes back to the queue, for another
        worker.
        """
        if self._drain is None:
            self._drain = asyncio.create_task(self._drain_all())
        await asyncio.shield(self._drain)  # one waiter leaving must not cancel it

    async def _drain_all(self) -> None:
        work, self._work = self._work, None
        if work is not None:
            work.cancel()  # takes no more runs; the worker waits for those it has
        await self.runs.drain(self.config.grace)
        if work is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(work, 10)

    async def startup(self) -> None:
        """Check that Redis answers (when configured).

        Raises:
            ConnectionError: Redis does not answer.
        """
        self._drain = None  # an app may be served again after it shut down
        self.runs.draining = False
        self._shutdown = anyio.Event()
        self._watcher = asyncio.create_task(self._drain_on(self._shutdown))
        if self.redis is not None:
            try:
                with anyio.fail_after(5):
                    await self.redis.ping()
                    await self.queue.open()
            except Exception as e:
                raise ConnectionError(
                    f"cannot reach Redis at {self.config.redis_url}: {e or type(e).__name__}"
                ) from e
            if self.config.workers > 0:
                self._work = work = asyncio.create_task(
                    self.queue.work(
                        self.runs.execute,
                        [tool.name for tool in self.toolset.tools],
                        concurrency=self.config.workers,
                        lease=self.config.lease,
                        name=f"kosong-{self.worker_name}",
                    )
                )
                work.add_done_callback(_worker_ended)

    async def aclose(self) -> None:
        """Drain, then release the queue, the store, the limiter and the Redis client."""
        await self.drain()
        if self._watcher is not None:
            self._watcher.cancel()
        await self.runs.aclose()
        if self.queue is not None:
            with contextlib.suppress(Exception):
                await self.queue.aclose()
        await self.store.aclose()
        if self.limiter is not None:
            await self.limiter.aclose()
        if self.redis is not None:
            with contextlib.suppress(Exception):
                await self.redis.aclose()

    # --- routes --------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        """Health: 200; 503 while shutting down, or while Redis (when used) does not answer."""
        if self.runs.draining:
            return _json({"status": "draining"}, 503)
        if self.redis is not None:
            try:
                with anyio.fail_after(2):
                    await self.redis.ping()
            except Exception as e:
                reason = str(e) or type(e).__name__
                return _unavailable(f"Redis cannot be reached: {reason}")
        return _json({"status": "ok"})

    async def metrics_text(self, request: Request) -> Response:
        """The metrics policy's counters and the server's, in Prometheus text."""
        lines = [self.metrics.prometheus_text().rstrip("\n")]
        gauges = (
            ("runs_active", "Streamed calls running in this process.", self.runs.active),
            ("streams_open", "SSE responses following a run right now.", self.runs.followers),
        )
        for name, help_text, value in gauges:
            metric = f"kosong_server_{name}"
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge", f"{metric} {value}"]
        lines += [
            "# HELP kosong_server_rejected_requests_total Requests refused before any route.",
            "# TYPE kosong_server_rejected_requests_total counter",
        ]
        for reason in _REJECTED:
            count = self.rejected.get(reason, 0)
            lines.append(f'kosong_server_rejected_requests_total{{reason="{reason}"}} {count}')
        return Response("\n".join(lines) + "\n", media_type="text/plain; version=0.0.4")

    async def list_tools(self, request: Request) -> Response:
        """Every tool's definition."""
        return _json({"tools": [t.model_dump(mode="json") for t in self.toolset.tools]})

    async def dialects(self, request: Request) -> Response:
        """What each provider will reject or ignore in the tools' schemas (`check_tools`)."""
        report = check_tools(self.toolset.tools)
        return _json(
            {
                "dialects": report.dialects,
                "sources": {d: SOURCES[d] for d in report.dialects},
                "findings": [dataclasses.asdict(f) for f in report.findings],
            }
        )

    def _unknown_tool(self, name: str) -> Response:
        return _error(404, "TOOL_NOT_FOUND", f"Tool `{name}` not found")

    async def get_tool(self, request: Request) -> Response:
        """One tool's definition."""
        name: str = request.path_params["name"]
        tool = self.toolset.find_tool(name)
        if tool is None:
            return self._unknown_tool(name)
        return _json(tool.model_dump(mode="json"))

    async def call_tool(self, request: Request) -> Response:
        """Call a tool: the envelope, with the HTTP status of its error code."""
        name: str = request.path_params["name"]
        key = _idempotency_key(request)
        if key is None and self.queue is None:  # the plain call, here
            made = await self._call(request, name, secrets.token_hex(8))
            if isinstance(made, Response):
                return made
            call, arguments = made
            result = await self.toolset.dispatch(call, arguments)
        else:  # a run: recorded under its key, or executed by a worker
            if self.toolset.find_tool(name) is None:
                return self._unknown_tool(name)
            started = await self._start(request, name, key)
            if isinstance(started, Response):
                return started
            result = await self.runs.result(started)
        # The standard's shape; a streamed call's final event has the lossless one.
        envelope = to_envelope(result, lossless=False).dump()
        value = result.return_value
        if not value.is_error:
            return _json(envelope)
        spec = CATALOG.get(error_code(value) or "")
        status = spec.http_status if spec is not None else 500
        headers = None
        if status in (429, 503):
            wait = envelope["error"].get("retry_after")
            seconds = wait if isinstance(wait, int | float) and wait >= 0 else 1
            headers = {"Retry-After": str(max(1, round(seconds + 0.499)))}
        elif status == 401:
            headers = {"WWW-Authenticate": 'Bearer realm="tool"'}
        return _json(envelope, status, headers)

    async def _start(self, request: Request, name: str, key: str | None) -> str | Response:
        """Start the run a request asks for (or find `key`'s): its id, or the refusal."""
        made = await self._call(request, name, Runs.new_id())
        if isinstance(made, Response):
            return made
        call, arguments = made
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        try:
            run_id, _ = await self.runs.start(call, principal, arguments, key=key)
        except ShuttingDownError:
            return _error(503, "NETWORK_ERROR", "the server is shutting down", {"Retry-After": "1"})
        except StoreFullError as e:
            return _error(503, "NETWORK_ERROR", f"too many runs: {e}", {"Retry-After": "1"})
        except QueueFullError as e:
            return _error(429, "RATE_LIMITED", f"the queue is full: {e}; try again shortly",
                          {"Retry-After": "1"})  # fmt: skip
        except IdempotencyConflictError:
            return _error(
                422, "INVALID_PARAMS",
                "this Idempotency-Key was used for another call (another tool, or other "
                "arguments); a key stands for one call: use a new key for a new call",
            )  # fmt: skip
        return run_id

    async def _call(
        self, request: Request, name: str, call_id: str
    ) -> tuple[ToolCall, JsonType | Unparsed] | Response:
        """The call a request asks for, and its arguments when already parsed (a query's)."""
        arguments: JsonType | Unparsed = UNPARSED
        text: str | None = None
        if request.method == "GET":
            tool = self.toolset.find_tool(name)
            if tool is None:
                return self._unknown_tool(name)
            try:
                arguments = query_arguments(tool, request.query_params.multi_items())
            except (ValueError, RecursionError) as e:
                message = str(e) if isinstance(e, ValueError) else "nested too deeply"
                return _error(400, "INVALID_PARAMS", f"bad query arguments: {message}")
        else:
            body = await _body(request)
            try:
                text = body.decode() if body else "{}"
            except UnicodeDecodeError:
                return _error(400, "INVALID_PARAMS", "the request body is not UTF-8 text")
        trace = request.headers.get("x-trace-id")
        call = ToolCall(
            id=call_id,
            function=ToolCall.FunctionBody(name=name, arguments=text),
            extras={"trace_id": trace} if trace else None,
        )
        return call, arguments

    async def stream_tool(self, request: Request) -> Response:
        """Call a tool as a run, streaming its events; resume it with `Last-Event-ID`."""
        if request.method == "HEAD":  # HEAD runs nothing
            return _not_allowed("GET, POST")
        name: str = request.path_params["name"]
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        last = request.headers.get("last-event-id")
        if last:
            return await self._resume(last, principal, name)
        if self.toolset.find_tool(name) is None:
            return self._unknown_tool(name)
        key = _idempotency_key(request)
        run_id = await self._start(request, name, key)
        if isinstance(run_id, Response):
            return run_id
        return self._stream(run_id, START)

    async def follow_run(self, request: Request) -> Response:
        """A run's events: all of them, or those after `Last-Event-ID`; then live ones."""
        if request.method == "HEAD":  # a stream with no one to read it
            return _not_allowed("GET, DELETE")
        run_id: str = request.path_params["run_id"]
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        last = request.headers.get("last-event-id") or f"{run_id}.{START}"
        parts = split_event_id(last)
        if parts is not None and parts[0] != run_id:
            return _error(400, "INVALID_PARAMS", "Last-Event-ID belongs to another run")
        return await self._resume(last, principal, None)

    async def _resume(self, last: str, principal: str, tool: str | None) -> Response:
        """Follow a run from `last` (an event id), checked whole before anything is sent."""
        parts = split_event_id(last)
        if parts is None:
            shown = last if len(last) <= 80 else last[:80] + "..."
            return _error(400, "INVALID_PARAMS", f"{shown!r} is not an event id of this server")
        run_id, position = parts
        info = await self.runs.find(run_id, principal, tool)
        try:
            # Also what says whether the run has such an event (a position past its last
            # one, running or not, is refused here, not found out mid-stream).
            ahead = await self.store.read(run_id, position, limit=1)
        except ValueError:
            return _error(400, "INVALID_PARAMS", f"{last!r} is not an event of run {run_id}")
        if ahead is None:  # expired just now
            raise RunNotFoundError(run_id)
        if info.ended and not ahead:  # nothing after the final event: EventSource stops
            return Response(status_code=204, headers={"Content-Location": f"/runs/{run_id}"})
        return self._stream(run_id, position)

    def _stream(self, run_id: str, position: str) -> Response:
        async def events() -> AsyncIterator[ServerSentEvent]:
            # No data: sets the client's last event id (so even a drop before the first
            # event resumes this run) and the reconnection delay, and dispatches nothing.
            yield ServerSentEvent(id=f"{run_id}.{position}", retry=self.config.retry_ms, sep="\n")
            try:
                async for event in self.runs.follow(run_id, position):
                    data = Runs.wire_data(event)
                    yield ServerSentEvent(data, event=event.kind, id=event.id, sep="\n")
            except StoreUnavailableError as e:
                # The stream ends without its final event; the client resumes from the last
                # id it saw (and is answered 503 with Retry-After until the store is back).
                logger.warning("Stopped streaming run %s: %s", run_id, e)

        # sse-starlette sees the server shut down (any server: `uvicorn app` too), sets the
        # shutdown event (one for the app, watched by `_drain_on`) and waits the grace period
        # before it cuts the stream: time for the runs to drain and send their final events.
        return EventSourceResponse(
            events(),
            headers={"Content-Location": f"/runs/{run_id}"},
            ping=self.config.keepalive,
            sep="\n",
            shutdown_event=self._shutdown,
            shutdown_grace_period=self.config.grace + 5,
        )

    async def _drain_on(self, shutdown: anyio.Event) -> None:
        """Drain when the shutdown event is set (by a stream that saw the server stop)."""
        await shutdown.wait()
        await self.drain()

    async def cancel_run(self, request: Request) -> Response:
        """Cancel a run: 202 when it was running, 200 when it had already finished."""
        run_id: str = request.path_params["run_id"]
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        status = await self.runs.cancel(run_id, principal)
        return _json({"run_id": run_id, "status": status}, 202 if status == "cancelled" else 200)

    async def list_runs(self, request: Request) -> Response:
        """The caller's runs waiting for an answer: `GET /runs?state=waiting`."""
        if request.query_params.get("state") != "waiting":
            return _error(400, "INVALID_PARAMS", "list runs with ?state=waiting")
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        found = await self.runs.waiting(principal)
        return _json({"runs": [_waiting(record) for record in found]})

    async def answer_run(self, request: Request) -> Response:
        """Answer the question a run waits on: `{"approved": bool, "reason": "..."}` (202)."""
        run_id: str = request.path_params["run_id"]
        principal: str = request.scope.get(PRINCIPAL, ANONYMOUS)
        try:
            body: object = json.loads(await _body(request) or b"null")
        except (ValueError, RecursionError):
            body = None
        given = _object(body)
        approved, reason = given.get("approved"), given.get("reason", "")
        if not isinstance(approved, bool) or not isinstance(reason, str):
            return _error(
                400, "INVALID_PARAMS",
                'the answer is {"approved": true or false, "reason": "why (optional)"}',
            )  # fmt: skip
        answered = await self.runs.answer(run_id, principal, approved, reason[:2000])
        if not answered:
            return _error(409, "INVALID_PARAMS", f"run {run_id} is not waiting for an answer")
        return _json({"run_id": run_id, "status": "answered"}, 202)

    def routes(self) -> list[BaseRoute]:
        """The routes of the module doc."""
        return [  # the most frequent first: Starlette tries them in order
            Route("/tools/{name}", self.call_tool, methods=["POST"]),
            Route("/tools/{name}", self.get_tool, methods=["GET"]),
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/metrics", self.metrics_text, methods=["GET"]),
            Route("/tools", self.list_tools, methods=["GET"]),
            Route("/dialects", self.dialects, methods=["GET"]),
            Route("/tools/{name}/sse", self.stream_tool, methods=["GET", "POST"]),
            Route("/runs/{run_id}", self.follow_run, methods=["GET"]),
            Route("/runs/{run_id}", self.cancel_run, methods=["DELETE"]),
            Route("/runs", self.list_runs, methods=["GET"]),
            Route("/runs/{run_id}/input", self.answer_run, methods=["POST"]),
        ]


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:")


def _idempotency_key(request: Request) -> str | None:
    """The request's `Idempotency-Key` (None without one); a bad one is refused (400)."""
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    key = key.strip().strip('"')  # the IETF draft sends it as a quoted string
    if not 0 < len(key) <= 255 or not set(key) <= _KEY_CHARS:
        raise HTTPException(
            400, "an Idempotency-Key is 1 to 255 of A-Z a-z 0-9 - _ . : (a UUID, say)"
        )
    return key


async def _body(request: Request) -> bytes:
    """The request's body, as `request.body()` gives it, without its async generator."""
    receive = request.receive
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return body
    parts = [body]
    while message.get("more_body", False):
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
    return b"".join(parts)


def _waiting(record: RunRecord) -> dict[str, JsonType]:
    """`{"id", "tool", "arguments", "question", "since"}` of a waiting run (since: ISO 8601)."""
    try:
        arguments: JsonType = json.loads(record.arguments)
    except ValueError:
        arguments = record.arguments
    return {
        "id": record.id,
        "tool": record.tool,
        "arguments": arguments,
        "question": record.question or "",
        "since": format_epoch(record.since or 0.0),
    }


def _worker_ended(task: asyncio.Task[None]) -> None:
    """The queue's worker in this process stopped: say why, if it was not asked to."""
    if not task.cancelled() and task.exception() is not None:
        logger.error("The run queue's worker stopped: %r", task.exception())


def _pipeline(toolset: Toolset, cache_backend: Any) -> tuple[PolicyToolset, MetricsRegistry]:
    """The pipeline calls go through (as `create_app` says), and the registry `/metrics` reads."""
    if isinstance(toolset, PolicyToolset):
        found = toolset.find_policy(MetricsPolicy)
        if found is None:
            found = MetricsPolicy()
            toolset = toolset.wrap(found)
        return toolset, found.registry
    metrics = MetricsPolicy()
    if not any(tool.cacheable for tool in toolset.tools):
        return with_policies(toolset, metrics), metrics.registry
    cache = CachePolicy(cache_backend if cache_backend is not None else MemoryCache())
    return with_policies(toolset, metrics, cache), metrics.registry


def query_arguments(tool: Tool, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Query parameters as arguments: text for string parameters, JSON for the others.

    `?a=1&b=2` gives `{"a": 1, "b": 2}` when `a` and `b` are numbers, and
    `?city=Beijing` gives `{"city": "Beijing"}`; a parameter repeated, or declared an
    array, gives a list.
    """
    properties = _object(tool.parameters.get("properties"))
    grouped: dict[str, list[str]] = {}
    for key, value in items:
        grouped.setdefault(key, []).append(value)
    arguments: dict[str, Any] = {}
    for key, values in grouped.items():
        schema = _object(properties.get(key))
        is_array = schema.get("type") == "array"
        if is_array and len(values) == 1 and values[0].startswith("["):
            arguments[key] = _coerce(values[0], schema)
        elif is_array or len(values) > 1:
            arguments[key] = [_coerce(v, _object(schema.get("items"))) for v in values]
        else:
            arguments[key] = _coerce(values[0], schema)
    return arguments


def _object(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _coerce(text: str, schema: dict[str, Any]) -> Any:
    declared: object = schema.get("type")
    types = cast(list[object], declared) if isinstance(declared, list) else [declared]
    if "string" in types and not any(t in ("integer", "number", "boolean") for t in types):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def create_app(
    toolset: Toolset | Iterable[Any],
    config: ServerConfig | None = None,
    *,
    routes: Sequence[BaseRoute] = (),
    lifespans: Sequence[Lifespan] = (),
    mcp: bool = False,
) -> Starlette:
    """An ASGI app serving `toolset` (a Toolset, or a list of tools); see the module doc.

    Calls go through the `kosong.standard` pipeline: a `PolicyToolset` as it is (a metrics
    policy is put around it if it has none), any other toolset with metrics, and a result
    cache when some of its tools are `cacheable` (in Redis with `config.redis_url`).

    Args:
        toolset: What to serve.
        config: Who may call and how much, where runs are kept (default: `ServerConfig()`).
        routes: More routes or mounts (`Mount("/static", StaticFiles(...))`); every request
            to them passes the same checks (Host, Origin, cross-site, token, rate, body size).
            They come before the inspector's, so a route of yours at `/` replaces its page.
        lifespans: Context managers entered when the app starts (after the server's own
            start-up) and left when it stops, each given the app.
        mcp: Serve the same tools over MCP at `/mcp` too (`kosong.mcp.MCPToolServer`, on the
            same pipeline, behind the same checks); needs the `mcp` extra.

    The app's `state.kosong` is its `Server`. Run it with `kosong.server.serve` (or any
    ASGI server; `serve` and `serving` also drain runs gracefully on shutdown).
    """
    config = config if config is not None else ServerConfig()
    server = Server(as_toolset(toolset), config)
    if mcp:
        from kosong.mcp import MCPToolServer

        # The app's checks cover Host and Origin for every route already, with the hosts the
        # configuration allows; the SDK's own check (localhost only) would refuse those.
        # Its runs are the app's, and so is the store its resumable streams live in.
        over_mcp = MCPToolServer(
            server.toolset,
            name=config.name,
            dns_rebinding_protection=False,
            retry_interval_ms=config.retry_ms,
            runs=server.runs,
        )
        routes = [*routes, *over_mcp.routes()]
        lifespans = [*lifespans, over_mcp.lifespan]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        async with contextlib.AsyncExitStack() as stack:
            await server.startup()
            stack.push_async_callback(server.aclose)
            for enter in lifespans:
                await stack.enter_async_context(enter(app))
            yield

    rejected = server.rejected
    no_token = {"/healthz", *(public_paths() if config.inspector else ())}
    issuers = config.issuers()
    if issuers:  # RFC 9728: where a refused client finds who issues tokens
        no_token.add(METADATA_PATH)
        routes = [*routes, metadata_route(issuers, config.required_scopes, config.resource_url)]
    checks = [  # in this order; see _guard
        Middleware(HostOriginMiddleware, hosts=config.allowed_hosts,
                   origins=config.allowed_origins, rejected=rejected),
        Middleware(CrossSiteMiddleware, starts=_starts_run, origins=config.allowed_origins,
                   rejected=rejected),
        Middleware(BearerTokenMiddleware, verifier=config.token_verifier(),
                   required_scopes=config.required_scopes, exempt=no_token,
                   metadata=bool(issuers), resource_url=config.resource_url, rejected=rejected),
        *([Middleware(RateLimitMiddleware, limiter=server.limiter, exempt={"/healthz"},
                      rejected=rejected)] if server.limiter is not None else []),
        Middleware(BodySizeMiddleware, max_body=config.max_body, rejected=rejected),
    ]  # fmt: skip
    page = inspector_routes() if config.inspector else []
    app = Starlette(
        routes=[*server.routes(), *routes, *page],
        middleware=checks,
        exception_handlers={
            HTTPException: _http_error,
            RunNotFoundError: _no_run,
            StoreUnavailableError: _store_unavailable,
        },
        lifespan=lifespan,
    )
    app.state.kosong = server
    return app
