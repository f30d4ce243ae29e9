"""What one tool call costs through kosong, side by side with the floor, in one run.

Cases (all from the JSON string to the model-facing result, as the shared anchor harness
measures them):

- floor-pydantic+task: json.loads + a prebuilt pydantic validator + await + a small result
  object, inside the one asyncio task that `handle()` must return. No library can do less.
- CallableTool2 / CallableTool / FunctionTool via SimpleToolset.handle: valid, invalid and
  malformed arguments.
- FunctionTool: the same `add` as a plain `async def`, made a tool by `FunctionTool.from_function`.
- construction: one tool built and registered (its class already defined; for FunctionTool, from
  the function, as the peers build theirs).
- concurrency: 10,000 calls of a tool that sleeps 10 ms, gathered at once, against bare asyncio
  doing the same sleeps: wall time and peak RSS growth, each in a fresh process.

Run: `python3 run.py bench` (or `.venv/bin/python benchmarks/bench_dispatch.py [--quick]`).
The machine is shared and noisy, so every figure is a median over repeats and rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python 3.11

from kosong.message import ToolCall
from kosong.tooling import (
    CallableTool,
    CallableTool2,
    FunctionTool,
    ToolOk,
    ToolResult,
    ToolReturnValue,
)
from kosong.tooling.simple import SimpleToolset

VALID, INVALID, MALFORMED = '{"a": 1, "b": 2}', '{"a": "x"}', '{"a": 1, b: 2}'
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
CONC_N, CONC_SLEEP = 10_000, 0.01
RESULTS = Path(__file__).resolve().parent / "results"


# ---- the tools -----------------------------------------------------------------------------


class AddParams(BaseModel):
    a: int
    b: int


class Add2(CallableTool2[AddParams]):
    name: str = "add"
    description: str = "Add two integers."
    params: type[AddParams] = AddParams

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


class Add1(CallableTool):
    name: str = "add"
    description: str = "Add two integers."
    parameters: dict[str, Any] = SCHEMA

    async def __call__(self, a: int, b: int) -> ToolReturnValue:
        return ToolOk(output=str(a + b))


async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


async def slow_add(a: int, b: int) -> str:
    """Add two integers, after 10 ms."""
    await asyncio.sleep(CONC_SLEEP)
    return str(a + b)


class SlowAdd2(Add2):
    async def __call__(self, params: AddParams) -> ToolReturnValue:
        await asyncio.sleep(CONC_SLEEP)
        return ToolOk(output=str(params.a + params.b))


class SlowAdd1(Add1):
    async def __call__(self, a: int, b: int) -> ToolReturnValue:
        await asyncio.sleep(CONC_SLEEP)
        return ToolOk(output=str(a + b))


# ---- the floor -----------------------------------------------------------------------------


class _AddArgs(TypedDict):
    a: int
    b: int


class _Res:
    __slots__ = ("call_id", "is_error", "output")

    def __init__(self, call_id: str, is_error: bool, output: str) -> None:
        self.call_id, self.is_error, self.output = call_id, is_error, output


_validate = TypeAdapter(_AddArgs).validate_python


async def _add(a: int, b: int) -> str:
    return str(a + b)


async def _slow_add(a: int, b: int) -> str:
    await asyncio.sleep(CONC_SLEEP)
    return str(a + b)


def _floor(fn: Callable[..., Awaitable[str]]) -> Callable[[str], Awaitable[_Res]]:
    async def inner(data: Any) -> _Res:
        try:
            kwargs = _validate(data)
        except ValidationError as e:
            return _Res("c", True, str(e))
        return _Res("c", False, await fn(**kwargs))

    async def call(args: str) -> _Res:
        try:
            data = json.loads(args)
        except ValueError as e:
            return _Res("c", True, str(e))
        return await asyncio.create_task(inner(data))

    return call


def _kosong(tool: Add1 | Add2 | FunctionTool) -> Callable[[str], Awaitable[ToolResult]]:
    handle = SimpleToolset([tool]).handle
    future = asyncio.Future

    async def call(args: str) -> ToolResult:
        result = handle(
            ToolCall(id="c", function=ToolCall.FunctionBody(name="add", arguments=args))
        )
        if isinstance(result, future):
            result = await result
        return result

    return call


# ---- timing --------------------------------------------------------------------------------


async def _per_call_us(call: Callable[[str], Awaitable[Any]], args: str, seconds: float) -> float:
    n = 0
    gc.collect()
    start = time.perf_counter()
    while True:
        for _ in range(200):
            await call(args)
        n += 200
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / n * 1e6


def _per_build_us(build: Callable[[], Any], seconds: float) -> float:
    n = 0
    gc.collect()
    start = time.perf_counter()
    while True:
        for _ in range(20):
            build()
        n += 20
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / n * 1e6


async def micro(rounds: int, repeats: int, seconds: float) -> dict[str, dict[str, float]]:
    cases: dict[str, Callable[[str], Awaitable[Any]]] = {
        "floor-pydantic+task": _floor(_add),
        "CallableTool2": _kosong(Add2()),
        "CallableTool": _kosong(Add1()),
        "FunctionTool": _kosong(FunctionTool.from_function(add)),
    }
    samples: dict[tuple[str, str], list[float]] = {}
    for rnd in range(rounds):
        order = list(cases.items()) if rnd % 2 == 0 else list(reversed(cases.items()))
        for name, call in order:
            for label, args in (("valid", VALID), ("invalid", INVALID), ("malformed", MALFORMED)):
                await _per_call_us(call, args, 0.1)  # warm-up
                for _ in range(repeats):
                    samples.setdefault((name, label), []).append(
                        await _per_call_us(call, args, seconds)
                    )
    builders: dict[str, Callable[[], Any]] = {
        "CallableTool2": lambda: SimpleToolset([Add2()]),
        "CallableTool": lambda: SimpleToolset([Add1()]),
        # From the function, as the peers' figures are (their tools come from functions).
        "FunctionTool": lambda: SimpleToolset([FunctionTool.from_function(add)]),
    }
    for name, build in builders.items():
        _per_build_us(build, 0.1)
        samples[(name, "construct")] = [
            _per_build_us(build, seconds) for _ in range(repeats * rounds)
        ]
    out: dict[str, dict[str, float]] = {}
    for (name, label), values in samples.items():
        out.setdefault(name, {})[label] = statistics.median(values)
        if label == "valid":
            out[name]["valid_min"] = min(values)
    return out


# ---- breakdown: what the API's own objects cost, apart ----------------------------------------


def breakdown(repeats: int, seconds: float) -> dict[str, float]:
    """Median µs of each piece of the valid CallableTool2 path, measured alone."""
    from kosong.tooling._arguments import parse_arguments

    body = ToolCall.FunctionBody
    ok = ToolOk(output="3")
    pieces: dict[str, Callable[[], Any]] = {
        "ToolCall(...) with its FunctionBody (built by the caller)": lambda: ToolCall(
            id="c", function=body(name="add", arguments=VALID)
        ),
        "json.loads (the floor's parse)": lambda: json.loads(VALID),
        "parse_arguments (json + duplicate-key, NaN, overflow, depth checks)": lambda: (
            parse_arguments(VALID)
        ),
        "AddParams.model_validate (the floor validates a TypedDict)": lambda: (
            AddParams.model_validate({"a": 1, "b": 2})
        ),
        'ToolOk(output="3") (the floor builds a 3-slot object)': lambda: ToolOk(output="3"),
        "ToolResult(id, value)": lambda: ToolResult("c", ok),
        "the floor's result object": lambda: _Res("c", False, "3"),
    }
    return {
        name: statistics.median(_per_build_us(fn, seconds) for _ in range(repeats))
        for name, fn in pieces.items()
    }


# ---- concurrency (each case in a fresh process) ----------------------------------------------


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    with contextlib.suppress(OSError):  # not on every kernel; the peak is then since start
        Path("/proc/self/clear_refs").write_text("5")


async def _conc_batch(case: str) -> float:
    if case == "bare-asyncio":
        start = time.perf_counter()
        await asyncio.gather(
            *(asyncio.create_task(asyncio.sleep(CONC_SLEEP)) for _ in range(CONC_N))
        )
        return time.perf_counter() - start
    if case == "floor-pydantic+task":
        call = _floor(_slow_add)
        start = time.perf_counter()
        await asyncio.gather(*(call(VALID) for _ in range(CONC_N)))
        return time.perf_counter() - start
    tools = {
        "CallableTool2": SlowAdd2,
        "CallableTool": SlowAdd1,
        "FunctionTool": lambda: FunctionTool.from_function(slow_add, name="add"),
    }
    tool = tools[case]()
    handle = SimpleToolset([tool]).handle
    start = time.perf_counter()
    futures = [
        handle(ToolCall(id=str(i), function=ToolCall.FunctionBody(name="add", arguments=VALID)))
        for i in range(CONC_N)
    ]
    results = await asyncio.gather(*futures)
    elapsed = time.perf_counter() - start
    assert all(r.return_value.output == "3" for r in results)
    return elapsed


def conc_worker(case: str) -> None:
    async def main() -> dict[str, float]:
        # As the shared harness does: peak RSS growth over the first batch of a fresh process.
        gc.collect()
        before = _rss_kib("VmRSS")
        _reset_peak()
        first = await _conc_batch(case)
        peak = _rss_kib("VmHWM")
        walls = [first] + [await _conc_batch(case) for _ in range(2)]
        return {"wall_ms": statistics.median(walls) * 1e3, "rss_mib": (peak - before) / 1024}

    print(json.dumps(asyncio.run(main())))


def concurrency(rounds: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        cases = (
            "bare-asyncio",
            "floor-pydantic+task",
            "CallableTool2",
            "CallableTool",
            "FunctionTool",
        )
        for case in cases:
            done = subprocess.run(
                [sys.executable, __file__, "--conc-worker", case],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            for key, value in json.loads(done.stdout).items():
                out.setdefault(case, {}).setdefault(key, []).append(value)
    return {c: {k: statistics.median(v) for k, v in d.items()} for c, d in out.items()}


# ---- report --------------------------------------------------------------------------------


def report(res: dict[str, Any]) -> str:
    m, c = res["micro"], res.get("concurrency", {})
    floor = m["floor-pydantic+task"]["valid"]
    lines = [
        f"# kosong dispatch benchmark ({res['machine']})",
        "",
        "| case | valid µs | (min) | invalid µs | malformed µs | valid / floor "
        "| bad / valid (worst) | build µs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in m.items():
        ratio = row["valid"] / floor
        worst = max(row["invalid"], row["malformed"]) / row["valid"]
        build = f"{row['construct']:.1f}" if "construct" in row else "-"
        lines.append(
            f"| {name} | {row['valid']:.2f} | {row['valid_min']:.2f} | {row['invalid']:.2f} | "
            f"{row['malformed']:.2f} | {ratio:.2f}x | {worst:.2f}x | {build} |"
        )
    function_ratio = m["FunctionTool"]["valid"] / m["CallableTool2"]["valid"]
    lines += [
        "",
        "Targets: valid ≤ 1.5x the floor; invalid and malformed ≤ 2x valid; build < 100 µs "
        "(a class-based tool whose class exists).",
        f"FunctionTool call / CallableTool2 call: {function_ratio:.2f}x (target ≤ 1.2x); building "
        "a FunctionTool from a function: faster than every peer (pydantic-ai 667 µs is the "
        "fastest in ../shared/anchor-bench).",
    ]
    if "breakdown" in res:
        lines += ["", "| piece of the valid path, alone | µs |", "|---|---:|"]
        lines += [f"| {name} | {us:.2f} |" for name, us in res["breakdown"].items()]
    if c:
        bare = c["bare-asyncio"]
        lines += [
            "",
            f"| concurrency ({CONC_N:,} calls, {CONC_SLEEP * 1e3:.0f} ms sleep) "
            "| wall ms | wall / bare | RSS+ MiB | RSS / bare |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, row in c.items():
            lines.append(
                f"| {name} | {row['wall_ms']:.0f} | {row['wall_ms'] / bare['wall_ms']:.2f}x | "
                f"{row['rss_mib']:.1f} | {row['rss_mib'] / bare['rss_mib']:.2f}x |"
            )
        lines += ["", "Targets: wall ≤ 1.5x bare asyncio; memory ≤ 1.5x bare asyncio."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, fewer repeats")
    parser.add_argument("--skip-conc", action="store_true", help="skip the concurrency case")
    parser.add_argument("--conc-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.conc_worker:
        conc_worker(args.conc_worker)
        return
    rounds, repeats, seconds = (1, 3, 0.1) if args.quick else (3, 7, 0.15)
    res: dict[str, Any] = {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "micro": asyncio.run(micro(rounds, repeats, seconds)),
        "breakdown": breakdown(repeats, seconds),
    }
    if not args.skip_conc:
        res["concurrency"] = concurrency(1 if args.quick else 3)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(res, indent=2))
    print(report(res))


if __name__ == "__main__":
    main()
