"""A served tool reaches back to its caller over MCP, in both protocol eras.

`MCPToolServer` runs each call inside `caller_scope(...)`, so the tool's (or an approval
hook's) `elicit`, `sample` and `log` reach the client that made the call:

- On the call's own request (`BackChannel`): in the handshake era (up to 2025-11-25),
  `elicitation/create` and `sampling/createMessage` requests on the call's stream; log
  messages as `notifications/message`, at or above the level the session set with
  `logging/setLevel` (every level until it does), or, in the 2026-07-28 era, only when the
  request asked (`_meta` `io.modelcontextprotocol/logLevel`, that level and above). A client
  that did not announce elicitation (sampling), or a request with no way back (stateless
  HTTP, every 2026-era request), is not asked: an elicitation is declined (what depended on
  it fails closed), a sampling request raises.
- Through a run (`kosong.eventstore.Runs`): 2026-era servers send no requests, so a call
  whose client can answer is a run whose tool's questions end the round with an
  `input_required` result; the client calls again with the answers (the spec's multi
  round-trip requests), on any process sharing the run's store (see `_runs`).
  `input_request` and `input_answer` put a run's questions and answers in MCP's words;
  `BackChannel.answer` asks one on the request's own stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as mcp
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from kosong.mcp._convert import sampled_message, sampling_message
from kosong.message import Message
from kosong.standard import LOG_LEVELS, ElicitAnswer, LogLevel
from kosong.tooling.error import describe_exception
from kosong.utils.typing import JsonType

__all__ = ["BackChannel", "can_elicit", "form_request", "input_answer", "input_request"]

logger = logging.getLogger(__name__)


def can_elicit(capabilities: mcp.ClientCapabilities | None) -> bool:
    """Whether a client announced form elicitation (a bare `elicitation: {}` counts)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def can_sample(capabilities: mcp.ClientCapabilities | None) -> bool:
    """Whether a client announced sampling."""
    return capabilities is not None and capabilities.sampling is not None


def form_request(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The `elicitation/create` request asking `message` with a form, in its wire form."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def _answer(result: mcp.ElicitResult) -> ElicitAnswer:
    """The client's `ElicitResult` as an answer."""
    if result.action == "accept":
        return ElicitAnswer.accept(result.content or {})
    return ElicitAnswer(result.action)


def _sampling_request(
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


def _asked(question: dict[str, Any]) -> tuple[list[Message], str, int, float | None]:
    """A run's sampling question as `sample`'s arguments."""
    asked = question["sampling"]
    messages = [Message.model_validate(m) for m in asked["messages"]]
    return messages, asked["system_prompt"], asked["max_tokens"], asked["temperature"]


def input_request(question: dict[str, Any]) -> dict[str, Any]:
    """A run's question as an MCP input request, in its wire form.

    Raises:
        ValueError: a sampling request with a message MCP's sampling cannot carry.
    """
    if "elicitation" in question:
        return form_request(question["elicitation"]["message"], question["elicitation"]["schema"])
    request = _sampling_request(*_asked(question))
    return request.model_dump(by_alias=True, mode="json", exclude_none=True)


def input_answer(question: dict[str, Any], response: object) -> dict[str, Any]:
    """The client's answer (an MCP input response, in its wire form) in the run's terms."""
    if "elicitation" in question:
        try:
            answer = _answer(mcp.ElicitResult.model_validate(response))
        except ValidationError:
            answer = ElicitAnswer.decline()  # not an answer: nothing was agreed to
        return {"action": answer.action, "content": answer.content}
    try:
        message = sampled_message(mcp.CreateMessageResult.model_validate(response))
    except ValidationError:
        return {"error": "the MCP client did not answer the sampling request"}
    return {"message": message.model_dump(mode="json", exclude_none=True)}


class BackChannel:
    """The way back to the client on the call's own request (see the module doc)."""

    def __init__(
        self, ctx: ServerRequestContext[Any, Any], log_level: Callable[[], LogLevel | None]
    ) -> None:
        """Reach the client of `ctx`; `log_level` is the level its session set, if any."""
        self._ctx = ctx
        self._log_level = log_level

    def takes(self, question: dict[str, Any]) -> bool:
        """Whether the client announced what answers `question` (a run's)."""
        capabilities = self._ctx.session.client_capabilities
        return can_elicit(capabilities) if "elicitation" in question else can_sample(capabilities)

    def answers(self) -> bool:
        """Whether the client answers questions at all (elicitation or sampling)."""
        capabilities = self._ctx.session.client_capabilities
        return can_elicit(capabilities) or can_sample(capabilities)

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
        request = _sampling_request(messages, system_prompt, max_tokens, temperature)
        related = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            result = await session.send_request(request, mcp.CreateMessageResult, metadata=related)
        except MCPError as e:
            raise RuntimeError(f"the MCP client refused to sample: {e.message}") from None
        return sampled_message(result)

    async def answer(self, question: dict[str, Any]) -> dict[str, Any]:
        """Ask a run's question on this request; the answer in the run's terms."""
        if "elicitation" in question:
            asked = question["elicitation"]
            answer = await self.elicit(asked["message"], asked["schema"])
            return {"action": answer.action, "content": answer.content}
        try:
            return {"message": (await self.sample(*_asked(question))).model_dump(mode="json")}
        except (RuntimeError, ValueError) as e:
            return {"error": str(e)}

    async def log(self, level: LogLevel, data: JsonType, logger: str | None) -> None:
        """Send a log message, if the request (or its session) takes that level."""
        ctx = self._ctx
        least = self._log_level()
        if level not in allowed_log_levels(ctx.protocol_version, ctx.meta) or (
            least is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(least)
        ):
            return
        notification = mcp.LoggingMessageNotification(
            params=mcp.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        )
        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
