"""searchable: a search tool in front of a catalog, the tools found shown from then on."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong import agent_loop
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message
from kosong.testing import make_call
from kosong.tooling import SEARCH_TOOL_NAME, SearchableToolset, Tool, searchable, tool
from kosong.tooling.error import ToolNotFoundError, ToolParseError, ToolValidateError
from kosong.tooling.simple import SimpleToolset


@tool
def get_weather(city: str) -> str:
    """The current weather of a city."""
    return f"{city}: sunny"


@tool
def create_issue(repository: str, title: str) -> str:
    """Create an issue in a GitHub repository."""
    return f"{repository}#1 {title}"


@tool
def list_files(path: str) -> str:
    """List the files of a directory."""
    return "a.txt"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email message to someone."""
    return "sent"


def catalog() -> SimpleToolset:
    return SimpleToolset([get_weather, create_issue, list_files, send_email])


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


async def search(toolset: SearchableToolset, arguments: object) -> str:
    result = await toolset.handle(make_call(SEARCH_TOOL_NAME, arguments))  # pyright: ignore[reportArgumentType]
    value = result.return_value
    return value.message if value.is_error else str(value.output)


async def test_the_model_first_sees_the_search_tool_and_the_always_visible_ones() -> None:
    toolset = searchable(catalog(), always_visible=["list_files"])
    assert names(toolset.tools) == ["search_tools", "list_files"]
    assert toolset.tools[0].parameters == {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What you want to do, in a few words.",
            }
        },
        "required": ["query"],
    }


def test_always_visible_takes_one_name_as_well() -> None:
    assert names(searchable(catalog(), always_visible="list_files").tools) == [
        "search_tools",
        "list_files",
    ]


async def test_a_search_adds_the_tools_found_to_the_next_requests_tools() -> None:
    toolset = searchable(catalog(), always_visible=["list_files"])
    text = await search(toolset, {"query": "open a new issue on github"})
    assert text == (
        "Found 1 tool(s); you can call them from now on:\n"
        "- create_issue: Create an issue in a GitHub repository."
    )
    assert names(toolset.tools) == ["search_tools", "create_issue", "list_files"]  # catalog order
    await search(toolset, {"query": "weather"})
    assert toolset.found == ("create_issue", "get_weather")
    assert names(toolset.tools) == ["search_tools", "get_weather", "create_issue", "list_files"]
    result = await toolset.handle(make_call("create_issue", {"repository": "r", "title": "t"}))
    assert result.return_value.output == "r#1 t"


async def test_always_visible_tools_are_not_among_the_results() -> None:
    toolset = searchable(catalog(), always_visible=["list_files"])
    assert toolset.search("list the files") == []
    assert names(searchable(catalog()).search("list the files")) == ["list_files"]


async def test_a_search_with_no_match_says_so_and_adds_nothing() -> None:
    toolset = searchable(catalog())
    text = await search(toolset, {"query": "quantum teleportation"})
    assert text.startswith("No tool matches 'quantum teleportation'.")
    assert names(toolset.tools) == ["search_tools"]


async def test_max_results_caps_what_one_search_adds() -> None:
    many = SimpleToolset(
        [get_weather, *(tool(name=f"weather_{i}")(get_weather.func) for i in range(8))]  # pyright: ignore[reportArgumentType]
    )
    toolset = searchable(many, max_results=3)
    await search(toolset, {"query": "weather"})
    assert len(toolset.found) == 3


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, ToolValidateError),
        ({"query": ""}, ToolValidateError),
        ({"query": 42}, ToolValidateError),
        ('{"query": ', ToolParseError),
    ],
)
async def test_a_bad_search_call_is_an_error_the_model_reads(
    arguments: object, error: type[Exception]
) -> None:
    toolset = searchable(catalog())
    result = await toolset.handle(make_call(SEARCH_TOOL_NAME, arguments))  # pyright: ignore[reportArgumentType]
    assert isinstance(result.return_value, error)
    assert "query" in result.return_value.message or error is ToolParseError
    assert toolset.found == ()


async def test_a_hidden_tool_called_by_its_exact_name_runs_and_is_shown_from_then_on() -> None:
    toolset = searchable(catalog())
    result = await toolset.handle(make_call("send_email", {"to": "a@b.c", "body": "hi"}))
    assert result.return_value.output == "sent"
    assert names(toolset.tools) == ["search_tools", "send_email"]


async def test_a_name_the_catalog_does_not_have_is_not_found() -> None:
    toolset = searchable(catalog())
    result = await toolset.handle(make_call("delete_everything", {}))
    assert isinstance(result.return_value, ToolNotFoundError)
    assert toolset.found == ()


async def test_handle_never_raises_even_when_the_wrapped_toolset_does() -> None:
    class Broken:
        """A toolset of one's own whose handle() breaks the contract."""

        tools = [get_weather.base]

        def handle(self, tool_call: object) -> object:
            raise RuntimeError("broken toolset")

    toolset = searchable(Broken())  # pyright: ignore[reportArgumentType]
    result = await toolset.handle(make_call("get_weather", {"city": "Oslo"}))
    assert result.return_value.message == (
        "Error running tool: the call could not be handled: RuntimeError: broken toolset"
    )


async def test_the_index_follows_the_catalog_and_reset_forgets_what_was_found() -> None:
    inner = SimpleToolset([get_weather])
    toolset = searchable(inner)
    assert toolset.search("email") == []
    inner.add(send_email)
    assert names(toolset.search("email")) == ["send_email"]
    await search(toolset, {"query": "email"})
    assert toolset.found == ("send_email",)
    toolset.reset()
    assert names(toolset.tools) == ["search_tools"]


def test_construction_refuses_a_clash_an_unknown_visible_tool_and_no_results() -> None:
    @tool(name=SEARCH_TOOL_NAME)
    def own_search(query: str) -> str:
        """Our own search."""
        return query

    with pytest.raises(ValueError, match="already has a tool named `search_tools`"):
        searchable(SimpleToolset([own_search]))
    with pytest.raises(ValueError, match="always_visible names `nope`"):
        searchable(catalog(), always_visible=["list_files", "nope"])
    with pytest.raises(ValueError, match="max_results must be at least 1"):
        searchable(catalog(), max_results=0)


def test_without_the_search_extra_searchable_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # an import of it now fails
    with pytest.raises(
        ImportError, match=r"needs the `search` extra: pip install 'bm25s>=0.3' 'pystemmer>=2.2'"
    ):
        searchable(catalog())


async def test_with_agent_loop_the_tools_found_are_sent_from_the_next_step_on() -> None:
    model = ScriptedChatProvider(
        [
            [call(SEARCH_TOOL_NAME, {"query": "weather of a city"})],
            [call("get_weather", {"city": "Oslo"})],
            ["Oslo is sunny."],
        ]
    )
    toolset = searchable(catalog())
    result = await agent_loop(model, "", toolset, [Message(role="user", content="Oslo?")])
    assert result.answer == "Oslo is sunny."
    assert [names(r.tools) for r in model.requests] == [
        ["search_tools"],
        ["search_tools", "get_weather"],  # found by the first step's search
        ["search_tools", "get_weather"],
    ]


WORDS = [
    "apple", "bridge", "candle", "dragon", "engine", "forest", "guitar", "harbor", "island",
    "jacket", "kettle", "ladder", "magnet", "needle", "orange", "pencil", "quartz", "rocket",
    "saddle", "tunnel", "umbrella", "violin", "wallet", "yogurt", "zipper", "anchor", "basket",
    "cactus", "dolphin", "falcon", "glacier", "hammer", "igloo", "jungle", "koala", "lantern",
]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.permutations(WORDS), st.integers(min_value=2, max_value=18), st.data())
def test_a_query_made_of_a_tools_name_finds_that_tool_first(
    words: list[str], count: int, data: st.DataObject
) -> None:
    # Each tool's name is two words no other tool has; descriptions share common words.
    tools = [
        Tool(
            name=f"{words[2 * i]}_{words[2 * i + 1]}",
            description=f"Do the thing with the {words[(2 * i + 2) % len(words)]}.",
            parameters={"type": "object"},
        )
        for i in range(count)
    ]
    wanted = data.draw(st.sampled_from(tools))
    inner = SimpleToolset(
        [tool(name=t.name, description=t.description)(lambda: "ok") for t in tools]
    )
    toolset = searchable(inner, max_results=3)
    query = wanted.name.replace("_", " ")
    assert toolset.search(query)[0].name == wanted.name


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS[:8]), min_size=1, max_size=4), min_size=1, max_size=40),
    st.lists(st.sampled_from(WORDS[:10]), min_size=1, max_size=3),
    st.integers(min_value=1, max_value=6),
)
def test_the_best_are_picked_as_a_full_sort_would_in_catalog_order_among_equals(
    descriptions: list[list[str]], query: list[str], limit: int
) -> None:
    # Few distinct words: many tools score the same, so the order among equals is tested.
    inner = SimpleToolset(
        [
            tool(name=f"t{i}", description=" ".join(words))(lambda: "ok")
            for i, words in enumerate(descriptions)
        ]
    )
    toolset = searchable(inner, max_results=limit)
    found = names(toolset.search(" ".join(query)))
    index = toolset._index.get(inner.tools_version)
    assert index.retriever is not None
    words = [w for w in index.bm25.words(" ".join(query)) if w in index.retriever.vocab_dict]
    if not words:
        assert found == []
        return
    scores = index.retriever.get_scores(words).tolist()
    best = sorted(range(len(scores)), key=lambda i: -scores[i])[:limit]
    assert found == [index.tools[i].name for i in best if scores[i] > 0]


async def test_the_index_is_made_once_while_the_catalog_is_unchanged() -> None:
    inner = catalog()
    toolset = searchable(inner)
    toolset.search("weather")
    index = toolset._index.get(inner.tools_version)
    toolset.search("email")
    await search(toolset, {"query": "files"})
    assert toolset._index.get(inner.tools_version) is index
    inner.remove("send_email")
    assert toolset.search("email") == []
    assert toolset._index.get(inner.tools_version) is not index
