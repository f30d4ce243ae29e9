"""The context of one call, in two parts.

- `CallContext`: what the running tool may see and add, through `current_call()` (or just
  `report_progress(...)`): the call's id, its tool's name, its trace id; progress; warnings,
  extra metadata, debug details and timings for the result's metadata; and what reaches back
  to whoever made the call (`caller_scope`: an MCP server's client): `elicit`, a question for
  the user (declined when nobody can answer), `sample`, a completion by their model, and
  `log`, a log message.
- `PolicyContext`: what the policies of a pipeline share about the call: the call, the tool's
  definition, the arguments (parsed once, the way the toolset parses them), what the policies
  record (retries, cache information...) and the call's event listeners. Tools never see it.

A call's contexts are made when it enters a pipeline (`PolicyToolset.call_tool`) and live
until its result leaves it. On the way out, what was recorded becomes the result's metadata
(`ToolResult.metadata`, a `CallMetadata`: the recorded values, written out when first read,
as an envelope or an event is made) and the final event.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

from pydantic import BaseModel

from kosong._timestamps import format_epoch, now_timestamp
from kosong.message import Message, ToolCall
from kosong.standard._caller import (
    CALLER,
    LOG_LEVELS,
    TOOL_LOGGER,
    ElicitAnswer,
    LogLevel,
    ask_user,
    log_locally,
)
from kosong.standard._digest import arguments_digest
from kosong.standard._events import EventSink, EventType, ToolEvent, final_event
from kosong.standard._trace import new_event_id
from kosong.tooling import Tool, ToolError, ToolResult
from kosong.tooling.error import ToolCancelledError
from kosong.utils.typing import JsonType

__all__ = [
    "RESERVED_METADATA",
    "CallContext",
    "CallMetadata",
    "PolicyContext",
    "current_call",
    "report_progress",
]

logger = logging.getLogger(__name__)

_CURRENT: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "kosong_standard_call", default=None
)

RESERVED_METADATA: Final = frozenset(
    {
        "tool_name", "execution_time_ms", "timestamp", "trace_id", "tool_call_id",
        "performance", "cache", "warnings", "debug_info", "repairs",
    }
)  # fmt: skip
"""Metadata keys the pipeline writes itself; `set_metadata` refuses them."""


def current_call() -> CallContext | None:
    """The context of the call being run, from inside a tool (None outside a pipeline)."""
    return _CURRENT.get()


def report_progress(progress: float | None, message: str = "") -> None:
    """Report how far the running tool is (0 to 100), if it runs inside a pipeline.

    `None` reports progress without a percentage (a message alone, when the tool cannot say
    how far it is). Safe to call from a worker thread (a sync tool). Outside a pipeline it does
    nothing.

    Raises:
        ValueError: `progress` is neither None nor a number from 0 to 100.
    """
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.report_progress(progress, message)


class CallContext:
    """A call as the running tool sees it (`current_call()`).

    Read: `tool_call_id`, `tool_name`, `trace_id`, `elapsed_ms`, `debug_enabled`. Report:
    `report_progress`. Add to the result's metadata: `add_warning`, `set_metadata`,
    `add_debug` (kept in debug mode only), `record_timing`; what was added is in `warnings`,
    `metadata`, `debug_info` and `timings`, which the result's `CallMetadata` reads. Reach
    whoever made the call: ask the user (`elicit`), ask their model (`sample`), send them a log
    message (`log`).
    """

    __slots__ = (
        "_progress",
        "_started",
        "debug_info",
        "metadata",
        "timings",
        "tool_call_id",
        "tool_name",
        "trace_id",
        "warnings",
    )

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        trace_id: str,
        *,
        progress: Callable[[float | None, str], None] | None = None,
    ) -> None:
        """Start the context of a call; `progress` receives what the tool reports."""
        self.tool_call_id = tool_call_id
        """The call's id."""
        self.tool_name = tool_name
        """The name the call asks for."""
        self.trace_id = trace_id
        """The trace the call belongs to."""
        self.warnings: list[str] = []
        """The warnings added (`add_warning`), for `metadata.warnings`."""
        self.metadata: dict[str, JsonType] = {}
        """The keys set with `set_metadata`, for the result's metadata."""
        self.timings: dict[str, float] = {}
        """Milliseconds per stage (`record_timing`), for `metadata.performance`."""
        self.debug_info: dict[str, JsonType] | None = None
        """The details added with `add_debug`; None unless debug mode is on."""
        self._progress = progress
        self._started = time.perf_counter()

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds since the call entered the pipeline."""
        return (time.perf_counter() - self._started) * 1000

    @property
    def debug_enabled(self) -> bool:
        """Whether debug mode is on for this call (`DebugPolicy`)."""
        return self.debug_info is not None

    def report_progress(self, progress: float | None, message: str = "") -> None:
        """Report how far the tool is, from 0 to 100 (None: not known); safe from any thread.

        A `tool_progress` event without a percentage has no `progress` field.

        Raises:
            ValueError: `progress` is neither None nor a number from 0 to 100.
        """
        number = cast(object, progress)  # callers may pass anything; check what arrived
        if number is not None and (
            isinstance(number, bool)
            or not isinstance(number, int | float)
            or not math.isfinite(number)
            or not 0 <= number <= 100
        ):
            raise ValueError(f"progress must be None or a number from 0 to 100, got {progress!r}")
        if self._progress is not None:
            self._progress(progress, str(message))

    def add_warning(self, text: str) -> None:
        """Add a warning to the result's metadata (`metadata.warnings`)."""
        self.warnings.append(text)

    def set_metadata(self, key: str, value: JsonType) -> None:
        """Set a key of the result's metadata (e.g. `deprecation`).

        Raises:
            ValueError: `key` is one the pipeline writes itself (`RESERVED_METADATA`).
        """
        if key in RESERVED_METADATA:
            raise ValueError(f"metadata key {key!r} is written by the pipeline; use another key")
        self.metadata[key] = value

    def add_debug(self, key: str, value: JsonType) -> None:
        """Add a detail to `debug_info` (kept only in debug mode)."""
        if self.debug_info is not None:
            self.debug_info[key] = value

    def record_timing(self, stage: str, milliseconds: float) -> None:
        """Add time spent in a stage to `metadata.performance` (e.g. `network_ms`)."""
        self.timings[stage] = self.timings.get(stage, 0.0) + milliseconds

    async def elicit(
        self, message: str, schema: Mapping[str, Any] | type[BaseModel]
    ) -> ElicitAnswer:
        """Ask the user `message`, for values fitting `schema` (a JSON Schema or a model).

        The question goes through whoever serves the call (an MCP server asks its client,
        in either protocol era); when nobody can answer (plain HTTP, a client without
        elicitation), the answer is `decline` at once. Keep `schema` flat: an object whose
        properties are strings, numbers, booleans or enums, as MCP clients render forms.

        Raises:
            ValueError: the user accepted with values that do not fit `schema`.
        """
        return await ask_user(message, schema)

    async def sample(
        self,
        messages: str | Sequence[Message],
        *,
        system_prompt: str = "",
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> Message:
        """A completion by the model of whoever made the call (an MCP client's, in either era).

        `messages` is the conversation to complete (a string: one user message); the answer is
        the assistant's message (`.extract_text()` for its text).

        Raises:
            RuntimeError: nobody who made the call can sample (a call over plain HTTP, an MCP
                client that did not offer sampling), or the client refused.
            ValueError: `max_tokens` is not a positive integer.
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        asked = (
            [Message(role="user", content=messages)]
            if isinstance(messages, str)
            else list(messages)
        )
        caller = CALLER.get()
        if caller is None:
            raise RuntimeError(
                f"`{self.tool_name}` asked for a completion, but nobody who made this call can "
                "sample (only an MCP client that offers sampling can)"
            )
        return await caller.sample(asked, system_prompt, max_tokens, temperature)

    async def log(self, level: LogLevel, message: JsonType, *, logger: str | None = None) -> None:
        """Send a log message to whoever made the call, if they take log messages.

        An MCP client gets `notifications/message` (the handshake era at the level it set with
        `logging/setLevel`, the 2026-07-28 era when its request asked for log messages with
        `_meta["io.modelcontextprotocol/logLevel"]`); with nobody to send it to, it goes to the
        Python logger `kosong.calls`. A failed send never fails the tool.

        Raises:
            ValueError: `level` is not one of `LOG_LEVELS`.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {', '.join(LOG_LEVELS)}; got {level!r}")
        caller = CALLER.get()
        if caller is None:
            log_locally(level, message, logger)
            return
        try:
            await caller.log(level, message, logger)
        except Exception as e:  # boundary: a log message not sent is not the tool's failure
            TOOL_LOGGER.warning("log message of %s not sent: %s", logger or self.tool_name, e)


class PolicyContext:
    """A call as the policies of a pipeline share it; see the module doc.

    Policies read `tool_call`, `tool`, `arguments` (parsed once, as the toolset parses them,
    and repaired if a policy repaired them: then `repairs` says how), `arguments_key`,
    `trace_id`; they record `retry_count`, `attempt_codes`, `cache`, `shared`,
    and what `call_context` (the tool's view) takes; they send events with `emit`.

    A policy that observes every call (`Policy.observes_refusals`) also sees calls the
    toolset refuses before they run: then `refusal` is the error the call ends with,
    `arguments` is None, and for an unknown tool there is no `tool` (`has_tool` is False).
    """

    __slots__ = (
        "_events",
        "_key",
        "_tool",
        "arguments",
        "attempt_codes",
        "cache",
        "call_context",
        "processing_ms",
        "refusal",
        "repairs",
        "retry_count",
        "shared",
        "tool_call",
        "tool_name",
        "trace_id",
    )

    def __init__(
        self,
        tool_call: ToolCall,
        tool: Tool | None,
        arguments: JsonType | None,
        trace_id: str,
        *,
        refusal: ToolError | None = None,
        sink: EventSink | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Start the context of `tool_call` to `tool` with its parsed `arguments`.

        For a call the toolset refuses, `refusal` is why (and `tool` None for an unknown tool).
        """
        self.tool_call = tool_call
        """The call."""
        self._tool = tool
        self.tool_name = tool_call.function.name
        """The name the call asks for."""
        self.arguments = arguments
        """The parsed arguments (None only for a refused call)."""
        self.refusal = refusal
        """Why the toolset refuses the call, for a call that never runs (else None)."""
        self.trace_id = trace_id
        """The trace the call belongs to."""
        self._events = _Events(tool_call, trace_id, sink, loop)
        self.call_context = CallContext(
            tool_call.id, tool_call.function.name, trace_id, progress=self._events.progress
        )
        """The call as the tool sees it; record warnings, metadata, debug details there."""
        self.retry_count = 0
        """How many times the call was retried."""
        self.attempt_codes: list[str] = []
        """The error code of each failed attempt, in order."""
        self.cache: dict[str, JsonType] | None = None
        """Set by the cache policy on a hit: `{hit, cached_at, ttl_remaining}`."""
        self.shared = False
        """True when the result is another identical call's (single-flight)."""
        self.processing_ms = 0.0
        """Time spent in the wrapped toolset, over all attempts."""
        self.repairs: list[JsonType] | None = None
        """What a repairing policy changed in the arguments before the chain ran
        (`Policy.repair`), each `{"path", "from", "to"}`; None when nothing was repaired."""
        self._key: str | None = None

    @property
    def tool(self) -> Tool:
        """The definition of the tool called.

        Raises:
            LookupError: the call is a refused call to an unknown tool (only policies that
                observe refusals see those; they check `has_tool` first).
        """
        tool = self._tool
        if tool is None:
            raise LookupError(f"no tool is named `{self.tool_name}`; see ctx.refusal")
        return tool

    @property
    def has_tool(self) -> bool:
        """Whether the call names a tool of the toolset (False only for an unknown tool)."""
        return self._tool is not None

    @property
    def written_as_string(self) -> bool:
        """Whether the arguments were written as a JSON string holding the object."""
        raw = self.tool_call.function.arguments
        return raw is not None and _STRING_START.match(raw) is not None

    @property
    def arguments_key(self) -> str | None:
        """A digest of the arguments: equal for equal values however written, else None.

        Key order and spacing do not count; a JSON string holding an object and the object
        itself differ. None for a refused call (see `arguments`).
        """
        if self._key is None and self.arguments is not None:
            self._key = arguments_digest(self.arguments, self.written_as_string)
        return self._key

    @arguments_key.setter
    def arguments_key(self, key: str | None) -> None:
        self._key = key

    def enable_debug(self) -> None:
        """Turn debug mode on for this call: the result gets `debug_info`."""
        if self.call_context.debug_info is None:
            self.call_context.debug_info = {}

    # --- events ----------------------------------------------------------------------------

    @property
    def has_listeners(self) -> bool:
        """Whether anyone receives this call's events (so building them is worth it)."""
        return bool(self._events.sinks)

    def add_sink(self, sink: EventSink) -> None:
        """Send this call's events, from now on, to `sink` as well."""
        self._events.sinks.append(sink)

    def event_metadata(self) -> dict[str, JsonType]:
        """The `metadata` of an event: tool name, timestamp, trace id and call id."""
        return self._events.metadata()

    def emit(self, event: EventType, data: dict[str, JsonType]) -> None:
        """Send an event to this call's listeners (from the loop's thread)."""
        self._events.emit(event, data)

    # --- the pipeline's side ---------------------------------------------------------------

    def enter(self) -> None:
        """Make this call the current one (`current_call()`) in the running task."""
        _CURRENT.set(self.call_context)

    def finish(self, result: ToolResult) -> ToolResult:
        """The call's result with its metadata, after the final event went to the listeners.

        The value is the one the policies passed out, not a copy: a policy that hands one
        value to several calls (a cache, single-flight) gives each its own copy.
        """
        final = ToolResult(result.tool_call_id, result.return_value, metadata=CallMetadata(self))
        self._events.end(final)
        return final

    def cancelled(self, reason: str | None = None) -> None:
        """The call was cancelled: its listeners get a final `tool_error` saying so.

        `reason` is the cancellation's message (`task.cancel(msg)`), when it had one.
        """
        value = ToolCancelledError(self.tool_name, reason)
        self._events.end(ToolResult(self.tool_call.id, value, metadata=CallMetadata(self)))


class CallMetadata(Mapping[str, JsonType]):
    """The standard's metadata of one call, as a read-only mapping, written out when first read.

    `tool_name`, `execution_time_ms`, `timestamp` (ISO 8601), `trace_id`, then what was
    recorded: `performance`, `cache`, `repairs`, `warnings`, the keys set with `set_metadata`,
    and in debug mode `debug_info`. A pipeline keeps the values as a call ends and writes them
    out when someone reads them (an envelope, an event, a test), which most calls never need.
    """

    __slots__ = (
        "_cache",
        "_call",
        "_data",
        "_debug",
        "_elapsed_ms",
        "_epoch",
        "_processing_ms",
        "_repairs",
    )

    def __init__(self, ctx: PolicyContext) -> None:
        """Take what `ctx` recorded, as the call ends."""
        call = ctx.call_context
        self._call = call
        """The tool's context: its name, trace id, warnings, metadata and timings."""
        self._processing_ms = ctx.processing_ms
        self._cache = ctx.cache
        self._repairs = ctx.repairs
        self._elapsed_ms = call.elapsed_ms
        self._epoch = time.time()
        self._debug: dict[str, JsonType] | None = None
        if call.debug_info is not None:  # the policies' numbers as they are now, then the tool's
            self._debug = {
                "cache_hit": bool(ctx.cache and ctx.cache.get("hit")),
                "retry_count": ctx.retry_count,
                "attempt_codes": list(ctx.attempt_codes),
                "shared_execution": ctx.shared,
                "execution_time_ms": round(self._elapsed_ms, 3),
                "trace_id": call.trace_id,
                **call.debug_info,
            }
        self._data: dict[str, JsonType] | None = None

    def _written(self) -> dict[str, JsonType]:
        if self._data is None:
            call = self._call
            data: dict[str, JsonType] = {
                "tool_name": call.tool_name,
                "execution_time_ms": round(self._elapsed_ms, 3),
                "timestamp": format_epoch(self._epoch),
                "trace_id": call.trace_id,
            }
            if self._processing_ms or call.timings:
                performance: dict[str, JsonType] = {}
                if self._processing_ms:
                    performance["processing_ms"] = round(self._processing_ms, 3)
                performance.update({k: round(v, 3) for k, v in call.timings.items()})
                data["performance"] = performance
            if self._cache is not None:
                data["cache"] = dict(self._cache)
            if self._repairs:
                data["repairs"] = list(self._repairs)
            if call.warnings:
                data["warnings"] = list(call.warnings)
            data.update(call.metadata)
            if self._debug is not None:
                data["debug_info"] = self._debug
            self._data = data
        return self._data

    def __getitem__(self, key: str) -> JsonType:
        return self._written()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._written())

    def __len__(self) -> int:
        return len(self._written())

    def __repr__(self) -> str:
        return f"CallMetadata({self._written()!r})"


_STRING_START = re.compile(r"\s*\"")


class _Events:
    """Where a call's events go: its listeners, reached from the loop or any thread.

    Both contexts of a call hold it; it holds neither, so a call's objects form no cycle and
    are freed as soon as the call ends (not by the cyclic garbage collector).
    """

    __slots__ = ("closed", "loop", "sinks", "tool_call", "trace_id")

    def __init__(
        self,
        tool_call: ToolCall,
        trace_id: str,
        sink: EventSink | None,
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        self.tool_call = tool_call
        self.trace_id = trace_id
        self.sinks: list[EventSink] = [sink] if sink is not None else []
        self.closed = False
        self.loop = loop

    def metadata(self) -> dict[str, JsonType]:
        return {
            "tool_name": self.tool_call.function.name,
            "timestamp": now_timestamp(),
            "trace_id": self.trace_id,
            "tool_call_id": self.tool_call.id,
        }

    def emit(self, event: EventType, data: dict[str, JsonType]) -> None:
        if self.sinks and not self.closed:
            self.send(ToolEvent(event, new_event_id(), data))

    def send(self, item: ToolEvent) -> None:
        for sink in self.sinks:
            try:
                sink(item)
            except Exception:  # boundary: a listener's failure is logged, never the call's
                logger.exception("Event listener %r failed on %s", sink, item.event)

    def progress(self, progress: float | None, message: str) -> None:
        """Send a `tool_progress` event; from any thread."""
        if not self.sinks or self.closed:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # a worker thread (a sync tool)
            running = None
        if running is not None and running is self.loop:
            self.emit_progress(progress, message)
        elif self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.emit_progress, progress, message)

    def emit_progress(self, progress: float | None, message: str) -> None:
        data: dict[str, JsonType] = {"message": message, "metadata": self.metadata()}
        if progress is not None:
            data = {"progress": progress, **data}
        self.emit("tool_progress", data)

    def end(self, final: ToolResult) -> None:
        """Send the final event (once) and stop sending."""
        if self.sinks and not self.closed:
            self.send(final_event(final, self.tool_call.function.name))
        self.closed = True
