"""Cursor pagination, as the standard describes it.

A tool that returns many items returns one `Page` at a time: its data is
`{"items": [...], "pagination": {"has_more", "next_cursor", "total_count"}}`, and the model
passes `next_cursor` back as the `cursor` argument for the next page. Cursors are opaque to the
model: base64 of a small JSON object (`{"offset": 10}` is `eyJvZmZzZXQiOjEwfQ==`), made and
read with `encode_cursor` / `decode_cursor`. `paginate` cuts a page from a sequence;
`fetch_all_pages` collects every page, up to a limit.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, Self, TypeVar, cast

from pydantic import BaseModel, Field, model_validator

from kosong.message import ToolCall
from kosong.tooling import ToolReturnValue, Toolset
from kosong.utils.typing import JsonType

__all__ = [
    "CursorError",
    "Page",
    "PageFetchError",
    "PageInfo",
    "decode_cursor",
    "encode_cursor",
    "fetch_all_pages",
    "fetch_all_tool_pages",
    "paginate",
]

T = TypeVar("T")

MAX_CURSOR_LENGTH = 4096
"""Longer cursors are refused unread: a cursor is a small state, not a payload."""


class CursorError(ValueError):
    """A cursor that this code did not make (or that was damaged)."""


class PageFetchError(RuntimeError):
    """A paginated tool failed, or returned something that is not a page."""

    def __init__(self, message: str, value: ToolReturnValue | None = None) -> None:
        """Say what went wrong; `value` is the tool's result, when there was one."""
        super().__init__(message)
        self.value = value
        """The tool's result, if the tool answered."""


def encode_cursor(state: Mapping[str, JsonType]) -> str:
    """An opaque cursor holding `state` (standard base64 of compact JSON)."""
    text = json.dumps(dict(state), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return base64.b64encode(text.encode()).decode("ascii")


def decode_cursor(cursor: str) -> dict[str, JsonType]:
    """The state inside a cursor made by `encode_cursor`.

    Raises:
        CursorError: the cursor is not one of ours; the message can go to the model.
    """
    if not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise CursorError("the cursor is empty or too long; pass next_cursor exactly as given")
    try:
        raw = base64.b64decode(cursor.encode("ascii"), validate=True)
        state = json.loads(raw.decode())
    except (UnicodeError, binascii.Error, ValueError):
        raise CursorError(
            f"invalid cursor {cursor[:40]!r}; pass next_cursor exactly as the last page gave it"
        ) from None
    if not isinstance(state, dict):
        raise CursorError("invalid cursor: it holds no state")
    return cast(dict[str, JsonType], state)


class PageInfo(BaseModel):
    """The `pagination` object of a page."""

    has_more: bool
    """Whether another page follows."""
    next_cursor: str | None = None
    """The cursor of the next page (None on the last page)."""
    total_count: int | None = Field(default=None, ge=0)
    """How many items there are in all, when known."""

    @model_validator(mode="after")
    def _cursor_when_more(self) -> Self:
        if self.has_more and not self.next_cursor:
            raise ValueError("a page with has_more=true needs a next_cursor")
        return self


class Page(BaseModel, Generic[T]):
    """One page of items and how to get the next."""

    items: list[T]
    """The items of this page."""
    pagination: PageInfo
    """Whether more follow, and the cursor to them."""

    @property
    def has_more(self) -> bool:
        """Whether another page follows."""
        return self.pagination.has_more

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the next page."""
        return self.pagination.next_cursor

    @property
    def total_count(self) -> int | None:
        """How many items there are in all, when known."""
        return self.pagination.total_count

    def to_data(self) -> dict[str, Any]:
        """The page as the standard's data (`{"items", "pagination"}`), JSON-ready."""
        return self.model_dump(mode="json", exclude_none=False) | {
            "pagination": self.pagination.model_dump(mode="json", exclude_none=True)
        }


def paginate(
    items: Sequence[T], cursor: str | None = None, *, limit: int = 10, max_limit: int = 100
) -> Page[T]:
    """The page of `items` that `cursor` points at (the first page when None).

    Offsets live in the cursor, so a tool only needs its full sequence (or a slice of it).

    Raises:
        CursorError: the cursor is not one `paginate` made.
        ValueError: `limit` is not between 1 and `max_limit`.
    """
    if not 1 <= limit <= max_limit:
        raise ValueError(f"limit must be between 1 and {max_limit}, got {limit}")
    offset = 0
    if cursor is not None:
        raw = decode_cursor(cursor).get("offset")
        if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
            raise CursorError("invalid cursor: no valid offset")
        offset = raw
    page = list(items[offset : offset + limit])
    end = offset + len(page)
    more = end < len(items)
    return Page[T](
        items=page,
        pagination=PageInfo(
            has_more=more,
            next_cursor=encode_cursor({"offset": end}) if more else None,
            total_count=len(items),
        ),
    )


async def fetch_all_pages(
    fetch: Callable[[str | None], Awaitable[Page[T]]], *, max_items: int = 1000
) -> list[T]:
    """Every item of a paginated source, page after page, up to `max_items`.

    `fetch(cursor)` returns a page: the first with cursor None, then each with the cursor the
    previous page gave. Stops when a page says there is no more, or at `max_items` items (the
    result is cut to exactly that many).

    Raises:
        ValueError: `max_items` is below 1, or a page repeats a cursor already followed
            (the source would loop forever).
    """
    if max_items < 1:
        raise ValueError("max_items must be at least 1")
    collected: list[T] = []
    cursor: str | None = None
    followed: set[str] = set()
    while True:
        page = await fetch(cursor)
        collected.extend(page.items)
        if len(collected) >= max_items:
            return collected[:max_items]
        if not page.has_more:
            return collected
        cursor = page.next_cursor
        assert cursor is not None  # PageInfo guarantees a cursor when has_more
        if cursor in followed:
            raise ValueError(f"the source returned cursor {cursor!r} twice; it would never end")
        followed.add(cursor)


async def fetch_all_tool_pages(
    toolset: Toolset,
    tool_name: str,
    arguments: Mapping[str, JsonType] | None = None,
    *,
    max_items: int = 1000,
    call_id_prefix: str = "page",
) -> list[Any]:
    """Every item a paginated tool returns, calling it page after page through `toolset`.

    The first call passes `arguments` without a cursor; each next one adds the `cursor` the
    previous page gave. Each result's output must be a page's data (`{"items", "pagination"}`).

    Raises:
        PageFetchError: a call failed, or its output is not a page.
        ValueError: as `fetch_all_pages`.
    """
    count = 0

    async def fetch(cursor: str | None) -> Page[Any]:
        nonlocal count
        count += 1
        args = dict(arguments or {})
        if cursor is not None:
            args["cursor"] = cursor
        call = ToolCall(
            id=f"{call_id_prefix}_{count}",
            function=ToolCall.FunctionBody(name=tool_name, arguments=json.dumps(args)),
        )
        value = (await toolset.handle(call)).return_value
        if value.is_error:
            raise PageFetchError(f"`{tool_name}` failed on page {count}: {value.message}", value)
        if not isinstance(value.output, str):
            raise PageFetchError(f"`{tool_name}` returned content parts, not a page", value)
        try:
            return Page[Any].model_validate_json(value.output)
        except ValueError as e:
            raise PageFetchError(
                f"`{tool_name}` returned something that is not a page: {e}", value
            ) from e

    return await fetch_all_pages(fetch, max_items=max_items)
