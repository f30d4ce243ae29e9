"""Content as the conventions record it (opt-in only): messages, tool definitions, tool I/O.

The shapes are the GenAI conventions' JSON schemas (`gen-ai-input-messages.json`,
`gen-ai-output-messages.json`, `gen-ai-system-instructions.json`, `gen-ai-tool-definitions.json`
of open-telemetry/semantic-conventions-genai): a message is `{"role", "parts"}`, a part is
`{"type": "text", "content"}`, `{"type": "reasoning", "content"}`, `{"type": "tool_call", "id",
"name", "arguments"}`, `{"type": "tool_call_response", "id", "response"}` or `{"type": "uri",
"modality", "uri"}` (a `data:` URL is a `blob`, as the schema asks). Spans take no structured
attributes yet, so each value is recorded as a JSON string, as the conventions allow.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kosong.message import (
    AudioURLPart,
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    VideoURLPart,
)
from kosong.tooling import Tool, ToolReturnValue

__all__ = [
    "as_json",
    "input_messages",
    "output_messages",
    "system_instructions",
    "tool_arguments",
    "tool_definitions",
    "tool_result",
]


def as_json(value: object) -> str:
    """`value` as the JSON string recorded on a span."""
    return json.dumps(value, ensure_ascii=False, default=str)


def system_instructions(system_prompt: str) -> str | None:
    """`gen_ai.system_instructions`: the system prompt as one text part (None when empty)."""
    return as_json([{"type": "text", "content": system_prompt}]) if system_prompt else None


def input_messages(history: Sequence[Message]) -> str:
    """`gen_ai.input.messages`: the history sent to the model, in order."""
    return as_json([_message(message) for message in history])


def output_messages(message: Message, finish_reason: str | None) -> str:
    """`gen_ai.output.messages`: the model's answer, one message (kosong asks for one choice)."""
    answer = _message(message)
    answer["finish_reason"] = finish_reason or ""
    return as_json([answer])


def tool_definitions(tools: Sequence[Tool]) -> str:
    """`gen_ai.tool.definitions`: each tool as a function with its description and parameters."""
    return as_json(
        [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
            for tool in tools
        ]
    )


def tool_arguments(call: ToolCall) -> str:
    """`gen_ai.tool.call.arguments`: the arguments, as the model wrote them (JSON text)."""
    return call.function.arguments or "{}"


def tool_result(value: ToolReturnValue) -> str:
    """`gen_ai.tool.call.result`: what the tool returned to the model (its output and message)."""
    output: Any = (
        value.output if isinstance(value.output, str) else [_part(p) for p in value.output]
    )
    return as_json({"output": output, "message": value.message} if value.message else output)


def _message(message: Message) -> dict[str, Any]:
    parts = [_part(part) for part in message.content]
    for call in message.tool_calls or ():
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.function.name,
                "arguments": _arguments(call.function.arguments),
            }
        )
    if message.role == "tool":
        text = message.extract_text()
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": message.tool_call_id, "response": text}],
        }
    return {"role": message.role, "parts": parts}


_MEDIA = ((ImageURLPart, "image"), (AudioURLPart, "audio"), (VideoURLPart, "video"))


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ThinkPart):
        return {"type": "reasoning", "content": part.think}
    for kind, modality in _MEDIA:
        if isinstance(part, kind):
            url: str = part.model_dump()[part.type]["url"]
            if url.startswith("data:"):
                head, _, data = url.partition(",")
                mime = head[len("data:") :].split(";")[0] or None
                return {"type": "blob", "modality": modality, "mime_type": mime, "content": data}
            return {"type": "uri", "modality": modality, "uri": url}
    return {"type": part.type}


def _arguments(text: str | None) -> Any:
    """A call's arguments as an object where they parse (the conventions expect one)."""
    try:
        return json.loads(text or "{}")
    except ValueError:
        return text
