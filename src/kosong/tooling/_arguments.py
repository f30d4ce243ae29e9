"""Turning the model's argument string into a JSON value, safely (private).

Models write arguments as a JSON string, and not always a good one. `parse_arguments` accepts
exactly one JSON value and refuses, with a message the model can act on, everything that could
surprise a tool: duplicate keys (which one would win?), NaN and Infinity (not JSON), numbers
that overflow to infinity, unpaired UTF-16 surrogates (not Unicode), and input beyond the size
and nesting caps of `ArgumentLimits`. Two normalisations are harmless and documented: no
arguments at all (None, "", whitespace, or `null`) mean `{}`, and, for a tool that expects an
object, a JSON string that itself holds a JSON object is unwrapped once (some models encode
their arguments twice).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

from kosong.utils.typing import JsonType

__all__ = ["ArgumentLimits", "ArgumentsError", "parse_arguments"]


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Caps on the arguments of one tool call; past them the call gets a `ToolParseError`.

    The defaults fit any real tool (a whole source file as an argument is well under a
    megabyte) while keeping a runaway or hostile model from tying up the process.
    """

    max_length: int = 4_000_000
    """Most characters an argument string may have."""
    max_depth: int = 100
    """Deepest nesting of arrays and objects."""
    offload_length: int = 262_144
    """Strings longer than this are parsed in a worker thread, so handling never blocks."""

    def __post_init__(self) -> None:
        for name in ("max_length", "max_depth", "offload_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"ArgumentLimits.{name} must be at least 1")

    def parses_in_thread(self, raw: str) -> bool:
        """Whether `raw` is long enough to be parsed in a worker thread.

        A string over `max_length` is not: it is refused at once, without reading it.
        """
        return self.offload_length < len(raw) <= self.max_length


DEFAULT_LIMITS = ArgumentLimits()


class ArgumentsError(ValueError):
    """The argument string is not acceptable; the message says why, for the model."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ArgumentsError(f"duplicate key {key!r} in an object; give each key once")
            seen.add(key)
    return obj


def _reject_constant(name: str) -> Any:
    raise ArgumentsError(f"{name} is not valid JSON; send numbers as finite decimals")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ArgumentsError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_constant=_reject_constant, parse_float=_finite_float
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _deeper_than(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Any
        if isinstance(node, dict):
            children = cast(dict[str, Any], node).values()
        elif isinstance(node, list):
            children = cast(list[Any], node)
        else:
            continue  # a scalar adds no nesting
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _has_surrogate(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            node = cast(dict[str, Any], node)
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(cast(list[Any], node))
    return False


def parse_arguments(
    raw: str | None, limits: ArgumentLimits = DEFAULT_LIMITS, *, expects_object: bool = True
) -> JsonType:
    """Parse one tool call's argument string; raise `ArgumentsError` with the reason if bad."""
    if raw is None:
        return {}
    if len(raw) > limits.max_length:
        raise ArgumentsError(
            f"the arguments are {len(raw):,} characters long; the limit is {limits.max_length:,}"
        )
    if not raw or raw.isspace():
        return {}
    if not raw.isascii():
        try:
            raw.encode()
        except UnicodeEncodeError as e:
            raise ArgumentsError(
                f"the arguments contain an unpaired surrogate at character {e.start}, "
                "which is not valid Unicode"
            ) from None
    try:
        value = _DECODER.decode(raw)
    except RecursionError:
        # The parser's own stack limit (about 1,000 levels) came before `max_depth` could.
        raise ArgumentsError(
            f"the arguments are nested too deeply (the limit is "
            f"{min(limits.max_depth, 1000)} levels)"
        ) from None
    except ArgumentsError:
        raise
    except json.JSONDecodeError as e:
        raise ArgumentsError(str(e)) from None
    except ValueError:  # the only other one: an integer past CPython's 4,300-digit limit
        raise ArgumentsError(
            "an integer in the arguments has more than 4,300 digits; send it as a string"
        ) from None
    if value is None:
        return {}
    if len(raw) > 2 * limits.max_depth and _deeper_than(value, limits.max_depth):
        raise ArgumentsError(
            f"the arguments are nested too deeply (the limit is {limits.max_depth} levels)"
        )
    if "\\u" in raw and _has_surrogate(value):
        raise ArgumentsError(
            "the arguments contain an escaped unpaired surrogate (\\ud800-\\udfff), "
            "which is not valid Unicode"
        )
    if expects_object and isinstance(value, str):
        value = _unwrap_twice_encoded(value, limits)
    return cast(JsonType, value)


def _unwrap_twice_encoded(text: str, limits: ArgumentLimits) -> JsonType:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return text
    try:
        inner = parse_arguments(stripped, limits, expects_object=False)
    except ArgumentsError:
        return text
    return inner if isinstance(inner, dict) else text
