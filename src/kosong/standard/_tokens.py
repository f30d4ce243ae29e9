"""Token counts: the standard's estimates by content kind, or exact counts with tiktoken.

The standard's ratios, in characters per token:

    text 4    json 3.5    code 2    markdown 3.5

`estimate_tokens` applies them (rounding up). `count_tokens` counts exactly with tiktoken when
it is installed (the `tokens` extra) and its encoding can be loaded; tiktoken
downloads an encoding on first use, so without network access (and no cached copy) it falls
back to the estimate, and says so in the result. A failed load is remembered, not retried on
every call.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from kosong.tooling.error import describe_exception

__all__ = [
    "CHARS_PER_TOKEN",
    "ContentKind",
    "TokenCount",
    "chars_for_tokens",
    "count_tokens",
    "estimate_tokens",
    "guess_kind",
    "load_encoding",
]

logger = logging.getLogger(__name__)

ContentKind = Literal["text", "json", "code", "markdown"]
"""The kinds of content the standard gives a ratio for."""

CHARS_PER_TOKEN: Mapping[ContentKind, float] = MappingProxyType(
    {"text": 4.0, "json": 3.5, "code": 2.0, "markdown": 3.5}
)
"""Characters per token, by content kind (the standard's table)."""

DEFAULT_ENCODING = "o200k_base"
"""The tiktoken encoding of current OpenAI models."""


def guess_kind(text: str) -> ContentKind:
    """A guess of what `text` is.

    JSON if it parses as an object or array, Markdown if it has headings, fences or lists, code
    if most lines end like code, else plain text.
    """
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            return "json"
    lines = [line for line in stripped.splitlines() if line.strip()]
    if not lines:
        return "text"
    if any(line.startswith(("#", "```", "- ", "* ", "> ")) for line in lines):
        return "markdown"
    code_like = sum(1 for line in lines if line.rstrip().endswith((";", "{", "}", ":", ")", "(")))
    return "code" if code_like * 2 > len(lines) else "text"


def estimate_tokens(text: str, kind: ContentKind | None = None) -> int:
    """The standard's estimate: characters divided by the kind's ratio, rounded up.

    Args:
        text: What to count.
        kind: The content kind; guessed when None (see `guess_kind`).
    """
    if not text:
        return 0
    return math.ceil(len(text) / CHARS_PER_TOKEN[kind or guess_kind(text)])


def chars_for_tokens(tokens: int, kind: ContentKind = "text") -> int:
    """About how many characters of `kind` make `tokens` tokens (the inverse estimate)."""
    return max(0, math.floor(tokens * CHARS_PER_TOKEN[kind]))


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A token count and how it was obtained."""

    tokens: int
    """The count."""
    exact: bool
    """True when tiktoken counted; False for the standard's estimate."""
    method: str
    """`tiktoken:<encoding>` or `estimate:<kind>`."""


_ENCODINGS: dict[str, Any] = {}
_FAILED: set[str] = set()
_LOCK = threading.Lock()


def load_encoding(name: str = DEFAULT_ENCODING) -> Any | None:
    """The tiktoken encoding `name`, or None when tiktoken is missing or cannot load it.

    Loading may download the encoding (blocking); call it at startup to keep that off the
    request path. A failure is logged once and remembered.
    """
    with _LOCK:
        if name in _ENCODINGS:
            return _ENCODINGS[name]
        if name in _FAILED:
            return None
        try:
            import tiktoken
        except ImportError:
            _FAILED.add(name)
            return None
        try:
            encoding = tiktoken.get_encoding(name)
        except (ValueError, OSError) as e:  # unknown name, bad download, no network: estimate
            reason = describe_exception(e)
            logger.warning(
                "tiktoken could not load %r (%s); token counts are estimates", name, reason
            )
            _FAILED.add(name)
            return None
        _ENCODINGS[name] = encoding
        return encoding


def count_tokens(
    text: str, *, kind: ContentKind | None = None, encoding: str = DEFAULT_ENCODING
) -> TokenCount:
    """Count the tokens of `text`: exactly with tiktoken when possible, else estimated."""
    loaded = load_encoding(encoding)
    if loaded is not None:
        tokens: list[int] = loaded.encode(text, disallowed_special=())
        return TokenCount(len(tokens), True, f"tiktoken:{encoding}")
    resolved = kind or guess_kind(text)
    return TokenCount(estimate_tokens(text, resolved), False, f"estimate:{resolved}")
