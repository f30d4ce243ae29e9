"""What `MCPToolset` answers when a server asks back: elicitation, sampling, roots.

A server's tool may ask the client, mid-call, for input from the user (elicitation, in form
or URL mode), a completion from the client's model (sampling), or the directories it may
work in (roots). The MCP SDK's client carries these in both protocol eras (a request on the
call's stream in the handshake era, an `input_required` result answered by retrying the call
in the 2026-07-28 era); `MCPToolset` gives it one callback each, and a client announces only
what it was given, so a server never asks for what nobody answers.

- `elicitation`: `async (ElicitationRequest) -> ElicitAnswer` (or the SDK's `ElicitResult`).
  An accepted form answer is completed with the requested schema's defaults for the fields
  it leaves out (SEP-1034); a URL-mode answer carries no content.
- `sampling`: a kosong `ChatProvider` (the request's system prompt and messages go to the
  user's model, with its `maxTokens` and `temperature` where the provider takes generation
  settings), or `async (SamplingRequest) -> str | Message | CreateMessageResult`.
- `roots`: URIs (`file:///...`) or paths.

A callback that raises, or answers something else, gives the server an error (never a
made-up answer); so do requests this client cannot serve (sampling with tools).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import mcp_types as mcp
from mcp.client import ClientRequestContext
from mcp.client.session import ElicitationFnT, ListRootsFnT, SamplingFnT

from kosong import generate
from kosong.chat_provider import ChatProvider
from kosong.mcp._convert import block_to_part
from kosong.message import ContentPart, Message
from kosong.standard import ElicitAnswer
from kosong.tooling.error import describe_exception

__all__ = [
    "Asking",
    "ElicitationCallback",
    "ElicitationRequest",
    "RootsSpec",
    "SamplingCallback",
    "SamplingRequest",
    "SamplingSpec",
    "asking",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """A server's question for the user."""

    server: str
    """The name of the server asking (in its `MCPToolset`)."""
    message: str
    """What to ask the user."""
    mode: Literal["form", "url"]
    """`"form"`: fill in `schema`; `"url"`: open `url` (a sign-in, a payment...) and come back."""
    schema: dict[str, Any] | None = None
    """The requested values, a flat JSON Schema object (form mode)."""
    url: str | None = None
    """Where to send the user (URL mode)."""
    elicitation_id: str | None = None
    """The server's id for a URL-mode elicitation."""


ElicitationCallback = Callable[[ElicitationRequest], Awaitable[ElicitAnswer | mcp.ElicitResult]]
"""Asks the user; answers `ElicitAnswer.accept(values)`, `.decline()` or `.cancel()`, or the
MCP `ElicitResult` itself."""


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a completion from the client's model."""

    server: str
    """The name of the server asking."""
    system_prompt: str
    """The system prompt the server suggests ("" when none)."""
    messages: list[Message]
    """The conversation to complete, as kosong messages."""
    max_tokens: int
    """The most tokens the server wants back."""
    temperature: float | None
    """The temperature it suggests, if any."""
    params: mcp.CreateMessageRequestParams
    """The request as sent (model preferences, stop sequences, metadata...)."""


SamplingCallback = Callable[[SamplingRequest], Awaitable[str | Message | mcp.CreateMessageResult]]
"""Completes a sampling request: text, an assistant message, or the MCP result itself."""

SamplingSpec = ChatProvider | SamplingCallback
"""What answers sampling: the user's model, or a callback."""

RootsSpec = Sequence[str | os.PathLike[str]]
"""The roots a client offers: `file://` URIs, or paths (made absolute URIs)."""


@dataclass(frozen=True, slots=True)
class Asking:
    """The SDK client's callbacks for one server (None: the request is not offered)."""

    elicitation: ElicitationFnT | None = None
    sampling: SamplingFnT | None = None
    roots: ListRootsFnT | None = None


def asking(
    server: str,
    elicitation: ElicitationCallback | None,
    sampling: SamplingSpec | None,
    roots: Sequence[mcp.Root] | None,
) -> Asking:
    """The SDK callbacks answering `server`'s requests with what `MCPToolset` was given."""
    return Asking(
        elicitation=None if elicitation is None else _elicitation(server, elicitation),
        sampling=None if sampling is None else _sampling(server, sampling),
        roots=None if roots is None else _roots(list(roots)),
    )


def roots_of(roots: RootsSpec) -> list[mcp.Root]:
    """The MCP roots of URIs and paths.

    Raises:
        ValueError: a string that is neither a URI (`scheme://...`) nor an absolute path.
    """
    made: list[mcp.Root] = []
    for root in roots:
        if isinstance(root, str) and "://" in root:
            made.append(mcp.Root(uri=root))  # pyright: ignore[reportArgumentType]
            continue
        path = Path(root)
        if not path.is_absolute():
            raise ValueError(f"root {os.fspath(root)!r} is neither a URI nor an absolute path")
        made.append(mcp.Root(uri=path.as_uri(), name=path.name or None))  # pyright: ignore[reportArgumentType]
    return made


def _refused(what: str, error: BaseException | str) -> mcp.ErrorData:
    reason = error if isinstance(error, str) else describe_exception(error)
    logger.warning("answering an MCP %s request failed: %s", what, reason)
    return mcp.ErrorData(code=mcp.INTERNAL_ERROR, message=f"the client's {what} failed: {reason}")


# --- elicitation ------------------------------------------------------------------------------


def _elicitation(server: str, callback: ElicitationCallback) -> ElicitationFnT:
    async def answer(
        context: ClientRequestContext, params: mcp.ElicitRequestParams
    ) -> mcp.ElicitResult | mcp.ErrorData:
        if isinstance(params, mcp.ElicitRequestURLParams):
            request = ElicitationRequest(
                server, params.message, "url", url=params.url, elicitation_id=params.elicitation_id
            )
        else:
            request = ElicitationRequest(
                server, params.message, "form", schema=dict(params.requested_schema)
            )
        try:
            given = cast(object, await callback(request))
        except Exception as e:  # the user's callback failed: the server gets an error
            return _refused("elicitation", e)
        if isinstance(given, mcp.ElicitResult):  # the SDK's own answer type, taken as it is
            given = ElicitAnswer(given.action, dict(given.content or {}) or None)
        if not isinstance(given, ElicitAnswer):
            return _refused(
                "elicitation",
                f"the callback answered {given!r}, not an ElicitAnswer or ElicitResult",
            )
        if given.action != "accept" or request.mode == "url":  # a URL-mode answer has no content
            return mcp.ElicitResult(action=given.action)
        content = {**_defaults(request.schema or {}), **(given.content or {})}
        return mcp.ElicitResult(action="accept", content=content)

    return answer


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The default of each property of a form that declares one (SEP-1034)."""
    properties: object = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: prop["default"]
        for name, prop in cast(dict[str, Any], properties).items()
        if isinstance(prop, dict) and "default" in prop
    }


# --- sampling ---------------------------------------------------------------------------------


def _sampling(server: str, spec: SamplingSpec) -> SamplingFnT:
    async def answer(
        context: ClientRequestContext, params: mcp.CreateMessageRequestParams
    ) -> mcp.CreateMessageResult | mcp.ErrorData:
        if params.tools:
            return _refused("sampling", "sampling with tools is not supported by this client")
        try:
            messages = [_message(m) for m in params.messages]
        except ValueError as e:
            return _refused("sampling", e)
        request = SamplingRequest(
            server=server,
            system_prompt=params.system_prompt or "",
            messages=messages,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            params=params,
        )
        try:
            if isinstance(spec, ChatProvider):
                return await _complete(spec, request)
            given = cast(object, await spec(request))
        except Exception as e:  # the model or the callback failed: the server gets an error
            return _refused("sampling", e)
        if isinstance(given, mcp.CreateMessageResult):
            return given
        if isinstance(given, str | Message):
            text = given if isinstance(given, str) else given.extract_text()
            return _result(text, model="client", finish=None)
        return _refused("sampling", f"the callback answered {given!r}, not text or a Message")

    return answer


async def _complete(provider: ChatProvider, request: SamplingRequest) -> mcp.CreateMessageResult:
    settings: dict[str, Any] = {"max_tokens": request.max_tokens}
    if request.temperature is not None:
        settings["temperature"] = request.temperature
    # Only providers that take generation settings get them (a scripted model takes none).
    takes = callable(getattr(provider, "with_generation_kwargs", None))
    result = await generate(
        provider,
        request.system_prompt,
        [],
        request.messages,
        generation_overrides=settings if takes else None,
    )
    return _result(result.message.extract_text(), provider.model_name, result.finish_reason)


_STOP_REASONS = {
    "length": "maxTokens", "max_tokens": "maxTokens", "MAX_TOKENS": "maxTokens",
    "max_output_tokens": "maxTokens", "stop_sequence": "stopSequence",
}  # fmt: skip


def _result(text: str, model: str, finish: str | None) -> mcp.CreateMessageResult:
    return mcp.CreateMessageResult(
        role="assistant",
        content=mcp.TextContent(text=text),
        model=model or "unknown",
        stop_reason=_STOP_REASONS.get(finish or "", "endTurn"),
    )


def _message(message: mcp.SamplingMessage) -> Message:
    blocks = message.content if isinstance(message.content, list) else [message.content]
    parts: list[ContentPart] = []
    for block in blocks:
        if not isinstance(block, mcp.TextContent | mcp.ImageContent | mcp.AudioContent):
            raise ValueError(f"{block.type} content in a sampling message is not supported")
        parts.append(block_to_part(block))
    return Message(role=message.role, content=parts)


# --- roots ------------------------------------------------------------------------------------


def _roots(roots: list[mcp.Root]) -> ListRootsFnT:
    async def answer(context: ClientRequestContext) -> mcp.ListRootsResult:
        return mcp.ListRootsResult(roots=roots)

    return answer
