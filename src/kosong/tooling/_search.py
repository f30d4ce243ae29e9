"""`searchable`: a large catalog behind a `search_tools` tool (needs the `search` extra).

The model first sees only `search_tools` and the always-visible tools; each search adds the
tools it found to `tools`, so the next request of the loop carries their definitions. Ranking
is BM25 over each tool's name and description, by the `bm25s` package (numpy only, no
network), with English stemming by `PyStemmer`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Protocol, cast

from pydantic import Field

from kosong._extras import install_hint
from kosong.message import ToolCall
from kosong.tooling._function import FunctionTool
from kosong.tooling._result import ToolResult, Toolset
from kosong.tooling._tool import Tool
from kosong.tooling._wrapper import Derived, WrapperToolset, find_in, forward, version_of
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType

__all__ = ["SEARCH_TOOL_NAME", "SearchableToolset", "searchable"]

SEARCH_TOOL_NAME = "search_tools"
"""The name of the search tool the model sees."""

_SEARCH_DESCRIPTION = (
    "Search the catalog of tools by what you want to do. The tools found are added to the "
    "tools you can call, from your next step on. Call it before saying that no tool can help."
)


class SearchableToolset(WrapperToolset):
    """A toolset that shows the model a search tool and the tools it found (see `searchable`).

    What was found is state of this object: use one per conversation, or `reset()` it.
    """

    def __init__(
        self,
        toolset: Toolset,
        always_visible: Iterable[str] = (),
        *,
        max_results: int = 5,
        native_search: bool = True,
    ) -> None:
        """Wrap `toolset` (see `searchable`).

        Raises:
            ImportError: the `search` extra is not installed.
            ValueError: `toolset` has a tool named `search_tools`, `always_visible` names a
                tool it does not have, or `max_results` is below 1.
        """
        if max_results < 1:
            raise ValueError(f"max_results must be at least 1, got {max_results}")
        self._bm25 = _load_bm25()
        super().__init__(toolset)
        # One name is a collection of one, not of its letters.
        self._always = frozenset(
            [always_visible] if isinstance(always_visible, str) else always_visible
        )
        self._found: dict[str, None] = {}  # insertion-ordered set
        self._found_version = object()  # a new one whenever `_found` changes
        self._max_results = max_results
        self._native_search = native_search
        self._index = Derived(self._make_index)
        self._shown = Derived(self._list_shown)
        self._deferred: dict[str, Derived[list[Tool]]] = {}  # by provider
        names = {t.name for t in toolset.tools}
        if SEARCH_TOOL_NAME in names:
            raise ValueError(
                f"the toolset already has a tool named `{SEARCH_TOOL_NAME}`; "
                "rename it before making the toolset searchable"
            )
        unknown = sorted(self._always - names)
        if unknown:
            raise ValueError(
                f"always_visible names {', '.join(f'`{n}`' for n in unknown)}, "
                "which the toolset does not have"
            )

        async def search_tools(
            query: Annotated[
                str, Field(min_length=1, description="What you want to do, in a few words.")
            ],
        ) -> str:
            return self._show(query)

        search = FunctionTool.from_function(
            coroutine=search_tools, name=SEARCH_TOOL_NAME, description=_SEARCH_DESCRIPTION
        )
        # The search tool's calls are parsed and validated like any tool's, by a toolset.
        self._search = SimpleToolset([search])

    @property
    def tools(self) -> list[Tool]:
        """`search_tools`, then the always-visible tools and those found, in catalog order."""
        return list(self._shown.get(self.tools_version))

    @property
    def tools_version(self) -> object:
        """New whenever the catalog changes or a tool is found; None if the catalog can't tell."""
        version = version_of(self.wrapped)
        return None if version is None else (version, self._found_version)

    @property
    def native_search(self) -> bool:
        """Whether a provider with a tool search of its own searches instead (see `searchable`)."""
        return self._native_search

    @property
    def always_visible(self) -> frozenset[str]:
        """The tools shown without a search."""
        return self._always

    @property
    def catalog(self) -> list[Tool]:
        """Every tool of the wrapped toolset, in its order (what a native search searches)."""
        return self.wrapped.tools

    def deferred(self, provider: str) -> list[Tool]:
        """The catalog as sent to `provider`'s own tool search (see `searchable`).

        Each tool has `defer_loading` in its `provider_options[provider]`, but the always-visible
        ones; the same objects while the catalog is unchanged (its `tools_version`), so what a
        provider makes of each tool is made once.
        """
        made = self._deferred.get(provider)
        if made is None:
            made = self._deferred[provider] = Derived(lambda: self._defer_catalog(provider))
        return list(made.get(version_of(self.wrapped)))

    @property
    def found(self) -> tuple[str, ...]:
        """The names of the tools found so far, in the order they were found."""
        return tuple(self._found)

    def reset(self) -> None:
        """Forget what was found: the model sees `search_tools` and the always-visible tools."""
        self._found.clear()
        self._found_version = object()

    def search(self, query: str) -> list[Tool]:
        """The catalog's tools that best match `query`, best first (at most `max_results`).

        Always-visible tools are not searched: the model sees them already. Nothing is added
        to `tools` (a call of `search_tools` does that).
        """
        version = version_of(self.wrapped)
        if version is None:  # a catalog that cannot tell: its names and descriptions do
            version = tuple((t.name, t.description) for t in self.wrapped.tools)
        return self._index.get(version).rank(query, self._max_results)

    def find_tool(self, name: str) -> Tool | None:
        """`search_tools`, or a tool of the catalog, found or not yet.

        A tool not found yet can be called all the same by its exact name, and is shown from
        then on (the model knew it, say from an earlier conversation). A name the catalog does
        not have is not found.
        """
        if name == SEARCH_TOOL_NAME:
            return self._search.find_tool(name)
        return find_in(self.wrapped, name)

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Search for `search_tools`; hand any other call to the wrapped toolset."""
        if tool.name == SEARCH_TOOL_NAME:
            return await self._search.run_call(call, tool, arguments)
        if tool.name not in self._always:
            self._add_found([tool])
        return await forward(self.wrapped, call, tool, arguments)

    def _add_found(self, tools: list[Tool]) -> None:
        new = [t.name for t in tools if t.name not in self._found]
        if new:
            self._found.update(dict.fromkeys(new))
            self._found_version = object()

    def _list_shown(self) -> list[Tool]:
        always, found = self._always, self._found
        shown = [t for t in self.wrapped.tools if t.name in always or t.name in found]
        return [*self._search.tools, *shown]

    def _defer_catalog(self, provider: str) -> list[Tool]:
        always = self._always
        return [t if t.name in always else _deferred(t, provider) for t in self.wrapped.tools]

    def _make_index(self) -> _Index:
        hidden = [t for t in self.wrapped.tools if t.name not in self._always]
        return _Index(hidden, self._bm25)

    def _show(self, query: str) -> str:
        tools = self.search(query)
        if not tools:
            return (
                f"No tool matches {query!r}. Try other words: what the tool would do, or "
                "the kind of thing it acts on."
            )
        self._add_found(tools)
        lines = [f"- {t.name}: {_first_line(t.description)}" for t in tools]
        return f"Found {len(tools)} tool(s); you can call them from now on:\n" + "\n".join(lines)


def searchable(
    toolset: Toolset,
    always_visible: Iterable[str] = (),
    *,
    max_results: int = 5,
    native_search: bool = True,
) -> SearchableToolset:
    """`toolset` behind a search tool: the model sees `search_tools` and `always_visible`.

    `search_tools` takes one argument, `query`, ranks the other tools by name and description
    (BM25) and adds the best `max_results` with any match to `tools`; the answer lists them.
    `agent_loop` (and `step`) read `tools` at every step, so the definitions found are sent
    from the next step on. Calls to any other tool go to `toolset`.

    With `native_search` (the default), `step` uses the provider's own tool search where it
    has one (Anthropic, OpenAI Responses): every tool is sent with `defer_loading` (the
    always-visible ones without), the provider's search tool beside them, so the tool list
    is the same at every step and the provider's prompt cache holds; the provider loads what
    its search finds. Other providers get kosong's `search_tools`.

    Raises:
        ImportError: the `search` extra is not installed (the `search` extra).
        ValueError: see `SearchableToolset`.
    """
    return SearchableToolset(
        toolset, always_visible, max_results=max_results, native_search=native_search
    )


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""A word of a name or a text: `getHTTPResponse_v2` is get, HTTP, Response, v, 2."""


class _Retriever(Protocol):
    vocab_dict: dict[str, int]

    def index(self, corpus: list[list[str]], *, show_progress: bool) -> None: ...

    def get_scores(self, query_tokens_single: list[str]) -> Any: ...


class _Stemmer(Protocol):
    def stemWords(self, words: Sequence[str]) -> list[str]: ...


class _BM25:
    """What kosong uses of `bm25s` and `PyStemmer`, which ship no type information."""

    def __init__(self, bm25s: Any, stemmer: Any, numpy: Any) -> None:
        self.numpy = numpy  # scores are numpy arrays: the best are picked without a full sort
        self.make_retriever = cast("type[_Retriever]", bm25s.BM25)
        self.stemmer = cast(_Stemmer, stemmer.Stemmer("english"))
        self.stopwords = frozenset(cast("list[str]", bm25s.stopwords.STOPWORDS_EN))

    def words(self, text: str) -> list[str]:
        found = [w.lower() for w in _WORD.findall(text)]
        return self.stemmer.stemWords([w for w in found if w not in self.stopwords])


def _load_bm25() -> _BM25:
    try:
        bm25s = importlib.import_module("bm25s")
        importlib.import_module("bm25s.stopwords")
        stemmer = importlib.import_module("Stemmer")
        numpy = importlib.import_module("numpy")  # bm25s's own dependency
    except ImportError as e:
        raise ImportError(
            f"tool search needs the `search` extra: {install_hint('search')} ({e})"
        ) from e
    return _BM25(bm25s, stemmer, numpy)


class _Index:
    """The BM25 index of a catalog's searchable tools."""

    def __init__(self, tools: list[Tool], bm25: _BM25) -> None:
        self.tools = tools
        self.bm25 = bm25
        self.retriever: _Retriever | None = None
        if tools:
            self.retriever = bm25.make_retriever()
            # The name's words count twice: a name is the tool's most specific description.
            corpus = [bm25.words(f"{t.name} {t.name} {t.description}") or [""] for t in tools]
            self.retriever.index(corpus, show_progress=False)

    def rank(self, query: str, limit: int) -> list[Tool]:
        if self.retriever is None:
            return []
        vocabulary = self.retriever.vocab_dict
        words = [w for w in self.bm25.words(query) if w in vocabulary]
        if not words:
            return []
        np = self.bm25.numpy
        scores = self.retriever.get_scores(words)
        hits = np.flatnonzero(scores > 0)  # in catalog order
        if len(hits) > limit:  # keep those at or above the limit-th best score, unsorted
            cut = len(hits) - limit
            hits = hits[scores[hits] >= np.partition(scores[hits], cut)[cut]]
        # A stable sort: equal scores keep the catalog's order.
        best = hits[np.argsort(-scores[hits], kind="stable")][:limit]
        return [self.tools[i] for i in best.tolist()]


def _deferred(tool: Tool, provider: str) -> Tool:
    options = dict(tool.provider_options or {})
    options[provider] = {**options.get(provider, {}), "defer_loading": True}
    return tool.model_copy(update={"provider_options": options})


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]
