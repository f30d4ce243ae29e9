"""MCP tasks (`io.modelcontextprotocol/tasks`, SEP-2663) on the runs of a kosong server.

The official client drives a task to its end with a resolver written here from the
extension's specification (github.com/modelcontextprotocol/ext-tasks,
specification/2026-07-28/tasks.md): `tasks/get` until the task ends, `tasks/update` to answer
its input requests (an approval's question, and the questions its tool asks its client:
elicitation and sampling), `tasks/cancel`. Then kosong's own `MCPToolset` follows tasks the
same way, answers their questions with its callbacks, and cancels the task when its caller is
cancelled.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar, Literal

import mcp_types as mcp
import pytest
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kosong.chat_provider.scripted import ScriptedChatProvider
from kosong.mcp import ElicitationRequest, MCPToolset
from kosong.message import ToolCall
from kosong.server import ServerConfig, create_app, serving
from kosong.standard import ElicitAnswer, current_call, report_progress, with_policies
from kosong.standard.policies import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset
from mcp import Client
from tests._waiting import until
from tests.server._tools import TOUCHED, touch

TASKS = "io.modelcontextprotocol/tasks"


class Gate:
    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.ran: list[str] = []


class SlowParams(BaseModel):
    tag: str


class Slow(CallableTool2[SlowParams]):
    """A long tool (streaming): reports progress, then waits for the test's gate."""

    name: str = "slow"
    description: str = "Wait for the gate, reporting progress."
    params: type[SlowParams] = SlowParams
    streaming = True

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self._gate = gate

    async def __call__(self, params: SlowParams) -> ToolReturnValue:
        report_progress(50, f"half way for {params.tag}")
        self._gate.started.set()
        try:
            await self._gate.open.wait()
        except asyncio.CancelledError:
            self._gate.cancelled.set()
            raise
        self._gate.ran.append(params.tag)
        return ToolOk(output=f"done {params.tag}")


class EraseParams(BaseModel):
    path: str


class Erase(CallableTool2[EraseParams]):
    name: str = "erase"
    description: str = "Erase a path (someone must approve it)."
    params: type[EraseParams] = EraseParams
    destructive_hint = True

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self._gate = gate

    async def __call__(self, params: EraseParams) -> ToolReturnValue:
        self._gate.ran.append(params.path)
        return ToolOk(output=f"erased {params.path}")


def _ask(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.ask(f"erase {request.arguments}?")


NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tool(streaming=True)
async def interview() -> str:
    """A long tool that asks its client's user, then its client's model."""
    call = current_call()
    assert call is not None
    answer = await call.elicit("Your name?", NAME)
    name = (answer.content or {}).get("name") if answer.action == "accept" else None
    line = await call.sample(f"A line for {name}.", system_prompt="Be brief.", max_tokens=20)
    return f"{answer.action} {name}: {line.extract_text()}"


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def polls() -> list[str]:
    """The task ids of the `tasks/get` requests the server got."""
    return []


def _counting_polls(app: ASGIApp, polls: list[str]) -> ASGIApp:
    """`app`, noting each `tasks/get` in `polls` (what a test waits on: the client follows)."""

    async def counted(scope: Scope, receive: Receive, send: Send) -> None:
        async def peek() -> Message:
            message = await receive()
            if b'"tasks/get"' in message.get("body", b""):
                polls.append("tasks/get")
            return message

        await app(scope, peek if scope["type"] == "http" else receive, send)

    return counted


@pytest.fixture
async def url(gate: Gate, polls: list[str]) -> AsyncIterator[str]:
    tools = with_policies(
        SimpleToolset([Slow(gate), Erase(gate), touch, interview]), ApprovalPolicy(_ask)
    )
    app = _counting_polls(create_app(tools, ServerConfig(), mcp=True), polls)
    async with serving(app) as base:
        yield f"{base}/mcp"


# --- the official client, with a resolver written from the specification ----------------------


class Handle(mcp.Result):
    """`CreateTaskResult`: `Result & Task` with `resultType: "task"`."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(default="task", alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    created_at: str = Field(alias="createdAt")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskState(mcp.Result):
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    result: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class TaskRequest(mcp.Request[dict[str, Any], str]):
    name_param = "taskId"  # the spec: Mcp-Name carries the task id


class Driver(ClientExtension):
    """Finishes a task handle: polls, answers input requests with `answer`, records all."""

    identifier = TASKS

    def __init__(
        self,
        answer: dict[str, Any] | None = None,
        *,
        cancel: bool = False,
        respond: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.answer = answer
        self.cancel = cancel
        self.respond = respond  # answers every input request, each once
        self.handles: list[Handle] = []
        self.seen: list[TaskState] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=Handle, resolve=self.resolve)]

    async def resolve(self, handle: Handle, ctx: ClaimContext) -> mcp.CallToolResult:
        self.handles.append(handle)
        get = TaskRequest(method="tasks/get", params={"taskId": handle.task_id})
        answered: set[str] = set()

        async def poll() -> mcp.CallToolResult | None:
            state = await ctx.session.send_request(get, TaskState)
            self.seen.append(state)
            if state.status == "completed" and state.result is not None:
                return mcp.CallToolResult.model_validate(state.result)
            if state.status == "cancelled":
                return mcp.CallToolResult(content=[mcp.TextContent(text="cancelled")])
            if state.status == "input_required" and self.answer is not None:
                (key,) = state.input_requests or {}
                update = TaskRequest(
                    method="tasks/update",
                    params={"taskId": handle.task_id, "inputResponses": {key: self.answer}},
                )
                await ctx.session.send_request(update, mcp.Result)
                self.answer = None
            if state.status == "input_required" and self.respond is not None:
                requests = (state.input_requests or {}).items()
                responses = {k: self.respond(r) for k, r in requests if k not in answered}
                answered.update(responses)
                params = {"taskId": handle.task_id, "inputResponses": responses}
                await ctx.session.send_request(
                    TaskRequest(method="tasks/update", params=params), mcp.Result
                )
            if self.cancel and state.status == "working":
                cancel = TaskRequest(method="tasks/cancel", params={"taskId": handle.task_id})
                await ctx.session.send_request(cancel, mcp.Result)
                self.cancel = False
            return None

        # Polled at a tenth of the interval the server asks for, to keep the test short.
        every = (handle.poll_interval_ms or 100) / 10_000
        return await until(poll, "the task to end", every=every)


async def test_the_official_client_drives_a_long_call_as_a_task_to_its_end(
    url: str, gate: Gate
) -> None:
    driver = Driver()
    async with Client(url, extensions=[driver]) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        call = asyncio.ensure_future(client.call_tool("slow", {"tag": "a"}))
        await asyncio.wait_for(gate.started.wait(), 10)
        await until(lambda: any(s.status_message == "half way for a" for s in driver.seen),
                    "the task to be working, its progress message shown")  # fmt: skip
        gate.open.set()
        result = await asyncio.wait_for(call, 10)
        unknown = None
        try:
            await client.session.send_request(
                TaskRequest(method="tasks/get", params={"taskId": "nope"}), TaskState
            )
        except MCPError as e:
            unknown = e
        plain = await client.call_tool("touch", {"tag": uuid.uuid4().hex})  # not a task
        extensions = client.server_capabilities.extensions
    (handle,) = driver.handles
    assert handle.status == "working" and handle.created_at.endswith("Z")
    assert {s.status for s in driver.seen} == {"working", "completed"}
    assert any(s.status_message == "half way for a" for s in driver.seen)
    assert result.content == [mcp.TextContent(text="done a")] and not result.is_error
    assert gate.ran == ["a"]
    assert unknown is not None and unknown.code == mcp.INVALID_PARAMS
    assert not plain.is_error
    assert "slow" in listed and extensions is not None and TASKS in extensions


async def test_an_approval_question_is_a_task_input_request_answered_by_tasks_update(
    url: str, gate: Gate
) -> None:
    driver = Driver({"action": "accept", "content": {"approved": True, "reason": "fine"}})
    async with Client(url, extensions=[driver]) as client:
        result = await asyncio.wait_for(client.call_tool("erase", {"path": "/tmp/x"}), 10)
    asked = next(s for s in driver.seen if s.status == "input_required")
    request = (asked.input_requests or {})["approval"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "erase {'path': '/tmp/x'}?"
    assert request["params"]["requestedSchema"]["required"] == ["approved"]
    assert result.content == [mcp.TextContent(text="erased /tmp/x")]
    assert gate.ran == ["/tmp/x"]


async def test_a_declined_question_denies_the_call_and_tasks_cancel_cancels_the_run(
    url: str, gate: Gate
) -> None:
    declined = Driver({"action": "decline"})
    cancelling = Driver(cancel=True)
    async with Client(url, extensions=[declined, cancelling][:1]) as client:
        denied = await asyncio.wait_for(client.call_tool("erase", {"path": "/tmp/y"}), 10)
    async with Client(url, extensions=[cancelling]) as client:
        cancelled = await asyncio.wait_for(client.call_tool("slow", {"tag": "c"}), 10)
    assert denied.is_error and "PERMISSION_DENIED" in str(denied.structured_content or denied)
    assert cancelled.content == [mcp.TextContent(text="cancelled")]
    assert cancelling.seen[-1].status == "cancelled"
    await asyncio.wait_for(gate.cancelled.wait(), 5)  # the tool itself was stopped
    assert gate.ran == []


def _answer_request(request: dict[str, Any]) -> dict[str, Any]:
    """What a client's user and model answer to an interview's input requests."""
    if request["method"] == "elicitation/create":
        return {"action": "accept", "content": {"name": "Ada"}}
    asked = request["params"]["messages"][0]["content"]["text"]
    text = {"type": "text", "text": f"a line, as asked: {asked}"}
    return {"role": "assistant", "content": text, "model": "client-model"}


async def test_a_tasks_tool_asks_its_client_and_the_answers_come_by_tasks_update(
    url: str,
) -> None:
    driver = Driver(respond=_answer_request)
    async with Client(url, extensions=[driver]) as client:
        result = await asyncio.wait_for(client.call_tool("interview", {}), 10)
    asked = [s.input_requests for s in driver.seen if s.status == "input_required"]
    methods = [request["method"] for requests in asked for request in (requests or {}).values()]
    assert methods[0] == "elicitation/create" and "sampling/createMessage" in methods
    sampling = next(r for rs in asked for r in (rs or {}).values()
                    if r["method"] == "sampling/createMessage")  # fmt: skip
    assert sampling["params"]["systemPrompt"] == "Be brief."
    assert result.content == [mcp.TextContent(text="accept Ada: a line, as asked: A line for Ada.")]


# --- kosong's own client ------------------------------------------------------------------


def _call(name: str, arguments: str, **extras: Any) -> ToolCall:
    return ToolCall(
        id=uuid.uuid4().hex,
        function=ToolCall.FunctionBody(name=name, arguments=arguments),
        extras=extras or None,
    )


async def test_mcp_toolset_follows_a_task_to_its_result_and_cancels_it_with_its_caller(
    url: str, gate: Gate, polls: list[str]
) -> None:
    async with MCPToolset({"k": url}) as toolset:
        running = asyncio.ensure_future(toolset.handle(_call("slow", '{"tag": "x"}')))
        await asyncio.wait_for(gate.started.wait(), 10)
        await until(lambda: len(polls) >= 2, "the toolset to follow the task (tasks/get)")
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await asyncio.wait_for(gate.cancelled.wait(), 10)  # tasks/cancel reached the run

        gate.started.clear()
        second = asyncio.ensure_future(toolset.handle(_call("slow", '{"tag": "y"}')))
        await asyncio.wait_for(gate.started.wait(), 10)
        gate.open.set()
        result = await asyncio.wait_for(second, 10)
    assert result.return_value.output == "done y" and gate.ran == ["y"]


async def test_mcp_toolset_answers_a_tasks_questions_with_its_callbacks(url: str) -> None:
    seen: list[ElicitationRequest] = []

    async def elicitation(request: ElicitationRequest) -> ElicitAnswer:
        seen.append(request)
        return ElicitAnswer.accept({"name": "Bo"})

    model = ScriptedChatProvider([["a line for Bo"]])
    async with MCPToolset({"k": url}, elicitation=elicitation, sampling=model) as toolset:
        result = await asyncio.wait_for(toolset.handle(_call("interview", "{}")), 10)
    assert result.return_value.output == "accept Bo: a line for Bo"
    assert [(r.message, r.schema) for r in seen] == [("Your name?", NAME)]
    assert model.requests[0].system_prompt == "Be brief."


async def test_an_idempotency_key_in_meta_runs_the_tool_once(url: str) -> None:
    tag = uuid.uuid4().hex
    async with MCPToolset({"k": url}) as toolset:
        first = await toolset.handle(_call("touch", f'{{"tag": "{tag}"}}', idempotency_key=tag))
        again = await toolset.handle(_call("touch", f'{{"tag": "{tag}"}}', idempotency_key=tag))
        other = await toolset.handle(_call("touch", '{"tag": "z"}', idempotency_key=tag))
    assert first.return_value.output == again.return_value.output == f"touched {tag}"
    assert TOUCHED.count(tag) == 1
    assert other.return_value.is_error and "another call" in other.return_value.message
