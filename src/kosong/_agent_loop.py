"""`agent_loop`: call `step` until the model answers or a stop condition holds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeGuard

from kosong._answers import Answer
from kosong._deferral import (
    AgentState,
    DeferredCall,
    check_answers,
    pause,
    resume_calls,
    waiting_keys,
)
from kosong._generate import Callback, call_back
from kosong._step import StepResult, step, tool_result_to_message
from kosong._structured import OutputRetriesExhausted, StructuredOutput
from kosong._telemetry import traced_agent_loop
from kosong.chat_provider import ChatProvider, StreamedMessagePart, ToolChoice
from kosong.chat_provider.native import NativeToolSpec
from kosong.message import Message, ToolCall
from kosong.tooling import HandleResult, ToolError, ToolResult, Toolset
from kosong.tooling.error import ToolNotFoundError, ToolParseError, ToolValidateError

__all__ = [
    "AgentLoopResult",
    "AgentStep",
    "OutputRetriesExhausted",
    "StopReason",
    "ToolRetriesExhausted",
    "agent_loop",
]

StopReason: TypeAlias = Literal[
    "answered", "max_steps", "stop_at_tool", "token_budget", "stopped", "deferred"
]
"""Why `agent_loop` stopped: the model answered without calling a tool; `max_steps` steps
were made; a tool of `stop_at_tools` ran; the tokens used reached `token_budget`; the
`stop_when` predicate said so; or calls wait for an answer from outside (`deferred`)."""

ToolChoiceFor: TypeAlias = ToolChoice | Callable[[int], ToolChoice | None]
"""A tool choice for every step, or a function of the step's number (1, 2...) giving it."""


@dataclass(frozen=True, slots=True)
class AgentStep:
    """One step of the loop, once its tool calls have finished: what `on_step` is given."""

    number: int
    """The step's number, from 1."""
    result: StepResult
    """The model's answer (`result.message`, `result.usage`...)."""
    tool_results: list[ToolResult]
    """The results of the answer's tool calls, in call order."""
    messages: list[Message]
    """What the step adds to the conversation: the answer, then one tool message per call."""
    tokens_used: int
    """Tokens used by every step so far, this one included (see `AgentLoopResult`)."""


@dataclass(frozen=True, slots=True)
class AgentLoopResult:
    """What `agent_loop` did: the new messages, the steps, and why it stopped."""

    messages: list[Message]
    """The new messages, in order (the history given is not among them): for each step the
    model's answer, then the tool messages of its calls. A resumed run's are all of its new
    messages, those from before it stopped included. While calls are deferred, the waiting
    step's answer ends them, followed by the tool messages of its calls that did not wait
    (the model cannot be sent that until the run is resumed)."""
    steps: list[StepResult]
    """Each step's `StepResult`, in order."""
    stop_reason: StopReason
    """Why the loop stopped."""
    deferred: list[DeferredCall] = field(default_factory=list[DeferredCall])
    """With `stop_reason == "deferred"`: the calls waiting for an answer, in call order."""
    state: AgentState | None = None
    """With `stop_reason == "deferred"`: the run, to resume with
    `agent_loop(..., resume=state, answers={call_id: answer})` (`state.dump()` is JSON)."""
    output: Any = None
    """With `output_type`: the final answer, validated as that type (None otherwise)."""

    @property
    def tokens_used(self) -> int:
        """The tokens of every step (input and output), as the provider counted them.

        A step whose provider reported no usage counts 0.
        """
        return sum(s.usage.total for s in self.steps if s.usage is not None)

    @property
    def answer(self) -> str:
        """The text of the last message of the model (empty if the loop made no step)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.extract_text()
        return ""


class ToolRetriesExhausted(Exception):
    """A tool got invalid arguments more times in a row than its retry budget allows.

    Raised by `agent_loop` once the step's tool messages are made: `messages` and `steps` hold
    everything the loop did, that step included, so nothing is lost.
    """

    def __init__(
        self,
        tool_name: str,
        error: ToolError,
        attempts: int,
        budget: int,
        messages: list[Message],
        steps: list[StepResult],
    ) -> None:
        """Say which tool failed, how often, and its last error."""
        super().__init__(
            f"tool `{tool_name}` got invalid arguments {attempts} times in a row, past its "
            f"retry budget of {budget}; the last error: {error.message}"
        )
        self.tool_name = tool_name
        """The tool the model kept calling wrongly."""
        self.error = error
        """The last error (a `ToolValidateError` or a `ToolParseError`)."""
        self.attempts = attempts
        """How many calls in a row failed."""
        self.budget = budget
        """The tool's retry budget."""
        self.messages = messages
        """The new messages so far, the failing step's included (see `AgentLoopResult`)."""
        self.steps = steps
        """The steps so far."""


@traced_agent_loop  # an `invoke_agent` span when telemetry is on (kosong.telemetry)
async def agent_loop(
    chat_provider: ChatProvider,
    system_prompt: str,
    toolset: Toolset,
    history: Sequence[Message],
    *,
    max_steps: int = 10,
    stop_at_tools: Collection[str] = (),
    tool_choice: ToolChoiceFor | None = None,
    token_budget: int | None = None,
    stop_when: Callable[[AgentStep], bool | Awaitable[bool]] | None = None,
    retry_budget: int | None = 2,
    retry_budgets: Mapping[str, int] | None = None,
    on_step: Callback[AgentStep] | None = None,
    on_message_part: Callback[StreamedMessagePart] | None = None,
    on_tool_result: Callable[[ToolResult], None] | None = None,
    generation_overrides: Mapping[str, Any] | None = None,
    resume: AgentState | None = None,
    answers: Mapping[str, Answer] | None = None,
    parallel_tool_calls: bool | None = None,
    native_tools: Sequence[NativeToolSpec] | None = None,
    output_type: Any = None,
    output_retries: int = 1,
    agent_name: str | None = None,
) -> AgentLoopResult:
    """Run `step` until the model answers without a tool call, or a stop condition holds.

    Each step sends the history followed by the messages of the steps before it (the model's
    answers and the tool messages of their results); `history` itself is never changed. A
    step's tool calls run while its answer streams (see `step`), and the loop waits for all
    of them before it decides anything, so every call of the model has its tool message.
    After each step, in this order:

    1. no tool call: the model answered, `"answered"`;
    2. a tool got invalid arguments (a `ToolParseError` or `ToolValidateError`) more times in
       a row than its retry budget: `ToolRetriesExhausted` is raised. The budget is
       `retry_budgets[name]`, else `retry_budget` (None: no limit); a call of the tool whose
       arguments are accepted starts its count again. Within the budget, the error goes back
       to the model, which can correct its call;
    3. a tool named in `stop_at_tools` (names, or one name) has run (its arguments were
       accepted; it may still have failed): `"stop_at_tool"`;
    4. `stop_when(step)` is true (it may be async): `"stopped"`;
    5. the tokens of all steps (`usage.total`) reached `token_budget`: `"token_budget"`;
    6. `max_steps` steps were made: `"max_steps"`.

    `on_step` (sync or async) is called with each `AgentStep` before these checks.
    `tool_choice` is sent with every step ("auto", "none", "required" or a tool's name; each
    provider puts it in its API's own format), or is a function of the step's number giving
    the choice for that step (None: the provider's default). A choice that forces a call on
    every step never lets the model answer: pair it with `stop_at_tools`, or force only the
    first step (`lambda n: "required" if n == 1 else None`). `on_message_part`,
    `on_tool_result`, `parallel_tool_calls`, `native_tools` and `generation_overrides` are
    passed to every `step`. An answer the provider paused (Anthropic's `pause_turn`, a long
    native-tool turn) is not an answer: the loop sends it back for the model to go on.

    `output_type` (a pydantic model, or any type pydantic validates: `int`, `list[str]`, a
    dataclass...) asks for a final answer of that type: in the provider's own way where it has
    one (OpenAI `response_format` json_schema, Responses `text.format`, Anthropic
    `output_config.format`, Gemini `responseJsonSchema`, Kimi's JSON Mode with the schema in
    a system message), else through
    a `final_answer` tool whose parameters are the type's schema. The answer is validated; a
    failed one goes back to the model, which is asked again up to `output_retries` times, and
    then `OutputRetriesExhausted` is raised. `AgentLoopResult.output` is the validated value.

    A call may be deferred instead of run: an `ApprovalPolicy` hook answered
    `ApprovalDecision.defer(question)`, or its tool is `external` (its caller runs it). Then
    the step's other calls finish, and before any check above the loop returns with
    `"deferred"`: `deferred` lists the waiting calls, `state` is the run (JSON with
    `state.dump()`). Later, in any process, `agent_loop(chat_provider, system_prompt,
    toolset, history, resume=state, answers={call_id: answer, ...})` with the same history
    completes that step and goes on: an answer is `Approve()` (the call runs, with an
    idempotency key kept in the state), `Deny(reason)`, or an external tool's
    `ToolReturnValue`. Only those calls run; the model sees one result per call it made.

    `agent_name` names the run in telemetry (its `invoke_agent {agent_name}` span:
    `kosong.telemetry`).

    Cancelling the loop cancels the step under way: the model's stream and every tool call
    still running are cancelled and awaited before the cancellation propagates.

    Raises:
        ToolRetriesExhausted: a tool's retry budget was spent (see 2).
        OutputRetriesExhausted: the final answer did not validate as `output_type`, after
            `output_retries` more tries.
        ChatProviderError: the provider failed; the steps before were given to `on_step`.
        ValueError: `max_steps` is below 1, `token_budget` below 1, a retry budget
            negative; or, resuming, an answer is missing, unknown or of the wrong kind, or
            the history is not the one the run started from (nothing is sent then).
    """
    _check_limits(max_steps, token_budget, retry_budget, retry_budgets)
    if resume is not None:
        check_answers(resume, answers or {}, len(history))
    elif answers:
        raise ValueError("answers are for a run that stopped on deferred calls: pass resume=state")
    structured: StructuredOutput | None = None
    if output_type is not None:
        structured, chat_provider, toolset = StructuredOutput.start(
            output_type, output_retries, chat_provider, toolset
        )
        if resume is not None:
            structured.failures = resume.output_failures
    budgets = dict(retry_budgets or {})
    # One name is a collection of one, not of its letters.
    stop_names = frozenset([stop_at_tools] if isinstance(stop_at_tools, str) else stop_at_tools)
    messages: list[Message] = list(resume.messages) if resume is not None else []
    steps: list[StepResult] = []
    failures: dict[str, int] = dict(resume.failures) if resume is not None else {}
    tokens = resume.tokens if resume is not None else 0

    async def finish(
        number: int, result: StepResult, results: list[ToolResult]
    ) -> AgentLoopResult | None:
        """What the loop does once a step's calls are done or deferred: a result to stop."""
        nonlocal tokens
        steps.append(result)
        used = result.usage.total if result.usage is not None else 0
        keys = waiting_keys(resume) if resume is not None else {}
        answers_failed = structured.failures if structured is not None else 0
        state = pause(
            len(history), messages, number, result, results, failures, tokens, keys, answers_failed
        )
        tokens += used
        if state is not None:
            waiting = {d.call_id for d in state.deferred}
            done = [result.message, *(tool_result_to_message(r) for r in results
                                      if r.tool_call_id not in waiting)]  # fmt: skip
            return AgentLoopResult([*messages, *done], steps, "deferred", state.deferred, state)
        added = [result.message, *(tool_result_to_message(r) for r in results)]
        messages.extend(added)
        done = AgentStep(number, result, results, added, tokens)
        await call_back(on_step, done)

        calls = list(zip(result.tool_calls, results, strict=True))
        if structured is not None and result.finish_reason != "pause_turn":
            outcome = structured.answer(result.message, calls)
            if outcome.done:
                return AgentLoopResult(messages, steps, "answered", output=outcome.value)
            if outcome.error is not None:
                structured.failures += 1
                if structured.failures > structured.retries:
                    raise OutputRetriesExhausted(
                        outcome.error, structured.failures, messages, steps
                    )
                if outcome.asking is not None:
                    messages.append(outcome.asking)
                    return None
        elif not result.tool_calls and result.finish_reason != "pause_turn":
            return AgentLoopResult(messages, steps, "answered")
        for call, tool_result in calls:
            name = call.function.name
            value = tool_result.return_value
            if not _invalid(value):
                failures.pop(name, None)
                continue
            failures[name] = failures.get(name, 0) + 1
            budget = budgets.get(name, retry_budget)
            if budget is not None and failures[name] > budget:
                raise ToolRetriesExhausted(name, value, failures[name], budget, messages, steps)
        if _ran_one_of(stop_names, calls):
            return AgentLoopResult(messages, steps, "stop_at_tool")
        if await call_back(stop_when, done):
            return AgentLoopResult(messages, steps, "stopped")
        if token_budget is not None and tokens >= token_budget:
            return AgentLoopResult(messages, steps, "token_budget")
        return None

    first = 1
    if resume is not None:
        results = await resume_calls(resume, answers or {}, toolset, on_tool_result)
        outcome = await finish(resume.step, _resumed_step(resume, results), results)
        if outcome is not None:
            return outcome
        first = resume.step + 1
    for number in range(first, max_steps + 1):
        result = await step(
            chat_provider,
            system_prompt,
            toolset,
            [*history, *messages],
            on_message_part=on_message_part,
            on_tool_result=on_tool_result,
            tool_choice=tool_choice(number) if callable(tool_choice) else tool_choice,
            generation_overrides=generation_overrides,
            parallel_tool_calls=parallel_tool_calls,
            native_tools=native_tools,
        )
        outcome = await finish(number, result, await result.tool_results())
        if outcome is not None:
            return outcome
    return AgentLoopResult(messages, steps, "max_steps")


def _resumed_step(state: AgentState, results: list[ToolResult]) -> StepResult:
    """The waiting step as a `StepResult` again, its calls' results the resumed ones."""
    return StepResult(
        id=state.step_id,
        message=state.answer,
        usage=state.usage,
        tool_calls=list(state.answer.tool_calls or []),
        _tool_result_futures=list[HandleResult](results),  # a result is awaitable itself
        finish_reason=state.finish_reason,
    )


def _check_limits(
    max_steps: int,
    token_budget: int | None,
    retry_budget: int | None,
    retry_budgets: Mapping[str, int] | None,
) -> None:
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    if token_budget is not None and token_budget < 1:
        raise ValueError(f"token_budget must be at least 1, got {token_budget}")
    if retry_budget is not None and retry_budget < 0:
        raise ValueError(f"retry_budget cannot be negative, got {retry_budget}")
    negative = {name: n for name, n in (retry_budgets or {}).items() if n < 0}
    if negative:
        raise ValueError(f"a retry budget cannot be negative, got {negative}")


def _invalid(value: object) -> TypeGuard[ToolParseError | ToolValidateError]:
    return isinstance(value, ToolParseError | ToolValidateError)


def _ran_one_of(names: frozenset[str], calls: list[tuple[ToolCall, ToolResult]]) -> bool:
    """Whether a call of one of `names` ran: the tool exists and took its arguments."""
    return any(
        call.function.name in names
        and not _invalid(result.return_value)
        and not isinstance(result.return_value, ToolNotFoundError)
        for call, result in calls
    )
