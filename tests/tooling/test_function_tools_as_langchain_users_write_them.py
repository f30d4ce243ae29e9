"""Every example of seeds/003 (LangChain's custom tools guide), with kosong's API.

Each test names the example it mirrors and checks the same names, descriptions, required
fields and values. Where LangChain shows a schema with `title`s, kosong's is the same schema
without them (a flat schema is what kosong sends to models).
"""

from __future__ import annotations

import random
import warnings
from typing import Annotated

import pytest
from langchain_core._api.beta_decorator import LangChainBetaWarning
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import BaseTool
from langchain_core.tools.base import ArgsSchema
from pydantic import BaseModel, Field

from kosong.message import ToolCall
from kosong.tooling import FunctionTool, Injected, ToolException, tool
from kosong.tooling.langchain import from_langchain
from kosong.tooling.simple import SimpleToolset


class CalculatorInput(BaseModel):
    a: int = Field(description="first number")
    b: int = Field(description="second number")


def test_1_1_basic_tool_decorator() -> None:
    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    assert multiply.name == "multiply"
    assert multiply.description == "Multiply two numbers."
    assert multiply.args == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert multiply.base.parameters["required"] == ["a", "b"]


def test_1_1_annotated_arguments_and_nested_schema() -> None:
    @tool
    def multiply_by_max(
        a: Annotated[int, "scale factor"],
        b: Annotated[list[int], "list of ints over which to take maximum"],
    ) -> int:
        """Multiply a by the maximum of b."""
        return a * max(b)

    assert multiply_by_max.description == "Multiply a by the maximum of b."
    assert multiply_by_max.base.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "scale factor"},
            "b": {
                "type": "array",
                "description": "list of ints over which to take maximum",
                "items": {"type": "integer"},
            },
        },
        "required": ["a", "b"],
    }
    assert multiply_by_max.invoke({"a": 2, "b": [1, 5, 3]}) == 10


def test_1_1_custom_name_args_schema_and_return_direct() -> None:
    @tool("multiplication-tool", args_schema=CalculatorInput, return_direct=True)
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    assert multiply.name == "multiplication-tool"
    assert multiply.description == "Multiply two numbers."
    assert multiply.args == {
        "a": {"type": "integer", "description": "first number"},
        "b": {"type": "integer", "description": "second number"},
    }
    assert multiply.return_direct is True


def test_1_1_google_docstring_parsing() -> None:
    @tool(parse_docstring=True)
    def foo(bar: str, baz: int) -> str:
        """The foo.

        Args:
            bar: The bar.
            baz: The baz.
        """
        return bar

    assert foo.description == "The foo."
    assert foo.base.parameters == {
        "type": "object",
        "properties": {
            "bar": {"type": "string", "description": "The bar."},
            "baz": {"type": "integer", "description": "The baz."},
        },
        "required": ["bar", "baz"],
    }


def test_1_1_unparseable_docstring_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no argument section"):

        @tool(parse_docstring=True)
        def foo(bar: str, baz: int) -> str:
            """The foo, with its arguments only in prose."""
            return bar


async def test_1_2_structured_tool_with_sync_and_async_functions() -> None:
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    async def amultiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    calculator = FunctionTool.from_function(func=multiply, coroutine=amultiply)
    assert calculator.invoke({"a": 2, "b": 3}) == 6
    assert await calculator.ainvoke({"a": 2, "b": 5}) == 10


def test_1_2_configured_structured_tool() -> None:
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    calculator = FunctionTool.from_function(
        func=multiply,
        name="Calculator",
        description="multiply numbers",
        args_schema=CalculatorInput,
        return_direct=True,
    )
    assert calculator.invoke({"a": 2, "b": 3}) == 6
    assert calculator.name == "Calculator"
    assert calculator.description == "multiply numbers"
    assert calculator.args == {
        "a": {"type": "integer", "description": "first number"},
        "b": {"type": "integer", "description": "second number"},
    }


async def test_2_runnable_as_tool() -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("human", "Hello. Please respond in the style of {answer_style}.")]
    )
    llm = GenericFakeChatModel(messages=iter(["hello matey"]))
    chain = prompt | llm | StrOutputParser()
    with warnings.catch_warnings():  # as_tool is a beta API of LangChain's
        warnings.simplefilter("ignore", LangChainBetaWarning)
        as_tool = chain.as_tool(
            name="Style responder", description="Description of when to use tool."
        )

    # Model APIs refuse spaces in tool names, so the kosong tool gets a name they accept.
    made = from_langchain(as_tool, name="Style_responder")
    assert made.args == {"answer_style": {"type": "string"}}
    assert made.description == "Description of when to use tool."
    assert (await made.call({"answer_style": "pirate"})).output == "hello matey"


class CustomCalculatorTool(BaseTool):
    name: str = "Calculator"
    description: str = "useful for when you need to answer questions about math"
    args_schema: ArgsSchema | None = CalculatorInput
    return_direct: bool = True

    def _run(self, a: int, b: int) -> int:
        return a * b


async def test_3_base_tool_subclass() -> None:
    def multiply(a: int, b: int) -> int:
        return a * b

    async def amultiply(a: int, b: int) -> int:
        return multiply(a, b)

    ours = FunctionTool.from_function(
        multiply,
        coroutine=amultiply,
        name="Calculator",
        description="useful for when you need to answer questions about math",
        args_schema=CalculatorInput,
        return_direct=True,
    )
    theirs = from_langchain(CustomCalculatorTool())
    for made in (ours, theirs):
        assert made.name == "Calculator"
        assert made.description == "useful for when you need to answer questions about math"
        assert made.args == {
            "a": {"type": "integer", "description": "first number"},
            "b": {"type": "integer", "description": "second number"},
        }
        assert made.return_direct is True
        assert (await made.call({"a": 2, "b": 3})).output == "6"
    assert ours.invoke({"a": 2, "b": 3}) == 6
    assert await ours.ainvoke({"a": 2, "b": 3}) == 6
    # Through LangChain the value comes back as its ToolMessage content: text.
    assert await theirs.ainvoke({"a": 2, "b": 3}) == "6"


async def test_async_example_1_sync_tool_also_has_ainvoke() -> None:
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    calculator = FunctionTool.from_function(func=multiply)
    assert calculator.invoke({"a": 2, "b": 3}) == 6
    assert await calculator.ainvoke({"a": 2, "b": 5}) == 10


@tool
async def async_multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


async def test_async_example_2_invoke_of_async_tool_in_a_loop_raises_not_implemented() -> None:
    with pytest.raises(NotImplementedError):
        async_multiply.invoke({"a": 2, "b": 3})


def test_async_example_2_kosong_runs_it_when_no_loop_is_running() -> None:
    # Where LangChain always raises, kosong can run the coroutine itself.
    assert async_multiply.invoke({"a": 2, "b": 3}) == 6


def get_weather(city: str) -> int:
    """Get weather for the given city."""
    raise ToolException(f"Error: There is no city by the name of {city}.")


def test_errors_handle_tool_error_true() -> None:
    get_weather_tool = FunctionTool.from_function(func=get_weather, handle_tool_error=True)
    assert get_weather_tool.invoke({"city": "foobar"}) == (
        "Error: There is no city by the name of foobar."
    )


def test_errors_handle_tool_error_string() -> None:
    get_weather_tool = FunctionTool.from_function(
        func=get_weather,
        handle_tool_error="There is no such city, but it's probably above 0K there!",
    )
    assert get_weather_tool.invoke({"city": "foobar"}) == (
        "There is no such city, but it's probably above 0K there!"
    )


def test_errors_handle_tool_error_function() -> None:
    def _handle_error(error: ToolException) -> str:
        return f"The following errors occurred during tool execution: `{error.args[0]}`"

    get_weather_tool = FunctionTool.from_function(func=get_weather, handle_tool_error=_handle_error)
    assert get_weather_tool.invoke({"city": "foobar"}) == (
        "The following errors occurred during tool execution: "
        "`Error: There is no city by the name of foobar.`"
    )


def test_errors_without_a_handler_invoke_raises() -> None:
    get_weather_tool = FunctionTool.from_function(func=get_weather)
    with pytest.raises(ToolException, match="no city by the name of foobar"):
        get_weather_tool.invoke({"city": "foobar"})


@tool(response_format="content_and_artifact")
def generate_random_ints(min: int, max: int, size: int) -> tuple[str, list[int]]:
    """Generate size random ints in the range [min, max]."""
    array = [random.randint(min, max) for _ in range(size)]
    content = f"Successfully generated array of {size} random ints in [{min}, {max}]."
    return content, array


def test_artifact_invoke_with_arguments_gives_the_content() -> None:
    assert generate_random_ints.invoke({"min": 0, "max": 9, "size": 10}) == (
        "Successfully generated array of 10 random ints in [0, 9]."
    )


async def test_artifact_a_tool_call_gives_content_and_artifact() -> None:
    toolset = SimpleToolset([generate_random_ints])
    arguments = '{"min": 0, "max": 9, "size": 10}'
    call = ToolCall(
        id="123", function=ToolCall.FunctionBody(name="generate_random_ints", arguments=arguments)
    )
    result = await toolset.handle(call)
    assert result.tool_call_id == "123"
    value = result.return_value
    assert value.output == "Successfully generated array of 10 random ints in [0, 9]."
    assert len(value.artifact) == 10 and all(0 <= n <= 9 for n in value.artifact)


def generate_random_floats(
    min: float, max: float, size: int, ndigits: Injected[int] = 2
) -> tuple[str, list[float]]:
    """Generate size random floats in the range [min, max]."""
    range_ = max - min
    array = [round(min + (range_ * random.random()), ndigits=ndigits) for _ in range(size)]
    content = f"Generated {size} floats in [{min}, {max}], rounded to {ndigits} decimals."
    return content, array


async def test_artifact_base_tool_with_configuration() -> None:
    # LangChain's `GenerateRandomFloats(ndigits=4)` keeps ndigits on the tool object; kosong
    # makes it an injected parameter the model never sees.
    rand_gen = FunctionTool.from_function(
        generate_random_floats, response_format="content_and_artifact"
    ).inject(ndigits=4)
    assert rand_gen.name == "generate_random_floats"
    assert set(rand_gen.args) == {"min", "max", "size"}
    result = await rand_gen.call({"min": 0.1, "max": 3.3333, "size": 3})
    assert result.output == "Generated 3 floats in [0.1, 3.3333], rounded to 4 decimals."
    assert len(result.artifact) == 3
    assert all(0.1 <= x <= 3.3333 and round(x, 4) == x for x in result.artifact)
