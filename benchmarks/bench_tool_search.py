"""What tool search saves in each request, and what a search costs, over 500 generated tools.

The catalog: 500 tools of 25 made-up services (GitHub-, Slack-, Jira-like...), each a verb
and an object (`github_create_issue`), with a description of one or two sentences and two to
four described parameters, as an MCP server's tools look. Deterministic (seeded).

Reported:

- request size: the JSON bytes of the `tools` array as sent to OpenAI Chat Completions
  (`kosong.formats.to_openai_chat_tool`), with the whole catalog, and with
  `searchable(catalog, always_visible=3 tools)` before any search and after 1, 3 and 10
  searches (each adding up to 5 tools);
- search latency: building the index (the first search), then one search (`search()`, the
  ranking alone) and one `search_tools` call through `handle()` (parsing, validation, ranking,
  the answer text), as median and p95 over 500 queries;
- quality: for 200 tools, whether a query of the tool's verb, object and service finds it
  first (hit@1) or among the 5 results (hit@5), as the name's words and in other forms
  (`creating issues`: the stemmer's part).

Run: `.venv/bin/python benchmarks/bench_tool_search.py` (needs the `search` extra, in `dev`).
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

from kosong.formats import to_openai_chat_tool
from kosong.message import ToolCall
from kosong.tooling import (
    SEARCH_TOOL_NAME,
    CallableTool,
    SearchableToolset,
    Tool,
    ToolOk,
    ToolReturnValue,
    searchable,
)
from kosong.tooling.simple import SimpleToolset

SERVICES = [
    "github", "gitlab", "slack", "jira", "confluence", "gmail", "calendar", "drive", "dropbox",
    "notion", "linear", "stripe", "shopify", "salesforce", "hubspot", "zendesk", "twilio",
    "postgres", "redis", "s3", "kubernetes", "docker", "datadog", "sentry", "figma",
]  # fmt: skip
VERBS = ["create", "get", "list", "update", "delete", "search", "archive", "export"]
OBJECTS = [
    "issue", "pull_request", "comment", "message", "channel", "user", "team", "file",
    "folder", "event", "invoice", "customer", "order", "ticket", "page", "project", "label",
    "webhook", "report", "deployment",
]  # fmt: skip
PARAMETER_WORDS = ["id", "name", "query", "limit", "cursor", "owner", "status", "since", "body"]
ALWAYS_VISIBLE = 3
CATALOG_SIZE = 500


class CatalogTool(CallableTool):
    async def __call__(self, **arguments: object) -> ToolReturnValue:
        return ToolOk(output="ok")


def make_catalog(size: int = CATALOG_SIZE, seed: int = 0) -> list[CatalogTool]:
    rng = random.Random(seed)
    combos = [(s, v, o) for s in SERVICES for v in VERBS for o in OBJECTS]
    rng.shuffle(combos)
    tools: list[CatalogTool] = []
    for service, verb, obj in combos[:size]:
        thing = obj.replace("_", " ")
        params = rng.sample(PARAMETER_WORDS, rng.randint(2, 4))
        properties = {
            p: {"type": "integer" if p == "limit" else "string",
                "description": f"The {thing}'s {p}, as {service.title()} names it."}
            for p in params
        }  # fmt: skip
        description = (
            f"{verb.title()} a {thing} in {service.title()}. "
            f"Use it when the user asks to {verb} {thing}s; it returns the {thing} as JSON."
        )
        tools.append(
            CatalogTool(
                name=f"{service}_{verb}_{obj}",
                description=description,
                parameters={"type": "object", "properties": properties, "required": params[:1]},
            )
        )
    return tools


def request_bytes(tools: list[Tool]) -> int:
    return len(json.dumps([to_openai_chat_tool(t) for t in tools]).encode())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    catalog = make_catalog()
    inner = SimpleToolset(catalog)
    visible = [t.name for t in catalog[:ALWAYS_VISIBLE]]
    rng = random.Random(1)
    queries = [
        f"{v} {o.replace('_', ' ')} {s}" for s, v, o in
        ((rng.choice(SERVICES), rng.choice(VERBS), rng.choice(OBJECTS)) for _ in range(500))
    ]  # fmt: skip

    print(f"# tool search over {len(catalog)} tools ({platform.python_implementation()} "
          f"{platform.python_version()}, {sys.platform})\n")  # fmt: skip
    print("| tools sent to OpenAI Chat | tools | JSON bytes | vs. the whole catalog |")
    print("|---|---:|---:|---:|")
    whole = request_bytes(inner.tools)
    print(f"| the whole catalog | {len(inner.tools)} | {whole:,} | 100% |")
    toolset = searchable(inner, always_visible=visible)
    done = 0
    for searches in (0, 1, 3, 10):
        while done < searches:
            await toolset.handle(call(queries[done]))
            done += 1
        size = request_bytes(toolset.tools)
        label = "searchable, before any search" if searches == 0 else f"after {searches} search(es)"
        print(f"| {label} | {len(toolset.tools)} | {size:,} | {size / whole:.1%} |")

    fresh = searchable(inner, always_visible=visible)
    start = time.perf_counter()
    fresh.search("warm up the index")
    build_ms = (time.perf_counter() - start) * 1000
    ranking = timed(fresh.search, queries)
    handled = [await timed_async(fresh, q) for q in queries]
    print("\n| search latency | median | p95 |")
    print("|---|---:|---:|")
    print(f"| first search (builds the index of {len(catalog) - ALWAYS_VISIBLE} tools) "
          f"| {build_ms:.1f} ms | - |")  # fmt: skip
    rows = (
        ("`search()`: the ranking", ranking),
        ("`handle()` of a `search_tools` call: parse, validate, rank, answer", handled),
    )
    for label, samples in rows:
        print(f"| {label} | {statistics.median(samples):.0f} µs "
              f"| {percentile(samples, 0.95):.0f} µs |")  # fmt: skip

    sample = random.Random(2).sample(catalog[ALWAYS_VISIBLE:], 200)
    print(f"\n| query for each of {len(sample)} tools | hit@1 | hit@5 |")
    print("|---|---:|---:|")
    for label, words in (
        ("its verb, object and service (`create issue in github`)", _exact),
        ("other forms of them (`creating issues on github`)", _inflected),
    ):
        hits1 = hits5 = 0
        for t in sample:
            found = [f.name for f in fresh.search(words(*t.name.split("_", 2)))]
            hits1 += bool(found) and found[0] == t.name
            hits5 += t.name in found
        print(f"| {label} | {hits1 / len(sample):.0%} | {hits5 / len(sample):.0%} |")


def _exact(service: str, verb: str, obj: str) -> str:
    return f"{verb} {obj.replace('_', ' ')} in {service}"


def _inflected(service: str, verb: str, obj: str) -> str:
    verb = verb.removesuffix("e") + "ing"
    obj = obj.replace("_", " ")
    return f"{verb} {obj}s on {service}"


def call(query: str) -> ToolCall:
    arguments = json.dumps({"query": query})
    return ToolCall(
        id="s", function=ToolCall.FunctionBody(name=SEARCH_TOOL_NAME, arguments=arguments)
    )


def timed(work: Callable[[str], object], queries: list[str]) -> list[float]:
    samples: list[float] = []
    for query in queries:
        start = time.perf_counter()
        work(query)
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


async def timed_async(toolset: SearchableToolset, query: str) -> float:
    toolset.reset()
    start = time.perf_counter()
    await toolset.handle(call(query))
    return (time.perf_counter() - start) * 1e6


if __name__ == "__main__":
    asyncio.run(main())
