"""What kosong's telemetry costs a step: off (no SDK), and on (the SDK, spans dropped).

One `step` of `MockChatProvider` answering with 10 tool calls of a trivial async tool, awaited
to its results: the path every hook is on (the model call's span, one span per tool call).
Timed in one run, the modes alternating, medians of repeats (µs per step):

- off: no OpenTelemetry SDK set up and nothing configured (kosong's default);
- on: `kosong.telemetry.configure` with the SDK's TracerProvider and MeterProvider, spans
  going to an exporter that drops them (what recording costs, not exporting).

On main before telemetry existed the same script runs the "off" mode only, so the two trees
compare (the A/B in BENCHMARKS.md). `--instructions N` runs N off-mode steps once, for
`valgrind --tool=callgrind` to count.

Run: `.venv/bin/python benchmarks/bench_telemetry.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable, Sequence

from kosong import step
from kosong.chat_provider.mock import MockChatProvider
from kosong.message import Message, TextPart, ToolCall
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset

CALLS = 10
STEPS = 200


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def workload() -> tuple[MockChatProvider, SimpleToolset, list[Message]]:
    parts = [TextPart(text="Adding.")] + [
        ToolCall(
            id=f"c{i}", function=ToolCall.FunctionBody(name="add", arguments='{"a": 1, "b": 2}')
        )
        for i in range(CALLS)
    ]
    return MockChatProvider(parts), SimpleToolset([add]), [Message(role="user", content="go")]


async def run(count: int) -> None:
    provider, toolset, history = workload()
    for _ in range(count):
        result = await step(provider, "", toolset, history)
        await result.tool_results()


def steps(count: int) -> float:
    """µs per step, over `count` steps."""
    start = time.perf_counter()
    asyncio.run(run(count))
    return (time.perf_counter() - start) / count * 1e6


def modes() -> dict[str, Callable[[], None]]:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        from kosong import telemetry
    except ImportError:  # main before telemetry: the off mode only
        return {"off": lambda: None}

    class Drop(SpanExporter):
        def export(self, spans: Sequence[object]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(Drop()))
    meters = MeterProvider()
    return {
        "off": lambda: telemetry.configure(enabled=False),
        "on": lambda: telemetry.configure(tracer_provider=tracers, meter_provider=meters),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--instructions", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instructions is not None:
        asyncio.run(run(args.instructions))
        return
    found = modes()
    times: dict[str, list[float]] = {name: [] for name in found}
    steps(50)  # warm up
    for _ in range(args.repeats):
        for name, switch in found.items():
            switch()
            times[name].append(steps(STEPS))
    for name, samples in times.items():
        print(f"{name:>4}: {statistics.median(samples):8.1f} µs/step (min {min(samples):.1f})")


if __name__ == "__main__":
    main()
