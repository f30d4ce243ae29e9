"""A served tool asks the user: `current_call().elicit(...)` over MCP, in both protocol eras.

`MCPToolServer` runs each call inside `elicit_with(...)`, so the tool's (or an approval hook's)
`elicit(message, schema)` reaches the client that made the call:

- Handshake era (up to 2025-11-25): an `elicitation/create` request on the call's own stream
  (`back_channel`), answered while the tool waits. A client that did not announce
  elicitation, or a connection with no way back (stateless HTTP), is not asked: the answer is
  `decline`, so whatever depended on it fails closed.
- 2026-07-28 era: servers may no longer send requests; a call that needs input answers with
  an `input_required` result, and the client calls again with the answers (the spec's multi
  round-trip requests). `Rounds` keeps the call itself running in this process, waiting in
  `elicit`: its `requestState` is a random, single-use token naming the waiting call, bound to
  the principal, the tool and the arguments, so the retry resumes the call where it stopped
  and nothing the tool did before it asked is done twice. A call waits at most `ttl` seconds
  for its answers (then `elicit` answers `cancel`); a retry whose state is unknown, expired
  or another principal's is told to call again. A server run as several processes must send
  each client's calls to the same process (sticky sessions) for this to work.
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
from mcp.server.context import ServerRequestContext

from kosong.standard import ElicitAnswer, Elicitor, canonical_json
from kosong.tooling import ToolResult
from kosong.tooling.error import describe_exception
from kosong.utils.typing import JsonType

__all__ = ["Rounds", "back_channel", "can_elicit", "form_request"]

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


def back_channel(ctx: ServerRequestContext[Any, Any]) -> Elicitor:
    """Ask through the handshake-era session, on the call's stream (see the module doc)."""

    async def elicit(message: str, schema: dict[str, Any]) -> ElicitAnswer:
        session = ctx.session
        if not can_elicit(session.client_capabilities) or not session.can_send_request:
            return ElicitAnswer.decline()
        try:
            result = await session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as e:  # the client failed to answer: nothing was agreed to
            logger.warning("MCP elicitation failed, taken as declined: %s", describe_exception(e))
            return ElicitAnswer.decline()
        return _answer(result)

    return elicit


# --- the 2026-07-28 era -----------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Question:
    key: str
    request: dict[str, Any]
    """The `elicitation/create` request, in its wire form."""
    answer: asyncio.Future[ElicitAnswer]


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
    [Elicitor, Callable[[], ServerRequestContext[Any, Any]]], asyncio.Future[ToolResult]
]
"""Starts the call, given the elicitor its tool asks through and the request of the round in
progress (where its progress goes); returns its result to come."""


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
            waiting.result = result = start(self._elicitor(waiting), lambda: waiting.ctx)
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
                    question.answer.set_result(_answer(response))
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

    def _elicitor(self, waiting: _Waiting) -> Elicitor:
        async def elicit(message: str, schema: dict[str, Any]) -> ElicitAnswer:
            if not can_elicit(waiting.ctx.session.client_capabilities):
                return ElicitAnswer.decline()
            if len(self._waiting) >= _MAX_WAITING:
                logger.warning("%d MCP calls already wait for input: declined", _MAX_WAITING)
                return ElicitAnswer.decline()
            key = f"elicitation-{next(waiting.keys)}"
            request = form_request(message, schema)
            question = _Question(key, request, asyncio.get_running_loop().create_future())
            waiting.questions[key] = question
            waiting.asked.set()
            try:
                async with asyncio.timeout(self._ttl):
                    return await question.answer
            except TimeoutError:  # nobody came back with the answer: the user never chose
                self._forget(waiting)
                return ElicitAnswer.cancel()
            finally:
                del waiting.questions[key]
                if not question.answer.done():
                    question.answer.cancel()

        return elicit

    def clear(self) -> None:
        """Forget every waiting call (the server stops): their questions are cancelled."""
        for waiting in list(self._waiting.values()):
            for question in list(waiting.questions.values()):
                if not question.answer.done():
                    question.answer.set_result(ElicitAnswer.cancel())
        self._waiting.clear()
