"""Display blocks: what a tool shows the user, kept apart from what the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, GetCoreSchemaHandler, model_serializer
from pydantic_core import core_schema

from kosong._model import OverridableModelMeta, register_type, type_dispatch_schema
from kosong.utils.typing import JsonType

__all__ = ["BriefDisplayBlock", "DisplayBlock", "UnknownDisplayBlock"]

_BLOCKS: dict[str, type[DisplayBlock]] = {}


class DisplayBlock(BaseModel, metaclass=OverridableModelMeta):
    """A block of content for the user interface.

    Subclasses set a string `type` (`type = "table"` is enough) and are registered under it, so
    validating `{"type": "table", ...}` as a `DisplayBlock` returns the subclass. A type nobody
    registered comes back as `UnknownDisplayBlock` with all its data, so an older client
    never loses what a newer tool sent. A subclass without a string `type` is a TypeError when
    the class is defined.
    """

    type: str
    """The discriminator the subclass registers under."""

    registry: ClassVar[dict[str, type[DisplayBlock]]] = _BLOCKS

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        type_ = cls.model_fields["type"].default
        if not isinstance(type_, str) or not type_:
            raise TypeError(
                f"DisplayBlock subclass {cls.__qualname__} must set a non-empty string `type`, "
                f'e.g. `type = "table"`'
            )
        register_type(_BLOCKS, type_, cls, "DisplayBlock")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Only the base dispatches; `DisplayBlock` is not bound yet while its schema is built.
        if source.__module__ == __name__ and source.__qualname__ == "DisplayBlock":
            return type_dispatch_schema(
                source,
                _BLOCKS,
                what="display block",
                fallback=lambda raw: UnknownDisplayBlock.from_raw(raw),
            )
        return handler(source)


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
