"""No result is shared by reference between callers.

Where a pipeline hands one value to several callers, each gets a copy of its own: a cache hit
(memory or Redis) and a single-flight follower share nothing mutable with any other caller, so
changing a result you received changes nothing any other caller gets. A call's metadata is its
own and read-only. A call no one shares is handed the value its tool made, without a copy.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import PrivateAttr

from kosong.message import TextPart
from kosong.standard import with_policies
from kosong.standard._values import shared_copy
from kosong.standard.policies import CachePolicy, RedisCache, RetryPolicy, SingleFlightPolicy
from kosong.testing import ScriptedTool
from kosong.tooling import BriefDisplayBlock, ToolError, ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolNetworkError
from tests.standard._std_tools import Blocking, make_call, toolset


def rich_result() -> ToolReturnValue:
    result = ToolOk(
        output=[TextPart(text="a picture")],
        brief="done",
        extras={"rows": [{"id": 1}], "source": {"name": "db"}},
    )
    result.artifact = {"frame": [1, 2, 3]}
    return result


def vandalise(result: ToolResult) -> None:
    """Change everything mutable in a result, in place."""
    value = result.return_value
    assert isinstance(value.output, list)
    value.output[0].text = "vandalised"  # type: ignore[attr-defined]
    value.output.append(TextPart(text="extra"))
    value.display.append(BriefDisplayBlock(text="extra"))
    value.display[0].text = "vandalised"  # type: ignore[attr-defined]
    assert value.extras is not None
    value.extras["rows"].append({"id": 2})  # type: ignore[union-attr]
    value.extras["source"]["name"] = "vandalised"  # type: ignore[index]
    value.artifact["frame"].append(4)


def assert_pristine(result: ToolResult) -> None:
    value = result.return_value
    assert value.output == [TextPart(text="a picture")]
    assert value.brief == "done" and len(value.display) == 1
    assert value.extras is not None
    assert value.extras["rows"] == [{"id": 1}] and value.extras["source"] == {"name": "db"}
    assert result.metadata is not None and result.metadata["tool_name"] == "lookup"
    assert value.artifact == {"frame": [1, 2, 3]}


def lookup(script: Any = None) -> ScriptedTool:
    return ScriptedTool(
        "lookup",
        script if script is not None else (lambda n: rich_result()),
        cacheable=True,
        read_only_hint=True,
    )


async def test_no_result_is_shared_between_cache_hits_in_memory() -> None:
    pipeline = with_policies(toolset(lookup()), CachePolicy())
    first = await pipeline.handle(make_call("lookup", {"q": 1}))
    vandalise(first)
    second = await pipeline.handle(make_call("lookup", {"q": 1}))
    assert second.metadata is not None and second.metadata["cache"]["hit"]  # type: ignore[index]
    assert_pristine(second)
    vandalise(second)
    assert_pristine(await pipeline.handle(make_call("lookup", {"q": 1})))


async def test_no_result_is_shared_between_cache_hits_through_redis(redis_url: str) -> None:
    backend = RedisCache.from_url(redis_url, prefix="kosong:test-copies:")
    try:
        pipeline = with_policies(toolset(lookup()), CachePolicy(backend))
        first = await pipeline.handle(make_call("lookup", {"q": 1}))
        vandalise(first)
        second = await pipeline.handle(make_call("lookup", {"q": 1}))
        assert second.return_value.output == [TextPart(text="a picture")]
        assert second.return_value.extras["rows"] == [{"id": 1}]  # type: ignore[index]
        vandalise_text = second.return_value.extras["rows"]  # type: ignore[index]
        vandalise_text.append({"id": 9})  # type: ignore[union-attr]
        third = await pipeline.handle(make_call("lookup", {"q": 1}))
        assert third.return_value.extras["rows"] == [{"id": 1}]  # type: ignore[index]
    finally:
        await backend.clear()
        await backend.aclose()


async def test_no_result_is_shared_between_single_flight_followers() -> None:
    gate = asyncio.Event()

    async def slow(n: int) -> ToolReturnValue:
        await gate.wait()
        return rich_result()

    tool = lookup(slow)
    pipeline = with_policies(toolset(tool, Blocking()), SingleFlightPolicy())
    pending = [pipeline.handle(make_call("lookup", {"q": 1}, f"c{i}")) for i in range(3)]
    await asyncio.wait_for(tool.wait_calls(1), 5)
    await asyncio.sleep(0)  # let the followers join
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*pending), 5)
    assert tool.calls == 1
    vandalise(results[0])
    assert_pristine(results[1])
    vandalise(results[1])
    assert_pristine(results[2])


async def test_a_retried_call_hands_out_the_value_of_its_last_attempt_uncopied() -> None:
    made: list[ToolReturnValue] = []

    def script(n: int) -> ToolReturnValue:
        made.append(ToolNetworkError("flaky") if n == 0 else rich_result())
        return made[-1]

    tool = lookup(script)
    pipeline = with_policies(toolset(tool), RetryPolicy(base_delay=0.001))
    first = await pipeline.handle(make_call("lookup", {"q": 1}))
    assert tool.calls == 2
    # Nobody else holds the value the last attempt made: it is handed out as it is.
    assert first.return_value is made[1]
    assert_pristine(first)
    # The next call's tool makes a value of its own, which the first caller cannot touch.
    vandalise(first)
    second = await pipeline.handle(make_call("lookup", {"q": 1}))
    assert second.return_value is made[2]
    assert_pristine(second)


@pytest.mark.parametrize(
    "value",
    [
        ToolOk(output="3"),
        ToolError(message="no", brief="failed", extras={"a": [1]}),
        rich_result(),
        ToolNetworkError("down"),
    ],
)
def test_a_shared_copy_equals_the_value_and_shares_nothing_mutable(
    value: ToolReturnValue,
) -> None:
    copied = shared_copy(value)
    assert type(copied) is type(value)
    assert copied == value
    assert copied.model_fields_set == value.model_fields_set
    assert copied.model_dump() == value.model_dump()
    assert copied is not value and copied.display is not value.display
    assert copied.extras is None or copied.extras is not value.extras
    assert copied.artifact == value.artifact


def test_a_result_with_private_attributes_is_copied_with_them() -> None:
    class WithState(ToolOk):
        _secret: int = PrivateAttr(default=7)

    value = WithState(output="x")  # pyright: ignore[reportCallIssue] - ToolOk.__init__ applies
    copied = shared_copy(value)
    assert copied._secret == 7 and copied.output == "x"
