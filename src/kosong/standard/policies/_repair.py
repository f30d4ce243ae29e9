"""Repair: run calls whose arguments are malformed in ways the tool's schema makes unambiguous.

Models send arguments a tool cannot take as they are, though what they meant is plain: a nested
object written as a JSON string, a number or a boolean as a string, the whole arguments in a
markdown code fence or followed by a sentence. `RepairPolicy` repairs exactly these, guided by
the tool's own parameters schema (see `_repair_schema` for what is repaired where):

    what was sent                            what `metadata["repairs"]` says
    the JSON in a fence (```json ... ```)    {"path": "$", "from": "markdown_fence", "to": "json"}
    the JSON, then some words                {"path": "$", "from": "trailing_text", "to": "json"}
    an object as a JSON string               {"path": "$.filter", "from": "string", "to": "object"}
    an array as a JSON string                {"path": "$.ids", "from": "string", "to": "array"}
    a number as a string ("42")              {"path": "$.n", "from": "string", "to": "integer"}
    a boolean as a string ("true")           {"path": "$.all", "from": "string", "to": "boolean"}

A repair is kept only when the repaired arguments validate against the schema; anything
ambiguous (a union that takes a string too, a second JSON value after the first, text before
the JSON) is left alone and the call gets the error it would have got. Tools whose hints say
destructive are never repaired unless `repair_destructive=True`.

It acts before every policy, wherever it is listed (`Policy.repair`): the pipeline asks it as a
call arrives, and a repaired call then passes through every policy (approval, cache, repeat
guard...) with the repaired arguments, exactly as a well-formed call would. The result's
metadata lists the changes (`metadata["repairs"]`), and a `tool_progress` event (progress 0)
tells listeners the arguments were repaired; it is sent where the policy is listed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import jsonschema_rs

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_destructive
from kosong.standard._pipeline import Policy, RepairedArguments
from kosong.standard.policies._repair_schema import repair_value
from kosong.tooling import (
    ArgumentLimits,
    ArgumentsError,
    Tool,
    ToolReturnValue,
    Unparsed,
    parse_arguments,
)
from kosong.utils.typing import JsonType

__all__ = ["RepairPolicy"]

_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n(?P<body>.*?)```", re.S)
"""A markdown code fence around the whole text, with an optional language (```json)."""
_MAX_VALIDATORS = 256


class RepairPolicy(Policy):
    """Repair malformed arguments where the tool's schema says what was meant (module doc)."""

    repairs_arguments: ClassVar[bool] = True

    def __init__(self, *, repair_destructive: bool = False) -> None:
        """Repair the arguments of calls to every tool but destructive ones.

        Args:
            repair_destructive: Repair calls to tools whose hints say destructive too.
        """
        self._destructive = repair_destructive
        # A validator per parameters schema (by identity), built on first use.
        self._validators: dict[int, tuple[Mapping[str, Any], jsonschema_rs.Validator]] = {}

    def repair(
        self, call: ToolCall, tool: Tool, arguments: JsonType | Unparsed, limits: ArgumentLimits
    ) -> RepairedArguments | None:
        """The call's arguments repaired, if they need it and the repair validates; else None."""
        if not self._destructive and is_destructive(tool):
            return None
        changes: list[JsonType] = []
        if isinstance(arguments, Unparsed):
            read = _read_text(call.function.arguments, limits, tool.expects_object)
            if read is None:
                return None
            arguments, changes = read
        validator = self._validator(tool.parameters)
        if not validator.is_valid(arguments):
            arguments, found = repair_value(arguments, tool.parameters, limits)
            if not found or not validator.is_valid(arguments):
                return None
            changes.extend(found)
        return RepairedArguments(arguments, changes) if changes else None

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Tell the call's listeners its arguments were repaired (a `tool_progress` event)."""
        if ctx.repairs:
            ctx.call_context.report_progress(0, f"repaired the arguments: {_describe(ctx.repairs)}")
        return None

    def _validator(self, schema: Mapping[str, Any]) -> jsonschema_rs.Validator:
        cached = self._validators.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        if len(self._validators) >= _MAX_VALIDATORS:
            self._validators.clear()
        # A tool's schema was checked when the tool was made: local references only, so
        # building its validator fetches nothing (and `offline` makes sure of it).
        validator = jsonschema_rs.validator_for(dict(schema), offline=True)
        self._validators[id(schema)] = (schema, validator)
        return validator


def _read_text(
    raw: str | None, limits: ArgumentLimits, expects_object: bool
) -> tuple[JsonType, list[JsonType]] | None:
    """Arguments read from text that is JSON inside a fence and/or before other words."""
    if raw is None or len(raw) > limits.max_length:
        return None
    changes: list[JsonType] = []
    text = raw.strip()
    fenced = _FENCE.fullmatch(text)
    if fenced is not None and "```" not in fenced["body"]:
        text = fenced["body"].strip()
        changes.append({"path": "$", "from": "markdown_fence", "to": "json"})
        try:
            return parse_arguments(text, limits, expects_object=expects_object), changes
        except ArgumentsError:
            pass
    decoder = json.JSONDecoder()
    try:
        _, end = decoder.raw_decode(text)
    except (ValueError, RecursionError):  # no JSON value at the start
        return None
    rest = text[end:].strip()
    if not rest:  # the JSON itself was refused (a duplicate key, NaN...): not ours to repair
        return None
    try:
        decoder.raw_decode(rest)
        return None  # a second JSON value: which one was meant?
    except (ValueError, RecursionError):
        pass
    try:
        value = parse_arguments(text[:end], limits, expects_object=expects_object)
    except ArgumentsError:
        return None
    changes.append({"path": "$", "from": "trailing_text", "to": "json"})
    return value, changes


def _describe(repairs: list[JsonType]) -> str:
    parts: list[str] = []
    for change in repairs:
        if isinstance(change, dict):
            parts.append(f"{change.get('path')} {change.get('from')} -> {change.get('to')}")
    return ", ".join(parts)
