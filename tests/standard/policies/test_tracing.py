"""TracingPolicy with the real OpenTelemetry SDK and an in-memory exporter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from kosong.standard import coded_error, to_envelope, with_policies
from kosong.standard.policies import RetryPolicy, TracingPolicy
from kosong.tooling import ToolOk, ToolReturnValue
from kosong.tooling.error import ToolNetworkError
from tests.standard._std_tools import Scripted, Weather, make_call, toolset


@pytest.fixture
def otel() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def test_explicit_tracers_are_used_and_no_spans_are_made_before_an_sdk_exists(
    otel: tuple[Any, InMemorySpanExporter],
) -> None:
    assert TracingPolicy(otel[0]).enabled
    # This process sets no global provider: the default policy waits for one.
    assert not TracingPolicy().enabled


GLOBAL_SDK = textwrap.dedent(
    """
    import asyncio
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from kosong.standard import with_policies
    from kosong.standard.policies import TracingPolicy
    from kosong.testing import ScriptedTool, make_call
    from kosong.tooling.simple import SimpleToolset

    async def main():
        pipeline = with_policies(
            SimpleToolset([ScriptedTool("get_weather", ["sunny"])]), TracingPolicy(recheck_every=0)
        )
        await pipeline.handle(make_call("get_weather", {{"location": "x"}}))  # no SDK yet
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        await pipeline.handle(make_call("get_weather", {{"location": "y"}}))
        print([span.name for span in exporter.get_finished_spans()])

    asyncio.run(main())
    """
)


ENVIRONMENT_SDK = textwrap.dedent(
    """
    import asyncio
    from kosong.standard import with_policies
    from kosong.standard.policies import TracingPolicy
    from kosong.testing import ScriptedTool, make_call
    from kosong.tooling.simple import SimpleToolset

    async def main():
        policy = TracingPolicy()
        tools = SimpleToolset([ScriptedTool("get_weather", ["sunny"])])
        await with_policies(tools, policy).handle(make_call("get_weather", {{}}))
        print(policy.enabled)

    asyncio.run(main())
    """
)


@pytest.mark.external  # a child interpreter
def test_a_provider_named_in_the_environment_is_used() -> None:
    # The API loads it on the first look for a provider: no code sets one.
    script = ENVIRONMENT_SDK.format()
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@pytest.mark.external  # a child interpreter
def test_the_global_sdk_is_picked_up_once_it_is_configured() -> None:
    script = GLOBAL_SDK.format()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['execute_tool get_weather']"


async def test_each_call_gets_a_span_with_the_genai_attributes(
    otel: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, exporter = otel
    pipeline = with_policies(toolset(Weather()), TracingPolicy(tracer))
    result = await pipeline.handle(make_call("get_weather", {"location": "x"}, "call-9"))
    (span,) = exporter.get_finished_spans()
    assert span.name == "execute_tool get_weather"
    assert span.kind == SpanKind.INTERNAL
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "get_weather"
    assert attributes["gen_ai.tool.call.id"] == "call-9"
    assert attributes["kosong.trace_id"] == to_envelope(result).metadata.trace_id
    assert attributes["kosong.cache_hit"] is False
    assert span.status.status_code == StatusCode.UNSET


async def test_a_failed_call_marks_its_span_as_error(
    otel: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, exporter = otel
    tool = Scripted(lambda n: coded_error("CITY_NOT_FOUND", "no"))
    await with_policies(toolset(tool), TracingPolicy(tracer)).handle(make_call("scripted", {}))
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "CITY_NOT_FOUND"
    assert dict(span.attributes or {})["error.type"] == "CITY_NOT_FOUND"


async def test_retries_are_counted_on_the_span(otel: tuple[Any, InMemorySpanExporter]) -> None:
    tracer, exporter = otel
    tool = Scripted(lambda n: ToolNetworkError("x") if n == 0 else ToolOk(), read_only_hint=True)
    pipeline = with_policies(toolset(tool), TracingPolicy(tracer), RetryPolicy(base_delay=0.001))
    await pipeline.handle(make_call("scripted", {}))
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes or {})["kosong.retry_count"] == 1


async def test_spans_started_inside_the_tool_are_children_of_the_calls_span(
    otel: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, exporter = otel

    async def body(n: int) -> ToolReturnValue:
        with tracer.start_as_current_span("http GET weather-api"):
            return ToolOk()

    await with_policies(toolset(Scripted(body)), TracingPolicy(tracer)).handle(
        make_call("scripted", {})
    )
    inner, outer = exporter.get_finished_spans()
    assert inner.name == "http GET weather-api"
    assert inner.parent is not None and outer.context is not None
    assert inner.parent.span_id == outer.context.span_id
    assert inner.context is not None and inner.context.trace_id == outer.context.trace_id
