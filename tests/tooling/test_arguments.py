"""Hostile argument strings never escape handle() as exceptions (see kosong.tooling._arguments).

Every case runs through `SimpleToolset.handle`, against a CallableTool and a CallableTool2 whose
parameters are an object. Each gives a clear error result or a documented normalisation:
no arguments (None, "", whitespace, "null") mean `{}`, and a JSON string holding a JSON object
is unwrapped once for an object schema.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong.tooling import ArgumentLimits, ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolParseError, ToolValidateError
from kosong.tooling.simple import SimpleToolset
from tests.tooling._strategies import json_values
from tests.tooling._tools import (
    Echo,
    Echo2,
    Shout,
    Shout2,
    Weather,
    Weather2,
    every_tool,
    handle,
    make_call,
)

ECHO = pytest.mark.parametrize("name", ["echo", "echo2"], ids=["CallableTool", "CallableTool2"])
WEATHER = pytest.mark.parametrize(
    "name", ["weather", "weather2"], ids=["CallableTool", "CallableTool2"]
)


@pytest.fixture
def toolset() -> SimpleToolset:
    return SimpleToolset([Echo(), Echo2(), Weather(), Weather2(), Shout(), Shout2()])


def nested(depth: int) -> str:
    """`depth` objects, each inside the previous one."""
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


async def parse_error(toolset: SimpleToolset, name: str, arguments: str) -> str:
    value = await handle(toolset, name, arguments)
    assert isinstance(value, ToolParseError), value
    return value.message


# --- no arguments mean {} ------------------------------------------------------------------------


@ECHO
@pytest.mark.parametrize("arguments", [None, "", " \n\t ", "null", " null "])
async def test_no_arguments_mean_an_empty_object(
    toolset: SimpleToolset, name: str, arguments: str | None
) -> None:
    value = await handle(toolset, name, arguments)
    assert value == ToolOk(output="echoed", extras={"arguments": {}})


@WEATHER
@pytest.mark.parametrize("arguments", [None, "", "   ", "null"])
async def test_no_arguments_for_required_params_name_the_missing_field(
    toolset: SimpleToolset, name: str, arguments: str | None
) -> None:
    value = await handle(toolset, name, arguments)
    assert isinstance(value, ToolValidateError)
    assert "location" in value.message


# --- JSON that is not an object --------------------------------------------------------------


@ECHO
@pytest.mark.parametrize("arguments", ["[1, 2]", "42", "-1.5", '"text"', "true", "false"])
async def test_json_value_that_is_not_an_object_is_a_clear_validate_error(
    toolset: SimpleToolset, name: str, arguments: str
) -> None:
    value = await handle(toolset, name, arguments)
    assert isinstance(value, ToolValidateError)
    assert "object" in value.message or "dictionary" in value.message


# --- broken JSON ---------------------------------------------------------------------------------


@ECHO
@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ('{"a": 1', "Expecting"),
        ('{"a": "unterminated', "Unterminated string"),
        ('{"a": 1}{"b": 2}', "Extra data"),
        ('{"a": 1} {"b": 2}', "Extra data"),
        ("{'a': 1}", "double quotes"),
    ],
    ids=["truncated", "truncated-string", "two-objects", "two-objects-spaced", "single-quotes"],
)
async def test_broken_json_is_a_parse_error(
    toolset: SimpleToolset, name: str, arguments: str, reason: str
) -> None:
    assert reason in await parse_error(toolset, name, arguments)


@ECHO
@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E+999"])
async def test_number_overflowing_a_float_is_a_parse_error(
    toolset: SimpleToolset, name: str, number: str
) -> None:
    message = await parse_error(toolset, name, f'{{"x": {number}}}')
    assert "too large for a 64-bit float" in message


@ECHO
async def test_integer_with_5000_digits_is_a_parse_error(toolset: SimpleToolset, name: str) -> None:
    message = await parse_error(toolset, name, '{"x": ' + "7" * 5000 + "}")
    assert "more than 4,300 digits; send it as a string" in message


@ECHO
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_parse_errors(
    toolset: SimpleToolset, name: str, constant: str
) -> None:
    message = await parse_error(toolset, name, f'{{"x": {constant}}}')
    assert f"{constant} is not valid JSON" in message


# --- size and depth caps -----------------------------------------------------------------------


@ECHO
async def test_50_mb_of_json_is_refused_quickly_stating_the_limit(
    toolset: SimpleToolset, name: str
) -> None:
    arguments = '{"x": "' + "a" * 50_000_000 + '"}'
    started = time.perf_counter()
    message = await parse_error(toolset, name, arguments)
    assert time.perf_counter() - started < 2.0
    assert "50,000,009 characters long; the limit is 4,000,000" in message


@ECHO
@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000 + "]" * 100_000,
        nested(100_000),
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ],
    ids=["arrays", "objects", "arrays-in-object"],
)
async def test_nesting_100_000_deep_is_a_parse_error(
    toolset: SimpleToolset, name: str, arguments: str
) -> None:
    message = await parse_error(toolset, name, arguments)
    assert "nested too deeply (the limit is 100 levels)" in message


@ECHO
async def test_nesting_101_deep_is_a_parse_error_and_100_is_fine(
    toolset: SimpleToolset, name: str
) -> None:
    assert "nested too deeply" in await parse_error(toolset, name, nested(101))
    assert (await handle(toolset, name, nested(100))).is_error is False


# --- Unicode -------------------------------------------------------------------------------------


@ECHO
@pytest.mark.parametrize(
    "arguments",
    ['{"x": "\\ud800"}', '{"x": "a\\udfffb"}', '{"\\udc00": 1}', '{"x": ["\\ud83d"]}'],
    ids=["high", "low-inside", "in-a-key", "in-a-list"],
)
async def test_escaped_lone_surrogate_is_a_parse_error(
    toolset: SimpleToolset, name: str, arguments: str
) -> None:
    assert "unpaired surrogate" in await parse_error(toolset, name, arguments)


@ECHO
@pytest.mark.parametrize("arguments", ['{"x": "\ud800"}', '{"x": "ok\udfff"}', "\udc00"])
async def test_literal_lone_surrogate_is_a_parse_error(
    toolset: SimpleToolset, name: str, arguments: str
) -> None:
    assert "unpaired surrogate" in await parse_error(toolset, name, arguments)


@ECHO
async def test_escaped_surrogate_pair_is_accepted(toolset: SimpleToolset, name: str) -> None:
    value = await handle(toolset, name, '{"x": "\\ud83d\\ude00", "y": "\U0001f600"}')
    assert value.extras == {"arguments": {"x": "\U0001f600", "y": "\U0001f600"}}


# --- duplicate keys ----------------------------------------------------------------------------


@ECHO
@pytest.mark.parametrize(
    "arguments", ['{"city": "Paris", "city": "Rome"}', '{"a": {"city": 1, "city": 1}}']
)
async def test_duplicate_key_is_a_parse_error_naming_the_key(
    toolset: SimpleToolset, name: str, arguments: str
) -> None:
    assert "duplicate key 'city'" in await parse_error(toolset, name, arguments)


# --- JSON inside a JSON string -------------------------------------------------------------------


@ECHO
async def test_object_encoded_twice_is_unwrapped_once(toolset: SimpleToolset, name: str) -> None:
    twice = json.dumps(json.dumps({"city": "Paris"}))
    assert (await handle(toolset, name, twice)).extras == {"arguments": {"city": "Paris"}}
    thrice = json.dumps(twice)
    assert isinstance(await handle(toolset, name, thrice), ToolValidateError)


@pytest.mark.parametrize("name", ["shout", "shout2"], ids=["CallableTool", "CallableTool2"])
async def test_string_holding_json_is_not_unwrapped_for_a_string_schema(
    toolset: SimpleToolset, name: str
) -> None:
    value = await handle(toolset, name, json.dumps('{"city": "paris"}'))
    assert value == ToolOk(output='{"CITY": "PARIS"}')


# --- ArgumentLimits ----------------------------------------------------------------------------


@ECHO
async def test_arguments_just_over_offload_length_are_parsed_off_the_loop_and_work(
    name: str,
) -> None:
    limits = ArgumentLimits()
    toolset = SimpleToolset([Echo(), Echo2()])
    text = "x" * limits.offload_length
    pending = toolset.handle(make_call(name, json.dumps({"text": text})))
    assert isinstance(pending, asyncio.Future)  # parsed in a worker thread, not in handle()
    result = await asyncio.wait_for(pending, timeout=10)
    assert result.return_value.extras == {"arguments": {"text": text}}


@ECHO
async def test_offloaded_arguments_that_are_broken_still_give_a_parse_error(name: str) -> None:
    toolset = SimpleToolset([Echo(), Echo2()], limits=ArgumentLimits(offload_length=8))
    pending = toolset.handle(make_call(name, '{"a": 1}{"b": 2}'))
    assert isinstance(pending, asyncio.Future)
    result = await asyncio.wait_for(pending, timeout=10)
    assert isinstance(result.return_value, ToolParseError)


@ECHO
async def test_custom_max_length_is_honoured(name: str) -> None:
    toolset = SimpleToolset([Echo(), Echo2()], limits=ArgumentLimits(max_length=20))
    assert not (await handle(toolset, name, '{"x": "' + "a" * 11 + '"}')).is_error  # 20 chars
    message = await parse_error(toolset, name, '{"x": "' + "a" * 12 + '"}')
    assert "21 characters long; the limit is 20" in message


@ECHO
async def test_custom_max_depth_is_honoured(name: str) -> None:
    toolset = SimpleToolset([Echo(), Echo2()], limits=ArgumentLimits(max_depth=3))
    assert not (await handle(toolset, name, nested(3))).is_error
    message = await parse_error(toolset, name, nested(4))
    assert "nested too deeply (the limit is 3 levels)" in message


@pytest.mark.parametrize("field", ["max_length", "max_depth", "offload_length"])
@pytest.mark.parametrize("value", [0, -1])
def test_argument_limits_refuse_a_non_positive_value(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"ArgumentLimits.{field} must be at least 1"):
        ArgumentLimits(**{field: value})


# --- properties ----------------------------------------------------------------------------------

LONE_SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
ANY_TEXT = st.text(st.characters(exclude_categories=()) | LONE_SURROGATES)
JSON_TOKENS = st.from_regex(r'[\[\]{}",:0-9a-z\\ .eE+\-]*', fullmatch=True)
JSONISH_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(ANY_TEXT, children, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def jsonish(draw: st.DrawFn) -> str:
    """Valid JSON (NaN included), then maybe broken: truncated, doubled, or encoded twice."""
    text = json.dumps(draw(JSONISH_VALUES), ensure_ascii=draw(st.booleans()))
    how = draw(st.sampled_from(["as-is", "truncate", "double", "encode-twice", "wrap"]))
    if how == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if how == "double":
        return text + text
    if how == "encode-twice":
        return json.dumps(text)
    if how == "wrap":
        return '{"a": ' + text + "}"
    return text


TOOL_NAMES = st.sampled_from([tool.name for tool in every_tool().tools] + ["missing"])


@settings(max_examples=300, deadline=None)
@given(name=TOOL_NAMES, arguments=st.none() | ANY_TEXT | JSON_TOKENS | jsonish())
async def test_handle_never_raises_for_any_argument_text(name: str, arguments: str | None) -> None:
    call = make_call(name, arguments)
    result = await asyncio.wait_for(every_tool().handle(call), timeout=10)
    assert isinstance(result, ToolResult)
    assert isinstance(result.return_value, ToolReturnValue)
    assert result.tool_call_id == call.id


JSON_VALUES = json_values(max_leaves=20, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["echo", "echo2"]),
    value=st.dictionaries(st.text(), JSON_VALUES, max_size=6),
    ensure_ascii=st.booleans(),
)
async def test_any_json_object_round_trips_through_an_echo_tool(
    name: str, value: dict[str, Any], ensure_ascii: bool
) -> None:
    arguments = json.dumps(value, ensure_ascii=ensure_ascii)
    echoed = await asyncio.wait_for(handle(every_tool(), name, arguments), timeout=10)
    assert echoed.extras == {"arguments": value}


def test_only_strings_between_the_offload_length_and_the_cap_are_parsed_in_a_thread() -> None:
    limits = ArgumentLimits(max_length=100, offload_length=10)
    assert not limits.parses_in_thread("x" * 10)
    assert limits.parses_in_thread("x" * 11)
    assert limits.parses_in_thread("x" * 100)
    assert not limits.parses_in_thread("x" * 101)  # refused at once, not read
