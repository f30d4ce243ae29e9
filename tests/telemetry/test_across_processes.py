"""One trace from an agent's tool call, through `kosong serve`'s /mcp, to the tool's own span.

Checked against the outside world: both processes send their spans over OTLP/HTTP with the
SDK's OTLP exporter to a receiver this test starts; the server is `kosong serve` started as a
user starts it with telemetry, `opentelemetry-instrument kosong serve ...` with the standard
`OTEL_*` variables (nothing kosong-specific turns it on).
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from kosong import _telemetry, agent_loop
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.mcp import MCPToolset
from kosong.message import Message
from kosong.telemetry import configure
from tests._local import free_port
from tests.mcp._mcp_servers import serving_command
from tests.telemetry._otlp import OTLPReceiver

pytestmark = pytest.mark.external  # `kosong serve` under opentelemetry-instrument

BIN = Path(sys.executable).parent
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3  # opentelemetry.proto.trace.v1.Span.SpanKind

TOOLS = textwrap.dedent(
    '''
    from opentelemetry import trace

    from kosong.tooling import tool
    from kosong.tooling.simple import SimpleToolset

    tracer = trace.get_tracer("weather-service")


    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        with tracer.start_as_current_span("lookup weather"):
            return "rainy"


    toolset = SimpleToolset([get_weather])
    '''
)


@pytest.fixture
def client_exporting_to() -> Iterator[list[TracerProvider]]:
    providers: list[TracerProvider] = []
    yield providers
    for provider in providers:
        provider.shutdown()
    _telemetry.reset()


async def test_one_trace_crosses_mcptoolset_kosong_serve_and_the_tool(
    tmp_path: Path, client_exporting_to: list[TracerProvider]
) -> None:
    tools = tmp_path / "weather.py"
    tools.write_text(TOOLS)
    port = free_port()
    async with OTLPReceiver() as receiver:
        env = {
            **os.environ,
            "OTEL_SERVICE_NAME": "weather-tools",
            "OTEL_TRACES_EXPORTER": "otlp_proto_http",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        argv = [str(BIN / "opentelemetry-instrument"), str(BIN / "kosong"), "serve", str(tools)]
        with serving_command([*argv, "--port", str(port)], port, env=env, cwd=tmp_path) as url:
            provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
            client_exporting_to.append(provider)
            exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
            configure(tracer_provider=provider)
            model = ScriptedChatProvider(
                [[call("get_weather", {"city": "Paris"}, id="c1")], ["Rainy in Paris."]]
            )
            async with MCPToolset({"weather": url}) as toolset:
                question = [Message(role="user", content="Weather in Paris?")]
                result = await agent_loop(model, "", toolset, question, agent_name="weather")
            assert result.answer == "Rainy in Paris."
            await asyncio.to_thread(provider.force_flush)
            await receiver.wait_for(
                "invoke_agent weather",
                "execute_tool get_weather",
                "tools/call get_weather",
                "lookup weather",
            )
    agent = receiver.named("invoke_agent weather")
    tool_call = receiver.named("execute_tool get_weather")
    served = receiver.named("tools/call get_weather")
    lookup = receiver.named("lookup weather")
    assert {agent.service, tool_call.service} == {"agent"}
    assert {served.service, lookup.service} == {"weather-tools"}
    assert len({span.trace_id for span in (agent, tool_call, served, lookup)}) == 1
    assert tool_call.parent_span_id == agent.span_id
    assert served.parent_span_id == tool_call.span_id and served.kind == SPAN_KIND_SERVER
    assert lookup.parent_span_id == served.span_id
    assert tool_call.attributes["mcp.method.name"] == "tools/call"
    assert served.attributes["gen_ai.tool.name"] == "get_weather"
    # The MCP SDK's server span, with what kosong adds to it (not a second server span).
    assert served.attributes["network.transport"] == "tcp"
    assert [s.name for s in receiver.spans].count("tools/call get_weather") == 1
