"""Request bytes per step, and whether the tools prefix changed, over a 1,000-tool catalog:
kosong's `search_tools` (the found tools join the list) against the provider's own tool
search (every tool deferred, the same list at every step).

Each way, for Anthropic and for OpenAI Responses, an agent makes 6 steps, searching once per
step for another service's tools (`search_tools` finds up to 5). For each step it prints the
request body's bytes (`request_body`, the JSON the provider sends: 6 messages of history) and
whether the `tools` array is byte-identical to the step before's (a changed tools array breaks
the provider's prompt-prefix cache from the tools on: Anthropic caches tools, then system, then
messages). Deterministic; no network.

Run: `.venv/bin/python benchmarks/bench_native_search.py` (needs the `search` extra, in `dev`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bench_tool_search import SERVICES, make_catalog

from kosong._step import offered
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.openai import OpenAIResponses
from kosong.message import Message, ToolCall
from kosong.tooling import SEARCH_TOOL_NAME, searchable
from kosong.tooling.simple import SimpleToolset

STEPS = 6
HISTORY = [Message(role="user", content=f"Step {i}: do the next thing.") for i in range(6)]


async def run(provider: Any, native: bool) -> list[tuple[int, bool]]:
    toolset = searchable(SimpleToolset(make_catalog(1000)), native_search=native)
    rows: list[tuple[int, bool]] = []
    previous: str | None = None
    for number in range(STEPS):
        tools, search = offered(toolset, provider)
        sent = provider.with_native_tools(search) if search else provider
        body = sent.request_body("You are an assistant.", tools, HISTORY)
        shown = json.dumps(body.get("tools", []))
        rows.append((len(json.dumps(body).encode()), previous is not None and shown != previous))
        previous = shown
        if not native:  # the model searches; what it finds joins the list
            arguments = json.dumps({"query": f"{SERVICES[number]} issues and comments"})
            call = ToolCall(
                id=f"c{number}",
                function=ToolCall.FunctionBody(name=SEARCH_TOOL_NAME, arguments=arguments),
            )
            await toolset.handle(call)
    return rows


async def main() -> None:
    providers = {
        "anthropic": Anthropic(model="claude-sonnet-4-6", api_key="k"),
        "openai-responses": OpenAIResponses(model="gpt-5.5", api_key="k"),
    }
    print("| provider | way | " + " | ".join(f"step {i + 1}" for i in range(STEPS)) + " |")
    print("|---|---|" + "---|" * STEPS)
    for name, provider in providers.items():
        for native in (False, True):
            rows = await run(provider, native)
            way = "provider's tool search" if native else "kosong search_tools"
            cells = [f"{size:,} B{' (tools changed)' if changed else ''}" for size, changed in rows]
            print(f"| {name} | {way} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    asyncio.run(main())
