"""The context of one call, shared by the policies of a pipeline and reachable by the tool.

Policies read and record in it; a running tool reaches it with `current_call()` to report
progress.

A context is created when a call enters a pipeline (`PolicyToolset.handle`) and lives until its
result leaves it. Policies record in it (a retry, a cache hit, a warning); on the way out it
becomes the result's metadata (`extras["standard"]["metadata"]`) and the final event.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

from kosong.message import ToolCall
from kosong.standard._values import STANDARD_KEY, replace_extras, round3, with_standard
from kosong.standard.envelope import to_envelope
from kosong.standard.events import EventSink, EventType, ToolEvent
from kosong.standard.trace import (
    _TRACE_ID,  # pyright: ignore[reportPrivateUsage]
    format_epoch,
    new_event_id,
    new_trace_id,
    now_timestamp,
)
from kosong.tooling import Tool, ToolResult, ToolReturnValue
from kosong.tooling._arguments import (  # the same parsing the toolset applies
    DEFAULT_LIMITS,
    ArgumentsError,
    parse_arguments,
)
from kosong.utils.typing import JsonType

__all__ = [
    "UNPARSEABLE",
    "CallContext",
    "canonical_json",
    "current_call",
    "report_progress",
]

logger = logging.getLogger(__name__)


class _Unparseable:
    def __repr__(self) -> str:
        return "UNPARSEABLE"


UNPARSEABLE: Final = _Unparseable()
"""What `CallContext.arguments()` gives for arguments that are not acceptable JSON."""

_CURRENT: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "kosong_standard_call", default=None
)

# Argument text -> (its digest, whether it parsed), for recent texts. A model that repeats a
# call (what the cache, the repeat guard and single-flight are for) mostly repeats its text
# too, and the memo spares such a call the parse and the canonical encoding (most of the cost
# of a cache hit). The digest is a function of the text alone, so a remembered one is exact.
# Bounded in entries and in the length of the texts kept.
_MEMO_ENTRIES = 1024
_MEMO_TEXT = 1024
_DIGESTS: dict[str, tuple[str, bool]] = {}


def current_call() -> CallContext | None:
    """The context of the call being run, from inside a tool (None outside a pipeline)."""
    return _CURRENT.get()


def report_progress(progress: float, message: str = "") -> None:
    """Report how far the running tool is (0 to 100), if it runs inside a pipeline.

    Safe to call from a worker thread (a sync tool). Outside a pipeline it does nothing.

    Raises:
        ValueError: `progress` is not a number from 0 to 100.
    """
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.report_progress(progress, message)


class CallContext:
    """The state of one call in a pipeline.

    Read by policies: the call, the tool's definition (None for an unknown tool), the trace id,
    the parsed arguments. Recorded by policies: retries, cache information, warnings, timings,
    debug details, extra metadata. A tool reaches it with `current_call()`.
    """

    __slots__ = (
        "_args",
        "_closed",
        "_debug",
        "_digest",
        "_digest_parsed",
        "_extra_metadata",
        "_loop",
        "_perf",
        "_sinks",
        "_start",
        "_thread",
        "_warnings",
        "attempt_codes",
        "cache",
        "processing_ms",
        "retry_count",
        "shared",
        "tool",
        "tool_call",
        "trace_id",
    )

    def __init__(
        self,
        tool_call: ToolCall,
        tool: Tool | None,
        *,
        trace_id: str | None = None,
        sink: EventSink | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Start the context of `tool_call` to `tool`.

        The trace id is `trace_id` if given, else the call's `extras["trace_id"]`, else the
        current trace (an enclosing call or `trace_scope`), else a new one.
        """
        self.tool_call = tool_call
        """The call."""
        self.tool = tool
        """The tool's definition, or None when no tool has the call's name."""
        if not trace_id:  # `_given_trace_id` inlined: every call comes here
            extras = tool_call.extras
            given = extras.get("trace_id") if extras else None
            if isinstance(given, str) and 0 < len(given) <= 128:
                trace_id = given
            else:
                trace_id = _TRACE_ID.get() or new_trace_id()
        self.trace_id: str = trace_id
        """The trace the call belongs to."""
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
        self._start = time.perf_counter()
        self._sinks: list[EventSink] | None = [sink] if sink is not None else None
        self._warnings: list[str] | None = None
        self._perf: dict[str, float] | None = None
        self._debug: dict[str, JsonType] | None = None
        self._extra_metadata: dict[str, JsonType] | None = None
        self._args: Any = None
        self._digest: str | None = None
        self._digest_parsed = False
        self._loop = loop
        self._thread = threading.get_ident()
        self._closed = False

    # --- reading ---------------------------------------------------------------------------

    @property
    def tool_name(self) -> str:
        """The name the call asks for."""
        return self.tool_call.function.name

    @property
    def tool_call_id(self) -> str:
        """The call's id."""
        return self.tool_call.id

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds since the call entered the pipeline."""
        return (time.perf_counter() - self._start) * 1000

    async def arguments(self) -> JsonType | _Unparseable:
        """The call's arguments, parsed once as the toolset parses them, or `UNPARSEABLE`.

        Long argument strings are parsed in a worker thread, so the loop never stalls.
        """
        if self._args is None:
            raw = self.tool_call.function.arguments
            try:
                if raw is not None and len(raw) > DEFAULT_LIMITS.offload_length:
                    parsed = await asyncio.to_thread(parse_arguments, raw, DEFAULT_LIMITS)
                else:
                    parsed = parse_arguments(raw, DEFAULT_LIMITS)
            except ArgumentsError:
                self._args = (UNPARSEABLE,)
            else:
                self._args = (parsed,)
        return self._args[0]

    async def arguments_digest(self) -> str:
        """A digest of the arguments that ignores key order and spacing.

        Two calls with the same arguments, however written, have the same digest; arguments
        that do not parse are digested as written.
        """
        digest = self._digest
        if digest is not None:
            return digest
        raw = self.tool_call.function.arguments
        if raw is not None and len(raw) > DEFAULT_LIMITS.offload_length:
            return self._digest_of(raw, await self.arguments())  # parsed in a worker thread
        return self._digest_now(raw)

    def arguments_digest_nowait(self) -> str | None:
        """`arguments_digest()` when it is at hand without waiting, else None.

        It is, unless the arguments are long enough to be parsed in a worker thread and have
        not been parsed yet.
        """
        digest = self._digest
        if digest is not None:
            return digest
        raw = self.tool_call.function.arguments
        if raw is not None and len(raw) > DEFAULT_LIMITS.offload_length:
            return None if self._args is None else self._digest_of(raw, self._args[0])
        return self._digest_now(raw)

    def arguments_seen_recently(self) -> bool:
        """Whether a recent call had the very same argument text (or the call has none).

        A recent text has its digest at hand (see `arguments_digest`), and it is taken here.
        """
        raw = self.tool_call.function.arguments
        if raw is None:
            return True
        known = _DIGESTS.get(raw)  # texts too long to be kept are never found
        if known is None:
            return False
        self._digest, self._digest_parsed = known
        return True

    @property
    def arguments_parsed(self) -> bool | None:
        """Whether the arguments parse (None until they were parsed or digested)."""
        if self._args is not None:
            return self._args[0] is not UNPARSEABLE
        return self._digest_parsed if self._digest is not None else None

    def _digest_now(self, raw: str | None) -> str:
        """The digest of arguments short enough to parse on the loop."""
        known = _DIGESTS.get(raw) if raw is not None and len(raw) <= _MEMO_TEXT else None
        if known is not None:
            self._digest, self._digest_parsed = known
            return known[0]
        if self._args is None:
            try:
                self._args = (parse_arguments(raw, DEFAULT_LIMITS),)
            except ArgumentsError:
                self._args = (UNPARSEABLE,)
        digest = self._digest_of(raw, self._args[0])
        if raw is not None and len(raw) <= _MEMO_TEXT:
            if len(_DIGESTS) >= _MEMO_ENTRIES:
                # Start afresh: dropping entries one by one from the front of a dict makes
                # finding the front slower and slower until the dict is rebuilt.
                _DIGESTS.clear()
            _DIGESTS[raw] = (digest, self._digest_parsed)
        return digest

    def _digest_of(self, raw: str | None, args: JsonType | _Unparseable) -> str:
        if isinstance(args, _Unparseable):
            text = "raw:" + (raw or "")
        else:
            text = _parsed_canonical_json(args)
        self._digest_parsed = not isinstance(args, _Unparseable)
        self._digest = digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return digest

    @property
    def debug_enabled(self) -> bool:
        """Whether debug mode is on for this call (`DebugPolicy`)."""
        return self._debug is not None

    # --- recording -------------------------------------------------------------------------

    def enable_debug(self) -> None:
        """Turn debug mode on for this call: the result gets `debug_info`."""
        if self._debug is None:
            self._debug = {}

    def add_debug(self, key: str, value: JsonType) -> None:
        """Add a detail to `debug_info` (kept only in debug mode)."""
        if self._debug is not None:
            self._debug[key] = value

    def add_warning(self, text: str) -> None:
        """Add a warning to the result's metadata (`metadata.warnings`)."""
        if self._warnings is None:
            self._warnings = []
        self._warnings.append(text)

    def set_metadata(self, key: str, value: JsonType) -> None:
        """Set an extra key of the result's metadata (e.g. `deprecation`)."""
        if self._extra_metadata is None:
            self._extra_metadata = {}
        self._extra_metadata[key] = value

    def record_timing(self, stage: str, milliseconds: float) -> None:
        """Add time spent in a stage to `metadata.performance` (e.g. `network_ms`)."""
        if self._perf is None:
            self._perf = {}
        self._perf[stage] = self._perf.get(stage, 0.0) + milliseconds

    def add_sink(self, sink: EventSink) -> None:
        """Send this call's events, from now on, to `sink` as well."""
        if self._sinks is None:
            self._sinks = []
        self._sinks.append(sink)

    # --- events ----------------------------------------------------------------------------

    @property
    def has_listeners(self) -> bool:
        """Whether anyone receives this call's events (so building them is worth it)."""
        return self._sinks is not None

    def event_metadata(self) -> dict[str, JsonType]:
        """The `metadata` of an event: tool name, timestamp, trace id and call id."""
        return {
            "tool_name": self.tool_name,
            "timestamp": now_timestamp(),
            "trace_id": self.trace_id,
            "tool_call_id": self.tool_call_id,
        }

    def emit(
        self, event: EventType, data: dict[str, JsonType], result: ToolResult | None = None
    ) -> None:
        """Send an event to this call's listeners (from the loop's thread)."""
        sinks = self._sinks
        if sinks is None or self._closed:
            return
        item = ToolEvent(event, new_event_id(), data, result)
        for sink in sinks:
            try:
                sink(item)
            except Exception:  # a listener's failure must not fail the call
                logger.exception("Event listener %r failed on %s", sink, event)

    def report_progress(self, progress: float, message: str = "") -> None:
        """Report how far the tool is, from 0 to 100; thread-safe.

        Raises:
            ValueError: `progress` is not a number from 0 to 100.
        """
        number = cast(object, progress)  # callers may pass anything; check what arrived
        if (
            isinstance(number, bool)
            or not isinstance(number, int | float)
            or not math.isfinite(number)
            or not 0 <= number <= 100
        ):
            raise ValueError(f"progress must be a number from 0 to 100, got {progress!r}")
        if self._sinks is None:
            return
        if threading.get_ident() == self._thread:
            self._emit_progress(progress, message)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._emit_progress, progress, message)

    def _emit_progress(self, progress: float, message: str) -> None:
        self.emit(
            "tool_progress",
            {"progress": progress, "message": message, "metadata": self.event_metadata()},
        )

    # --- the pipeline's side ---------------------------------------------------------------

    def enter(self) -> None:
        """Make this the current call (and its trace current) in the running task."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        _CURRENT.set(self)
        _TRACE_ID.set(self.trace_id)

    def finish(self, value: ToolReturnValue) -> ToolReturnValue:
        """`value` with this call's metadata (and debug info) recorded in its extras."""
        elapsed = (time.perf_counter() - self._start) * 1000000.0  # round3(), inlined
        elapsed = _floor(elapsed + 0.5) / 1000.0 if elapsed < 1e15 else round3(elapsed / 1000)
        metadata: dict[str, JsonType] = {
            "tool_name": self.tool_call.function.name,
            "execution_time_ms": elapsed,
            "timestamp": format_epoch(time.time()),  # now_timestamp(), a call less
            "trace_id": self.trace_id,
        }
        if self.processing_ms or self._perf:
            performance: dict[str, JsonType] = {}
            if self.processing_ms:
                performance["processing_ms"] = round3(self.processing_ms)
            if self._perf:
                performance.update({k: round3(v) for k, v in self._perf.items()})
            metadata["performance"] = performance
        if self.cache is not None:
            metadata["cache"] = self.cache
        if self._warnings:
            metadata["warnings"] = list(self._warnings)
        if self._extra_metadata:
            metadata.update(self._extra_metadata)
        debug: dict[str, JsonType] | None = None
        if self._debug is not None:
            debug = {
                "cache_hit": bool(self.cache and self.cache.get("hit")),
                "retry_count": self.retry_count,
                "attempt_codes": list(self.attempt_codes),
                "shared_execution": self.shared,
                "execution_time_ms": elapsed,
                "trace_id": self.trace_id,
                **self._debug,
            }
        if not value.extras:  # the usual case, without with_standard's general merging
            part: dict[str, JsonType] = {"metadata": metadata}
            if debug is not None:
                part["debug_info"] = debug
            return replace_extras(value, {STANDARD_KEY: part})
        return with_standard(value, metadata=metadata, debug_info=debug)

    def emit_final(self, result: ToolResult) -> None:
        """Send the final event (`tool_result` or `tool_error`) and stop sending events."""
        if self._sinks is not None and not self._closed:
            value = result.return_value
            envelope = to_envelope(result, lossless=False)
            self.emit("tool_error" if value.is_error else "tool_result", envelope.dump(), result)
        self._closed = True

    def close(self) -> None:
        """Stop sending events (the call was cancelled)."""
        self._closed = True


_floor = math.floor

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: JsonType) -> str:
    """JSON text of `value` with sorted keys and no spaces: equal values, equal text."""
    return _CANONICAL.encode(value)  # one encoder for all: building one per call costs more


def _make_parsed_encoder() -> Callable[[Any], str]:
    """`canonical_json` for values `parse_arguments` made, at under half the cost.

    `JSONEncoder.encode` builds a C encoder on every call; this builds it once, with the
    settings `_CANONICAL` passes. Values parsed from JSON cannot hold cycles, so it skips the
    check for them. The C encoder is CPython's (`json.encoder.c_make_encoder`, the same
    arguments from 3.11 to 3.13); where it is missing or answers differently from
    `_CANONICAL`, `canonical_json` itself is used.
    """
    make = cast(Callable[..., Any] | None, getattr(json.encoder, "c_make_encoder", None))
    if make is None:  # pragma: no cover - CPython has it
        return canonical_json
    try:
        encode = cast(
            Callable[[Any, int], Sequence[str]],
            make(None, None, json.encoder.encode_basestring, None, ":", ",", True, False, True),
        )
        probe: JsonType = {"b": [1.5, "\u00e9\n", None, True], "a": {"d": -0.0, "c": 10**20}}
        if "".join(encode(probe, 0)) != canonical_json(probe):  # pragma: no cover
            return canonical_json
    except Exception:  # pragma: no cover - another signature: use the general path
        return canonical_json

    def fast(value: Any) -> str:
        return "".join(encode(value, 0))

    return fast


_parsed_canonical_json = _make_parsed_encoder()
