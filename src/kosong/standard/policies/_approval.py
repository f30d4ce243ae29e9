"""Approval: destructive tools run only once a pluggable hook approves the call.

The hook gets an `ApprovalRequest` (the tool, the call, its arguments exactly as the tool will
get them, the trace id) and answers with an `ApprovalDecision` or a bool, directly or awaited.
Approval fails closed: only `True` or an `ApprovalDecision` whose `approved` is `True` lets the
call run. A denial, any other answer (a string such as "deny", a dict, None...) or a hook that
raises gives a PERMISSION_DENIED error carrying the reason: the tool never runs. A call whose
arguments the toolset refuses is not shown to the hook: it is refused anyway. Which tools
need approval: those whose `destructive_hint` is true (and, with `unannotated=True`, those that
declare neither `destructive_hint` nor `read_only_hint`, as MCP's defaults would have it), or
whatever `needs_approval` says.

A hook may also answer that someone else must decide, later. `ApprovalDecision.defer(question)`
defers the call: it does not run, and its result is a `ToolDeferredError` carrying the
question, which its caller answers when it can: `agent_loop` stops and returns it as a
`kosong.DeferredCall` (resumed with `answers={call_id: Approve() or Deny(reason)}`), a server
keeps the run waiting, listed and answered from any of its processes; anywhere else nobody
can answer, and the error is the denial it is coded as. `ApprovalDecision.ask(question)` asks
an `ApprovalInbox` (the policy's own, or the one in scope: `inbox_scope`) and waits for the
answer, at most `ask_timeout` seconds, after which the call is denied; with no inbox, it
defers like `defer`, its `ask_timeout` going along (a server denies the call once it passed).
A resumed call finds its answer in scope and the hook is not asked again.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass

from kosong._answers import Approve, answer_in_scope
from kosong._guard import Failed, await_guarded, call_guarded
from kosong._seconds import optional_seconds
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_destructive
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import Tool, ToolResult
from kosong.tooling.error import ToolDeferredError, ToolPermissionDeniedError, describe_exception
from kosong.utils.typing import JsonType

__all__ = [
    "ApprovalDecision",
    "ApprovalHook",
    "ApprovalInbox",
    "ApprovalPolicy",
    "ApprovalRequest",
    "inbox_scope",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for approval."""

    tool: Tool
    """The tool's definition (its hints, title, description)."""
    tool_call: ToolCall
    """The call."""
    arguments: JsonType
    """The parsed arguments, exactly as the tool will get them."""
    trace_id: str
    """The trace the call belongs to."""


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The hook's answer."""

    approved: bool
    """Whether the call may run."""
    reason: str = ""
    """Why, for the model (especially when denied)."""
    question: str | None = None
    """Set by `ask` and `defer`: nobody decided yet; this question goes to whoever can."""
    deferred: bool = False
    """Set by `defer`: the call waits for its caller's answer instead of an inbox's."""

    @classmethod
    def approve(cls, reason: str = "") -> ApprovalDecision:
        """Let the call run."""
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str) -> ApprovalDecision:
        """Refuse the call, saying why."""
        return cls(False, reason)

    @classmethod
    def ask(cls, question: str) -> ApprovalDecision:
        """Let someone else decide: the call waits for their answer (see the module doc)."""
        return cls(False, "", _checked(question))

    @classmethod
    def defer(cls, question: str) -> ApprovalDecision:
        """Let someone decide later: the call is handed back to its caller (see the module doc)."""
        return cls(False, "", _checked(question), deferred=True)


def _checked(question: str) -> str:
    if not question.strip():
        raise ValueError("the question must be a non-empty string")
    return question


class ApprovalInbox(ABC):
    """Where the questions of `ApprovalDecision.ask` wait for their answers."""

    @abstractmethod
    async def ask(
        self, request: ApprovalRequest, question: str, within: float | None
    ) -> ApprovalDecision | None:
        """Wait for the answer to `question` about `request`.

        A decision, or None once `within` seconds have passed (None: wait as long as it
        takes). May raise: the policy then denies the call, saying why.
        """


_INBOX: contextvars.ContextVar[ApprovalInbox | None] = contextvars.ContextVar(
    "kosong_approval_inbox", default=None
)


@contextlib.contextmanager
def inbox_scope(inbox: ApprovalInbox | None) -> Generator[None]:
    """Questions of the calls started inside the block go to `inbox`.

    A call's task keeps the inbox in scope when it started (tasks copy their context).
    """
    token = _INBOX.set(inbox)
    try:
        yield
    finally:
        _INBOX.reset(token)


ApprovalHook = Callable[
    [ApprovalRequest], Awaitable[ApprovalDecision | bool] | ApprovalDecision | bool
]
"""Decides whether a call may run; may be async (asking a person, say)."""


class ApprovalPolicy(Policy):
    """Hold calls to destructive tools until `hook` approves them; see the module doc."""

    def __init__(
        self,
        hook: ApprovalHook,
        *,
        unannotated: bool = False,
        needs_approval: Callable[[Tool], bool] | None = None,
        ask_timeout: float | None = None,
        inbox: ApprovalInbox | None = None,
    ) -> None:
        """Ask `hook` before running destructive tools.

        Args:
            hook: Decides each call.
            unannotated: Also hold tools that declare neither `destructive_hint` nor
                `read_only_hint` (MCP's defaults treat them as destructive).
            needs_approval: Decide per tool instead of by its hints.
            ask_timeout: Seconds a question (`ApprovalDecision.ask`) waits for its answer
                before the call is denied (None: no limit).
            inbox: Where questions go (default: the inbox in scope, see `inbox_scope`).

        Raises:
            ValueError: `ask_timeout` is not a positive number.
        """
        self._ask_timeout = optional_seconds(ask_timeout, "ask_timeout")
        self._inbox = inbox
        self._hook = hook
        self._needs: Callable[[Tool], bool] = needs_approval or (
            lambda tool: is_destructive(tool, unannotated=unannotated)
        )

    def holds(self, tool: Tool) -> bool:
        """Whether calls of `tool` wait for the hook (fail closed: True when the rule fails)."""
        needs = call_guarded(self._needs, tool)
        if isinstance(needs, Failed):  # fail closed: when in doubt, ask
            logger.error(
                "needs_approval failed on tool %r; asking the hook", tool.name, exc_info=needs.error
            )
            return True
        return bool(needs)

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Ask the hook when the tool needs it; run the call only if approved."""
        tool = ctx.tool
        if not self.holds(tool):
            return await forward(call, ctx)
        started = time.perf_counter()
        request = ApprovalRequest(tool, call, ctx.arguments, ctx.trace_id)
        answered = answer_in_scope(call.id)
        if answered is not None:  # a deferred call, resumed with its answer
            decision = ApprovalDecision(isinstance(answered, Approve), answered.reason)
        else:
            decision = await self._decide(request)
        inbox = self._inbox or _INBOX.get()
        if decision.question is not None and (decision.deferred or inbox is None):
            within = None if decision.deferred else self._ask_timeout
            deferred = ToolDeferredError(tool.name, "approval", decision.question, within=within)
            return ToolResult(call.id, deferred)
        if decision.question is not None and inbox is not None:
            decision = await self._wait(inbox, request, decision.question)
        ctx.call_context.record_timing("approval_ms", (time.perf_counter() - started) * 1000)
        ctx.call_context.add_debug(
            "approval", {"approved": decision.approved, "reason": decision.reason}
        )
        if decision.approved is not True:
            reason = decision.reason or "the call was not approved"
            return ToolResult(call.id, ToolPermissionDeniedError(tool.name, reason))
        return await forward(call, ctx)

    async def _decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """The hook's decision on the call; anything but an approval denies it."""
        answer: object = await await_guarded(self._hook, request)
        if isinstance(answer, Failed):  # fail closed: a broken hook approves nothing
            reason = describe_exception(answer.error)
            return ApprovalDecision.deny(f"the approval hook failed ({reason})")
        return _decision(answer)

    async def _wait(
        self, inbox: ApprovalInbox, request: ApprovalRequest, question: str
    ) -> ApprovalDecision:
        """The answer to the hook's question, from the inbox; anything else denies."""
        answer = await await_guarded(inbox.ask, request, question, self._ask_timeout)
        if isinstance(answer, Failed):  # fail closed
            reason = describe_exception(answer.error)
            return ApprovalDecision.deny(f"the question could not be asked ({reason})")
        if answer is None:
            within = f" within {self._ask_timeout:g} seconds" if self._ask_timeout else ""
            return ApprovalDecision.deny(f"nobody answered {question!r}{within}")
        return _decision(answer if answer.question is None else None)


def _decision(answer: object) -> ApprovalDecision:
    """The hook's answer as a decision: only the documented approvals approve."""
    if answer is True:
        return ApprovalDecision.approve()
    if answer is False:
        return ApprovalDecision.deny("the call was not approved")
    if isinstance(answer, ApprovalDecision):
        if answer.question is not None or answer.approved is True:
            return answer
        return ApprovalDecision.deny(answer.reason or "the call was not approved")
    shown = repr(answer)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ApprovalDecision.deny(
        f"the approval hook answered {shown}, which is neither an ApprovalDecision nor a bool"
    )
