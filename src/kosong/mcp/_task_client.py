"""MCP tasks from the client's side, in both protocol versions that define them (private).

2025-11-25 (docs/mcp.md, "Tasks, and servers on the legacy transport"): `call_as_task` sends
`tools/call` with `task: {ttl}`, polls `tasks/get`, then `tasks/result` answers the result;
cancelling the caller sends `tasks/cancel`. The SDK's client checks every answer to
`tools/call` as a `CallToolResult`, so `task_transport` hands it the answer to a call sent with
`task` as an empty result holding the task under `_meta["kosong/task"]`.

2026-07-28 (the `io.modelcontextprotocol/tasks` extension, SEP-2663): `TasksClient`, an SDK
client extension, declares the extension and finishes a task handle by polling `tasks/get`
(status messages as progress), answering its input requests with the client's elicitation or
sampling handler (declined without one), and sending `tasks/cancel` when its caller is.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import AsyncGenerator, Awaitable
from typing import Any, Literal, TypeVar, cast

import anyio
import mcp_types as mcp
from anyio.abc import AsyncResource, ObjectReceiveStream, ObjectSendStream
from mcp.client import ClientSession, Transport
from mcp.client.context import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import TypeAdapter

from kosong.mcp._runs import TASKS

__all__ = ["PROGRESS", "TasksClient", "call_as_task", "takes_task", "task_transport"]

logger = logging.getLogger(__name__)

_TASK_META = "kosong/task"  # where `task_transport` hands over a `CreateTaskResult`'s task

_TTL_MS = 10 * 60 * 1000  # how long the client asks the server to keep a task (it may keep less)

PROGRESS: contextvars.ContextVar[ProgressFnT | None] = contextvars.ContextVar(
    "kosong_mcp_task_progress", default=None
)
"""Where a 2026 task's status messages go, set by the connection in the task making the call:
the SDK gives the handle's resolver (`_follow`) only a `ClaimContext`, no progress callback."""


def takes_task(capabilities: mcp.ServerCapabilities | None) -> bool:
    """Whether a 2025-11-25 server takes task-augmented `tools/call` requests."""
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    return requests is not None and requests.tools is not None and requests.tools.call is not None


# --- 2025-11-25 --------------------------------------------------------------------------------


async def call_as_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    *,
    progress: ProgressFnT | None,
    meta: dict[str, Any] | None,
) -> mcp.CallToolResult:
    """Call `name` as a task and follow it to its result (see the module doc).

    Raises:
        MCPError: the server refused the call, or a task request.
    """
    params = mcp.CallToolRequestParams(
        name=name, arguments=arguments, task=mcp.TaskMetadata(ttl=_TTL_MS), _meta=cast(Any, meta)
    )
    created = await session.send_request(
        mcp.CallToolRequest(params=params), mcp.CallToolResult, progress_callback=progress
    )
    found: object = (created.meta or {}).get(_TASK_META)
    if not isinstance(found, dict):  # the server ran it as a plain call after all
        return created
    task = mcp.Task.model_validate(found)
    said: str | None = None
    try:
        while True:
            if progress is not None and task.status_message and task.status_message != said:
                said = task.status_message  # each new status message, once
                await progress(0.0, None, said)
            if task.status != "working":
                break
            await anyio.sleep(_interval(task.poll_interval))
            request = mcp.GetTaskRequest(params=mcp.GetTaskRequestParams(task_id=task.task_id))
            task = await session.send_request(request, mcp.GetTaskResult)
        # Input needed, or the end: the result (input requests come while it waits).
        payload = mcp.GetTaskPayloadRequest(
            params=mcp.GetTaskPayloadRequestParams(task_id=task.task_id)
        )
        return await session.send_request(payload, mcp.CallToolResult)
    except anyio.get_cancelled_exc_class():
        cancel = mcp.CancelTaskRequest(params=mcp.CancelTaskRequestParams(task_id=task.task_id))
        await _cancel(task.task_id, session.send_request(cancel, mcp.CancelTaskResult))
        raise


@contextlib.asynccontextmanager
async def task_transport(inner: Transport) -> AsyncGenerator[Any]:
    """`inner`, with the answers to task-augmented calls handed over (see the module doc)."""
    async with inner as (read, write):
        calls: set[mcp.RequestId] = set()
        yield _Read(read, calls), _Write(write, calls)


class _Stream(AsyncResource):
    """One of the transport's streams, wrapped as an anyio stream (the SDK enters and closes it)."""

    def __init__(self, inner: Any, calls: set[mcp.RequestId]) -> None:
        self._inner = inner
        self._calls = calls

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Write(_Stream, ObjectSendStream[SessionMessage]):
    """The client's outgoing stream: notes the ids of `tools/call` requests sent with `task`."""

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if (
            isinstance(message, mcp.JSONRPCRequest)
            and message.method == "tools/call"
            and message.params is not None
            and "task" in message.params
        ):
            self._calls.add(message.id)
        await self._inner.send(item)


class _Read(_Stream, ObjectReceiveStream[SessionMessage | Exception]):
    """The client's incoming stream: a `CreateTaskResult` for a noted call, as a CallToolResult."""

    @property
    def last_context(self) -> Any:  # the sender's context of the last item, as the inner keeps it
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        answered = isinstance(message, mcp.JSONRPCResponse | mcp.JSONRPCError)
        if answered and message.id in self._calls:
            self._calls.discard(message.id)
            result = message.result if isinstance(message, mcp.JSONRPCResponse) else None
            if result is not None and "task" in result and "content" not in result:
                given: object = result.get("_meta")
                meta = cast(dict[str, Any], given) if isinstance(given, dict) else {}
                handed: dict[str, Any] = {
                    "content": [],
                    "_meta": {**meta, _TASK_META: result["task"]},
                }
                item.message = mcp.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=handed)
        return item


# --- 2026-07-28: the tasks extension -------------------------------------------------------------


class CreateTaskResult(mcp.Result):
    """A task handle, as a server answers a call it runs as a task (camelCase on the wire)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str = "working"
    poll_interval_ms: int | None = None


_R = TypeVar("_R", bound=mcp.Result)


class _TaskRequest(mcp.Request[dict[str, Any], str]):
    """`tasks/get`, `tasks/update` or `tasks/cancel` (Mcp-Name: the task's id)."""

    name_param = "taskId"


class _Detailed(mcp.Result):
    status: str = "working"
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TasksClient(ClientExtension):
    """Declares the tasks extension and finishes each task handle (see the module doc)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        """The one shape it claims: a `tools/call` answered with a task handle."""
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=_follow)]


async def _follow(handle: CreateTaskResult, ctx: ClaimContext) -> mcp.CallToolResult:
    """Poll the task to its end; cancel it on the server if this call is cancelled."""
    session = ctx.session
    task_id = handle.task_id
    interval = _interval(handle.poll_interval_ms)
    progress = PROGRESS.get()
    answered: set[str] = set()
    said: str | None = None

    async def send(method: str, answer: type[_R], **params: Any) -> _R:
        request = _TaskRequest(method=method, params={"taskId": task_id, **params})
        return await session.send_request(request, answer)

    try:
        while True:
            task = await send("tasks/get", _Detailed)
            if task.status == "completed" and task.result is not None:
                return mcp.CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled", "completed"):
                error = task.error or {}
                message = str(error.get("message") or task.status_message or task.status)
                return mcp.CallToolResult(
                    content=[mcp.TextContent(text=f"The task {task.status}: {message}")],
                    is_error=True,
                )
            if progress is not None and task.status_message and task.status_message != said:
                said = task.status_message  # each new status message, once
                await progress(0.0, None, said)
            if task.status == "input_required" and task.input_requests:
                responses = {
                    key: await _respond(session, key, request)
                    for key, request in task.input_requests.items()
                    if key not in answered
                }
                if responses:
                    answered.update(responses)
                    await send("tasks/update", mcp.Result, inputResponses=responses)
            interval = _interval(task.poll_interval_ms) if task.poll_interval_ms else interval
            await anyio.sleep(interval)
    except anyio.get_cancelled_exc_class():
        await _cancel(task_id, send("tasks/cancel", mcp.Result))
        raise


_INPUT_REQUEST: TypeAdapter[mcp.InputRequest] = TypeAdapter(mcp.InputRequest)


async def _cancel(task_id: str, request: Awaitable[object]) -> None:
    """Send a task's cancellation for its cancelled caller (within 5 s, shielded)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        try:
            await request
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as e:
            # Ended meanwhile, or the server is gone: nothing left to cancel there.
            logger.info("Could not cancel task %s: %s", task_id, e)


async def _respond(session: Any, key: str, request: Any) -> Any:
    """The client's handler's answer to a task's input request (one without `method`: elicit)."""
    try:
        parsed = _INPUT_REQUEST.validate_python(
            {"method": "elicitation/create", **request}
            if isinstance(request, dict) and "method" not in request
            else request
        )
        ctx = ClientRequestContext(session=session, request_id=key, meta=None)
        answer = await session.dispatch_input_request(ctx, parsed)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    except Exception as e:  # boundary: no handler, or it failed: the question is declined
        logger.info("Declining the input request %r of a task: %s", key, e)
        return {"action": "decline"}


def _interval(milliseconds: int | None) -> float:
    """A polling interval the server asked for, kept between 50 ms and 5 s."""
    if milliseconds is None:
        return 0.5
    return min(5.0, max(0.05, milliseconds / 1000))
