"""JSON value types."""

from __future__ import annotations

from typing import Union

from typing_extensions import TypeAliasType

__all__ = ["JsonType"]

JsonType = TypeAliasType(
    "JsonType",
    Union[bool, int, float, str, list["JsonType"], dict[str, "JsonType"], None],  # noqa: UP007
)
"""Any value that JSON can represent, as `json.loads` returns it."""
