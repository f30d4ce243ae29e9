"""The conversions of kosong.mcp: tool names, results and content, both ways."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import mcp_types as mcp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from kosong.mcp import ResourcePart
from kosong.mcp._client import _tool_name
from kosong.mcp._convert import (
    from_call_tool_result,
    mcp_progress,
    sampled_message,
    sampling_message,
    to_call_tool_result,
    to_mcp_tool,
    unwrapped_schema,
)
from kosong.message import AudioURLPart, ImageURLPart, Message, TextPart, VideoURLPart
from kosong.standard import error_code, structured_data, to_envelope
from kosong.tooling import ToolError, ToolOk, tool
from kosong.tooling.error import ToolTimeoutError

NAME_RULE = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_-]{0,63}\Z")


@given(st.text(max_size=200))
def test_any_server_tool_name_becomes_a_valid_kosong_name(raw: str):
    name = _tool_name(raw)
    assert NAME_RULE.match(name)
    if NAME_RULE.match(raw):
        assert name == raw  # a valid name is kept as it is


@given(st.text(min_size=65, max_size=200), st.text(min_size=65, max_size=200))
def test_long_names_are_kept_apart_by_a_digest(first: str, second: str):
    if first != second and first[:55] == second[:55]:
        assert _tool_name(first) != _tool_name(second)


def test_kosong_results_become_mcp_content_blocks():
    png = "data:image/png;base64,iVBORw0KGgo="
    value = ToolOk(
        output=[
            TextPart(text="hello"),
            ImageURLPart(image_url=ImageURLPart.ImageURL(url=png)),
            AudioURLPart(audio_url=AudioURLPart.AudioURL(url="data:audio/wav;base64,UklGRg==")),
            ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://example.com/cat.png")),
            VideoURLPart(video_url=VideoURLPart.VideoURL(url="data:video/mp4;base64,AAAA")),
            ResourcePart(uri="file:///notes.txt", mime_type="text/plain", text="notes"),
        ],
        message="done",
    )
    result = to_call_tool_result(value, output_schema=None)
    assert result["isError"] is False
    assert result["content"] == [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "https://example.com/cat.png", "name": "cat.png"},
        {"type": "resource",
         "resource": {"uri": "video:inline", "mimeType": "video/mp4", "blob": "AAAA"}},
        {"type": "resource",
         "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "notes"}},
        {"type": "text", "text": "done"},
    ]  # fmt: skip
    mcp.CallToolResult.model_validate(result)  # the wire form is a valid CallToolResult


def test_an_error_leads_with_its_message_and_carries_its_code():
    result = to_call_tool_result(ToolTimeoutError("slow", 5), output_schema=None)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Tool `slow` did not finish")
    assert result["_meta"] == {"kosong/error": {"code": "TIMEOUT"}}
    assert "structuredContent" not in result


OBJECT = {"type": "object", "properties": {"t": {"type": "integer"}}}


def test_structured_content_only_for_a_declared_output_schema_and_json_output():
    value = ToolOk(output=json.dumps({"t": 1}))
    assert to_call_tool_result(value, output_schema=OBJECT)["structuredContent"] == {"t": 1}
    assert "structuredContent" not in to_call_tool_result(value, output_schema=None)
    assert "structuredContent" not in to_call_tool_result(ToolOk(output="x"), output_schema=OBJECT)
    # An object schema whose output is not an object: nothing MCP could carry.
    assert "structuredContent" not in to_call_tool_result(ToolOk(output="[1]"), OBJECT)


def test_a_non_object_output_schema_travels_wrapped_in_result():
    @tool
    def count(words: list[str]) -> int:
        """Count words."""
        return len(words)

    assert count.output_schema == {"type": "integer"}
    served = to_mcp_tool(count.base).output_schema
    assert served == {
        "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"],
        "x-fastmcp-wrap-result": True,  # FastMCP's mark: its client reads the value itself
    }  # fmt: skip
    result = to_call_tool_result(ToolOk(output="3"), count.output_schema)
    assert result["structuredContent"] == {"result": 3}
    jsonschema_rs.validate(served, result["structuredContent"])  # pyright: ignore[reportArgumentType]


class Node(BaseModel):
    name: str
    children: list[Node] = []


async def test_a_recursive_output_schema_keeps_its_definitions_at_the_root_when_wrapped():
    @tool
    def forest() -> list[Node]:
        """A forest."""
        return [Node(name="a", children=[Node(name="b")])]

    assert forest.output_schema is not None and "$defs" in forest.output_schema
    served = to_mcp_tool(forest.base).output_schema
    assert served is not None and "$defs" in served and "$defs" not in served["properties"]
    result = to_call_tool_result(await forest.call({}), forest.output_schema)
    jsonschema_rs.validate(served, result["structuredContent"])


def test_mcp_results_become_kosong_values():
    one = from_call_tool_result(mcp.CallToolResult(content=[mcp.TextContent(text="3")]))
    assert isinstance(one, ToolOk) and one.output == "3" and one.extras is None
    # Only structured content: its JSON text is what the model reads, and it is the data.
    structured = from_call_tool_result(mcp.CallToolResult(content=[], structured_content={"a": 1}))
    assert structured.output == '{"a":1}' and structured_data(structured) == {"a": 1}
    resources = from_call_tool_result(
        mcp.CallToolResult(
            content=[
                mcp.EmbeddedResource(
                    resource=mcp.TextResourceContents(uri="file:///a.txt", text="inside")
                ),
                mcp.EmbeddedResource(
                    resource=mcp.BlobResourceContents(
                        uri="file:///a.bin", mime_type="application/zip", blob="AAEC"
                    )
                ),
                mcp.EmbeddedResource(
                    resource=mcp.BlobResourceContents(
                        uri="file:///a.png", mime_type="image/png", blob="iVBORw0KGgo="
                    )
                ),
                mcp.ResourceLink(uri="file:///b.md", name="b.md", mime_type="text/markdown"),
                mcp.ResourceLink(
                    uri="https://x/c", name="c", title="The C", description="About c."
                ),
            ]
        )
    )
    assert resources.output == [
        TextPart(text="inside"),
        TextPart(text="[binary resource file:///a.bin (application/zip, 3 bytes)]"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="data:image/png;base64,iVBORw0KGgo=")),
        TextPart(text="[resource link b.md, text/markdown: file:///b.md]"),
        TextPart(text="[resource link c (The C): https://x/c]: About c."),
    ]


def test_an_mcp_error_is_a_tool_error_with_the_code_it_carries():
    plain = from_call_tool_result(
        mcp.CallToolResult(content=[mcp.TextContent(text="nope")], is_error=True)
    )
    assert isinstance(plain, ToolError) and plain.message == "nope"
    assert error_code(plain) == "EXECUTION_ERROR"
    coded = from_call_tool_result(
        mcp.CallToolResult(
            content=[mcp.TextContent(text="slow")],
            is_error=True,
            _meta={"kosong/error": {"code": "TIMEOUT"}},
        )
    )
    assert error_code(coded) == "TIMEOUT"
    odd = from_call_tool_result(
        mcp.CallToolResult(
            content=[], is_error=True, _meta={"kosong/error": {"code": "not a code"}}
        )
    )
    assert error_code(odd) == "EXECUTION_ERROR"
    assert odd.message == "the MCP tool reported an error without a message"


def test_the_content_is_what_the_model_reads_and_structured_content_the_data():
    # What the MCP spec's tools page says a structured result holds: the data as
    # `structuredContent`, and for the model (and older clients) its content blocks.
    result = mcp.CallToolResult(
        content=[mcp.TextContent(text='{\n  "temperature": 33,\n  "city": "Zürich"\n}')],
        structured_content={"temperature": 33, "city": "Zürich"},
    )
    value = from_call_tool_result(result)
    assert (
        value.output == '{\n  "temperature": 33,\n  "city": "Zürich"\n}'
    )  # as the server wrote it
    assert structured_data(value) == {"temperature": 33, "city": "Zürich"}
    assert to_envelope(value, tool_name="weather").data == {"temperature": 33, "city": "Zürich"}
    assert value.artifact is result  # the raw result stays with the application
    prose = from_call_tool_result(
        mcp.CallToolResult(
            content=[mcp.TextContent(text="It is 33 degrees in Zürich.")],
            structured_content={"temperature": 33},
        )
    )
    assert prose.output == "It is 33 degrees in Zürich." and structured_data(prose) == {
        "temperature": 33
    }


@pytest.mark.parametrize(
    ("schema", "meta", "data"),
    [
        ({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"],
          "x-fastmcp-wrap-result": True}, None, "hello Ada"),  # FastMCP
        ({"type": "object", "properties": {"result": {"type": "string", "title": "Result"}},
          "required": ["result"], "title": "greetOutput"}, None, "hello Ada"),  # the MCP SDK
        (None, {"fastmcp": {"wrap_result": True}}, "hello Ada"),  # FastMCP's result mark
        ({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]},
         None, {"result": "hello Ada"}),  # a plain object that happens to have `result`
    ],
)  # fmt: skip
def test_a_marked_result_wrapper_is_unwrapped_into_the_value(
    schema: dict[str, Any] | None, meta: dict[str, Any] | None, data: Any
):
    inner, wrapped = unwrapped_schema(schema)
    result = mcp.CallToolResult(
        content=[mcp.TextContent(text="hello Ada")],
        structured_content={"result": "hello Ada"},
        _meta=meta,
    )
    value = from_call_tool_result(result, wrapped)
    assert value.output == "hello Ada"
    assert structured_data(value) == data
    if wrapped:
        assert inner is not None and inner["type"] == "string"


def test_structured_content_keeps_the_images_beside_it():
    image = mcp.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    value = from_call_tool_result(
        mcp.CallToolResult(content=[mcp.TextContent(text="{}"), image], structured_content={})
    )
    assert value.output == [
        TextPart(text="{}"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="data:image/png;base64,iVBORw0KGgo=")),
    ]


def test_progress_events_become_mcp_progress_with_or_without_a_total():
    assert mcp_progress({"progress": 40.0, "message": "x"}, 1) == (40.0, 100.0)
    # Without a percentage: the count of steps so far, and no total (MCP's progress only grows).
    assert mcp_progress({"message": "x"}, 3) == (3.0, None)


def test_kosong_messages_become_sampling_messages_and_back():
    png = "data:image/png;base64,iVBORw0KGgo="
    asked = Message(
        role="user",
        content=[
            TextPart(text="What is this?"),
            ImageURLPart(image_url=ImageURLPart.ImageURL(url=png)),
        ],
    )
    sent = sampling_message(asked)
    assert sent.role == "user" and isinstance(sent.content, list)
    assert [block.type for block in sent.content] == ["text", "image"]
    with pytest.raises(ValueError, match="system_prompt="):
        sampling_message(Message(role="system", content="be brief"))
    answer = mcp.CreateMessageResult(
        role="assistant", content=mcp.TextContent(text="A pixel."), model="m"
    )
    assert sampled_message(answer) == Message(role="assistant", content="A pixel.")
