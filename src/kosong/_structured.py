"""Structured final output for `agent_loop(..., output_type=T)`: ask, validate, ask again.

A provider that has an answer format of its own (`with_output_schema`: OpenAI's
`response_format`, Responses' `text.format`, Anthropic's `output_config.format`, Gemini's
`responseJsonSchema`, Moonshot's JSON Mode) is asked in its way, and the final answer's
text is validated as JSON of `T`. Another provider (a scripted model, a user's own) gets a
`final_answer` tool whose parameters are `T`'s schema, and the loop ends when that tool has
taken its arguments. A failed validation goes back to the model, which is asked again,
`output_retries` times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from kosong.chat_provider import ChatProvider, OutputSchema
from kosong.message import Message, ToolCall
from kosong.tooling import CallableTool, ToolOk, ToolResult, ToolReturnValue, Toolset, combined
from kosong.tooling.error import ToolValidateError
from kosong.tooling.simple import SimpleToolset

__all__ = ["FINAL_ANSWER", "Outcome", "OutputRetriesExhausted", "StructuredOutput"]

FINAL_ANSWER = "final_answer"
"""The name of the tool that takes the answer where a provider has no answer format."""


class OutputRetriesExhausted(Exception):
    """The model's final answer did not validate as `output_type`, after every retry.

    `messages` and `steps` hold everything the loop did, so nothing is lost.
    """

    def __init__(self, error: str, attempts: int, messages: list[Message], steps: list[Any]):
        """Say how often the answer failed, and why the last time."""
        super().__init__(
            f"the model's answer did not validate after {attempts} attempt(s); the last "
            f"error: {error}"
        )
        self.error = error
        """The last validation error, as the model read it."""
        self.attempts = attempts
        """How many answers failed."""
        self.messages = messages
        """The new messages so far (see `AgentLoopResult`)."""
        self.steps = steps
        """The steps so far."""


def _errors_text(error: ValidationError) -> str:
    lines = [
        f"{'.'.join(str(p) for p in e['loc']) or '(the answer)'}: {e['msg']}"
        for e in error.errors()
    ]
    return "; ".join(lines[:10])


class _FinalAnswer(CallableTool):
    """The tool a model without an answer format gives its answer to."""

    shape: Any = None

    async def __call__(self, **arguments: Any) -> ToolReturnValue:
        value = arguments.get("value") if self.shape.wrapped else arguments
        try:
            self.shape.adapter.validate_python(value)
        except ValidationError as e:
            return ToolValidateError(_errors_text(e))
        return ToolOk(output="The answer was recorded.")


@dataclass(slots=True)
class _Shape:
    adapter: TypeAdapter[Any]
    schema: dict[str, Any]
    wrapped: bool
    """Whether the tool form wraps a non-object schema in `{"value": ...}`."""


@dataclass(slots=True)
class StructuredOutput:
    """One loop's structured output: how it was asked, and the retries left."""

    shape: _Shape
    native: bool
    retries: int
    failures: int = 0

    @classmethod
    def start(
        cls, output_type: Any, retries: int, provider: ChatProvider, toolset: Toolset
    ) -> tuple[StructuredOutput, ChatProvider, Toolset]:
        """Ask `provider` for `output_type`, natively where it can.

        Returns this loop's state, and the provider and toolset the loop then uses.

        Raises:
            ValueError: `retries` is negative, or the provider cannot take an answer format
                with its other options.
            pydantic.PydanticSchemaGenerationError: `output_type` has no JSON Schema.
        """
        if retries < 0:
            raise ValueError(f"output_retries cannot be negative, got {retries}")
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
        name = getattr(output_type, "__name__", "output")
        ask = getattr(provider, "with_output_schema", None)
        if ask is not None:
            shape = _Shape(adapter, schema, wrapped=False)
            return cls(shape, True, retries), ask(OutputSchema(name, schema)), toolset
        wrapped = schema.get("type") != "object"
        parameters = (
            {"type": "object", "properties": {"value": schema}, "required": ["value"]}
            if wrapped
            else schema
        )
        shape = _Shape(adapter, schema, wrapped)
        tool = _FinalAnswer(
            name=FINAL_ANSWER,
            description="Give your final answer, in the shape its parameters describe.",
            parameters=parameters,
            shape=shape,
        )
        return cls(shape, False, retries), provider, combined(toolset, SimpleToolset([tool]))

    def answer(self, message: Message, calls: list[tuple[ToolCall, ToolResult]]) -> Outcome:
        """What a step gave: the answer, a failed one (and what to ask), or nothing yet."""
        if not self.native:
            for call, result in calls:
                if call.function.name != FINAL_ANSWER:
                    continue
                if result.return_value.is_error:  # the tool message says why already
                    return Outcome(error=result.return_value.message or "invalid answer")
                arguments = json.loads(call.function.arguments or "{}")
                value = arguments.get("value") if self.shape.wrapped else arguments
                return Outcome(done=True, value=self.shape.adapter.validate_python(value))
        if calls:
            return Outcome()  # the model is still working with its tools
        try:
            text = _unfenced(message.extract_text().strip())
            return Outcome(done=True, value=self.shape.adapter.validate_json(text))
        except ValidationError as e:
            error = _errors_text(e)
        how = (
            "as JSON matching the requested schema"
            if self.native
            else f"by calling the `{FINAL_ANSWER}` tool"
        )
        asking = Message(
            role="user",
            content=f"Your final answer did not validate ({error}). Give it again, {how}.",
        )
        return Outcome(error=error, asking=asking)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one step gave for the structured output."""

    done: bool = False
    value: Any = None
    error: str | None = None
    """Why the answer failed to validate, when it did."""
    asking: Message | None = None
    """The message asking the model again, when nothing else tells it."""


def _unfenced(text: str) -> str:
    """The JSON of an answer written in a Markdown code fence, else the text."""
    if text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        return inner.split("\n", 1)[1] if "\n" in inner else inner
    return text
