"""kosong: the tool-calling layer of LLM agents.

The chat loop, at the top level:

- `generate(chat_provider, system_prompt, tools, history)`: one streamed answer of a model,
  merged into a message (`GenerateResult`).
- `step(chat_provider, system_prompt, toolset, history)`: the same, with each tool call handed
  to the toolset the moment it is complete, so tools run while the answer still streams
  (`StepResult`, whose `tool_results()` gives their results in call order).
- `tool_result_to_message(result)`: the tool message that gives a result back to the model.
- `agent_loop(chat_provider, system_prompt, toolset, history, ...)`: `step` again and again
  until the model answers, or a stop condition holds (a number of steps, a tool that ran, a
  token budget, a predicate); `AgentLoopResult` holds the new messages and why it stopped,
  `AgentStep` is what `on_step` sees, `ToolRetriesExhausted` ends a model that keeps getting
  a tool's arguments wrong.
- Deferred calls: a call that waits for a person (`ApprovalDecision.defer`) or for its caller
  (an `external` tool) stops `agent_loop` with `DeferredCall`s and an `AgentState` (JSON);
  `agent_loop(..., resume=state, answers={call_id: Approve() | Deny(reason) | result})`
  goes on, in any process.

Public modules:

- `kosong.message`: content parts, tool calls and messages exchanged with a model.
- `kosong.tooling`: tools, their return values, and toolsets that dispatch tool calls.
- `kosong.chat_provider`: the `ChatProvider` protocol, its errors, and the providers.
- `kosong.formats`: tool definitions in each provider's format, both ways.
- `kosong.dialects`: what each provider will reject or ignore in a tool's schema.
- `kosong.utils.jsonschema`: JSON Schema helpers used when exporting tool definitions.
"""

from kosong._agent_loop import (
    AgentLoopResult,
    AgentStep,
    OutputRetriesExhausted,
    StopReason,
    ToolRetriesExhausted,
    agent_loop,
)
from kosong._answers import Approve, Deny
from kosong._deferral import AgentState, DeferredCall
from kosong._generate import GenerateResult, generate
from kosong._step import StepResult, step, tool_result_to_message

__version__ = "0.1.0"

__all__ = [
    "AgentLoopResult",
    "AgentState",
    "AgentStep",
    "Approve",
    "DeferredCall",
    "Deny",
    "GenerateResult",
    "OutputRetriesExhausted",
    "StepResult",
    "StopReason",
    "ToolRetriesExhausted",
    "__version__",
    "agent_loop",
    "generate",
    "step",
    "tool_result_to_message",
]
