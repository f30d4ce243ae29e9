"""generate and step with the scripted model and real toolsets: merging, dispatch, cancellation."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref

import pytest
from pydantic import BaseModel

from kosong import generate, step, tool_result_to_message
from kosong.chat_provider import APIConnectionError, APIEmptyResponseError, ChatProviderError
from kosong.chat_provider.mock import MockChatProvider
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import ImageURLPart, Message, TextPart, ThinkPart, ToolCall, ToolCallPart
from kosong.tooling import CallableTool2, ToolError, ToolOk, ToolResult, ToolReturnValue
from kosong.tooling.simple import SimpleToolset


class EchoParams(BaseModel):
    text: str


class Echo(CallableTool2[EchoParams]):
    name = "echo"
    description = "Echo the text."
    params = EchoParams

    def __init__(
        self, started: asyncio.Event | None = None, release: asyncio.Event | None = None
    ) -> None:
        super().__init__()
        self._started = started
        self._release = release
        self._cancelled: list[str] = []

    @property
    def cancelled(self) -> int:
        return len(self._cancelled)

    async def __call__(self, params: EchoParams) -> ToolReturnValue:
        if self._started is not None:
            self._started.set()
        if self._release is not None:
            try:
                await self._release.wait()
            except asyncio.CancelledError:
                self._cancelled.append(params.text)
                raise
        return ToolOk(output=params.text)


USER = [Message(role="user", content="go")]


async def test_generate_merges_text_thinking_and_argument_fragments() -> None:
    provider = ScriptedChatProvider(
        [[ThinkPart(think="deep thought"), "Hello there", call("echo", {"text": "hi"}, id="c1")]],
        chunk_size=3,
    )
    seen: list[object] = []
    calls: list[ToolCall] = []
    result = await generate(
        provider, "", [], USER, on_message_part=seen.append, on_tool_call=calls.append
    )
    assert result.message.content == [ThinkPart(think="deep thought"), TextPart(text="Hello there")]
    assert result.message.tool_calls == calls
    assert calls[0].function.arguments == '{"text": "hi"}'
    assert len(seen) > 10  # every fragment was shown, unmerged
    assert result.finish_reason == "stop" or result.finish_reason == "tool_calls"


async def test_what_a_part_callback_does_to_the_parts_never_reaches_the_message() -> None:
    provider = ScriptedChatProvider(
        [[ThinkPart(think="deep thought"), "Hello there", call("echo", {"text": "hi"}, id="c1")]],
        chunk_size=3,
    )
    seen: list[tuple[str, str]] = []

    def vandal(part: object) -> None:
        # Keeps each fragment as it came, then scribbles over it.
        if isinstance(part, TextPart):
            seen.append(("text", part.text))
            part.text = "X"
        elif isinstance(part, ThinkPart):
            seen.append(("think", part.think))
            part.think = "X"
        elif isinstance(part, ToolCall):
            seen.append(("call", part.function.name))
            part.function.name, part.function.arguments, part.id = "gone", "{}", "x"
        elif isinstance(part, ToolCallPart):
            seen.append(("arguments", part.arguments_part or ""))
            part.arguments_part = "X"

    result = await generate(provider, "", [], USER, on_message_part=vandal)
    assert result.message.content == [ThinkPart(think="deep thought"), TextPart(text="Hello there")]
    assert result.message.tool_calls == [
        ToolCall(id="c1", function=ToolCall.FunctionBody(name="echo", arguments='{"text": "hi"}'))
    ]
    # Each fragment was shown unmerged: merging never wrote into what the callback was given.
    assert [t for kind, t in seen if kind == "text"] == ["Hel", "lo ", "the", "re"]
    assert "".join(t for kind, t in seen if kind == "arguments") == '{"text": "hi"}'


async def test_generate_accepts_async_callbacks() -> None:
    seen: list[str] = []

    async def on_part(part: object) -> None:
        await asyncio.sleep(0)
        seen.append(type(part).__name__)

    await generate(
        ScriptedChatProvider([["ab"]], chunk_size=1), "", [], USER, on_message_part=on_part
    )
    assert seen == ["TextPart", "TextPart"]


async def test_generate_with_only_thinking_is_an_empty_response() -> None:
    with pytest.raises(APIEmptyResponseError, match="only thinking"):
        await generate(ScriptedChatProvider([[ThinkPart(think="hmm"), "  "]]), "", [], USER)


async def test_mock_provider_streams_exactly_its_parts_and_stays_reusable() -> None:
    parts = [
        TextPart(text="a"), TextPart(text="b"),
        ToolCall(id="c1", function=ToolCall.FunctionBody(name="echo", arguments='{"text":')),
        ToolCallPart(arguments_part='"x"}'),
    ]  # fmt: skip
    provider = MockChatProvider(parts)
    for _ in range(2):
        result = await generate(provider, "", [], USER)
        assert result.message.extract_text() == "ab"
        assert result.message.tool_calls is not None
        assert result.message.tool_calls[0].function.arguments == '{"text":"x"}'
    assert parts[0] == TextPart(text="a")


async def test_step_runs_tools_while_the_answer_streams_and_keeps_call_order() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    slow, fast = Echo(started=started, release=release), None
    del fast
    provider = ScriptedChatProvider(
        [[call("echo", {"text": "first"}), "still talking", call("echo", {"text": "second"})]],
        chunk_size=2,
    )

    async def check_started(part: object) -> None:
        # The text after the first call streams while that tool already runs.
        if isinstance(part, TextPart):
            await asyncio.wait_for(started.wait(), timeout=5)
            release.set()

    result = await step(provider, "", SimpleToolset([slow]), USER, on_message_part=check_started)
    assert [r.return_value.output for r in await result.tool_results()] == ["first", "second"]


async def test_step_reports_results_as_they_finish() -> None:
    reported: list[str] = []
    provider = ScriptedChatProvider([[call("echo", {"text": "a"}), call("nope", {})]])
    result = await step(
        provider,
        "",
        SimpleToolset([Echo()]),
        USER,
        on_tool_result=lambda r: reported.append(r.tool_call_id),
    )
    await result.tool_results()
    await asyncio.sleep(0)
    assert sorted(reported) == ["call_0_1", "call_0_2"]


@pytest.mark.parametrize("failure", ["provider_error", "cancelled"])
async def test_a_failure_mid_stream_cancels_and_awaits_every_dispatched_tool(failure: str) -> None:
    started, never = asyncio.Event(), asyncio.Event()
    tool = Echo(started=started, release=never)
    gate = asyncio.Event()
    items: list[object] = [call("echo", {"text": "a"}), call("echo", {"text": "b"}), "more"]
    if failure == "provider_error":
        items.append(APIConnectionError("the connection broke"))
    provider = ScriptedChatProvider([items])  # pyright: ignore[reportArgumentType]

    async def hold(part: object) -> None:
        if isinstance(part, TextPart):
            await asyncio.wait_for(started.wait(), timeout=5)
            gate.set()
            if failure == "cancelled":
                await asyncio.sleep(3600)

    before = asyncio.all_tasks()
    task = asyncio.create_task(
        step(provider, "", SimpleToolset([tool]), USER, on_message_part=hold)
    )
    await asyncio.wait_for(gate.wait(), timeout=5)
    if failure == "cancelled":
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with pytest.raises(APIConnectionError):
            await task
    assert tool.cancelled == 2
    assert asyncio.all_tasks() - before - {task} == set()


async def test_two_hundred_tool_calls_in_one_answer() -> None:
    provider = ScriptedChatProvider(
        [[call("echo", {"text": str(i)}) for i in range(200)]], chunk_size=4
    )
    result = await step(provider, "", SimpleToolset([Echo()]), USER)
    outputs = [r.return_value.output for r in await result.tool_results()]
    assert outputs == [str(i) for i in range(200)]
    assert len({c.id for c in result.tool_calls}) == 200


async def test_tool_results_read_again_are_the_same_and_the_finished_tasks_are_let_go() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    provider = ScriptedChatProvider([[call("echo", {"text": "a"}), call("echo", {"text": "b"})]])
    result = await step(provider, "", SimpleToolset([Echo(started, release)]), USER)
    await asyncio.wait_for(started.wait(), timeout=5)
    tasks = [weakref.ref(t) for t in result._tool_result_futures]
    assert all(isinstance(t(), asyncio.Task) for t in tasks)
    release.set()
    first = await result.tool_results()
    assert [r.return_value.output for r in first] == ["a", "b"]
    assert await result.tool_results() == first
    await asyncio.sleep(0)  # the loop runs what the tasks' ends scheduled (one pass, no timer)
    gc.collect()
    assert [t() for t in tasks] == [None, None]  # a kept step holds results, not tasks


async def test_step_never_changes_the_history() -> None:
    history = [Message(role="user", content="go"), Message(role="assistant", content="ok")]
    snapshot = [m.model_copy(deep=True) for m in history]
    provider = ScriptedChatProvider([[call("echo", {"text": "a"})]])
    result = await step(provider, "", SimpleToolset([Echo()]), history)
    await result.tool_results()
    assert history == snapshot
    assert provider.requests[0].history == snapshot


async def test_scripted_errors_and_running_out_of_turns() -> None:
    provider = ScriptedChatProvider([ChatProviderError("scripted outage"), ["fine"]])
    with pytest.raises(ChatProviderError, match="scripted outage"):
        await generate(provider, "", [], USER)
    assert (await generate(provider, "", [], USER)).message.extract_text() == "fine"
    with pytest.raises(ChatProviderError, match="no turn left"):
        await generate(provider, "", [], USER)


async def test_a_scripted_turn_can_read_the_history() -> None:
    provider = ScriptedChatProvider([lambda history: [f"you said {history[-1].extract_text()}"]])
    result = await generate(provider, "", [], [Message(role="user", content="hi")])
    assert result.message.extract_text() == "you said hi"


def test_tool_result_to_message_sends_output_and_message_never_display() -> None:
    ok = ToolResult("c1", ToolOk(output="42", message="computed", brief="shown to the user"))
    message = tool_result_to_message(ok)
    assert (message.role, message.tool_call_id) == ("tool", "c1")
    assert message.content == [TextPart(text="42"), TextPart(text="computed")]
    failed = tool_result_to_message(ToolResult("c2", ToolError(message="no such city", brief="x")))
    assert failed.content == [TextPart(text="ERROR: no such city")]
    image = ImageURLPart(image_url=ImageURLPart.ImageURL(url="https://x/y.png"))
    with_parts = ToolResult("c3", ToolOk(output=[TextPart(text="see"), image]))
    assert tool_result_to_message(with_parts).content == [TextPart(text="see"), image]
    assert tool_result_to_message(with_parts, text_only=True).content == [TextPart(text="see")]
    assert json.loads(tool_result_to_message(ok).model_dump_json())["content"][0]["text"] == "42"


def test_a_tool_message_for_an_error_says_error_once() -> None:
    from kosong.tooling.error import ToolNotFoundError, ToolRuntimeError, ToolValidateError

    def text(value: ToolReturnValue) -> str:
        return tool_result_to_message(ToolResult("c", value)).extract_text()

    assert text(ToolRuntimeError("ValueError: boom")) == "ERROR: running tool: ValueError: boom"
    assert text(ToolValidateError("a: Field required")) == (
        "ERROR: validating JSON arguments: a: Field required"
    )
    assert text(ToolError(message="Error: no city named x")) == "ERROR: no city named x"
    assert text(ToolNotFoundError("nope")) == "ERROR: Tool `nope` not found"
    assert text(ToolError(message="Errors happen")) == "ERROR: Errors happen"


async def test_on_trace_id_is_called_once_and_results_carry_it() -> None:
    seen: list[str | None] = []
    result = await step(
        ScriptedChatProvider([["hi"]]), "", SimpleToolset(), USER, on_trace_id=seen.append
    )
    assert seen == [None]
    assert result.trace_id is None


def test_a_script_with_an_unknown_item_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="turn 0 of the script holds a int"):
        ScriptedChatProvider([["fine", 42]])  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="turn 1 of the script is a str"):
        ScriptedChatProvider([["fine"], "not a list"])
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        ScriptedChatProvider([], chunk_size=0)


async def test_a_scripted_function_returning_a_bad_item_is_a_clear_error() -> None:
    provider = ScriptedChatProvider([lambda history: [object()]])  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="holds a object"):
        await generate(provider, "", [], USER)


async def test_step_passes_tool_choice_and_generation_overrides_for_this_call_only() -> None:
    provider = ScriptedChatProvider([["one"], ["two"]])
    await step(
        provider,
        "",
        SimpleToolset([Echo()]),
        USER,
        tool_choice="echo",
        generation_overrides={"temperature": 0.1},
    )
    await step(provider, "", SimpleToolset([Echo()]), USER)
    first, second = provider.requests
    assert (first.tool_choice, first.generation_kwargs) == ("echo", {"temperature": 0.1})
    assert (second.tool_choice, second.generation_kwargs) == (None, {})
    assert provider.tool_choice is None


async def test_a_provider_without_tool_choice_is_a_clear_type_error() -> None:
    class Bare:
        name = "bare"
        model_name = "m"
        thinking_effort = None

        async def generate(self, *args: object) -> object:
            raise AssertionError("not called")

        def with_thinking(self, effort: object) -> Bare:
            return self

    with pytest.raises(TypeError, match="Bare takes no tool_choice"):
        await generate(Bare(), "", [], USER, tool_choice="auto")  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="Bare takes no generation_overrides"):
        await generate(Bare(), "", [], USER, generation_overrides={"temperature": 0})  # pyright: ignore[reportArgumentType]


async def test_step_results_carry_the_provider_trace_id_under_both_names() -> None:
    result = await step(ScriptedChatProvider([["hi"]]), "", SimpleToolset(), USER)
    assert result.provider_trace_id is None and result.trace_id is None
