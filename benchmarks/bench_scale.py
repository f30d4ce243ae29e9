"""What kosong costs as the catalog grows: 10 to 10,000 function tools, beside pydantic-ai.

Parts (each `--part`, all by default), every figure a median over repeats, each library in a
fresh process of its own for what it builds:

tools      making a function tool from a function: µs and memory per tool (RSS growth, and
           tracemalloc's count in a second process), kosong `FunctionTool.from_function`
           against pydantic-ai `Tool`; the functions have 1 to 4 parameters of varied types
           with a docstring describing them (a seeded catalog; signatures given through
           `__signature__`, read by both libraries as any function's)
body       what one step sends about its tools, repeated with the same tools: kosong's
           `request_body` for OpenAI Chat and Anthropic (µs per step and per tool, and the first
           request's), and what the provider keeps per tool sent (tracemalloc); then a whole
           step through the SDK's own client over an in-process transport (no network)
           answering a fixed reply: kosong `generate` (non-streamed)
           against pydantic-ai's `OpenAIChatModel.request` / `AnthropicModel.request`
wrappers   `.tools` of each composition wrapper over a `SimpleToolset` of N tools, read again
           (what every step does): prefixed, renamed, filtered, combined, prepared, searchable
search     tool search: `SearchableToolset.search` p50 / p99 over 300 queries, against plain
           bm25s (`bm25s.tokenize` + `BM25.retrieve`, k=5) over the same texts
calls      1 to 10,000 concurrent calls of an `async` tool that sleeps 10 ms, through
           `SimpleToolset.handle`, against a bare-asyncio floor (one task per call of the same
           function): wall time, and the garbage-collected objects each call keeps alive

Run (the venvs are made by benchmarks/setup_scale_bench.sh; not part of the repository):

    /tmp/kosong-bench/peers/bin/python benchmarks/bench_scale.py                  # everything
    /tmp/kosong-bench/peers/bin/python benchmarks/bench_scale.py --part body --sizes 10 1000
    /tmp/kosong-bench/peers/bin/python benchmarks/bench_scale.py --plot benchmarks/scale.svg
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

SIZES = [10, 100, 1000, 10000]
HERE = Path(__file__).resolve().parent

# --- the catalog: N functions of varied signatures, the same for both libraries -----------------

SERVICES = [
    "github",
    "slack",
    "jira",
    "drive",
    "stripe",
    "notion",
    "linear",
    "sentry",
    "s3",
    "redis",
]
VERBS = ["create", "get", "list", "update", "delete", "search", "archive", "export"]
OBJECTS = ["issue", "comment", "message", "channel", "user", "file", "invoice", "ticket", "page"]
PARAMETERS: list[tuple[str, Any, Any, str]] = [
    ("query", str, inspect.Parameter.empty, "What to look for."),
    ("limit", int, 20, "How many results at most."),
    ("owner", str, inspect.Parameter.empty, "Who owns it."),
    ("since", str | None, None, "An ISO 8601 date: only what changed after it."),
    ("tags", list[str], inspect.Parameter.empty, "Labels to match."),
    ("archived", bool, False, "Whether archived ones count too."),
    ("score", float, 0.5, "The least relevance kept, 0 to 1."),
    ("mode", Literal["fast", "full"], "fast", "How thorough to be."),
]


def catalog(size: int, seed: int = 0) -> list[Callable[..., Any]]:
    """`size` functions, each with a name, a docstring and 1 to 4 described parameters."""
    rng = random.Random(seed)
    functions: list[Callable[..., Any]] = []
    for i in range(size):
        service, verb, obj = rng.choice(SERVICES), rng.choice(VERBS), rng.choice(OBJECTS)
        chosen = rng.sample(PARAMETERS, rng.randint(1, 4))
        chosen.sort(key=lambda p: p[2] is not inspect.Parameter.empty)  # required ones first

        def function(**arguments: Any) -> str:
            return "ok"

        function.__name__ = function.__qualname__ = f"{service}_{verb}_{obj}_{i}"
        args = "\n".join(f"    {name}: {text}" for name, _, _, text in chosen)
        function.__doc__ = (
            f"{verb.title()} a {obj} in {service.title()}.\n\n"
            f"Use it when the user asks to {verb} {obj}s.\n\nArgs:\n{args}\n"
        )
        function.__signature__ = inspect.Signature(
            [
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default
                )
                for name, kind, default, _ in chosen
            ],
            return_annotation=str,
        )
        function.__annotations__ = {name: kind for name, kind, _, _ in chosen} | {"return": str}
        functions.append(function)
    return functions


def kosong_tools(functions: list[Callable[..., Any]]) -> list[Any]:
    from kosong.tooling import FunctionTool

    return [FunctionTool.from_function(f) for f in functions]


def pydantic_ai_tools(functions: list[Callable[..., Any]]) -> list[Any]:
    from pydantic_ai import Tool

    return [Tool(f) for f in functions]


BUILDERS = {"kosong": kosong_tools, "pydantic-ai": pydantic_ai_tools}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def median_us(run: Callable[[], Any], repeats: int, number: int = 1) -> float:
    samples: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            run()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- parts (each a worker: `--worker PART --library L --size N`) ---------------------------------


def worker_tools(library: str, size: int, traced: bool) -> dict[str, Any]:
    build = BUILDERS[library]
    build(catalog(20, seed=1))  # warm: imports, each type's schema
    functions = catalog(size)
    gc.collect()
    if traced:
        tracemalloc.start()
        kept = build(functions)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        assert len(kept) == size
        return {"traced_bytes_per_tool": held / size}
    before = rss()
    start = time.perf_counter()
    kept = build(functions)
    elapsed = time.perf_counter() - start
    gc.collect()
    grown = rss() - before
    assert len(kept) == size
    return {"build_us_per_tool": elapsed / size * 1e6, "rss_bytes_per_tool": grown / size}


BASE = "http://model.test"  # never reached: the transport answers in process
OPENAI_REPLY = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip
ANTHROPIC_REPLY = {
    "id": "m", "type": "message", "role": "assistant", "model": "m",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}  # fmt: skip


def _http_client(reply: dict[str, Any]) -> Any:
    try:  # the SDKs' own HTTP package (openai 3 and anthropic 2 are on httpx2)
        httpx: Any = importlib.import_module("httpx2")
    except ImportError:
        httpx = importlib.import_module("httpx")

    body = json.dumps(reply).encode()
    return httpx.AsyncClient(
        transport=httpx.MockTransport(
            lambda request: httpx.Response(
                200, content=body, headers={"content-type": "application/json"}
            )
        )
    )


def worker_body(library: str, size: int, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if library == "kosong":
        from kosong.chat_provider.anthropic import Anthropic
        from kosong.chat_provider.openai import OpenAIChat
        from kosong.message import Message
        from kosong.tooling.simple import SimpleToolset

        toolset = SimpleToolset(kosong_tools(catalog(size)))
        history = [Message(role="user", content="go")]
        providers = {
            "openai": OpenAIChat(
                model="m", api_key="k", base_url=f"{BASE}/v1", stream=False,
                http_client=_http_client(OPENAI_REPLY),
            ),
            "anthropic": Anthropic(
                model="m", api_key="k", base_url=BASE, stream=False,
                http_client=_http_client(ANTHROPIC_REPLY),
            ),
        }  # fmt: skip
        for api, provider in providers.items():
            start = time.perf_counter()
            provider.request_body("", toolset.tools, history)
            out[f"{api}_first_us"] = (time.perf_counter() - start) * 1e6
            out[f"{api}_body_us"] = median_us(
                lambda p=provider: p.request_body("", toolset.tools, history), repeats
            )

            async def step(p: Any = provider) -> None:
                stream = await p.generate("", toolset.tools, history)
                async for _ in stream:
                    pass

            out[f"{api}_step_us"] = _async_median(step, repeats)
        # What a provider keeps per tool sent (its entry and verdict, made once per tool): a
        # fresh catalog's first request, as tracemalloc counts it, the body itself let go.
        fresh = SimpleToolset(kosong_tools(catalog(size))).tools
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        providers["openai"].request_body("", fresh, history)
        gc.collect()
        out["openai_kept_kib"] = (tracemalloc.get_traced_memory()[0] - before) / size / 1024
        tracemalloc.stop()
        return out
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    definitions = [t.tool_def for t in pydantic_ai_tools(catalog(size))]
    parameters = ModelRequestParameters(function_tools=definitions)
    messages = [ModelRequest(parts=[UserPromptPart("go")])]
    openai = OpenAIProvider(
        base_url=f"{BASE}/v1", api_key="k", http_client=_http_client(OPENAI_REPLY)
    )
    anthropic = AnthropicProvider(
        api_key="k", base_url=BASE, http_client=_http_client(ANTHROPIC_REPLY)
    )
    models = {
        "openai": OpenAIChatModel("m", provider=openai),
        "anthropic": AnthropicModel("m", provider=anthropic),
    }
    for api, model in models.items():

        async def request(m: Any = model) -> None:
            await m.request(messages, None, parameters)

        out[f"{api}_step_us"] = _async_median(request, repeats)
    return out


def _async_median(step: Callable[[], Any], repeats: int) -> float:
    samples: list[float] = []

    async def main() -> None:
        await step()  # the first request (and client set-up) is not measured
        for _ in range(repeats):
            start = time.perf_counter()
            await step()
            samples.append((time.perf_counter() - start) * 1e6)

    asyncio.run(main())
    return statistics.median(samples)


def worker_wrappers(size: int, repeats: int) -> dict[str, Any]:
    from kosong.tooling import combined, filtered, prefixed, prepared, renamed, searchable
    from kosong.tooling.simple import SimpleToolset

    tools = kosong_tools(catalog(size))
    inner = SimpleToolset(tools)
    names = [t.name for t in tools]
    half = names[: size // 2]
    wrappers = {
        "SimpleToolset": inner,
        "prefixed": prefixed(inner, "p_"),
        "renamed": renamed(inner, {names[0]: "first"}),
        "filtered": filtered(inner, half),
        "combined": combined(SimpleToolset(tools[: size // 2]), SimpleToolset(tools[size // 2 :])),
        "prepared": prepared(inner, lambda given: given[: len(given) // 2]),
        "searchable": searchable(inner, always_visible=names[:3]),
    }
    out: dict[str, Any] = {}
    for name, toolset in wrappers.items():
        _ = toolset.tools  # the first read makes what is kept
        out[name] = median_us(lambda t=toolset: t.tools, repeats, number=20)
    return out


def worker_search(size: int, queries: int) -> dict[str, Any]:
    import bm25s
    import Stemmer

    from kosong.tooling import searchable
    from kosong.tooling.simple import SimpleToolset

    tools = kosong_tools(catalog(size))
    toolset = searchable(SimpleToolset(tools))
    rng = random.Random(2)
    asked = [
        f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} in {rng.choice(SERVICES)}"
        for _ in range(queries)
    ]
    toolset.search(asked[0])  # builds the index
    ours: list[float] = []
    for query in asked:
        start = time.perf_counter()
        toolset.search(query)
        ours.append((time.perf_counter() - start) * 1e6)
    stemmer = Stemmer.Stemmer("english")
    texts = [f"{t.name} {t.name} {t.description}" for t in tools]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stemmer=stemmer, show_progress=False), show_progress=False
    )
    plain: list[float] = []
    for query in asked:
        start = time.perf_counter()
        tokens = bm25s.tokenize(query, stemmer=stemmer, show_progress=False)
        retriever.retrieve(tokens, k=min(5, size), show_progress=False)
        plain.append((time.perf_counter() - start) * 1e6)
    return {
        "kosong_p50": percentile(ours, 0.5), "kosong_p99": percentile(ours, 0.99),
        "bm25s_p50": percentile(plain, 0.5), "bm25s_p99": percentile(plain, 0.99),
    }  # fmt: skip


def worker_calls(library: str, size: int, repeats: int) -> dict[str, Any]:
    from kosong.message import ToolCall
    from kosong.tooling import tool
    from kosong.tooling.simple import SimpleToolset

    async def add(a: int, b: int) -> int:
        """Add two integers, after 10 ms."""
        await asyncio.sleep(0.01)
        return a + b

    toolset = SimpleToolset([tool(add)])
    calls = [
        ToolCall(
            id=f"c{i}", function=ToolCall.FunctionBody(name="add", arguments='{"a": 1, "b": 2}')
        )
        for i in range(size)
    ]

    async def batch(count: bool) -> tuple[float, float]:
        gc.collect()
        before = len(gc.get_objects()) if count else 0
        start = time.perf_counter()
        if library == "kosong":
            pending = [toolset.handle(call) for call in calls]
        else:
            pending = [asyncio.ensure_future(add(1, 2)) for _ in calls]
        await asyncio.sleep(0)
        elapsed = time.perf_counter() - start
        # Every call in flight now, waiting in its sleep (counting is not timed).
        alive = (len(gc.get_objects()) - before - 1) / size if count else 0.0  # less `pending`
        start = time.perf_counter()
        await asyncio.gather(*pending)  # type: ignore[arg-type]
        return elapsed + time.perf_counter() - start, alive

    async def main() -> dict[str, Any]:
        # Counted in the first batch: in a later one, what the batch before left is freed
        # meanwhile and would be subtracted.
        _, objects = await batch(count=True)
        walls = [(await batch(count=False))[0] * 1e3 for _ in range(repeats)]
        return {"wall_ms": statistics.median(walls), "objects_per_call": objects}

    return asyncio.run(main())


def worker(part: str, library: str, size: int, repeats: int) -> dict[str, Any]:
    if part == "tools":
        return worker_tools(library, size, traced=False)
    if part == "tools-traced":
        return worker_tools(library, size, traced=True)
    if part == "body":
        return worker_body(library, size, repeats)
    if part == "wrappers":
        return worker_wrappers(size, repeats)
    if part == "search":
        return worker_search(size, queries=300)
    if part == "calls":
        return worker_calls(library, size, repeats)
    raise SystemExit(f"no part {part!r}")


# --- the orchestrator ----------------------------------------------------------------------------


def run(part: str, library: str, size: int, repeats: int) -> dict[str, Any]:
    argv = [
        sys.executable,
        __file__,
        "--worker",
        part,
        "--library",
        library,
        "--sizes",
        str(size),
        "--repeats",
        str(repeats),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{part} {library} {size} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def merged(samples: list[dict[str, Any]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def tools_table(sizes: list[int], rounds: int) -> tuple[str, dict[str, Any]]:
    rows, data = [], {}
    for size in sizes:
        for library in BUILDERS:
            timed = merged([run("tools", library, size, 1) for _ in range(rounds)])
            traced = merged([run("tools-traced", library, size, 1) for _ in range(rounds)])
            data[(library, size)] = {**timed, **traced}
    head = (
        "| tools | kosong µs/tool | pydantic-ai µs/tool | ratio | kosong KiB/tool (RSS; traced) "
        "| pydantic-ai KiB/tool (RSS; traced) | ratio (RSS; traced) |"
    )
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    for size in sizes:
        k, p = data[("kosong", size)], data[("pydantic-ai", size)]
        # RSS grows by whole pages: below a few thousand tools it says little (shown as -).
        rss = (
            k["rss_bytes_per_tool"] / p["rss_bytes_per_tool"]
            if p["rss_bytes_per_tool"] > 0
            else None
        )
        rss_text = f"{rss:.2f}x" if rss is not None and size >= 1000 else "-"
        rows.append(
            f"| {size:,} | {k['build_us_per_tool']:,.0f} | {p['build_us_per_tool']:,.0f} | "
            f"**{k['build_us_per_tool'] / p['build_us_per_tool']:.2f}x** | "
            f"{k['rss_bytes_per_tool'] / 1024:.2f}; {k['traced_bytes_per_tool'] / 1024:.2f} | "
            f"{p['rss_bytes_per_tool'] / 1024:.2f}; {p['traced_bytes_per_tool'] / 1024:.2f} | "
            f"**{rss_text}; {k['traced_bytes_per_tool'] / p['traced_bytes_per_tool']:.2f}x** |"
        )
    return "\n".join(rows), {f"{lib}:{size}": v for (lib, size), v in data.items()}


def body_table(sizes: list[int], rounds: int, repeats: int) -> tuple[str, dict[str, Any]]:
    data = {
        (lib, size): merged([run("body", lib, size, repeats) for _ in range(rounds)])
        for size in sizes
        for lib in BUILDERS
    }
    head = (
        "| tools | OpenAI Chat body µs/step (per tool; first) "
        "| Anthropic body µs/step (per tool; first) | kept KiB/tool (OpenAI Chat) "
        "| OpenAI step: kosong / pydantic-ai µs "
        "| ratio | Anthropic step: kosong / pydantic-ai µs | ratio |"
    )
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for size in sizes:
        k, p = data[("kosong", size)], data[("pydantic-ai", size)]
        cells = [f"{size:,}"]
        for api in ("openai", "anthropic"):
            cells.append(
                f"{k[f'{api}_body_us']:,.0f} ({k[f'{api}_body_us'] / size:.2f}; "
                f"{k[f'{api}_first_us']:,.0f})"
            )
        cells.append(f"{k['openai_kept_kib']:.2f}")
        for api in ("openai", "anthropic"):
            cells.append(f"{k[f'{api}_step_us']:,.0f} / {p[f'{api}_step_us']:,.0f}")
            cells.append(f"**{k[f'{api}_step_us'] / p[f'{api}_step_us']:.2f}x**")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows), {f"{lib}:{size}": v for (lib, size), v in data.items()}


def wrappers_table(sizes: list[int], rounds: int, repeats: int) -> tuple[str, dict[str, Any]]:
    data = {
        size: merged([run("wrappers", "kosong", size, repeats) for _ in range(rounds)])
        for size in sizes
    }
    names = list(data[sizes[0]])
    rows = [
        "| `.tools`, µs per read | " + " | ".join(f"{s:,} tools" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for name in names:
        rows.append(f"| {name} | " + " | ".join(f"{data[s][name]:,.1f}" for s in sizes) + " |")
    return "\n".join(rows), {str(s): v for s, v in data.items()}


def search_table(sizes: list[int], rounds: int) -> tuple[str, dict[str, Any]]:
    data = {
        size: merged([run("search", "kosong", size, 1) for _ in range(rounds)]) for size in sizes
    }
    rows = [
        "| tools | kosong p50 / p99 µs | plain bm25s p50 / p99 µs | ratio p50 / p99 |",
        "|---|---:|---:|---:|",
    ]
    for size in sizes:
        d = data[size]
        rows.append(
            f"| {size:,} | {d['kosong_p50']:,.0f} / {d['kosong_p99']:,.0f} "
            f"| {d['bm25s_p50']:,.0f} / {d['bm25s_p99']:,.0f} "
            f"| **{d['kosong_p50'] / d['bm25s_p50']:.2f}x / "
            f"{d['kosong_p99'] / d['bm25s_p99']:.2f}x** |"
        )
    return "\n".join(rows), {str(s): v for s, v in data.items()}


def calls_table(counts: list[int], rounds: int, repeats: int) -> tuple[str, dict[str, Any]]:
    data = {
        (lib, n): merged([run("calls", lib, n, repeats) for _ in range(rounds)])
        for n in counts
        for lib in ("floor", "kosong")
    }
    rows = ["| concurrent calls | floor wall ms | kosong wall ms | ratio | over 10 ms: ratio "
            "| objects alive per call (floor / kosong) |",
            "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for n in counts:
        f, k = data[("floor", n)], data[("kosong", n)]
        over = (k["wall_ms"] - 10) / max(f["wall_ms"] - 10, 1e-3)
        rows.append(
            f"| {n:,} | {f['wall_ms']:.1f} | {k['wall_ms']:.1f} "
            f"| **{k['wall_ms'] / f['wall_ms']:.2f}x** | {over:.2f}x | "
            f"{f['objects_per_call']:.1f} / {k['objects_per_call']:.1f} |"
        )
    return "\n".join(rows), {f"{lib}:{n}": v for (lib, n), v in data.items()}


def plot(results: dict[str, Any], path: str) -> None:
    """Per-step cost against catalog size, kosong beside pydantic-ai (log-log)."""
    matplotlib: Any = importlib.import_module("matplotlib")  # in the bench venv only
    matplotlib.use("Agg")
    plt: Any = importlib.import_module("matplotlib.pyplot")

    body = results["body"]
    sizes = sorted({int(key.split(":")[1]) for key in body})
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = {"kosong": "tab:blue", "pydantic-ai": "tab:orange"}
    for api, label, line in (("openai", "OpenAI Chat", "-"), ("anthropic", "Anthropic", "--")):
        for library, colour in colours.items():
            ys = [body[f"{library}:{s}"][f"{api}_step_us"] / 1000 for s in sizes]
            ax.plot(sizes, ys, line, marker="o", color=colour, label=f"{library}, {label}: step")
        ys = [body[f"kosong:{s}"][f"{api}_body_us"] / 1000 for s in sizes]
        ax.plot(sizes, ys, line, marker="^", color="tab:green",
                label=f"kosong, {label}: request body alone")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tools in the catalog")
    ax.set_ylabel("ms per step (repeated request)")
    ax.set_title("Per-step cost against catalog size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--part", nargs="*", default=["tools", "body", "wrappers", "search", "calls"]
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    parser.add_argument("--calls", type=int, nargs="*", default=[1, 10, 100, 1000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--worker")
    parser.add_argument("--library", default="kosong")
    parser.add_argument("--out", help="write the medians as JSON here")
    parser.add_argument("--plot", help="draw the per-step figure (an .svg or .png) from this run")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.library, args.sizes[0], args.repeats)))
        return
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"# bench_scale ({started}; Python {sys.version.split()[0]}; "
          f"load {os.getloadavg()[0]:.2f}; {args.rounds} rounds)\n")  # fmt: skip
    results: dict[str, Any] = {}
    for part in args.part:
        if part == "tools":
            text, results[part] = tools_table(args.sizes, args.rounds)
        elif part == "body":
            text, results[part] = body_table(args.sizes, args.rounds, args.repeats)
        elif part == "wrappers":
            text, results[part] = wrappers_table(args.sizes, args.rounds, args.repeats)
        elif part == "search":
            text, results[part] = search_table(args.sizes, args.rounds)
        elif part == "calls":
            text, results[part] = calls_table(args.calls, args.rounds, max(3, args.repeats // 3))
        else:
            raise SystemExit(f"no part {part!r}")
        print(text + "\n", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    if args.plot and "body" in results:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
