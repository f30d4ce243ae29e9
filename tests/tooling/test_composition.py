"""The composition wrappers: combined, filtered, prefixed, renamed, prepared, over any toolset."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong.message import ToolCall
from kosong.testing import ScriptedTool, make_call
from kosong.tooling import (
    ArgumentLimits,
    BaseToolset,
    CallableTool,
    HandleResult,
    ParametersType,
    Tool,
    ToolOk,
    ToolResult,
    ToolReturnValue,
    Toolset,
    combined,
    filtered,
    prefixed,
    prepared,
    renamed,
)
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType


class Named(CallableTool):
    """Answers with its own name and its argument, so a test sees which tool ran."""

    parameters: ParametersType = {"type": "object", "properties": {"n": {"type": "integer"}}}

    async def __call__(self, n: int = 0) -> ToolReturnValue:
        return ToolOk(output=f"{self.name}:{n}")


def tools(*names: str) -> SimpleToolset:
    return SimpleToolset([Named(name=name, description=f"The tool {name}.") for name in names])


async def output(toolset: Toolset, name: str, n: int = 0) -> str:
    result = await toolset.handle(make_call(name, {"n": n}, call_id="outer-id"))
    assert result.tool_call_id == "outer-id"
    value = result.return_value
    if value.is_error:
        return f"error {type(value).__name__}"
    assert isinstance(value.output, str)
    return value.output


def names_of(toolset: Toolset) -> list[str]:
    return [tool.name for tool in toolset.tools]


class Plain:
    """A user's own toolset: only `tools` and `handle`, parsing its own arguments."""

    def __init__(self, *names: str) -> None:
        self.definitions = [
            Tool(name=name, description=f"Plain {name}.", parameters={"type": "object"})
            for name in names
        ]
        self.calls: list[ToolCall] = []

    @property
    def tools(self) -> list[Tool]:
        return list(self.definitions)

    def handle(self, tool_call: ToolCall) -> HandleResult:
        self.calls.append(tool_call)
        arguments = json.loads(tool_call.function.arguments or "{}")
        return ToolResult(
            tool_call.id, ToolOk(output=f"plain {tool_call.function.name} {arguments}")
        )


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
NAME_SETS = st.lists(NAMES, min_size=1, max_size=8, unique=True)
PREFIXES = st.from_regex(r"[a-z][a-z0-9]{0,5}_", fullmatch=True)


# --- laws, over random tool sets --------------------------------------------------------------


@given(names=NAME_SETS, prefix=PREFIXES)
@settings(max_examples=40, deadline=None)
async def test_prefixed_names_are_the_originals_with_the_prefix_and_reach_their_tool(
    names: list[str], prefix: str
) -> None:
    toolset = prefixed(tools(*names), prefix)
    shown = names_of(toolset)
    assert shown == [prefix + name for name in names]
    assert [name.removeprefix(prefix) for name in shown] == names
    for name in names:
        assert await output(toolset, prefix + name, 7) == f"{name}:7"
        if name not in shown:  # the bare name is not one of the wrapper's
            assert await output(toolset, name) == "error ToolNotFoundError"


@given(names=NAME_SETS, prefix=PREFIXES, data=st.data())
@settings(max_examples=40, deadline=None)
async def test_filtering_commutes_with_prefixing(
    names: list[str], prefix: str, data: st.DataObject
) -> None:
    keep = data.draw(st.sets(st.sampled_from(names)))
    base = tools(*names)
    filter_then_prefix = prefixed(filtered(base, keep), prefix)
    prefix_then_filter = filtered(
        prefixed(base, prefix), lambda tool: tool.name.removeprefix(prefix) in keep
    )
    assert names_of(filter_then_prefix) == names_of(prefix_then_filter)
    assert names_of(filter_then_prefix) == [prefix + n for n in names if n in keep]
    for name in names:
        one = await output(filter_then_prefix, prefix + name)
        other = await output(prefix_then_filter, prefix + name)
        assert one == other == (f"{name}:0" if name in keep else "error ToolNotFoundError")


@given(both=st.lists(NAMES, min_size=2, max_size=10, unique=True), data=st.data())
@settings(max_examples=40, deadline=None)
async def test_combined_disjoint_toolsets_list_their_union_and_route_each_call(
    both: list[str], data: st.DataObject
) -> None:
    split = data.draw(st.integers(1, len(both) - 1))
    first, second = both[:split], both[split:]
    toolset = combined(tools(*first), Plain(*second))
    assert names_of(toolset) == first + second
    for name in first:
        assert await output(toolset, name, 3) == f"{name}:3"
    for name in second:
        assert await output(toolset, name, 3) == f"plain {name} {{'n': 3}}"


@given(names=NAME_SETS, data=st.data())
@settings(max_examples=40, deadline=None)
def test_combined_toolsets_sharing_a_name_raise(names: list[str], data: st.DataObject) -> None:
    shared = data.draw(st.sampled_from(names))
    with pytest.raises(ValueError, match=shared):
        combined(tools(*names), tools(shared))


@given(names=NAME_SETS, data=st.data())
@settings(max_examples=40, deadline=None)
async def test_renaming_and_renaming_back_gives_the_original_toolset(
    names: list[str], data: st.DataObject
) -> None:
    olds = data.draw(st.lists(st.sampled_from(names), unique=True))
    news = data.draw(
        st.lists(
            NAMES.filter(lambda n: n not in names), min_size=len(olds), max_size=len(olds),
            unique=True,
        )
    )  # fmt: skip
    mapping = dict(zip(olds, news, strict=True))
    there = renamed(tools(*names), mapping)
    assert names_of(there) == [mapping.get(n, n) for n in names]
    back = renamed(there, {new: old for old, new in mapping.items()})
    assert names_of(back) == names
    for name in names:
        assert await output(there, mapping.get(name, name)) == f"{name}:0"
        assert await output(back, name) == f"{name}:0"


@given(names=st.lists(NAMES, min_size=2, max_size=8, unique=True), data=st.data())
@settings(max_examples=40, deadline=None)
def test_renaming_onto_a_name_in_use_raises(names: list[str], data: st.DataObject) -> None:
    old, taken = data.draw(st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True))
    with pytest.raises(ValueError, match=f"`{taken}`"):
        renamed(tools(*names), {old: taken})


# --- the toolset contract -------------------------------------------------------------------


async def test_a_call_to_a_filtered_out_tool_is_not_found() -> None:
    toolset = SimpleToolset(
        [Named(name="read", description="r"), Named(name="rm", description="d")]
    )
    kept = toolset.filtered(["read"])
    by_predicate = toolset.filtered(lambda tool: tool.name != "rm")
    for wrapper in (kept, by_predicate):
        assert names_of(wrapper) == ["read"]
        assert wrapper.find_tool("rm") is None
        assert await output(wrapper, "rm") == "error ToolNotFoundError"
        assert await output(wrapper, "read", 2) == "read:2"


def test_filtered_refuses_a_single_string_of_names() -> None:
    with pytest.raises(TypeError, match=r"\['read'\]"):
        filtered(tools("read"), "read")  # a str is an iterable of letters: surely a mistake


async def test_methods_chain_on_every_toolset_kosong_ships() -> None:
    chained = tools("a", "b", "c").filtered(["a", "b"]).prefixed("x_").renamed({"x_b": "bee"})
    assert names_of(chained) == ["x_a", "bee"]
    assert await output(chained, "bee", 1) == "b:1"
    both = chained.combined(tools("z"))
    assert names_of(both) == ["x_a", "bee", "z"]
    from kosong.mcp import MCPToolset
    from kosong.remote import RemoteToolset
    from kosong.standard import PolicyToolset
    from kosong.tooling.empty import EmptyToolset

    for shipped in (SimpleToolset, EmptyToolset, MCPToolset, RemoteToolset, PolicyToolset):
        assert issubclass(shipped, BaseToolset)
    assert names_of(EmptyToolset().combined(tools("a")).prefixed("p_")) == ["p_a"]


async def test_a_renamed_call_reaches_a_plain_toolset_under_its_own_name_and_text() -> None:
    plain = Plain("search")
    toolset = renamed(plain, {"search": "find"})
    call = make_call("find", '{"n": 1, "q": "x"}', call_id="the-call")
    result = await toolset.handle(call)
    assert result.tool_call_id == "the-call"
    assert result.return_value.output == "plain search {'n': 1, 'q': 'x'}"
    (seen,) = plain.calls
    assert seen.id == "the-call" and seen.function.name == "search"
    assert seen.function.arguments == '{"n": 1, "q": "x"}'  # the model's own text, untouched


class Recording(BaseToolset):
    """A toolset on the dispatcher that records what `call_tool` receives."""

    def __init__(self) -> None:
        self.seen: list[tuple[ToolCall, Tool, JsonType]] = []

    @property
    def tools(self) -> list[Tool]:
        return [Tool(name="inner", description="Records.", parameters={"type": "object"})]

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        self.seen.append((call, tool, arguments))
        return ToolResult("an-id-of-its-own", ToolOk(output="recorded"))


async def test_a_wrapper_hands_the_parsed_arguments_on_without_parsing_them_again() -> None:
    inner = Recording()
    toolset = prefixed(renamed(inner, {"inner": "mid"}), "out_")
    arguments: JsonType = {"deep": [1, {"x": "y"}]}
    call = ToolCall(id="c1", function=ToolCall.FunctionBody(name="out_mid", arguments=None))
    result = await toolset.dispatch(call, arguments)
    (seen,) = inner.seen
    assert seen[2] is arguments  # the very value: never written out and read again
    assert seen[0].function.name == "inner" and seen[1].name == "inner"
    # The result comes back under the caller's id, whatever id the inner toolset gave it.
    assert result.tool_call_id == "c1" and result.return_value.output == "recorded"


async def test_handle_never_raises_when_a_predicate_or_prepare_function_fails() -> None:
    def broken_predicate(tool: Tool) -> bool:
        raise RuntimeError("predicate broke")

    def broken_prepare(given: list[Tool]) -> list[Tool]:
        raise RuntimeError("prepare broke")

    for toolset in (filtered(tools("a"), broken_predicate), prepared(tools("a"), broken_prepare)):
        result = await toolset.handle(make_call("a", {}, call_id="c"))
        assert result.tool_call_id == "c" and result.return_value.is_error
        assert "broke" in result.return_value.message


async def test_a_name_two_parts_come_to_share_is_left_out_and_not_found(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = tools("a", "b"), tools("c")
    toolset = combined(first, second)
    second.add(Named(name="a", description="A second `a`, gained after construction."))
    with caplog.at_level(logging.WARNING):
        assert names_of(toolset) == ["b", "c"]
        assert await output(toolset, "a") == "error ToolNotFoundError"
    assert "`a` is now the name of tools in two of them" in caplog.text
    first.remove("a")  # the clash is gone: the name works again
    assert names_of(toolset) == ["b", "c", "a"] and await output(toolset, "a") == "a:0"


async def test_a_rename_target_the_toolset_comes_to_have_is_left_out() -> None:
    inner = tools("old")
    toolset = renamed(inner, {"old": "new"})
    inner.add(Named(name="new", description="Gained later, with the renamed tool's new name."))
    assert names_of(toolset) == []
    assert await output(toolset, "new") == "error ToolNotFoundError"
    inner.remove("new")
    assert await output(toolset, "new") == "old:0"


async def test_a_swap_of_names_is_no_clash() -> None:
    toolset = renamed(tools("a", "b"), {"a": "b", "b": "a"})
    assert names_of(toolset) == ["b", "a"]
    assert await output(toolset, "a") == "b:0" and await output(toolset, "b") == "a:0"


def test_a_prefix_that_cannot_start_a_name_or_makes_one_too_long_raises() -> None:
    with pytest.raises(ValueError, match="cannot start a tool name"):
        prefixed(tools("a"), "1_")
    with pytest.raises(ValueError, match="not valid"):
        prefixed(tools("a" * 60), "long_prefix_")


async def test_a_tool_gained_later_whose_prefixed_name_is_too_long_is_left_out() -> None:
    inner = tools("short")
    toolset = prefixed(inner, "p_")
    inner.add(Named(name="x" * 63, description="Too long once prefixed."))
    assert names_of(toolset) == ["p_short"]
    assert await output(toolset, "p_" + "x" * 63) == "error ToolNotFoundError"


def test_two_old_names_given_one_new_name_raise() -> None:
    with pytest.raises(ValueError, match="both renamed `c`"):
        renamed(tools("a", "b"), {"a": "c", "b": "c"})


async def test_prepare_is_applied_at_each_read_and_calls_follow_the_last_list() -> None:
    step = 0

    def prepare(given: list[Tool]) -> list[Tool]:
        # Step 0 shows only `a`, with a description of its own; later steps show only `b`.
        if step == 0:
            return [given[0].model_copy(update={"description": "A, for now."})]
        return [tool for tool in given if tool.name == "b"]

    inner = tools("a", "b")
    toolset = inner.prepared(prepare)
    shown = toolset.tools
    assert [(t.name, t.description) for t in shown] == [("a", "A, for now.")]
    original = inner.find_tool("a")
    assert original is not None and original.description == "The tool a."  # not changed
    assert await output(toolset, "a") == "a:0"
    assert await output(toolset, "b") == "error ToolNotFoundError"
    step = 1
    assert names_of(toolset) == ["b"]
    assert await output(toolset, "a") == "error ToolNotFoundError"
    assert await output(toolset, "b", 4) == "b:4"


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda given: [*given, *given], "twice"),
        (lambda given: [Tool(name="ghost", description="g", parameters={})], "does not have"),
        (lambda given: ["a"], "not a Tool"),
    ],
)
def test_a_prepare_function_returning_what_cannot_be_called_raises(
    prepare: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _ = prepared(tools("a"), prepare).tools


async def test_a_wrapper_parses_with_its_inner_toolsets_limits() -> None:
    tight = SimpleToolset([Named(name="a", description="a")], limits=ArgumentLimits(max_length=20))
    toolset = tight.filtered(["a"]).prefixed("p_")
    assert toolset.limits == tight.limits
    long = make_call("p_a", {"n": 1, "padding": "x" * 40}, call_id="c")
    refused = await toolset.handle(long)
    assert refused.return_value.is_error and "Error parsing JSON" in refused.return_value.message


def test_combined_parses_with_the_strictest_caps_of_its_parts_unless_told() -> None:
    one = SimpleToolset(limits=ArgumentLimits(max_length=100, max_depth=50))
    other = SimpleToolset(limits=ArgumentLimits(max_depth=10, offload_length=1000))
    assert combined(one, other).limits == ArgumentLimits(
        max_length=100, max_depth=10, offload_length=1000
    )
    assert combined(one, Plain()).limits == ArgumentLimits(max_length=100, max_depth=50)
    given = ArgumentLimits(max_length=5)
    assert combined(one, other, limits=given).limits == given


async def test_cancelling_a_call_through_wrappers_cancels_the_tool() -> None:
    slow = ScriptedTool("slow", ["done"], gated=True)
    toolset = SimpleToolset([slow]).prefixed("x_").combined(tools("other"))
    task = toolset.handle(make_call("x_slow", {}))
    assert isinstance(task, asyncio.Future)
    await asyncio.wait_for(slow.wait_calls(1), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    slow.release()


async def test_a_renamed_definition_keeps_its_metadata_but_is_a_plain_tool() -> None:
    inner = SimpleToolset(
        [ScriptedTool("rm", ["ok"], destructive_hint=True, version="1.2.3", sequential=True)]
    )
    (shown,) = inner.prefixed("fs_").tools
    assert type(shown) is Tool
    assert shown.name == "fs_rm" and shown.destructive_hint and shown.version == "1.2.3"
    assert shown.sequential is True
    assert shown.parameters == inner.tools[0].parameters


# --- what is made from the tools is made again only when they change -------------------------


class Counting(SimpleToolset):
    """A SimpleToolset that counts how often its tools are read."""

    def __init__(self, *names: str) -> None:
        super().__init__([Named(name=name, description=f"The tool {name}.") for name in names])
        self.reads = 0

    @property
    def tools(self) -> list[Tool]:
        self.reads += 1
        return super().tools

    @property
    def tools_version(self) -> object:
        return super().tools_version


WRAPPERS = {
    "filtered by names": lambda t: filtered(t, ["a", "b", "new"]),
    "filtered by a predicate": lambda t: filtered(t, lambda tool: tool.name != "c"),
    "prefixed": lambda t: prefixed(t, "p_"),
    "renamed": lambda t: renamed(t, {"a": "alpha"}),
    "combined": lambda t: combined(t, tools("z")),
    "chained": lambda t: t.filtered(["a", "b", "new"]).prefixed("p_").combined(tools("z")),
}


@pytest.mark.parametrize("make", WRAPPERS.values(), ids=WRAPPERS.keys())
async def test_a_wrapper_reads_the_wrapped_tools_again_only_when_they_change(make: Any) -> None:
    inner = Counting("a", "b", "c")
    toolset = make(inner)
    first = names_of(toolset)
    reads = inner.reads
    for _ in range(5):
        assert names_of(toolset) == first
    assert inner.reads == reads
    version = toolset.tools_version
    assert version is not None and version == toolset.tools_version
    inner.add(Named(name="new", description="Gained later."))
    (shown,) = [name for name in names_of(toolset) if name.endswith("new")]
    assert toolset.tools_version != version
    assert inner.reads == reads + 1
    assert await output(toolset, shown) == "new:0"


async def test_the_list_a_wrapper_hands_out_is_the_callers_own() -> None:
    toolset = filtered(tools("a", "b"), ["a", "b"])
    toolset.tools.clear()
    assert names_of(toolset) == ["a", "b"]


def test_a_subclass_that_redefines_tools_cannot_tell_its_version_unless_it_says() -> None:
    class Overriding(SimpleToolset):
        @property
        def tools(self) -> list[Tool]:
            return super().tools[:1]

    assert Overriding([]).tools_version is None
    assert Counting("a").tools_version is not None


async def test_over_a_toolset_that_cannot_tell_a_wrapper_follows_every_change() -> None:
    plain = Plain("a", "b")
    toolset = prefixed(plain, "p_").filtered(["p_a", "p_b", "p_c"])
    assert toolset.tools_version is None
    assert names_of(toolset) == ["p_a", "p_b"]
    plain.definitions.append(Tool(name="c", description="Plain c.", parameters={"type": "object"}))
    assert names_of(toolset) == ["p_a", "p_b", "p_c"]
    assert (await toolset.handle(make_call("p_c", {}))).return_value.output == "plain c {}"


def test_prepared_calls_its_function_at_every_read_and_cannot_tell_a_version() -> None:
    calls: list[int] = []

    def prepare(given: list[Tool]) -> list[Tool]:
        calls.append(len(given))
        return given

    inner = Counting("a", "b")
    toolset = prepared(inner, prepare)
    for _ in range(3):
        assert names_of(toolset) == ["a", "b"]
    assert calls == [2, 2, 2] and toolset.tools_version is None
