"""Calls handled at once run at once, and cancelling the caller cancels the tool.

Overlap is proven with events and barriers (every call enters before any leaves), not timing;
every wait has a timeout, so a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest
from pydantic import PrivateAttr

from kosong.tooling import CallableTool, ParametersType, ToolOk, ToolResult
from kosong.tooling.simple import SimpleToolset
from tests.tooling._tools import Add, make_call

INDEX: ParametersType = {
    "type": "object",
    "properties": {"i": {"type": "integer"}},
    "required": ["i"],
}
WAIT = 5.0  # seconds: far more than any of these waits needs, so a timeout means a bug


async def test_fifty_calls_all_enter_the_tool_before_any_leaves() -> None:
    n = 50
    log: list[tuple[str, int]] = []
    all_in = asyncio.Event()

    class Gated(CallableTool):
        name: str = "gated"
        description: str = "I/O gated on every other call having started."
        parameters: ParametersType = INDEX

        async def __call__(self, i: int) -> ToolOk:
            log.append(("enter", i))
            if sum(1 for event, _ in log if event == "enter") == n:
                all_in.set()
            await all_in.wait()  # would never return if calls ran one after another
            log.append(("leave", i))
            return ToolOk(output=str(i))

    toolset = SimpleToolset([Gated()])
    calls = [make_call("gated", f'{{"i": {i}}}', call_id=str(i)) for i in range(n)]
    pending = [toolset.handle(call) for call in calls]
    results = await asyncio.wait_for(asyncio.gather(*pending), timeout=WAIT)

    assert [r.tool_call_id for r in results] == [str(i) for i in range(n)]
    assert [r.return_value.output for r in results] == [str(i) for i in range(n)]
    assert [event for event, _ in log[:n]] == ["enter"] * n
    assert [event for event, _ in log[n:]] == ["leave"] * n


async def test_sync_tools_run_in_parallel_worker_threads() -> None:
    n = 4  # below the default executor's minimum of 5 workers
    barrier = threading.Barrier(n, timeout=WAIT)  # breaks (raises) unless all n are in at once

    class Blocking(CallableTool):
        name: str = "blocking"
        description: str = "Blocks its thread until every call has started."
        parameters: ParametersType = INDEX

        def __call__(self, i: int) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
            barrier.wait()
            return ToolOk(output=str(i))

    toolset = SimpleToolset([Blocking()])
    pending = [toolset.handle(make_call("blocking", f'{{"i": {i}}}')) for i in range(n)]
    results = await asyncio.wait_for(asyncio.gather(*pending), timeout=2 * WAIT)
    assert [r.return_value.output for r in results] == [str(i) for i in range(n)]


async def test_twenty_waiting_calls_all_run_at_once() -> None:
    # Each call waits until all twenty have started: one after another, none would end.
    started: list[int] = []
    everyone = asyncio.Event()

    class Waiting(CallableTool):
        name: str = "waiting"
        description: str = "Waits for the other calls."
        parameters: ParametersType = INDEX

        async def __call__(self, i: int) -> ToolOk:
            started.append(i)
            if len(started) == 20:
                everyone.set()
            await everyone.wait()
            return ToolOk(output=str(i))

    toolset = SimpleToolset([Waiting()])
    pending = [toolset.handle(make_call("waiting", f'{{"i": {i}}}')) for i in range(20)]
    results = await asyncio.wait_for(asyncio.gather(*pending), timeout=WAIT)
    assert sorted(started) == list(range(20))
    assert [r.return_value.output for r in results] == [str(i) for i in range(20)]


class Hanging(CallableTool):
    """Waits forever; records that it started and that it was cancelled."""

    name: str = "hanging"
    description: str = "Never finishes on its own."
    parameters: ParametersType = {"type": "object"}

    _started: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _cancelled: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    @property
    def started(self) -> asyncio.Event:
        return self._started

    @property
    def cancelled(self) -> asyncio.Event:
        return self._cancelled

    async def __call__(self) -> ToolOk:
        self._started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self._cancelled.set()
            raise
        return ToolOk(output="unreachable")


async def test_cancelling_the_task_awaiting_handle_cancels_the_tool() -> None:
    tool = Hanging()
    toolset = SimpleToolset([tool])

    async def agent() -> ToolResult:
        return await toolset.handle(make_call("hanging", "{}"))

    waiter = asyncio.create_task(agent())
    await asyncio.wait_for(tool.started.wait(), timeout=WAIT)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, timeout=WAIT)
    await asyncio.wait_for(tool.cancelled.wait(), timeout=WAIT)


async def test_cancelling_the_returned_future_cancels_the_tool() -> None:
    tool = Hanging()
    pending = SimpleToolset([tool]).handle(make_call("hanging", "{}"))
    assert isinstance(pending, asyncio.Future)
    await asyncio.wait_for(tool.started.wait(), timeout=WAIT)
    pending.cancel()
    await asyncio.wait_for(tool.cancelled.wait(), timeout=WAIT)
    assert pending.cancelled()


async def test_wait_for_timeout_cancels_the_tool() -> None:
    tool = Hanging()
    toolset = SimpleToolset([tool])
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(toolset.handle(make_call("hanging", "{}")), timeout=0.05)
    assert tool.started.is_set()
    await asyncio.wait_for(tool.cancelled.wait(), timeout=WAIT)


async def test_cancelling_one_call_leaves_the_others_running() -> None:
    release = asyncio.Event()
    hanging = Hanging()

    class Released(CallableTool):
        name: str = "released"
        description: str = "Finishes when released."
        parameters: ParametersType = {"type": "object"}

        async def __call__(self) -> ToolOk:
            await release.wait()
            return ToolOk(output="done")

    toolset = SimpleToolset([hanging, Released()])
    doomed = toolset.handle(make_call("hanging", "{}"))
    survivor = toolset.handle(make_call("released", "{}"))
    await asyncio.wait_for(hanging.started.wait(), timeout=WAIT)
    assert isinstance(doomed, asyncio.Future)
    doomed.cancel()
    await asyncio.wait_for(hanging.cancelled.wait(), timeout=WAIT)
    release.set()
    assert (await asyncio.wait_for(survivor, timeout=WAIT)).return_value.output == "done"


async def test_handle_returns_a_pending_task_for_a_tool_that_waits() -> None:
    tool = Hanging()
    pending = SimpleToolset([tool]).handle(make_call("hanging", "{}"))
    # 3.12+ starts the task eagerly (the body runs up to its first wait inside handle());
    # 3.11 only schedules it.
    assert tool.started.is_set() == (sys.version_info >= (3, 12))
    assert isinstance(pending, asyncio.Future)
    assert not pending.done()
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(pending, timeout=WAIT)


async def test_a_call_that_never_waits_is_done_when_handle_returns_on_3_12() -> None:
    if sys.version_info < (3, 12):
        pytest.skip("eager tasks are new in Python 3.12")
    toolset = SimpleToolset([Add()])
    pending = toolset.handle(make_call("add", '{"a": 1, "b": 2}'))
    assert isinstance(pending, asyncio.Future)
    assert pending.done()  # no round trip through the event loop
    assert pending.result().return_value.output == "3"


# --- exceptions that look like control flow --------------------------------------------------


class _Raising(CallableTool):
    name: str = "raising"
    description: str = "Raises what it is told to."
    parameters: ParametersType = {"type": "object", "properties": {"what": {"type": "string"}}}

    async def __call__(self, what: str) -> ToolOk:
        if what == "cancelled":
            raise asyncio.CancelledError  # not cancelled by anyone: the tool's own doing
        if what == "generator_exit":
            raise GeneratorExit
        if what == "awaited_cancelled":
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()
            await future  # someone else's cancelled future
        return ToolOk(output=what)


@pytest.mark.parametrize("what", ["cancelled", "generator_exit", "awaited_cancelled"])
async def test_a_tool_raising_cancellation_on_its_own_gives_a_runtime_error(what: str) -> None:
    toolset = SimpleToolset([_Raising()])
    result = await asyncio.wait_for(
        toolset.handle(make_call("raising", f'{{"what": "{what}"}}')), timeout=WAIT
    )
    assert result.return_value.is_error
    assert result.return_value.message.startswith("Error running tool: ")
    assert result.return_value.brief == "Tool runtime error"


async def test_gather_over_a_batch_keeps_every_sibling_result() -> None:
    toolset = SimpleToolset([_Raising()])
    whats = ["ok", "cancelled", "fine", "generator_exit", "awaited_cancelled", "done"]
    pending = [toolset.handle(make_call("raising", f'{{"what": "{w}"}}', call_id=w)) for w in whats]
    results = await asyncio.wait_for(asyncio.gather(*pending), timeout=WAIT)
    assert [r.tool_call_id for r in results] == whats
    assert [r.return_value.output for r in results if not r.return_value.is_error] == [
        "ok",
        "fine",
        "done",
    ]


async def test_the_callers_own_cancellation_still_propagates_and_cancels_the_tool() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    class Slow(CallableTool):
        name: str = "slow"
        description: str = "Waits."
        parameters: ParametersType = {"type": "object"}

        async def __call__(self) -> ToolOk:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return ToolOk(output="never")

    pending = SimpleToolset([Slow()]).handle(make_call("slow", "{}"))
    assert isinstance(pending, asyncio.Future)
    await asyncio.wait_for(started.wait(), WAIT)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert cancelled.is_set()


# --- kosong's own thread pools -------------------------------------------------------------------


async def test_forty_hung_sync_tools_leave_async_tools_parsing_and_quick_sync_tools_working() -> (
    None
):
    release = threading.Event()
    hung = threading.Barrier(41, timeout=WAIT)  # 40 tools and this test: all in at once

    class Hung(CallableTool):
        name: str = "hung"
        description: str = "A sync tool that never returns on its own."
        parameters: ParametersType = INDEX

        def __call__(self, i: int) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
            hung.wait()
            release.wait(60)
            return ToolOk(output=str(i))

    class Quick(CallableTool):
        name: str = "quick"
        description: str = "A sync tool that returns at once."
        parameters: ParametersType = INDEX

        def __call__(self, i: int) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
            return ToolOk(output=str(i))

    toolset = SimpleToolset([Hung(), Quick(), Add()])
    stuck = [toolset.handle(make_call("hung", f'{{"i": {i}}}')) for i in range(40)]
    try:
        await asyncio.to_thread(hung.wait)  # every hung tool holds a thread now
        # The default executor has at most 32 threads: all of them could be hung by now.
        long_arguments = '{"a": 1, "b": 2, "pad": "' + "x" * 300_000 + '"}'
        quick, parsed, added = await asyncio.wait_for(
            asyncio.gather(
                toolset.handle(make_call("quick", '{"i": 7}')),
                toolset.handle(make_call("add", long_arguments)),  # parsed in a worker thread
                toolset.handle(make_call("add", '{"a": 2, "b": 3}')),
            ),
            timeout=WAIT,
        )
        assert quick.return_value.output == "7"
        assert parsed.return_value.is_error  # Add takes no `pad`: validated, so it was parsed
        assert "pad" in parsed.return_value.message
        assert added.return_value.output == "5"
    finally:
        release.set()
        await asyncio.wait_for(asyncio.gather(*stuck), timeout=WAIT)


def test_an_event_loops_thread_pools_end_with_it() -> None:
    class Quick(CallableTool):
        name: str = "quick"
        description: str = "A sync tool that returns at once."
        parameters: ParametersType = INDEX

        def __call__(self, i: int) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
            return ToolOk(output=threading.current_thread().name)

    toolset = SimpleToolset([Quick()])
    before = set(threading.enumerate())

    async def calls() -> list[str]:
        long_arguments = '{"i": 1, "pad": "' + "x" * 300_000 + '"}'  # parsed in a worker thread
        parsed = await toolset.handle(make_call("quick", long_arguments))
        assert "pad" in parsed.return_value.message
        ran = await toolset.handle(make_call("quick", '{"i": 1}'))
        return [str(ran.return_value.output)]

    assert asyncio.run(calls())[0].startswith("kosong-tool")
    started = [t for t in set(threading.enumerate()) - before if t.name.startswith("kosong-")]
    assert {t.name.split("_")[0] for t in started} == {"kosong-tool", "kosong-parse"}
    gc.collect()  # the loop is gone: its pools are shut down, their idle threads exit
    for thread in started:
        thread.join(WAIT)
    assert not [t.name for t in started if t.is_alive()]
