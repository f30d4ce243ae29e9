"""Whoever made the running call, reached back from inside it.

A server puts a `Caller` in scope for each call it runs (`caller_scope`; `elicit_with` for one
that only answers questions); the running tool reaches it through its `CallContext`: `elicit`
asks the user (`decline` when nobody can answer), `sample` asks their model, `log` sends a log
message (to the Python logger `kosong.calls` when nobody takes them).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

import jsonschema_rs
from pydantic import BaseModel, ValidationError

from kosong.message import Message
from kosong.utils.typing import JsonType

__all__ = [
    "CALLER",
    "LOG_LEVELS",
    "TOOL_LOGGER",
    "Caller",
    "ElicitAnswer",
    "Elicitor",
    "LogLevel",
    "ask_user",
    "caller_scope",
    "elicit_with",
    "log_locally",
]


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    """The user's answer to `CallContext.elicit`: accepted (with the values), declined, cancelled.

    Only `action == "accept"` is a yes: a tool (or an approval hook) treats anything else as
    a no.
    """

    action: Literal["accept", "decline", "cancel"]
    """`"accept"`: the user answered; `"decline"`: refused (or nobody could be asked);
    `"cancel"`: dismissed without choosing."""
    content: dict[str, Any] | None = field(default=None)
    """The values the user gave, when accepted (checked against the requested schema)."""

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitAnswer:
        """The user answered with `content`."""
        return cls("accept", dict(content) if content is not None else {})

    @classmethod
    def decline(cls) -> ElicitAnswer:
        """The user refused (or could not be asked)."""
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitAnswer:
        """The user dismissed the question."""
        return cls("cancel")


Elicitor = Callable[[str, dict[str, Any]], Awaitable[ElicitAnswer]]
"""Asks the user `(message, requested JSON Schema)` on behalf of a running call."""

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The levels of a log message, as MCP (and syslog, RFC 5424) names them, least severe first."""

LOG_LEVELS: Final[tuple[LogLevel, ...]] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip

_PYTHON_LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
    "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}  # fmt: skip

TOOL_LOGGER: Final = logging.getLogger("kosong.calls")
"""Where a tool's `log` goes when nobody made the call who takes log messages."""


class Caller(Protocol):
    """Whoever made the running call, as the server running it reaches them back.

    An MCP server is one: it asks its client (`elicit`, `sample`) and logs to it (`log`), in
    either protocol era. Servers put one in scope for each call they run (`caller_scope`).
    """

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        """Ask the user `message` for values fitting `schema`; `decline` if nobody can."""
        ...

    async def sample(
        self,
        messages: list[Message],
        system_prompt: str,
        max_tokens: int,
        temperature: float | None,
    ) -> Message:
        """A completion of `messages` by the caller's model.

        Raises:
            RuntimeError: the caller cannot sample, or refused.
        """
        ...

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        """Send a log message to the caller, if it takes messages of that level."""
        ...


CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "kosong_standard_caller", default=None
)
"""The caller in scope (`caller_scope`), if any."""


@contextlib.contextmanager
def caller_scope(caller: Caller | None) -> Generator[None]:
    """Have calls started inside this block reach back to `caller`.

    A call's task copies the context it starts in, so `elicit`, `sample` and `log` inside the
    tool (or an approval hook) reach `caller`. Servers set it for each call they run; outside
    such a block, `elicit` answers `decline`, `sample` raises and `log` goes to the Python
    logger `kosong.calls`.
    """
    token = CALLER.set(caller)
    try:
        yield
    finally:
        CALLER.reset(token)


class _ElicitOnly:
    """A caller that can only be asked questions (`elicit_with`)."""

    def __init__(self, elicitor: Elicitor) -> None:
        self._elicitor = elicitor

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        return await self._elicitor(message, schema)

    async def sample(
        self,
        messages: list[Message],
        system_prompt: str,
        max_tokens: int,
        temperature: float | None,
    ) -> Message:
        raise RuntimeError("whoever made this call cannot sample")

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        log_locally(level, data, logger)


def log_locally(level: LogLevel, data: JsonType, logger: str | None) -> None:
    """Send a tool's log message to the Python logger `kosong.calls`."""
    TOOL_LOGGER.log(_PYTHON_LEVELS[level], "%s%s", f"[{logger}] " if logger else "", data)


@contextlib.contextmanager
def elicit_with(elicitor: Elicitor | None) -> Generator[None]:
    """Have calls started inside this block ask the user through `elicitor`.

    The same as `caller_scope` with a caller that only asks questions (`sample` raises, `log`
    goes to the Python logger). Outside such a block, `elicit` answers `decline` at once.
    """
    with caller_scope(None if elicitor is None else _ElicitOnly(elicitor)):
        yield


async def ask_user(message: str, schema: Mapping[str, Any] | type[BaseModel]) -> ElicitAnswer:
    """Ask the caller in scope (`decline` without one); an accepted answer is checked.

    Raises:
        ValueError: the user accepted with values that do not fit `schema`.
    """
    requested = _requested_schema(schema)
    caller = CALLER.get()
    if caller is None:
        return ElicitAnswer.decline()
    return _checked(await caller.elicit(message, requested), schema, requested)


def _requested_schema(schema: Mapping[str, Any] | type[BaseModel]) -> dict[str, Any]:
    if isinstance(schema, Mapping):
        return dict(schema)
    return schema.model_json_schema()


def _checked(
    answer: ElicitAnswer, schema: Mapping[str, Any] | type[BaseModel], requested: dict[str, Any]
) -> ElicitAnswer:
    """The answer, its accepted content checked against what was asked."""
    if answer.action != "accept":
        return answer
    content = answer.content if answer.content is not None else {}
    if isinstance(schema, type):
        try:
            schema.model_validate(content)
        except ValidationError as e:
            raise ValueError(f"the user's answer does not fit {schema.__name__}: {e}") from None
    else:
        error = next(iter(jsonschema_rs.validator_for(requested).iter_errors(content)), None)
        if error is not None:
            raise ValueError(f"the user's answer does not fit the schema asked: {error.message}")
    return ElicitAnswer("accept", content)
