"""Turning what a tool function returns, or raises on purpose, into a ToolReturnValue (private)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import cast

from pydantic import BaseModel
from pydantic_core import from_json, to_json

from kosong.message import ContentPart
from kosong.tooling._return import ToolError, ToolOk, ToolReturnValue
from kosong.tooling.error import STANDARD_KEY

__all__ = [
    "ToolErrorHandler",
    "ToolException",
    "artifact_result",
    "error_text",
    "json_text",
    "return_value",
    "split_content_and_artifact",
    "tool_exception_result",
]


class ToolException(Exception):
    """Raised by a tool function to tell the model what went wrong.

    The model gets a `ToolError` whose message is the exception's text (or what the tool's
    `handle_tool_error` makes of it); unlike any other exception, it is not a crash of the tool.
    """


ToolErrorHandler = bool | str | Callable[[ToolException], str]
"""What a function tool does with a `ToolException`: see `FunctionTool.handle_tool_error`."""

_JSON_TYPES = (dict, list, tuple, set, frozenset, int, float, BaseModel)


def json_text(value: object) -> str:
    """Compact JSON, UTF-8 as is; values JSON cannot hold become their `str()`."""
    # NaN and infinities would make invalid JSON; as strings the model still reads them.
    return to_json(value, fallback=str, inf_nan_mode="strings").decode()


def return_value(value: object, structured: bool = False) -> ToolReturnValue:
    """What a tool function returned, as the result the model reads.

    str as is; a ToolReturnValue as is; content parts as output; models, dataclasses, dicts,
    lists, numbers, bool and None as compact JSON; anything else as `str(value)`. For a tool
    with an output schema (`structured`), data also travels as the JSON value it is, under
    `extras["standard"]["data"]`: the envelope's `data` and MCP's `structuredContent` are
    that value, so a `-> int` tool's 3 is 3 everywhere, never the text "3".
    """
    if type(value) is str:  # the common case first
        return ToolOk(output=value)
    if isinstance(value, ToolReturnValue):
        return value
    if isinstance(value, ContentPart):
        return ToolOk(output=value)
    if isinstance(value, list):
        items = cast(list[object], value)
        if items and all(isinstance(item, ContentPart) for item in items):
            return ToolOk(output=cast(list[ContentPart], items))
    if isinstance(value, str):
        return ToolOk(output=str(value))
    if (
        value is None
        or isinstance(value, _JSON_TYPES)
        or (dataclasses.is_dataclass(value) and not isinstance(value, type))
    ):
        text = json_text(cast(object, value))
        if not structured:
            return ToolOk(output=text)
        return ToolOk(output=text, extras={STANDARD_KEY: {"data": from_json(text)}})
    return ToolOk(output=str(value))


def split_content_and_artifact(tool_name: str, value: object) -> tuple[object, object]:
    """The (content, artifact) pair a `content_and_artifact` tool returns; ValueError if not."""
    if isinstance(value, tuple | list):
        pair = cast(tuple[object, ...] | list[object], value)
        if len(pair) == 2:
            return pair[0], pair[1]
    raise ValueError(
        f"Tool `{tool_name}` has response_format='content_and_artifact', so it must return a "
        f"(content, artifact) pair; it returned a {type(cast(object, value)).__name__}"
    )


def artifact_result(tool_name: str, value: object, structured: bool = False) -> ToolReturnValue:
    """The result of a `content_and_artifact` tool: the content's, with the artifact kept."""
    try:
        content, artifact = split_content_and_artifact(tool_name, value)
    except ValueError as e:
        return ToolError(message=str(e), brief="Invalid tool result")
    result = return_value(content, structured)
    if result is content:  # the function's own ToolReturnValue: leave the caller's object alone
        result = result.model_copy()
    result.artifact = artifact
    return result


def error_text(error: ToolException, handler: ToolErrorHandler) -> str:
    """The text the model reads for a ToolException, by the tool's `handle_tool_error`."""
    if isinstance(handler, str):
        return handler
    if callable(handler):
        return str(handler(error))
    text = str(error)
    return text or type(error).__name__


def tool_exception_result(error: ToolException, handler: ToolErrorHandler) -> ToolError:
    """A ToolError for a ToolException, with a one-line brief for the user interface."""
    text = error_text(error, handler)
    first_line = text.strip().split("\n", 1)[0]
    brief = first_line if len(first_line) <= 100 else first_line[:97] + "..."
    return ToolError(message=text, brief=brief)
