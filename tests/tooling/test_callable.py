"""CallableTool: how JSON arguments become a call, validation before the call, sync tools."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pydantic import BaseModel

from kosong.tooling import CallableTool, CallableTool2, ParametersType, ToolError, ToolOk
from kosong.tooling.error import ToolValidateError
from tests.tooling._tools import Add, Echo, Shout, Weather


class Join(CallableTool):
    """An array schema: the elements become positional arguments."""

    name: str = "join"
    description: str = "Join two words."
    parameters: ParametersType = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "string"}],
        "minItems": 1,
    }

    async def __call__(self, first: str, second: str = "") -> ToolOk:
        return ToolOk(output=f"{first}+{second}")


class Square(CallableTool):
    """A number schema: the number is the one argument."""

    name: str = "square"
    description: str = "Square a number."
    parameters: ParametersType = {"type": "number"}

    async def __call__(self, x: float) -> ToolOk:
        return ToolOk(output=str(x * x))


class OnlyA(CallableTool):
    """The schema allows any property, but `__call__` takes only `a`."""

    name: str = "only_a"
    description: str = "Takes a."
    parameters: ParametersType = {"type": "object"}

    async def __call__(self, a: int) -> ToolOk:
        return ToolOk(output=str(a))


class SyncThreadReporter(CallableTool):
    """A plain (non-async) `__call__`: reports the thread it runs on."""

    name: str = "sync_thread"
    description: str = "Reports its thread."
    parameters: ParametersType = {"type": "object", "properties": {"a": {"type": "integer"}}}

    def __call__(self, a: int = 0) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        return ToolOk(output=str(a), extras={"thread": threading.get_ident(), "on_loop": on_loop})


class SyncOnlyA(CallableTool):
    name: str = "sync_only_a"
    description: str = "Takes a, synchronously."
    parameters: ParametersType = {"type": "object"}

    def __call__(self, a: int) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
        return ToolOk(output=str(a))


class ReturnsText(CallableTool):
    name: str = "returns_text"
    description: str = "Returns a plain string, which is a bug."
    parameters: ParametersType = {"type": "object"}

    # No annotation: the result is checked when it arrives.
    async def __call__(self):  # pyright: ignore[reportIncompatibleMethodOverride]
        return "just a string"


class SyncReturnsDict(CallableTool):
    name: str = "sync_returns_dict"
    description: str = "Returns a dict, which is a bug."
    parameters: ParametersType = {"type": "object"}

    def __call__(self):  # pyright: ignore[reportIncompatibleMethodOverride]
        return {"output": "not a ToolReturnValue"}


class NoParams(BaseModel):
    pass


class SyncThreadReporter2(CallableTool2[NoParams]):
    name: str = "sync_thread2"
    description: str = "Reports its thread."
    params: type[NoParams] = NoParams

    def __call__(self, params: NoParams) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
        return ToolOk(extras={"thread": threading.get_ident()})


# --- how arguments are passed ------------------------------------------------------------------


async def test_json_object_becomes_keyword_arguments() -> None:
    tool = Add()
    result = await tool.call({"b": 2, "a": 40})
    assert result == ToolOk(output="42")
    assert tool.calls == [(40, 2)]


async def test_json_array_becomes_positional_arguments() -> None:
    assert (await Join().call(["left", "right"])).output == "left+right"
    assert (await Join().call(["alone"])).output == "alone+"


async def test_json_scalar_becomes_one_argument() -> None:
    assert (await Square().call(3)).output == "9"
    assert (await Square().call(1.5)).output == "2.25"


async def test_json_string_becomes_one_argument_for_a_string_schema() -> None:
    tool = Shout()
    assert (await tool.call("hello")).output == "HELLO"
    assert tool.calls == ["hello"]


async def test_keys_that_are_not_identifiers_reach_var_keyword_arguments() -> None:
    tool = Echo()
    result = await tool.call({"max-results": 3, "": None})
    assert result.extras == {"arguments": {"max-results": 3, "": None}}


# --- validation happens before the call ----------------------------------------------------------


async def test_arguments_failing_the_schema_never_reach_the_tool_body() -> None:
    tool = Add()
    for bad in [{"a": "one", "b": 2}, {"a": 1}, {"a": 1, "b": 2, "c": 3}, [1, 2], "1", None]:
        result = await tool.call(bad)
        assert isinstance(result, ToolValidateError), bad
    assert tool.calls == []


async def test_schema_error_names_a_missing_required_field() -> None:
    tool = Weather()
    result = await tool.call({"units": "celsius"})
    assert isinstance(result, ToolValidateError)
    assert "location" in result.message
    assert tool.calls == []


async def test_schema_error_names_the_nested_field_with_its_path() -> None:
    tool = Weather()
    result = await tool.call({"location": {"latitude": "north", "longitude": 2.35}})
    assert isinstance(result, ToolValidateError)
    assert "location.latitude" in result.message
    assert "north" in result.message
    assert tool.calls == []


async def test_unexpected_keyword_is_a_validate_error_naming_it() -> None:
    result = await OnlyA().call({"a": 1, "surprise": 2})
    assert isinstance(result, ToolValidateError)
    assert "surprise" in result.message


async def test_missing_argument_for_the_signature_is_a_validate_error() -> None:
    result = await OnlyA().call({})
    assert isinstance(result, ToolValidateError)
    assert "'a'" in result.message


async def test_too_many_positional_arguments_is_a_validate_error() -> None:
    result = await Join().call(["a", "b", "c"])
    assert isinstance(result, ToolValidateError)
    assert "positional" in result.message


async def test_sync_tool_signature_mismatch_is_a_validate_error_naming_it() -> None:
    result = await SyncOnlyA().call({"a": 1, "surprise": 2})
    assert isinstance(result, ToolValidateError)
    assert "surprise" in result.message


# --- plain (non-async) __call__ ------------------------------------------------------------------


async def test_plain_call_runs_in_a_worker_thread_not_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    result = await SyncThreadReporter().call({"a": 5})
    assert result.output == "5"
    assert result.extras is not None
    assert result.extras["thread"] != loop_thread
    assert result.extras["on_loop"] is False


async def test_plain_call_of_callable_tool2_runs_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    result = await SyncThreadReporter2().call({})
    assert result.extras is not None
    assert result.extras["thread"] != loop_thread


# --- the return value is checked -----------------------------------------------------------------


async def test_tool_returning_a_string_gives_a_tool_error() -> None:
    result = await ReturnsText().call({})
    assert type(result) is ToolError
    assert result.is_error
    assert "returns_text" in result.message
    assert "str" in result.message


async def test_sync_tool_returning_a_dict_gives_a_tool_error() -> None:
    result = await SyncReturnsDict().call({})
    assert type(result) is ToolError
    assert "dict" in result.message


async def test_tool_result_is_returned_as_is() -> None:
    result: Any = await Add().call({"a": 1, "b": 1})
    assert type(result) is ToolOk
    assert result.output == "2"


async def test_an_external_tool_validates_its_arguments_then_defers_to_its_caller() -> None:
    from kosong.tooling.error import ToolDeferredError

    class Pick(CallableTool):
        name: str = "pick"
        description: str = "Picked by the user, in the browser."
        parameters: ParametersType = {
            "type": "object",
            "properties": {"hint": {"type": "string"}},
            "required": ["hint"],
        }
        external: bool | None = True

        async def __call__(self, hint: str) -> ToolOk:
            raise AssertionError("an external tool's body never runs")

    pick = Pick()
    assert isinstance(await pick.call({"hint": 3}), ToolValidateError)
    deferred = await pick.call({"hint": "warm"})
    assert isinstance(deferred, ToolDeferredError) and deferred.kind == "external"
    assert pick.base.model_dump()["external"] is True  # the definition says so
