"""Deferred calls: an agent run that stops for a person or for its caller, and resumes later.

A call is deferred instead of run when an `ApprovalPolicy` hook answers
`ApprovalDecision.defer(question)`, or when its tool is `external` (the caller runs it): the
toolset answers it with a `ToolDeferredError`. `agent_loop` then finishes the step's other
calls and stops, handing back each waiting call as a `DeferredCall` and the run as an
`AgentState`, plain JSON (`dump()` / `load()`) to keep anywhere. Later, in any process,
`agent_loop(..., resume=state, answers={call_id: answer})` completes that step (an approved
call runs, with the idempotency key the state gave it; a denied one gets a PERMISSION_DENIED
result; an external one gets the caller's own result) and goes on as if it had never stopped.

The answers themselves (`Approve`, `Deny`) are in `kosong._answers`, below the policies.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from kosong._answers import Answer, Approve, Deny, answers_scope
from kosong._step import StepResult
from kosong.chat_provider import TokenUsage
from kosong.message import Message, ToolCall
from kosong.tooling import ToolError, ToolResult, ToolReturnValue, Toolset
from kosong.tooling.error import ToolDeferredError, ToolPermissionDeniedError

__all__ = [
    "AgentState",
    "DeferredCall",
    "check_answers",
    "pause",
    "resume_calls",
    "waiting_keys",
]

logger = logging.getLogger("kosong.step")


@dataclass(frozen=True, slots=True)
class DeferredCall:
    """A call the run waits on, as `agent_loop` hands it back."""

    call_id: str
    """The call's id: the key of its answer in `answers`."""
    tool: str
    """The tool's name."""
    arguments: Any
    """The call's arguments, parsed (valid for the tool)."""
    question: str
    """What to ask (an approval's question; empty for an external tool)."""
    kind: Literal["approval", "external"]
    """Whose answer it waits for: a person's (`Approve` / `Deny`), or the caller's own result
    of running the external tool."""


class _Waiting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call: ToolCall
    kind: Literal["approval", "external"]
    question: str
    arguments: Any
    key: str
    """The idempotency key the call runs with once approved, whichever process resumes it."""


class AgentState(BaseModel):
    """An `agent_loop` run stopped on deferred calls: everything needed to resume it.

    `dump()` writes it as JSON text; `AgentState.load(text)` reads it back, in any process.
    It holds the run's new messages so far, the waiting step (the model's answer, the results
    of its calls that did not wait, and an idempotency key for each that did), and the loop's
    counters; the history the run started from is not in it (give it again to resume).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    """The format's version."""
    history_length: int
    """How many messages the history had (resuming checks it gets as many again)."""
    messages: list[Message]
    """The messages of the steps before the waiting one."""
    step: int
    """The waiting step's number."""
    answer: Message
    """The model's answer in that step, with its tool calls."""
    step_id: str | None = None
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    results: dict[str, Any]
    """The results of its calls that did not wait, by call id (`ToolResult.to_json`'s)."""
    waiting: list[_Waiting]
    failures: dict[str, int]
    """Invalid-argument counts so far, by tool (the retry budgets)."""
    tokens: int
    """Tokens used by the steps before the waiting one."""
    output_failures: int = 0
    """With `output_type`: how many final answers failed to validate so far."""

    def dump(self) -> str:
        """The state as JSON text."""
        return self.model_dump_json()

    @classmethod
    def load(cls, text: str | bytes) -> AgentState:
        """Read a state `dump()` wrote.

        Raises:
            ValueError: `text` is not a state (says what is wrong).
        """
        try:
            return cls.model_validate_json(text)
        except ValidationError as e:
            raise ValueError(f"not an AgentState dump: {e}") from None

    @property
    def deferred(self) -> list[DeferredCall]:
        """The calls the run waits on, in call order."""
        return [
            DeferredCall(w.call.id, w.call.function.name, w.arguments, w.question, w.kind)
            for w in self.waiting
        ]


def pause(
    history: int,
    messages: list[Message],
    number: int,
    step: StepResult,
    results: list[ToolResult],
    failures: Mapping[str, int],
    tokens: int,
    keys: Mapping[str, str],
    output_failures: int = 0,
) -> AgentState | None:
    """The state of step `number` (a `StepResult`) if some of its calls were deferred.

    `tokens`: used by the steps before it; `keys`: idempotency keys already given (a call
    deferred again keeps its own); `output_failures`: final answers that failed to validate.
    """
    waiting: list[_Waiting] = []
    finished: dict[str, Any] = {}
    for result in results:
        value = result.return_value
        if not isinstance(value, ToolDeferredError):
            finished[result.tool_call_id] = json.loads(result.to_json())
            continue
        call = next(c for c in step.tool_calls if c.id == result.tool_call_id)
        key = keys.get(call.id) or f"kosong-deferred-{secrets.token_hex(16)}"
        waiting.append(_Waiting(call=call, kind=value.kind, question=value.question,
                                arguments=_arguments(call), key=key))  # fmt: skip
    if not waiting:
        return None
    return AgentState(
        history_length=history,
        messages=messages,
        step=number,
        answer=step.message,
        step_id=step.id,
        usage=step.usage,
        finish_reason=step.finish_reason,
        results=finished,
        waiting=waiting,
        failures=dict(failures),
        tokens=tokens,
        output_failures=output_failures,
    )


def _arguments(call: ToolCall) -> Any:
    text = call.function.arguments or "{}"
    try:
        return json.loads(text)
    except ValueError:  # a toolset only defers valid calls; keep the text if it is not JSON
        return text


def check_answers(state: AgentState, answers: Mapping[str, Answer], history: int) -> None:
    """Raise ValueError, before anything is sent, unless `answers` answer exactly the calls."""
    if history != state.history_length:
        raise ValueError(
            f"resume with the history the run started from: it had {state.history_length} "
            f"messages, this one has {history} (the run's own messages are in the state)"
        )
    wanted = {w.call.id: w for w in state.waiting}
    unknown = sorted(set(answers) - set(wanted))
    if unknown:
        raise ValueError(
            f"answers name calls the run does not wait on: {json.dumps(unknown)}; it waits on "
            f"{json.dumps(sorted(wanted))}"
        )
    for call_id, waiting in wanted.items():
        answer = cast(object, answers.get(call_id))  # whatever the caller passed
        shown = f"{json.dumps(call_id)} ({waiting.call.function.name}, {waiting.kind})"
        if answer is None:
            fix = (
                "kosong.Approve() or kosong.Deny(reason)"
                if waiting.kind == "approval"
                else "the ToolReturnValue its caller got, e.g. ToolOk(output=...)"
            )
            raise ValueError(f"no answer for the deferred call {shown}: give it {fix}")
        if waiting.kind == "approval" and not isinstance(answer, Approve | Deny):
            raise ValueError(
                f"the deferred call {shown} waits for an approval: answer kosong.Approve() or "
                f"kosong.Deny(reason), not {type(answer).__name__}"
            )
        if waiting.kind == "external" and isinstance(answer, Approve):
            raise ValueError(
                f"the deferred call {shown} is run by its caller: answer with the "
                "ToolReturnValue it got (or kosong.Deny(reason)), not kosong.Approve()"
            )
        if not isinstance(answer, Approve | Deny | ToolReturnValue):
            raise ValueError(
                f"the answer for {shown} is a {type(answer).__name__}; answer kosong.Approve(), "
                "kosong.Deny(reason) or a ToolReturnValue"
            )


async def resume_calls(
    state: AgentState,
    answers: Mapping[str, Answer],
    toolset: Toolset,
    on_result: Callable[[ToolResult], None] | None = None,
) -> list[ToolResult]:
    """The results of the waiting step's calls, in call order, the deferred ones answered.

    An approved call runs through `toolset` (with its idempotency key, the approval in
    scope); a denied one is PERMISSION_DENIED; an external one gets its answer as result.
    `on_result` sees each answered call's result, as `step`'s `on_tool_result` would.
    """
    scoped = {k: a for k, a in answers.items() if isinstance(a, Approve | Deny)}
    running: dict[str, asyncio.Future[ToolResult] | ToolResult] = {}
    with answers_scope(scoped):
        for waiting in state.waiting:
            call, answer = waiting.call, answers[waiting.call.id]
            if isinstance(answer, Deny):
                value = ToolPermissionDeniedError(call.function.name, answer.reason)
                running[call.id] = ToolResult(call.id, value)
            elif isinstance(answer, ToolReturnValue):
                running[call.id] = ToolResult(call.id, answer)
            else:
                extras = {**(call.extras or {}), "idempotency_key": waiting.key}
                running[call.id] = toolset.handle(call.model_copy(update={"extras": extras}))
    results: list[ToolResult] = []
    try:
        for call in state.answer.tool_calls or []:
            finished = state.results.get(call.id)
            outcome = running.get(call.id)
            if finished is not None:
                results.append(ToolResult.from_json(json.dumps(finished)))
            elif outcome is None:  # a state edited by hand
                results.append(ToolResult(call.id, _lost(call)))
            else:
                result = outcome if isinstance(outcome, ToolResult) else await outcome
                results.append(result)
                if on_result is not None:
                    try:
                        on_result(result)
                    except Exception:  # a failing callback must not break the step (as in step)
                        logger.exception("on_tool_result raised")
    finally:  # cancelled: no approved call keeps running behind the caller's back
        pending = [f for f in running.values() if isinstance(f, asyncio.Future) and not f.done()]
        for future in pending:
            future.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    return results


def _lost(call: ToolCall) -> ToolReturnValue:
    """A call of the step the state has no trace of (a state edited by hand)."""
    return ToolError(message=f"the result of call {call.id!r} was not kept", brief="Lost")


def waiting_keys(state: AgentState) -> dict[str, str]:
    """The idempotency keys of the calls the state waits on, by call id."""
    return {w.call.id: w.key for w in state.waiting}
