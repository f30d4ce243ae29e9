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

A hook may also answer `ApprovalDecision.ask(question)`: someone else must decide. The
question goes to an `ApprovalInbox` (the policy's own, or the one in scope: a server puts one
around every run it starts, which keeps the question in its store, lists it and takes the
answer from any of its processes) and the call waits for the answer, at most `ask_timeout`
seconds, after which it is denied. With no inbox at all, a question is a denial.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass

from kosong._guard import Failed, await_guarded, call_guarded
from kosong._seconds import optional_seconds
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_destructive
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import Tool, ToolResult
from kosong.tooling.error import ToolPermissionDeniedError, describe_exception
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
    """Set by `ask`: nobody decided yet; this question goes to whoever can."""

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
        if not question.strip():
            raise ValueError("the question must be a non-empty string")
        return cls(False, "", question)


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
        decision = await self._decide(request)
        if decision.question is not None:
            decision = await self._wait(request, decision.question)
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

    async def _wait(self, request: ApprovalRequest, question: str) -> ApprovalDecision:
        """The answer to the hook's question, from the inbox; anything else denies."""
        inbox = self._inbox or _INBOX.get()
        if inbox is None:
            return ApprovalDecision.deny(
                f"the approval hook asked {question!r}, but nobody can answer here (no "
                "ApprovalInbox: a server keeps one for the calls it runs)"
            )
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
