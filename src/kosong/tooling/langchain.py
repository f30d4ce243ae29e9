"""LangChain interop: `from_langchain` and `to_langchain` (needs the `langchain` extra).

- `from_langchain(lc_tool)`: any langchain-core `BaseTool` as a `FunctionTool`. The model reads
  the schema LangChain would send (`tool_call_schema`: injected arguments left out), flattened
  like every kosong schema. Calls go through LangChain's own `invoke`/`ainvoke` with a tool
  call, so its validation, callbacks, `handle_tool_error` and artifacts all apply: a
  ToolMessage with `status="error"` becomes a `ToolError`, an artifact lands on the result's
  `artifact`.
- `to_langchain(tool)`: any kosong tool (`FunctionTool`, `CallableTool2`, `CallableTool`) as a
  langchain-core `StructuredTool` whose `args_schema` is the tool's JSON Schema. Its result is
  the tool's output (text, or content blocks); a `ToolError` becomes an error ToolMessage (or,
  invoked with a plain dict, its text), and `artifact` travels as the ToolMessage's artifact.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, cast

from kosong._extras import install_hint
from kosong.message import ContentPart, TextPart
from kosong.tooling._function import FunctionTool
from kosong.tooling._function_result import ToolException, json_text
from kosong.tooling._return import ToolReturnValue
from kosong.tooling._schema import tidy_schema
from kosong.tooling.simple import ToolType
from kosong.utils.jsonschema import deref_json_schema

try:
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.tools import ToolException as LangChainToolException
    from pydantic import BaseModel
except ImportError as e:  # pragma: no cover - the extra is installed in development
    raise ImportError(
        f"kosong.tooling.langchain needs langchain-core: {install_hint('langchain')}"
    ) from e

__all__ = ["from_langchain", "to_langchain"]

_call_ids = itertools.count(1)


def from_langchain(lc_tool: BaseTool, *, name: str | None = None) -> FunctionTool:
    """A kosong tool that runs the LangChain tool `lc_tool`.

    Args:
        lc_tool: Any langchain-core tool (`@tool`, `StructuredTool`, a `BaseTool` subclass).
        name: The name to give the tool, when LangChain's is not a valid tool name (LangChain
            allows spaces, model APIs do not).

    Raises:
        ValueError: the name is not a valid tool name, or the tool has no description.
    """
    schema = _lc_parameters(lc_tool)
    tool_name = lc_tool.name

    def tool_call(kwargs: dict[str, Any]) -> dict[str, Any]:
        # A tool call rather than bare arguments, so LangChain answers with a ToolMessage
        # (status and artifact included).
        call_id = f"kosong-{next(_call_ids)}"
        return {"name": tool_name, "args": kwargs, "id": call_id, "type": "tool_call"}

    def run(**kwargs: Any) -> tuple[Any, Any]:
        try:
            return _from_message(lc_tool.invoke(tool_call(kwargs)))
        except LangChainToolException as e:  # not handled by the LangChain tool itself
            raise ToolException(str(e)) from e

    async def arun(**kwargs: Any) -> tuple[Any, Any]:
        try:
            return _from_message(await lc_tool.ainvoke(tool_call(kwargs)))
        except LangChainToolException as e:
            raise ToolException(str(e)) from e

    # LangChain returns the handled text when the tool handles its errors, and raises
    # otherwise; `invoke` on our side does the same.
    handles_errors = lc_tool.handle_tool_error not in (None, False)
    return FunctionTool.from_function(
        run,
        coroutine=arun,
        name=name or lc_tool.name,
        description=lc_tool.description,
        schema=schema,
        return_direct=lc_tool.return_direct,
        response_format="content_and_artifact",
        handle_tool_error=handles_errors,
    )


def _lc_parameters(lc_tool: BaseTool) -> dict[str, Any]:
    raw = lc_tool.tool_call_schema
    if isinstance(raw, type) and issubclass(raw, BaseModel):
        schema = raw.model_json_schema(mode="validation")
    else:
        schema = dict(cast(dict[str, Any], raw))
    # LangChain repeats the tool's description at the top; kosong keeps it on the tool.
    schema.pop("description", None)
    flat = cast(dict[str, Any], tidy_schema(deref_json_schema(schema)))
    flat.setdefault("type", "object")
    flat.setdefault("properties", {})
    return flat


def _from_message(message: object) -> tuple[Any, Any]:
    if not isinstance(message, ToolMessage):  # a tool that builds its own output
        return message, None
    content = _from_lc_content(message.content)
    if message.status == "error":
        raise ToolException(content if isinstance(content, str) else json_text(message.content))
    return content, message.artifact


def _from_lc_content(content: str | list[str | dict[str, Any]]) -> str | list[ContentPart]:
    if isinstance(content, str):
        return content
    parts: list[ContentPart] = []
    for block in content:
        if isinstance(block, str):
            parts.append(TextPart(text=block))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(TextPart(text=block["text"]))
        elif block.get("type") in ContentPart.registry:
            parts.append(ContentPart.model_validate(block))
        else:  # a block kosong has no part for: keep it, as JSON text
            parts.append(TextPart(text=json_text(block)))
    return parts


def to_langchain(tool: ToolType) -> StructuredTool:
    """A LangChain `StructuredTool` that runs the kosong tool `tool`.

    Arguments are validated by `tool` (LangChain does not validate a JSON Schema
    `args_schema`). `invoke` runs the tool with `asyncio.run` when no event loop is running in
    the thread, and raises NotImplementedError inside a running loop: use `ainvoke` there.
    """
    base = tool.base

    async def arun(**kwargs: Any) -> tuple[Any, Any]:
        return _to_lc_result(await tool.call(kwargs))

    def run(**kwargs: Any) -> tuple[Any, Any]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(arun(**kwargs))
        raise NotImplementedError(
            f"tool `{base.name}` runs asynchronously and an event loop is running in this "
            "thread; use `await tool.ainvoke(...)`"
        )

    return StructuredTool(
        name=base.name,
        description=base.description,
        args_schema=base.parameters,
        func=run,
        coroutine=arun,
        return_direct=isinstance(tool, FunctionTool) and tool.return_direct,
        response_format="content_and_artifact",
        # A ToolError is a value the model reads: LangChain turns the exception below into
        # an error ToolMessage carrying its text.
        handle_tool_error=True,
    )


def _to_lc_result(value: ToolReturnValue) -> tuple[Any, Any]:
    if value.is_error:
        output = value.output if isinstance(value.output, str) else json_text(value.output)
        text = "\n".join(t for t in (value.message, output) if t)
        raise LangChainToolException(text or "the tool failed")
    content = _to_lc_content(value.output)
    if value.message:  # the model reads the message too: put it first, as kosong does
        if isinstance(content, str):
            content = f"{value.message}\n{content}" if content else value.message
        else:
            content = [{"type": "text", "text": value.message}, *content]
    return content, value.artifact


def _to_lc_content(output: str | list[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(output, str):
        return output
    return [part.model_dump(mode="json", exclude_none=True) for part in output]
