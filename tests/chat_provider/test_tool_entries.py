"""What a provider sends about a tool is made once per tool and kept while the tool is unchanged;
every request gets its own copy of it."""

from __future__ import annotations

import copy
import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from _bodies import check_anthropic_body, check_chat_body, check_gemini_body, check_responses_body
from _cases import user
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong._step import offered
from kosong.chat_provider._base import HTTPProvider
from kosong.chat_provider._tool_entries import Described
from kosong.chat_provider.anthropic import Anthropic
from kosong.chat_provider.gemini import Gemini
from kosong.chat_provider.kimi import Kimi
from kosong.chat_provider.openai import OpenAIChat, OpenAIResponses
from kosong.dialects import DialectError
from kosong.formats import (
    to_anthropic_tool,
    to_gemini_function_declaration,
    to_openai_chat_tool,
    to_openai_responses_tool,
)
from kosong.tooling import Tool, tool
from kosong.tooling.simple import SimpleToolset


def _provider(kind: type[HTTPProvider]) -> HTTPProvider:
    if kind is Anthropic:
        return Anthropic(model="claude-sonnet-4-6", api_key="k", prompt_cache=False)
    if kind is OpenAIChat:
        return OpenAIChat(model="gpt-4.1", api_key="k")
    if kind is OpenAIResponses:
        return OpenAIResponses(model="gpt-5.5", api_key="k")
    if kind is Gemini:
        return Gemini(api_key="k")  # its default model
    return Kimi(api_key="k")


PROVIDERS: list[type[HTTPProvider]] = [OpenAIChat, OpenAIResponses, Anthropic, Gemini, Kimi]
CHECKS: dict[type[HTTPProvider], Callable[[dict[str, Any]], None]] = {
    OpenAIChat: check_chat_body,
    OpenAIResponses: check_responses_body,
    Anthropic: check_anthropic_body,
    Gemini: check_gemini_body,
    Kimi: check_chat_body,
}


def entries(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's entries for the tools (Gemini's are its function declarations)."""
    tools: list[dict[str, Any]] = body.get("tools", [])
    if tools and "functionDeclarations" in tools[0]:
        return tools[0]["functionDeclarations"]
    return tools


def counting(kind: type[HTTPProvider]) -> tuple[HTTPProvider, list[str]]:
    """A provider of a subclass of `kind` that records the tools it describes."""
    described: list[str] = []

    class Counting(kind):
        def _describe(self, tool: Tool) -> Described:
            described.append(tool.name)
            return super()._describe(tool)

    provider = _provider(kind)
    provider.__class__ = Counting
    return provider, described


def weather() -> Tool:
    return Tool(
        name="get_weather",
        description="The weather in a city.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where."},
                "days": {"type": "integer", "minimum": 1, "description": "How many days."},
                "units": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    )


@pytest.mark.parametrize("kind", PROVIDERS, ids=lambda k: k.__name__)
def test_each_tool_is_described_once_however_many_requests_send_it(
    kind: type[HTTPProvider],
) -> None:
    provider, described = counting(kind)
    tools = [weather(), weather().model_copy(update={"name": "get_forecast"})]
    first = provider.request_body("", tools, user())
    for _ in range(3):
        assert provider.request_body("", tools, user()) == first
    # A copy made by a with_ method is the same kind of provider: it reuses them too.
    assert provider.with_generation_kwargs(temperature=0.5).request_body("", tools, user())
    assert described == ["get_weather", "get_forecast"]
    CHECKS[kind]({**first, "stream": True} if kind is not Gemini else first)


@pytest.mark.parametrize("kind", PROVIDERS, ids=lambda k: k.__name__)
def test_a_tool_whose_field_is_set_is_sent_changed(kind: type[HTTPProvider]) -> None:
    provider, described = counting(kind)
    definition = weather()
    before = _names(provider.request_body("", [definition], user()))[0]
    definition.description = "Today's weather in a city."
    definition.parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    after = _names(provider.request_body("", [definition], user()))[0]
    assert after["description"] == "Today's weather in a city."
    assert before["description"] == "The weather in a city."
    schema = after.get("parameters") or after.get("input_schema") or after["parametersJsonSchema"]
    assert schema == {"type": "object", "properties": {"city": {"type": "string"}}}
    assert described == ["get_weather", "get_weather"]


@pytest.mark.parametrize("kind", PROVIDERS, ids=lambda k: k.__name__)
def test_a_toolset_that_changes_is_sent_as_it_is_now(kind: type[HTTPProvider]) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    provider = _provider(kind)
    toolset = SimpleToolset([add])
    assert [e["name"] for e in _names(provider.request_body("", toolset.tools, user()))] == ["add"]
    toolset += mul
    named = _names(provider.request_body("", toolset.tools, user()))
    assert [e["name"] for e in named] == ["add", "mul"]
    toolset.remove("add")
    assert [e["name"] for e in _names(provider.request_body("", toolset.tools, user()))] == ["mul"]


def _names(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries, each with its name at the top (Chat Completions nests it in `function`)."""
    return [e.get("function", e) for e in entries(body)]


def _scribble(value: Any) -> None:
    """Change every dict and list inside `value`, in place."""
    if isinstance(value, dict):
        for child in list(value.values()):
            _scribble(child)
        value["scribbled"] = True
    elif isinstance(value, list):
        for child in value:
            _scribble(child)
        value.append("scribbled")


@pytest.mark.parametrize("kind", PROVIDERS, ids=lambda k: k.__name__)
def test_changing_a_body_changes_neither_the_next_body_nor_the_tool(
    kind: type[HTTPProvider],
) -> None:
    provider = (
        Anthropic(model="claude-sonnet-4-6", api_key="k") if kind is Anthropic else _provider(kind)
    )  # Anthropic with its prompt cache: a breakpoint goes in the last tool's entry
    definition = weather()
    schema = copy.deepcopy(definition.parameters)
    first = provider.request_body("", [definition], user())
    kept = copy.deepcopy(first)
    _scribble(first)
    assert provider.request_body("", [definition], user()) == kept
    assert definition.parameters == schema


@pytest.mark.parametrize("kind", PROVIDERS, ids=lambda k: k.__name__)
def test_a_rejected_tool_stays_rejected_until_it_is_changed(kind: type[HTTPProvider]) -> None:
    provider = _provider(kind)
    listing = Tool(name="listing", description="A list.", parameters={"type": "array"})
    for _ in range(2):
        with pytest.raises(DialectError, match="listing"):
            provider.request_body("", [listing], user())
    listing.parameters = {"type": "object", "properties": {}}
    assert entries(provider.request_body("", [listing], user()))


def test_a_tool_sent_is_not_kept_alive_by_what_was_made_from_it() -> None:
    definition = weather()
    for kind in PROVIDERS:
        _provider(kind).request_body("", [definition], user())
    gone = weakref.ref(definition)
    del definition
    gc.collect()
    assert gone() is None


def test_a_tool_deferred_for_a_native_search_is_described_once() -> None:
    pytest.importorskip("bm25s")

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    @tool
    def get_forecast(city: str, days: int) -> str:
        """The forecast for a city."""
        return "sunny"

    searching = SimpleToolset([get_weather, get_forecast]).searchable()
    provider, described = counting(Anthropic)
    for _ in range(3):
        tools, _native = offered(searching, provider)
        body = provider.request_body("", tools, user())
        assert all(e["defer_loading"] is True for e in entries(body))
    assert described == ["get_weather", "get_forecast"]


_FORMATS: dict[type[HTTPProvider], Callable[[Tool], dict[str, Any]]] = {
    OpenAIChat: to_openai_chat_tool,
    OpenAIResponses: to_openai_responses_tool,
    Anthropic: to_anthropic_tool,
    Gemini: to_gemini_function_declaration,
}

_PROPERTY = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "boolean", "number"])},
    optional={"description": st.text(max_size=20), "minimum": st.integers(0, 9)},
)


@settings(max_examples=60, deadline=None)
@given(
    properties=st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), _PROPERTY),
    descriptions=st.lists(st.text(max_size=30), min_size=1, max_size=4),
    kind=st.sampled_from(list(_FORMATS)),
)
def test_what_is_sent_is_the_tools_entry_as_it_is_now_after_any_changes(
    properties: dict[str, Any], descriptions: list[str], kind: type[HTTPProvider]
) -> None:
    provider = _provider(kind)
    definition = Tool(
        name="probe",
        description="",
        parameters={"type": "object", "properties": properties},
    )
    for text in descriptions:
        definition.description = text
        body = provider.request_body("", [definition], user())
        assert entries(body) == [_FORMATS[kind](definition)]
        _scribble(body)
