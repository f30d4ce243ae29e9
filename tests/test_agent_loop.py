"""agent_loop against the scripted model and real toolsets: stop conditions, retries, events,
tool_choice, history, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong import AgentStep, ToolRetriesExhausted, agent_loop
from kosong.chat_provider import APIConnectionError
from kosong.chat_provider.mock import MockChatProvider
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message, TextPart, ToolCall
from kosong.testing import ScriptedTool
from kosong.tooling import tool
from kosong.tooling.error import ToolParseError, ToolValidateError
from kosong.tooling.simple import SimpleToolset

USER = [Message(role="user", content="go")]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def finish(summary: str) -> str:
    """Hand the final summary over."""
    return f"done: {summary}"


def quote_results(history: Sequence[Message]) -> list[str]:
    return ["results: " + ", ".join(m.extract_text() for m in history if m.role == "tool")]


async def test_the_loop_runs_tools_until_the_model_answers_and_keeps_the_history() -> None:
    history = [*USER]
    snapshot = [m.model_copy(deep=True) for m in history]
    model = ScriptedChatProvider(
        [
            ["Adding.", call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})],
            [call("add", {"a": 10, "b": 20})],
            quote_results,
        ]
    )
    result = await agent_loop(model, "sys", SimpleToolset([add]), history)
    assert result.stop_reason == "answered"
    assert [m.role for m in result.messages] == [
        "assistant", "tool", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert result.answer == "results: 3, 7, 30"
    assert len(result.steps) == 3
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == [
        "call_0_1", "call_0_2", "call_1_1",
    ]  # fmt: skip
    assert history == snapshot  # never changed
    # Each request is the history, then everything the steps before it added.
    assert [len(r.history) for r in model.requests] == [1, 4, 6]
    assert model.requests[2].history == [*snapshot, *result.messages[:5]]


async def test_max_steps_stops_a_model_that_never_answers() -> None:
    model = ScriptedChatProvider([[call("add", {"a": i, "b": 1})] for i in range(10)])
    result = await agent_loop(model, "", SimpleToolset([add]), USER, max_steps=3)
    assert result.stop_reason == "max_steps"
    assert len(result.steps) == 3 and model.turns_left == 7
    assert result.messages[-1].role == "tool"  # the last call has its result all the same


async def test_stop_at_tools_stops_after_the_named_tool_ran_not_after_a_refused_call() -> None:
    model = ScriptedChatProvider(
        [
            [call("finish", {"summary": 42})],  # refused: the model gets the error and retries
            [call("add", {"a": 1, "b": 1}), call("finish", {"summary": "two"})],
            ["never asked"],
        ]
    )
    result = await agent_loop(
        model, "", SimpleToolset([add, finish]), USER, stop_at_tools=["finish"]
    )
    assert result.stop_reason == "stop_at_tool"
    assert len(result.steps) == 2 and model.turns_left == 1
    tool_texts = [m.extract_text() for m in result.messages if m.role == "tool"]
    # The message says "error" once (the tool message marks it ERROR:).
    assert tool_texts[0].startswith("ERROR: validating JSON arguments: summary")
    assert tool_texts[1:] == ["2", "done: two"]


async def test_stop_at_tools_takes_one_name_as_well() -> None:
    model = ScriptedChatProvider([[call("finish", {"summary": "x"})], ["never asked"]])
    result = await agent_loop(model, "", SimpleToolset([finish]), USER, stop_at_tools="finish")
    assert result.stop_reason == "stop_at_tool"


async def test_a_stop_tool_the_toolset_does_not_have_does_not_stop_the_loop() -> None:
    model = ScriptedChatProvider([[call("finish", {"summary": "x"})], ["answered"]])
    result = await agent_loop(model, "", SimpleToolset([add]), USER, stop_at_tools=["finish"])
    assert result.stop_reason == "answered"
    assert "not found" in result.messages[1].extract_text()


async def test_token_budget_stops_once_the_steps_used_it() -> None:
    model = ScriptedChatProvider([[call("add", {"a": 1, "b": 2})] for _ in range(5)])
    first = await agent_loop(model, "", SimpleToolset([add]), USER, max_steps=1)
    per_step = first.tokens_used
    assert per_step > 0
    model = ScriptedChatProvider([[call("add", {"a": 1, "b": 2})] for _ in range(5)])
    result = await agent_loop(
        model, "", SimpleToolset([add]), USER, token_budget=per_step + 1, max_steps=5
    )
    assert result.stop_reason == "token_budget"
    assert len(result.steps) == 2  # the second step reached the budget
    assert result.tokens_used >= per_step + 1


async def test_an_answer_wins_over_a_budget_it_also_reached() -> None:
    model = ScriptedChatProvider([["short answer"]])
    result = await agent_loop(model, "", SimpleToolset([add]), USER, token_budget=1)
    assert result.stop_reason == "answered"


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_stop_when_stops_the_loop_with_stopped(asynchronous: bool) -> None:
    model = ScriptedChatProvider([[call("add", {"a": i, "b": 0})] for i in range(5)])
    seen: list[int] = []

    def enough(step: AgentStep) -> bool:
        seen.append(step.number)
        return step.tool_results[0].return_value.output == "2"

    async def enough_async(step: AgentStep) -> bool:
        await asyncio.sleep(0)
        return enough(step)

    result = await agent_loop(
        model, "", SimpleToolset([add]), USER, stop_when=enough_async if asynchronous else enough
    )
    assert result.stop_reason == "stopped"
    assert seen == [1, 2, 3]


async def test_on_step_sees_every_step_with_its_messages_and_running_token_count() -> None:
    model = ScriptedChatProvider([[call("add", {"a": 1, "b": 2})], ["three"]])
    events: list[AgentStep] = []

    async def record(step: AgentStep) -> None:
        await asyncio.sleep(0)
        events.append(step)

    result = await agent_loop(model, "", SimpleToolset([add]), USER, on_step=record)
    assert [e.number for e in events] == [1, 2]
    assert [e.result for e in events] == result.steps
    assert [m for e in events for m in e.messages] == result.messages
    assert events[0].tool_results[0].return_value.output == "3"
    assert events[1].tool_results == []
    assert events[-1].tokens_used == result.tokens_used
    assert events[0].tokens_used < events[1].tokens_used


async def test_tool_choice_goes_to_every_step_or_per_step_from_a_function() -> None:
    script = [[call("add", {"a": 1, "b": 1})], [call("add", {"a": 2, "b": 2})], ["done"]]
    model = ScriptedChatProvider(script)
    await agent_loop(model, "", SimpleToolset([add]), USER, tool_choice="auto")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "auto"]

    model = ScriptedChatProvider(script)
    await agent_loop(
        model, "", SimpleToolset([add]), USER,
        tool_choice=lambda n: "add" if n == 1 else None,
        generation_overrides={"temperature": 0.2},
    )  # fmt: skip
    assert [r.tool_choice for r in model.requests] == ["add", None, None]
    assert [r.generation_kwargs for r in model.requests] == [{"temperature": 0.2}] * 3
    assert model.tool_choice is None  # the provider itself is unchanged


async def test_invalid_calls_past_the_retry_budget_raise_naming_the_tool_and_error() -> None:
    bad = [call("add", {"a": "one", "b": 2})]
    model = ScriptedChatProvider([bad, bad, bad, ["never asked"]])
    with pytest.raises(ToolRetriesExhausted) as caught:
        await agent_loop(model, "", SimpleToolset([add]), USER, retry_budget=2)
    error = caught.value
    assert str(error) == (
        "tool `add` got invalid arguments 3 times in a row, past its retry budget of 2; "
        "the last error: Error validating JSON arguments: a: Input should be a valid integer, "
        'unable to parse string as an integer (got "one")'
    )
    assert (error.tool_name, error.attempts, error.budget) == ("add", 3, 2)
    assert isinstance(error.error, ToolValidateError)
    assert len(error.steps) == 3 and len(error.messages) == 6  # nothing the loop did is lost
    assert model.turns_left == 1


async def test_a_parse_error_counts_and_an_accepted_call_starts_the_count_again() -> None:
    broken = call("add", '{"a": 1, "b": ')
    good = call("add", {"a": 1, "b": 1})
    model = ScriptedChatProvider([[broken], [good], [broken], ["answer"]])
    result = await agent_loop(model, "", SimpleToolset([add]), USER, retry_budget=1)
    assert result.stop_reason == "answered"

    model = ScriptedChatProvider([[broken], [broken], ["answer"]])
    with pytest.raises(ToolRetriesExhausted) as caught:
        await agent_loop(model, "", SimpleToolset([add]), USER, retry_budget=1)
    assert isinstance(caught.value.error, ToolParseError)


async def test_retry_budgets_per_tool_and_none_for_no_limit() -> None:
    bad_add = call("add", {"a": "x", "b": 1})
    bad_finish = call("finish", {})
    model = ScriptedChatProvider([[bad_add, bad_finish]] * 4 + [["answer"]])
    with pytest.raises(ToolRetriesExhausted) as caught:
        await agent_loop(
            model, "", SimpleToolset([add, finish]), USER,
            retry_budget=None, retry_budgets={"finish": 3},
        )  # fmt: skip
    assert (caught.value.tool_name, caught.value.attempts) == ("finish", 4)

    model = ScriptedChatProvider([[bad_add]] * 6 + [["answer"]])
    result = await agent_loop(model, "", SimpleToolset([add]), USER, retry_budget=None)
    assert result.stop_reason == "answered" and len(result.steps) == 7


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("max_steps", 0, "max_steps must be at least 1"),
        ("token_budget", 0, "token_budget must be at least 1"),
        ("retry_budget", -1, "retry_budget cannot be negative"),
        ("retry_budgets", {"add": -2}, "a retry budget cannot be negative"),
    ],
)
async def test_impossible_limits_are_refused_before_any_request(
    option: str, value: object, message: str
) -> None:
    model = ScriptedChatProvider([["hi"]])
    with pytest.raises(ValueError, match=message):
        await agent_loop(model, "", SimpleToolset(), USER, **{option: value})  # pyright: ignore[reportArgumentType]
    assert model.requests == []


async def test_a_provider_error_propagates_after_the_steps_reported_to_on_step() -> None:
    model = ScriptedChatProvider([[call("add", {"a": 1, "b": 1})], [APIConnectionError("down")]])
    seen: list[int] = []
    with pytest.raises(APIConnectionError, match="down"):
        await agent_loop(
            model, "", SimpleToolset([add]), USER, on_step=lambda s: seen.append(s.number)
        )
    assert seen == [1]


async def test_cancelled_mid_stream_the_loop_leaves_no_task_behind() -> None:
    slow = ScriptedTool("slow", ["never"], gated=True)
    model = ScriptedChatProvider(
        [[call("slow", {"n": 1}), "streaming on", " and on"]], chunk_size=2
    )
    streaming = asyncio.Event()

    async def hold(part: object) -> None:
        if isinstance(part, TextPart):
            await asyncio.wait_for(slow.wait_calls(1), timeout=5)  # the tool already runs
            streaming.set()
            await asyncio.sleep(3600)

    before = asyncio.all_tasks()
    task = asyncio.create_task(
        agent_loop(model, "", SimpleToolset([slow]), USER, on_message_part=hold)
    )
    await asyncio.wait_for(streaming.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert asyncio.all_tasks() - before - {task} == set()
    assert slow.calls == 1


async def test_cancelled_while_tools_run_the_loop_cancels_and_awaits_them() -> None:
    cancelled: list[str] = []
    entered: list[str] = []
    both_running = asyncio.Event()

    @tool
    async def wait_forever(name: str) -> str:
        """Wait until cancelled."""
        entered.append(name)
        if len(entered) == 2:
            both_running.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return name

    model = ScriptedChatProvider(
        [[call("wait_forever", {"name": "a"}), call("wait_forever", {"name": "b"})]]
    )
    before = asyncio.all_tasks()
    task = asyncio.create_task(agent_loop(model, "", SimpleToolset([wait_forever]), USER))
    await asyncio.wait_for(both_running.wait(), timeout=5)
    for _ in range(20):  # the stream had nothing after the last call: the loop now waits
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert sorted(cancelled) == ["a", "b"]
    assert asyncio.all_tasks() - before - {task} == set()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=6))
def test_every_call_gets_its_tool_message_right_after_its_answer(calls_per_step: list[int]) -> None:
    script = [
        [call("add", {"a": step, "b": i}) for i in range(n)] or ["answer"]
        for step, n in enumerate(calls_per_step)
    ]
    model = ScriptedChatProvider([*script, ["final"]], chunk_size=64)
    result = asyncio.run(
        agent_loop(model, "", SimpleToolset([add]), USER, max_steps=len(calls_per_step) + 1)
    )
    answered_at = next((i for i, n in enumerate(calls_per_step) if n == 0), None)
    made = calls_per_step[: answered_at + 1] if answered_at is not None else calls_per_step
    expected_steps = len(made) + (answered_at is None)
    assert len(result.steps) == expected_steps
    assert result.stop_reason == "answered"
    position = 0
    for step_result in result.steps:
        assert result.messages[position] is step_result.message
        calls: list[ToolCall] = step_result.tool_calls
        tool_messages = result.messages[position + 1 : position + 1 + len(calls)]
        assert [m.tool_call_id for m in tool_messages] == [c.id for c in calls]
        position += 1 + len(calls)
    assert position == len(result.messages)


async def test_a_provider_that_reports_no_usage_counts_no_tokens() -> None:
    model = MockChatProvider([TextPart(text="hello")])
    result = await agent_loop(model, "", SimpleToolset(), USER, token_budget=1)
    assert (result.stop_reason, result.tokens_used, result.answer) == ("answered", 0, "hello")
