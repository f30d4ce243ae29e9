"""What a function tool costs, side by side with a CallableTool2, in one process.

- construction: `FunctionTool.from_function(add)`, warm (the first build, which pays for
  imports and pydantic's first schemas, is reported apart), against the peers' figures from
  the shared anchor benchmark (pydantic-ai 667 us is the fastest of them).
- call: one call through `SimpleToolset.handle`, JSON string in, awaited `ToolResult` out, for
  a CallableTool2 and for the FunctionTool of the same `add`. Each repeat collects garbage
  first, then times a batch; the figure is the median of the repeats' per-call means, and the
  two tools alternate so drift on a shared machine hits both alike.

Run: `.venv/bin/python benchmarks/bench_function.py [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

from pydantic import BaseModel

from kosong.message import ToolCall
from kosong.tooling import CallableTool2, FunctionTool, ToolOk, ToolReturnValue
from kosong.tooling.simple import SimpleToolset

ARGS = '{"a": 1, "b": 2}'
PEERS_CONSTRUCT_US = {
    "pydantic-ai": 667,
    "openai-agents": 777,
    "mcp1-FastMCP": 1174,
    "langchain-core": 1675,
}


async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


class AddParams(BaseModel):
    a: int
    b: int


class Add2(CallableTool2[AddParams]):
    name: str = "add"
    description: str = "Add two integers."
    params: type[AddParams] = AddParams

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


def construction_us(repeats: int) -> tuple[float, float]:
    """(first build, median warm build) of FunctionTool.from_function(add), in us."""
    t0 = time.perf_counter_ns()
    FunctionTool.from_function(add)
    first = (time.perf_counter_ns() - t0) / 1e3
    samples: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        FunctionTool.from_function(add)
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return first, statistics.median(samples)


async def call_batch(toolset: SimpleToolset, n: int) -> float:
    """Mean us per call over `n` calls through `toolset.handle`, awaited one by one."""
    handle = toolset.handle
    body = ToolCall.FunctionBody(name="add", arguments=ARGS)
    result = await handle(ToolCall(id="call-1", function=body))
    if result.return_value.output != "3":
        raise SystemExit(f"wrong result: {result.return_value!r}")
    gc.collect()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        await handle(ToolCall(id="call-1", function=body))
    return (time.perf_counter_ns() - t0) / n / 1e3


async def calls_us(repeats: int, n: int) -> tuple[float, float]:
    """Median us per call: (CallableTool2, FunctionTool), alternating repeats."""
    toolset2 = SimpleToolset([Add2()])
    toolset_f = SimpleToolset([FunctionTool.from_function(add)])
    for toolset in (toolset2, toolset_f):  # warm up both paths
        await call_batch(toolset, n)
    c2: list[float] = []
    cf: list[float] = []
    for _ in range(repeats):
        c2.append(await call_batch(toolset2, n))
        cf.append(await call_batch(toolset_f, n))
    return statistics.median(c2), statistics.median(cf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    quick = parser.parse_args().quick
    first, construct = construction_us(200 if quick else 2000)
    c2, cf = asyncio.run(calls_us(5 if quick else 15, 500 if quick else 3000))
    fastest_peer = min(PEERS_CONSTRUCT_US.values())

    print("# FunctionTool vs CallableTool2 (median us)")
    print()
    print(f"{'case':<52} {'us':>9}")
    print("-" * 62)
    print(f"{'call via SimpleToolset.handle: CallableTool2':<52} {c2:>9.2f}")
    print(f"{'call via SimpleToolset.handle: FunctionTool':<52} {cf:>9.2f}")
    ratio = cf / c2
    print(f"{'ratio FunctionTool / CallableTool2 (target <= 1.2)':<52} {ratio:>9.2f}")
    print(f"{'construct FunctionTool.from_function(add), warm':<52} {construct:>9.1f}")
    print(f"{'construct, first in this process':<52} {first:>9.1f}")
    for peer, us in sorted(PEERS_CONSTRUCT_US.items(), key=lambda kv: kv[1]):
        print(f"{'  peer construct (anchor bench): ' + peer:<52} {us:>9.1f}")
    verdict_call = "ok" if ratio <= 1.2 else "OVER TARGET"
    verdict_build = "ok" if construct < fastest_peer else "SLOWER THAN A PEER"
    print()
    print(f"call ratio: {verdict_call}; construction vs fastest peer ({fastest_peer} us): "
          f"{verdict_build}")  # fmt: skip


if __name__ == "__main__":
    main()
