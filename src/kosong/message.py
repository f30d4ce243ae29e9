"""Messages exchanged with a model: content parts, tool calls and streamed tool-call fragments.

`ContentPart` subclasses register themselves by their `type` string, so validating a dict such as
`{"type": "text", "text": "hi"}` as a `ContentPart` returns a `TextPart`. A part type declared by a
user is found the same way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from kosong._model import TypedModel
from kosong.utils.typing import JsonType

__all__ = [
    "AudioURLPart",
    "ContentPart",
    "ImageURLPart",
    "Message",
    "Role",
    "TextPart",
    "ThinkPart",
    "ToolCall",
    "ToolCallPart",
    "VideoURLPart",
]


class ContentPart(TypedModel):
    """One piece of message content. Subclasses set a string `type` and register under it."""


class TextPart(ContentPart):
    """Plain text."""

    type: str = "text"
    text: str
    """The text."""

    def merge_in_place(self, other: object) -> bool:
        """Append a streamed `TextPart` fragment to this one; False if `other` is not one."""
        if not isinstance(other, TextPart):
            return False
        self.text += other.text
        return True


class ThinkPart(ContentPart):
    """The model's reasoning, kept apart from what it says."""

    type: str = "think"
    think: str
    """The reasoning text."""
    encrypted: str | None = None
    """An opaque signature some providers attach to reasoning."""

    def merge_in_place(self, other: object) -> bool:
        """Append a streamed `ThinkPart` fragment to this one; False if `other` is not one."""
        if not isinstance(other, ThinkPart) or self.encrypted is not None:
            return False
        self.think += other.think
        self.encrypted = other.encrypted
        return True


class ImageURLPart(ContentPart):
    """An image given by URL (an https URL or a data: URL)."""

    class ImageURL(BaseModel):
        """Where the image is."""

        url: str
        """The image URL."""
        id: str | None = None
        """An optional identifier of the image."""

    type: str = "image_url"
    image_url: ImageURL
    """The image."""


class AudioURLPart(ContentPart):
    """An audio clip given by URL."""

    class AudioURL(BaseModel):
        """Where the audio is."""

        url: str
        """The audio URL."""
        id: str | None = None
        """An optional identifier of the audio."""

    type: str = "audio_url"
    audio_url: AudioURL
    """The audio clip."""


class VideoURLPart(ContentPart):
    """A video given by URL."""

    class VideoURL(BaseModel):
        """Where the video is."""

        url: str
        """The video URL."""
        id: str | None = None
        """An optional identifier of the video."""

    type: str = "video_url"
    video_url: VideoURL
    """The video."""


class ToolCall(BaseModel):
    """A request from the model to call a tool."""

    class FunctionBody(BaseModel):
        """The function the model wants called."""

        name: str
        """The tool's name."""
        arguments: str | None = None
        """The arguments as the model wrote them: a JSON string, or None when it gave none."""

    type: Literal["function"] = "function"
    """Always "function"."""
    id: str
    """The call's id; the matching result carries it back."""
    function: FunctionBody
    """What to call, with which arguments."""
    extras: dict[str, JsonType] | None = None
    """Provider-specific data to keep with the call."""

    def merge_in_place(self, other: object) -> bool:
        """Append a streamed `ToolCallPart` to this call's arguments; False if not one."""
        if not isinstance(other, ToolCallPart):
            return False
        if other.arguments_part:
            self.function.arguments = (self.function.arguments or "") + other.arguments_part
        return True


class ToolCallPart(BaseModel):
    """A streamed fragment of a tool call's arguments; merges into the `ToolCall` before it."""

    arguments_part: str | None = None
    """The next characters of the arguments JSON string."""


Role = Literal["system", "user", "assistant", "tool"]
"""Who a message is from."""


class Message(BaseModel):
    """One message of a conversation."""

    role: Role
    """Who the message is from."""
    content: str | list[ContentPart] = ""
    """The message's content: a string, or a list of parts."""
    name: str | None = None
    """An optional name of the author."""
    tool_calls: list[ToolCall] | None = None
    """The tool calls an assistant message makes."""
    tool_call_id: str | None = None
    """For a tool message: the id of the call it answers."""
    partial: bool | None = None
    """True for an assistant message the model should continue (prefill)."""

    def extract_text(self, sep: str = "") -> str:
        """The message's text: the string content, or its text parts joined by `sep`."""
        if isinstance(self.content, str):
            return self.content
        return sep.join(p.text for p in self.content if isinstance(p, TextPart))
