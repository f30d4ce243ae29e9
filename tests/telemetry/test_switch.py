"""The switch: on with an SDK (configured, or global), off otherwise, and nothing when off."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from kosong import _telemetry
from kosong.telemetry import configure, enabled
from tests.telemetry._recorded import Recorded


def run(script: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True, text=True, timeout=60, check=False, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


STEP = """
    import asyncio
    from kosong import agent_loop
    from kosong.chat_provider.scripted import ScriptedChatProvider, call
    from kosong.message import Message
    from kosong.testing import ScriptedTool
    from kosong.tooling.simple import SimpleToolset

    def agent():
        model = ScriptedChatProvider([[call("t", {})], ["done"]])
        tools = SimpleToolset([ScriptedTool("t", ["ok"])])
        return asyncio.run(agent_loop(model, "", tools, [Message(role="user", content="go")]))
"""


def test_off_without_an_sdk_and_on_once_configured(otel: Recorded) -> None:
    assert enabled()
    _telemetry.reset()  # as in a fresh process: no SDK set up globally in this one
    assert not enabled()
    configure(tracer_provider=otel.tracers)
    assert enabled()
    configure(tracer_provider=otel.tracers, enabled=False)
    assert not enabled()


@pytest.mark.external  # a child interpreter
def test_a_global_sdk_turns_it_on_with_no_kosong_setting() -> None:
    script = (
        STEP
        + """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    agent()
    print(sorted(span.name for span in exporter.get_finished_spans()))
    """
    )
    assert run(script) == (
        "['chat scripted-model', 'chat scripted-model', 'execute_tool t', 'invoke_agent']"
    )


@pytest.mark.external  # a child interpreter
def test_enabled_false_records_nothing_even_with_a_global_sdk() -> None:
    script = (
        STEP
        + """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from kosong.telemetry import configure

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    configure(enabled=False)
    agent()
    print(len(exporter.get_finished_spans()))
    """
    )
    assert run(script) == "0"


@pytest.mark.external  # a child interpreter
def test_without_opentelemetry_kosong_runs_and_says_what_to_install() -> None:
    script = (
        """
    import sys
    sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
    """
        + STEP
        + """
    from kosong.telemetry import configure, enabled
    print(agent().answer, enabled())
    try:
        configure(tracer_provider=object())
    except ImportError as e:
        print(e)
    """
    )
    first, second = run(script).splitlines()
    assert first == "done False"
    assert second.startswith("kosong.telemetry needs opentelemetry-api: pip install")


@pytest.mark.parametrize("value", ["true", "TRUE", "span_only", "SPAN_AND_EVENT", "1"])
def test_values_of_the_capture_variable_that_opt_in(
    value: str, monkeypatch: pytest.MonkeyPatch, otel: Recorded
) -> None:
    monkeypatch.setenv(_telemetry.CAPTURE_VARIABLE, value)
    telemetry = _telemetry.configure(tracer_provider=otel.tracers)
    assert telemetry is not None and telemetry.capture_content
