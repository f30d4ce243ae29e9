"""Truncation: outputs too long for the model are cut, and the rest stays reachable.

A successful text output longer than the limit (characters, or estimated tokens by the
standard's ratios) is replaced by the standard's truncated form:

    {"content": "<the first part>", "truncated": true,
     "truncation_info": {"original_length": 15000, "returned_length": 2000,
                         "continuation": "<cursor>", "summary": "..."}}

The full output is kept in a continuation store, and `continuation` is an opaque cursor the
model passes to the built-in "read more" tool (added to the toolset's tools) to get the next
part, in the same form, until `truncated` is false. Cutting never loses data: every character
is reachable, as long as the store keeps it (an hour by default). Lengths are in characters.

Only successful text outputs are cut: errors, and outputs made of content parts (images...),
pass whole. Cursors are signed with a secret of the policy's (`secret`, random by default): a
forged or altered cursor is refused as INVALID_PARAMS, and every cursor moves forward, so
following them always ends.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, cast

from kosong._guard import Failed, await_guarded
from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._pagination import CursorError, decode_cursor, encode_cursor
from kosong.standard._pipeline import Forward, Policy
from kosong.standard._tokens import CHARS_PER_TOKEN, chars_for_tokens, guess_kind
from kosong.tooling import Tool, ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import (
    ToolResourceNotFoundError,
    ToolValidateError,
    describe_exception,
)
from kosong.utils.typing import JsonType

__all__ = ["ContinuationStore", "MemoryContinuationStore", "TruncationPolicy"]

logger = logging.getLogger(__name__)

Summarizer = Callable[[str], str | Awaitable[str]]
"""Makes the `summary` of a truncated output from the full text."""


class ContinuationStore(ABC):
    """Where full outputs wait for the model to read the rest."""

    @abstractmethod
    async def put(self, text: str) -> str:
        """Keep `text`; return a key for it."""

    @abstractmethod
    async def get(self, key: str) -> str | None:
        """The text kept under `key`, or None when unknown or expired."""


class MemoryContinuationStore(ContinuationStore):
    """Full outputs in memory: the newest `max_entries`, each for `ttl` seconds."""

    def __init__(
        self,
        max_entries: int = 256,
        *,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Keep up to `max_entries` outputs for `ttl` seconds each.

        Raises:
            ValueError: a limit is not positive.
        """
        if max_entries < 1 or not ttl > 0:
            raise ValueError("max_entries must be at least 1 and ttl positive")
        self._texts: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl
        self._clock = clock

    async def put(self, text: str) -> str:
        """Keep `text`, dropping the oldest output when full."""
        key = os.urandom(9).hex()
        self._texts[key] = (text, self._clock() + self._ttl)
        while len(self._texts) > self._max:
            self._texts.popitem(last=False)
        return key

    async def get(self, key: str) -> str | None:
        """The output under `key`, unless it expired."""
        kept = self._texts.get(key)
        if kept is None:
            return None
        if kept[1] <= self._clock():
            del self._texts[key]
            return None
        return kept[0]


class TruncationPolicy(Policy):
    """Cut long outputs and serve the rest through a "read more" tool; see the module doc."""

    def __init__(
        self,
        max_length: int = 20_000,
        *,
        unit: Literal["chars", "tokens"] = "chars",
        per_tool: Mapping[str, int | None] | None = None,
        store: ContinuationStore | None = None,
        read_more_tool: str = "read_more",
        summarize: Summarizer | None = None,
        secret: bytes | None = None,
    ) -> None:
        """Cut outputs longer than `max_length`.

        Args:
            max_length: The longest output passed on whole, in `unit`s.
            unit: "chars", or "tokens" as estimated by the standard's ratios.
            per_tool: Other limits for some tools (None: never cut that tool).
            store: Where full outputs are kept (a new `MemoryContinuationStore` by default).
            read_more_tool: The name of the built-in tool that reads the rest.
            summarize: Makes `truncation_info.summary` from the full text (sync or async);
                none by default.
            secret: Signs the cursors (random by default; give the same one to every process
                that shares a continuation store).

        Raises:
            ValueError: a limit is below 1.
        """
        limits = [max_length, *(v for v in (per_tool or {}).values() if v is not None)]
        if any(limit < 1 for limit in limits):
            raise ValueError("truncation limits must be at least 1")
        self._max = max_length
        self._unit = unit
        self._per_tool = dict(per_tool or {})
        self.store: ContinuationStore = store or MemoryContinuationStore()
        """The continuation store in use."""
        self._summarize = summarize
        self._secret = secret if secret is not None else os.urandom(32)
        # No output shorter than this can be over any limit: most calls stop at one len().
        self._quick = min(limits) * (1.0 if unit == "chars" else min(CHARS_PER_TOKEN.values()))
        self._read_more = Tool(
            name=read_more_tool,
            description=(
                "Read the next part of a tool output that was cut because it was too long. "
                "Pass the `continuation` cursor from the cut output's truncation_info."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "cursor": {
                        "type": "string",
                        "description": "The `continuation` value from truncation_info",
                    }
                },
                "required": ["cursor"],
                "additionalProperties": False,
            },
            read_only_hint=True,
            idempotent_hint=True,
        )

    def added_tools(self) -> list[Tool]:
        """The "read more" tool."""
        return [self._read_more]

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Answer "read more" calls; cut long outputs of the others."""
        if call.function.name == self._read_more.name:
            return ToolResult(call.id, await self._read(ctx))
        result = await forward(call, ctx)
        value = result.return_value
        limit = self._limit_for(call, value)
        if limit is None:
            return result
        output = cast(str, value.output)
        key = await self.store.put(output)
        summary = await self._summary(output)
        return ToolResult(result.tool_call_id, self._cut_value(ctx, value, key, limit, summary))

    def _limit_for(self, call: ToolCall, value: ToolReturnValue) -> int | None:
        """The length to cut `value`'s output to, or None when it stays whole."""
        output = value.output
        if value.is_error or not isinstance(output, str):
            return None
        if len(output) <= self._quick:
            return None
        limit = self._per_tool.get(call.function.name, self._max)
        if limit is not None and self._unit != "chars":
            limit = max(1, chars_for_tokens(limit, guess_kind(output[:4096])))
        if limit is None or len(output) <= limit:
            return None
        return limit

    def _cut_value(
        self, ctx: PolicyContext, value: ToolReturnValue, key: str, limit: int, summary: str | None
    ) -> ToolReturnValue:
        """`value` with its output cut to `limit`, the whole kept under `key`."""
        output = cast(str, value.output)
        cut, info = self._cut(output, key, 0, limit)
        if summary:
            info["summary"] = summary
        ctx.call_context.set_metadata("truncation", info)
        text = _truncated_json(cut, True, info)
        hint = (
            f"The output was cut to {len(cut)} of {len(output)} characters. To read the rest, "
            f'call `{self._read_more.name}` with {{"cursor": "{info["continuation"]}"}}.'
        )
        message = f"{value.message}\n{hint}" if value.message else hint
        return value.model_copy(update={"output": text, "message": message})

    def _cut(self, text: str, key: str, offset: int, limit: int) -> tuple[str, dict[str, JsonType]]:
        part = text[offset : offset + limit]
        end = offset + len(part)
        info: dict[str, JsonType] = {"original_length": len(text), "returned_length": len(part)}
        if offset:
            info["offset"] = offset
        if end < len(text):
            info["continuation"] = self._cursor(key, end, limit)
        return part, info

    def _cursor(self, key: str, offset: int, limit: int) -> str:
        state: dict[str, JsonType] = {"key": key, "offset": offset, "limit": limit}
        return encode_cursor({**state, "sig": self._signature(key, offset, limit)})

    def _signature(self, key: str, offset: int, limit: int) -> str:
        message = f"{key}:{offset}:{limit}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()[:32]

    async def _summary(self, text: str) -> str | None:
        if self._summarize is None:
            return None
        summary = await await_guarded(self._summarize, text)
        if isinstance(summary, Failed):  # a summary is a nicety; the cut output goes out anyway
            logger.warning(
                "Summarizing a truncated output failed: %s", describe_exception(summary.error)
            )
            return None
        return summary

    async def _read(self, ctx: PolicyContext) -> ToolReturnValue:
        args = ctx.arguments
        cursor = args.get("cursor") if isinstance(args, dict) else None
        if not isinstance(cursor, str):
            return ToolValidateError('expected {"cursor": "<continuation>"}')
        try:
            state = decode_cursor(cursor)
        except CursorError as e:
            return ToolValidateError(str(e))
        key, offset, limit = state.get("key"), state.get("offset"), state.get("limit")
        signature = state.get("sig")
        if not (
            isinstance(key, str)
            and type(offset) is int
            and type(limit) is int
            and isinstance(signature, str)
            and hmac.compare_digest(signature, self._signature(key, offset, limit))
            and offset > 0
            and limit > 0
        ):
            return ToolValidateError(
                "this cursor is not a continuation this tool gave (it was altered or made up); "
                "pass the `continuation` value exactly as it came"
            )
        text = await self.store.get(key)
        if text is None:
            return ToolResourceNotFoundError(
                "This continuation has expired or is unknown; call the original tool again."
            )
        if offset >= len(text):
            return ToolValidateError("this cursor points past the end of the output")
        part, info = self._cut(text, key, offset, limit)
        return ToolOk(output=_truncated_json(part, "continuation" in info, info))


def _truncated_json(content: str, truncated: bool, info: dict[str, JsonType]) -> str:
    return json.dumps(
        {"content": content, "truncated": truncated, "truncation_info": info}, ensure_ascii=False
    )
