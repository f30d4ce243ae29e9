"""Binary results: base64 below 1 MiB, a URL from a store from there on."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from kosong.standard import (
    BinaryStore,
    FileBinaryStore,
    StoredObject,
    binary_data,
    binary_ok,
    decode_binary,
    to_envelope,
)
from kosong.standard._binary import INLINE_LIMIT
from tests.standard._std_tools import output_json

META = {
    "tool_name": "generate_report",
    "timestamp": "2024-01-01T00:00:00Z",
    "trace_id": "trace_abc123",
}


async def test_small_files_are_inline_base64_in_the_standards_shape() -> None:
    pdf = b"%PDF-1.4\n%\xd3\xf4\x83..."
    value = await binary_ok(pdf, filename="report.pdf")
    assert to_envelope(value, metadata=META).dump() == {
        "success": True,
        "status": "success",
        "data": {
            "filename": "report.pdf",
            "content_type": "application/pdf",
            "content_base64": base64.b64encode(pdf).decode(),
        },
        "metadata": META,
    }
    assert decode_binary(output_json(value)) == pdf


class PresigningStore(BinaryStore):
    def __init__(self) -> None:
        self.stored: dict[str, bytes] = {}

    async def put(self, data: bytes, *, filename: str, content_type: str) -> StoredObject:
        self.stored[filename] = data
        return StoredObject(
            f"https://storage.example.com/reports/{filename}?signature=...", "2024-01-01T01:00:00Z"
        )


async def test_large_files_go_to_the_store_and_come_back_as_a_url() -> None:
    store = PresigningStore()
    big = b"\0" * INLINE_LIMIT  # exactly 1 MiB: not "below 1 MB"
    data = await binary_data(big, filename="report.pdf", store=store)
    assert data == {
        "filename": "report.pdf",
        "content_type": "application/pdf",
        "url": "https://storage.example.com/reports/report.pdf?signature=...",
        "expires_at": "2024-01-01T01:00:00Z",
    }
    assert store.stored["report.pdf"] == big
    just_below = await binary_data(big[:-1], filename="report.pdf", store=store)
    assert "content_base64" in just_below


async def test_a_large_file_without_a_store_is_an_error() -> None:
    with pytest.raises(ValueError, match="pass a BinaryStore"):
        await binary_data(b"x" * 10, filename="a.bin", inline_limit=5)


async def test_the_file_store_writes_the_bytes_and_returns_a_file_url(tmp_path: Path) -> None:
    data = await binary_data(
        b"hello", filename="../evil/a.txt", store=FileBinaryStore(tmp_path), inline_limit=1
    )
    assert data["content_type"] == "text/plain"
    url = str(data["url"])
    assert url.startswith("file://")
    files = await asyncio.to_thread(lambda: [(p.name, p.read_bytes()) for p in tmp_path.iterdir()])
    ((name, content),) = files
    assert content == b"hello" and name.endswith("-a.txt")
    served = await FileBinaryStore(tmp_path, base_url="https://files.example.com/").put(
        b"x", filename="b.bin", content_type="application/octet-stream"
    )
    assert served.url.startswith("https://files.example.com/") and served.url.endswith("-b.bin")


def test_decode_refuses_the_url_form_and_bad_base64() -> None:
    with pytest.raises(ValueError, match="fetch `url`"):
        decode_binary({"url": "https://x"})
    with pytest.raises(ValueError, match="not valid base64"):
        decode_binary({"content_base64": "***"})
