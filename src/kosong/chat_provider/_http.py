"""Small helpers the HTTP providers share, without importing any SDK."""

from __future__ import annotations

from typing import Any

__all__ = ["request_id_of"]


def request_id_of(stream: Any, *header_names: str) -> str | None:
    """The service's request id from the headers of an SDK stream's HTTP response."""
    headers: Any = getattr(getattr(stream, "response", None), "headers", None)
    if headers is None:
        return None
    for name in header_names:
        value = headers.get(name)
        if isinstance(value, str) and value:
            return value
    return None
