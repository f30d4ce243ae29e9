"""Calling a FunctionTool: threads, return conversion, errors, artifacts, invoke, injection."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import threading
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

from kosong.message import ImageURLPart, TextPart
from kosong.tooling import (
    CallableTool2,
    FunctionTool,
    Injected,
    ToolError,
    ToolException,
    ToolOk,
    ToolReturnValue,
    tool,
)
from kosong.tooling.error import ToolRuntimeError, ToolValidateError
from kosong.tooling.simple import SimpleToolset
from tests.tooling._strategies import json_values
from tests.tooling._tools import handle


class Tree(BaseModel):
    kids: list[Tree] = []

    def count(self) -> int:
        return 1 + sum(kid.count() for kid in self.kids)


# --- running -----------------------------------------------------------------------------------


async def test_sync_functions_run_in_a_worker_thread_and_overlap() -> None:
    both_running = threading.Barrier(2, timeout=5)
    threads: list[int] = []

    @tool
    def wait_for_the_other(n: int) -> str:
        """Meet the other call."""
        threads.append(threading.get_ident())
        both_running.wait()  # only returns if both calls run at the same time
        return str(n)

    toolset = SimpleToolset([wait_for_the_other])
    results = await asyncio.wait_for(
        asyncio.gather(
            handle(toolset, "wait_for_the_other", '{"n": 1}'),
            handle(toolset, "wait_for_the_other", '{"n": 2}'),
        ),
        timeout=10,
    )
    assert [r.output for r in results] == ["1", "2"]
    assert threading.get_ident() not in threads


async def test_async_functions_are_awaited_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    @tool
    async def where() -> str:
        """Where it runs."""
        seen.append(threading.get_ident())
        await asyncio.sleep(0)
        return "here"

    assert (await where.call({})).output == "here"
    assert seen == [loop_thread]


async def _fetch(city: str) -> str:
    """Fetch the weather of a city."""
    await asyncio.sleep(0)
    return f"sunny in {city}"


def _wrapped_sync(func: Any) -> Any:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:  # sync, but hands back a coroutine
        return func(*args, **kwargs)

    return wrapper


async def test_a_sync_function_returning_an_awaitable_is_awaited_not_reported_as_text() -> None:
    wrapped = tool(_wrapped_sync(_fetch))
    lambda_tool = FunctionTool.from_function(
        lambda city: _fetch(city), name="via_lambda", description="Fetch through a lambda."
    )
    toolset = SimpleToolset([wrapped, lambda_tool])
    for name in ("_fetch", "via_lambda"):
        result = await handle(toolset, name, '{"city": "Oslo"}')
        assert not result.is_error, result.message
        assert result.output == "sunny in Oslo"
        assert "coroutine" not in result.output


def test_invoke_of_a_sync_function_returning_an_awaitable_gives_its_value() -> None:
    assert tool(_wrapped_sync(_fetch)).invoke({"city": "Rome"}) == "sunny in Rome"


async def test_function_tool_is_a_callable_tool2_a_toolset_runs() -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert isinstance(add, CallableTool2)
    toolset = SimpleToolset([add])
    assert toolset.tools == [add.base]
    assert (await handle(toolset, "add", '{"a": 1, "b": 2}')).output == "3"
    bad = await handle(toolset, "add", '{"a": "x"}')
    assert isinstance(bad, ToolValidateError)
    assert bad.message == (
        "Error validating JSON arguments: a: Input should be a valid integer, unable to parse "
        'string as an integer (got "x"); b: Field required'
    )
    # CallableTool2's own entry point, with arguments already validated, works too.
    assert (await add(add.params.model_validate({"a": 2, "b": 2}))).output == "4"


class Point(BaseModel):
    x: int
    y: float = 0.0


def _kinds(
    n: int,
    ratio: Annotated[float, Field(ge=0, le=1)],
    mode: Literal["fast", "slow"] = "fast",
    tags: list[str] | None = None,
    where: Point | None = None,
    json: dict[str, int] | None = None,  # a name a pydantic model field cannot have
) -> str:
    """Echo what came in."""
    return repr((n, ratio, mode, tags, where, json))


SIGNATURE_TOOL = tool(_kinds)
ARGUMENT_VALUES = json_values(max_leaves=4, text=st.sampled_from(["a", "x", "fast", "1"]))


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["n", "ratio", "mode", "tags", "where", "json"]),
        ARGUMENT_VALUES | st.fixed_dictionaries({"x": ARGUMENT_VALUES}),
        max_size=6,
    )
)
def test_a_call_accepts_and_refuses_exactly_what_the_params_model_does(
    arguments: dict[str, Any],
) -> None:
    # Calls are checked by a validator of the parameters' types, not by `params`: both are
    # made from the same types, and must agree on every argument, to the values passed on.
    result = asyncio.run(SIGNATURE_TOOL.call(arguments))
    try:
        params = SIGNATURE_TOOL.params.model_validate(arguments)
    except ValidationError:
        assert isinstance(result, ToolValidateError)
        return
    assert not result.is_error, result.message
    assert result.output == repr(tuple(params.__dict__.values()))


async def test_parameters_of_one_recursive_type_are_validated_like_the_model_does() -> None:
    @tool
    def walk(first: Tree, second: Tree | None = None, rest: list[Tree] | None = None) -> int:
        """Count the nodes."""
        return sum(t.count() for t in [first, second, *(rest or [])] if t is not None)

    arguments = {"first": {"kids": [{"kids": []}]}, "second": {}, "rest": [{"kids": [{}]}]}
    assert (await walk.call(arguments)).output == "5"
    assert walk.params.model_validate(arguments).first.count() == 2  # type: ignore[attr-defined]
    refused = await walk.call({"first": {"kids": [{"kids": "x"}]}})
    assert isinstance(refused, ToolValidateError) and "first.kids[0].kids" in refused.message


async def test_both_functions_given_toolsets_use_the_coroutine_and_invoke_the_sync_one() -> None:
    used: list[str] = []

    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        used.append("sync")
        return a * b

    async def amultiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        used.append("async")
        return a * b

    calc = FunctionTool.from_function(func=multiply, coroutine=amultiply)
    assert (await calc.call({"a": 2, "b": 3})).output == "6"
    assert await calc.ainvoke({"a": 2, "b": 5}) == 10
    assert await asyncio.to_thread(calc.invoke, {"a": 1, "b": 1}) == 1
    assert used == ["async", "async", "sync"]


def test_function_roles_are_checked() -> None:
    def sync() -> str:
        """S."""
        return ""

    async def coro() -> str:
        """C."""
        return ""

    with pytest.raises(TypeError, match="must be an async function"):
        FunctionTool.from_function(sync, coroutine=sync)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`func` is async"):
        FunctionTool.from_function(coro, coroutine=coro)
    with pytest.raises(TypeError, match="needs a function"):
        FunctionTool.from_function()
    assert FunctionTool.from_function(coro).coroutine is coro
    assert FunctionTool.from_function(coroutine=coro).func is None


def test_generator_functions_are_refused() -> None:
    def numbers() -> Any:
        """Numbers."""
        yield 1

    with pytest.raises(TypeError, match="is a generator function"):
        FunctionTool.from_function(numbers)


async def test_positional_only_parameters_are_passed_by_position() -> None:
    def power(base: int, exp: int = 2, /) -> int:
        """Power."""
        return base**exp

    made = FunctionTool.from_function(power)
    assert (await made.call({"base": 3})).output == "9"
    assert made.invoke({"base": 2, "exp": 3}) == 8


async def test_callable_objects_and_methods_become_tools() -> None:
    class Counter:
        def __init__(self) -> None:
            self.count = 0

        def bump(self, by: int) -> int:
            """Bump the counter."""
            self.count += by
            return self.count

        async def __call__(self, by: int) -> int:
            """Bump asynchronously."""
            return self.bump(by)

    counter = Counter()
    bump = FunctionTool.from_function(counter.bump)
    assert bump.args == {"by": {"type": "integer"}}
    assert (await bump.call({"by": 2})).output == "2"
    as_object = FunctionTool.from_function(counter, name="bump_async")
    assert as_object.coroutine is counter
    assert (await as_object.call({"by": 3})).output == "5"


# --- return conversion ---------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    temperature: float


@dataclasses.dataclass
class Reading:
    city: str
    when: datetime.date


class Money:
    def __str__(self) -> str:
        return "12.50 EUR"


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("plain text", "plain text"),
        ("", ""),
        (Weather(city="Zürich", temperature=21.5), '{"city":"Zürich","temperature":21.5}'),
        (Reading("東京", datetime.date(2024, 5, 1)), '{"city":"東京","when":"2024-05-01"}'),
        ({"a": [1, 2], "b": None}, '{"a":[1,2],"b":null}'),
        ([1, "二", 3.5], '[1,"二",3.5]'),
        ((1, 2), "[1,2]"),
        ([], "[]"),
        (42, "42"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        (float("nan"), '"NaN"'),
        (
            {"when": datetime.date(2024, 1, 2), "odd": Money()},
            '{"when":"2024-01-02","odd":"12.50 EUR"}',
        ),
        (Money(), "12.50 EUR"),
        (datetime.date(2024, 1, 2), "2024-01-02"),
    ],
)
async def test_return_values_are_converted_for_the_model(value: object, output: str) -> None:
    @tool
    def give() -> Any:
        """Give the value."""
        return value

    result = await give.call({})
    assert result == ToolOk(output=output)


async def test_tool_return_values_and_content_parts_pass_through() -> None:
    image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://example.com/a.png"))
    own = ToolError(message="not today", brief="Refused")

    @tool
    def give(which: str) -> Any:
        """Give."""
        return {"own": own, "part": TextPart(text="hi"), "parts": [TextPart(text="a"), image]}[
            which
        ]

    assert (await give.call({"which": "own"})) is own
    assert (await give.call({"which": "part"})).output == [TextPart(text="hi")]
    assert (await give.call({"which": "parts"})).output == [TextPart(text="a"), image]


# --- errors --------------------------------------------------------------------------------


def _get_weather(city: str) -> str:
    """Get the weather of a city."""
    raise ToolException(f"Error: There is no city by the name of {city}.")


@pytest.mark.parametrize(
    ("handler", "text"),
    [
        (False, "Error: There is no city by the name of foobar."),
        (True, "Error: There is no city by the name of foobar."),
        ("No such city.", "No such city."),
        (
            lambda e: f"handled: {e.args[0]}",
            "handled: Error: There is no city by the name of foobar.",
        ),
    ],
)
async def test_tool_exception_is_a_tool_error_with_the_handled_text(
    handler: Any, text: str
) -> None:
    made = FunctionTool.from_function(_get_weather, handle_tool_error=handler)
    result = await handle(SimpleToolset([made]), "_get_weather", '{"city": "foobar"}')
    assert type(result) is ToolError
    assert result.message == text and result.brief == text.splitlines()[0][:100]
    if handler is False:
        with pytest.raises(ToolException, match="no city by the name of foobar"):
            made.invoke({"city": "foobar"})
    else:
        assert made.invoke({"city": "foobar"}) == text
        assert await made.ainvoke({"city": "foobar"}) == text


async def test_an_empty_tool_exception_says_its_type() -> None:
    @tool
    def fail() -> str:
        """Fail."""
        raise ToolException

    assert (await fail.call({})).message == "ToolException"


async def test_other_exceptions_reach_the_model_as_runtime_errors_without_traceback() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    result = await handle(SimpleToolset([divide]), "divide", '{"a": 1, "b": 0}')
    assert isinstance(result, ToolRuntimeError)
    assert result.message == "Error running tool: ZeroDivisionError: float division by zero"
    assert "Traceback" not in result.model_dump_json()
    with pytest.raises(ZeroDivisionError):
        divide.invoke({"a": 1, "b": 0})


def test_bad_option_values_are_refused() -> None:
    with pytest.raises(ValueError, match="response_format must be"):
        FunctionTool.from_function(_get_weather, response_format="json")  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match="handle_tool_error must be"):
        FunctionTool.from_function(_get_weather, handle_tool_error=3)  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match="unknown tool option"):
        FunctionTool.from_function(_get_weather, retries=3)  # type: ignore[call-arg]


# --- content and artifact ------------------------------------------------------------------


@tool(response_format="content_and_artifact")
def generate_ints(size: int) -> tuple[str, list[int]]:
    """Generate `size` ints."""
    return f"Generated {size} ints.", list(range(size))


async def test_artifact_is_kept_on_the_result_and_never_serialized() -> None:
    result = await handle(SimpleToolset([generate_ints]), "generate_ints", '{"size": 3}')
    assert result.output == "Generated 3 ints."
    assert result.artifact == [0, 1, 2]
    assert "artifact" not in result.model_dump()
    assert "0, 1, 2" not in result.model_dump_json()


async def test_artifact_goes_on_a_returned_tool_value_without_changing_it() -> None:
    own = ToolOk(output="done")

    @tool(response_format="content_and_artifact")
    def make() -> tuple[ToolReturnValue, dict[str, int]]:
        """Make."""
        return own, {"rows": 2}

    result = await make.call({})
    assert result.output == "done" and result.artifact == {"rows": 2}
    assert own.artifact is None


async def test_not_returning_a_pair_is_a_clear_tool_error() -> None:
    @tool(response_format="content_and_artifact")
    def wrong() -> str:
        """Wrong."""
        return "just content"

    result = await wrong.call({})
    assert result.is_error
    assert result.message == (
        "Tool `wrong` has response_format='content_and_artifact', so it must return a "
        "(content, artifact) pair; it returned a str"
    )
    with pytest.raises(ValueError, match="must return a"):
        wrong.invoke({})


def test_invoke_returns_only_the_content() -> None:
    assert generate_ints.invoke({"size": 2}) == "Generated 2 ints."


# --- invoke / ainvoke ----------------------------------------------------------------------


@tool
async def amultiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def test_invoke_runs_an_async_only_tool_when_no_loop_is_running() -> None:
    assert amultiply.invoke({"a": 2, "b": 3}) == 6


async def test_invoke_of_an_async_only_tool_inside_a_running_loop_says_to_use_ainvoke() -> None:
    with pytest.raises(NotImplementedError, match=r"use `await amultiply.ainvoke\(...\)`"):
        amultiply.invoke({"a": 2, "b": 3})
    assert await amultiply.ainvoke({"a": 2, "b": 3}) == 6


async def test_ainvoke_runs_a_sync_tool_in_a_thread() -> None:
    seen: list[int] = []

    @tool
    def who() -> str:
        """Who."""
        seen.append(threading.get_ident())
        return "me"

    assert await who.ainvoke({}) == "me"
    assert seen and seen[0] != threading.get_ident()


def test_invoke_validates_and_returns_the_functions_own_value() -> None:
    @tool
    def pair(a: int) -> tuple[int, int]:
        """Pair."""
        return (a, a)

    assert pair.invoke({"a": "7"}) == (7, 7)  # validated (lax mode), not converted to text
    with pytest.raises(ValidationError, match="a\n  Input should be a valid integer"):
        pair.invoke({"a": "seven"})


# --- injected values ---------------------------------------------------------------------------


class Database:
    def __init__(self, rows: dict[str, str]) -> None:
        self.rows = rows


@tool
def lookup(key: str, db: Injected[Database], default: Injected[str] = "?") -> str:
    """Look a key up."""
    return db.rows.get(key, default)


async def test_injected_parameters_are_hidden_and_supplied_by_the_application() -> None:
    assert lookup.args == {"key": {"type": "string"}}
    assert lookup.injected == {"db", "default"}
    bound = lookup.inject(db=Database({"a": "alpha"}))
    assert (await handle(SimpleToolset([bound]), "lookup", '{"key": "a"}')).output == "alpha"
    assert bound.invoke({"key": "b"}) == "?"
    assert bound.inject(default="none").invoke({"key": "b"}) == "none"
    # The model cannot set an injected value: it is not a parameter, and is refused as one.
    refused = await bound.call({"key": "b", "default": "model"})
    assert isinstance(refused, ToolValidateError)
    assert refused.message == (
        'Error validating JSON arguments: default: not a parameter of this tool (got "model"); '
        "its parameters: key"
    )


async def test_missing_injected_value_is_a_runtime_error_naming_it() -> None:
    result = await handle(SimpleToolset([lookup]), "lookup", '{"key": "a"}')
    assert isinstance(result, ToolRuntimeError)
    assert "needs the injected value(s) 'db'" in result.message
    with pytest.raises(TypeError, match=r"tool.inject\(db=...\)"):
        lookup.invoke({"key": "a"})
    with pytest.raises(TypeError, match="has no injected parameter 'key'"):
        lookup.inject(key="a")


# --- names, descriptions, options --------------------------------------------------------------


def test_name_and_description_default_to_the_functions_and_can_be_given() -> None:
    @tool("multiplication-tool", description="Multiply.", return_direct=True)
    def multiply(a: int, b: int) -> int:
        """Docstring."""
        return a * b

    assert (multiply.name, multiply.description, multiply.return_direct) == (
        "multiplication-tool",
        "Multiply.",
        True,
    )
    assert multiply.base.name == "multiplication-tool"


def test_bad_names_and_missing_descriptions_fail_at_creation() -> None:
    def undocumented(a: int) -> int:
        return a

    with pytest.raises(ValueError, match="has no description"):
        FunctionTool.from_function(undocumented)
    with pytest.raises(ValueError, match="tool name 'has space' is not valid"):
        FunctionTool.from_function(undocumented, name="has space", description="d")
    with pytest.raises(ValueError, match="no usable name"):
        FunctionTool.from_function(lambda: 1, description="d")
    assert FunctionTool.from_function(lambda: 1, name="one", description="d").invoke({}) == 1


def test_decorator_forms() -> None:
    def f() -> str:
        """F."""
        return "f"

    assert tool(f).name == "f"
    assert tool("g")(f).name == "g"
    assert tool(name="h")(f).name == "h"
    assert tool()(f).name == "f"
    with pytest.raises(TypeError, match="give the tool's name once"):
        tool("g", name="h")
    with pytest.raises(TypeError, match="not tool"):
        tool(f, name="x")  # type: ignore[call-overload]


def test_function_tools_are_made_by_from_function_only() -> None:
    with pytest.raises(TypeError, match="make a FunctionTool with @tool"):
        FunctionTool(name="x", description="d")


# --- unknown arguments --------------------------------------------------------------------------


@tool
def to_fahrenheit(celsius: float) -> float:
    """Convert Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


async def test_an_unknown_argument_is_refused_by_default_naming_it_and_the_closest_parameter() -> (
    None
):
    refused = await to_fahrenheit.call({"celsius": 1, "celcius_typo": 2})
    assert isinstance(refused, ToolValidateError)
    assert refused.message == (
        "Error validating JSON arguments: celcius_typo: not a parameter of this tool (got 2); "
        "did you mean `celsius`? Its parameters: celsius"
    )
    # Everything else wrong is in the same message, so one retry fixes it all.
    both = await to_fahrenheit.call({"celcius": None})
    assert isinstance(both, ToolValidateError)
    assert both.message == (
        "Error validating JSON arguments: celcius: not a parameter of this tool (got null); "
        "did you mean `celsius`? Its parameters: celsius; celsius: Field required"
    )
    with pytest.raises(ValueError, match="celcius_typo: not a parameter of this tool"):
        to_fahrenheit.invoke({"celsius": 1, "celcius_typo": 2})


async def test_equal_defaults_of_different_types_each_reach_their_own_function() -> None:
    # Optional parameters with the same immutable default share their validator's schema:
    # 0, False and 0.0 are equal (and hash alike), yet each function gets its own default.
    @tool
    def as_int(x: int | float | bool = 0) -> str:
        """Say the type."""
        return type(x).__name__

    @tool
    def as_bool(x: int | float | bool = False) -> str:
        """Say the type."""
        return type(x).__name__

    @tool
    def as_float(x: int | float | bool = 0.0) -> str:
        """Say the type."""
        return type(x).__name__

    @tool
    def as_nan(x: float = float("nan")) -> str:
        """Say the value."""
        return str(x)

    outputs = [(await t.call({})).output for t in (as_int, as_bool, as_float, as_int, as_nan)]
    assert outputs == ["int", "bool", "float", "int", "nan"]
    assert (await as_bool.call({"x": 2})).output == "int"


async def test_unknown_arguments_ignore_drops_them_as_before() -> None:
    @tool(unknown_arguments="ignore")
    def lenient(celsius: float) -> float:
        """Convert Celsius to Fahrenheit."""
        return celsius * 9 / 5 + 32

    assert (await lenient.call({"celsius": 1, "celcius_typo": 2})).output == "33.8"
    with pytest.raises(ValueError, match="unknown_arguments must be 'refuse' or 'ignore'"):
        tool(unknown_arguments="allow")(lenient.func)  # pyright: ignore[reportArgumentType]


async def test_a_tool_made_with_a_schema_follows_that_schema_for_unknown_arguments() -> None:
    def anything(**kwargs: Any) -> str:
        """Take anything."""
        return ",".join(sorted(kwargs))

    open_tool = FunctionTool.from_function(anything, schema={"type": "object", "properties": {}})
    assert (await open_tool.call({"x": 1, "y": 2})).output == "x,y"


async def test_a_typed_return_travels_as_its_json_value_beside_the_text() -> None:
    @tool
    def count(text: str) -> int:
        """Count the words."""
        return len(text.split())

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    @tool(output_schema={"type": "object"})
    def stated(text: str) -> dict[str, Any]:
        """A schema given, not derived."""
        return {"text": text, "nan": float("nan")}

    counted = await handle(SimpleToolset([count]), "count", '{"text": "a b c"}')
    assert counted.output == "3"
    assert counted.extras == {"standard": {"data": 3}}
    echoed = await handle(SimpleToolset([echo]), "echo", '{"text": "3"}')
    assert (echoed.output, echoed.extras) == ("3", None)
    given = await handle(SimpleToolset([stated]), "stated", '{"text": "x"}')
    assert given.output == '{"text":"x","nan":"NaN"}'
    assert given.extras == {"standard": {"data": {"text": "x", "nan": "NaN"}}}
