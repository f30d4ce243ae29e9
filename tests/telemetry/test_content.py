"""Content is recorded only when asked: `capture_content=True`, or the conventions' variable.

The recorded shapes follow the conventions' JSON schemas (model/gen-ai/gen-ai-input-messages.json,
gen-ai-output-messages.json, gen-ai-system-instructions.json, gen-ai-tool-definitions.json of
open-telemetry/semantic-conventions-genai): the required fields of each part are checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from kosong import agent_loop
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message
from kosong.testing import ScriptedTool
from kosong.tooling.simple import SimpleToolset
from tests.telemetry._recorded import Recorded, attrs

SECRET = "s3cr3t-4242"
CONTENT_KEYS = {
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
# Required fields of each part type (the schemas' "required" lists).
REQUIRED = {
    "text": {"type", "content"},
    "reasoning": {"type", "content"},
    "tool_call": {"type", "name"},
    "tool_call_response": {"type", "response"},
}


async def run() -> None:
    model = ScriptedChatProvider(
        [[call("lookup", {"code": SECRET}, id="c1")], [f"The answer is {SECRET}."]]
    )
    tools = SimpleToolset([ScriptedTool("lookup", [f"found {SECRET}"])])
    history = [Message(role="user", content=f"What is {SECRET}?")]
    await agent_loop(model, f"Keep {SECRET} safe.", tools, history, agent_name="keeper")


async def test_no_content_is_recorded_by_default(otel: Recorded) -> None:
    await run()
    assert len(otel.spans) == 4
    for span in otel.spans:
        attributes = attrs(span)
        assert not CONTENT_KEYS & attributes.keys(), span.name
        assert SECRET not in json.dumps(attributes, default=str), span.name


def check_messages(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        assert {"role", "parts"} <= message.keys()
        for part in message["parts"]:
            assert REQUIRED[part["type"]] <= part.keys(), part


async def test_content_is_recorded_when_asked_in_the_conventions_shapes(
    otel_content: Recorded,
) -> None:
    await run()
    first, second = [s for s in otel_content.spans if s.name.startswith("chat")]
    chat = attrs(second)
    assert json.loads(chat["gen_ai.system_instructions"]) == [
        {"type": "text", "content": f"Keep {SECRET} safe."}
    ]
    sent = json.loads(chat["gen_ai.input.messages"])
    check_messages(sent)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["parts"] == [
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"code": SECRET}}
    ]
    assert sent[2]["parts"] == [
        {"type": "tool_call_response", "id": "c1", "response": f"found {SECRET}"}
    ]
    answer = json.loads(chat["gen_ai.output.messages"])
    check_messages(answer)
    assert answer == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": f"The answer is {SECRET}."}],
            "finish_reason": "stop",
        }
    ]
    (definition,) = json.loads(attrs(first)["gen_ai.tool.definitions"])
    assert {"type", "name"} <= definition.keys() and definition["type"] == "function"
    tool = otel_content.attributes("execute_tool lookup")
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"code": SECRET}
    assert json.loads(tool["gen_ai.tool.call.result"]) == f"found {SECRET}"
    agent = otel_content.attributes("invoke_agent keeper")
    assert CONTENT_KEYS - {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} <= agent.keys()


ENVIRONMENT = textwrap.dedent(
    """
    import asyncio, json
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from kosong import generate
    from kosong.chat_provider.scripted import ScriptedChatProvider
    from kosong.message import Message
    from kosong.telemetry import configure

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider)
    history = [Message(role="user", content="Hi")]
    asyncio.run(generate(ScriptedChatProvider([["Hello"]]), "", [], history))
    (span,) = exporter.get_finished_spans()
    print(json.dumps(sorted(k for k in span.attributes if "messages" in k)))
    """
)


@pytest.mark.external  # a child interpreter
def test_the_conventions_variable_opts_into_content() -> None:
    for value, expected in (("true", ["gen_ai.input.messages", "gen_ai.output.messages"]),
                            ("false", [])):  # fmt: skip
        env = {**os.environ, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
        done = subprocess.run(
            [sys.executable, "-c", ENVIRONMENT],
            capture_output=True, text=True, timeout=60, check=False, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == expected
