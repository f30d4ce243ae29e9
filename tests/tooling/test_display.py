from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.tooling import (
    BriefDisplayBlock,
    DisplayBlock,
    ToolOk,
    ToolReturnValue,
    UnknownDisplayBlock,
)
from tests.tooling._strategies import json_values


class ChartBlock(DisplayBlock):
    type = "test_chart"
    points: list[float]


def test_display_block_subclass_is_found_by_its_type() -> None:
    value = ToolReturnValue.model_validate(
        {"is_error": False, "display": [{"type": "test_chart", "points": [1, 2.5]}]}
    )
    assert value.display == [ChartBlock(points=[1, 2.5])]


def test_unknown_display_block_keeps_its_type_and_data() -> None:
    raw = {"type": "map", "lat": 1.5, "lon": [2, 3], "label": {"zh": "北京"}}
    block = ToolReturnValue.model_validate({"is_error": False, "display": [raw]}).display[0]
    assert isinstance(block, UnknownDisplayBlock)
    assert block.type == "map"
    assert block.data == {"lat": 1.5, "lon": [2, 3], "label": {"zh": "北京"}}
    assert block.model_dump(mode="json") == raw


def test_display_block_without_string_type_fails_at_class_definition() -> None:
    with pytest.raises(TypeError, match="must set a non-empty string `type`"):

        class NoType(DisplayBlock):
            text: str

    with pytest.raises(TypeError, match="must set a non-empty string `type`"):

        class NumberType(DisplayBlock):
            type = 3  # pyright: ignore[reportAssignmentType]


def test_brief_is_the_first_brief_block() -> None:
    value = ToolOk(output="x", brief="done", display=[BriefDisplayBlock(text="second")])
    assert value.brief == "done"
    assert ToolOk(output="x").brief == ""


_json = json_values(text=st.text(max_size=5))


@given(
    type_=st.text(min_size=1, max_size=10).filter(
        lambda t: t not in DisplayBlock.registry and t != "unknown"
    ),
    data=st.dictionaries(st.text(max_size=8).filter(lambda k: k != "type"), _json, max_size=4),
)
def test_any_unregistered_block_round_trips_unchanged(type_: str, data: dict[str, object]) -> None:
    raw = {"is_error": False, "output": "", "message": "", "extras": None}
    raw["display"] = [{"type": type_, **data}]
    value = ToolReturnValue.model_validate(raw)
    assert value.model_dump(mode="json") == raw
    assert ToolReturnValue.model_validate(value.model_dump(mode="json")) == value
