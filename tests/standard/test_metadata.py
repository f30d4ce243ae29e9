"""Tool metadata: the standard's extension fields and MCP's hints on Tool and CallableTool2."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from kosong.standard import is_destructive, is_read_only, is_safe_to_repeat
from kosong.tooling import (
    CallableTool,
    CallableTool2,
    EstimatedTokens,
    TokenRange,
    Tool,
    ToolOk,
    ToolReturnValue,
)
from kosong.tooling.simple import SimpleToolset
from kosong.utils.dates_and_versions import SemVer, parse_semver
from tests.standard._std_tools import Weather, WeatherParams, make_call

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "description": "城市名称，如 'Beijing' 或 'San Francisco, CA'",
        },
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "温度单位"},
    },
    "required": ["location"],
    "additionalProperties": False,
}

# The standard's first example: a tool definition with its extension fields.
SEED_DEFINITION = {
    "name": "get_current_weather",
    "description": "获取指定城市的实时天气信息",
    "parameters": WEATHER_PARAMETERS,
    "strict": True,
    "version": "1.0.0",
    "cacheable": True,
    "estimated_tokens": 200,
}

# Appendix B's template, with a concrete type where the template lists the choices.
SEED_TEMPLATE = {
    "name": "tool_name",
    "description": "Tool description in one sentence",
    "parameters": {
        "type": "object",
        "properties": {
            "param_name": {
                "type": "string",
                "description": "Parameter description",
                "enum": ["option1", "option2"],
                "default": "default_value",
                "minimum": 0,
                "maximum": 100,
            }
        },
        "required": ["param_name"],
        "additionalProperties": False,
    },
    "strict": True,
    "version": "1.0.0",
    "cacheable": True,
    "cache_ttl": 600,
    "cache_key_params": ["param_name"],
    "streaming": False,
    "estimated_tokens": {"input": 100, "output": {"min": 200, "max": 2000, "typical": 500}},
    "deprecated": False,
    "sunset_date": "2026-12-31",
    "replacement": "new_tool_name",
}


def plain() -> Tool:
    return Tool(name="t", description="d", parameters={"type": "object"})


def test_a_tool_declaring_no_metadata_dumps_exactly_as_before() -> None:
    tool = plain()
    assert tool.model_dump() == {"name": "t", "description": "d", "parameters": {"type": "object"}}
    assert json.loads(tool.model_dump_json()) == tool.model_dump()
    assert repr(tool) == "Tool(name='t', description='d', parameters={'type': 'object'})"


def test_every_metadata_field_defaults_to_none() -> None:
    assert plain().metadata() == {}


@pytest.mark.parametrize(
    "definition", [SEED_DEFINITION, SEED_TEMPLATE], ids=["definition", "appendix_b"]
)
def test_the_standards_definitions_round_trip_through_tool(definition: dict[str, Any]) -> None:
    tool = Tool.model_validate(definition)
    assert tool.model_dump(mode="json") == definition
    assert list(tool.model_dump())[:3] == ["name", "description", "parameters"]


def test_the_perception_node_tool_list_validates() -> None:
    # The three tools of the standard's "perception node" example.
    tools = [
        {
            **SEED_DEFINITION,
            "name": "get_weather",
            "cache_ttl": 600,
            "estimated_tokens": {"input": 50, "output": {"typical": 100, "max": 200}},
        },
        {
            "name": "search_documents",
            "description": "搜索文档数据库",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "cursor": {"type": "string"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "strict": True,
            "version": "2.1.0",
            "estimated_tokens": {
                "input": 100,
                "output": {"min": 200, "max": 5000, "typical": 1000},
            },
        },
        {
            "name": "generate_report",
            "description": "生成 PDF 报告并返回下载链接",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "content": {"type": "string"},
                    "format": {"type": "string", "enum": ["pdf", "docx", "html"], "default": "pdf"},
                },
                "required": ["title", "content"],
                "additionalProperties": False,
            },
            "strict": True,
            "version": "1.2.0",
            "streaming": True,
            "estimated_tokens": {"input": 500, "output": {"min": 50, "max": 100, "typical": 50}},
        },
    ]
    for definition in tools:
        assert Tool.model_validate(definition).model_dump(mode="json") == definition


def test_versioned_and_deprecated_definitions_of_the_standard_validate() -> None:
    versioned = {
        "name": "get_weather",
        "version": "2.1.0",
        "description": "获取指定城市的实时天气信息",
        "parameters": {"type": "object"},
        "changelog": {"2.1.0": "新增空气质量数据", "2.0.0": "重命名参数", "1.0.0": "初始版本"},
    }
    deprecated = {
        "name": "get_weather_v1",
        "version": "1.0.0",
        "description": "d",
        "parameters": {"type": "object"},
        "deprecated": True,
        "sunset_date": "2026-12-31",
        "replacement": "get_weather",
        "migration_guide": "https://docs.example.com/migration/weather-v1-to-v2",
    }
    for definition in (versioned, deprecated):
        tool = Tool.model_validate(definition)
        assert {**tool.model_dump(mode="json")} == {**definition}


def test_mcp_hints_accept_both_spellings_and_dump_in_camel_case() -> None:
    by_alias = Tool.model_validate(
        {
            "name": "rm",
            "description": "d",
            "parameters": {"type": "object"},
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
            "title": "Remove",
        }
    )
    by_name = Tool(
        name="rm",
        description="d",
        parameters={"type": "object"},
        destructive_hint=True,
        idempotent_hint=False,
        open_world_hint=False,
        title="Remove",
    )
    assert by_alias == by_name
    assert by_name.destructive_hint is True
    dumped = by_name.model_dump()
    assert {"destructiveHint", "idempotentHint", "openWorldHint", "title"} <= dumped.keys()
    assert "destructive_hint" not in dumped
    assert Tool.model_validate(dumped) == by_name
    assert by_name.model_dump(by_alias=True) == dumped


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"version": "1.0"}, "not a semantic version"),
        ({"version": "01.0.0"}, "not a semantic version"),
        ({"version": "1.0.0-"}, "not a semantic version"),
        ({"sunset_date": "31/12/2026"}, "not an ISO 8601 date"),
        ({"sunset_date": "2026-13-01"}, "not an ISO 8601 date"),
        ({"replacement": "new tool"}, "tool name"),
        ({"replacement": "t"}, "names itself as its replacement"),
        ({"cacheable": True, "cache_ttl": 0}, "positive number of seconds"),
        ({"cacheable": True, "cache_ttl": -5}, "positive number of seconds"),
        ({"cache_ttl": 60}, "add cacheable=True"),
        ({"cacheable": True, "cache_key_params": []}, "is empty"),
        ({"cacheable": True, "cache_key_params": ["a", "a"]}, "twice"),
        ({"cacheable": True, "cache_key_params": ["nope"]}, "'nope', which is not a parameter"),
        ({"estimated_tokens": -1}, "cannot be negative"),
        ({"estimated_tokens": {"output": {"min": 10, "max": 5}}}, "min=10 above max=5"),
        (
            {"estimated_tokens": {"output": {"typical": 500, "max": 200}}},
            "typical=500 above max=200",
        ),
        ({"estimated_tokens": {"output": {}}}, "at least one of min, max and typical"),
        ({"changelog": {"v2": "x"}}, "changelog version 'v2'"),
        ({"read_only_hint": True, "destructive_hint": True}, "both read-only and destructive"),
        ({"migration_guide": "  "}, "must not be blank"),
    ],
)
def test_invalid_metadata_fails_at_definition_with_a_clear_error(
    fields: dict[str, Any], message: str
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(ValidationError, match=message):
        Tool(name="t", description="d", parameters=schema, **fields)


def test_semver_with_prerelease_and_build_is_accepted_and_ordered() -> None:
    Tool(name="t", description="d", parameters={"type": "object"}, version="2.0.0-rc.1+build.5")
    assert parse_semver("2.0.0-rc.1+build.5") == SemVer(2, 0, 0, "rc.1", "build.5")
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-rc.1", "1.0.0"]
    keys = [parse_semver(v).precedence_key() for v in ordered]
    assert keys == sorted(keys)
    assert str(parse_semver("2.0.0-rc.1+build.5")) == "2.0.0-rc.1+build.5"


def test_sunset_date_may_be_a_date_time() -> None:
    tool = Tool(
        name="t", description="d", parameters={"type": "object"}, sunset_date="2026-12-31T18:00:00Z"
    )
    assert tool.sunset_date == "2026-12-31T18:00:00Z"


def test_estimated_tokens_is_a_number_or_the_detailed_form() -> None:
    assert (
        Tool(name="t", description="d", parameters={}, estimated_tokens=200).estimated_tokens == 200
    )
    detailed = Tool(
        name="t",
        description="d",
        parameters={},
        estimated_tokens={"input": 50, "output": {"typical": 100, "max": 200}},
    )
    assert detailed.estimated_tokens == EstimatedTokens(
        input=50, output=TokenRange(typical=100, max=200)
    )
    assert detailed.model_dump()["estimated_tokens"] == {
        "input": 50,
        "output": {"max": 200, "typical": 100},
    }


def test_strict_tool_closes_every_object_of_its_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}}},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {}}}},
        },
    }
    tool = Tool(name="t", description="d", parameters=schema, strict=True)
    assert tool.parameters["additionalProperties"] is False
    assert tool.parameters["properties"]["point"]["additionalProperties"] is False
    assert tool.parameters["properties"]["tags"]["items"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the caller's schema is left alone


def test_strict_tool_refuses_a_schema_that_allows_unknown_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"m": {"type": "object", "additionalProperties": True}},
    }
    with pytest.raises(ValidationError, match=r"parameters\.properties\.m allows properties"):
        Tool(name="t", description="d", parameters=schema, strict=True)


class Echo(CallableTool):
    name: str = "echo"
    description: str = "Echo"
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "opts": {"type": "object", "properties": {}}},
        "required": ["text"],
    }

    async def __call__(self, text: str, **others: Any) -> ToolReturnValue:
        return ToolOk(output=text)


async def test_strict_callable_tool_rejects_unknown_properties_at_any_depth() -> None:
    loose, strict = Echo(), Echo(strict=True)
    assert not (await loose.call({"text": "hi", "extra": 1})).is_error
    top = await strict.call({"text": "hi", "extra": 1})
    assert top.is_error and "'extra' was unexpected" in top.message
    nested = await strict.call({"text": "hi", "opts": {"x": 1}})
    assert nested.is_error and "opts" in nested.message
    assert (await strict.call({"text": "hi"})).output == "hi"


async def test_strict_callable_tool2_rejects_unknown_properties_its_model_would_ignore() -> None:
    tool = Weather(strict=True)
    result = await tool.call({"location": "Beijing", "country": "CN"})
    assert result.is_error
    assert "'country' was unexpected" in result.message
    assert tool.calls == []
    ok = await tool.call({"location": "Beijing"})
    assert not ok.is_error and len(tool.calls) == 1


def test_callable_tool2_carries_class_attribute_metadata_into_base() -> None:
    base = Weather().base
    assert (base.version, base.cacheable, base.cache_ttl, base.read_only_hint) == (
        "1.0.0",
        True,
        600,
        True,
    )
    assert base.model_dump()["readOnlyHint"] is True


def test_callable_tool2_accepts_metadata_as_constructor_arguments() -> None:
    tool = Weather(
        version="2.0.0", idempotentHint=True, deprecated=True, replacement="get_weather_v2"
    )
    assert tool.base.version == "2.0.0"
    assert tool.base.idempotent_hint is True
    assert tool.base.replacement == "get_weather_v2"


def test_callable_tool2_metadata_is_validated_against_its_schema() -> None:
    with pytest.raises(ValidationError, match="'city', which is not a parameter"):
        Weather(cache_key_params=["city"])
    with pytest.raises(ValidationError, match="not a semantic version"):
        Weather(version="latest")


def test_callable_tool2_without_metadata_has_a_plain_base() -> None:
    class Plain(CallableTool2[WeatherParams]):
        name: str = "plain"
        description: str = "d"
        params: type[WeatherParams] = WeatherParams

        async def __call__(self, params: WeatherParams) -> ToolReturnValue:
            return ToolOk()

    assert set(Plain().base.model_dump()) == {"name", "description", "parameters"}


async def test_metadata_does_not_change_how_a_toolset_runs_the_tool() -> None:
    toolset = SimpleToolset([Weather()])
    result = await toolset.handle(make_call("get_weather", {"location": "Beijing"}))
    assert not result.return_value.is_error
    assert toolset.tools[0].cacheable is True


def test_hint_helpers_read_the_hints() -> None:
    read_only = Tool(name="r", description="d", parameters={}, read_only_hint=True)
    idempotent = Tool(name="i", description="d", parameters={}, idempotent_hint=True)
    destructive = Tool(name="x", description="d", parameters={}, destructive_hint=True)
    unannotated = plain()
    assert is_read_only(read_only) and not is_read_only(idempotent)
    assert is_safe_to_repeat(read_only) and is_safe_to_repeat(idempotent)
    assert not is_safe_to_repeat(destructive) and not is_safe_to_repeat(unannotated)
    assert is_destructive(destructive) and not is_destructive(read_only)
    assert not is_destructive(unannotated)
    assert is_destructive(unannotated, unannotated=True)  # MCP's default reading
    assert not is_destructive(read_only, unannotated=True)


class _Model(BaseModel):
    a: int


def test_a_subclass_can_declare_hints_as_plain_class_attributes() -> None:
    class Remove(CallableTool2[_Model]):
        name: str = "remove"
        description: str = "Delete a record"
        params: type[_Model] = _Model
        destructive_hint = True
        title = "Remove record"

        async def __call__(self, params: _Model) -> ToolReturnValue:
            return ToolOk()

    dumped = Remove().base.model_dump()
    assert dumped["destructiveHint"] is True and dumped["title"] == "Remove record"


def test_an_output_schema_is_checked_and_written_as_mcp_writes_it() -> None:
    schema = {"type": "object", "properties": {"temperature": {"type": "number"}}}
    tool = Tool(name="t", description="d", parameters={"type": "object"}, outputSchema=schema)
    assert tool.output_schema == schema
    assert tool.model_dump()["outputSchema"] == schema
    with pytest.raises(ValidationError, match="output_schema"):
        Tool(name="t", description="d", parameters={}, output_schema={"type": "invalid"})
    with pytest.raises(ValidationError, match="never fetches"):
        Tool(name="t", description="d", parameters={}, output_schema={"$ref": "https://x/s.json"})


@pytest.mark.parametrize("text", ["1.0.0\n", "\n1.0.0", "1.0.0 "])
def test_semver_with_a_trailing_newline_or_space_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a semantic version"):
        parse_semver(text)


def test_sequential_is_dumped_only_when_declared() -> None:
    plain = Tool(name="t", description="d", parameters={"type": "object"})
    marked = Tool(name="t", description="d", parameters={"type": "object"}, sequential=True)
    assert "sequential" not in plain.model_dump() and plain.sequential is None
    assert marked.model_dump()["sequential"] is True
    assert (
        Tool.model_validate(marked.model_dump()).sequential is True
    )  # read back (a server's /tools)
