"""ApprovalPolicy: destructive tools run only when the hook approves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kosong.standard import error_code, to_envelope, with_policies
from kosong.standard.policies import (
    ApprovalDecision,
    ApprovalInbox,
    ApprovalPolicy,
    ApprovalRequest,
    DebugPolicy,
    inbox_scope,
)
from kosong.tooling import ArgumentLimits, Tool, ToolOk, ToolResult
from kosong.tooling.error import ToolPermissionDeniedError
from kosong.tooling.simple import SimpleToolset
from tests.standard._std_tools import Scripted, make_call, toolset


def delete_file(**hints: Any) -> Scripted:
    return Scripted(lambda n: ToolOk(output="deleted"), name="delete_file", **hints)


async def run(tool: Scripted, hook: Any, **policy: Any) -> ToolResult:
    pipeline = with_policies(toolset(tool), DebugPolicy(), ApprovalPolicy(hook, **policy))
    return await asyncio.wait_for(
        pipeline.handle(make_call("delete_file", {"path": "/tmp/x"}, trace_id="trace_t")), 5
    )


async def test_an_approved_destructive_call_runs() -> None:
    requests: list[ApprovalRequest] = []

    def hook(request: ApprovalRequest) -> ApprovalDecision:
        requests.append(request)
        return ApprovalDecision.approve("the user said yes")

    tool = delete_file(destructive_hint=True)
    result = await run(tool, hook)
    assert result.return_value.output == "deleted" and tool.calls == 1
    (request,) = requests
    assert request.tool.name == "delete_file"
    assert request.arguments == {"path": "/tmp/x"}
    assert request.trace_id == "trace_t"
    metadata = to_envelope(result).dump()
    assert "approval_ms" in metadata["metadata"]["performance"]
    assert metadata["debug_info"]["approval"] == {"approved": True, "reason": "the user said yes"}


async def test_a_denied_call_gets_permission_denied_with_the_reason() -> None:
    tool = delete_file(destructive_hint=True)
    result = await run(tool, lambda request: ApprovalDecision.deny("not in the sandbox"))
    assert isinstance(result.return_value, ToolPermissionDeniedError)
    assert error_code(result.return_value) == "PERMISSION_DENIED"
    assert "not in the sandbox" in result.return_value.message
    assert to_envelope(result).dump()["error"]["reason"] == "not in the sandbox"
    assert tool.calls == 0


async def test_async_hooks_and_plain_bools_are_accepted() -> None:
    approved = asyncio.Event()

    async def ask(request: ApprovalRequest) -> bool:
        approved.set()
        return False

    tool = delete_file(destructive_hint=True)
    result = await run(tool, ask)
    assert approved.is_set() and tool.calls == 0
    assert "the call was not approved" in result.return_value.message
    assert (
        await run(delete_file(destructive_hint=True), lambda r: True)
    ).return_value.output == "deleted"


async def test_a_failing_hook_approves_nothing() -> None:
    def hook(request: ApprovalRequest) -> bool:
        raise ConnectionError("approval service down")

    tool = delete_file(destructive_hint=True)
    result = await run(tool, hook)
    assert error_code(result.return_value) == "PERMISSION_DENIED"
    assert "ConnectionError: approval service down" in result.return_value.message
    assert tool.calls == 0


async def test_tools_that_are_not_destructive_skip_the_hook() -> None:
    asked: list[str] = []
    for hints in ({"read_only_hint": True}, {"destructive_hint": False}, {}):
        tool = delete_file(**hints)
        result = await run(tool, lambda r: asked.append(r.tool.name) or False)
        assert result.return_value.output == "deleted"
    assert asked == []


async def test_unannotated_tools_can_be_held_as_mcp_would() -> None:
    tool = delete_file()
    result = await run(tool, lambda r: False, unannotated=True)
    assert error_code(result.return_value) == "PERMISSION_DENIED" and tool.calls == 0
    read_only = delete_file(read_only_hint=True)
    assert not (await run(read_only, lambda r: False, unannotated=True)).return_value.is_error


async def test_a_custom_rule_decides_which_tools_need_approval() -> None:
    tool = delete_file()
    result = await run(tool, lambda r: False, needs_approval=lambda t: t.name.startswith("delete_"))
    assert error_code(result.return_value) == "PERMISSION_DENIED"


async def test_a_custom_rule_is_asked_once_per_call() -> None:
    asked: list[str] = []

    def needs(tool: Tool) -> bool:
        asked.append(tool.name)
        return tool.name == "delete_file"

    reader = Scripted(lambda n: ToolOk(output="read"), name="read_file")
    pipeline = with_policies(
        toolset(delete_file(), reader), ApprovalPolicy(lambda r: True, needs_approval=needs)
    )
    for name in ("delete_file", "read_file"):
        assert not (await pipeline.handle(make_call(name, {}))).return_value.is_error
    assert asked == ["delete_file", "read_file"]


async def test_approval_can_wait_for_a_person_while_other_calls_proceed() -> None:
    decision: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    asked = asyncio.Event()

    async def hook(request: ApprovalRequest) -> bool:
        asked.set()
        return await decision

    destructive = delete_file(destructive_hint=True)
    reader = Scripted(lambda n: ToolOk(output="read"), name="read_file", read_only_hint=True)
    pipeline = with_policies(toolset(destructive, reader), ApprovalPolicy(hook))
    waiting = pipeline.handle(make_call("delete_file", {}))
    async with asyncio.timeout(5):
        await asked.wait()
        assert (await pipeline.handle(make_call("read_file", {}))).return_value.output == "read"
        decision.set_result(True)
        assert (await waiting).return_value.output == "deleted"


@pytest.mark.parametrize(
    "answer",
    [
        "deny",
        "approve",
        "yes",
        {"approved": False},
        {"approved": True},
        None,
        1,
        0,
        [],
        ApprovalDecision(approved="yes"),  # type: ignore[arg-type]  # truthy, not True
        ApprovalDecision(approved=1),  # type: ignore[arg-type]
    ],
)
async def test_approval_fails_closed_on_any_answer_but_the_documented_approval(
    answer: Any,
) -> None:
    tool = delete_file(destructive_hint=True)
    result = await run(tool, lambda request: answer)
    assert error_code(result.return_value) == "PERMISSION_DENIED", answer
    assert tool.calls == 0
    if not isinstance(answer, ApprovalDecision):
        assert "neither an ApprovalDecision nor a bool" in result.return_value.message


async def test_an_awaited_answer_that_is_not_an_approval_denies_too() -> None:
    async def hook(request: ApprovalRequest) -> Any:
        return "approved"

    tool = delete_file(destructive_hint=True)
    assert error_code((await run(tool, hook)).return_value) == "PERMISSION_DENIED"
    assert tool.calls == 0


async def test_a_failing_needs_approval_rule_asks_the_hook() -> None:
    def rule(tool: Tool) -> bool:
        raise RuntimeError("rule broken")

    asked: list[str] = []
    tool = delete_file(read_only_hint=True)
    result = await run(tool, lambda r: asked.append(r.tool.name) or False, needs_approval=rule)
    assert asked == ["delete_file"] and error_code(result.return_value) == "PERMISSION_DENIED"


async def test_the_hook_sees_the_arguments_the_tool_runs_with_past_the_default_limits() -> None:
    seen: list[Any] = []
    tool = delete_file(destructive_hint=True)
    big = "x" * (ArgumentLimits().max_length + 100)
    pipeline = with_policies(
        SimpleToolset([tool], limits=ArgumentLimits(max_length=10_000_000)),
        ApprovalPolicy(lambda request: seen.append(request.arguments) or True),
    )
    result = await pipeline.handle(make_call("delete_file", {"path": big}))
    assert result.return_value.output == "deleted"
    assert seen == [{"path": big}] and tool.arguments == [{"path": big}]


async def test_the_hook_is_not_asked_about_arguments_the_toolset_refuses() -> None:
    asked: list[Any] = []
    tool = delete_file(destructive_hint=True)
    pipeline = with_policies(toolset(tool), ApprovalPolicy(lambda r: asked.append(r) or True))
    result = await pipeline.handle(make_call("delete_file", '{"path": "a", "path": "b"}'))
    assert error_code(result.return_value) == "INVALID_PARAMS"
    assert asked == [] and tool.calls == 0


class _Inbox(ApprovalInbox):
    """An inbox answering each question with the decision given to it (or never)."""

    def __init__(self, answer: ApprovalDecision | None = None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, float | None]] = []

    async def ask(
        self, request: ApprovalRequest, question: str, within: float | None
    ) -> ApprovalDecision | None:
        self.asked.append((question, within))
        if self.answer is None:
            await asyncio.sleep(within or 0)
        return self.answer


def _asking(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.ask(f"delete {request.arguments}?")


async def test_a_question_goes_to_the_inbox_and_its_answer_decides() -> None:
    inbox = _Inbox(ApprovalDecision.approve("the admin said yes"))
    tool = delete_file(destructive_hint=True)
    result = await run(tool, _asking, inbox=inbox, ask_timeout=30)
    assert result.return_value.output == "deleted" and tool.calls == 1
    assert inbox.asked == [("delete {'path': '/tmp/x'}?", 30)]
    denied = _Inbox(ApprovalDecision.deny("not today"))
    other = delete_file(destructive_hint=True)
    refused = await run(other, _asking, inbox=denied)
    assert isinstance(refused.return_value, ToolPermissionDeniedError) and other.calls == 0
    assert "not today" in refused.return_value.message


async def test_an_unanswered_question_is_denied_after_ask_timeout() -> None:
    tool = delete_file(destructive_hint=True)
    result = await run(tool, _asking, inbox=_Inbox(None), ask_timeout=0.05)
    assert isinstance(result.return_value, ToolPermissionDeniedError) and tool.calls == 0
    assert "nobody answered" in result.return_value.message
    assert "0.05 seconds" in result.return_value.message


async def test_a_question_with_no_inbox_is_denied_and_the_scope_supplies_one() -> None:
    tool = delete_file(destructive_hint=True)
    alone = await run(tool, _asking)
    assert isinstance(alone.return_value, ToolPermissionDeniedError) and tool.calls == 0
    assert "nobody can answer here" in alone.return_value.message
    with inbox_scope(_Inbox(ApprovalDecision.approve())):
        scoped = await run(tool, _asking)
    assert scoped.return_value.output == "deleted" and tool.calls == 1


def test_a_question_must_say_something_and_ask_timeout_be_positive() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        ApprovalDecision.ask("  ")
    with pytest.raises(ValueError, match="ask_timeout"):
        ApprovalPolicy(_asking, ask_timeout=0)
    assert ApprovalDecision.ask("ok?").approved is False
