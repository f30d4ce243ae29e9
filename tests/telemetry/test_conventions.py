"""Every attribute kosong records, checked against the conventions that define it.

Each row names a span (by what it is), an attribute, its requirement level and the value the
conventions allow, and cites where they define it, in open-telemetry/semantic-conventions-genai:

- SPANS = docs/gen-ai/gen-ai-spans.md @ 002c8a6ea1c8a42b14a4527db83b3cabcded610a
  ("Inference", "Execute tool span"; well-known values of `gen_ai.operation.name`,
  `gen_ai.provider.name`, `gen_ai.tool.type`);
- AGENTS = docs/gen-ai/gen-ai-agent-spans.md @ e8fc5751506258db1459d1bde47994e01dee922e
  ("Invoke agent internal span");
- MCP = docs/gen-ai/mcp.md @ 1e01e830ef3c17b939ab7db8d25c7061e4239c0b ("Client", "Server");
- METRICS = docs/gen-ai/gen-ai-metrics.md @ 7269173edd774fb00a9fabc374955e0888714fa7 and
  model/gen-ai/metrics.yaml @ 9ba9b77579bd6d44b6c124877405e99920a2fe96; the tool and agent
  durations from PR #201 of that repository (commit f6a2978, "gen_ai.execute_tool.duration",
  "gen_ai.invoke_agent.duration"); the MCP durations from MCP (section "Metrics").

The spans come from one real run: an agent on OpenAIChat over HTTP (a local server speaking
the Chat Completions wire) calling a tool of `MCPToolServer` through `MCPToolset`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from kosong import agent_loop
from kosong.chat_provider.openai import OpenAIChat
from kosong.mcp import MCPToolServer, MCPToolset
from kosong.message import Message
from tests.chat_provider._wire import (
    DONE,
    USAGE,
    Reply,
    WireServer,
    chat_chunk,
    chat_text_reply,
    tool_delta,
)
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset
from tests.telemetry._recorded import Recorded

SPANS, AGENTS, MCP, METRICS = "gen-ai-spans.md", "gen-ai-agent-spans.md", "mcp.md", "metrics"

ANY_STRING: Callable[[Any], bool] = lambda v: isinstance(v, str) and bool(v)  # noqa: E731
ANY_INT: Callable[[Any], bool] = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
ANY_FLOAT: Callable[[Any], bool] = lambda v: isinstance(v, float)  # noqa: E731


def one_of(*values: Any) -> Callable[[Any], bool]:
    return lambda v: v in values


# (span, attribute, requirement level, allowed value, source)
TABLE: list[tuple[str, str, str, Callable[[Any], bool], str]] = [
    # Inference: name "{gen_ai.operation.name} {gen_ai.request.model}", CLIENT
    ("chat", "gen_ai.operation.name", "Required", one_of("chat"), SPANS),
    ("chat", "gen_ai.provider.name", "Required", one_of("openai"), SPANS),
    ("chat", "gen_ai.request.model", "Conditionally Required", one_of("test-model"), SPANS),
    ("chat", "gen_ai.request.stream", "Conditionally Required", one_of(True), SPANS),
    ("chat", "server.port", "Conditionally Required", ANY_INT, SPANS),
    ("chat", "server.address", "Recommended", one_of("127.0.0.1"), SPANS),
    ("chat", "gen_ai.request.temperature", "Recommended", ANY_FLOAT, SPANS),
    ("chat", "gen_ai.request.max_tokens", "Recommended", ANY_INT, SPANS),
    ("chat", "gen_ai.response.id", "Recommended", ANY_STRING, SPANS),
    ("chat", "gen_ai.response.model", "Recommended", one_of("test-model"), SPANS),
    ("chat", "gen_ai.response.finish_reasons", "Recommended", lambda v: len(v) == 1, SPANS),
    ("chat", "gen_ai.response.time_to_first_chunk", "Recommended", ANY_FLOAT, SPANS),
    ("chat", "gen_ai.usage.input_tokens", "Recommended", ANY_INT, SPANS),
    ("chat", "gen_ai.usage.output_tokens", "Recommended", ANY_INT, SPANS),
    ("chat", "gen_ai.usage.cache_read.input_tokens", "Recommended", ANY_INT, SPANS),
    ("chat", "gen_ai.usage.cache_creation.input_tokens", "Recommended", ANY_INT, SPANS),
    # Invoke agent internal span: name "invoke_agent {gen_ai.agent.name}", INTERNAL
    ("agent", "gen_ai.operation.name", "Required", one_of("invoke_agent"), AGENTS),
    ("agent", "gen_ai.provider.name", "Required", one_of("openai"), AGENTS),
    ("agent", "gen_ai.agent.name", "Conditionally Required", one_of("adder"), AGENTS),
    ("agent", "gen_ai.request.model", "Conditionally Required", one_of("test-model"), AGENTS),
    ("agent", "gen_ai.usage.input_tokens", "Recommended", ANY_INT, AGENTS),
    ("agent", "gen_ai.usage.output_tokens", "Recommended", ANY_INT, AGENTS),
    ("agent", "gen_ai.usage.cache_read.input_tokens", "Recommended", ANY_INT, AGENTS),
    ("agent", "gen_ai.usage.cache_creation.input_tokens", "Recommended", ANY_INT, AGENTS),
    ("agent", "gen_ai.response.finish_reasons", "Recommended", lambda v: len(v) == 1, AGENTS),
    # Execute tool span: name "execute_tool {gen_ai.tool.name}", INTERNAL
    ("tool", "gen_ai.operation.name", "Required", one_of("execute_tool"), SPANS),
    ("tool", "gen_ai.tool.name", "Required", one_of("add"), SPANS),
    ("tool", "gen_ai.tool.call.id", "Recommended", one_of("call_1"), SPANS),
    ("tool", "gen_ai.tool.description", "Recommended", one_of("Add two integers."), SPANS),
    ("tool", "gen_ai.tool.type", "Recommended", one_of("function"), SPANS),
    # ... with the MCP client's attributes on it (MCP, "Client": no separate span)
    ("tool", "mcp.method.name", "Required", one_of("tools/call"), MCP),
    ("tool", "server.address", "Recommended", one_of("127.0.0.1"), MCP),
    ("tool", "server.port", "Recommended", ANY_INT, MCP),
    ("tool", "network.transport", "Recommended", one_of("tcp"), MCP),
    # MCP server span: name "{mcp.method.name} {target}", SERVER
    ("server", "mcp.method.name", "Required", one_of("tools/call"), MCP),
    ("server", "gen_ai.tool.name", "Conditionally Required", one_of("add"), MCP),
    ("server", "jsonrpc.request.id", "Conditionally Required", ANY_STRING, MCP),
    ("server", "gen_ai.operation.name", "Recommended", one_of("execute_tool"), MCP),
    ("server", "mcp.protocol.version", "Recommended", ANY_STRING, MCP),
    # mcp.session.id: a handshake-era session's only; MCPToolset speaks the 2026 era here
    # (test_mcp.py checks it on a handshake-era session).
    ("server", "network.transport", "Recommended", one_of("tcp"), MCP),
    ("server", "network.protocol.name", "Recommended", one_of("http"), MCP),
]

# (metric, unit, attribute keys of its points, source)
METRIC_TABLE: list[tuple[str, str, set[str], str]] = [
    (
        "gen_ai.client.operation.duration",
        "s",
        {
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "server.address",
            "server.port",
        },
        METRICS,
    ),
    (
        "gen_ai.client.token.usage",
        "{token}",
        {
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "server.address",
            "server.port",
            "gen_ai.token.type",
        },
        METRICS,
    ),
    (
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        {
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "server.address",
            "server.port",
        },
        METRICS,
    ),
    (
        "gen_ai.invoke_agent.duration",
        "s",
        {
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.agent.name",
            "gen_ai.request.model",
        },
        METRICS,
    ),
    (
        "gen_ai.execute_tool.duration",
        "s",
        {"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.type"},
        METRICS,
    ),
    (
        "mcp.client.operation.duration",
        "s",
        {"mcp.method.name", "gen_ai.tool.name", "gen_ai.operation.name"},
        MCP,
    ),
    (
        "mcp.server.operation.duration",
        "s",
        {"mcp.method.name", "gen_ai.tool.name", "gen_ai.operation.name"},
        MCP,
    ),
]


@pytest.fixture
async def run(otel: Recorded) -> AsyncIterator[dict[str, ReadableSpan]]:
    async with (
        WireServer() as wire,
        Uvicorn(MCPToolServer(kosong_toolset(), name="ours").app()) as server,
        MCPToolset({"ours": server.url}) as toolset,
    ):
        first = [
            chat_chunk({"role": "assistant", "content": ""}),
            chat_chunk(tool_delta(0, id="call_1", name="add", arguments='{"a": 1, "b": 2}')),
            chat_chunk({}, finish_reason="tool_calls"),
            chat_chunk(None, usage=USAGE),
            DONE,
        ]
        wire.queue(Reply(events=first), chat_text_reply("It is 3."))
        model = OpenAIChat(model="test-model", api_key="sk-test", base_url=wire.url + "/v1")
        wire.closers.append(model.aclose)
        model = model.with_generation_kwargs(temperature=0.5, max_tokens=100)
        question = [Message(role="user", content="1 + 2?")]
        await agent_loop(model, "You add.", toolset, question, agent_name="adder")
        await otel.ended(5)  # 2 model calls, the tool call, the server's span, the agent's
    spans = {
        "chat": next(s for s in otel.spans if s.name == "chat test-model"),
        "agent": otel.span("invoke_agent adder"),
        "tool": otel.span("execute_tool add"),
        "server": next(s for s in otel.spans if s.kind == SpanKind.SERVER),
    }
    yield spans


async def test_each_attribute_is_named_and_valued_as_the_conventions_define_it(
    run: dict[str, ReadableSpan], otel: Recorded
) -> None:
    wrong = [
        f"{span} {key} ({level}, {source}): {dict(run[span].attributes or {}).get(key)!r}"
        for span, key, level, allowed, source in TABLE
        if not (key in (run[span].attributes or {}) and allowed(run[span].attributes[key]))  # type: ignore[index]
    ]
    assert wrong == []
    assert run["chat"].kind == SpanKind.CLIENT
    assert run["agent"].kind == run["tool"].kind == SpanKind.INTERNAL
    assert run["server"].name == "tools/call add"


async def test_every_attribute_recorded_is_in_the_table_or_the_opt_in_content(
    run: dict[str, ReadableSpan],
) -> None:
    listed = {(span, key) for span, key, *_ in TABLE}
    unlisted = {
        (name, key)
        for name, span in run.items()
        for key in (span.attributes or {})
        if (name, key) not in listed and not key.startswith("rpc.")
    }
    assert unlisted == set()


async def test_each_metric_has_the_unit_and_attributes_the_conventions_define(
    run: dict[str, ReadableSpan], otel: Recorded
) -> None:
    data = otel.reader.get_metrics_data()
    assert data is not None
    units = {
        metric.name: metric.unit
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    wrong: list[str] = []
    for name, unit, keys, source in METRIC_TABLE:
        points = otel.points(name)
        found = {frozenset(p.attributes) for p in points}
        if units.get(name) != unit or found != {frozenset(keys)}:
            wrong.append(f"{name} ({source}): unit {units.get(name)!r}, attributes {found}")
    assert wrong == []
