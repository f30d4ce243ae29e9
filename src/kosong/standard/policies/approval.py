"""Approval: destructive tools run only once a pluggable hook approves the call.

The hook gets an `ApprovalRequest` (the tool, the call, its parsed arguments, the trace id) and
answers with an `ApprovalDecision` or a bool, directly or awaited. A denial, or a hook that
fails, gives a PERMISSION_DENIED error carrying the reason: the tool never runs. Which tools
need approval: those whose `destructive_hint` is true (and, with `unannotated=True`, those that
declare neither `destructive_hint` nor `read_only_hint`, as MCP's defaults would have it), or
whatever `needs_approval` says.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from kosong.message import ToolCall
from kosong.standard.context import UNPARSEABLE, CallContext
from kosong.standard.metadata import is_destructive
from kosong.standard.pipeline import Forward, ForwardNow, Policy
from kosong.tooling import Tool, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolPermissionDeniedError, describe_exception
from kosong.utils.typing import JsonType

__all__ = ["ApprovalDecision", "ApprovalHook", "ApprovalPolicy", "ApprovalRequest"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for approval."""

    tool: Tool
    """The tool's definition (its hints, title, description)."""
    tool_call: ToolCall
    """The call."""
    arguments: JsonType
    """The parsed arguments (None when they do not parse; the toolset will refuse them)."""
    trace_id: str
    """The trace the call belongs to."""


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The hook's answer."""

    approved: bool
    """Whether the call may run."""
    reason: str = ""
    """Why, for the model (especially when denied)."""

    @classmethod
    def approve(cls, reason: str = "") -> ApprovalDecision:
        """Let the call run."""
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str) -> ApprovalDecision:
        """Refuse the call, saying why."""
        return cls(False, reason)


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
    ) -> None:
        """Ask `hook` before running destructive tools.

        Args:
            hook: Decides each call.
            unannotated: Also hold tools that declare neither `destructive_hint` nor
                `read_only_hint` (MCP's defaults treat them as destructive).
            needs_approval: Decide per tool instead of by its hints.
        """
        self._hook = hook
        self._unannotated = unannotated
        self._custom_needs = needs_approval is not None
        self._needs: Callable[[Tool], bool] = needs_approval or (
            lambda tool: is_destructive(tool, unannotated=unannotated)
        )

    def skips(self, call: ToolCall, ctx: CallContext) -> bool:
        """True for calls to tools that need no approval by their hints.

        With a `needs_approval` of your own, only for unknown tools: `run` asks it, once.
        """
        tool = ctx.tool
        if tool is None:
            return True
        return not self._custom_needs and not is_destructive(tool, unannotated=self._unannotated)

    def run_now(
        self, call: ToolCall, ctx: CallContext, forward: ForwardNow
    ) -> ToolReturnValue | None:
        """Pass on calls that need no approval by their hints; else None.

        The hook may wait, so calls it decides go through `run`; so do all calls with a
        `needs_approval` of your own, which `run` asks once.
        """
        tool = ctx.tool
        if tool is None:
            return forward(call, ctx)
        if self._custom_needs:
            return None
        # `is_destructive` inlined for its usual answers: every call comes here.
        hint = tool.destructive_hint
        if hint is None:
            if tool.read_only_hint is not True and self._unannotated:
                return None
        elif hint and tool.read_only_hint is not True:
            return None
        return forward(call, ctx)

    async def run(self, call: ToolCall, ctx: CallContext, forward: Forward) -> ToolResult:
        """Ask the hook when the tool needs it; run the call only if approved."""
        tool = ctx.tool
        if tool is None or not self._needs(tool):
            return await forward(call, ctx)
        args = await ctx.arguments()
        request = ApprovalRequest(
            tool, call, None if args is UNPARSEABLE else cast(JsonType, args), ctx.trace_id
        )
        started = time.perf_counter()
        try:
            answer = self._hook(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as e:  # fail closed: a broken hook approves nothing
            decision = ApprovalDecision.deny(f"the approval hook failed ({describe_exception(e)})")
        else:
            decision = (
                answer if isinstance(answer, ApprovalDecision) else (ApprovalDecision(bool(answer)))
            )
        ctx.record_timing("approval_ms", (time.perf_counter() - started) * 1000)
        ctx.add_debug("approval", {"approved": decision.approved, "reason": decision.reason})
        if not decision.approved:
            reason = decision.reason or "the call was not approved"
            return ToolResult(call.id, ToolPermissionDeniedError(tool.name, reason))
        return await forward(call, ctx)
