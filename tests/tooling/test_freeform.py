"""`FreeformTool`: one text in, dispatched unparsed for a custom call, as `input` otherwise."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import ValidationError

from kosong.message import ToolCall
from kosong.tooling import FreeformTool, Grammar, ToolOk, ToolReturnValue
from kosong.tooling.error import ToolValidateError
from kosong.tooling.simple import SimpleToolset


class Shout(FreeformTool):
    name: str = "shout"
    description: str = "Say it louder."

    async def __call__(self, input: str) -> ToolReturnValue:
        return ToolOk(output=input.upper())


def call(kind: Literal["function", "custom"], arguments: str) -> ToolCall:
    body = ToolCall.FunctionBody(name="shout", arguments=arguments)
    return ToolCall(id="c1", type=kind, function=body)


async def test_a_custom_call_reaches_the_tool_with_its_text_unparsed() -> None:
    toolset = SimpleToolset([Shout()])
    text = '{"not": "json for this tool"}\nsecond line'
    result = await toolset.handle(call("custom", text))
    assert result.return_value.output == text.upper()


async def test_a_function_call_of_the_same_tool_gives_its_input_field() -> None:
    toolset = SimpleToolset([Shout()])
    result = await toolset.handle(call("function", '{"input": "hi"}'))
    assert result.return_value.output == "HI"
    wrong = await toolset.handle(call("function", '{"text": "hi"}'))
    assert isinstance(wrong.return_value, ToolValidateError)


def test_a_grammar_has_a_syntax_and_a_definition() -> None:
    grammar = Grammar(syntax="regex", definition=r"^\d+$")
    assert Shout(grammar=grammar).grammar == grammar
    with pytest.raises(ValidationError):
        Grammar(syntax="peg", definition="x")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError):
        Grammar(syntax="lark", definition="")
