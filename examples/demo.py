"""kosong demo: an agent that runs its tools while the model's answer is still streaming.

Run it with `python3 run.py demo`. A question goes to a model; each tool call the model streams
is handed to the toolset the moment it is complete, so the tools run while the rest of the
answer arrives; their results go back to the model, which answers. `kosong.agent_loop` runs
those steps. The demo prints a timeline of what happened when.

Offline by default: the model is `ScriptedChatProvider`, deterministic, streaming its answer in
small fragments as a network stream would. With `KIMI_API_KEY` (or `OPENAI_API_KEY`, or
`ANTHROPIC_API_KEY`) set, the same agent talks to that real model instead (`KIMI_MODEL`,
`OPENAI_MODEL`, `ANTHROPIC_MODEL` choose the model). `--offline` forces the scripted model.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence

from kosong import AgentStep, agent_loop
from kosong.chat_provider import ChatProvider, ChatProviderError, StreamedMessagePart
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message, TextPart, ThinkPart, ToolCall, ToolCallPart
from kosong.standard import with_policies
from kosong.standard.policies import RepairPolicy
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset

QUESTION = "What's the weather in Paris and in Tokyo right now, and which one is warmer?"
SYSTEM = "You are a concise assistant. Use the tools to look things up; never guess."
CITIES = {"Paris": (18, "light rain"), "Tokyo": (24, "sunny"), "Oslo": (7, "cloudy")}

T0 = time.perf_counter()


def log(who: str, what: str) -> None:
    print(f"{time.perf_counter() - T0:7.3f}s  {who:<6} {what}", flush=True)


@tool
async def get_weather(city: str) -> str:
    """The current weather of a city.

    Args:
        city: The city's name, such as "Paris".
    """
    log("tool", f"get_weather({city!r}) started")
    await asyncio.sleep(0.3)  # stands for a call to a weather service
    if city not in CITIES:
        log("tool", f"get_weather({city!r}) failed")
        raise ValueError(f"no weather station in {city}")
    temperature, sky = CITIES[city]
    log("tool", f"get_weather({city!r}) finished")
    return f"{city}: {temperature}°C, {sky}"


def scripted_model() -> ScriptedChatProvider:
    def answer(history: Sequence[Message]) -> list[str]:
        # The final answer quotes what the tools returned, as a model would.
        reports = [m.extract_text() for m in history if m.role == "tool"]
        return [f"Here is what I found: {'; '.join(reports)}. Tokyo is the warmer of the two."]

    first_turn = [
        ThinkPart(think="Two cities: one weather lookup each, and they can run at once."),
        "Let me look both up.",
        call("get_weather", {"city": "Paris"}),
        call("get_weather", {"city": "Tokyo"}),
        " I will compare them as soon as the results are in.",
    ]
    return ScriptedChatProvider([first_turn, answer], chunk_size=6, chunk_delay=0.02)


def real_model() -> ChatProvider | None:
    if os.environ.get("KIMI_API_KEY"):
        from kosong.chat_provider.kimi import Kimi

        return Kimi()
    if os.environ.get("OPENAI_API_KEY"):
        from kosong.chat_provider.openai import OpenAIChat

        return OpenAIChat(model=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    if os.environ.get("ANTHROPIC_API_KEY"):
        from kosong.chat_provider.anthropic import Anthropic

        return Anthropic(model=os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"))
    return None


class Timeline:
    """Turns the stream's parts into timeline lines (one per kind of part, not per fragment)."""

    def __init__(self) -> None:
        self.kind = ""

    def __call__(self, part: StreamedMessagePart) -> None:
        if isinstance(part, ToolCall):
            self.kind = "call"
            log("model", f"streams a call to {part.function.name} ({part.id})")
        elif isinstance(part, ToolCallPart):
            if part.last:
                log("model", "  ... its arguments are complete: handed to the toolset")
        elif isinstance(part, ThinkPart | TextPart) and self.kind != part.type:
            self.kind = part.type
            log("model", "thinks ..." if isinstance(part, ThinkPart) else "writes text ...")


def report(step: AgentStep) -> None:
    """What the loop did in one step (called once its tool calls have finished)."""
    log("model", f"answer complete (finish reason: {step.result.finish_reason})")
    if step.tool_results:
        log("agent", f"sends {len(step.tool_results)} tool result(s) back to the model")
        log("agent", f"turn {step.number + 1}: asks the model")


async def main(offline: bool) -> None:
    provider = None if offline else real_model()
    if provider is None:
        provider = scripted_model()
        print("model: the scripted model (offline; set KIMI_API_KEY for a real one)")
    else:
        print(f"model: {provider.name} / {provider.model_name}")
    print(f"question: {QUESTION}\n")
    toolset = with_policies(SimpleToolset([get_weather]), RepairPolicy())  # repairs bad calls
    history = [Message(role="user", content=QUESTION)]
    log("agent", "turn 1: asks the model")
    # agent_loop calls `step` until the model answers: each step's tool calls run while the
    # answer streams, and their results go back to the model in the next step.
    result = await agent_loop(
        provider, SYSTEM, toolset, history,
        max_steps=5,
        agent_name="weather-demo",  # its name in telemetry: docs/telemetry.md
        on_message_part=Timeline(),
        on_tool_result=lambda r: log("tool", f"result of {r.tool_call_id} is ready"),
        on_step=report,
    )  # fmt: skip
    if result.stop_reason == "answered":
        print(f"\nanswer: {result.answer.strip()}")
    else:
        print(f"\nstopped ({result.stop_reason}) after {len(result.steps)} turns")


if __name__ == "__main__":
    try:
        asyncio.run(main(offline="--offline" in sys.argv[1:]))
    except ChatProviderError as e:  # the model's service failed: say so in one line
        sys.exit(f"\ndemo: the model could not answer: {e}\n(unset the API key, or pass "
                 "--offline, to run the demo with the scripted model)")  # fmt: skip
