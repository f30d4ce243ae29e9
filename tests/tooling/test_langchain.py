"""kosong.tooling.langchain against the real langchain-core: both directions and round trips."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import ToolException as LCToolException
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from kosong.message import ImageURLPart, TextPart
from kosong.tooling import CallableTool2, ToolError, ToolException, ToolOk, ToolReturnValue, tool
from kosong.tooling.error import ToolValidateError
from kosong.tooling.langchain import from_langchain, to_langchain
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType
from tests.tooling._tools import handle


class CalculatorInput(BaseModel):
    a: int = Field(description="first number")
    b: int = Field(description="second number")


def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def _tool_call(name: str, args: dict[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


# --- from_langchain ----------------------------------------------------------------------------


async def test_from_langchain_keeps_name_description_schema_and_return_direct() -> None:
    lc = StructuredTool.from_function(
        func=multiply,
        name="Calculator",
        description="multiply numbers",
        args_schema=CalculatorInput,
        return_direct=True,
    )
    made = from_langchain(lc)
    assert (made.name, made.description, made.return_direct) == (
        "Calculator",
        "multiply numbers",
        True,
    )
    # The schema LangChain itself sends to OpenAI, without titles.
    assert made.base.parameters == convert_to_openai_tool(lc)["function"]["parameters"]
    assert (await handle(SimpleToolset([made]), "Calculator", '{"a": 6, "b": 7}')).output == "42"
    bad = await made.call({"a": "six", "b": 7})
    assert isinstance(bad, ToolValidateError) and 'a: "six" is not of type "integer"' in bad.message


async def test_from_langchain_runs_sync_and_async_tools() -> None:
    @lc_tool
    async def amultiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    @lc_tool
    def smultiply(a: Annotated[int, "first"], b: int = 2) -> int:
        """Multiply two numbers."""
        return a * b

    a_made, s_made = from_langchain(amultiply), from_langchain(smultiply)
    assert (await a_made.call({"a": 3, "b": 4})).output == "12"
    assert (await s_made.call({"a": 3})).output == "6"
    assert s_made.args == {
        "a": {"type": "integer", "description": "first"},
        "b": {"type": "integer", "default": 2},
    }
    assert s_made.invoke({"a": 5}) == "10"  # LangChain's ToolMessage content is text
    assert await a_made.ainvoke({"a": 5, "b": 5}) == "25"


def _fails(city: str) -> str:
    """Get weather for the given city."""
    raise LCToolException(f"There is no city by the name of {city}.")


@pytest.mark.parametrize(
    ("handler", "text"),
    [
        (False, "There is no city by the name of foobar."),
        (True, "There is no city by the name of foobar."),
        ("No such city.", "No such city."),
    ],
)
async def test_from_langchain_turns_tool_exceptions_into_tool_errors(
    handler: Any, text: str
) -> None:
    made = from_langchain(StructuredTool.from_function(_fails, handle_tool_error=handler))
    result = await made.call({"city": "foobar"})
    assert type(result) is ToolError and result.message == text
    if handler is False:  # LangChain raises; so does our invoke
        with pytest.raises(ToolException, match="There is no city"):
            made.invoke({"city": "foobar"})
    else:  # LangChain returns the handled text; so does our invoke
        assert made.invoke({"city": "foobar"}) == text


async def test_from_langchain_keeps_the_artifact() -> None:
    @lc_tool(response_format="content_and_artifact")
    def numbers(size: int) -> tuple[str, list[int]]:
        """Make numbers."""
        return f"made {size}", list(range(size))

    result = await from_langchain(numbers).call({"size": 3})
    assert result.output == "made 3" and result.artifact == [0, 1, 2]


async def test_from_langchain_maps_content_blocks_to_parts() -> None:
    class Picture(BaseTool):
        name: str = "picture"
        description: str = "Show a picture."

        def _run(self) -> list[dict[str, Any]]:
            return [
                {"type": "text", "text": "a cat"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "json", "json": {"a": 1}},
            ]

    result = await from_langchain(Picture()).call({})
    assert result.output == [
        TextPart(text="a cat"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://example.com/cat.png")),
        TextPart(text='{"type":"json","json":{"a":1}}'),  # no kosong part for it: as JSON
    ]


def test_from_langchain_needs_a_valid_name() -> None:
    lc = StructuredTool.from_function(multiply, name="Style responder")
    with pytest.raises(ValueError, match="tool name 'Style responder' is not valid"):
        from_langchain(lc)
    assert from_langchain(lc, name="style_responder").name == "style_responder"


# --- to_langchain ------------------------------------------------------------------------------


@tool(return_direct=True)
def kmultiply(a: Annotated[int, "first number"], b: Annotated[int, "second number"]) -> int:
    """Multiply two numbers."""
    return a * b


def test_to_langchain_sync_invoke_and_definition() -> None:
    lc = to_langchain(kmultiply)
    assert isinstance(lc, StructuredTool)
    assert (lc.name, lc.description, lc.return_direct) == (
        "kmultiply",
        "Multiply two numbers.",
        True,
    )
    assert lc.args == kmultiply.args
    assert convert_to_openai_tool(lc)["function"]["parameters"] == kmultiply.base.parameters
    assert lc.invoke({"a": 2, "b": 3}) == "6"
    message = lc.invoke(_tool_call("kmultiply", {"a": 2, "b": 3}))
    assert isinstance(message, ToolMessage)
    assert (message.content, message.status, message.artifact) == ("6", "success", None)


async def test_to_langchain_errors_become_error_tool_messages() -> None:
    lc = to_langchain(kmultiply)
    message = await lc.ainvoke(_tool_call("kmultiply", {"a": "x", "b": 3}))
    assert message.status == "error"
    assert message.content == (
        "Error validating JSON arguments: a: Input should be a valid integer, unable to parse "
        'string as an integer (got "x")'
    )
    with pytest.raises(NotImplementedError, match=r"use `await tool\.ainvoke"):
        lc.invoke({"a": 1, "b": 1})  # a loop is running in this test


class EchoParams(BaseModel):
    text: str


class Echo(CallableTool2[EchoParams]):
    name: str = "echo"
    description: str = "Echo the text."
    params: type[EchoParams] = EchoParams

    async def __call__(self, params: EchoParams) -> ToolReturnValue:
        image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://example.com/e.png"))
        return ToolOk(output=[TextPart(text=params.text), image], message="echoed")


async def test_to_langchain_any_kosong_tool_with_content_parts() -> None:
    lc = to_langchain(Echo())
    message = await lc.ainvoke(_tool_call("echo", {"text": "hi"}))
    assert message.content == [
        {"type": "text", "text": "echoed"},
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": {"url": "https://example.com/e.png"}},
    ]


# --- round trips ---------------------------------------------------------------------------


@tool(response_format="content_and_artifact", handle_tool_error=True)
def report(rows: int, fail: bool = False) -> tuple[str, list[int]]:
    """Make a report."""
    if fail:
        raise ToolException("no data")
    return f"{rows} rows", list(range(rows))


async def test_round_trip_kosong_to_langchain_to_kosong() -> None:
    back = from_langchain(to_langchain(report))
    assert (back.name, back.description) == (report.name, report.description)
    assert back.base.parameters == report.base.parameters
    cases: list[JsonType] = [{"rows": 2}, {"rows": 1, "fail": True}]
    for arguments in cases:
        ours, theirs = await report.call(arguments), await back.call(arguments)
        assert (theirs.is_error, theirs.output, theirs.artifact, theirs.message) == (
            ours.is_error,
            ours.output,
            ours.artifact,
            ours.message,
        )
    # Bad arguments are refused on both sides (by the JSON Schema on the way back).
    assert isinstance(await back.call({"rows": "many"}), ToolValidateError)
    assert isinstance(await report.call({"rows": "many"}), ToolValidateError)


async def test_round_trip_langchain_to_kosong_to_langchain() -> None:
    @lc_tool(response_format="content_and_artifact")
    def lc_report(rows: int) -> tuple[str, list[int]]:
        """Make a report."""
        if rows < 0:
            raise LCToolException("negative rows")
        return f"{rows} rows", list(range(rows))

    lc_report.handle_tool_error = True
    back = to_langchain(from_langchain(lc_report))
    assert convert_to_openai_tool(back) == convert_to_openai_tool(lc_report)
    for args in ({"rows": 2}, {"rows": -1}):
        original = await lc_report.ainvoke(_tool_call("lc_report", args))
        again = await back.ainvoke(_tool_call("lc_report", args))
        assert (again.content, again.status, again.artifact) == (
            original.content,
            original.status,
            original.artifact,
        )
