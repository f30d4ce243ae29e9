"""Results and tool definitions, kosong's way and MCP's way (private: used by server and client).

`ResourcePart` (public, from `kosong.mcp`) is the content part an MCP embedded resource becomes.

Following the MCP tools page (modelcontextprotocol.io/specification/2025-11-25/server/tools,
"Tool Result"): `content` blocks are the result, `structuredContent` the same data as JSON.

kosong → MCP: text and content parts become blocks (a `data:` image or audio → its content,
`ResourcePart` → an embedded resource, another URL or a video → a link or resource, a part of
another kind → its JSON as text); a result's `message` is one more text block (first for an
error); an error's code travels in `_meta["kosong/error"]`; a tool with an `output_schema`
sends its value as `structuredContent`, a non-object one wrapped as `{"result": value}` under a
schema marked `"x-fastmcp-wrap-result": true`, as the SDK's and FastMCP's servers do.

MCP → kosong (docs/mcp.md, "What the model reads"): the blocks are what the model reads
(`block_to_part`), `structuredContent` the result's data beside them (a marked `{"result"}`
wrapper taken off), its JSON the text when there is no content; the raw result the `artifact`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any, Self, cast

import mcp_types as mcp
from pydantic import model_validator

from kosong._keys import STANDARD_KEY
from kosong.message import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    VideoURLPart,
)
from kosong.standard import coded_error, error_code, structured_data
from kosong.tooling import Tool, ToolError, ToolOk, ToolReturnValue
from kosong.utils.typing import JsonType

ERROR_META_KEY = "kosong/error"  # the `_meta` key of a `CallToolResult` with a kosong error code

_DATA_URL = re.compile(
    r"\Adata:(?P<mime>[^;,]*)(?P<params>(?:;[^;,]*)*?);base64,(?P<data>.*)\Z", re.S
)


class ResourcePart(ContentPart):
    """An embedded resource: its URI, its MIME type, and either its text or its bytes (base64)."""

    type: str = "resource"
    uri: str
    """Where the resource lives (any URI scheme, e.g. `file:///report.txt`)."""
    mime_type: str | None = None
    """Its MIME type, when known."""
    text: str | None = None
    """Its content, for a text resource."""
    blob: str | None = None
    """Its content in base64, for a binary resource."""

    @model_validator(mode="after")
    def _one_content(self) -> Self:
        if (self.text is None) == (self.blob is None):
            raise ValueError("a ResourcePart has exactly one of `text` and `blob`")
        return self


# --- kosong → MCP ---------------------------------------------------------------------------


def output_schema_of(tool: Tool) -> dict[str, Any] | None:
    """The tool's `outputSchema` for MCP: its declared output schema, wrapped unless an object."""
    schema = tool.output_schema
    if schema is None or not is_wrapped(schema):
        return schema
    inner = {k: v for k, v in schema.items() if k not in _ROOT_KEYS}
    # `$defs` (a recursive type's) and `$schema` stay at the root, where references find them.
    return {
        **{k: schema[k] for k in _ROOT_KEYS if k in schema},
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        WRAP_MARK: True,
    }


def is_wrapped(schema: Mapping[str, Any]) -> bool:
    """Whether values of `schema` travel as `{"result": value}` (it is not an object schema)."""
    return schema.get("type") != "object"


_ROOT_KEYS = ("$schema", "$defs", "definitions")

WRAP_MARK = "x-fastmcp-wrap-result"
"""FastMCP's mark of an output schema whose `result` property wraps a non-object value."""


def unwrapped_schema(schema: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """A listed output schema as the schema of the value itself, and whether it was wrapped.

    Wrapped: a lone required `result`, marked by `WRAP_MARK` or titled `...Output` (the SDK's).
    """
    if schema is None:
        return None, False
    properties = schema.get("properties")
    title = schema.get("title")
    marked = schema.get(WRAP_MARK) is True or (isinstance(title, str) and title.endswith("Output"))
    if not (
        marked
        and isinstance(properties, dict)
        and list(cast(dict[str, Any], properties)) == ["result"]
        and schema.get("required") == ["result"]
    ):
        return dict(schema), False
    inner = dict(cast(dict[str, Any], properties)["result"])
    inner.update({k: schema[k] for k in _ROOT_KEYS if k in schema})
    return inner, True


def to_mcp_tool(tool: Tool) -> mcp.Tool:
    """The MCP definition of a kosong tool: schema, annotations from its hints, output schema."""
    annotations = mcp.ToolAnnotations(
        title=tool.title,
        read_only_hint=tool.read_only_hint,
        destructive_hint=tool.destructive_hint,
        idempotent_hint=tool.idempotent_hint,
        open_world_hint=tool.open_world_hint,
    )
    return mcp.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.parameters,
        output_schema=output_schema_of(tool),
        annotations=annotations if annotations.model_dump(exclude_none=True) else None,
    )


def _part_to_block(part: ContentPart) -> mcp.ContentBlock:
    if isinstance(part, TextPart):
        return mcp.TextContent(text=part.text)
    if isinstance(part, ResourcePart):  # its text or its blob: a text or a blob resource
        contents = part.model_dump(include={"uri", "mime_type", "text", "blob"}, exclude_none=True)
        return mcp.EmbeddedResource.model_validate({"type": "resource", "resource": contents})
    if isinstance(part, ImageURLPart):
        url = part.image_url.url
    elif isinstance(part, AudioURLPart):
        url = part.audio_url.url
    elif isinstance(part, VideoURLPart):
        url = part.video_url.url
    else:
        return mcp.TextContent(text=part.model_dump_json())  # a part of the user's own kind
    inline = _DATA_URL.match(url)
    if inline is None:
        return mcp.ResourceLink(uri=url, name=url.rsplit("/", 1)[-1] or part.type)
    mime, data = inline.group("mime") or "application/octet-stream", inline.group("data")
    if isinstance(part, ImageURLPart):
        return mcp.ImageContent(data=data, mime_type=mime)
    if isinstance(part, AudioURLPart):
        return mcp.AudioContent(data=data, mime_type=mime)
    return mcp.EmbeddedResource(  # MCP has no video content: the video as a resource
        resource=mcp.BlobResourceContents(uri="video:inline", mime_type=mime, blob=data)
    )


def to_call_tool_result(
    value: ToolReturnValue, output_schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The MCP result of a kosong result (see the module doc), as a dict: the SDK checks it."""
    blocks: list[dict[str, Any]] = []
    output, failed = value.output, value.is_error
    if isinstance(output, str):
        if output:
            blocks.append({"type": "text", "text": output})
    else:
        blocks.extend(
            _part_to_block(part).model_dump(by_alias=True, mode="json", exclude_none=True)
            for part in output
        )
    if value.message:
        note = {"type": "text", "text": value.message}
        if failed:
            blocks.insert(0, note)
        else:
            blocks.append(note)
    # `resultType` as a CallToolResult dumps it (2026-07-28 requires it; others ignore it).
    result: dict[str, Any] = {"content": blocks, "isError": failed, "resultType": "complete"}
    code = error_code(value) if failed else None
    if code:
        result["_meta"] = {ERROR_META_KEY: {"code": code}}
    if failed or output_schema is None:
        return result
    data: JsonType = structured_data(value, _NONE)
    if data is _NONE and isinstance(output, str):
        # A tool that wrote its JSON as text: that JSON. Output that is not JSON (or not an
        # object, unwrapped) gets no structured content; the client's check then says so.
        with contextlib.suppress(ValueError):
            data = json.loads(output)
    if data is _NONE:
        return result
    if is_wrapped(output_schema):
        result["structuredContent"] = {"result": data}
    elif isinstance(data, dict):
        result["structuredContent"] = data
    return result


_NONE: Any = object()
"""No structured value (a JSON `null` is one)."""


def mcp_progress(data: Mapping[str, Any], steps: int) -> tuple[float, float | None]:
    """A `tool_progress` event's data as MCP's `(progress, total)`.

    A percentage is of 100; without one, the count of events so far, no total (it only grows).
    """
    percent = data.get("progress")
    if isinstance(percent, int | float) and not isinstance(percent, bool):
        return float(percent), 100.0
    return float(steps), None


def sampling_message(message: Message) -> mcp.SamplingMessage:
    """A kosong message as MCP's sampling message: a user's or the assistant's text and media.

    Raises:
        ValueError: a role or a part MCP's sampling has no place for.
    """
    if message.role not in ("user", "assistant"):
        raise ValueError(
            f"MCP sampling takes user and assistant messages, not {message.role!r} ones: "
            "give the system prompt as system_prompt="
        )
    blocks: list[mcp.TextContent | mcp.ImageContent | mcp.AudioContent] = []
    for part in message.content:
        block = _part_to_block(part)
        if not isinstance(block, mcp.TextContent | mcp.ImageContent | mcp.AudioContent):
            raise ValueError(f"a {part.type} part cannot be sent for sampling")
        blocks.append(block)
    content: Any = blocks[0] if len(blocks) == 1 else blocks
    return mcp.SamplingMessage(role=message.role, content=content)


def sampled_message(result: mcp.CreateMessageResult) -> Message:
    """The client's completion as the assistant's kosong message."""
    content = result.content if isinstance(result.content, list) else [result.content]
    parts = [
        block_to_part(block)
        for block in content
        if isinstance(block, mcp.TextContent | mcp.ImageContent | mcp.AudioContent)
    ]
    return Message(role="assistant", content=parts)


# --- MCP → kosong ---------------------------------------------------------------------------


def _blob_part(mime: str, data: str, label: str) -> ContentPart:
    url = f"data:{mime};base64,{data}"
    if mime.startswith("image/"):
        return ImageURLPart(image_url=ImageURLPart.ImageURL(url=url))
    if mime.startswith("audio/"):
        return AudioURLPart(audio_url=AudioURLPart.AudioURL(url=url))
    if mime.startswith("video/"):
        return VideoURLPart(video_url=VideoURLPart.VideoURL(url=url))
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        size = len(data)
    return TextPart(text=f"[binary resource {label} ({mime}, {size} bytes)]")


def block_to_part(block: mcp.ContentBlock) -> ContentPart:
    """What the model reads of an MCP content block (the table in docs/mcp.md)."""
    if isinstance(block, mcp.TextContent):
        return TextPart(text=block.text)
    if isinstance(block, mcp.ImageContent | mcp.AudioContent):
        return _blob_part(block.mime_type, block.data, block.type)
    if isinstance(block, mcp.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp.TextResourceContents):
            return TextPart(text=resource.text)
        return _blob_part(
            resource.mime_type or "application/octet-stream", resource.blob, resource.uri
        )
    title = f" ({block.title})" if block.title and block.title != block.name else ""
    mime = f", {block.mime_type}" if block.mime_type else ""
    about = f": {block.description}" if block.description else ""
    return TextPart(text=f"[resource link {block.name}{title}{mime}: {block.uri}]{about}")


def from_call_tool_result(result: mcp.CallToolResult, wrapped: bool = False) -> ToolReturnValue:
    """The kosong result of an MCP result: ToolOk, or a ToolError (coded when the server said).

    See the module doc; `wrapped`: the tool's listed output schema was a `{"result"}` wrapper.
    """
    parts = [block_to_part(block) for block in result.content]
    if result.is_error:
        texts = [p.text for p in parts if isinstance(p, TextPart)]
        message = "\n".join(texts) or "the MCP tool reported an error without a message"
        error = _coded_error(result.meta, message) or ToolError(message=message)
        error.artifact = result
        return error
    structured = result.structured_content
    extras: dict[str, JsonType] | None = None
    data: JsonType = None
    if structured is not None:
        data = structured
        if "result" in structured and (wrapped or _marked_wrapped(result.meta)):
            data = cast(JsonType, structured["result"])
        extras = {STANDARD_KEY: {"data": data}}
    output: str | list[ContentPart]
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        output = parts[0].text
    elif parts:
        output = parts
    elif structured is not None:  # only structured content: its JSON is what the model reads
        output = data if isinstance(data, str) else _compact(data)
    else:
        output = ""
    return ToolOk(output=output, extras=extras, artifact=result)


def _compact(data: JsonType) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _marked_wrapped(meta: Mapping[str, Any] | None) -> bool:
    """FastMCP's other mark of a wrapped result: `_meta["fastmcp"]["wrap_result"]`."""
    fastmcp: object = meta.get("fastmcp") if meta else None
    return isinstance(fastmcp, dict) and cast(dict[str, Any], fastmcp).get("wrap_result") is True


def _coded_error(meta: Mapping[str, Any] | None, message: str) -> ToolError | None:
    """The error of the code a kosong server sent in `_meta`, if it sent one of the right form."""
    error: JsonType = meta.get(ERROR_META_KEY) if meta else None
    code = cast(dict[str, Any], error).get("code") if isinstance(error, dict) else None
    if isinstance(code, str):
        with contextlib.suppress(ValueError):  # not a code of the standard's form: uncoded
            return coded_error(code, message)
    return None
