"""Agent runs: an `invoke_agent {gen_ai.agent.name}` span around `agent_loop`.

The conventions' "Invoke agent internal span" (gen-ai-agent-spans.md): INTERNAL, named
`invoke_agent {gen_ai.agent.name}` (`invoke_agent` when the agent has no name), with the
provider and model of its steps; each step's model call and tool calls are its children. Once
the loop ends, the tokens of all its steps; with content opted in, the system instructions, the
history it started from, its tools and the final answer. Metric: `gen_ai.invoke_agent.duration`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from kosong._telemetry import _content
from kosong._telemetry._model import provider_name
from kosong._telemetry._spans import Operation
from kosong._telemetry._state import Telemetry, current
from kosong.message import Message
from kosong.tooling import Tool

__all__ = ["AgentRun", "agent_run", "traced_agent_loop"]

P = ParamSpec("P")
R = TypeVar("R")


class AgentRun:
    """What `agent_loop` tells the span of its run; this base records nothing."""

    def answered(self, result: Any) -> None:
        """Record how the run ended (an `AgentLoopResult`)."""

    def __enter__(self) -> AgentRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


_QUIET = AgentRun()


def agent_run(
    name: str | None,
    provider: Any,
    system_prompt: str,
    tools: Sequence[Tool],
    history: Sequence[Message],
) -> AgentRun:
    """The span of one agent run, as a context manager (one that records nothing when off)."""
    telemetry = current()
    if telemetry is None:
        return _QUIET
    return _Traced(telemetry, name, provider, system_prompt, tools, history)


def traced_agent_loop(
    loop: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """`agent_loop` run inside its `invoke_agent` span (when telemetry is on).

    The span reads the loop's arguments by name: `chat_provider`, `system_prompt`, `toolset`,
    `history` and `agent_name`; the body of the loop is left as it is.
    """
    signature = inspect.signature(loop)

    @functools.wraps(loop)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if current() is None:
            return await loop(*args, **kwargs)
        given = signature.bind(*args, **kwargs).arguments
        toolset: Any = given["toolset"]
        with agent_run(
            given.get("agent_name"),
            given["chat_provider"],
            given["system_prompt"],
            toolset.tools,
            given["history"],
        ) as traced:
            result = await loop(*args, **kwargs)
            traced.answered(result)
        return result

    return run


class _Traced(AgentRun):
    def __init__(
        self,
        telemetry: Telemetry,
        name: str | None,
        provider: Any,
        system_prompt: str,
        tools: Sequence[Tool],
        history: Sequence[Message],
    ) -> None:
        kind = str(getattr(provider, "name", "") or type(provider).__name__)
        self._name = name
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider_name(kind),
            "gen_ai.agent.name": name,
            "gen_ai.request.model": str(getattr(provider, "model_name", "") or "") or None,
        }
        if telemetry.capture_content:
            attributes["gen_ai.system_instructions"] = _content.system_instructions(system_prompt)
            attributes["gen_ai.input.messages"] = _content.input_messages(history)
            if tools:
                attributes["gen_ai.tool.definitions"] = _content.tool_definitions(tools)
        self._operation = Operation(
            telemetry, f"invoke_agent {name}" if name else "invoke_agent", "INTERNAL", attributes
        )
        self._provider_name = attributes["gen_ai.provider.name"]
        self._model = attributes["gen_ai.request.model"]

    def answered(self, result: Any) -> None:
        operation = self._operation
        steps: list[Any] = list(result.steps)
        used = [step.usage for step in steps if step.usage is not None]
        if used:
            operation.set("gen_ai.usage.input_tokens", sum(u.input for u in used))
            operation.set("gen_ai.usage.output_tokens", sum(u.output for u in used))
            operation.set(
                "gen_ai.usage.cache_read.input_tokens", sum(u.input_cache_read for u in used)
            )
            operation.set(
                "gen_ai.usage.cache_creation.input_tokens",
                sum(u.input_cache_creation for u in used),
            )
        reasons = [step.finish_reason for step in steps[-1:] if step.finish_reason]
        if reasons:
            operation.set("gen_ai.response.finish_reasons", reasons)
        if operation.telemetry.capture_content and steps:
            last = steps[-1]
            operation.set(
                "gen_ai.output.messages", _content.output_messages(last.message, last.finish_reason)
            )

    def __enter__(self) -> AgentRun:
        self._operation.enter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        operation = self._operation
        elapsed = operation.close(exc_info[1] if len(exc_info) > 1 else None)
        histogram = operation.telemetry.agent_duration
        if histogram is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self._provider_name,
        }
        if self._name:
            attributes["gen_ai.agent.name"] = self._name
        if self._model:
            attributes["gen_ai.request.model"] = self._model
        if operation.error_type is not None:
            attributes["error.type"] = operation.error_type
        histogram.record(elapsed, attributes)
