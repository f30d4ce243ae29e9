"""`Anthropic`: Claude through Anthropic's Messages API.

Needs the `anthropic` extra (the `anthropic` extra). The request is built from
plain dicts, never the SDK's request types (their shape changed in anthropic 2.x).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

from typing_extensions import override

from kosong._extras import install_hint

try:
    import anthropic
    import httpx2
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        f"the Anthropic provider needs the `anthropic` package: {install_hint('anthropic')}"
    ) from e

from kosong.chat_provider import (
    AllowedTools,
    ChatProviderError,
    ThinkingEffort,
    ToolChoice,
)
from kosong.chat_provider._anthropic_answer import (
    ERRORS,
    AnthropicStream,
    block_parts,
    usage_of,
)
from kosong.chat_provider._base import (
    APIKey,
    CompletedMessage,
    HTTPProvider,
    arguments_object,
    connection_error,
    forces_a_call,
    header_of,
    highest_at_most,
    merged,
    model_from,
    only_allowed,
    spec_of,
    split_body,
    stainless_error,
    status_error,
)
from kosong.chat_provider._media import data_url, media_placeholder
from kosong.chat_provider._native_parts import for_provider
from kosong.chat_provider._tool_entries import Described, describe
from kosong.chat_provider.native import native_entries
from kosong.dialects import fix_schema, fix_tool
from kosong.formats import to_anthropic_tool
from kosong.message import (
    ContentPart,
    ImageURLPart,
    Message,
    NativeToolPart,
    TextPart,
    ThinkPart,
)
from kosong.tooling import Tool

_TIMEOUTS = (anthropic.APITimeoutError, httpx2.TimeoutException)
# A failed connection: the network, the peer breaking the protocol, a proxy (not a malformed
# request or an undecodable body, which a retry repeats).
_FAILURES = (
    anthropic.APIConnectionError, httpx2.NetworkError, httpx2.RemoteProtocolError, httpx2.ProxyError
)  # fmt: skip

__all__ = [
    "THINKING_BUDGETS",
    "THINKING_MODELS",
    "Anthropic",
    "ThinkingSpec",
    "clamped_effort",
    "thinking_spec",
]

THINKING_BUDGETS: dict[ThinkingEffort, int] = {
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 32000,
    "max": 64000,
}
"""The thinking budget (tokens) each effort asks for, on models that take `budget_tokens`."""

_EFFORTS: tuple[ThinkingEffort, ...] = ("low", "medium", "high", "xhigh", "max")


class ThinkingSpec(NamedTuple):
    """How a model family thinks: how thinking is asked for, which efforts, how it stops."""

    mode: Literal["adaptive", "budget"]
    """`adaptive`: `thinking: {"type": "adaptive"}` and `output_config.effort`; `budget`:
    `thinking: {"type": "enabled", "budget_tokens": N}` (`THINKING_BUDGETS`)."""
    efforts: tuple[ThinkingEffort, ...]
    """The `output_config.effort` values the model takes (empty: the field is not sent)."""
    off: Literal["disabled", "omit", "refuse"]
    """What "off" sends: `thinking: {"type": "disabled"}`, no `thinking` field at all (the
    model does not think by default), or nothing: the model always thinks (a ValueError)."""


_ALL = _EFFORTS
_NO_XHIGH: tuple[ThinkingEffort, ...] = ("low", "medium", "high", "max")

# Sources: https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking (which
# models take adaptive thinking, which refuse budget_tokens or "disabled"),
# https://platform.claude.com/docs/en/build-with-claude/effort (the effort levels of each
# model: "max" from Opus 4.6 / Sonnet 4.6 on, "xhigh" from Opus 4.7 on; Sonnet 4.5 and older
# take no effort) and https://platform.claude.com/docs/en/build-with-claude/extended-thinking.
# The first row whose prefix the model id starts with wins; a model found in none (older
# Claude models, unknown ids behind proxies) takes budget_tokens and no effort.
THINKING_MODELS: tuple[tuple[str, ThinkingSpec], ...] = (
    ("claude-mythos-preview", ThinkingSpec("adaptive", _NO_XHIGH, "refuse")),
    ("claude-mythos-5", ThinkingSpec("adaptive", _ALL, "refuse")),
    ("claude-fable-5", ThinkingSpec("adaptive", _ALL, "refuse")),
    ("claude-opus-5", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-sonnet-5", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-8", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-7", ThinkingSpec("adaptive", _ALL, "omit")),
    ("claude-opus-4-6", ThinkingSpec("adaptive", _NO_XHIGH, "disabled")),
    ("claude-sonnet-4-6", ThinkingSpec("adaptive", _NO_XHIGH, "disabled")),
    ("claude-opus-4-5", ThinkingSpec("budget", ("low", "medium", "high"), "disabled")),
)
"""Model family (an id prefix) → how it thinks; see the sources in the module."""

_DEFAULT_SPEC = ThinkingSpec("budget", (), "disabled")


def _ephemeral() -> dict[str, str]:
    """A prompt-cache breakpoint: a new dict for each place, so no body shares one."""
    return {"type": "ephemeral"}


_LATER_SPEC = ThinkingSpec("adaptive", _NO_XHIGH, "disabled")
_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)-(\d{1,2})(?!\d)")


def thinking_spec(model: str) -> ThinkingSpec:
    """The `ThinkingSpec` of a model id (a cloud prefix such as `us.anthropic.` is skipped).

    `claude-opus-4.7` reads as `claude-opus-4-7`. A model no row names but whose version is
    4.6 or later (`claude-opus-4-9`, `claude-haiku-5-0`) is taken to think as Opus / Sonnet
    4.6 do (adaptive, no "xhigh"): those refuse `budget_tokens`, which the older default asks
    for.
    """
    name = model.lower().replace(".", "-")
    spec = spec_of(name, "claude-", THINKING_MODELS, _DEFAULT_SPEC)
    found = _VERSION.search(name)
    if spec is _DEFAULT_SPEC and found and (int(found[1]), int(found[2])) >= (4, 6):
        return _LATER_SPEC
    return spec


def clamped_effort(model: str, effort: ThinkingEffort) -> ThinkingEffort:
    """The effort `model` is asked for when `effort` is wanted.

    The highest it takes at most `effort` (its `output_config.effort` values; "high" at most
    where it takes none). "off" stays "off".
    """
    if effort == "off":
        return effort
    spec = thinking_spec(model)
    accepted = sorted(spec.efforts or ("low", "medium", "high"), key=_EFFORTS.index)
    return highest_at_most(accepted, _EFFORTS.index, _EFFORTS.index(effort))


class Anthropic(HTTPProvider):
    """Claude through the Messages API.

    - `model`: required (or `ANTHROPIC_MODEL`); `api_key`: a key, or a callable read before
      each request; default `ANTHROPIC_API_KEY`, read before each request;
      `base_url`: default `ANTHROPIC_BASE_URL`, else Anthropic's.
    - `default_max_tokens`: the answer's token limit (the API requires one); `max_tokens` in
      the generation kwargs replaces it.
    - `stream=False` makes one plain request instead of a streamed one (same parts).
    - `prompt_cache=True` (the default) asks for prompt caching: `cache_control: {"type":
      "ephemeral"}` on the system prompt, the last tool and the last block of the last
      message, so each turn of an agent loop reads the conversation so far from the cache.
      Cache reads and writes are counted in `TokenUsage`.
    - Tools go as `{name, description, input_schema}` (`strict: true` for a strict tool, its
      unsupported constraints moved into the description), checked first against the API's
      rules;
      tool calls come and go as `tool_use` blocks with an object `input`; tool results as
      `tool_result` blocks (text and images), consecutive ones merged into one user message.
    - Thinking streams back as `ThinkPart`s with their signature (`encrypted`) and goes back
      as `thinking` blocks on later turns. `with_thinking(effort)` asks for it as the model
      family takes it (`THINKING_MODELS`): adaptive thinking with `output_config.effort`
      (clamped to the efforts the model takes), or `budget_tokens` (`THINKING_BUDGETS`).
    - `with_tool_choice`: "auto" → `{"type": "auto"}`, "none" → `{"type": "none"}`,
      "required" → `{"type": "any"}`, a name → `{"type": "tool", "name": ...}`; a forced call
      while thinking is a ValueError (the API takes only auto or none then). The API has no
      allowed subset: `AllowedTools` sends only its tools (auto or any), which changes the tool
      list. `with_parallel_tool_calls(False)` sends `disable_parallel_tool_use: true`.
    - Generation kwargs (`temperature`, `top_k`...) go in the request body, whether or not
      the SDK's method names them.
    - A system message in the middle of the history goes as a user message in
      `<system>...</system>`.

    Other keyword arguments go to `anthropic.AsyncAnthropic` (`timeout`, `max_retries`,
    `default_headers`, `http_client`...).
    """

    name = "anthropic"
    _errors = ERRORS
    _path = "v1/messages"
    _managed_fields = frozenset(
        {"model", "messages", "system", "stream", "tools", "tool_choice", "thinking"}
    )
    _output_fields = ("output_config",)

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | Callable[[], str] | None = None,
        base_url: str | None = None,
        default_max_tokens: int = 8192,
        stream: bool = True,
        prompt_cache: bool = True,
        tool_message_conversion: Literal["extract_text"] | None = None,
        metadata: Mapping[str, Any] | None = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(
            model_from(model, "ANTHROPIC_MODEL", "Anthropic"), generation_kwargs, stream=stream
        )
        self._key = APIKey(api_key, ["ANTHROPIC_API_KEY"], "Anthropic")
        self._max_tokens = default_max_tokens
        self._prompt_cache = prompt_cache
        self._tool_message_conversion = tool_message_conversion
        self._metadata = dict(metadata) if metadata else None
        self.client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=self._key(),
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            **client_kwargs,
        )
        """The `anthropic.AsyncAnthropic` client (transport, retries, timeouts)."""

    def _error(self, error: BaseException, url: str) -> ChatProviderError:
        """An `anthropic` SDK or `httpx2` error as one of ours."""
        where = self._where(url)
        failed = connection_error(error, error.__cause__ or error, _TIMEOUTS, _FAILURES, where)
        if failed is not None:
            return failed
        if isinstance(error, anthropic.APIStatusError):
            return status_error(error.response, error.body, error.request_id, where)
        if isinstance(error, httpx2.HTTPStatusError):
            return status_error(error.response, None, None, where)
        if isinstance(error, anthropic.APIError):
            bare = type(error) is anthropic.APIError
            return stainless_error(error.body, str(error), bare, where)
        return ChatProviderError(f"{type(error).__name__}: {error}", **where)

    @property
    def thinking_effort(self) -> ThinkingEffort | None:
        """The effort the model is asked for, or None for the model's default.

        On a model that takes `output_config.effort`, the one given clamped to what it takes
        (`clamped_effort`); on the others the one given (its budget is
        `THINKING_BUDGETS[effort]`).
        """
        if self._thinking is None or not thinking_spec(self._model).efforts:
            return self._thinking
        return clamped_effort(self._model, self._thinking)

    def _check_options(self) -> None:
        spec = thinking_spec(self._model)
        if self._thinking == "off" and spec.off == "refuse":
            raise ValueError(
                f'Anthropic: with_thinking("off") cannot be sent to {self._model}, which '
                "always thinks (the API refuses thinking disabled there)"
            )
        thinks = (self._thinking not in (None, "off")) or spec.off == "refuse"
        if thinks and forces_a_call(self._tool_choice):
            raise ValueError(
                f"Anthropic: tool_choice={self._tool_choice!r} forces a tool call, which the "
                "API refuses while thinking (only auto or none then): use "
                'with_thinking("off") or tool_choice="auto"'
            )

    def _thinking_fields(self, max_tokens: int) -> tuple[dict[str, Any], int]:
        effort = self._thinking
        spec = thinking_spec(self._model)
        if effort is None:
            return {}, max_tokens
        if effort == "off":
            return (
                {"thinking": {"type": "disabled"}} if spec.off == "disabled" else {}
            ), max_tokens
        fields: dict[str, Any] = {}
        if spec.mode == "adaptive":
            # "summarized": the thinking text comes back (Opus 4.7 and later omit it unless
            # asked; https://platform.claude.com/docs/en/build-with-claude/extended-thinking).
            fields["thinking"] = {"type": "adaptive", "display": "summarized"}
        else:
            budget = THINKING_BUDGETS[effort]
            fields["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens = max(max_tokens, budget + 4096)  # budget_tokens must be below it
        if spec.efforts:
            fields["output_config"] = {"effort": clamped_effort(self._model, effort)}
        return fields, max_tokens

    def _describe(self, tool: Tool) -> Described:
        if not tool.strict:
            return describe(tool, "anthropic", to_anthropic_tool(tool))
        # A strict tool gets the SDKs' own fix first: the constraints strict mode lacks go in
        # its description (the toolset still validates them).
        fixed = fix_tool(tool, "anthropic-strict")
        return describe(fixed, "anthropic-strict", to_anthropic_tool(fixed))

    @override
    def request_body(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> dict[str, Any]:
        tools = only_allowed(tools, self._tool_choice)  # no allowed subset: the equivalent
        described = self._described(tools)
        extra = dict(self._generation_kwargs)
        max_tokens = int(extra.pop("max_tokens", self._max_tokens))
        thinking, max_tokens = self._thinking_fields(max_tokens)
        messages = self._messages(history)
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        if system_prompt:
            body["system"] = (
                [{"type": "text", "text": system_prompt, "cache_control": _ephemeral()}]
                if self._prompt_cache
                else system_prompt
            )
        native = native_entries(self.name, self._native_tools)
        entries = [d.sent() for d in described] + native.tools
        if entries:
            body["tools"] = entries
            if self._prompt_cache:
                entries[-1]["cache_control"] = _ephemeral()
        if native.mcp_servers:
            body["mcp_servers"] = native.mcp_servers
        choice = _tool_choice(self._tool_choice, self._parallel if entries else None)
        if choice is not None:
            body["tool_choice"] = choice
        if self._prompt_cache:
            _mark_last_block(messages)
        body.update(thinking)
        if self._output is not None:
            # Structured outputs: every object closed, constraints described (the limits
            # strict tools have: https://platform.claude.com/docs/en/build-with-claude/
            # structured-outputs).
            schema = fix_schema(self._output.schema, "anthropic-strict")
            fmt = {"format": {"type": "json_schema", "schema": schema}}
            body["output_config"] = {**body.get("output_config", {}), **fmt}
        if self._metadata:
            body["metadata"] = self._metadata
        if self._stream:
            body["stream"] = True
        # Merged, not replaced: a user's output_config keeps the thinking effort set above.
        return merged(body, extra)

    def _messages(self, history: Sequence[Message]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in history:
            if message.role == "tool":
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id or "",
                    "content": self._tool_content(message.content),
                }
                if message.is_error:
                    block["is_error"] = True
                previous = out[-1] if out else None
                if (
                    previous is not None
                    and previous["role"] == "user"
                    and previous["content"]
                    and all(b.get("type") == "tool_result" for b in previous["content"])
                ):
                    previous["content"].append(block)
                else:
                    out.append({"role": "user", "content": [block]})
            elif message.role == "assistant":
                blocks = _assistant_blocks(message)
                if blocks:
                    out.append({"role": "assistant", "content": blocks})
            elif message.role == "system":
                text = f"<system>{message.extract_text()}</system>"
                out.append({"role": "user", "content": [{"type": "text", "text": text}]})
            else:
                out.append({"role": "user", "content": _blocks(message.content)})
        return out

    def _tool_content(self, parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
        if self._tool_message_conversion == "extract_text":
            text = "\n".join(p.text for p in parts if isinstance(p, TextPart) and p.text)
            return [{"type": "text", "text": text}] if text else []
        return _blocks(parts)

    async def _send(self, body: dict[str, Any]) -> AnthropicStream | CompletedMessage:
        known, rest = split_body(body, "model", "max_tokens", "messages", "stream")
        betas = native_entries(self.name, self._native_tools).betas
        known["extra_headers"] = self._key_headers()
        if betas:
            known["extra_headers"]["anthropic-beta"] = ",".join(betas)
        messages = self.client.messages
        if self._stream:
            stream = cast(Any, await messages.create(**known, extra_body=rest))
            return AnthropicStream(stream, self._convert)
        # An explicit timeout: the SDK refuses a plain request it guesses may take long.
        raw = cast(
            Any,
            await messages.with_raw_response.create(
                **known, extra_body=rest, timeout=self.client.timeout
            ),
        )
        message = await raw.parse()  # the anthropic SDK's raw response parses asynchronously
        return CompletedMessage(
            [part for block in message.content for part in block_parts(block)],
            id=message.id,
            model=message.model,
            usage=usage_of(message.usage, message.usage.output_tokens),
            finish_reason=message.stop_reason,
            request_id=header_of(raw, "request-id"),
        )


def _tool_choice(choice: ToolChoice | None, parallel: bool | None) -> dict[str, Any] | None:
    """`tool_choice` on the wire; `parallel=False` as `disable_parallel_tool_use`."""
    if isinstance(choice, AllowedTools):
        choice = choice.mode  # the other tools were left out of the request
    if choice is None and parallel is False:
        choice = "auto"
    if choice is None:
        return None
    if choice == "required":
        out: dict[str, Any] = {"type": "any"}
    elif choice in ("auto", "none"):
        out = {"type": choice}
    else:
        out = {"type": "tool", "name": choice}
    if parallel is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def _mark_last_block(messages: list[dict[str, Any]]) -> None:
    """Put the cache breakpoint on the last block that can hold one (not a thinking block)."""
    if not messages:
        return
    for block in reversed(messages[-1]["content"]):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            block["cache_control"] = _ephemeral()
            return


def _blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            out.append({"type": "image", "source": _image_source(part.image_url.url)})
        elif not isinstance(part, ThinkPart | NativeToolPart):
            out.append({"type": "text", "text": media_placeholder(part)})
    return out


def _image_source(url: str) -> dict[str, Any]:
    inline = data_url(url)
    if inline is not None:
        return {"type": "base64", "media_type": inline[0], "data": inline[1]}
    return {"type": "url", "url": url}


def _cited_text(block: Mapping[str, Any]) -> str | None:
    text = block.get("text")
    return text if block.get("type") == "text" and isinstance(text, str) else None


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in for_provider(message.content, "anthropic", _cited_text):
        if isinstance(part, NativeToolPart):
            blocks.append(copy.deepcopy(part.data))  # as the API sent it
        elif isinstance(part, ThinkPart):
            # A thinking block goes back only with its signature; the API refuses it without.
            if part.encrypted:
                blocks.append(
                    {"type": "thinking", "thinking": part.think, "signature": part.encrypted}
                )
        elif isinstance(part, TextPart):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.extend(_blocks([part]))
    for call in message.tool_calls or []:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": arguments_object(call),
            }
        )
    return blocks
