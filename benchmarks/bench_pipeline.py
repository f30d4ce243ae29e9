"""What the Tool Use standard's policy pipeline adds to a tool call.

Cases, each a call from the model's JSON argument string to the ToolResult, awaited:

- bare: `SimpleToolset.handle`, a CallableTool2 that adds two integers (the reference).
- pipeline, cache miss: the same toolset wrapped in every policy (metrics, tracing, debug,
  deprecation, repeat guard, approval, truncation, in-memory cache, single-flight, retry,
  timeout), the tool read-only and cacheable, each call with new arguments so the cache
  computes a key, misses and stores. Target: under 30 us per call more than bare.
- pipeline, cache hit: the same pipeline, the same arguments every time. Target: under 10 us
  per call in all (the tool does not run, so this is the pipeline alone).
- pipeline, cache hit, text rewritten: the same arguments written differently each time
  (spacing, key order), so the pipeline parses and canonicalises them to find the entry; a
  model repeating a call mostly repeats its text, which the pipeline remembers. Information.
- pipeline + event listener, cache miss: as above plus `EventHookPolicy`, which builds each
  call's final event (its envelope); shown for information, no target.

`--per-policy` also shows where the time goes (information): what each policy adds (the
pipeline with every policy, less that one, on a cache miss and a cache hit), and the cost of
the pipeline itself (one policy that answers every call at once: the task, the call's context,
the metadata every result leaves with).

Tracing runs against the OpenTelemetry API without an SDK configured (spans are non-recording),
as in a process that has not set one up; with an exporting SDK the exporter's cost comes on top.

Every figure is the median over repeats of the mean per-call time of a batch, with the garbage
collector run before each batch. Run:
`.venv/bin/python benchmarks/bench_pipeline.py [--quick] [--per-policy]`.
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

from pydantic import BaseModel

from kosong.message import ToolCall
from kosong.standard import Forward, Policy, PolicyContext, PolicyToolset, with_policies
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
from kosong.tooling import CallableTool2, ToolOk, ToolResult, ToolReturnValue, Toolset
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


def named_policies() -> list[tuple[str, Policy]]:
    """Every policy, new, from the outside in, by name."""
    # The repeat guard counts every call, but with a limit no benchmark reaches: the cache-hit
    # case repeats one call thousands of times, which it would otherwise (rightly) stop.
    return [
        ("metrics", MetricsPolicy()),
        ("tracing", TracingPolicy()),
        ("debug", DebugPolicy()),
        ("deprecation", DeprecationPolicy()),
        ("repeat guard", RepeatGuardPolicy(10**9, max_tracked=4096)),
        ("approval", ApprovalPolicy(lambda request: True)),
        ("truncation", TruncationPolicy(20_000)),
        ("cache", CachePolicy()),
        ("single-flight", SingleFlightPolicy()),
        ("retry", RetryPolicy()),
        ("timeout", TimeoutPolicy(30)),
    ]


def every_policy(base: Toolset, *extra: Policy, without: str = "") -> PolicyToolset:
    """`base` in every policy (but the one named `without`); `extra` go after tracing."""
    policies = [policy for name, policy in named_policies() if name != without]
    return with_policies(base, *policies[:2], *extra, *policies[2:])


def calls(n: int, *, distinct: bool, offset: int, rewritten: bool = False) -> list[ToolCall]:
    """Prebuilt calls, so building them is not measured.

    `rewritten`: the same arguments every time, written differently each time.
    """

    def text(i: int) -> str:
        if rewritten:  # spacing from offset + i: texts no other batch has used
            k = offset + i
            pad, gap, lead = " " * (k % 64), " " * (k // 64 % 64), " " * (k // 4096 % 64)
            if k % 2:
                return f'{pad}{{{lead}"b":{gap}2, "a": 1}}'
            return f'{{{lead}"a": 1,{gap}"b": 2}}{pad}'
        return json.dumps({"a": offset + i if distinct else 1, "b": 2})

    return [
        ToolCall(id=f"call-{i}", function=ToolCall.FunctionBody(name="add", arguments=text(i)))
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
    make: Callable[[], Toolset],
    *,
    distinct: bool,
    n: int,
    offset: int,
    warm: bool,
    rewritten: bool = False,
) -> float:
    toolset = make()  # fresh state each batch: caches and counters start empty
    if warm:
        await per_call_us(toolset, calls(1, distinct=False, offset=0))
    return await per_call_us(
        toolset, calls(n, distinct=distinct, offset=offset, rewritten=rewritten)
    )


class Answering(Policy):
    """Answers every call itself, at once: what is left is the pipeline's own cost."""

    answer = ToolOk(output="3")  # made once: making a ToolOk is the tool's cost, not ours

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        return ToolResult(call.id, self.answer)


def answering() -> Toolset:
    return with_policies(SimpleToolset([Add()]), Answering())


async def per_policy(n: int, repeats: int) -> None:
    """What each policy adds on a miss and on a hit (every policy, less that one)."""
    names = [name for name, _ in named_policies()]

    def make(without: str) -> Callable[[], Toolset]:
        return lambda: every_policy(SimpleToolset([Add()]), without=without)

    cases = {"every policy": make(""), **{name: make(name) for name in names}}
    own: list[float] = []
    miss: dict[str, list[float]] = {name: [] for name in cases}
    hit: dict[str, list[float]] = {name: [] for name in cases}
    for repeat in range(repeats):
        for index, (name, build) in enumerate(cases.items()):
            # Texts no other batch has used (main's batches come first).
            offset = (1000 + repeat * len(cases) + index) * n
            miss[name].append(await one_batch(build, distinct=True, n=n, offset=offset, warm=False))
            hit[name].append(await one_batch(build, distinct=False, n=n, offset=0, warm=True))
        own.append(await one_batch(answering, distinct=False, n=n, offset=0, warm=True))
    all_miss = statistics.median(miss["every policy"])
    all_hit = statistics.median(hit["every policy"])
    print()
    print("What each policy adds (every policy, less that one), us per call:")
    print(f"{'policy':<16} {'miss':>7} {'hit':>7}")
    for name in names:
        added_miss = all_miss - statistics.median(miss[name])
        added_hit = all_hit - statistics.median(hit[name])
        print(f"{name:<16} {added_miss:7.2f} {added_hit:7.2f}")
    print(f"the pipeline itself (a policy answering at once): {statistics.median(own):.2f} us")


async def main(quick: bool, policies: bool) -> int:
    n, repeats = (500, 5) if quick else (3000, 9)
    tool = Add()
    python = f"Python {platform.python_version()} on {platform.machine()}"
    print(f"{python}; {repeats} repeats of {n} calls")
    # One warm-up pass of everything: imports, first-call caches, the schema validators.
    await one_batch(
        lambda: every_policy(SimpleToolset([tool])), distinct=True, n=200, offset=0, warm=True
    )

    # name: (make, distinct, warm, rewritten)
    cases: dict[str, tuple[Callable[[], Toolset], bool, bool, bool]] = {
        "bare": (lambda: SimpleToolset([tool]), True, False, False),
        "miss": (lambda: every_policy(SimpleToolset([tool])), True, False, False),
        "hit": (lambda: every_policy(SimpleToolset([tool])), False, True, False),
        "hit, rewritten": (lambda: every_policy(SimpleToolset([tool])), False, True, True),
        "events": (
            lambda: every_policy(SimpleToolset([tool]), EventHookPolicy(lambda event: None)),
            True,
            False,
            False,
        ),
    }
    # The cases take turns within each repeat, so a slow patch of a shared machine hits them
    # all rather than one. Each batch of new arguments gets texts no other batch has used, so
    # none finds them already digested.
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for repeat in range(repeats):
        for index, (name, (make, distinct, warm, rewritten)) in enumerate(cases.items()):
            offset = (repeat * len(cases) + index + 1) * n
            value = await one_batch(
                make, distinct=distinct, n=n, offset=offset, warm=warm, rewritten=rewritten
            )
            samples[name].append(value)
    bare, miss, hit, rewritten_hit, events = (statistics.median(samples[name]) for name in cases)

    rows = [
        ("bare SimpleToolset.handle", bare, None, ""),
        ("pipeline, every policy, cache miss", miss, miss - bare, f"< {MISS_TARGET_US:g} us extra"),
        ("pipeline, every policy, cache hit", hit, None, f"< {HIT_TARGET_US:g} us per call"),
        ("  cache hit, text rewritten", rewritten_hit, None, "(information)"),
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
    if policies:
        await per_policy(n, repeats)
    return 0  # a report, not a gate: the verdicts above say whether the targets were met


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument("--per-policy", action="store_true", help="also show what each policy adds")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.quick, arguments.per_policy)))
