"""Progress from inside tools, and the events of a call, in the standard's shapes."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from typing import Any

import pytest
from pydantic import PrivateAttr

from kosong.message import ImageURLPart, TextPart
from kosong.standard import (
    ToolEvent,
    coded_error,
    current_call,
    error_code,
    from_envelope,
    report_progress,
    to_envelope,
    with_policies,
)
from kosong.standard.policies import (
    EventHookPolicy,
    MetricsPolicy,
    RetryPolicy,
    TruncationPolicy,
)
from kosong.testing import RecordingListener
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue
from kosong.tooling.error import ToolNetworkError
from tests.standard._std_tools import (
    AnyParams,
    Blocking,
    Scripted,
    every_policy,
    make_call,
    standard_data,
    toolset,
)

EVENT_ID = re.compile(r"\Aevt_[0-9]{8}_[0-9a-f]{12}\Z")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z\Z")


def weather_with_progress() -> Scripted:
    async def body(n: int) -> ToolReturnValue:
        report_progress(0, "开始执行工具: get_weather")
        report_progress(45, "正在获取天气数据...")
        return ToolOk(output=json.dumps({"temperature": 25, "condition": "sunny"}))

    return Scripted(body, name="get_weather", description="weather", read_only_hint=True)


async def collect(pipeline: Any, call: Any) -> list[ToolEvent]:
    async with asyncio.timeout(10), pipeline.stream(call) as stream:
        return [event async for event in stream]


def metadata_of(event: ToolEvent) -> Any:
    metadata: Any = event.data["metadata"]
    return metadata


def strip(data: dict[str, Any]) -> dict[str, Any]:
    """The event data without the parts that vary from run to run."""
    out = json.loads(json.dumps(data))
    metadata = out.get("metadata", {})
    for key in ("timestamp", "trace_id", "tool_call_id", "execution_time_ms", "performance"):
        metadata.pop(key, None)
    return out


async def test_progress_then_exactly_one_result_in_the_standards_shapes() -> None:
    pipeline = with_policies(toolset(weather_with_progress()), MetricsPolicy())
    events = await collect(pipeline, make_call("get_weather", {"location": "Beijing"}))
    assert [e.event for e in events] == ["tool_progress", "tool_progress", "tool_result"]
    # The standard's progress and result examples, reproduced.
    assert strip(events[1].data) == {
        "progress": 45,
        "message": "正在获取天气数据...",
        "metadata": {"tool_name": "get_weather"},
    }
    assert strip(events[2].data) == {
        "success": True,
        "status": "success",
        "data": {"temperature": 25, "condition": "sunny"},
        "metadata": {"tool_name": "get_weather"},
    }
    for event in events:
        assert EVENT_ID.match(event.id)
        assert TIMESTAMP.match(metadata_of(event)["timestamp"])
    assert len({e.id for e in events}) == 3
    traces = {metadata_of(e)["trace_id"] for e in events}
    assert len(traces) == 1
    assert events[-1].result is not None and events[-1].is_final


async def test_a_failed_call_ends_with_one_tool_error() -> None:
    tool = Scripted(lambda n: coded_error("CITY_NOT_FOUND", "城市'XYZ'未收录"), name="get_weather")
    events = await collect(
        with_policies(toolset(tool), MetricsPolicy()), make_call("get_weather", {})
    )
    assert [e.event for e in events] == ["tool_error"]
    assert strip(events[0].data) == {
        "success": False,
        "status": "error",
        "error": {"code": "CITY_NOT_FOUND", "message": "城市'XYZ'未收录", "retryable": False},
        "metadata": {"tool_name": "get_weather"},
    }


async def test_retries_appear_as_tool_retrying_events_before_the_result() -> None:
    tool = Scripted(
        lambda n: ToolNetworkError("请求超时，正在重试...") if n < 2 else ToolOk(output="ok"),
        name="get_weather",
        read_only_hint=True,
    )
    pipeline = with_policies(toolset(tool), RetryPolicy(base_delay=0.001))
    events = await collect(pipeline, make_call("get_weather", {}))
    assert [e.event for e in events] == ["tool_retrying", "tool_retrying", "tool_result"]
    first = strip(events[0].data)
    first.pop("delay_seconds")
    assert first == {
        "retry_count": 1,
        "max_retries": 3,
        "error": {"code": "NETWORK_ERROR", "message": "请求超时，正在重试..."},
        "metadata": {"tool_name": "get_weather"},
    }
    assert events[1].data["retry_count"] == 2


class SyncProgress(CallableTool2[AnyParams]):
    name: str = "sync_progress"
    description: str = "A plain def tool, run in a worker thread"
    params: type[AnyParams] = AnyParams
    _thread: list[int] = PrivateAttr(default_factory=list[int])

    def __call__(self, params: AnyParams) -> ToolReturnValue:  # pyright: ignore[reportIncompatibleMethodOverride]
        self._thread.append(threading.get_ident())
        for percent in (10, 50, 90):
            report_progress(percent, f"{percent}%")
        return ToolOk(output="done")


async def test_a_tool_in_a_worker_thread_reports_progress_safely() -> None:
    tool = SyncProgress()
    events = await collect(
        with_policies(toolset(tool), MetricsPolicy()), make_call("sync_progress", {})
    )
    assert tool._thread[0] != threading.get_ident()  # it did run in a thread
    assert [e.event for e in events] == ["tool_progress"] * 3 + ["tool_result"]
    assert [e.data.get("progress") for e in events[:3]] == [10, 50, 90]


async def test_closing_the_stream_cancels_a_running_call() -> None:
    tool = Blocking()
    pipeline = with_policies(toolset(tool), MetricsPolicy())
    async with asyncio.timeout(10):
        async with pipeline.stream(make_call("blocking", {})) as stream:
            result_task = asyncio.ensure_future(stream.result())
            await tool.started.wait()
        await tool.cancelled.wait()
        with pytest.raises(asyncio.CancelledError):
            await result_task
        assert [e async for e in stream] == []


async def test_the_stream_gives_the_result_too() -> None:
    pipeline = with_policies(toolset(weather_with_progress()), MetricsPolicy())
    async with pipeline.stream(make_call("get_weather", {})) as stream:
        result = await asyncio.wait_for(stream.result(), 5)
        events = [e async for e in stream]
    assert not result.return_value.is_error
    assert events[-1].result == result


async def test_event_hook_receives_every_calls_events() -> None:
    received: list[ToolEvent] = []
    pipeline = with_policies(toolset(weather_with_progress()), EventHookPolicy(received.append))
    await pipeline.handle(make_call("get_weather", {}, "a"))
    await pipeline.handle(make_call("get_weather", {}, "b"))
    assert [e.event for e in received] == ["tool_progress", "tool_progress", "tool_result"] * 2
    assert [metadata_of(e)["tool_call_id"] for e in received][::3] == ["a", "b"]


async def test_a_failing_listener_does_not_fail_the_call(caplog: pytest.LogCaptureFixture) -> None:
    def listener(event: ToolEvent) -> None:
        raise RuntimeError("listener bug")

    pipeline = with_policies(toolset(weather_with_progress()), EventHookPolicy(listener))
    result = await pipeline.handle(make_call("get_weather", {}))
    assert not result.return_value.is_error
    assert "listener bug" in caplog.text


async def test_tools_can_reach_their_call_context() -> None:
    seen: dict[str, Any] = {}

    async def body(n: int) -> ToolReturnValue:
        ctx = current_call()
        assert ctx is not None
        seen.update(name=ctx.tool_name, call_id=ctx.tool_call_id)
        ctx.record_timing("network_ms", 115)
        return ToolOk()

    result = await with_policies(toolset(Scripted(body)), MetricsPolicy()).handle(
        make_call("scripted", {}, "c")
    )
    assert seen == {"name": "scripted", "call_id": "c"}
    metadata = standard_data(result)["metadata"]
    assert metadata["performance"]["network_ms"] == 115


async def test_progress_outside_a_pipeline_is_ignored_and_bad_values_are_refused() -> None:
    assert current_call() is None
    report_progress(50, "nobody listens")  # no error

    async def body(n: int) -> ToolReturnValue:
        for bad in (-1, 101, float("nan"), True, "50"):
            with pytest.raises(ValueError, match="from 0 to 100"):
                report_progress(bad)  # pyright: ignore[reportArgumentType]
        return ToolOk()

    result = await with_policies(toolset(Scripted(body)), MetricsPolicy()).handle(
        make_call("scripted", {})
    )
    assert not result.return_value.is_error


def test_sse_text_of_an_event() -> None:
    event = ToolEvent("tool_progress", "evt_20240305_abc123", {"progress": 45, "message": "a\nb"})
    assert event.to_sse() == (
        "event: tool_progress\n"
        "id: evt_20240305_abc123\n"
        'data: {"progress": 45, "message": "a\\nb"}\n\n'
    )
    assert event.to_dict() == {
        "event": "tool_progress",
        "id": "evt_20240305_abc123",
        "data": {"progress": 45, "message": "a\nb"},
    }


# --- events and envelopes never raise ---------------------------------------------------------

HOSTILE_OUTPUTS: list[Any] = [
    "[1e999]",  # looks like JSON; the number cannot be written back
    '{"a": 1e999}',
    "[" * 300 + "]" * 300,  # deeper than any JSON value we put in `data`
    '{"a":' * 300 + "1" + "}" * 300,
    "[" * 5000 + "]" * 5000,  # deeper than Python's own parser goes
    '{"a": NaN}',
    '{"a": 1} trailing',
    "x" * 3_000_000,  # huge text
    "[" + "1," * 600_000 + "1]",  # huge JSON-looking text
    [
        TextPart(text="a caption"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png")),
    ],
    [],
]


@pytest.mark.parametrize("output", HOSTILE_OUTPUTS, ids=lambda o: repr(o)[:30])
async def test_events_and_envelopes_never_raise_and_keep_the_output(output: Any) -> None:
    tool = Scripted(lambda n: ToolOk(output=output), name="any_output")
    events: list[ToolEvent] = []
    pipeline = with_policies(toolset(tool), EventHookPolicy(events.append), MetricsPolicy())
    result = await pipeline.handle(make_call("any_output", {}))
    envelope = to_envelope(result).dump()
    streamed = await collect(pipeline, make_call("any_output", {}))
    finals = [e for e in events if e.is_final]
    assert len(finals) == 2  # one per call: the handled one and the streamed one
    assert [e.is_final for e in streamed] == [True]
    for final in (*finals, streamed[-1]):
        assert final.event == "tool_result" and final.data["success"] is True
    data = envelope["data"]
    if isinstance(output, str):
        # Either the text itself, or the JSON value it is (and writes back to exactly).
        assert data == output or json.dumps(data, separators=(", ", ": ")) == output
    else:
        assert data == [part.model_dump(mode="json") for part in output]
    assert from_envelope(envelope).return_value.output == output  # nothing lost
    json.dumps(envelope, allow_nan=False)  # and it is valid JSON


async def test_content_part_outputs_keep_their_data_in_events_and_plain_envelopes() -> None:
    parts = [
        TextPart(text="see the chart"),
        ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/c.png")),
    ]
    pipeline = with_policies(toolset(Scripted(lambda n: ToolOk(output=parts))), MetricsPolicy())
    events = await collect(pipeline, make_call("scripted", {}))
    expected = [
        {"type": "text", "text": "see the chart"},
        {"type": "image_url", "image_url": {"url": "https://x/c.png", "id": None}},
    ]
    assert events[-1].data["data"] == expected
    result = await pipeline.handle(make_call("scripted", {}))
    assert to_envelope(result, lossless=False).dump()["data"] == expected


async def test_stream_always_ends_with_one_final_event_even_when_the_call_is_cancelled() -> None:
    tool = Blocking()
    pipeline = with_policies(toolset(tool), MetricsPolicy())
    stream = pipeline.stream(make_call("blocking", {}))
    seen: list[ToolEvent] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event)

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(tool.started.wait(), 5)
    task = stream._task
    assert task is not None
    task.cancel()  # someone else cancels the call
    await asyncio.wait_for(consumer, 5)
    assert [e.event for e in seen] == ["tool_error"]
    assert "cancelled" in seen[0].data["error"]["message"]  # type: ignore[index]


# --- big payloads do not stall the loop -------------------------------------------------------


async def _max_lag_while(work: Any) -> tuple[Any, float]:
    """Run `work` while a ticker measures how long the loop kept it waiting (seconds).

    Each tick sleeps 5 ms; what is measured is the CPU time the loop's thread spent between
    the ticks (`time.thread_time`), so work that holds the loop shows up, and a machine too busy
    to run this process at once (the OS's doing, not the loop's) does not. Work done in other
    threads is not the loop's and is not counted.
    """
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            before = time.thread_time()
            await asyncio.sleep(0.005)
            lags.append(time.thread_time() - before)

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)  # the ticker is running
    try:
        result = await work
    finally:
        done.set()
        await ticking
    return result, max(lags)


@pytest.mark.parametrize("truncated", [False, True])
async def test_a_20_mb_output_through_stream_keeps_event_loop_lag_under_50_ms(
    truncated: bool,
) -> None:
    text = "line of a long log\n" * 1_100_000  # ~20 MB
    policies = [p for p in every_policy() if truncated or not isinstance(p, TruncationPolicy)]
    pipeline = with_policies(toolset(Scripted(lambda n: ToolOk(output=text))), *policies)

    async def stream_it() -> list[ToolEvent]:
        return await collect(pipeline, make_call("scripted", {}))

    events, lag = await _max_lag_while(stream_it())
    assert events[-1].event == "tool_result"
    data: Any = events[-1].data["data"]
    if truncated:
        assert data["truncation_info"]["original_length"] == len(text)
    else:
        assert data == text  # the final event carries the whole output
    assert lag < 0.05, f"the loop stalled {lag * 1000:.0f} ms"


async def test_a_100_mb_argument_through_every_policy_keeps_event_loop_lag_under_50_ms() -> None:
    pipeline = with_policies(toolset(Scripted(lambda n: ToolOk(output="ok"))), *every_policy())
    call = make_call("scripted", json.dumps({"blob": "x" * 100_000_000}))  # made beforehand

    async def call_it() -> Any:
        return await pipeline.handle(call)

    result, lag = await _max_lag_while(call_it())
    assert error_code(result.return_value) == "INVALID_PARAMS"  # past the default length cap
    assert lag < 0.05, f"the loop stalled {lag * 1000:.0f} ms"


async def test_a_cancelled_calls_final_event_carries_the_cancellations_message() -> None:
    tool = Blocking()
    listener = RecordingListener()
    pending = with_policies(toolset(tool), EventHookPolicy(listener)).handle(
        make_call("blocking", {})
    )
    await asyncio.wait_for(tool.started.wait(), 5)
    assert isinstance(pending, asyncio.Future)
    pending.cancel("the user pressed stop")
    with pytest.raises(asyncio.CancelledError):
        await pending
    (final,) = listener.finals()
    assert final.data["error"]["message"] == (  # type: ignore[index]
        "The call to `blocking` was cancelled before it finished: the user pressed stop"
    )
