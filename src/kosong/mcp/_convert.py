"""Results and tool definitions, kosong's way and MCP's way (private: used by server and client).

kosong → MCP (what our server sends):

- the output's text or content parts become content blocks: `TextPart` → text, an image or
  audio `data:` URL → image / audio content, `ResourcePart` → an embedded resource, any other
  URL (or a video) → a resource link or resource, a part of another kind → its JSON as text;
  a result's `message` is one more text block (first for an error, where it is the
  explanation, last for a success);
- an error's code (`kosong.standard.error_code`) travels in `_meta["kosong/error"]`, so a kosong
  client gets the same kind of error back;
- a tool that declares an `output_schema` sends its JSON output as `structuredContent` too.
  MCP wants an object there: an output schema of another type (`-> int`, `-> list[str]`) is
  sent as `{"type": "object", "properties": {"result": <schema>}, "required": ["result"]}`
  and the value as `{"result": <value>}`, the wrapping the MCP SDK's own servers use (and
  pydantic-ai's client unwraps).

MCP → kosong (what `MCPToolset` gives the model): the reverse, with binary content as `data:`
URLs and the raw `CallToolResult` kept as the result's `artifact`. A result with
`structuredContent` is that JSON object, as compact JSON text (so the envelope's `data` is
the object itself); its text blocks are the same value written for older clients, and are
left out.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any, cast

import mcp_types as mcp

from kosong.mcp._content import ResourcePart
from kosong.message import AudioURLPart, ContentPart, ImageURLPart, TextPart, VideoURLPart
from kosong.standard import coded_error, error_code
from kosong.tooling import Tool, ToolError, ToolOk, ToolReturnValue
from kosong.utils.typing import JsonType

ERROR_META_KEY = "kosong/error"
"""The `_meta` key of a `CallToolResult` that carries a kosong error's code."""

_DATA_URL = re.compile(
    r"\Adata:(?P<mime>[^;,]*)(?P<params>(?:;[^;,]*)*?);base64,(?P<data>.*)\Z", re.S
)


# --- kosong → MCP ---------------------------------------------------------------------------


def output_schema_of(tool: Tool) -> dict[str, Any] | None:
    """The tool's `outputSchema` for MCP: its declared output schema, wrapped unless an object.

    See the module doc; `is_wrapped` says which.
    """
    schema = tool.output_schema
    if schema is None or not is_wrapped(schema):
        return schema
    inner = {k: v for k, v in schema.items() if k not in _ROOT_KEYS}
    # `$defs` (a recursive type's) and `$schema` stay at the root, where references find them.
    wrapper: dict[str, Any] = {k: schema[k] for k in _ROOT_KEYS if k in schema}
    wrapper.update({"type": "object", "properties": {"result": inner}, "required": ["result"]})
    return wrapper


def is_wrapped(schema: Mapping[str, Any]) -> bool:
    """Whether values of `schema` travel as `{"result": value}` (it is not an object schema)."""
    return schema.get("type") != "object"


_ROOT_KEYS = ("$schema", "$defs", "definitions")


def to_mcp_tool(tool: Tool) -> mcp.Tool:
    """The MCP definition of a kosong tool: schema, annotations from its hints, output schema."""
    annotations = None
    hints = (tool.read_only_hint, tool.destructive_hint, tool.idempotent_hint, tool.open_world_hint)
    if tool.title is not None or any(h is not None for h in hints):
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
        annotations=annotations,
    )


def _part_to_block(part: ContentPart) -> mcp.ContentBlock:
    if isinstance(part, TextPart):
        return mcp.TextContent(text=part.text)
    if isinstance(part, ResourcePart):
        contents: mcp.TextResourceContents | mcp.BlobResourceContents
        if part.text is not None:
            contents = mcp.TextResourceContents(
                uri=part.uri, mime_type=part.mime_type, text=part.text
            )
        else:
            contents = mcp.BlobResourceContents(
                uri=part.uri, mime_type=part.mime_type, blob=part.blob or ""
            )
        return mcp.EmbeddedResource(resource=contents)
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
    """The MCP result of a kosong result (see the module doc), in its wire form.

    A dict, not a `CallToolResult`: the SDK checks the result against the protocol version's
    schema anyway, and a model built here would only be dumped again.
    """
    blocks: list[dict[str, Any]] = []
    output = value.output
    if isinstance(output, str):
        if output:
            blocks.append({"type": "text", "text": output})
    else:
        blocks.extend(_wire(_part_to_block(part)) for part in output)
    if value.message:
        note = {"type": "text", "text": value.message}
        if value.is_error:
            blocks.insert(0, note)
        else:
            blocks.append(note)
    if value.is_error:
        # `resultType` as a CallToolResult dumps it (2026-07-28 requires it; others ignore it).
        result: dict[str, Any] = {"content": blocks, "isError": True, "resultType": "complete"}
        code = error_code(value)
        if code:
            result["_meta"] = {ERROR_META_KEY: {"code": code}}
        return result
    result = {"content": blocks, "isError": False, "resultType": "complete"}
    if output_schema is not None and isinstance(output, str):
        # Output that is not JSON (or not an object, unwrapped) gets no structured content;
        # the client's check of the output schema then says so.
        with contextlib.suppress(ValueError):
            data: JsonType = json.loads(output)
            if is_wrapped(output_schema):
                result["structuredContent"] = {"result": data}
            elif isinstance(data, dict):
                result["structuredContent"] = data
    return result


def _wire(block: mcp.ContentBlock) -> dict[str, Any]:
    return block.model_dump(by_alias=True, mode="json", exclude_none=True)


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
    return TextPart(text=f"[binary content {label} ({mime}, {size} bytes)]")


def block_to_part(block: mcp.ContentBlock) -> ContentPart:
    """A content part for an MCP content block (binary content as a `data:` URL)."""
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
    # A resource link: the model reads where the resource is.
    mime = f", {block.mime_type}" if block.mime_type else ""
    return TextPart(text=f"[resource {block.name}{mime}: {block.uri}]")


def from_call_tool_result(result: mcp.CallToolResult) -> ToolReturnValue:
    """The kosong result of an MCP result: ToolOk, or a ToolError (coded when the server said).

    Structured content becomes its compact JSON text (with any images or other non-text
    blocks after it); otherwise one text block becomes plain text output, and anything else
    a list of content parts. The raw result is kept as the `artifact`.
    """
    parts = [block_to_part(block) for block in result.content]
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    if result.is_error:
        message = "\n".join(texts) or "the MCP tool reported an error without a message"
        error = _coded_error(result.meta, message) or ToolError(message=message)
        error.artifact = result
        return error
    output: str | list[ContentPart]
    if result.structured_content is not None:
        data = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        others = [p for p in parts if not isinstance(p, TextPart)]
        output = [TextPart(text=data), *others] if others else data
    elif len(parts) == 1 and isinstance(parts[0], TextPart):
        output = parts[0].text
    else:
        output = parts
    return ToolOk(output=output, artifact=result)


def _coded_error(meta: Mapping[str, Any] | None, message: str) -> ToolError | None:
    """The error of the code a kosong server sent in `_meta`, if it sent one of the right form."""
    error: JsonType = meta.get(ERROR_META_KEY) if meta else None
    code = cast(dict[str, Any], error).get("code") if isinstance(error, dict) else None
    if isinstance(code, str):
        with contextlib.suppress(ValueError):  # not a code of the standard's form: uncoded
            return coded_error(code, message)
    return None
