"""A served tool reaches back to its caller over MCP, in both protocol eras.

`MCPToolServer` runs each call inside `caller_scope(...)`, so the tool's (or an approval
hook's) `elicit(message, schema)`, `sample(messages, ...)` and `log(level, message)` reach the
client that made the call:

- Handshake era (up to 2025-11-25): `elicitation/create` and `sampling/createMessage`
  requests on the call's own stream (`BackChannel`), answered while the tool waits; log
  messages as `notifications/message` on that stream, at or above the level the session set
  with `logging/setLevel` (every level until it does). A client that did not announce
  elicitation (sampling), or a connection with no way back (stateless HTTP), is not asked: an
  elicitation is declined, so whatever depended on it fails closed, and a sampling request
  raises.
- 2026-07-28 era: servers may no longer send requests; a call that needs input answers with
  an `input_required` result whose `inputRequests` hold the `elicitation/create` or
  `sampling/createMessage` requests, and the client calls again with the answers (the spec's
  multi round-trip requests). `Rounds` keeps the call itself running in this process, waiting
  in `elicit` or `sample`: its `requestState` is a random, single-use token naming the waiting
  call, bound to the principal, the tool and the arguments, so the retry resumes the call where
  it stopped and nothing the tool did before it asked is done twice. A call waits at most `ttl`
  seconds for its answers (then `elicit` answers `cancel` and `sample` raises); a retry whose
  state is unknown, expired or another principal's is told to call again. Log messages go on
  the stream of the round in progress, only when its request asked for them (`_meta`
  `io.modelcontextprotocol/logLevel`, and at or above that level), as the 2026-07-28 logging
  page says. A server run as several processes must send each client's calls to the same
  process (sticky sessions) for this to work.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as mcp
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from kosong.mcp._convert import sampled_message, sampling_message
from kosong.message import Message
from kosong.standard import LOG_LEVELS, Caller, ElicitAnswer, LogLevel, canonical_json
from kosong.tooling import ToolResult
from kosong.tooling.error import describe_exception
from kosong.utils.typing import JsonType

__all__ = ["BackChannel", "Rounds", "can_elicit", "form_request"]

logger = logging.getLogger(__name__)


def can_elicit(capabilities: mcp.ClientCapabilities | None) -> bool:
    """Whether a client announced form elicitation (a bare `elicitation: {}` counts)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def form_request(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The `elicitation/create` request asking `message` with a form, in its wire form."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def _answer(result: object) -> ElicitAnswer:
    """The client's `ElicitResult` as an answer; anything else is a refusal."""
    if isinstance(result, mcp.ElicitResult):
        if result.action == "accept":
            return ElicitAnswer.accept(result.content or {})
        return ElicitAnswer(result.action)
    return ElicitAnswer.decline()


def can_sample(capabilities: mcp.ClientCapabilities | None) -> bool:
    """Whether a client announced sampling."""
    return capabilities is not None and capabilities.sampling is not None


def sampling_request(
    messages: list[Message], system_prompt: str, max_tokens: int, temperature: float | None
) -> mcp.CreateMessageRequest:
    """The `sampling/createMessage` request for a tool's `sample(...)`.

    Raises:
        ValueError: a message MCP's sampling cannot carry.
    """
    params = mcp.CreateMessageRequestParams(
        messages=[sampling_message(m) for m in messages],
        system_prompt=system_prompt or None,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    return mcp.CreateMessageRequest(params=params)


def _sampled(result: object) -> Message:
    """The client's answer to a sampling request, or the error it is."""
    if isinstance(result, mcp.CreateMessageResult):
        return sampled_message(result)
    if isinstance(result, mcp.ErrorData):
        raise RuntimeError(f"the MCP client refused to sample: {result.message}")
    raise RuntimeError("the MCP client did not answer the sampling request")


async def _notify_log(
    ctx: ServerRequestContext[Any, Any], level: LogLevel, data: JsonType, logger: str | None
) -> None:
    notification = mcp.LoggingMessageNotification(
        params=mcp.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
    )
    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


class BackChannel:
    """The handshake era's way back to the client: requests on the call's stream."""

    def __init__(
        self, ctx: ServerRequestContext[Any, Any], log_level: Callable[[], LogLevel | None]
    ) -> None:
        """Reach the client of `ctx`; `log_level` is the level its session set, if any."""
        self._ctx = ctx
        self._log_level = log_level

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        """Ask the client's user (see the module doc)."""
        session = self._ctx.session
        if not can_elicit(session.client_capabilities) or not session.can_send_request:
            return ElicitAnswer.decline()
        try:
            result = await session.elicit_form(
                message, schema, related_request_id=self._ctx.request_id
            )
        except Exception as e:  # the client failed to answer: nothing was agreed to
            logger.warning("MCP elicitation failed, taken as declined: %s", describe_exception(e))
            return ElicitAnswer.decline()
        return _answer(result)

    async def sample(
        self,
        messages: list[Message],
        system_prompt: str,
        max_tokens: int,
        temperature: float | None,
    ) -> Message:
        """Ask the client's model (see the module doc)."""
        session = self._ctx.session
        if not can_sample(session.client_capabilities) or not session.can_send_request:
            raise RuntimeError("the MCP client that made this call does not offer sampling")
        request = sampling_request(messages, system_prompt, max_tokens, temperature)
        related = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            result = await session.send_request(request, mcp.CreateMessageResult, metadata=related)
        except MCPError as e:
            raise RuntimeError(f"the MCP client refused to sample: {e.message}") from None
        return _sampled(result)

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        """Send a log message, at or above the session's level (see the module doc)."""
        least = self._log_level()
        if least is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(least):
            return
        await _notify_log(self._ctx, level, data, logger)


# --- the 2026-07-28 era -----------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Question:
    key: str
    request: dict[str, Any]
    """The `elicitation/create` or `sampling/createMessage` request, in its wire form."""
    answer: asyncio.Future[object]
    """The client's response as the SDK parsed it; None: nobody answered in time."""


@dataclass(slots=True, eq=False)
class _Waiting:
    """A call that asked, between its rounds: who may answer, and what it waits for."""

    owner: str
    tool: str
    arguments: str
    """The arguments' canonical JSON: a retry must carry the same."""
    ctx: ServerRequestContext[Any, Any]
    """The request of the round in progress (its client's capabilities, its progress)."""
    result: asyncio.Future[ToolResult] | None = None
    questions: dict[str, _Question] = field(default_factory=dict[str, _Question])
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    keys: itertools.count[int] = field(default_factory=itertools.count)
    token: str | None = None


StartCall = Callable[
    [Caller, Callable[[], ServerRequestContext[Any, Any]]], asyncio.Future[ToolResult]
]
"""Starts the call, given the caller its tool reaches back through and the request of the round
in progress (where its progress goes); returns its result to come."""


_MAX_WAITING = 1000
"""Calls that may wait for answers at once (one more asks nobody: `decline`)."""


class Rounds:
    """2026-era calls that wait for the user's input, by their `requestState` token."""

    def __init__(self, *, ttl: float) -> None:
        """Keep waiting calls `ttl` seconds."""
        self._ttl = ttl
        self._waiting: dict[str, _Waiting] = {}

    async def run(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mcp.CallToolRequestParams,
        arguments: JsonType,
        owner: str,
        start: StartCall,
    ) -> ToolResult | dict[str, Any] | None:
        """One round of a call: its result, an `input_required` result (wire form), or None.

        None: the request's `requestState` names no call waiting for this principal, tool
        and arguments (it expired, or was never ours).
        """
        digest = canonical_json(arguments)
        if params.request_state is None:
            waiting = _Waiting(owner, params.name, digest, ctx)
            waiting.result = result = start(_RoundCaller(self, waiting), lambda: waiting.ctx)
            result.add_done_callback(lambda _: self._forget(waiting))
        else:
            found = self._waiting.get(params.request_state)
            expected = (owner, params.name, digest)  # a retry names the same again
            if found is None or (found.owner, found.tool, found.arguments) != expected:
                return None
            waiting = self._waiting.pop(params.request_state)
            waiting.token = None
            waiting.ctx = ctx
            for key, response in (params.input_responses or {}).items():
                question = waiting.questions.get(key)
                if question is not None and not question.answer.done():
                    question.answer.set_result(response)
        return await self._round(waiting)

    async def _round(self, waiting: _Waiting) -> ToolResult | dict[str, Any]:
        result = waiting.result
        assert result is not None
        try:
            while True:
                if result.done():
                    return result.result()
                if self._unanswered(waiting):
                    await asyncio.sleep(0)  # questions asked together go out together
                    if not result.done():
                        return self._input_required(waiting)
                    continue
                waiting.asked.clear()
                asked = asyncio.ensure_future(waiting.asked.wait())
                try:
                    await asyncio.wait({result, asked}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    asked.cancel()
        except asyncio.CancelledError:
            # The client left in the middle of a round: the call is cancelled, as any call.
            result.cancel()
            raise

    def _unanswered(self, waiting: _Waiting) -> list[_Question]:
        return [q for q in waiting.questions.values() if not q.answer.done()]

    def _input_required(self, waiting: _Waiting) -> dict[str, Any]:
        token = secrets.token_urlsafe(24)
        waiting.token = token
        self._waiting[token] = waiting
        requests = {q.key: q.request for q in self._unanswered(waiting)}
        return {"resultType": "input_required", "inputRequests": requests, "requestState": token}

    def _forget(self, waiting: _Waiting) -> None:
        if waiting.token is not None:
            self._waiting.pop(waiting.token, None)
            waiting.token = None

    async def ask(self, waiting: _Waiting, kind: str, request: dict[str, Any]) -> object:
        """Put `request` to the client in the next `input_required`; its response.

        None: no response came within the ttl, or too many calls wait already.
        """
        if len(self._waiting) >= _MAX_WAITING:
            logger.warning("%d MCP calls already wait for input: not asked", _MAX_WAITING)
            return None
        key = f"{kind}-{next(waiting.keys)}"
        question = _Question(key, request, asyncio.get_running_loop().create_future())
        waiting.questions[key] = question
        waiting.asked.set()
        try:
            async with asyncio.timeout(self._ttl):
                return await question.answer
        except TimeoutError:  # nobody came back with the answer: the user never chose
            self._forget(waiting)
            return None
        finally:
            del waiting.questions[key]
            if not question.answer.done():
                question.answer.cancel()

    def clear(self) -> None:
        """Forget every waiting call (the server stops): their questions go unanswered."""
        for waiting in list(self._waiting.values()):
            for question in list(waiting.questions.values()):
                if not question.answer.done():
                    question.answer.set_result(None)
        self._waiting.clear()


class _RoundCaller:
    """The 2026 era's way back to the client: `input_required` rounds, the round's stream."""

    def __init__(self, rounds: Rounds, waiting: _Waiting) -> None:
        self._rounds = rounds
        self._waiting = waiting

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        if not can_elicit(self._waiting.ctx.session.client_capabilities):
            return ElicitAnswer.decline()
        response = await self._rounds.ask(
            self._waiting, "elicitation", form_request(message, schema)
        )
        return ElicitAnswer.cancel() if response is None else _answer(response)

    async def sample(
        self,
        messages: list[Message],
        system_prompt: str,
        max_tokens: int,
        temperature: float | None,
    ) -> Message:
        if not can_sample(self._waiting.ctx.session.client_capabilities):
            raise RuntimeError("the MCP client that made this call does not offer sampling")
        request = sampling_request(messages, system_prompt, max_tokens, temperature)
        wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        return _sampled(await self._rounds.ask(self._waiting, "sampling", wire))

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        ctx = self._waiting.ctx  # the round in progress: its request says which levels it takes
        if level in allowed_log_levels(ctx.protocol_version, ctx.meta):
            await _notify_log(ctx, level, data, logger)
