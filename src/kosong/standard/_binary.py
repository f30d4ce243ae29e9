"""Binary results: small files inline as base64, large ones as a URL from a pluggable store.

The standard's two forms of a file in a result's data:

    {"filename", "content_type", "content_base64"}           below 1 MB (1 MiB here)
    {"filename", "content_type", "url", "expires_at"}        from 1 MB on

`binary_data` picks the form by size. A large file needs a `BinaryStore` that keeps the bytes
and returns a URL (a presigned object-store URL, say); without one it is an error, never a
silently huge base64 blob. `FileBinaryStore` keeps files in a local directory.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import mimetypes
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kosong.tooling import ToolOk
from kosong.utils.typing import JsonType

__all__ = [
    "INLINE_LIMIT",
    "BinaryStore",
    "FileBinaryStore",
    "StoredObject",
    "binary_data",
    "binary_ok",
    "decode_binary",
]

INLINE_LIMIT = 1024 * 1024
"""Files smaller than this many bytes (1 MiB) are returned inline as base64."""


@dataclass(frozen=True, slots=True)
class StoredObject:
    """Where a store put a file."""

    url: str
    """The URL to fetch it."""
    expires_at: str | None = None
    """When the URL stops working (ISO 8601), if it does."""


class BinaryStore(ABC):
    """Keeps files too large to inline, and gives back a URL for each."""

    @abstractmethod
    async def put(self, data: bytes, *, filename: str, content_type: str) -> StoredObject:
        """Store `data`; return where it can be fetched."""


class FileBinaryStore(BinaryStore):
    """Files in a local directory, served as `file://` URLs or under `base_url`."""

    def __init__(self, directory: str | os.PathLike[str], *, base_url: str | None = None) -> None:
        """Store files in `directory` (created if missing).

        URLs are `base_url/<name>` when `base_url` is given, else `file://` URLs.
        """
        self._dir = Path(directory)
        self._base_url = base_url.rstrip("/") if base_url else None

    async def put(self, data: bytes, *, filename: str, content_type: str) -> StoredObject:
        """Write the file under a random prefix (so names never clash) in a worker thread."""
        name = f"{os.urandom(8).hex()}-{Path(filename).name or 'file'}"
        path = self._dir / name

        def write() -> None:
            self._dir.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

        await asyncio.to_thread(write)
        url = f"{self._base_url}/{name}" if self._base_url else path.resolve().as_uri()
        return StoredObject(url)


async def binary_data(
    data: bytes,
    *,
    filename: str,
    content_type: str | None = None,
    store: BinaryStore | None = None,
    inline_limit: int = INLINE_LIMIT,
) -> dict[str, JsonType]:
    """The standard's data for a file: inline base64 if small, else a URL from `store`.

    Args:
        data: The file's bytes.
        filename: Its name.
        content_type: Its MIME type (guessed from the name when None).
        store: Where large files go.
        inline_limit: Files smaller than this many bytes are inlined.

    Raises:
        ValueError: the file is large and no store was given.
    """
    kind = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    if len(data) < inline_limit:
        return {
            "filename": filename,
            "content_type": kind,
            "content_base64": base64.b64encode(data).decode("ascii"),
        }
    if store is None:
        raise ValueError(
            f"{filename} is {len(data)} bytes, over the {inline_limit}-byte inline limit; "
            "pass a BinaryStore to return it as a URL"
        )
    stored = await store.put(data, filename=filename, content_type=kind)
    out: dict[str, JsonType] = {"filename": filename, "content_type": kind, "url": stored.url}
    if stored.expires_at is not None:
        out["expires_at"] = stored.expires_at
    return out


async def binary_ok(
    data: bytes,
    *,
    filename: str,
    content_type: str | None = None,
    store: BinaryStore | None = None,
    inline_limit: int = INLINE_LIMIT,
    brief: str = "",
) -> ToolOk:
    """A `ToolOk` whose output is `binary_data(...)` as JSON (its envelope data is that object).

    Raises:
        ValueError: as `binary_data`.
    """
    payload = await binary_data(
        data, filename=filename, content_type=content_type, store=store, inline_limit=inline_limit
    )
    return ToolOk(output=json.dumps(payload, ensure_ascii=False), brief=brief)


def decode_binary(data: Mapping[str, Any]) -> bytes:
    """The bytes of inline binary data (`content_base64`).

    Raises:
        ValueError: `data` has no valid `content_base64` (a URL form must be fetched instead).
    """
    encoded = data.get("content_base64")
    if not isinstance(encoded, str):
        raise ValueError("no content_base64: this file is returned by URL; fetch `url` instead")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"content_base64 is not valid base64: {e}") from None
