"""RepeatGuardPolicy: the same call, made too often, is stopped with a clear error."""

from __future__ import annotations

from typing import Any

import pytest

from kosong.standard import error_code, with_policies
from kosong.standard.policies import RepeatGuardPolicy
from kosong.tooling import ToolOk
from tests.standard._std_tools import Scripted, Weather, make_call, toolset


def searching() -> Scripted:
    return Scripted(lambda n: ToolOk(output="no results"), name="search")


async def output_of(pipeline: Any, arguments: Any) -> tuple[str | None, str]:
    value = (await pipeline.handle(make_call("search", arguments))).return_value
    return error_code(value), value.message


# Without a window the guard counts calls; with one it keeps their times. Same rules.
WINDOWS = pytest.mark.parametrize("window", [None, 3600.0])


@WINDOWS
async def test_the_call_after_the_limit_is_refused_with_a_message_for_the_model(
    window: float | None,
) -> None:
    tool = searching()
    pipeline = with_policies(toolset(tool), RepeatGuardPolicy(3, window=window))
    for _ in range(3):
        assert (await output_of(pipeline, {"q": "x", "page": 1}))[0] is None
    code, message = await output_of(pipeline, {"page": 1, "q": "x"})  # same, reordered
    assert code == "REPEATED_CALL"
    assert "already called 3 times with exactly these arguments" in message
    assert "change the arguments, or take another approach" in message
    assert tool.calls == 3


async def test_other_arguments_are_counted_apart() -> None:
    tool = searching()
    pipeline = with_policies(toolset(tool), RepeatGuardPolicy(1))
    assert (await output_of(pipeline, {"q": "a"}))[0] is None
    assert (await output_of(pipeline, {"q": "b"}))[0] is None
    assert (await output_of(pipeline, {"q": "a"}))[0] == "REPEATED_CALL"


async def test_only_calls_within_the_window_count() -> None:
    now = [0.0]
    pipeline = with_policies(
        toolset(searching()), RepeatGuardPolicy(2, window=60, clock=lambda: now[0])
    )
    await output_of(pipeline, {"q": "a"})
    now[0] = 30
    await output_of(pipeline, {"q": "a"})
    assert (await output_of(pipeline, {"q": "a"}))[0] == "REPEATED_CALL"
    now[0] = 61  # the first call has left the window
    assert (await output_of(pipeline, {"q": "a"}))[0] is None


@WINDOWS
async def test_reset_forgets_the_counts(window: float | None) -> None:
    guard = RepeatGuardPolicy(1, window=window)
    pipeline = with_policies(toolset(searching()), guard)
    await output_of(pipeline, {"q": "a"})
    guard.reset()
    assert (await output_of(pipeline, {"q": "a"}))[0] is None


async def test_exempt_tools_are_never_refused() -> None:
    pipeline = with_policies(toolset(searching()), RepeatGuardPolicy(1, exempt={"search"}))
    for _ in range(5):
        assert (await output_of(pipeline, {"q": "a"}))[0] is None


@WINDOWS
async def test_only_the_newest_distinct_calls_are_remembered(window: float | None) -> None:
    guard = RepeatGuardPolicy(1, max_tracked=2, window=window)
    pipeline = with_policies(toolset(searching()), guard)
    for q in ("a", "b", "c"):
        await output_of(pipeline, {"q": q})
    assert (await output_of(pipeline, {"q": "a"}))[0] is None  # "a" was forgotten
    assert (await output_of(pipeline, {"q": "c"}))[0] == "REPEATED_CALL"


@WINDOWS
async def test_a_repeated_call_counts_as_recent(window: float | None) -> None:
    pipeline = with_policies(
        toolset(searching()), RepeatGuardPolicy(1, max_tracked=2, window=window)
    )
    for q in ("a", "b", "a", "c"):  # the refused "a" is the newest but one when "c" comes
        await output_of(pipeline, {"q": q})
    assert (await output_of(pipeline, {"q": "a"}))[0] == "REPEATED_CALL"
    assert (await output_of(pipeline, {"q": "b"}))[0] is None  # "b" was forgotten


async def test_arguments_the_toolset_refuses_are_not_counted_and_stay_invalid_params() -> None:
    tool = searching()
    pipeline = with_policies(toolset(tool), RepeatGuardPolicy(1))
    for _ in range(3):  # never run, so never a repeat: the model reads the parse error each time
        assert (await output_of(pipeline, "{broken"))[0] == "INVALID_PARAMS"


@pytest.mark.parametrize("kwargs", [{"max_identical_calls": 0}, {"window": 0}, {"max_tracked": 0}])
def test_invalid_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RepeatGuardPolicy(**kwargs)


async def test_long_arguments_parsed_off_the_loop_are_counted_too() -> None:
    guard = RepeatGuardPolicy(1)
    tool = Weather()
    pipeline = with_policies(toolset(tool), guard)
    long_location = "x" * 300_000  # past the length parsed in a worker thread
    first = await pipeline.handle(make_call("get_weather", {"location": long_location}))
    second = await pipeline.handle(make_call("get_weather", {"location": long_location}))
    assert not first.return_value.is_error
    assert second.return_value.is_error
    assert len(tool.calls) == 1
