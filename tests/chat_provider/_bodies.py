"""Request bodies checked against the SDKs' own request types (openai, anthropic, google-genai).

The types validate `Iterable` fields lazily, so the validated value is walked to force every
list through its item type (a wrong part type or a missing field then fails here).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from anthropic.types import message_create_params
from anthropic.types.beta import message_create_params as beta_message_create_params
from google.genai import types as genai_types
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from pydantic import TypeAdapter

_CHAT = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)
_RESPONSES = TypeAdapter(response_create_params.ResponseCreateParamsStreaming)


def _force(value: Any) -> None:
    if isinstance(value, str | bytes):
        return
    if isinstance(value, Mapping):
        for item in cast(Mapping[str, Any], value).values():
            _force(item)
    elif isinstance(value, Iterable):
        for item in cast(Iterable[Any], value):
            _force(item)


def check_chat_body(body: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError unless `body` is a valid streaming Chat request."""
    _force(_CHAT.validate_python(body))


def check_responses_body(body: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError unless `body` is a valid streaming Responses request."""
    _force(_RESPONSES.validate_python(body))


_ANTHROPIC = TypeAdapter(message_create_params.MessageCreateParamsStreaming)


def check_anthropic_body(body: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError unless `body` is a valid streaming Messages request.

    The anthropic SDK's request types are TypedDicts (validated here, never instantiated).
    """
    _force(_ANTHROPIC.validate_python(body))


_GEMINI_FIELDS: dict[str, TypeAdapter[Any]] = {
    "contents": TypeAdapter(list[genai_types.Content]),
    "systemInstruction": TypeAdapter(genai_types.Content),
    "tools": TypeAdapter(list[genai_types.Tool]),
    "toolConfig": TypeAdapter(genai_types.ToolConfig),
    "generationConfig": TypeAdapter(genai_types.GenerationConfig),
    "cachedContent": TypeAdapter(str),
    "safetySettings": TypeAdapter(list[genai_types.SafetySetting]),
}


def check_gemini_body(body: dict[str, Any]) -> None:
    """Raise unless `body` is a `generateContent` request the `google-genai` types accept.

    Each field is validated as the JSON it goes on the wire as, against the SDK's model of it
    (`Content`, `Tool`, `ToolConfig`, `GenerationConfig`...), which forbid unknown fields; a
    field the request has no place for raises KeyError.
    """
    for key, value in body.items():
        _GEMINI_FIELDS[key].validate_json(json.dumps(value))


_ANTHROPIC_BETA = TypeAdapter(beta_message_create_params.MessageCreateParamsStreaming)


def check_anthropic_beta_body(body: dict[str, Any]) -> None:
    """Like `check_anthropic_body`, against the beta request type (MCP connector's fields)."""
    _force(_ANTHROPIC_BETA.validate_python(body))
