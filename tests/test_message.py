from __future__ import annotations

import pytest
from pydantic import ValidationError

from kosong.message import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    ToolCallPart,
    VideoURLPart,
)


@pytest.mark.parametrize(
    ("raw", "cls"),
    [
        ({"type": "text", "text": "hi"}, TextPart),
        ({"type": "think", "think": "hmm"}, ThinkPart),
        ({"type": "image_url", "image_url": {"url": "https://x/y.png"}}, ImageURLPart),
        ({"type": "audio_url", "audio_url": {"url": "https://x/y.mp3"}}, AudioURLPart),
        ({"type": "video_url", "video_url": {"url": "https://x/y.mp4"}}, VideoURLPart),
    ],
)
def test_content_part_validation_dispatches_on_type(
    raw: dict[str, object], cls: type[ContentPart]
) -> None:
    part = ContentPart.model_validate(raw)
    assert type(part) is cls
    assert part.model_dump(exclude_none=True) == raw


def test_user_content_part_registers_by_its_type() -> None:
    class CodePart(ContentPart):
        type: str = "test_code"
        code: str

    part = Message.model_validate(
        {"role": "user", "content": [{"type": "test_code", "code": "x = 1"}]}
    ).content[0]
    assert isinstance(part, CodePart)
    assert ContentPart.registry["test_code"] is CodePart


def test_unknown_content_part_type_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="unknown content part type 'nope'"):
        Message(role="user", content=[{"type": "nope"}])  # pyright: ignore[reportArgumentType]


def test_content_part_subclass_without_type_fails_at_definition() -> None:
    with pytest.raises(TypeError, match="must set a non-empty string `type`"):

        class Broken(ContentPart):
            pass


def test_two_part_classes_cannot_claim_one_type() -> None:
    with pytest.raises(TypeError, match="already registered"):

        class AnotherText(ContentPart):
            type: str = "text"


def test_message_round_trips_through_json() -> None:
    message = Message(
        role="assistant",
        content=[TextPart(text="let me look"), ThinkPart(think="weather first")],
        tool_calls=[
            ToolCall(id="c1", function=ToolCall.FunctionBody(name="get_weather", arguments="{}"))
        ],
    )
    again = Message.model_validate_json(message.model_dump_json())
    assert again == message
    assert again.extract_text() == "let me look"


def test_tool_call_merges_streamed_argument_fragments() -> None:
    call = ToolCall(id="c1", function=ToolCall.FunctionBody(name="add", arguments=None))
    for fragment in ['{"a": ', "1, ", '"b": 2}']:
        assert call.merge_in_place(ToolCallPart(arguments_part=fragment))
    assert call.function.arguments == '{"a": 1, "b": 2}'
    assert not call.merge_in_place(TextPart(text="x"))


def test_text_parts_merge_but_not_with_other_kinds() -> None:
    part = TextPart(text="Hel")
    assert part.merge_in_place(TextPart(text="lo"))
    assert part.text == "Hello"
    assert not part.merge_in_place(ThinkPart(think="x"))


def test_tool_call_arguments_may_be_none() -> None:
    call = ToolCall.model_validate({"id": "1", "function": {"name": "now"}})
    assert call.function.arguments is None
    assert call.type == "function"


def test_message_content_string_is_coerced_to_one_text_part() -> None:
    assert Message(role="user", content="hi").content == [TextPart(text="hi")]


def test_message_content_single_part_is_coerced_to_a_list() -> None:
    part = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png"))
    assert Message(role="user", content=part).content == [part]
    raw = {"type": "text", "text": "q"}
    assert Message.model_validate({"role": "user", "content": raw}).content == [TextPart(text="q")]


def test_message_content_none_becomes_an_empty_list() -> None:
    assert Message(role="assistant", content=None).content == []
    assert Message(role="assistant").content == []


def test_message_accepts_content_none_beside_tool_calls() -> None:
    call = ToolCall(id="c1", function=ToolCall.FunctionBody(name="add", arguments="{}"))
    raw = {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]}
    message = Message.model_validate(raw)
    assert message.content == []
    assert message.tool_calls == [call]


def test_message_content_of_one_text_part_serializes_as_a_plain_string() -> None:
    message = Message(role="user", content=[TextPart(text="hi")])
    assert message.model_dump()["content"] == "hi"
    assert '"content":"hi"' in message.model_dump_json()
    assert Message.model_validate_json(message.model_dump_json()) == message


def test_message_content_of_several_parts_serializes_as_a_list() -> None:
    parts = [TextPart(text="a"), ThinkPart(think="b")]
    dumped = Message(role="assistant", content=parts).model_dump(exclude_none=True)
    assert dumped["content"] == [{"type": "text", "text": "a"}, {"type": "think", "think": "b"}]
    assert Message(role="assistant").model_dump()["content"] == []


def test_message_extract_text_joins_text_parts_only() -> None:
    parts = [TextPart(text="a"), ThinkPart(think="x"), TextPart(text="b")]
    assert Message(role="assistant", content=parts).extract_text(" ") == "a b"
    assert Message(role="user", content="plain").extract_text() == "plain"


def test_tool_call_parts_merge_with_each_other_and_keep_last() -> None:
    first = ToolCallPart(arguments_part='{"a"')
    assert first.merge_in_place(ToolCallPart(arguments_part=": 1}", last=True))
    assert (first.arguments_part, first.last) == ('{"a": 1}', True)
    assert not first.merge_in_place(TextPart(text="x"))


def test_content_parts_other_than_text_and_think_do_not_merge() -> None:
    image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png"))
    assert not image.merge_in_place(image.model_copy())


@pytest.mark.parametrize(
    "part",
    [
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png")),
        AudioURLPart(audio_url=AudioURLPart.AudioURL(url="https://x/y.mp3")),
        VideoURLPart(video_url=VideoURLPart.VideoURL(url="https://x/y.mp4")),
    ],
)
def test_media_part_dumps_keep_id_none_as_the_published_package_does(part: ContentPart) -> None:
    dumped = part.model_dump()
    assert dumped[part.type] == {"url": dumped[part.type]["url"], "id": None}
    media = getattr(part, part.type)
    assert media.model_dump() == {"url": media.url, "id": None}
    message = Message(role="user", content=[TextPart(text="see"), part])
    assert message.model_dump()["content"][1] == dumped


def test_a_message_dumped_without_nones_keeps_its_media_parts_id_none() -> None:
    # The published kosong's own message test: a message dumped with `exclude_none` holds each
    # media part as the part itself dumps, `"id": None` included.
    parts: list[ContentPart] = [
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://example.com/image.png")),
        AudioURLPart(audio_url=AudioURLPart.AudioURL(url="https://example.com/audio.mp3")),
        VideoURLPart(video_url=VideoURLPart.VideoURL(url="https://example.com/video.mp4")),
    ]
    message = Message(role="user", content=[TextPart(text="see"), *parts])
    dumped = message.model_dump(exclude_none=True)
    assert dumped["content"][1:] == [part.model_dump() for part in parts]
    assert '"id":null' in message.model_dump_json(exclude_none=True)
    assert Message.model_validate(dumped) == message
    given = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png", id="img-1"))
    assert given.model_dump(exclude_none=True)["image_url"] == {
        "url": "https://x/y.png",
        "id": "img-1",
    }
