"""SimpleToolset: composition, and a handle() that reports every failure as a result.

No `from __future__ import annotations` here: the quoted return annotations below are meant to
be the only string annotations (_tools.py covers a module where every annotation is a string).
"""

import asyncio
import gc
import sys
from typing import Any

import pytest

from kosong.tooling import (
    ArgumentLimits,
    CallableTool,
    ParametersType,
    ToolError,
    ToolOk,
    ToolResult,
    ToolReturnValue,
)
from kosong.tooling.error import (
    ToolNotFoundError,
    ToolParseError,
    ToolRuntimeError,
    ToolValidateError,
)
from kosong.tooling.simple import SimpleToolset
from tests.tooling._tools import Add, Add2, AddParams, Echo, Weather, Weather2, handle, make_call

OBJECT: ParametersType = {"type": "object"}


def raising_tool(exc: BaseException, *, sync: bool = False) -> CallableTool:
    """A tool whose body raises `exc` (on the loop, or in a worker thread when `sync`)."""

    class Raises(CallableTool):
        name: str = "raises"
        description: str = "Raises."
        parameters: ParametersType = OBJECT

        async def __call__(self) -> ToolReturnValue:
            raise exc

    class RaisesInThread(CallableTool):
        name: str = "raises"
        description: str = "Raises in a worker thread."
        parameters: ParametersType = OBJECT

        def __call__(self) -> ToolReturnValue:  # pyright: ignore[reportIncompatibleMethodOverride]
            raise exc

    return RaisesInThread() if sync else Raises()


# --- composition -------------------------------------------------------------------------------


def test_iadd_adds_in_place() -> None:
    toolset = SimpleToolset()
    same = toolset
    toolset += Add()
    assert toolset is same
    assert "add" in toolset
    assert len(toolset) == 1


def test_add_returns_the_toolset_for_chaining() -> None:
    toolset = SimpleToolset()
    assert toolset.add(Add()).add(Echo()) is toolset
    assert [tool.name for tool in toolset.tools] == ["add", "echo"]


def test_plus_makes_a_new_toolset_and_leaves_the_original_unchanged() -> None:
    limits = ArgumentLimits(max_length=1000)
    original = SimpleToolset([Add()], limits=limits)
    combined = original + Echo()
    assert combined is not original
    assert [tool.name for tool in combined.tools] == ["add", "echo"]
    assert [tool.name for tool in original.tools] == ["add"]
    assert combined.limits == limits


def test_tools_are_listed_in_insertion_order() -> None:
    toolset = SimpleToolset([Weather(), Add(), Echo()])
    assert [tool.name for tool in toolset.tools] == ["weather", "add", "echo"]
    toolset.remove("weather")
    toolset += Weather()
    assert [tool.name for tool in toolset.tools] == ["add", "echo", "weather"]


def test_tools_are_the_model_facing_definitions() -> None:
    toolset = SimpleToolset([Add(), Add2()])
    add, add2 = toolset.tools
    assert add.parameters == Add().parameters
    assert add2.parameters["required"] == ["a", "b"]


def test_contains_and_len_go_by_tool_name() -> None:
    toolset = SimpleToolset([Add(), Echo()])
    assert "add" in toolset
    assert "nope" not in toolset
    assert len(toolset) == 2


def test_remove_returns_the_tool_and_forgets_it() -> None:
    tool = Add()
    toolset = SimpleToolset([tool, Echo()])
    assert toolset.remove("add") is tool
    assert "add" not in toolset
    assert len(toolset) == 1


def test_a_tools_declared_name_description_and_schema_are_readable_on_its_class() -> None:
    toolset = SimpleToolset([Add(), Add2()])
    assert (Add.name, Add.description) == ("add", "Add two integers.")
    assert Add.parameters["required"] == ["a", "b"]
    assert (Add2.name, Add2.params) == ("add2", AddParams)
    toolset.remove(Add.name)
    toolset.remove(Add2.name)
    assert len(toolset) == 0
    with pytest.raises(AttributeError):
        _ = Add.no_such_attribute


def test_remove_unknown_name_raises_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="no tool named `ghost`"):
        SimpleToolset([Add()]).remove("ghost")


def test_duplicate_name_raises_value_error_that_says_how_to_fix_it() -> None:
    toolset = SimpleToolset([Add()])
    with pytest.raises(ValueError, match=r"`add` is already in this toolset.*remove\('add'\)"):
        toolset += Add()
    assert len(toolset) == 1


def test_plus_with_a_duplicate_name_raises_and_leaves_the_original_unchanged() -> None:
    original = SimpleToolset([Add()])
    with pytest.raises(ValueError, match="already"):
        _ = original + Add()
    assert [tool.name for tool in original.tools] == ["add"]


async def test_duplicate_name_keeps_the_first_tool() -> None:
    first = Add()
    toolset = SimpleToolset([first])
    with pytest.raises(ValueError):
        toolset.add(Add())
    assert (await handle(toolset, "add", '{"a": 1, "b": 2}')).output == "3"
    assert first.calls == [(1, 2)]


async def test_remove_then_add_replaces_a_tool() -> None:
    toolset = SimpleToolset([Add()])
    toolset.remove("add")
    replacement = Add()
    toolset += replacement
    await handle(toolset, "add", '{"a": 1, "b": 1}')
    assert replacement.calls == [(1, 1)]


def test_adding_something_that_is_not_a_tool_raises_type_error() -> None:
    with pytest.raises(TypeError, match="CallableTool"):
        SimpleToolset().add("add")  # pyright: ignore[reportArgumentType]


# --- return annotations, checked when a tool is added ------------------------------------------


def test_tool_annotated_to_return_str_is_refused() -> None:
    class Invalid(CallableTool):
        name: str = "invalid"
        description: str = "Invalid tool"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> str:  # pyright: ignore[reportIncompatibleMethodOverride]
            return "invalid"

    with pytest.raises(
        TypeError, match=r"Expected tool `invalid` to return `ToolReturnValue`, but got `.*str.*`"
    ):
        SimpleToolset().add(Invalid())


def test_string_annotation_naming_a_non_tool_type_is_refused() -> None:
    class Invalid(CallableTool):
        name: str = "invalid"
        description: str = "Invalid tool"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> "dict[str, Any]":  # pyright: ignore[reportIncompatibleMethodOverride]
            return {}

    with pytest.raises(TypeError, match="Expected tool `invalid` to return `ToolReturnValue`"):
        SimpleToolset([Invalid()])


def test_subclass_union_and_string_annotations_are_accepted() -> None:
    class ReturnsOk(CallableTool):
        name: str = "ok"
        description: str = "ToolOk"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> ToolOk:
            return ToolOk()

    class ReturnsUnion(CallableTool):
        name: str = "union"
        description: str = "ToolOk | ToolError"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> ToolOk | ToolError:
            return ToolOk()

    class ReturnsString(CallableTool):
        name: str = "string"
        description: str = 'A string annotation, "ToolOk"'
        parameters: ParametersType = OBJECT

        async def __call__(self) -> "ToolOk":
            return ToolOk()

    toolset = SimpleToolset([ReturnsOk(), ReturnsUnion(), ReturnsString()])
    # _tools.py uses `from __future__ import annotations`: all its annotations are strings.
    toolset += Add()
    assert len(toolset) == 4


async def test_missing_annotation_is_accepted_and_checked_at_run_time() -> None:
    class Unannotated(CallableTool):
        name: str = "unannotated"
        description: str = "No return annotation"
        parameters: ParametersType = OBJECT

        async def __call__(self):  # pyright: ignore[reportIncompatibleMethodOverride]
            return 42

    value = await handle(SimpleToolset([Unannotated()]), "unannotated", "{}")
    assert type(value) is ToolError
    assert "int" in value.message


def test_adding_a_tool_whose_string_annotation_names_nothing_resolvable_is_a_type_error() -> None:
    class Unresolvable(CallableTool):
        name: str = "unresolvable"
        description: str = "Names a type that does not exist"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> "NoSuchType":  # noqa: F821  # pyright: ignore[reportUndefinedVariable]
            return ToolOk(output="fine")

    with pytest.raises(TypeError) as caught:
        SimpleToolset([Unresolvable()])
    assert str(caught.value) == (
        "Expected tool `unresolvable` to return `ToolReturnValue`, but got `'NoSuchType'`"
        "; annotate `__call__` with `-> ToolReturnValue` and return ToolOk(output=...) or "
        "ToolError(message=...), or make the tool from a plain function with @tool"
    )


async def test_a_string_annotation_naming_tool_return_value_is_accepted_unimported() -> None:
    # As with `if TYPE_CHECKING: from kosong.tooling import ToolReturnType`: the module never
    # binds the name, yet the annotation plainly names the result type.
    class Named(CallableTool):
        name: str = "named"
        description: str = "Annotated by name only"
        parameters: ParametersType = OBJECT

        async def __call__(self) -> "ToolReturnType":  # noqa: F821  # pyright: ignore[reportUndefinedVariable]
            return ToolOk(output="fine")

    assert (await handle(SimpleToolset([Named()]), "named", "{}")).output == "fine"


# --- handle(): errors found at once --------------------------------------------------------------


async def test_handle_returns_not_found_at_once_for_an_unknown_tool() -> None:
    result = SimpleToolset([Add()]).handle(make_call("nope", "{}", call_id="c7"))
    assert isinstance(result, ToolResult)
    assert result.tool_call_id == "c7"
    assert isinstance(result.return_value, ToolNotFoundError)
    assert result.return_value.message == "Tool `nope` not found"
    assert await result is result  # awaitable like a future


async def test_handle_returns_parse_error_at_once_for_arguments_that_are_not_json() -> None:
    result = SimpleToolset([Add()]).handle(make_call("add", "{a: 1, b: 2}"))
    assert isinstance(result, ToolResult)
    assert isinstance(result.return_value, ToolParseError)


async def test_handle_returns_parse_error_for_trailing_garbage() -> None:
    value = await handle(SimpleToolset([Add()]), "add", '{"a": 1, "b": 2} garbage')
    assert isinstance(value, ToolParseError)
    assert "Extra data" in value.message


@pytest.mark.parametrize("tool", [Weather(), Weather2()], ids=["CallableTool", "CallableTool2"])
async def test_handle_validate_error_names_a_missing_field(tool: Any) -> None:
    value = await handle(SimpleToolset([tool]), tool.name, '{"units": "celsius"}')
    assert isinstance(value, ToolValidateError)
    assert "location" in value.message
    assert tool.calls == []


@pytest.mark.parametrize("tool", [Weather(), Weather2()], ids=["CallableTool", "CallableTool2"])
async def test_handle_validate_error_names_a_nested_field(tool: Any) -> None:
    arguments = '{"location": {"latitude": "north", "longitude": 2.35}}'
    value = await handle(SimpleToolset([tool]), tool.name, arguments)
    assert isinstance(value, ToolValidateError)
    assert "location.latitude" in value.message
    assert tool.calls == []


@pytest.mark.parametrize("tool", [Add(), Add2()], ids=["CallableTool", "CallableTool2"])
async def test_handle_validate_error_names_a_wrongly_typed_field(tool: Any) -> None:
    value = await handle(SimpleToolset([tool]), tool.name, '{"a": 1, "b": "two"}')
    assert isinstance(value, ToolValidateError)
    assert value.message.startswith("Error validating JSON arguments: b: ")


# --- handle(): the tool raises -----------------------------------------------------------------


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken too")


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("bad value"), "Error running tool: ValueError: bad value"),
        (SystemExit(3), "Error running tool: SystemExit: 3"),
        (SystemExit(), "Error running tool: SystemExit"),
        (TimeoutError(), "Error running tool: TimeoutError"),
        (BrokenStr(), "Error running tool: BrokenStr: <str() failed with RuntimeError>"),
    ],
    ids=["text", "system-exit", "system-exit-no-code", "empty-text", "broken-str"],
)
async def test_tool_exception_becomes_runtime_error_keeping_type_and_text(
    exc: BaseException, expected: str, sync: bool
) -> None:
    value = await handle(SimpleToolset([raising_tool(exc, sync=sync)]), "raises", "{}")
    assert isinstance(value, ToolRuntimeError)
    assert value.message == expected


async def test_sys_exit_inside_a_tool_does_not_stop_the_process() -> None:
    class Quits(CallableTool):
        name: str = "quits"
        description: str = "Calls sys.exit."
        parameters: ParametersType = OBJECT

        async def __call__(self) -> ToolReturnValue:
            sys.exit("bye")

    value = await handle(SimpleToolset([Quits()]), "quits", "{}")
    assert value.message == "Error running tool: SystemExit: bye"


def test_keyboard_interrupt_in_a_tool_is_deliberately_let_through_to_stop_the_program() -> None:
    toolset = SimpleToolset([raising_tool(KeyboardInterrupt())])

    async def main() -> None:
        await toolset.handle(make_call("raises", "{}"))

    # Its own event loop, so the interrupt stops that loop and not the test runner's.
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(main())


async def test_tool_returning_a_non_tool_return_value_gives_a_tool_error() -> None:
    class ReturnsList(CallableTool):
        name: str = "returns_list"
        description: str = "Returns a list."
        parameters: ParametersType = OBJECT

        async def __call__(self):  # pyright: ignore[reportIncompatibleMethodOverride]
            return ["not", "a", "result"]

    value = await handle(SimpleToolset([ReturnsList()]), "returns_list", "{}")
    assert type(value) is ToolError
    assert "returns_list" in value.message
    assert "list" in value.message


# --- handle() never raises -----------------------------------------------------------------------


def test_handle_outside_a_running_event_loop_returns_an_error_result() -> None:
    result = SimpleToolset([Add()]).handle(make_call("add", '{"a": 1, "b": 2}'))
    assert isinstance(result, ToolResult)
    assert isinstance(result.return_value, ToolError)
    assert "event loop" in result.return_value.message
    gc.collect()  # a coroutine left un-awaited would warn here (and fail: warnings are errors)


class HostileCall:
    """Not a ToolCall; every attribute access raises."""

    def __getattr__(self, name: str) -> Any:
        raise ValueError(f"no {name} for you")


@pytest.mark.parametrize(
    "garbage",
    [None, "add", 42, {"id": "x", "function": {"name": "add"}}, HostileCall()],
    ids=["none", "str", "int", "dict", "hostile"],
)
async def test_handle_returns_an_error_result_for_something_that_is_not_a_tool_call(
    garbage: Any,
) -> None:
    result = await SimpleToolset([Add()]).handle(garbage)
    assert isinstance(result, ToolResult)
    assert isinstance(result.return_value, ToolError)
    assert result.return_value.is_error


def test_find_tool_returns_the_definition_or_none() -> None:
    toolset = SimpleToolset([Add(), Add2()])
    found = toolset.find_tool(Add2().name)
    assert found is not None and found.name == Add2().name
    assert toolset.find_tool("missing") is None


async def test_run_call_runs_a_resolved_call_in_the_current_task_and_never_raises() -> None:
    seen: list[asyncio.Task[Any] | None] = []

    class WhichTask(CallableTool):
        name: str = "which_task"
        description: str = "Records the task it runs in."
        parameters: ParametersType = OBJECT

        async def __call__(self) -> ToolReturnValue:
            seen.append(asyncio.current_task())
            return ToolOk(output="ok")

    toolset = SimpleToolset([Echo(), WhichTask()])
    echo, which = toolset.find_tool("echo"), toolset.find_tool("which_task")
    assert echo is not None and which is not None
    ok = await toolset.run_call(make_call("echo", '{"text": "hi"}'), echo, {"text": "hi"})
    assert ok.return_value.extras == {"arguments": {"text": "hi"}}
    await toolset.run_call(make_call("which_task", "{}"), which, {})
    assert seen == [asyncio.current_task()]  # no task of its own
    invalid = await toolset.run_call(make_call("echo", "[3]"), echo, [3])
    assert isinstance(invalid.return_value, ToolValidateError)
    toolset.remove("echo")  # removed after the call was resolved
    missing = await toolset.run_call(make_call("echo", "{}"), echo, {"text": "hi"})
    assert isinstance(missing.return_value, ToolNotFoundError)
