"""`step`: one answer of the model with its tool calls dispatched while it streams."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kosong._generate import Callback, GenerateResult, generate
from kosong._guard import Failed, call_guarded
from kosong._telemetry import dispatch as traced_handle
from kosong.chat_provider import ChatProvider, StreamedMessagePart, ToolChoice
from kosong.chat_provider.native import NativeTool, NativeToolSpec
from kosong.message import ContentPart, Message, TextPart, ToolCall
from kosong.tooling import HandleResult, SearchableToolset, Tool, ToolOk, ToolResult, Toolset
from kosong.utils.typing import JsonType

__all__ = ["StepResult", "offered", "step", "tool_result_to_message"]

logger = logging.getLogger("kosong.step")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepResult(GenerateResult):
    """One answer of the model (a `GenerateResult`) with the results of its tool calls."""

    tool_calls: list[ToolCall]
    """The tool calls of the answer, in order (each already handed to the toolset)."""
    _tool_result_futures: list[HandleResult] = field(repr=False)

    async def tool_results(self) -> list[ToolResult]:
        """Wait for every tool call's result; return them in call order.

        If this is cancelled, or awaiting fails, the calls still running are cancelled and
        awaited before it returns.
        """
        pending = self._tool_result_futures
        try:
            results = [await future for future in pending]
        finally:
            await _cancel_all(pending)
        # A result is awaitable too: kept instead of its finished task, which a step kept by
        # `agent_loop` would otherwise hold (with the task's context) for the whole loop.
        pending[:] = results
        return results


async def step(
    chat_provider: ChatProvider,
    system_prompt: str,
    toolset: Toolset,
    history: Sequence[Message],
    *,
    on_message_part: Callback[StreamedMessagePart] | None = None,
    on_tool_result: Callable[[ToolResult], None] | None = None,
    on_provider_trace_id: Callback[str | None] | None = None,
    tool_choice: ToolChoice | None = None,
    generation_overrides: Mapping[str, Any] | None = None,
    on_trace_id: Callback[str | None] | None = None,
    parallel_tool_calls: bool | None = None,
    native_tools: Sequence[NativeToolSpec] | None = None,
) -> StepResult:
    """Ask the model for one answer and run its tool calls while the answer still streams.

    Each tool call goes to `toolset.handle()` the moment it is complete, so tools run while
    the rest of the answer arrives; `StepResult.tool_results()` gives their results in call
    order. `on_tool_result` (sync) is called as each result is ready, in completion order; it
    is not called for a call cancelled before it finished. `history` is not changed.
    `tool_choice`, `parallel_tool_calls`, `native_tools`, `generation_overrides` and
    `on_provider_trace_id` (alias `on_trace_id`) are passed to `generate` (see there): they
    apply to this step only. A native tool's blocks stay in the message as `NativeToolPart`s:
    the provider ran it, so the toolset never sees them. A call of a provider's builtin
    function (a `$` name: Moonshot's `$web_search`) is answered with its own arguments, as
    Moonshot's tool-use guide says, and never reaches the toolset either.

    If the provider fails or the step is cancelled while the answer streams, every tool call
    already dispatched is cancelled and awaited before the error (or the cancellation)
    propagates: no tool keeps running behind the caller's back.

    Raises:
        ChatProviderError: the provider failed.
    """
    futures: list[HandleResult] = []

    def report(future: asyncio.Future[ToolResult]) -> None:
        if on_tool_result is None or future.cancelled() or future.exception() is not None:
            return
        outcome = call_guarded(on_tool_result, future.result())
        if isinstance(outcome, Failed):  # a failing callback must not break the step
            logger.error("on_tool_result raised", exc_info=outcome.error)

    def dispatch(tool_call: ToolCall) -> None:
        if tool_call.function.name.startswith("$"):
            # A provider's builtin function (Moonshot's $web_search): the provider runs it,
            # and wants the call's arguments back as its result (Moonshot's tool-use guide).
            echoed = ToolResult(tool_call.id, ToolOk(output=tool_call.function.arguments or ""))
            future = _as_future(echoed)
        else:
            future = _as_future(traced_handle(toolset, tool_call))  # handle(), in a span
        if on_tool_result is not None:  # a callback scheduled per call costs, even a no-op
            future.add_done_callback(report)
        futures.append(future)

    tools, searching = offered(toolset, chat_provider)
    if searching:
        native_tools = [*(native_tools or ()), *searching]
    try:
        result = await generate(
            chat_provider,
            system_prompt,
            tools,
            history,
            on_message_part=on_message_part,
            on_tool_call=dispatch,
            on_provider_trace_id=on_provider_trace_id,
            tool_choice=tool_choice,
            generation_overrides=generation_overrides,
            on_trace_id=on_trace_id,
            parallel_tool_calls=parallel_tool_calls,
            native_tools=native_tools,
        )
    except BaseException:
        await _cancel_all(futures)
        raise
    return StepResult(
        id=result.id,
        message=result.message,
        usage=result.usage,
        tool_calls=list(result.message.tool_calls or []),
        _tool_result_futures=futures,
        provider_trace_id=result.provider_trace_id,
        request_id=result.request_id,
        finish_reason=result.finish_reason,
    )


def tool_result_to_message(result: ToolResult, *, text_only: bool = False) -> Message:
    """The tool message that gives `result` back to the model.

    Its content is the tool's output (text, or its content parts) followed by the result's
    `message` when there is one; a failure's message is marked `ERROR:` so the model knows the
    call failed, and the message's `is_error` is True (sent as the API marks a failed call,
    where it has a way: Anthropic's `is_error`, Gemini's `error`). Display blocks and extras
    are for the user interface and never sent. With `text_only`, non-text parts are left out
    (for a provider that accepts only text in tool messages); providers do that themselves
    where needed, so the default keeps every part.
    """
    value = result.return_value
    parts: list[ContentPart] = (
        [TextPart(text=value.output)] if isinstance(value.output, str) else list(value.output)
    )
    if text_only:
        parts = [p for p in parts if isinstance(p, TextPart)]
    parts = [p for p in parts if not (isinstance(p, TextPart) and not p.text)]
    if value.message:
        parts.append(TextPart(text=_error_text(value.message) if value.is_error else value.message))
    elif value.is_error and not parts:
        parts.append(TextPart(text="ERROR: the tool call failed"))
    return Message(
        role="tool",
        tool_call_id=result.tool_call_id,
        content=parts or "",
        is_error=True if value.is_error else None,
    )


_NATIVE_SEARCH: dict[str, dict[str, JsonType]] = {
    "anthropic": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "openai-responses": {"type": "tool_search"},
}
"""The providers with a tool search of their own, and its tool: Anthropic's BM25 tool search
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool) and the
Responses API's `tool_search` (https://platform.openai.com/docs/guides/tools-tool-search)."""


def offered(toolset: Toolset, provider: ChatProvider) -> tuple[list[Tool], list[NativeToolSpec]]:
    """The tools a step offers, and the native tools it adds.

    A `searchable` toolset (with `native_search`) sent to a provider with a tool search of
    its own offers its whole catalog, each tool deferred (but the always-visible ones), and
    that provider's search tool: the same list at every step. Else the toolset's `tools`.
    """
    name = getattr(provider, "name", "")
    search = _NATIVE_SEARCH.get(name)
    if not (isinstance(toolset, SearchableToolset) and toolset.native_search and search):
        return toolset.tools, []
    return toolset.deferred(name), [NativeTool(name, search)]


def _error_text(message: str) -> str:
    """`ERROR: ` and the message, saying "error" once.

    The built-in errors' messages begin with "Error ...": `Error running tool: x` gives
    `ERROR: running tool: x`.
    """
    first, space, rest = message.partition(" ")
    if space and rest and first.rstrip(":").lower() == "error":
        return f"ERROR: {rest}"
    return f"ERROR: {message}"


def _as_future(handled: asyncio.Future[ToolResult] | ToolResult) -> asyncio.Future[ToolResult]:
    if isinstance(handled, ToolResult):
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        future.set_result(handled)
        return future
    return handled


async def _cancel_all(futures: Sequence[HandleResult]) -> None:
    running = [f for f in futures if isinstance(f, asyncio.Future) and not f.done()]
    for future in running:
        future.cancel()
    if running:
        await asyncio.gather(*running, return_exceptions=True)
