"""The Quickstart's main job: the agent demo runs offline, and against a "real" model too."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "chat_provider"))

from _wire import DONE, USAGE, Reply, WireServer, chat_chunk, chat_text_reply, tool_delta  # pyright: ignore[reportMissingImports]

from tests._local import free_port

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.py"
KEYS = ("KIMI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def _lines(out: str) -> list[tuple[float, str]]:
    timed: list[tuple[float, str]] = []
    for line in out.splitlines():
        head, _, rest = line.strip().partition("s  ")
        try:
            timed.append((float(head), rest))
        except ValueError:
            continue
    return timed


def _when(timeline: list[tuple[float, str]], text: str) -> float:
    return next(t for t, line in timeline if text in line)


@pytest.mark.external  # the demo in a child process
def test_demo_runs_tools_while_the_answer_streams_and_prints_the_answer() -> None:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    done = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=60, check=True, env=env
    )
    assert done.stderr == ""
    out = done.stdout
    assert out.startswith("model: the scripted model (offline")
    timeline = _lines(out)
    answered = _when(timeline, "answer complete (finish reason: tool_calls)")
    assert _when(timeline, "get_weather('Paris') started") < answered
    assert _when(timeline, "get_weather('Tokyo') started") < answered
    # The two 0.3 s lookups overlap: the second starts before the first finishes.
    assert _when(timeline, "get_weather('Tokyo') started") < _when(
        timeline, "get_weather('Paris') finished"
    )
    assert "sends 2 tool result(s) back to the model" in out
    assert out.rstrip().endswith(
        "answer: Here is what I found: Paris: 18°C, light rain; Tokyo: 24°C, sunny. "
        "Tokyo is the warmer of the two."
    )


@pytest.mark.external  # the demo in a child process
async def test_demo_talks_to_the_model_named_by_the_environment() -> None:
    async with WireServer() as wire:
        calls = [
            chat_chunk(
                tool_delta(0, id="call_p", name="get_weather", arguments='{"city": "Paris"}')
            ),
            chat_chunk(
                tool_delta(1, id="call_o", name="get_weather", arguments='{"city": "Oslo"}')
            ),
            chat_chunk({}, finish_reason="tool_calls"),
            chat_chunk(None, usage=USAGE),
            DONE,
        ]
        wire.queue(Reply(events=calls), chat_text_reply("Paris is warmer than Oslo."))
        env = {k: v for k, v in os.environ.items() if k not in KEYS}
        env |= {
            "KIMI_API_KEY": "sk-test",
            "KIMI_BASE_URL": wire.url + "/v1",
            "KIMI_MODEL": "kimi-test",
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(DEMO), env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    out = stdout.decode()
    assert process.returncode == 0, stderr.decode()
    assert out.startswith("model: kimi / kimi-test")
    assert "get_weather('Oslo') started" in out
    assert out.rstrip().endswith("answer: Paris is warmer than Oslo.")
    second = wire.requests[1].body
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["Paris: 18°C, light rain", "Oslo: 7°C, cloudy"]


@pytest.mark.external  # the demo in a child process
def test_demo_with_an_unreachable_model_says_so_in_one_line_without_a_traceback() -> None:
    port = free_port()  # nobody listens there: connection refused
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env |= {"KIMI_API_KEY": "sk-test", "KIMI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    done = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=120, env=env,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("demo: the model could not answer: connection failed: ")
    assert f"127.0.0.1:{port}" in lines[0]
    assert lines[1:] == [
        "(unset the API key, or pass --offline, to run the demo with the scripted model)"
    ]
