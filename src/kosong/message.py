"""Messages exchanged with a model: content parts, tool calls and streamed tool-call fragments.

`ContentPart` subclasses register themselves by their `type` string, so validating a dict such as
`{"type": "text", "text": "hi"}` as a `ContentPart` returns a `TextPart`. A part type declared by a
user is found the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import (
    BaseModel,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
)

from kosong._model import TypedModel
from kosong.utils.typing import JsonType

__all__ = [
    "AudioURLPart",
    "ContentPart",
    "ImageURLPart",
    "Message",
    "NativeToolPart",
    "Role",
    "TextPart",
    "ThinkPart",
    "ToolCall",
    "ToolCallPart",
    "VideoURLPart",
]


class ContentPart(TypedModel):
    """One piece of message content. Subclasses set a string `type` and register under it."""

    def merge_in_place(self, other: object) -> bool:
        """Merge a streamed fragment into this part; False when `other` does not continue it.

        Text continues text and thinking continues thinking; other parts merge with nothing.
        """
        return False


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


class NativeToolPart(ContentPart):
    """A block of a provider's native tool in an answer: a call, a result, cited text.

    `data` is the block exactly as the API sent it (an Anthropic `server_tool_use` or
    `web_search_tool_result`, an OpenAI Responses `web_search_call` item, a Gemini
    `executableCode` part...). It streams like any part, stays in the message, and goes back
    unchanged to the same provider on the next turn; other providers leave it out.
    """

    type: str = "native_tool"
    provider: str
    """The `name` of the provider that sent it ("anthropic", "openai-responses", "gemini")."""
    data: dict[str, JsonType]
    """The block as the API sent it."""


class _MediaURL(BaseModel):
    """Where a medium (an image, an audio clip, a video) is: the shape the three parts share."""

    url: str
    """The URL (an https URL or a data: URL)."""
    id: str | None = None
    """An optional identifier of the medium."""


class ImageURLPart(ContentPart):
    """An image given by URL (an https URL or a data: URL)."""

    class ImageURL(_MediaURL):
        """Where the image is."""

    type: str = "image_url"
    image_url: ImageURL
    """The image."""


class AudioURLPart(ContentPart):
    """An audio clip given by URL."""

    class AudioURL(_MediaURL):
        """Where the audio is."""

    type: str = "audio_url"
    audio_url: AudioURL
    """The audio clip."""


class VideoURLPart(ContentPart):
    """A video given by URL."""

    class VideoURL(_MediaURL):
        """Where the video is."""

    type: str = "video_url"
    video_url: VideoURL
    """The video."""


_MEDIA_PARTS = (ImageURLPart, AudioURLPart, VideoURLPart)


class ToolCall(BaseModel):
    """A request from the model to call a tool."""

    class FunctionBody(BaseModel):
        """The function the model wants called."""

        name: str
        """The tool's name."""
        arguments: str | None = None
        """The arguments as the model wrote them: a JSON string, or None when it gave none."""

    type: Literal["function", "custom"] = "function"
    """"function": `arguments` is a JSON string; "custom": a call of a custom (free-form)
    tool, whose `arguments` is its text input, given to the tool unparsed."""
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
    """A streamed fragment of a tool call's arguments; merges into the `ToolCall` before it.

    `last=True` marks the call's final fragment: the provider says the call is complete (its
    arguments may still be invalid JSON, which the toolset then reports to the model).
    """

    arguments_part: str | None = None
    """The next characters of the arguments JSON string."""
    last: bool = False
    """True when the provider says this completes the call."""

    def merge_in_place(self, other: object) -> bool:
        """Append another fragment of the same call; False if `other` is not a `ToolCallPart`."""
        if not isinstance(other, ToolCallPart):
            return False
        if other.arguments_part:
            self.arguments_part = (self.arguments_part or "") + other.arguments_part
        self.last = self.last or other.last
        return True


Role = Literal["system", "user", "assistant", "tool"]
"""Who a message is from."""


class Message(BaseModel):
    """One message of a conversation.

    `content` is always a list of parts. A string or a single part given for it is put in a
    list (`Message(role="user", content="hi").content == [TextPart(text="hi")]`) and None
    becomes `[]`, as an assistant message holding only tool calls has it. It serializes as a
    plain string when it is exactly one `TextPart`, the shape OpenAI-style APIs expect.
    """

    role: Role
    """Who the message is from."""
    content: list[ContentPart] = Field(default_factory=list[ContentPart])
    """The message's content parts."""
    name: str | None = None
    """An optional name of the author."""
    tool_calls: list[ToolCall] | None = None
    """The tool calls an assistant message makes."""
    tool_call_id: str | None = None
    """For a tool message: the id of the call it answers."""
    partial: bool | None = None
    """True for an assistant message the model should continue (prefill)."""
    is_error: bool | None = None
    """For a tool message: True when the call failed. Providers whose APIs mark a failed call
    send it so (Anthropic's `is_error`, Gemini's `error` response); the text says so too."""

    if TYPE_CHECKING:  # what the constructor accepts, for type checkers; the validator coerces

        def __init__(
            self,
            *,
            role: Role,
            content: str | ContentPart | Sequence[ContentPart] | None = None,
            name: str | None = None,
            tool_calls: Sequence[ToolCall] | None = None,
            tool_call_id: str | None = None,
            partial: bool | None = None,
            is_error: bool | None = None,
        ) -> None: ...

    @field_validator("content", mode="before")
    @classmethod
    def _coerce_content(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [TextPart(text=value)]
        if isinstance(value, ContentPart | Mapping):
            return [value]
        return value

    @field_serializer("content", mode="wrap")
    def _serialize_content(
        self,
        content: list[ContentPart],
        handler: SerializerFunctionWrapHandler,
        info: SerializationInfo,
    ) -> Any:
        if len(content) == 1 and type(content[0]) is TextPart:
            return content[0].text
        dumped: object = handler(content)
        if not info.exclude_none or not isinstance(dumped, list):
            return dumped
        # As the published kosong writes a message: a media part keeps its `"id": null` (its
        # users' stored messages and its own tests compare against that shape).
        written = cast(list[object], dumped)
        for part, item in zip(content, written, strict=True):
            media = getattr(part, part.type, None) if isinstance(part, _MEDIA_PARTS) else None
            if isinstance(media, _MediaURL) and isinstance(item, dict):
                cast(dict[str, Any], item)[part.type].setdefault("id", media.id)
        return written

    def extract_text(self, sep: str = "") -> str:
        """The text of the message's text parts, joined by `sep`."""
        return sep.join(p.text for p in self.content if isinstance(p, TextPart))
