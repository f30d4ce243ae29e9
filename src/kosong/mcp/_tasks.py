"""MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663), the server's side.

Server: a `tools/call` whose request declares the extension (in `_meta`'s per-request client
capabilities) and whose tool may take long (`streaming = True`) or may wait for an approval
is answered at once with a task handle (`resultType: "task"`), and the call becomes a kosong
run. `tasks/get` reads the task from the run's log (working, with the last progress message;
input_required, with the approval question as an elicitation; completed, with the
`CallToolResult`; cancelled), so any process that shares the run store answers it;
`tasks/update` answers the question, `tasks/cancel` cancels the run. The runs come from the
app the MCP server is mounted in (`TaskRuns`: what `kosong.server`'s runs offer).

The client side, in both protocol versions that define tasks, is `_task_client`.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import anyio
import mcp_types as mcp
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import Field

from kosong.eventstore import RunRecord, RunStore, StoredEvent
from kosong.mcp._asking import form_request
from kosong.mcp._convert import mcp_progress, to_call_tool_result
from kosong.mcp._sessions import PRINCIPAL
from kosong.message import ToolCall
from kosong.standard import PolicyToolset, error_code
from kosong.standard.policies import ApprovalPolicy
from kosong.tooling import Tool, ToolResult
from kosong.utils.typing import JsonType

__all__ = ["IDEMPOTENCY_META", "TASKS", "TaskRuns", "Tasks"]

logger = logging.getLogger(__name__)

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""

CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
"""The `_meta` key of a 2026-era request's client capabilities."""

IDEMPOTENCY_META = "kosong/idempotency_key"
"""The `_meta` key of a call's idempotency key (kosong's)."""

_POLL_MS = 500
"""How often a client is asked to poll a task (`pollIntervalMs`)."""

_APPROVAL = "approval"
"""The key of a run's approval question among a task's `inputRequests`."""

_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "Whether the call may run"},
        "reason": {"type": "string", "description": "Why (optional)"},
    },
    "required": ["approved"],
}


class TaskRuns(Protocol):
    """What serves tasks: the runs of a kosong server (`kosong.server.create_app(mcp=True)`)."""

    @property
    def store(self) -> RunStore:
        """Where the runs' events are."""
        ...

    @property
    def queued(self) -> bool:
        """Whether runs are handed to workers (then every call is a run)."""
        ...

    async def start(
        self,
        call: ToolCall,
        principal: str,
        arguments: JsonType,
        *,
        key: str | None = None,
    ) -> tuple[str, bool]:
        """Start a run (or find the one `key` stands for)."""
        ...

    async def find(self, run_id: str, principal: str, tool: str | None = None) -> RunRecord:
        """The run, or a `LookupError`."""
        ...

    async def cancel(self, run_id: str, principal: str) -> str:
        """Cancel the run."""
        ...

    async def answer(self, run_id: str, principal: str, approved: bool, reason: str) -> bool:
        """Answer the question the run waits on."""
        ...

    async def question(self, run_id: str) -> str | None:
        """The question the run waits on, if any."""
        ...


class TaskIdParams(mcp.RequestParams):
    """The params of `tasks/get` and `tasks/cancel` (camelCase on the wire, as all of MCP's)."""

    task_id: str = Field(min_length=1, max_length=256)


class UpdateTaskParams(TaskIdParams):
    """The params of `tasks/update`."""

    input_responses: dict[str, Any] = Field(default_factory=dict[str, Any])


def declares_tasks(meta: Mapping[str, Any] | None) -> bool:
    """Whether a request's `_meta` declares the tasks extension among its capabilities."""
    if not meta:
        return False
    capabilities: object = meta.get(CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        return False
    extensions: object = cast(dict[str, Any], capabilities).get("extensions")
    return isinstance(extensions, dict) and TASKS in extensions


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who is calling: kosong's guard's principal for a request over HTTP; else anonymous."""
    scope: object = getattr(ctx.request, "scope", None)
    found = cast(dict[str, Any], scope).get(PRINCIPAL) if isinstance(scope, dict) else None
    return found if isinstance(found, str) else "anonymous"


def _task(task_id: str, created: str, updated: str) -> dict[str, Any]:
    """What every state of a task says of it."""
    return {
        "taskId": task_id,
        "createdAt": created,
        "lastUpdatedAt": updated,
        "ttlMs": None,
        "pollIntervalMs": _POLL_MS,
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Tasks:
    """The server side: tasks backed by runs (see the module doc)."""

    def __init__(self, runs: TaskRuns, toolset: PolicyToolset):
        """Serve tasks from `runs`, for the tools of `toolset` that may take long."""
        self._runs = runs
        self._toolset = toolset
        self._created: dict[str, str] = {}

    def register(self, server: Server[Any]) -> None:
        """Advertise the extension and serve its three methods on `server`."""
        server.extensions[TASKS] = {}
        server.add_request_handler("tasks/get", TaskIdParams, self._get)
        server.add_request_handler("tasks/update", UpdateTaskParams, self._update)
        server.add_request_handler("tasks/cancel", TaskIdParams, self._cancel)

    def offers(self, tool: Tool) -> bool:
        """Whether a call of `tool` may become a task: it streams, or may need an approval."""
        if tool.streaming:
            return True
        approval = self._toolset.find_policy(ApprovalPolicy)
        return approval is not None and approval.holds(tool)

    def wants_run(self, tool: Tool, meta: Mapping[str, Any] | None) -> bool:
        """Whether a call goes through the runs: a task, a key, or runs handed to workers."""
        return (
            (declares_tasks(meta) and self.offers(tool))
            or bool(meta and meta.get(IDEMPOTENCY_META))
            or self._runs.queued
        )

    async def call(
        self, ctx: ServerRequestContext[Any, Any], name: str, arguments: JsonType, tool: Tool
    ) -> dict[str, Any]:
        """Run a `tools/call` as a run: a task handle at once, or the result once it ends."""
        meta = ctx.meta
        found: object = meta.get(IDEMPOTENCY_META) if meta else None
        key = found if isinstance(found, str) else None
        principal = principal_of(ctx)
        call = ToolCall(id=secrets.token_hex(16), function=ToolCall.FunctionBody(name=name))
        run_id, _ = await self._runs.start(call, principal, arguments, key=key)
        if declares_tasks(meta) and self.offers(tool):
            return self.handle(run_id)
        progress = meta is not None and meta.get("progress_token") is not None
        try:
            return await self.result(ctx, run_id, tool.output_schema, progress)
        except anyio.get_cancelled_exc_class():
            if key is None:  # nobody can come back for it: the request's cancel is the run's
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self._runs.cancel(run_id, principal)
            raise

    def handle(self, run_id: str) -> dict[str, Any]:
        """The `CreateTaskResult` of a run that just started."""
        now = _now()
        self._created[run_id] = now
        if len(self._created) > 10_000:
            self._created.pop(next(iter(self._created)))
        return {"resultType": "task", **_task(run_id, now, now), "status": "working"}

    async def result(
        self,
        ctx: ServerRequestContext[Any, Any],
        run_id: str,
        output_schema: Mapping[str, Any] | None,
        progress: bool,
    ) -> dict[str, Any]:
        """The `CallToolResult` of a run, once it ends (a call answered without a task).

        Its progress goes to the client as it comes, when the request asked for it.
        """
        events = self._runs.store
        position = "0"
        steps = 0
        while True:
            batch = await events.read(run_id, position, wait=1.0)
            if batch is None:
                raise MCPError(mcp.INTERNAL_ERROR, f"run {run_id} is gone")
            for event in batch:
                if event.final:
                    value = ToolResult.from_json(event.data).return_value
                    return to_call_tool_result(value, output_schema)
                if progress and event.kind == "tool_progress":
                    data = json.loads(event.data)
                    steps += 1
                    done, total = mcp_progress(data, steps)
                    await ctx.session.report_progress(done, total, data.get("message") or None)
            if batch:
                position = batch[-1].id.rpartition(".")[2]

    async def _find(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> RunRecord:
        try:
            return await self._runs.find(task_id, principal_of(ctx))
        except LookupError:
            raise MCPError(mcp.INVALID_PARAMS, "Failed to retrieve task: Task not found") from None

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        info = await self._find(ctx, params.task_id)
        events = await _all_events(self._runs.store, params.task_id)
        created = self._created.get(params.task_id) or _stamp(events[0] if events else None)
        updated = _stamp(events[-1] if events else None) or created or _now()
        task = _task(params.task_id, created or _now(), updated)
        final = events[-1] if events and events[-1].final else None
        if final is not None:
            value = ToolResult.from_json(final.data).return_value
            if error_code(value) == "CANCELLED":
                return {**task, "status": "cancelled", "statusMessage": value.message}
            tool = self._toolset.find_tool(info.tool)
            result = to_call_tool_result(value, tool.output_schema if tool is not None else None)
            result.pop("resultType", None)
            return {**task, "status": "completed", "result": result}
        question = await self._runs.question(params.task_id)
        if question is not None:
            request = form_request(question, _ANSWER_SCHEMA)
            return {**task, "status": "input_required", "inputRequests": {_APPROVAL: request}}
        message = _last_progress(events)
        return {**task, "status": "working", **({"statusMessage": message} if message else {})}

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> dict[str, Any]:
        await self._find(ctx, params.task_id)
        response = params.input_responses.get(_APPROVAL)
        if isinstance(response, dict):  # other keys are no requests of ours: ignored
            approved, reason = _answer_of(response)  # pyright: ignore[reportUnknownArgumentType]
            await self._runs.answer(params.task_id, principal_of(ctx), approved, reason)
        return {}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        await self._find(ctx, params.task_id)
        await self._runs.cancel(params.task_id, principal_of(ctx))
        return {}


def _answer_of(response: dict[str, Any]) -> tuple[bool, str]:
    """An elicitation's answer to an approval question: accepted with approved true, or not."""
    content = response.get("content")
    given: dict[str, Any] = content if isinstance(content, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    reason = given.get("reason")
    text = reason if isinstance(reason, str) else ""
    if response.get("action") != "accept":
        return False, text or f"the client answered {response.get('action')!r}"
    return given.get("approved") is True, text[:2000]


async def _all_events(store: RunStore, run_id: str) -> list[StoredEvent]:
    events: list[StoredEvent] = []
    position = "0"
    for _ in range(100):  # 25,600 events at most
        batch = await store.read(run_id, position)
        if not batch:
            break
        events += batch
        position = batch[-1].id.rpartition(".")[2]
    return events


def _stamp(event: StoredEvent | None) -> str | None:
    """When an event happened, as its metadata says."""
    if event is None:
        return None
    try:
        data = json.loads(event.data)
        stamp = data["metadata"]["timestamp"]
    except (ValueError, KeyError, TypeError):
        return None
    return stamp if isinstance(stamp, str) else None


def _last_progress(events: list[StoredEvent]) -> str | None:
    for event in reversed(events):
        if event.kind == "tool_progress":
            try:
                message = json.loads(event.data).get("message")
            except (ValueError, AttributeError):
                return None
            return message if isinstance(message, str) and message else None
    return None
