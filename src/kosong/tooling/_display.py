"""Display blocks: what a tool shows the user, kept apart from what the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import model_serializer

from kosong._model import TypedModel
from kosong.utils.typing import JsonType

__all__ = ["BriefDisplayBlock", "DisplayBlock", "UnknownDisplayBlock"]


class DisplayBlock(TypedModel):
    """A block of content for the user interface.

    Subclasses set a string `type` (`type = "table"` is enough) and are registered under it, so
    validating `{"type": "table", ...}` as a `DisplayBlock` returns the subclass. A type nobody
    registered comes back as `UnknownDisplayBlock` with all its data, so an older client
    never loses what a newer tool sent. A subclass without a string `type` is a TypeError when
    the class is defined.
    """

    @classmethod
    def _unregistered(cls, raw: Mapping[str, Any]) -> DisplayBlock:
        return UnknownDisplayBlock.from_raw(raw)


class BriefDisplayBlock(DisplayBlock):
    """A one-line summary for the user, such as "Weather fetched"."""

    type: str = "brief"
    text: str
    """The summary."""


class UnknownDisplayBlock(DisplayBlock):
    """A block whose `type` this process does not know; it keeps everything it was given.

    `type` is the original type and `data` the block's other fields. It serializes back to the
    original shape, so passing it on (or storing it) loses nothing.
    """

    type: str = "unknown"
    data: JsonType = None
    """The block's fields other than `type`."""

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> UnknownDisplayBlock:
        """Wrap a raw block dict of an unregistered type."""
        type_ = raw.get("type")
        return cls(
            type=type_ if isinstance(type_, str) else "unknown",
            data={k: v for k, v in raw.items() if k != "type"},
        )

    @model_serializer(mode="plain")
    def _serialize(self) -> dict[str, Any]:
        if isinstance(self.data, dict):
            return {"type": self.type, **self.data}
        return {"type": self.type, "data": self.data}
