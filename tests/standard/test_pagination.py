"""Cursor pagination: opaque cursors, pages, and fetching every page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kosong.standard import (
    CursorError,
    Page,
    PageFetchError,
    PageInfo,
    decode_cursor,
    encode_cursor,
    fetch_all_pages,
    fetch_all_tool_pages,
    paginate,
    to_envelope,
    with_policies,
)
from kosong.standard.policies import MetricsPolicy
from kosong.tooling import ToolOk, ToolReturnValue
from tests.standard._std_tools import Scripted, toolset


def test_the_standards_cursor_is_base64_of_the_offset() -> None:
    assert encode_cursor({"offset": 10}) == "eyJvZmZzZXQiOjEwfQ=="
    assert decode_cursor("eyJvZmZzZXQiOjEwfQ==") == {"offset": 10}


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_cursors_round_trip(state: dict[str, Any]) -> None:
    assert decode_cursor(encode_cursor(state)) == state


@pytest.mark.parametrize("cursor", ["", "not base64!", "bm90IGpzb24=", "WzEsMl0=", "x" * 5000])
def test_foreign_cursors_are_refused_with_a_message_for_the_model(cursor: str) -> None:
    with pytest.raises(CursorError, match="cursor"):
        decode_cursor(cursor)


def test_the_standards_pagination_response() -> None:
    items = [{"id": i, "name": f"Item {i}"} for i in range(1, 101)]
    page = paginate(items, limit=2)
    page = Page[dict[str, Any]](
        items=page.items,
        pagination=PageInfo(has_more=True, next_cursor="eyJvZmZzZXQiOjEwfQ==", total_count=100),
    )
    value = ToolOk(output=json.dumps(page.to_data()))
    metadata = {
        "tool_name": "search_items",
        "execution_time_ms": 45,
        "timestamp": "2024-01-01T00:00:00Z",
        "trace_id": "trace_abc123",
    }
    assert to_envelope(value, metadata=metadata).dump() == {
        "success": True,
        "status": "success",
        "data": {
            "items": [{"id": 1, "name": "Item 1"}, {"id": 2, "name": "Item 2"}],
            "pagination": {
                "has_more": True,
                "next_cursor": "eyJvZmZzZXQiOjEwfQ==",
                "total_count": 100,
            },
        },
        "metadata": {
            "tool_name": "search_items",
            "execution_time_ms": 45,
            "timestamp": "2024-01-01T00:00:00Z",
            "trace_id": "trace_abc123",
        },
    }


def test_paginate_walks_a_sequence() -> None:
    items = list(range(25))
    first = paginate(items, limit=10)
    assert first.items == list(range(10)) and first.has_more and first.total_count == 25
    second = paginate(items, first.next_cursor, limit=10)
    third = paginate(items, second.next_cursor, limit=10)
    assert third.items == [20, 21, 22, 23, 24]
    assert not third.has_more and third.next_cursor is None
    assert "next_cursor" not in third.to_data()["pagination"]
    with pytest.raises(ValueError, match="limit"):
        paginate(items, limit=0)
    with pytest.raises(CursorError):
        paginate(items, encode_cursor({"offset": -1}))


def test_a_page_that_says_more_needs_a_cursor() -> None:
    with pytest.raises(ValidationError, match="needs a next_cursor"):
        PageInfo(has_more=True)


@given(total=st.integers(0, 120), limit=st.integers(1, 30), max_items=st.integers(1, 200))
async def test_fetch_all_pages_fetches_every_page_up_to_max_items(
    total: int, limit: int, max_items: int
) -> None:
    items = list(range(total))
    cursors: list[str | None] = []

    async def fetch(cursor: str | None) -> Page[int]:
        cursors.append(cursor)
        return paginate(items, cursor, limit=limit)

    fetched = await fetch_all_pages(fetch, max_items=max_items)
    assert fetched == items[:max_items]
    assert cursors[0] is None
    pages_needed = max(1, -(-min(total, max_items) // limit))
    assert len(cursors) == pages_needed


async def test_a_source_that_repeats_a_cursor_is_stopped() -> None:
    async def loop(cursor: str | None) -> Page[int]:
        return Page[int](items=[1], pagination=PageInfo(has_more=True, next_cursor="c2FtZQ=="))

    with pytest.raises(ValueError, match="twice"):
        await fetch_all_pages(loop)
    with pytest.raises(ValueError, match="max_items"):
        await fetch_all_pages(loop, max_items=0)


def search_tool() -> tuple[Scripted, list[dict[str, Any]]]:
    items = [{"id": i} for i in range(23)]
    seen: list[dict[str, Any]] = []

    async def body(n: int) -> ToolReturnValue:
        args = tool.arguments[n]  # what call n got
        seen.append(args)
        cursor, limit = args.get("cursor"), args.get("limit", 10)
        assert (cursor is None or isinstance(cursor, str)) and isinstance(limit, int)
        page = paginate(items, cursor, limit=limit)
        return ToolOk(output=json.dumps(page.to_data()))

    tool = Scripted(body, name="search_items")
    return tool, seen


async def test_fetch_all_tool_pages_calls_the_tool_page_after_page() -> None:
    tool, seen = search_tool()
    pipeline = with_policies(toolset(tool), MetricsPolicy())
    items = await fetch_all_tool_pages(pipeline, "search_items", {"query": "x", "limit": 10})
    assert items == [{"id": i} for i in range(23)]
    assert "cursor" not in seen[0] and len(seen) == 3
    assert all(args["query"] == "x" for args in seen)


async def test_fetch_all_tool_pages_reports_tool_errors() -> None:
    failing = Scripted(lambda n: ToolOk(output="not a page"), name="bad")
    with pytest.raises(PageFetchError, match="not a page"):
        await fetch_all_tool_pages(toolset(failing), "bad")
    with pytest.raises(PageFetchError, match="failed on page 1"):
        await fetch_all_tool_pages(toolset(failing), "missing_tool")
