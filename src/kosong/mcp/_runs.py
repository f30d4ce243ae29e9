"""MCP calls that are runs: tasks, input requests across processes, idempotency keys.

A `tools/call` is a run of the server's `Runs` (`kosong.eventstore`) when its request declares
the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) and its tool may take long
(`streaming = True`) or wait for an approval, when it carries an idempotency key
(`_meta["kosong/idempotency_key"]`), when the runs go to workers, or when it is a 2026-07-28
request whose client answers questions (it declares elicitation or sampling). The MCP side
only reads and writes the run's record, so any process sharing the run store serves it:

- a task is answered at once with its handle (`resultType: "task"`); `tasks/get` reads it
  from the record (working, with the last progress message; input_required, with the
  approval question and the tool's questions; completed, with the `CallToolResult`;
  cancelled), `tasks/update` writes the answers, `tasks/cancel` cancels;
- another call follows the run's log (`serve`): progress and log messages go to the request
  as it asked, the result ends it. A question of its tool is asked on the request's stream
  in the handshake era; in the 2026-07-28 era it ends the round with an `input_required`
  result whose `requestState` names the run and the place in its log, and the client's
  retry, on any process, writes its answers into the record and follows on from there. A
  state is good for one retry (a later one is told to call again), and only for the
  principal, tool and arguments of the run.

The client side of tasks is `_task_client`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any, cast

import anyio
import mcp_types as mcp
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import Field

from kosong._timestamps import now_timestamp
from kosong.eventstore import START, RunRecord, Runs, StoredEvent, split_event_id
from kosong.mcp._asking import BackChannel, form_request, input_answer, input_request
from kosong.mcp._convert import mcp_progress, to_call_tool_result
from kosong.mcp._sessions import PRINCIPAL, owner_of
from kosong.message import ToolCall
from kosong.standard import PolicyToolset, canonical_json, error_code
from kosong.standard.policies import ApprovalPolicy
from kosong.tooling import Tool, ToolResult
from kosong.utils.typing import JsonType

__all__ = ["IDEMPOTENCY_META", "TASKS", "RunCalls", "error_result"]

logger = logging.getLogger(__name__)

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""

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


class TaskIdParams(mcp.RequestParams):
    """The params of `tasks/get` and `tasks/cancel` (camelCase on the wire, as all of MCP's)."""

    task_id: str = Field(min_length=1, max_length=256)


class UpdateTaskParams(TaskIdParams):
    """The params of `tasks/update`."""

    input_responses: dict[str, Any] = Field(default_factory=dict[str, Any])


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a request's client declares the tasks extension among its capabilities."""
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and TASKS in (capabilities.extensions or {})


def principal_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who is calling: kosong's guard's principal, the SDK's authenticated user, or anonymous."""
    scope: object = getattr(ctx.request, "scope", None)
    if not isinstance(scope, dict):
        return "anonymous"
    found: object = cast(dict[str, Any], scope).get(PRINCIPAL)
    if isinstance(found, str):
        return found
    owner = owner_of(cast(dict[str, Any], scope))
    return "anonymous" if owner is None else repr(owner)


def error_result(text: str) -> dict[str, Any]:
    """A `CallToolResult` saying what went wrong (`isError`), in its wire form."""
    return {"content": [{"type": "text", "text": text}], "isError": True, "resultType": "complete"}


def _task(task_id: str, created: str, updated: str) -> dict[str, Any]:
    """What every state of a task says of it."""
    return {
        "taskId": task_id,
        "createdAt": created,
        "lastUpdatedAt": updated,
        "ttlMs": None,
        "pollIntervalMs": _POLL_MS,
    }


class RunCalls:
    """The MCP calls that are runs of `runs` (see the module doc)."""

    def __init__(
        self, runs: Runs, toolset: PolicyToolset, *, tasks: bool, input_timeout: float
    ) -> None:
        """Serve calls as runs of `runs`; `tasks`: serve the tasks extension too.

        A question of a call's tool waits `input_timeout` seconds for its client's answer.
        """
        self._runs = runs
        self._toolset = toolset
        self.tasks = tasks
        self._input_timeout = input_timeout
        self._created: dict[str, str] = {}

    def register(self, server: Server[Any]) -> None:
        """Advertise the tasks extension and serve its three methods on `server`."""
        server.extensions[TASKS] = {}
        server.add_request_handler("tasks/get", TaskIdParams, self._get)
        server.add_request_handler("tasks/update", UpdateTaskParams, self._update)
        server.add_request_handler("tasks/cancel", TaskIdParams, self._cancel)

    def offers(self, tool: Tool) -> bool:
        """Whether a call of `tool` may become a task: it streams, or may need an approval."""
        if not self.tasks:
            return False
        if tool.streaming:
            return True
        approval = self._toolset.find_policy(ApprovalPolicy)
        return approval is not None and approval.holds(tool)

    def wants_run(
        self, tool: Tool, ctx: ServerRequestContext[Any, Any], channel: BackChannel
    ) -> bool:
        """Whether a call is a run: a task, a key, runs on workers, or a 2026 client that asks."""
        meta = ctx.meta
        modern = ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
        return (
            (declares_tasks(ctx) and self.offers(tool))
            or bool(meta and meta.get(IDEMPOTENCY_META))
            or self._runs.queued
            or (modern and channel.answers())
        )

    async def call(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mcp.CallToolRequestParams,
        tool: Tool,
        channel: BackChannel,
    ) -> dict[str, Any]:
        """Run a `tools/call` as a run: a task handle at once, or what `serve` answers."""
        meta = ctx.meta
        found: object = meta.get(IDEMPOTENCY_META) if meta else None
        key = found if isinstance(found, str) else None
        task = declares_tasks(ctx) and self.offers(tool)
        asks = self._input_timeout if task or channel.answers() else None
        call = ToolCall(id=Runs.new_id(), function=ToolCall.FunctionBody(name=params.name))
        arguments: JsonType = params.arguments or {}
        principal = principal_of(ctx)
        run_id, _ = await self._runs.start(call, principal, arguments, key=key, asks=asks)
        if task:
            now = now_timestamp()
            self._created[run_id] = now
            if len(self._created) > 10_000:
                self._created.pop(next(iter(self._created)))
            return {"resultType": "task", **_task(run_id, now, now), "status": "working"}
        record = await self._runs.find(run_id, principal)
        return await self.serve(ctx, record, START, tool, channel)

    async def resume(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mcp.CallToolRequestParams,
        tool: Tool,
        channel: BackChannel,
    ) -> dict[str, Any]:
        """A 2026-era retry with the answers to a round's `input_required` (see the module doc)."""
        state = split_event_id(params.request_state or "")
        if state is None:
            return _call_again(params.name)
        run_id, position = state
        try:  # only the run's principal may retry its call, with the same tool
            record = await self._runs.find(run_id, principal_of(ctx), params.name)
            after = await self._runs.store.read(run_id, position)
        except (LookupError, ValueError):
            return _call_again(params.name)
        if after is None or any(e.kind == "input_response" for e in after):  # answered once
            return _call_again(params.name)
        if not _same_arguments(record, params.arguments or {}):
            return _call_again(params.name)
        asked = await self._runs.questions(run_id)
        answered = False
        for key, response in (params.input_responses or {}).items():
            if key in asked:
                answer = input_answer(asked[key], response)
                answered = await self._runs.respond(run_id, key, answer) or answered
        return await self.serve(ctx, record, position, tool, channel, ask=not answered)

    async def serve(
        self,
        ctx: ServerRequestContext[Any, Any],
        run: RunRecord,
        position: str,
        tool: Tool,
        channel: BackChannel,
        *,
        ask: bool = False,
    ) -> dict[str, Any]:
        """The answer to a call that is a run, following its log from `position`.

        Its `CallToolResult` once it ends, or, in the 2026 era, an `input_required` result
        when its tool asks what this client answers (looked at on each question and answer
        in the log, and first if `ask`). Cancelled (the client left), it cancels the run,
        unless it has an idempotency key (its client may come back for it).
        """
        modern = ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS
        steps = 0
        try:
            if ask and (required := await self._ask(run.id, position, channel, modern)):
                return required
            async with contextlib.aclosing(self._runs.follow(run.id, position)) as events:
                async for event in events:
                    if event.final:
                        value = ToolResult.from_json(event.data).return_value
                        return to_call_tool_result(value, tool.output_schema)
                    position = event.id.rpartition(".")[2]
                    data = json.loads(event.data)
                    if event.kind == "tool_progress":  # the SDK drops it unless the request asked
                        steps += 1
                        done, total = mcp_progress(data, steps)
                        await ctx.session.report_progress(done, total, data.get("message") or None)
                    elif event.kind == "tool_log":
                        await channel.log(data["level"], data["data"], data["logger"])
                    elif event.kind in ("input_request", "input_response") and (
                        required := await self._ask(run.id, position, channel, modern)
                    ):
                        return required
            raise MCPError(mcp.INTERNAL_ERROR, f"run {run.id} is gone")
        except anyio.get_cancelled_exc_class():
            if run.key is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self._runs.cancel(run.id, run.principal)
            raise

    async def _ask(
        self, run_id: str, position: str, channel: BackChannel, modern: bool
    ) -> dict[str, Any] | None:
        """Ask the run's open questions here; an `input_required` result for a 2026 client's."""
        ours: dict[str, Any] = {}
        for key, question in (await self._runs.questions(run_id)).items():
            try:
                if modern and channel.takes(question):
                    ours[key] = input_request(question)
                    continue
                answer = await channel.answer(question)  # the handshake's way, or a refusal
            except ValueError as e:  # a sampling request MCP's sampling cannot carry
                answer = {"error": str(e)}
            await self._runs.respond(run_id, key, answer)
        if not ours:
            return None
        state = f"{run_id}.{position}"
        return {"resultType": "input_required", "inputRequests": ours, "requestState": state}

    # --- the tasks extension's methods ---------------------------------------------------------

    async def _find(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> RunRecord:
        try:
            return await self._runs.find(task_id, principal_of(ctx))
        except LookupError:
            raise MCPError(mcp.INVALID_PARAMS, "Failed to retrieve task: Task not found") from None

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        record = await self._find(ctx, params.task_id)
        events = await self._runs.store.replay(params.task_id) or []
        created = self._created.get(params.task_id) or _stamp(events[0] if events else None)
        updated = _stamp(events[-1] if events else None) or created or now_timestamp()
        task = _task(params.task_id, created or now_timestamp(), updated)
        final = events[-1] if events and events[-1].final else None
        if final is not None:
            value = ToolResult.from_json(final.data).return_value
            if error_code(value) == "CANCELLED":
                return {**task, "status": "cancelled", "statusMessage": value.message}
            tool = self._toolset.find_tool(record.tool)
            result = to_call_tool_result(value, tool.output_schema if tool is not None else None)
            result.pop("resultType", None)
            return {**task, "status": "completed", "result": result}
        requests: dict[str, Any] = {}
        if record.question is not None:
            requests[_APPROVAL] = form_request(record.question, _ANSWER_SCHEMA)
        for key, question in (await self._runs.questions(params.task_id)).items():
            try:
                requests[key] = input_request(question)
            except ValueError as e:  # a sampling request MCP's sampling cannot carry
                await self._runs.respond(params.task_id, key, {"error": str(e)})
        if requests:
            return {**task, "status": "input_required", "inputRequests": requests}
        message = _last_progress(events)
        return {**task, "status": "working", **({"statusMessage": message} if message else {})}

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> dict[str, Any]:
        record = await self._find(ctx, params.task_id)
        asked = await self._runs.questions(params.task_id)
        for key, response in params.input_responses.items():  # keys of no question: ignored
            if key == _APPROVAL and isinstance(response, dict):
                approved, reason = _answer_of(cast(dict[str, Any], response))
                await self._runs.answer(params.task_id, record.principal, approved, reason)
            elif key in asked:
                await self._runs.respond(params.task_id, key, input_answer(asked[key], response))
        return {}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        record = await self._find(ctx, params.task_id)
        await self._runs.cancel(params.task_id, record.principal)
        return {}


def _same_arguments(record: RunRecord, arguments: JsonType) -> bool:
    """Whether a retry's arguments are those of the run's call."""
    try:
        stored: object = json.loads(record.arguments)
    except ValueError:
        return False
    return canonical_json(cast(JsonType, stored)) == canonical_json(arguments)


def _call_again(name: str) -> dict[str, Any]:
    return error_result(
        f"The answers for `{name}` came after the call stopped waiting for them, or for a "
        "call this server does not know: call the tool again"
    )


def _answer_of(response: dict[str, Any]) -> tuple[bool, str]:
    """An elicitation's answer to an approval question: accepted with approved true, or not."""
    content = response.get("content")
    given: dict[str, Any] = content if isinstance(content, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    reason = given.get("reason")
    text = reason if isinstance(reason, str) else ""
    if response.get("action") != "accept":
        return False, text or f"the client answered {response.get('action')!r}"
    return given.get("approved") is True, text[:2000]


def _stamp(event: StoredEvent | None) -> str | None:
    """When an event happened, as its metadata says."""
    try:
        stamp: object = json.loads(event.data)["metadata"]["timestamp"] if event else None
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
