"""Tool definitions in each provider's format, and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kosong.formats import (
    from_anthropic_tool,
    from_gemini_function_declaration,
    from_mcp_tool,
    from_openai_chat_tool,
    from_openai_responses_tool,
    to_anthropic_tool,
    to_gemini_function_declaration,
    to_gemini_schema,
    to_mcp_tool,
    to_openai_chat_tool,
    to_openai_responses_tool,
)
from kosong.tooling import Tool

WEATHER = Tool(
    name="get_weather",
    description="Weather of a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
    title="Weather",
    read_only_hint=True,
    open_world_hint=True,
)

ROUND_TRIPS: list[tuple[Callable[[Tool], dict[str, Any]], Callable[[dict[str, Any]], Tool]]] = [
    (to_openai_chat_tool, from_openai_chat_tool),
    (to_openai_responses_tool, from_openai_responses_tool),
    (to_anthropic_tool, from_anthropic_tool),
    (to_gemini_function_declaration, from_gemini_function_declaration),
    (to_mcp_tool, from_mcp_tool),
]


@pytest.mark.parametrize(("to", "back"), ROUND_TRIPS, ids=lambda f: f.__name__)
def test_every_format_round_trips_name_description_and_schema(
    to: Callable[[Tool], dict[str, Any]], back: Callable[[dict[str, Any]], Tool]
) -> None:
    again = back(to(WEATHER))
    assert (again.name, again.description, again.parameters) == (
        WEATHER.name, WEATHER.description, WEATHER.parameters,
    )  # fmt: skip


def test_openai_shapes_state_strict_as_each_api_needs() -> None:
    chat = to_openai_chat_tool(WEATHER)
    assert chat == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city.",
            "parameters": WEATHER.parameters,
        },
    }
    assert to_openai_responses_tool(WEATHER)["strict"] is False  # the API defaults to strict
    strict = Tool(name="s", description="d", strict=True,
                  parameters={"type": "object", "properties": {}, "required": []})  # fmt: skip
    assert to_openai_chat_tool(strict)["function"]["strict"] is True
    assert from_openai_chat_tool(to_openai_chat_tool(strict)).strict is True


def test_anthropic_shape_uses_input_schema() -> None:
    assert to_anthropic_tool(WEATHER) == {
        "name": "get_weather",
        "description": "Weather of a city.",
        "input_schema": WEATHER.parameters,
    }


def test_mcp_shape_carries_the_hints_as_annotations() -> None:
    mcp = to_mcp_tool(WEATHER)
    assert mcp["inputSchema"] == WEATHER.parameters
    assert mcp["annotations"] == {"title": "Weather", "readOnlyHint": True, "openWorldHint": True}
    again = from_mcp_tool(mcp)
    assert (again.title, again.read_only_hint, again.open_world_hint) == ("Weather", True, True)


def test_gemini_declaration_sends_json_schema_and_to_gemini_schema_converts_to_the_subset() -> None:
    tool = Tool(
        name="pick", description="Pick.",
        parameters={
            "type": "object", "additionalProperties": False,
            "properties": {
                "note": {"type": ["string", "null"]},
                "kind": {"const": "a"},
                "where": {"$ref": "#/$defs/Place"},
            },
            "$defs": {"Place": {"type": "object", "properties": {"x": {"type": "number"}}}},
        },
    )  # fmt: skip
    declaration = to_gemini_function_declaration(tool)
    assert declaration["parametersJsonSchema"] == tool.parameters  # JSON Schema as it is
    params = to_gemini_schema(tool.parameters)  # the older `parameters` field's subset
    assert params == {
        "type": "object",
        "properties": {
            "note": {"type": "string", "nullable": True},
            "kind": {"enum": ["a"]},
            "where": {"type": "object", "properties": {"x": {"type": "number"}}},
        },
    }
    back = from_gemini_function_declaration(
        {
            "name": "pick",
            "description": "",
            "parameters": {
                "type": "OBJECT",
                "properties": {"n": {"type": "STRING", "nullable": True}},
            },
        }
    )
    assert back.parameters == {"type": "object", "properties": {"n": {"type": ["string", "null"]}}}


def test_a_definition_without_its_schema_key_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="input_schema"):
        from_anthropic_tool({"name": "x", "description": "y"})


def test_conversions_copy_the_schema() -> None:
    out = to_openai_chat_tool(WEATHER)
    out["function"]["parameters"]["properties"].clear()
    assert WEATHER.parameters["properties"]


def test_a_plain_tool_may_declare_a_builtin_function_by_a_dollar_name() -> None:
    web_search = Tool(name="$web_search", description="", parameters={})
    assert web_search.name == "$web_search"
    with pytest.raises(ValueError, match=r"builtin function name '\$' is not valid"):
        Tool(name="$", description="", parameters={})
    with pytest.raises(ValueError, match="not valid"):
        Tool(name="$web search", description="", parameters={})


def test_a_tool_kosong_runs_cannot_take_a_builtin_name() -> None:
    from kosong.tooling import tool

    with pytest.raises(ValueError, match=r"starts with '\$'.*never as a tool kosong runs"):

        @tool(name="$web_search")
        def web_search(query: str) -> str:
            """Search."""
            return query


def test_a_builtin_function_is_not_served_over_mcp() -> None:
    web_search = Tool(name="$web_search", description="", parameters={})
    with pytest.raises(ValueError, match="cannot be served over MCP"):
        to_mcp_tool(web_search)
