"""What the Tool Use standard's policy pipeline adds to a tool call, as ratios to a bare call.

Cases, each a call from the model's JSON argument string to the ToolResult, awaited, all
measured in one run and taking turns within each repeat (a slow patch of a shared machine then
hits them all):

- bare: `SimpleToolset.handle`, a CallableTool2 that adds two integers (the reference).
- every policy, cache miss: the same toolset wrapped in every policy (metrics, tracing, debug,
  deprecation, repeat guard, approval, truncation, in-memory cache, single-flight, retry,
  timeout), the tool read-only and cacheable, each call with new arguments, so the cache
  computes a key, misses and stores. Target: at most 3.5x bare.
- every policy, cache hit: the same pipeline, the same arguments every time. Target: at most
  1.6x bare.
- every policy and an event listener, cache miss: `EventHookPolicy` too, so every call's
  final event (its envelope) is built. Information.
- the pipeline alone: one policy that passes every call on (the task, the contexts, the
  arguments read once, the metadata and the copy every result leaves with).
- each policy on its own, around the bare toolset, on a cache miss: what it adds.

Tracing runs against the OpenTelemetry API without an SDK configured, as in a process that has
not set one up. Every figure is the median over repeats of the mean per-call time of a batch,
with the garbage collector run before each batch. Run:
`.venv/bin/python benchmarks/bench_pipeline.py [--quick]`.

On a shared, noisy machine, `--instructions` counts instead of timing: each of the main cases
runs in its own process under valgrind's callgrind, which counts the CPU instructions of 1,000
calls (and only those), the same from run to run whatever else the machine does. Needs
valgrind (Debian's `valgrind`); takes a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from pydantic import BaseModel

from kosong.message import ToolCall
from kosong.standard import Policy, with_policies
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

MISS_TARGET = 3.5
HIT_TARGET = 1.6


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


def named_policies() -> list[tuple[str, Policy]]:
    """Every policy, new, from the outside in, by name."""
    # The repeat guard counts every call, with a limit no benchmark reaches: the cache-hit
    # case repeats one call thousands of times, which it would otherwise (rightly) stop.
    return [
        ("metrics", MetricsPolicy()),
        ("tracing", TracingPolicy()),
        ("debug", DebugPolicy()),
        ("deprecation", DeprecationPolicy()),
        ("repeat guard", RepeatGuardPolicy(10**9)),
        ("approval", ApprovalPolicy(lambda request: True)),
        ("truncation", TruncationPolicy(20_000)),
        ("cache", CachePolicy()),
        ("single-flight", SingleFlightPolicy()),
        ("retry", RetryPolicy()),
        ("timeout", TimeoutPolicy(30)),
    ]


def every_policy(base: Toolset) -> Toolset:
    return with_policies(base, *(policy for _, policy in named_policies()))


class PassOn(Policy):
    """Passes every call on: what is left is the pipeline's own cost."""


def calls(n: int, *, distinct: bool, offset: int) -> list[ToolCall]:
    """Prebuilt calls, so building them is not measured."""
    return [
        ToolCall(
            id=f"call-{i}",
            function=ToolCall.FunctionBody(
                name="add", arguments=json.dumps({"a": offset + i if distinct else 1, "b": 2})
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


Case = tuple[Callable[[], Toolset], bool]  # (make a fresh toolset, distinct arguments?)

MAIN_CASES: dict[str, Case] = {
    "bare": (lambda: SimpleToolset([Add()]), True),
    "every policy, miss": (lambda: every_policy(SimpleToolset([Add()])), True),
    "every policy, hit": (lambda: every_policy(SimpleToolset([Add()])), False),
    "pipeline alone": (lambda: with_policies(SimpleToolset([Add()]), PassOn()), True),
}


def run_counted_case(name: str, n: int) -> None:
    """Run one case's calls inside `functools.reduce`, the function callgrind counts."""
    make, distinct = MAIN_CASES[name]
    loop = asyncio.new_event_loop()
    toolset = make()

    async def batch(batch_calls: list[ToolCall]) -> None:
        for call in batch_calls:
            await toolset.handle(call)

    loop.run_until_complete(batch(calls(50, distinct=True, offset=10**7)))  # warm up
    loop.run_until_complete(batch(calls(50, distinct=False, offset=0)))  # the hit's entry
    measured = calls(n, distinct=distinct, offset=1000)
    functools.reduce(lambda _, __: loop.run_until_complete(batch(measured)), [0], None)
    loop.close()


def count_instructions(n: int = 1000) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("--instructions needs valgrind (apt-get install valgrind)")
        return 2
    counts: dict[str, float] = {}
    for name in MAIN_CASES:
        done = subprocess.run(
            [valgrind, "--tool=callgrind", "--toggle-collect=functools_reduce",
             "--callgrind-out-file=/dev/null", sys.executable, __file__,
             "--run-case", name, "--calls", str(n)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        collected = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
        assert collected is not None, done.stderr
        counts[name] = int(collected.group(1)) / n
        print(f"{name:<24} {counts[name]:10,.0f} instructions per call", flush=True)
    bare = counts["bare"]
    print()
    for name, value in counts.items():
        print(f"{name:<24} {value / bare:5.2f}x bare")
    return 0


async def main(quick: bool) -> int:
    n, repeats = (500, 5) if quick else (3000, 9)
    python = f"Python {platform.python_version()} on {platform.machine()}"
    print(f"{python}; {repeats} repeats of {n} calls; median us per call")

    def alone(index: int) -> Callable[[], Toolset]:
        return lambda: with_policies(SimpleToolset([Add()]), named_policies()[index][1])

    cases: dict[str, Case] = {
        **MAIN_CASES,
        "+ event listener, miss": (
            lambda: with_policies(
                every_policy(SimpleToolset([Add()])), EventHookPolicy(lambda event: None)
            ),
            True,
        ),
        **{name: (alone(i), True) for i, (name, _) in enumerate(named_policies())},
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for repeat in range(-1, repeats):  # repeat -1 warms everything up and is not kept
        for index, (name, (make, distinct)) in enumerate(cases.items()):
            toolset = make()  # fresh state each batch: caches and counters start empty
            await per_call_us(toolset, calls(1, distinct=False, offset=0))  # the hit's entry
            offset = (repeat + 2) * len(cases) * n + index * n  # texts no other batch used
            value = await per_call_us(toolset, calls(n, distinct=distinct, offset=offset))
            if repeat >= 0:
                samples[name].append(value)
    median = {name: statistics.median(values) for name, values in samples.items()}
    bare = median["bare"]

    print()
    print(f"{'case':<24} {'us/call':>8} {'x bare':>7}  target")
    for name, target in (
        ("bare", ""),
        ("every policy, miss", f"<= {MISS_TARGET}x"),
        ("every policy, hit", f"<= {HIT_TARGET}x"),
        ("+ event listener, miss", ""),
        ("pipeline alone", ""),
    ):
        print(f"{name:<24} {median[name]:8.2f} {median[name] / bare:7.2f}  {target}")
    print()
    print("each policy on its own (cache miss), what it adds to a bare call:")
    alone_floor = median["pipeline alone"]
    print(f"{'policy':<24} {'us/call':>8} {'x bare':>7} {'+us over pipeline alone':>24}")
    for name, _ in named_policies():
        value = median[name]
        print(f"{name:<24} {value:8.2f} {value / bare:7.2f} {value - alone_floor:24.2f}")
    print()
    verdict = {True: "met", False: "MISSED"}
    miss, hit = median["every policy, miss"] / bare, median["every policy, hit"] / bare
    print(f"cache miss {miss:.2f}x bare: {verdict[miss <= MISS_TARGET]} (target {MISS_TARGET}x)")
    print(f"cache hit {hit:.2f}x bare: {verdict[hit <= HIT_TARGET]} (target {HIT_TARGET}x)")
    return 0  # a report, not a gate: the verdicts above say whether the targets were met


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with valgrind instead"
    )
    parser.add_argument("--run-case", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=1000, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.run_case:
        run_counted_case(arguments.run_case, arguments.calls)
        sys.exit(0)
    if arguments.instructions:
        sys.exit(count_instructions(arguments.calls))
    sys.exit(asyncio.run(main(arguments.quick)))
