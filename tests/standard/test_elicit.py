"""`current_call().elicit(...)`: a tool asks the user through whoever serves the call."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from kosong.standard import ElicitAnswer, PolicyToolset, current_call
from kosong.standard._context import elicit_with
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
