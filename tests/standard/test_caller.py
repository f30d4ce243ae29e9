"""Whoever made the call, reached from inside it: `elicit`, `sample` and `log`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from kosong.message import Message
from kosong.standard import CallContext, ElicitAnswer, PolicyToolset, caller_scope, current_call
from kosong.standard._caller import elicit_with
from kosong.testing import make_call
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset


class Contact(BaseModel):
    name: str
    age: int = 0


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tool
async def greet() -> str:
    """Greet the user by name."""
    call = current_call()
    assert call is not None
    answer = await call.elicit("Your name?", SCHEMA)
    if answer.action != "accept" or answer.content is None:
        return f"no name ({answer.action})"
    return f"hello {answer.content['name']}"


async def test_nobody_to_ask_means_declined():
    pipeline = PolicyToolset(SimpleToolset([greet]))
    result = await pipeline.handle(make_call("greet", {}))
    assert result.return_value.output == "no name (decline)"


async def test_a_call_asks_the_elicitor_set_where_it_started():
    asked: list[tuple[str, dict[str, Any]]] = []

    async def elicitor(message: str, schema: dict[str, Any]) -> ElicitAnswer:
        asked.append((message, schema))
        return ElicitAnswer.accept({"name": "Ada"})

    pipeline = PolicyToolset(SimpleToolset([greet]))
    with elicit_with(elicitor):
        started = pipeline.handle(make_call("greet", {}))
    # The call's task copied the elicitor when it started: leaving the block changes nothing.
    result = await started
    assert result.return_value.output == "hello Ada"
    assert asked == [("Your name?", SCHEMA)]


@pytest.mark.parametrize("answer", [ElicitAnswer.decline(), ElicitAnswer.cancel()])
async def test_a_refusal_is_handed_to_the_tool_as_it_is(answer: ElicitAnswer):
    async def elicitor(message: str, schema: dict[str, Any]) -> ElicitAnswer:
        return answer

    with elicit_with(elicitor):
        result = await PolicyToolset(SimpleToolset([greet])).handle(make_call("greet", {}))
    assert result.return_value.output == f"no name ({answer.action})"


async def test_a_pydantic_model_is_asked_as_its_json_schema_and_checks_the_answer():
    seen: list[dict[str, Any]] = []
    answers = [ElicitAnswer.accept({"name": "Ada", "age": 36}), ElicitAnswer.accept({"age": 1})]

    async def elicitor(message: str, schema: dict[str, Any]) -> ElicitAnswer:
        seen.append(schema)
        return answers.pop(0)

    @tool
    async def register() -> str:
        """Register a contact."""
        call = current_call()
        assert call is not None
        answer = await call.elicit("Who?", Contact)
        return Contact.model_validate(answer.content).model_dump_json()

    pipeline = PolicyToolset(SimpleToolset([register]))
    with elicit_with(elicitor):
        good = await pipeline.handle(make_call("register", {}))
        bad = await pipeline.handle(make_call("register", {}))
    assert seen[0] == Contact.model_json_schema()
    assert good.return_value.output == '{"name":"Ada","age":36}'
    # Accepted values that do not fit what was asked fail the tool, saying so.
    assert bad.return_value.is_error
    assert "does not fit Contact" in bad.return_value.message


async def test_an_answer_that_does_not_fit_a_json_schema_fails_the_call():
    async def elicitor(message: str, schema: dict[str, Any]) -> ElicitAnswer:
        return ElicitAnswer.accept({"name": 7})

    with elicit_with(elicitor):
        result = await PolicyToolset(SimpleToolset([greet])).handle(make_call("greet", {}))
    assert result.return_value.is_error
    assert "does not fit the schema asked" in result.return_value.message


class Recording:
    """A caller that records what the tool sent it (what an MCP server's client would get)."""

    def __init__(self) -> None:
        self.sampled: list[tuple[list[Any], str, int, float | None]] = []
        self.logged: list[tuple[str, Any, str | None]] = []

    async def elicit(self, message: str, schema: dict[str, Any]) -> ElicitAnswer:
        return ElicitAnswer.accept({"name": "Ada"})

    async def sample(
        self, messages: list[Any], system_prompt: str, max_tokens: int, temperature: float | None
    ) -> Message:
        self.sampled.append((messages, system_prompt, max_tokens, temperature))
        return Message(role="assistant", content="sampled")

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        self.logged.append((level, data, logger))


async def test_sample_and_log_reach_the_caller_in_scope() -> None:
    caller = Recording()
    ctx = CallContext("c1", "tool", "trace_x")
    with caller_scope(caller):
        answer = await ctx.sample("Hi", system_prompt="Be brief.", max_tokens=10)
        await ctx.log("notice", {"step": 1}, logger="db")
        asked = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
    assert answer.extract_text() == "sampled" and asked.content == {"name": "Ada"}
    assert caller.sampled == [([Message(role="user", content="Hi")], "Be brief.", 10, None)]
    assert caller.logged == [("notice", {"step": 1}, "db")]
    with pytest.raises(ValueError, match="level must be one of debug, info"):
        await ctx.log("verbose", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        await ctx.sample("Hi", max_tokens=0)


async def test_without_a_caller_sample_raises_and_elicit_declines() -> None:
    ctx = CallContext("c1", "tool", "trace_x")
    with pytest.raises(RuntimeError, match="nobody who made this call can sample"):
        await ctx.sample("Hi")
    assert (await ctx.elicit("Name?", {"type": "object"})).action == "decline"
    alone = elicit_with(Recording().elicit)  # an elicitor alone: it cannot sample
    with alone, pytest.raises(RuntimeError, match="cannot sample"):
        await ctx.sample("Hi")
