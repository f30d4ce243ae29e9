"""The official MCP conformance suite's fixture tools, as a kosong toolset served by MCPToolServer.

The suite (npm `@modelcontextprotocol/conformance`) calls tools of fixed names and checks what
they return; this file implements them with plain kosong tools, so the suite checks our server
and the conversions of `kosong.mcp`, not a special path. Run it with

    python examples/mcp_conformance_server.py --port 8765

and point the suite at `http://127.0.0.1:8765/mcp` (`tests/mcp/test_conformance.py` does). The
scenarios for what kosong does not serve (resources, prompts, completion) are listed, with the
reason, in `tests/mcp/conformance-expected-failures.yml`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import struct
import zlib
from typing import Any

import mcp_types as mcp
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata

from kosong.mcp import MCPToolServer, ResourcePart, mcp_request
from kosong.message import AudioURLPart, ImageURLPart, TextPart
from kosong.standard import ElicitAnswer, current_call, report_progress
from kosong.tooling import CallableTool, ToolError, ToolOk, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset


def _png_1x1_red() -> str:
    """A 1x1 red PNG, base64 (built here rather than pasted as an opaque string)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    png = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def _wav_silence() -> str:
    """A tiny WAV (8 silent 8-bit mono samples at 8 kHz), base64."""
    samples = b"\x80" * 8
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return base64.b64encode(b"RIFF" + struct.pack("<I", len(body)) + body).decode()


PNG = _png_1x1_red()
WAV = _wav_silence()


def _request() -> ServerRequestContext[Any, Any]:
    ctx = mcp_request()
    if ctx is None:  # called outside an MCP server: these tools exist for the suite
        raise RuntimeError("this tool only runs inside an MCP request")
    return ctx


@tool
def test_simple_text() -> str:
    """Return a simple text."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> ToolReturnValue:
    """Return an image (a 1x1 red PNG)."""
    return ToolOk(
        output=ImageURLPart(image_url=ImageURLPart.ImageURL(url=f"data:image/png;base64,{PNG}"))
    )


@tool
def test_audio_content() -> ToolReturnValue:
    """Return an audio clip (a short silent WAV)."""
    return ToolOk(
        output=AudioURLPart(audio_url=AudioURLPart.AudioURL(url=f"data:audio/wav;base64,{WAV}"))
    )


@tool
def test_embedded_resource() -> ToolReturnValue:
    """Return an embedded text resource."""
    return ToolOk(
        output=ResourcePart(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@tool
def test_multiple_content_types() -> ToolReturnValue:
    """Return text, an image and a resource."""
    return ToolOk(
        output=[
            TextPart(text="Multiple content types test:"),
            ImageURLPart(image_url=ImageURLPart.ImageURL(url=f"data:image/png;base64,{PNG}")),
            ResourcePart(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ]
    )


@tool
async def test_tool_with_logging() -> str:
    """Send three log messages to the client while running."""
    ctx = _request()
    for i, text in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if i:
            await asyncio.sleep(0.05)
        notification = mcp.LoggingMessageNotification(
            params=mcp.LoggingMessageNotificationParams(level="info", data=text)
        )
        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
    return "Tool with logging executed successfully"


@tool
def test_error_handling() -> ToolReturnValue:
    """Always fail."""
    return ToolError(message="This tool intentionally returns an error for testing")


@tool
async def test_tool_with_progress() -> str:
    """Report progress 0, 50 and 100."""
    for i, progress in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        report_progress(progress)
    return "Tool with progress executed successfully"


@tool
async def test_sampling(prompt: str) -> str:
    """Ask the client's model to answer `prompt`.

    Args:
        prompt: The prompt to send to the LLM.
    """
    ctx = _request()
    request = mcp.CreateMessageRequest(
        params=mcp.CreateMessageRequestParams(
            messages=[mcp.SamplingMessage(role="user", content=mcp.TextContent(text=prompt))],
            max_tokens=100,
        )
    )
    result = await ctx.session.send_request(
        request,
        mcp.CreateMessageResult,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    content = result.content
    text = content.text if isinstance(content, mcp.TextContent) else str(content)
    return f"LLM response: {text}"


async def _elicit(message: str, schema: dict[str, Any]) -> ElicitAnswer:
    """Ask the user, as any kosong tool does: through the call, whichever the protocol era."""
    call = current_call()
    if call is None:  # called outside a pipeline: these tools exist for the suite
        raise RuntimeError("this tool only runs inside a call")
    return await call.elicit(message, schema)


@tool
async def test_elicitation(message: str) -> str:
    """Ask the user for a username and an email.

    Args:
        message: The message to show the user.
    """
    result = await _elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@tool
async def test_elicitation_sep1034_defaults() -> str:
    """Ask the user for values that all have defaults (SEP-1034)."""
    result = await _elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verified", "default": True},
            },
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@tool
async def test_elicitation_sep1330_enums() -> str:
    """Ask the user to choose among the five kinds of enum (SEP-1330)."""
    titled = [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"},
    ]
    result = await _elicit(
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@tool
async def test_reconnection() -> str:
    """Close this call's SSE stream mid-call; the client resumes it and gets the result."""
    ctx = _request()
    if ctx.close_sse_stream is not None:  # the client can resume (2025-11-25, event store)
        await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return "Reconnection test completed"


class JsonSchema2020(CallableTool):
    """A tool whose input schema uses JSON Schema 2020-12 keywords ($schema, $defs, $ref)."""

    name: str = "json_schema_2020_12_tool"
    description: str = "Tool with JSON Schema 2020-12 features"
    parameters: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }

    async def __call__(self, **kwargs: Any) -> ToolReturnValue:
        return ToolOk(output=json.dumps(kwargs))


def toolset() -> SimpleToolset:
    """Every fixture tool of the suite."""
    return SimpleToolset(
        [
            test_simple_text,
            test_image_content,
            test_audio_content,
            test_embedded_resource,
            test_multiple_content_types,
            test_tool_with_logging,
            test_error_handling,
            test_tool_with_progress,
            test_sampling,
            test_elicitation,
            test_elicitation_sep1034_defaults,
            test_elicitation_sep1330_enums,
            test_reconnection,
            JsonSchema2020(),
        ]
    )


def server() -> MCPToolServer:
    """The fixture toolset behind an MCP server (resumable streams, 0.5 s retry hint)."""
    return MCPToolServer(
        toolset(), name="kosong-conformance", version="1.0.0", retry_interval_ms=500
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    uvicorn.run(server().app(), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
