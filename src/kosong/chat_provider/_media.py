"""Media parts (images, audio, video) as the providers need them: data URLs split, placeholders.

Private. Where an API takes no such part (say, an image in an OpenAI tool message), the part
goes as a short placeholder naming its kind, media type and size, never its data: a 150 KB
screenshot must not become 200,000 characters of text in the model's context.
"""

from __future__ import annotations

from kosong.message import AudioURLPart, ContentPart, ImageURLPart, VideoURLPart

__all__ = ["data_url", "media_placeholder", "media_url"]

_URL_LIMIT = 200


def media_url(part: ContentPart) -> tuple[str, str] | None:
    """The kind ("image", "audio", "video") and URL of a media part; None for other parts."""
    if isinstance(part, ImageURLPart):
        return "image", part.image_url.url
    if isinstance(part, AudioURLPart):
        return "audio", part.audio_url.url
    if isinstance(part, VideoURLPart):
        return "video", part.video_url.url
    return None


def data_url(url: str) -> tuple[str, str] | None:
    """The media type and base64 data of a `data:<type>;base64,<data>` URL; None otherwise."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    header, data = url[5:].split(";base64,", 1)
    return header.split(";", 1)[0] or "application/octet-stream", data


def _size(base64_data: str) -> str:
    size = len(base64_data) * 3 // 4 - base64_data[-2:].count("=")
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def media_placeholder(part: ContentPart) -> str:
    """A short text standing for a part the API cannot take here: kind, type and size.

    A data URL is described, never copied; a web URL is kept (cut to 200 characters), since
    the model may quote it.
    """
    found = media_url(part)
    if found is None:
        return f"[{part.type} part]"
    kind, url = found
    inline = data_url(url)
    if inline is not None:
        media_type, data = inline
        return f"[{kind}: {media_type}, {_size(data)}, not shown]"
    shown = url if len(url) <= _URL_LIMIT else url[: _URL_LIMIT - 1] + "…"
    return f"[{kind}: {shown}]"
