"""The dialect check: findings by tool and dialect, safe fixes, the text report."""

from __future__ import annotations

import pytest

from kosong.dialects import DIALECTS, SOURCES, check_tools, fix_schema, fix_tool
from kosong.tooling import Tool

GOOD = Tool(
    name="get_weather", description="Weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)  # fmt: skip


def test_a_plain_schema_is_accepted_by_every_dialect_but_strict_mode() -> None:
    report = check_tools([GOOD], DIALECTS)  # strict mode named: every tool is checked
    assert report.dialects == list(DIALECTS)
    # An open object: both strict modes want every object closed.
    assert {f.dialect for f in report.findings} == {"openai-strict", "anthropic-strict"}
    lenient = [d for d in DIALECTS if not d.endswith("-strict")]
    assert str(check_tools([GOOD], lenient)).endswith(
        "1 tool(s), 5 dialect(s): 0 rejected, 0 ignored"
    )


def test_by_default_strict_mode_is_checked_only_for_tools_that_declare_it() -> None:
    strict = GOOD.model_copy(update={"name": "strict_weather", "strict": True})
    report = check_tools([GOOD, strict])
    assert report.dialects == list(DIALECTS)
    assert {(f.tool, f.dialect) for f in report.findings} == {
        ("strict_weather", "openai-strict"),
        ("strict_weather", "anthropic-strict"),
    }
    assert "get_weather [openai-strict]: not checked (the tool is not strict)" in str(report)
    assert "get_weather [anthropic-strict]: not checked (the tool is not strict)" in str(report)
    assert "strict_weather [openai-strict]: rejected" in str(report)
    definition = {"type": "function", "function": {**GOOD.model_dump(), "strict": True}}
    found = {f.dialect for f in check_tools([definition]).findings}
    assert found == {"openai-strict", "anthropic-strict"}
    assert check_tools([GOOD.model_dump()]).ok


def test_moonshot_needs_an_explicit_type_and_the_fix_infers_it() -> None:
    schema = {"type": "object", "properties": {"color": {"enum": ["red", "blue"]}}}
    tool = Tool(name="pick", description="d", parameters=schema)
    (finding,) = check_tools([tool], ["kimi"]).findings
    assert (finding.dialect, finding.path, finding.rule, finding.effect) == (
        "moonshot", "parameters.properties.color", "moonshot.type-required", "rejected",
    )  # fmt: skip
    assert finding.fix == 'add "type": "string", which its keywords imply'
    assert check_tools([fix_tool(tool, "moonshot")], ["moonshot"]).ok


def test_moonshot_type_beside_anyof_moves_into_the_branches() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "anyOf": [{"minimum": 0}, {"maximum": -5}]}},
    }
    fixed = fix_schema(schema, "moonshot")
    assert fixed["properties"]["n"] == {
        "anyOf": [{"minimum": 0, "type": "integer"}, {"maximum": -5, "type": "integer"}]
    }
    assert schema["properties"]["n"]["type"] == "integer"  # the input is not changed


def test_moonshot_ref_with_siblings_is_inlined() -> None:
    tool = Tool(name="place", description="d", parameters={
        "type": "object", "properties": {"p": {"$ref": "#/$defs/P", "description": "where"}},
        "$defs": {"P": {"type": "string"}},
    })  # fmt: skip
    assert [f.rule for f in check_tools([tool], ["moonshot"]).findings] == ["moonshot.ref-siblings"]
    assert fix_tool(tool, "moonshot").parameters["properties"]["p"] == {
        "type": "string",
        "description": "where",
    }


def test_strict_mode_findings_point_at_to_strict_schema() -> None:
    tool = Tool(
        name="find",
        description="d",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    findings = check_tools([tool], ["openai-strict"]).findings
    assert {f.path for f in findings} == {"parameters", "parameters.required"}
    assert all(f.fix and "to_strict_schema" in f.fix for f in findings)


def test_validation_keywords_are_reported_as_ignored_without_strict_mode() -> None:
    tool = Tool(
        name="page",
        description="d",
        parameters={"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
    )
    report = check_tools([tool], ["openai", "anthropic"])
    assert report.ok
    assert [(f.dialect, f.path, f.effect) for f in report.ignored] == [
        ("openai", "parameters.properties.n.minimum", "ignored"),
        ("anthropic", "parameters.properties.n.minimum", "ignored"),
    ]
    assert check_tools([tool], ["openai"], include_ignored=False).findings == []


def test_gemini_root_must_be_an_object_and_keywords_it_does_not_read_are_ignored() -> None:
    array = {
        "name": "nums",
        "description": "d",
        "parameters": {"type": "array", "items": {"type": "number"}},
    }
    report = check_tools([array])
    rejected = {(f.dialect, f.rule) for f in report.rejected}
    for dialect in ("openai", "anthropic", "moonshot", "gemini", "mcp"):
        assert (dialect, f"{dialect}.root-object") in rejected
    # parametersJsonSchema takes JSON Schema: additionalProperties and a list of types are
    # read; `pattern` is not among the keywords Gemini reads, so it is only ignored.
    closed = Tool(
        name="c",
        description="d",
        parameters={
            "type": "object",
            "additionalProperties": False,
            "properties": {"code": {"type": ["string", "null"], "pattern": "^[A-Z]+$"}},
        },
    )
    (finding,) = check_tools([closed], ["gemini"]).findings
    assert (finding.path, finding.rule, finding.effect) == (
        "parameters.properties.code.pattern",
        "gemini.not-read",
        "ignored",
    )


def test_gemini_rejects_what_its_json_schema_field_refuses_each_with_its_source() -> None:
    tool = Tool(
        name="odd",
        description="d",
        parameters={
            "type": "object",
            "properties": {
                "on": {"type": "boolean", "enum": [True, False]},
                "size": {"type": "integer", "enum": [1, 2, 3]},
                "place": {"$ref": "#/$defs/place", "description": "Where."},
                "tree": {"$ref": "#/$defs/tree"},
            },
            "required": ["tree"],
            "$defs": {
                "place": {"type": "string"},
                "tree": {
                    "type": "object",
                    "properties": {"kids": {"items": {"$ref": "#/$defs/tree"}, "type": "array"}},
                },
            },
        },
    )
    found = {(f.path, f.rule) for f in check_tools([tool], ["gemini"]).rejected}
    assert found == {
        ("parameters.properties.on.enum", "gemini.enum-values"),
        ("parameters.properties.place", "gemini.ref-siblings"),
        ("parameters.properties.tree", "gemini.recursive-required"),
    }
    assert (
        "https://ai.google.dev/api/generate-content#FIELDS.response_json_schema"
        in SOURCES["gemini"]
    )
    fixed = fix_tool(tool, "gemini")
    assert fixed.parameters["properties"]["place"] == {"type": "string", "description": "Where."}
    still = {f.rule for f in check_tools([fixed], ["gemini"]).rejected}
    assert still == {"gemini.enum-values", "gemini.recursive-required"}  # no safe fix for those


def test_the_text_report_lists_each_tool_and_dialect() -> None:
    tool = Tool(name="ab", description="d", parameters={"type": "object", "properties": {"x": {}}})
    text = check_tools([tool], ["moonshot", "mcp"]).render()
    assert text.splitlines()[0] == "ab [moonshot]: rejected"
    assert "  rejected: name: " in text
    assert "ab [mcp]: ok" in text


def test_an_unknown_dialect_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown dialect 'llama'; known dialects: openai"):
        check_tools([GOOD], ["llama"])


@pytest.mark.parametrize(
    ("schema", "implied"),
    [
        ({"additionalProperties": {"type": "string"}}, "object"),
        ({"minItems": 1}, "array"),
        ({"items": {"type": "string"}}, "array"),
        ({"format": "date-time"}, "string"),
        ({"pattern": "^a"}, "string"),
        ({"minLength": 2}, "string"),
        ({"minimum": 0, "maximum": 10}, "number"),
        ({"enum": [1, 2.5]}, "number"),
        ({"enum": [1, 2]}, "integer"),
    ],
)
def test_moonshot_fix_infers_a_type_from_other_keywords(
    schema: dict[str, object], implied: str
) -> None:
    tool = Tool(
        name="store",
        description="Store.",
        parameters={"type": "object", "properties": {"value": schema}},
    )
    fixed = fix_tool(tool, "moonshot")
    assert fixed.parameters["properties"]["value"] == {**schema, "type": implied}
    assert check_tools([fixed], ["moonshot"]).ok


def test_moonshot_gives_up_when_keywords_disagree_on_the_type() -> None:
    tool = Tool(
        name="store",
        description="Store.",
        parameters={"type": "object", "properties": {"value": {"minLength": 1, "minimum": 0}}},
    )
    assert not check_tools([fix_tool(tool, "moonshot")], ["moonshot"]).ok


def test_a_builtin_function_is_for_moonshot_only() -> None:
    web_search = Tool(name="$web_search", description="", parameters={})
    report = check_tools([web_search], DIALECTS)  # strict mode named, so it is checked too
    assert report.for_dialect("moonshot") == []
    rejected = {f.dialect for f in report.rejected}
    assert rejected == {"openai", "openai-strict", "anthropic", "anthropic-strict", "gemini", "mcp"}
    assert all(f.rule.endswith("builtin-function") for f in report.rejected)
