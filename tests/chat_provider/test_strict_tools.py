"""A tool with `strict=True` is sent strict to every provider that has a strict mode, checked
against that provider's own rules first."""

from __future__ import annotations

import pytest
from _bodies import check_anthropic_body, check_chat_body, check_gemini_body
from _cases import ADD_TOOL, user
from fixtures import anthropic as anthropic_fx
from fixtures import gemini as gemini_fx

from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat
from kosong.dialects import DialectError, check_tools
from kosong.tooling import Tool

BOOK = Tool(
    name="book",
    description="Book seats.",
    parameters={
        "type": "object",
        "properties": {
            "seats": {"type": "integer", "minimum": 1, "maximum": 9, "description": "How many."},
            "email": {"type": "string", "format": "email"},
        },
        "required": ["seats", "email"],
    },
    strict=True,
)
OPTIONAL = Tool(
    name="note",
    description="Take a note.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string"}, "tag": {"type": "string"}},
        "required": ["text"],
    },
    strict=True,
)
"""Strict, with an optional property: OpenAI's strict mode wants every property required."""


def test_anthropic_sends_a_strict_tool_strict_with_its_unsupported_constraints_described() -> None:
    body = Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False).request_body(
        "", [BOOK], user()
    )
    assert body["tools"] == [anthropic_fx.STRICT_TOOL]
    check_anthropic_body({**body, "stream": True})
    assert BOOK.parameters["properties"]["seats"]["minimum"] == 1  # the toolset still checks it


def test_anthropic_refuses_a_strict_schema_it_cannot_take_before_sending() -> None:
    tree = Tool(
        name="tree",
        description="A tree.",
        parameters={
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/node"}},
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                }
            },
        },
        strict=True,
    )
    with pytest.raises(DialectError, match="recursive schemas are not supported"):
        Anthropic(model="claude-sonnet-4-6", api_key="k").request_body("", [tree], user())
    report = check_tools([tree], ["anthropic-strict"])
    assert {f.rule for f in report.rejected} == {"anthropic-strict.recursive"}


def test_the_anthropic_strict_rules_each_say_what_a_strict_tool_may_not_use() -> None:
    loose = {
        "name": "loose",
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "format": "hostname-ish"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "pick": {"enum": [{"a": 1}]},
                "free": {"type": "object"},
            },
            "additionalProperties": False,
        },
    }
    found = {(f.path, f.rule) for f in check_tools([loose], ["anthropic-strict"]).rejected}
    assert found == {
        ("parameters.properties.name.minLength", "anthropic-strict.unsupported"),
        ("parameters.properties.name.format", "anthropic-strict.format"),
        ("parameters.properties.tags.minItems", "anthropic-strict.unsupported"),
        ("parameters.properties.pick.enum", "anthropic-strict.enum"),
        ("parameters.properties.free", "anthropic-strict.open-object"),
    }


def test_kimi_checks_strict_tools_against_moonshots_rules_not_openais() -> None:
    kimi = Kimi(api_key="k")
    body = kimi.request_body("", [OPTIONAL], user())  # an optional property: fine for Moonshot
    assert body["tools"][0]["function"]["strict"] is True
    check_chat_body(body)
    with pytest.raises(DialectError, match="openai-strict"):
        OpenAIChat(model="gpt-5.5", api_key="k").request_body("", [OPTIONAL], user())
    lenient = ADD_TOOL.model_copy(update={"strict": False})
    sent = kimi.request_body("", [lenient], user())["tools"][0]["function"]
    assert sent["strict"] is False  # Moonshot is strict unless told not to
    assert "strict" not in kimi.request_body("", [ADD_TOOL], user())["tools"][0]["function"]


def test_gemini_uses_validated_mode_when_every_tool_is_strict() -> None:
    gemini = Gemini(api_key="k")
    body = gemini.request_body("", [BOOK, OPTIONAL], user())
    assert body["toolConfig"] == gemini_fx.VALIDATED
    check_gemini_body(body)
    assert "toolConfig" not in gemini.request_body("", [BOOK, ADD_TOOL], user())  # a mix: AUTO
    forced = gemini.with_tool_choice("required").request_body("", [BOOK], user())
    assert forced["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
