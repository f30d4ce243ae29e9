"""The answers to deferred calls, and the scope in which resumed calls find them.

Below both `agent_loop` (which resumes deferred calls inside `answers_scope`) and
`ApprovalPolicy` (which finds a resumed call's answer with `answer_in_scope` and does not ask
its hook again); see `kosong._deferral`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from kosong.tooling import ToolReturnValue

__all__ = ["Answer", "Approve", "Deny", "answer_in_scope", "answers_scope"]


@dataclass(frozen=True, slots=True)
class Approve:
    """The answer that lets a deferred call run."""

    reason: str = ""
    """Why, kept in the call's debug notes."""


@dataclass(frozen=True, slots=True)
class Deny:
    """The answer that refuses a deferred call: the model gets PERMISSION_DENIED with `reason`."""

    reason: str = "the call was not approved"
    """Why, for the model."""


Answer: TypeAlias = Approve | Deny | ToolReturnValue
"""What answers a deferred call: `Approve()` or `Deny(reason)` for an approval; for an external
tool, the `ToolReturnValue` its caller got by running it (or `Deny(reason)`)."""


_ANSWERS: contextvars.ContextVar[Mapping[str, Approve | Deny] | None] = contextvars.ContextVar(
    "kosong_answers", default=None
)


@contextlib.contextmanager
def answers_scope(answers: Mapping[str, Approve | Deny]) -> Generator[None]:
    """Calls started inside the block find their answer by id (`answer_in_scope`)."""
    token = _ANSWERS.set(answers)
    try:
        yield
    finally:
        _ANSWERS.reset(token)


def answer_in_scope(call_id: str) -> Approve | Deny | None:
    """The answer given to a deferred call resumed in this scope (for `ApprovalPolicy`)."""
    answers = _ANSWERS.get()
    return None if answers is None else answers.get(call_id)
