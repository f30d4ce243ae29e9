"""What the Tool Use standard's policy pipeline adds to a tool call.

Cases, each a call from the model's JSON argument string to the ToolResult, awaited:

- bare: `SimpleToolset.handle`, a CallableTool2 that adds two integers (the reference).
- pipeline, cache miss: the same toolset wrapped in every policy (metrics, tracing, debug,
  deprecation, repeat guard, approval, truncation, in-memory cache, single-flight, retry,
  timeout), the tool read-only and cacheable, each call with new arguments so the cache
  computes a key, misses and stores. Target: under 30 us per call more than bare.
- pipeline, cache hit: the same pipeline, the same arguments every time. Target: under 10 us
  per call in all (the tool does not run, so this is the pipeline alone).
- pipeline + event listener, cache miss: as above plus `EventHookPolicy`, which builds each
  call's final event (its envelope); shown for information, no target.

Tracing runs against the OpenTelemetry API without an SDK configured (spans are non-recording),
as in a process that has not set one up; with an exporting SDK the exporter's cost comes on top.

Every figure is the median over repeats of the mean per-call time of a batch, with the garbage
collector run before each batch. Run: `.venv/bin/python benchmarks/bench_pipeline.py [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from kosong.message import ToolCall
from kosong.standard.pipeline import PolicyToolset, with_policies
from kosong.standard.policies import (
    ApprovalPolicy,
    CachePolicy,
    DebugPolicy,
    DeprecationPolicy,
    EventHookPolicy,
    MetricsPolicy,
    RepeatGuardPolicy,
    RetryPolicy,
    SingleFlightPolicy,
    TimeoutPolicy,
    TracingPolicy,
    TruncationPolicy,
)
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, Toolset
from kosong.tooling.simple import SimpleToolset

MISS_TARGET_US = 30.0
HIT_TARGET_US = 10.0


class AddParams(BaseModel):
    a: int
    b: int


class Add(CallableTool2[AddParams]):
    name: str = "add"
    description: str = "Add two integers."
    params: type[AddParams] = AddParams
    read_only_hint = True
    cacheable = True
    cache_ttl = 3600

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


def every_policy(base: Toolset, *extra: Any) -> PolicyToolset:
    # The repeat guard counts every call, but with a limit no benchmark reaches: the cache-hit
    # case repeats one call thousands of times, which it would otherwise (rightly) stop.
    return with_policies(
        base,
        MetricsPolicy(),
        TracingPolicy(),
        *extra,
        DebugPolicy(),
        DeprecationPolicy(),
        RepeatGuardPolicy(10**9, max_tracked=4096),
        ApprovalPolicy(lambda request: True),
        TruncationPolicy(20_000),
        CachePolicy(),
        SingleFlightPolicy(),
        RetryPolicy(),
        TimeoutPolicy(30),
    )


def calls(n: int, *, distinct: bool, offset: int) -> list[ToolCall]:
    """Prebuilt calls, so building them is not measured."""
    return [
        ToolCall(
            id=f"call-{i}",
            function=ToolCall.FunctionBody(
                name="add",
                arguments=json.dumps({"a": offset + i if distinct else 1, "b": 2}),
            ),
        )
        for i in range(n)
    ]


async def per_call_us(toolset: Toolset, batch: list[ToolCall]) -> float:
    gc.collect()
    start = time.perf_counter()
    for call in batch:
        result = await toolset.handle(call)
        assert not result.return_value.is_error, result.return_value.message
    return (time.perf_counter() - start) / len(batch) * 1e6


async def one_batch(
    make: Callable[[], Toolset], *, distinct: bool, n: int, offset: int, warm: bool
) -> float:
    toolset = make()  # fresh state each batch: caches and counters start empty
    if warm:
        await per_call_us(toolset, calls(1, distinct=False, offset=0))
    return await per_call_us(toolset, calls(n, distinct=distinct, offset=offset))


async def main(quick: bool) -> int:
    n, repeats = (500, 5) if quick else (3000, 9)
    tool = Add()
    python = f"Python {platform.python_version()} on {platform.machine()}"
    print(f"{python}; {repeats} repeats of {n} calls")
    # One warm-up pass of everything: imports, first-call caches, the schema validators.
    await one_batch(
        lambda: every_policy(SimpleToolset([tool])), distinct=True, n=200, offset=0, warm=True
    )

    cases: dict[str, tuple[Callable[[], Toolset], bool, bool]] = {
        "bare": (lambda: SimpleToolset([tool]), True, False),
        "miss": (lambda: every_policy(SimpleToolset([tool])), True, False),
        "hit": (lambda: every_policy(SimpleToolset([tool])), False, True),
        "events": (
            lambda: every_policy(SimpleToolset([tool]), EventHookPolicy(lambda event: None)),
            True,
            False,
        ),
    }
    # The cases take turns within each repeat, so a slow patch of a shared machine hits them
    # all rather than one.
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for repeat in range(repeats):
        for name, (make, distinct, warm) in cases.items():
            value = await one_batch(make, distinct=distinct, n=n, offset=repeat * n, warm=warm)
            samples[name].append(value)
    bare, miss, hit, events = (statistics.median(samples[name]) for name in cases)

    rows = [
        ("bare SimpleToolset.handle", bare, None, ""),
        ("pipeline, every policy, cache miss", miss, miss - bare, f"< {MISS_TARGET_US:g} us extra"),
        ("pipeline, every policy, cache hit", hit, None, f"< {HIT_TARGET_US:g} us per call"),
        ("  + event listener, cache miss", events, events - bare, "(information)"),
    ]
    print()
    print(f"{'case':<38} {'us/call':>8} {'extra us':>9} {'x bare':>7}  target")
    print("-" * 80)
    for name, value, extra, target in rows:
        extra_text = f"{extra:9.2f}" if extra is not None else " " * 9
        print(f"{name:<38} {value:8.2f} {extra_text} {value / bare:7.2f}  {target}")
    miss_ok = miss - bare < MISS_TARGET_US
    hit_ok = hit < HIT_TARGET_US
    print()
    verdict = {True: "met", False: "MISSED"}
    extra = miss - bare
    print(f"cache miss overhead {extra:.2f} us: {verdict[miss_ok]} (target < {MISS_TARGET_US:g})")
    print(f"cache hit {hit:.2f} us per call: {verdict[hit_ok]} (target < {HIT_TARGET_US:g})")
    return 0  # a report, not a gate: the verdicts above say whether the targets were met


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    sys.exit(asyncio.run(main(parser.parse_args().quick)))
