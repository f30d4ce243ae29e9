"""Arguments as a short key: equal values, equal keys, however the JSON was written.

`canonical_json` writes a value one way only (sorted keys, no spaces); `arguments_digest` makes
it a key (the text itself when short, a hash of it when long), which the cache, single-flight
and the repeat guard share through `PolicyContext.arguments_key`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

from kosong.utils.typing import JsonType

__all__ = ["arguments_digest", "canonical_json"]

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

_LITERAL_DIGEST: Final = 96
"""Canonical texts up to this length are kept as they are (hashing costs more than it saves)."""


def canonical_json(value: JsonType) -> str:
    """JSON text of `value` with sorted keys and no spaces: equal values, equal text."""
    return _CANONICAL.encode(value)


def arguments_digest(arguments: JsonType, written_as_string: bool) -> str:
    """The digest `PolicyContext.arguments_key` gives for these arguments.

    Short arguments are their own digest (their canonical text); long ones a hash of it, so a
    digest is never long.
    """
    text = ("s" if written_as_string else "o") + _CANONICAL.encode(arguments)
    if len(text) <= _LITERAL_DIGEST:
        return text
    return "#" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
