"""docs/telemetry.md's trace of the demo is drawn from the spans the demo really exports.

The demo runs as the page says, `opentelemetry-instrument python examples/demo.py --offline`
with the standard `OTEL_*` variables, exporting over OTLP/HTTP to a receiver this test starts;
the spans it gets, drawn as a tree, must be the page's, line for line.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.telemetry._otlp import OTLPReceiver, ReceivedSpan

pytestmark = pytest.mark.external  # the demo under opentelemetry-instrument

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "telemetry.md"
BIN = Path(sys.executable).parent
KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT"}
VOLATILE = {"gen_ai.response.time_to_first_chunk", "kosong.trace_id"}
"""Attributes that differ from run to run (left out of the drawing)."""
BLOCK = re.compile(r"<!-- the demo's trace -->\n```text\n(.*?)```", re.DOTALL)


def draw(spans: list[ReceivedSpan]) -> str:
    """The spans as a tree: each under its parent, children in the order they started."""
    children: dict[str, list[ReceivedSpan]] = {}
    for span in sorted(spans, key=lambda span: span.start):
        children.setdefault(span.parent_span_id, []).append(span)
    lines: list[str] = []

    def show(span: ReceivedSpan, depth: int) -> None:
        pad = "    " * depth
        lines.append(f"{pad}{span.name}  [{KINDS.get(span.kind, span.kind)}]")
        for key, value in sorted(span.attributes.items()):
            if key not in VOLATILE:
                lines.append(f"{pad}    {key} = {_value(value)}")
        for child in children.get(span.span_id, []):
            show(child, depth + 1)

    for root in children.get("", []):
        show(root, 0)
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    return repr(value) if isinstance(value, str | list) else str(value)


async def demo_spans() -> list[ReceivedSpan]:
    async with OTLPReceiver() as receiver:
        env = {
            **os.environ,
            "OTEL_SERVICE_NAME": "weather-demo",
            "OTEL_TRACES_EXPORTER": "otlp_proto_http",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
        }
        argv = [str(BIN / "opentelemetry-instrument"), sys.executable, "examples/demo.py"]
        demo = await asyncio.create_subprocess_exec(
            *argv, "--offline", cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL
        )
        assert await asyncio.wait_for(demo.wait(), 60) == 0
        await receiver.wait_for("invoke_agent weather-demo")  # the SDK flushes at exit
        return receiver.spans


async def test_the_pages_trace_is_the_demos() -> None:
    found = BLOCK.search(PAGE.read_text(encoding="utf-8"))
    assert found is not None, f"{PAGE.name} has no block after <!-- the demo's trace -->"
    drawn = draw(await demo_spans())
    assert found.group(1) == drawn, f"the demo's trace is now:\n{drawn}"
