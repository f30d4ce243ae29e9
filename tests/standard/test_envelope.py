"""The envelope: the standard's JSON shape for results, and the lossless round trip."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kosong.message import ImageURLPart, TextPart, ToolCall
from kosong.standard import (
    Envelope,
    coded_error,
    from_envelope,
    to_envelope,
    trace_scope,
)
from kosong.tooling import (
    BriefDisplayBlock,
    ToolError,
    ToolOk,
    ToolResult,
    ToolReturnValue,
    tool,
)
from kosong.tooling.error import (
    ToolDeprecatedError,
    ToolParseError,
    ToolRateLimitedError,
    ToolRuntimeError,
    ToolTimeoutError,
    ToolValidateError,
)
from kosong.tooling.simple import SimpleToolset
from tests.standard._std_tools import output_json

META = {
    "tool_name": "get_weather",
    "execution_time_ms": 127,
    "timestamp": "2024-01-01T00:00:00Z",
    "trace_id": "trace_abc123_xyz789",
}
WEATHER = {"temperature": 25, "condition": "sunny"}


def weather_ok() -> ToolOk:
    return ToolOk(output=json.dumps(WEATHER, ensure_ascii=False))


def test_success_example_of_the_standard() -> None:
    expected = {"success": True, "status": "success", "data": WEATHER, "metadata": META}
    value = weather_ok()
    assert to_envelope(value, metadata=META).dump() == expected
    # A result without recorded metadata: given by argument; the value needs no extension.
    assert to_envelope(weather_ok(), **META, lossless=False).dump() == expected
    assert to_envelope(weather_ok(), **META).dump() == expected
    assert from_envelope(to_envelope(weather_ok(), **META)).return_value == weather_ok()
    assert json.loads(to_envelope(value, metadata=META).to_json()) == expected


def test_error_example_of_the_standard() -> None:
    expected = {
        "success": False,
        "status": "error",
        "error": {"code": "CITY_NOT_FOUND", "message": "城市'XYZ'未收录", "retryable": False},
        "metadata": {k: v for k, v in META.items() if k != "execution_time_ms"},
    }
    value = coded_error("CITY_NOT_FOUND", "城市'XYZ'未收录")
    metadata = {k: v for k, v in META.items() if k != "execution_time_ms"}
    assert to_envelope(value, metadata=metadata).dump() == expected


def test_cache_hit_example_of_the_standard() -> None:
    metadata = {
        **META,
        "execution_time_ms": 0,
        "trace_id": "trace_abc123",
        "cache": {"hit": True, "cached_at": "2024-01-01T00:00:00Z", "ttl_remaining": 300},
    }
    expected = {"success": True, "status": "success", "data": WEATHER, "metadata": metadata}
    assert to_envelope(weather_ok(), metadata=metadata).dump() == expected


def test_latency_metadata_example_of_the_standard() -> None:
    metadata = {
        **META,
        "trace_id": "trace_abc123",
        "performance": {"validation_ms": 2, "network_ms": 115, "processing_ms": 10},
    }
    assert to_envelope(weather_ok(), metadata=metadata).dump()["metadata"] == metadata


def test_debug_example_of_the_standard() -> None:
    debug = {
        "internal_api_response": {"status": 200, "body": "..."},
        "cache_hit": False,
        "query_duration_ms": 45,
    }
    metadata = {**META, "trace_id": "trace_abc123"}
    value = weather_ok()
    assert to_envelope(value, metadata={**metadata, "debug_info": debug}).dump() == {
        "success": True,
        "status": "success",
        "data": WEATHER,
        "metadata": metadata,
        "debug_info": debug,
    }


def test_deprecated_error_response_of_the_standard() -> None:
    value = ToolDeprecatedError(
        "get_weather_v1",
        replacement="get_weather",
        sunset_date="2026-12-31",
        migration_guide="https://docs.example.com/migration/weather-v1-to-v2",
    )
    error = to_envelope(value, tool_name="get_weather_v1").dump()["error"]
    assert error == {
        "code": "TOOL_DEPRECATED",
        "message": value.message,
        "retryable": False,
        "replacement": "get_weather",
        "sunset_date": "2026-12-31",
        "migration_guide": "https://docs.example.com/migration/weather-v1-to-v2",
    }


def test_retryable_follows_the_catalog() -> None:
    assert to_envelope(ToolTimeoutError("t", 1), tool_name="t").dump()["error"]["retryable"] is True
    assert (
        to_envelope(ToolValidateError("x"), tool_name="t").dump()["error"]["code"]
        == "INVALID_PARAMS"
    )
    limited = to_envelope(ToolRateLimitedError("slow", retry_after=3), tool_name="t").dump()[
        "error"
    ]
    assert limited["retry_after"] == 3 and limited["retryable"] is True


def test_text_output_stays_a_string_and_json_output_becomes_data() -> None:
    assert to_envelope(ToolOk(output="25 degrees"), tool_name="t").data == "25 degrees"
    assert to_envelope(ToolOk(output='{"a": 1}'), tool_name="t").data == {"a": 1}
    assert to_envelope(ToolOk(output='{"a":1}'), tool_name="t").data == {"a": 1}
    assert to_envelope(ToolOk(output="[1, 2]"), tool_name="t").data == [1, 2]
    # Not as json.dumps writes it: kept as the exact text.
    assert to_envelope(ToolOk(output='{ "a" : 1 }'), tool_name="t").data == '{ "a" : 1 }'
    assert to_envelope(ToolOk(output='{"a": NaN}'), tool_name="t").data == '{"a": NaN}'


def test_missing_metadata_is_filled_in() -> None:
    with trace_scope("trace_given"):
        envelope = to_envelope(ToolResult("c1", ToolOk(output="x")), tool_name="t")
    assert envelope.metadata.trace_id == "trace_given"
    assert envelope.metadata.tool_call_id == "c1"
    assert envelope.metadata.timestamp.endswith("Z")
    fresh = to_envelope(ToolOk(), tool_name="t")
    assert fresh.metadata.trace_id is not None and fresh.metadata.trace_id.startswith("trace_")


def test_envelope_without_a_tool_name_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_name"):
        to_envelope(ToolOk())


@pytest.mark.parametrize(
    "data",
    [
        {"success": True, "status": "error", "metadata": META},
        {"success": False, "status": "error", "metadata": META},
        {
            "success": True,
            "status": "success",
            "error": {"code": "X", "message": "m"},
            "metadata": META,
        },
        {"success": True, "status": "success"},
    ],
)
def test_inconsistent_envelopes_are_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Envelope.model_validate(data)


def test_bare_standard_shape_leaves_the_extension_out() -> None:
    value = ToolOk(output="x", message="note", brief="Done")
    assert to_envelope(value, metadata=META).kosong is not None
    assert "kosong" not in to_envelope(value, metadata=META, lossless=False).dump()


def test_from_envelope_accepts_json_text_and_dicts() -> None:
    text = json.dumps({"success": True, "status": "success", "data": WEATHER, "metadata": META})
    from_text = from_envelope(text, tool_call_id="c9")
    assert from_text.tool_call_id == "c9"
    assert output_json(from_text) == WEATHER
    assert from_envelope(json.loads(text)).return_value == from_text.return_value


# --- the round trip, for any result ------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


FORMS = {  # how json.dumps may write an output that becomes `data`, in the order they are named
    "default": {"ensure_ascii": False},
    "ascii": {"ensure_ascii": True},
    "compact": {"ensure_ascii": False, "separators": (",", ":")},
    "compact_ascii": {"ensure_ascii": True, "separators": (",", ":")},
}
containers = st.dictionaries(st.text(max_size=5), json_values, max_size=3) | st.lists(
    json_values, max_size=3
)


@given(containers, st.sampled_from(sorted(FORMS)))
def test_json_output_in_any_of_the_four_forms_is_data_and_comes_back_as_written(
    value: Any, written_as: str
) -> None:
    output = json.dumps(value, **FORMS[written_as])
    envelope = to_envelope(ToolOk(output=output), tool_name="t")
    assert envelope.data == value
    # The form named is the first that writes this text (the default needs no extension).
    named = next(form for form, options in FORMS.items() if json.dumps(value, **options) == output)
    assert (envelope.kosong or {}).get("json_form", "default") == named
    assert from_envelope(envelope.to_json()).return_value.output == output


@given(containers, st.sampled_from([{"indent": 1}, {"separators": (", ", ":")}]))
def test_json_written_otherwise_stays_the_text_it_is(value: Any, options: dict[str, Any]) -> None:
    output = json.dumps(value, **options)
    if any(json.dumps(value, **form) == output for form in FORMS.values()):
        return  # nothing to separate: this text is one of the four forms too
    envelope = to_envelope(ToolOk(output=output), tool_name="t")
    assert envelope.data == output
    assert from_envelope(envelope.to_json()).return_value.output == output


@st.composite
def outputs(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["text", "json", "compact", "ascii", "parts"]))
    if kind == "text":
        return draw(st.text())
    if kind == "parts":
        return draw(
            st.lists(
                st.builds(TextPart, text=st.text())
                | st.just(ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png"))),
                max_size=2,
            )
        )
    value = draw(
        st.dictionaries(st.text(max_size=5), json_values, max_size=3)
        | st.lists(json_values, max_size=3)
    )
    if kind == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, ensure_ascii=kind == "ascii")


@st.composite
def results(draw: st.DrawFn) -> ToolResult:
    factories = [
        lambda: ToolOk(
            output=draw(outputs()),
            message=draw(st.text(max_size=5)),
            brief=draw(st.text(max_size=5)),
        ),
        lambda: ToolError(message=draw(st.text()), output=draw(outputs())),
        lambda: ToolValidateError(draw(st.text())),
        lambda: ToolParseError(draw(st.text())),
        lambda: ToolRuntimeError(draw(st.text())),
        lambda: ToolTimeoutError("t", draw(st.floats(min_value=0.1, max_value=100))),
        lambda: ToolRateLimitedError(
            draw(st.text()), retry_after=draw(st.none() | st.floats(0, 10))
        ),
        lambda: coded_error(
            "SOME_CODE", draw(st.text()), retryable=draw(st.none() | st.booleans())
        ),
        lambda: ToolReturnValue(is_error=draw(st.booleans()), output=draw(outputs())),
        lambda: ToolOk(  # a structured value beside the output (a typed tool, MCP)
            output=draw(outputs()), extras={"standard": {"data": draw(json_values)}}
        ),
    ]
    value: ToolReturnValue = draw(st.sampled_from(factories))()
    if draw(st.booleans()):
        extra = draw(
            st.dictionaries(st.sampled_from(["rows", "standard", "k"]), json_values, max_size=2)
        )
        value.extras = {**(value.extras or {}), **extra} if extra else value.extras
    metadata: dict[str, Any] = {
        "tool_name": "t",
        "timestamp": "2024-01-01T00:00:00Z",
        "trace_id": "trace_x",
    }
    if draw(st.booleans()):
        metadata["execution_time_ms"] = draw(st.integers(0, 10_000) | st.floats(0, 10_000))
    if draw(st.booleans()):
        metadata["cache"] = {"hit": True, "cached_at": "2024-01-01T00:00:00Z", "ttl_remaining": 3}
    return ToolResult(draw(st.text(max_size=8)), value, metadata=metadata)


@given(results())
def test_any_result_survives_the_round_trip_through_json(result: ToolResult) -> None:
    envelope = to_envelope(result)
    text = envelope.to_json()
    back = from_envelope(text)
    assert back.tool_call_id == result.tool_call_id
    assert type(back.return_value) is type(result.return_value)
    assert back.return_value == result.return_value
    assert back.metadata == result.metadata
    assert to_envelope(back).dump() == envelope.dump()


@given(results())
def test_bare_envelope_still_has_the_standard_fields(result: ToolResult) -> None:
    data = to_envelope(result, lossless=False).dump()
    assert data["success"] is not result.return_value.is_error
    assert data["status"] == ("error" if result.return_value.is_error else "success")
    assert {"tool_name", "timestamp", "trace_id"} <= data["metadata"].keys()
    if result.return_value.is_error:
        assert {"code", "message", "retryable"} <= data["error"].keys()
    assert "kosong" not in data


def test_display_and_message_are_kept_through_the_extension() -> None:
    value = ToolOk(output="x", message="for the model", display=[BriefDisplayBlock(text="Done")])
    back = from_envelope(to_envelope(ToolResult("c", value, metadata=META)).to_json()).return_value
    assert back == value
    assert back.brief == "Done"


# --- a result's structured value ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "data"),
    [("3", 3), ("2.5", 2.5), ("true", True), ("null", None), ("hello Ada", "hello Ada"),
     ('{"a":1}', {"a": 1}), ("[1,2]", [1, 2]), ("It is 36F.", {"temperature": 36})],
)  # fmt: skip
def test_the_structured_value_is_the_envelopes_data(output: str, data: Any) -> None:
    value = ToolOk(output=output, extras={"standard": {"data": data}})
    envelope = to_envelope(value, tool_name="t")
    assert envelope.data == data
    assert to_envelope(value, tool_name="t", lossless=False).dump().get("data") == data
    assert from_envelope(envelope.to_json()).return_value == value


def test_a_bare_envelopes_number_comes_back_as_the_number() -> None:
    bare = {"success": True, "status": "success", "data": 3, "metadata": META}
    value = from_envelope(bare).return_value
    assert value.output == "3" and value.extras == {"standard": {"data": 3}}
    assert to_envelope(from_envelope(bare)).dump() == bare


# --- the documents' examples, round trip ------------------------------------------------------

EXAMPLES_002 = json.loads(
    (Path(__file__).parent / "data" / "envelopes_002.json").read_text(encoding="utf-8")
)["examples"]
SEED_002 = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "002_0e346b03f35f66d1.txt"


@pytest.mark.parametrize(
    "envelope",
    [e["envelope"] for e in EXAMPLES_002 if "metadata" in e["envelope"]],
    ids=[f"line{e['line']}" for e in EXAMPLES_002 if "metadata" in e["envelope"]],
)
def test_every_envelope_example_of_the_standard_round_trips_unchanged(
    envelope: dict[str, Any],
) -> None:
    result = from_envelope(envelope)
    assert to_envelope(result).dump() == envelope
    assert to_envelope(result, lossless=False).dump() == envelope
    assert to_envelope(from_envelope(json.dumps(envelope, ensure_ascii=False))).dump() == envelope


def test_the_deprecation_example_without_metadata_round_trips_once_it_has_some() -> None:
    # 002's deprecation response (line 962) shows only the error: the standard's field table
    # makes `metadata` required, so on its own it is refused. With metadata it round trips,
    # its `retryable` stated: the table's default (false), which kosong always writes.
    (bare,) = [e["envelope"] for e in EXAMPLES_002 if "metadata" not in e["envelope"]]
    with pytest.raises(ValidationError, match="metadata"):
        from_envelope(bare)
    whole = {**bare, "metadata": META}
    stated = {**whole, "error": {**bare["error"], "retryable": False}}
    assert to_envelope(from_envelope(whole)).dump() == stated
    assert to_envelope(from_envelope(stated)).dump() == stated


@pytest.mark.skipif(not SEED_002.is_file(), reason=f"the user's documents are not at {SEED_002}")
def test_the_examples_file_holds_every_envelope_of_the_standard() -> None:
    text = SEED_002.read_text(encoding="utf-8")
    found: list[tuple[int, Any]] = []
    for block in re.finditer(r"```(json|sse)\n(.*?)```", text, re.S):
        body = block.group(2) if block.group(1) == "json" else block.group(2).partition("data:")[2]
        try:
            value = json.loads(body)
        except ValueError:  # commented JSON, or an SSE event of another kind
            continue
        if isinstance(value, dict) and "success" in value:
            found.append((text[: block.start()].count("\n") + 1, value))
    assert found == [(e["line"], e["envelope"]) for e in EXAMPLES_002]


async def test_a_typed_function_tools_data_is_its_value_not_its_text() -> None:
    @tool
    def count(text: str) -> int:
        """Count the words."""
        return len(text.split())

    result = await SimpleToolset([count]).handle(
        ToolCall(id="c1", function=ToolCall.FunctionBody(name="count", arguments='{"text": "a b"}'))
    )
    assert to_envelope(result, tool_name="count").data == 2
    assert to_envelope(result, tool_name="count", lossless=False).dump()["data"] == 2
    again = from_envelope(to_envelope(result, tool_name="count").to_json())
    assert again.return_value == result.return_value
