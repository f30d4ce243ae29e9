from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kosong.message import ImageURLPart, TextPart
from kosong.tooling import ToolError, ToolOk, ToolReturnType, ToolReturnValue
from tests.tooling._strategies import json_values

FIELDS_001 = {"is_error", "output", "message", "display", "extras"}


def test_json_shape_is_exactly_the_documented_fields() -> None:
    value = ToolOk(output="42", message="m", brief="b", extras={"k": 1})
    assert set(value.model_dump(mode="json")) == FIELDS_001
    assert set(ToolOk(output="42").model_dump(mode="json", exclude_none=True)) == FIELDS_001 - {
        "extras"
    }


def test_artifact_stays_with_the_application_and_is_never_serialized() -> None:
    value = ToolOk(output="summary", artifact={"rows": object()})
    assert value.artifact is not None
    assert "artifact" not in value.model_dump()
    assert "artifact" not in value.model_dump_json()


def test_tool_ok_and_error_fill_is_error_and_brief() -> None:
    ok = ToolOk(output="北京：晴天", message="done", brief="天气查询成功")
    assert (ok.is_error, ok.brief, ok.display[0].type) == (False, "天气查询成功", "brief")
    err = ToolError(message="API down", brief="查询失败")
    assert (err.is_error, err.output, err.message, err.brief) == (True, "", "API down", "查询失败")


def test_output_accepts_one_part_or_several() -> None:
    part = TextPart(text="hi")
    assert ToolOk(output=part).output == [part]
    image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png"))
    assert ToolOk(output=(part, image)).output == [part, image]


def test_non_finite_extras_are_refused_since_json_cannot_carry_them() -> None:
    with pytest.raises(ValidationError, match="extras"):
        ToolOk(output="x", extras={"ratio": float("inf")})


def test_tool_return_type_is_the_old_name() -> None:
    assert ToolReturnType is ToolReturnValue


_json = json_values()


@given(
    is_error=st.booleans(),
    output=st.text() | st.lists(st.builds(TextPart, text=st.text()), max_size=3),
    message=st.text(),
    brief=st.text(),
    extras=st.none() | st.dictionaries(st.text(), _json, max_size=3),
)
def test_return_value_round_trips_through_json_mode_dump(
    is_error: bool,
    output: str | list[TextPart],
    message: str,
    brief: str,
    extras: dict[str, object] | None,
) -> None:
    cls = ToolError if is_error else ToolOk
    value = cls(output=output, message=message, brief=brief, extras=extras)  # pyright: ignore[reportArgumentType]
    dumped = value.model_dump(mode="json")
    again = ToolReturnValue.model_validate(dumped)
    assert again.model_dump(mode="json") == dumped
    assert again.brief == brief
    assert ToolReturnValue.model_validate_json(value.model_dump_json()).model_dump() == (
        value.model_dump()
    )


@pytest.mark.parametrize(
    ("output", "shown"),
    [(42, "42 (int)"), ({"a": 1}, '{"a": 1} (dict)'), (None, "null (NoneType)"),
     ([1, 2], "[1, 2] (list)")],
)  # fmt: skip
def test_an_output_that_is_not_text_or_parts_is_a_type_error_saying_what_to_write(
    output: object, shown: str
) -> None:
    for cls in (ToolOk, ToolError):
        with pytest.raises(TypeError) as caught:
            cls(output=output, message="m")  # pyright: ignore[reportArgumentType]
        assert str(caught.value) == (
            f"{cls.__name__}(output=...) takes text, a content part or a list of content parts, "
            f"not {shown}; write {cls.__name__}(output=json.dumps(value)) to give the model "
            "this value as JSON text"
        )


def test_an_output_dict_naming_its_type_is_one_content_part() -> None:
    part: object = {"type": "text", "text": "hi"}
    assert ToolOk(output=part).output == [TextPart(text="hi")]  # pyright: ignore[reportArgumentType]
    assert ToolOk(output=(TextPart(text="a"),)).output == [TextPart(text="a")]
