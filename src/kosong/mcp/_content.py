"""`ResourcePart`: a content part that is an MCP embedded resource (text or binary)."""

from __future__ import annotations

from typing import Self

from pydantic import model_validator

from kosong.message import ContentPart

__all__ = ["ResourcePart"]


class ResourcePart(ContentPart):
    """An embedded resource: its URI, its MIME type, and either its text or its bytes (base64)."""

    type: str = "resource"
    uri: str
    """Where the resource lives (any URI scheme, e.g. `file:///report.txt`)."""
    mime_type: str | None = None
    """Its MIME type, when known."""
    text: str | None = None
    """Its content, for a text resource."""
    blob: str | None = None
    """Its content in base64, for a binary resource."""

    @model_validator(mode="after")
    def _one_content(self) -> Self:
        if (self.text is None) == (self.blob is None):
            raise ValueError("a ResourcePart has exactly one of `text` and `blob`")
        return self
