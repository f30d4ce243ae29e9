"""ConcurrencyPolicy: limits in all and per tool; sequential tools one at a time, in call order.

Order and overlap are observed with events and counters, never with timed sleeps: each tool
yields to the event loop while it runs (so calls that are allowed to overlap do), and waits at
a gate the test opens.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong import step
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message, TextPart, ToolCall
from kosong.standard import Policy, PolicyContext, with_policies
from kosong.standard.policies import ConcurrencyPolicy, TimeoutPolicy
from kosong.testing import make_call
from kosong.tooling import CallableTool, ParametersType, ToolOk, ToolResult, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType


class Tracker:
    """What the tools did: which calls started, in what order, and how many ran at once."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self.running: dict[str, int] = defaultdict(int)
        self.most: dict[str, int] = defaultdict(int)
        self.gates: dict[int, asyncio.Event] = defaultdict(asyncio.Event)
        self.entered: dict[int, asyncio.Event] = defaultdict(asyncio.Event)

    def open_all(self, n: int) -> None:
        for i in range(n):
            self.gates[i].set()

    def note(self, name: str, delta: int) -> None:
        for key in (name, "*"):
            self.running[key] += delta
            self.most[key] = max(self.most[key], self.running[key])


class Held(CallableTool):
    """Runs until the test opens its gate, yielding to the loop first so calls can overlap."""

    parameters: ParametersType = {
        "type": "object",
        "properties": {"i": {"type": "integer"}},
        "required": ["i"],
    }

    def __init__(self, name: str, tracker: Tracker, **metadata: Any) -> None:
        super().__init__(name=name, description="Held at a gate.", **metadata)
        self._tracker = tracker

    async def __call__(self, i: int) -> ToolReturnValue:
        tracker = self._tracker
        tracker.started.append((self.name, i))
        tracker.note(self.name, 1)
        tracker.entered[i].set()
        try:
            for _ in range(3):
                await asyncio.sleep(0)  # a chance for any other call to start meanwhile
            await tracker.gates[i].wait()
        finally:
            tracker.note(self.name, -1)
        return ToolOk(output=f"{self.name}:{i}")


async def settle() -> None:
    """Let every runnable task run until it waits (no time passes)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def results(pending: list[Any]) -> list[ToolResult]:
    return list(await asyncio.wait_for(asyncio.gather(*pending), 10))


async def test_a_sequential_tools_calls_run_one_at_a_time_in_the_order_made() -> None:
    tracker = Tracker()
    toolset = with_policies(
        SimpleToolset([Held("write", tracker, sequential=True)]), ConcurrencyPolicy()
    )
    pending = [toolset.handle(make_call("write", {"i": i}, call_id=f"c{i}")) for i in range(5)]
    await asyncio.wait_for(tracker.entered[0].wait(), 5)
    await settle()
    assert tracker.started == [("write", 0)]  # the others wait for their turn
    for i in (4, 3, 2, 1):  # later calls' gates opened first change nothing
        tracker.gates[i].set()
    await settle()
    assert tracker.started == [("write", 0)]
    tracker.gates[0].set()
    done = await results(pending)
    assert tracker.started == [("write", i) for i in range(5)]
    assert tracker.most["write"] == 1
    assert [r.return_value.output for r in done] == [f"write:{i}" for i in range(5)]


async def test_without_the_policy_the_same_calls_overlap() -> None:
    # The control of the test above: the tool does let calls overlap when nothing stops them.
    tracker = Tracker()
    toolset = SimpleToolset([Held("write", tracker, sequential=True)])
    pending = [toolset.handle(make_call("write", {"i": i})) for i in range(5)]
    await settle()
    tracker.open_all(5)
    await results(pending)
    assert tracker.most["write"] == 5


class Arrivals(Policy):
    """Records the order calls reach it (listed just outside the concurrency policy)."""

    def __init__(self) -> None:
        self.order: list[tuple[str, int]] = []

    def before(self, call: ToolCall, ctx: PolicyContext) -> None:
        arguments: JsonType = ctx.arguments
        assert isinstance(arguments, dict)
        index = arguments["i"]
        assert isinstance(index, int)
        self.order.append((ctx.tool.name, index))


async def test_sequential_calls_of_concurrent_steps_on_one_toolset_keep_their_order() -> None:
    tracker = Tracker()
    arrivals = Arrivals()
    toolset = with_policies(
        SimpleToolset([Held("write", tracker, sequential=True), Held("read", tracker)]),
        arrivals,
        ConcurrencyPolicy(),
    )
    for i in (0, 2, 4, 6):  # the writes may finish; the reads are held until all four run
        tracker.gates[i].set()

    async def open_reads_once_all_run() -> list[ToolResult]:
        for i in (1, 3, 5, 7):
            await tracker.entered[i].wait()
        tracker.open_all(8)
        return []

    def provider(first: int) -> ScriptedChatProvider:
        calls = [call("write" if i % 2 == 0 else "read", {"i": i}) for i in range(first, first + 4)]
        return ScriptedChatProvider([["Working.", *calls]], chunk_size=3)

    history = [Message(role="user", content=[TextPart(text="go")])]

    async def one_step(first: int) -> list[ToolResult]:
        result = await step(provider(first), "", toolset, history)
        return await result.tool_results()

    both = await asyncio.wait_for(
        asyncio.gather(one_step(0), one_step(4), open_reads_once_all_run()), 10
    )
    assert all(not r.return_value.is_error for results_ in both for r in results_)
    writes = [entry for entry in tracker.started if entry[0] == "write"]
    assert writes == [entry for entry in arrivals.order if entry[0] == "write"]
    assert {i for _, i in writes} == {0, 2, 4, 6}
    assert tracker.most["write"] == 1
    assert tracker.most["read"] == 4  # a tool that is not sequential is not held back


async def test_per_tool_and_overall_limits_cap_the_calls_running_at_once() -> None:
    tracker = Tracker()
    tools = [Held("a", tracker), Held("b", tracker), Held("c", tracker)]
    toolset = with_policies(SimpleToolset(tools), ConcurrencyPolicy(4, per_tool={"a": 2}))
    names = ["a"] * 5 + ["b"] * 5 + ["c"] * 2
    pending = [toolset.handle(make_call(n, {"i": i})) for i, n in enumerate(names)]
    await settle()
    assert tracker.running["*"] == 4 and tracker.running["a"] == 2
    tracker.open_all(len(names))
    done = await results(pending)
    assert all(not r.return_value.is_error for r in done)
    assert tracker.most["*"] == 4 and tracker.most["a"] == 2


async def test_the_time_a_call_waited_is_in_its_metadata() -> None:
    tracker = Tracker()
    toolset = with_policies(SimpleToolset([Held("write", tracker)]), ConcurrencyPolicy(1))
    first = toolset.handle(make_call("write", {"i": 0}))
    second = toolset.handle(make_call("write", {"i": 1}))
    await asyncio.wait_for(tracker.entered[0].wait(), 5)
    await settle()
    loop = asyncio.get_running_loop()
    held_from = loop.time()
    await asyncio.sleep(0.05)  # how long the first call holds the place: measured, not relied on
    tracker.open_all(2)
    held_ms = (loop.time() - held_from) * 1000
    one, two = await results([first, second])
    assert one.metadata is not None and two.metadata is not None
    waited = two.metadata["performance"]["queue_ms"]  # type: ignore[index]
    assert isinstance(waited, float) and waited >= held_ms * 0.9
    assert one.metadata["performance"]["queue_ms"] < waited  # type: ignore[index,operator]


async def test_a_cancelled_waiting_call_leaves_the_queue_and_the_next_one_runs() -> None:
    tracker = Tracker()
    toolset = with_policies(
        SimpleToolset([Held("write", tracker, sequential=True)]), ConcurrencyPolicy()
    )
    pending = [toolset.handle(make_call("write", {"i": i})) for i in range(3)]
    await asyncio.wait_for(tracker.entered[0].wait(), 5)
    waiting = pending[1]
    assert isinstance(waiting, asyncio.Future)
    waiting.cancel()
    tracker.open_all(3)
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await results([pending[0], pending[2]])
    assert tracker.started == [("write", 0), ("write", 2)]


async def test_a_timeout_outside_counts_the_waiting_and_frees_the_place() -> None:
    tracker = Tracker()
    toolset = with_policies(
        SimpleToolset([Held("write", tracker, sequential=True)]),
        TimeoutPolicy(0.2),
        ConcurrencyPolicy(),
    )
    first = toolset.handle(make_call("write", {"i": 0}))
    second = toolset.handle(make_call("write", {"i": 1}))
    tracker.gates[1].set()
    one, two = await results([first, second])
    # The first never finishes in time; the second waited its whole limit behind it.
    assert one.return_value.is_error and two.return_value.is_error
    third = await asyncio.wait_for(toolset.handle(make_call("write", {"i": 1})), 5)
    assert third.return_value.output == "write:1"  # the places were given back


async def test_a_function_tool_marked_sequential_is_held_to_one_call_at_a_time() -> None:
    running = 0
    most = 0

    @tool(sequential=True)
    async def append_line(line: str) -> str:
        """Append a line to the log."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        running -= 1
        return line

    assert append_line.base.sequential is True
    assert append_line.base.model_dump()["sequential"] is True
    toolset = with_policies(SimpleToolset([append_line]), ConcurrencyPolicy())
    pending = [toolset.handle(make_call("append_line", {"line": str(i)})) for i in range(4)]
    done = await results(pending)
    assert [r.return_value.output for r in done] == ["0", "1", "2", "3"] and most == 1


def test_limits_below_one_are_refused() -> None:
    for bad in ({"limit": 0}, {"per_tool": {"a": 0}}):
        with pytest.raises(ValueError, match="at least 1"):
            ConcurrencyPolicy(**bad)  # type: ignore[arg-type]


@given(
    limit=st.integers(1, 4),
    per_tool=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 3)),
    names=st.lists(st.sampled_from(["a", "b", "s"]), min_size=1, max_size=12),
)
@settings(max_examples=30, deadline=None)
async def test_no_limit_is_ever_exceeded_and_every_call_ends(
    limit: int, per_tool: dict[str, int], names: list[str]
) -> None:
    tracker = Tracker()
    tools = [Held("a", tracker), Held("b", tracker), Held("s", tracker, sequential=True)]
    policy = ConcurrencyPolicy(limit, per_tool={**per_tool, "s": 3})
    toolset = with_policies(SimpleToolset(tools), policy)
    pending = [toolset.handle(make_call(n, {"i": i})) for i, n in enumerate(names)]
    await settle()
    tracker.open_all(len(names))
    done = await results(pending)
    assert [r.return_value.output for r in done] == [f"{n}:{i}" for i, n in enumerate(names)]
    assert tracker.most["*"] <= limit
    for name, cap in per_tool.items():
        assert tracker.most[name] <= cap
    assert tracker.most["s"] <= 1  # sequential wins over a per-tool limit
    sequential = [i for n, i in tracker.started if n == "s"]
    assert sequential == sorted(sequential)
    assert policy._gates == {}  # no gate outlives its calls
