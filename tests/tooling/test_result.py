"""ToolResult as JSON text (`to_json` / `from_json`): what a run keeps, and an AgentState."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kosong.tooling import ToolError, ToolOk, ToolResult
from kosong.tooling.error import (
    ToolDeferredError,
    ToolPermissionDeniedError,
    ToolRateLimitedError,
    ToolValidateError,
)
from tests.tooling._strategies import json_values

VALUES = [
    ToolOk(output="42", message="computed", brief="Result"),
    ToolError(message="boom", brief="Failed"),
    ToolValidateError("`a` is required"),
    ToolRateLimitedError("slow down", retry_after=3),
    ToolPermissionDeniedError("rm", "not today"),
    ToolDeferredError("rm", "approval", "Delete it?", within=30),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_result_reads_back_as_it_was_with_its_class(value: Any) -> None:
    result = ToolResult("c1", value, metadata={"tool_name": "t", "timestamp": "now"})
    again = ToolResult.from_json(result.to_json())
    assert type(again.return_value) is type(value) and again.return_value == value
    assert again.tool_call_id == "c1" and again.metadata == result.metadata


def test_a_deferral_keeps_its_question_kind_and_time_limit() -> None:
    text = ToolResult("c1", ToolDeferredError("rm", "approval", "Delete it?", within=30)).to_json()
    value = ToolResult.from_json(text).return_value
    assert isinstance(value, ToolDeferredError)
    assert (value.kind, value.question, value.within) == ("approval", "Delete it?", 30)


def test_another_class_reads_back_as_ok_or_error() -> None:
    class Mine(ToolError):
        def __init__(self, message: str) -> None:
            super().__init__(message=message)

    text = ToolResult("c1", Mine("mine")).to_json()
    assert json.loads(text)["type"] == "Mine"
    value = ToolResult.from_json(text).return_value
    assert type(value) is ToolError and value.message == "mine"


@pytest.mark.parametrize("text", ["", "{}", '{"id": "c1", "type": "ToolOk"}', "[1]", "nope"])
def test_text_that_is_no_stored_result_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a stored ToolResult"):
        ToolResult.from_json(text)


@given(output=st.text(), extras=st.dictionaries(st.text(), json_values()), error=st.booleans())
def test_any_output_and_extras_read_back(output: str, extras: dict[str, Any], error: bool) -> None:
    value = ToolError(message="m", output=output, extras=extras or None) if error else \
        ToolOk(output=output, extras=extras or None)  # fmt: skip
    again = ToolResult.from_json(ToolResult("c", value).to_json()).return_value
    assert again == value and type(again) is type(value)
