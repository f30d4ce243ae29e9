"""Native tools: tools the provider runs itself (web search, code execution, MCP servers...).

Declare them provider-neutrally and give them as `native_tools=[...]` to `generate`, `step`
or `agent_loop`; each provider sends them in its API's current form (`native_entries`), or
refuses before sending, naming the provider and the tool, when its API has no such tool.
`NativeTool(provider, spec)` sends anything else verbatim, to that provider only.

| declaration | Anthropic | OpenAI Responses | Gemini | Kimi |
|---|---|---|---|---|
| `WebSearch` | `web_search_20260318` | `web_search` | `googleSearch` | `$web_search` |
| `WebFetch` | `web_fetch_20260318` | - | - | - |
| `CodeExecution` | `code_execution_20260521` | `code_interpreter` | `codeExecution` | - |
| `FileSearch` | - | `file_search` | `fileSearch` | - |
| `UrlContext` | - | - | `urlContext` | - |
| `MCPConnector` | `mcp_servers` + `mcp_toolset` (beta) | `mcp` | `mcpServers` | - |

Anthropic's MCP connector is a beta: the request carries `anthropic-beta: mcp-client-2025-11-20`.

Chat Completions (`OpenAIChat`) has none of them: use `OpenAIResponses`. The blocks the model's
answer holds for them (calls, results, citations) arrive as `kosong.message.NativeToolPart`s.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from kosong.utils.typing import JsonType

__all__ = [
    "CodeExecution",
    "FileSearch",
    "MCPConnector",
    "NativeEntries",
    "NativeTool",
    "NativeToolSpec",
    "UrlContext",
    "WebFetch",
    "WebSearch",
    "native_entries",
]


@dataclass(frozen=True, slots=True)
class WebSearch:
    """The provider searches the web; its results come back with citations."""

    max_uses: int | None = None
    """At most this many searches in one answer (Anthropic)."""
    allowed_domains: Sequence[str] | None = None
    """Search only these domains (Anthropic, OpenAI)."""
    blocked_domains: Sequence[str] | None = None
    """Never these domains (Anthropic, Gemini)."""
    user_location: Mapping[str, JsonType] | None = None
    """Where the user is, to localise results (`{"type": "approximate", "city": ...}`)."""


@dataclass(frozen=True, slots=True)
class WebFetch:
    """The provider fetches the pages the model asks for (Anthropic)."""

    max_uses: int | None = None
    """At most this many fetches in one answer."""
    allowed_domains: Sequence[str] | None = None
    """Fetch only from these domains."""
    blocked_domains: Sequence[str] | None = None
    """Never from these domains."""


@dataclass(frozen=True, slots=True)
class CodeExecution:
    """The provider runs code the model writes, in its own sandbox."""


@dataclass(frozen=True, slots=True)
class FileSearch:
    """The provider searches files stored with it (OpenAI vector stores, Gemini stores)."""

    store_ids: Sequence[str]
    """The stores: OpenAI `vector_store_ids`, Gemini `fileSearchStoreNames`."""
    max_results: int | None = None
    """At most this many results."""


@dataclass(frozen=True, slots=True)
class UrlContext:
    """The provider reads the URLs the prompt holds (Gemini)."""


@dataclass(frozen=True, slots=True)
class MCPConnector:
    """A remote MCP server the provider itself connects to and calls."""

    url: str
    """The server's URL (streamable HTTP)."""
    name: str
    """A name for it, unique in the request (the provider's label of its tools)."""
    headers: Mapping[str, str] | None = None
    """Headers sent to the server (OpenAI, Gemini)."""
    authorization: str | None = None
    """An OAuth access token for the server (sent as the provider's authorization field, or as
    `Authorization: Bearer ...` for Gemini)."""
    allowed_tools: Sequence[str] | None = None
    """Only these of its tools (Anthropic, OpenAI)."""


@dataclass(frozen=True, slots=True)
class NativeTool:
    """Any provider tool, sent verbatim to that provider and refused by the others."""

    provider: str
    """The provider's `name` ("anthropic", "openai-responses", "gemini", "kimi", "openai")."""
    spec: Mapping[str, JsonType]
    """The tool's entry exactly as the API takes it (a Gemini `Tool` object for Gemini)."""


NativeToolSpec: TypeAlias = (
    WebSearch | WebFetch | CodeExecution | FileSearch | UrlContext | MCPConnector | NativeTool
)
"""A native tool declaration."""


@dataclass(slots=True)
class NativeEntries:
    """What native tools add to one provider's request."""

    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Entries for the request's tool list (a Gemini `Tool` object each)."""
    mcp_servers: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Anthropic's top-level `mcp_servers`."""
    betas: list[str] = field(default_factory=list[str])
    """Anthropic beta features the request needs (the `anthropic-beta` header)."""


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in fields.items() if v is not None}


def _refuse(provider: str, tool: NativeToolSpec, why: str) -> ValueError:
    return ValueError(f"{provider} cannot send the native tool {type(tool).__name__}: {why}")


def _anthropic(tool: NativeToolSpec, out: NativeEntries) -> None:
    if isinstance(tool, WebSearch):
        out.tools.append(
            {"type": "web_search_20260318", "name": "web_search", **_drop_none(
                max_uses=tool.max_uses, allowed_domains=_list(tool.allowed_domains),
                blocked_domains=_list(tool.blocked_domains),
                user_location=dict(tool.user_location) if tool.user_location else None)}
        )  # fmt: skip
    elif isinstance(tool, WebFetch):
        out.tools.append(
            {"type": "web_fetch_20260318", "name": "web_fetch", **_drop_none(
                max_uses=tool.max_uses, allowed_domains=_list(tool.allowed_domains),
                blocked_domains=_list(tool.blocked_domains))}
        )  # fmt: skip
    elif isinstance(tool, CodeExecution):
        out.tools.append({"type": "code_execution_20260521", "name": "code_execution"})
    elif isinstance(tool, MCPConnector):
        if tool.headers:
            raise _refuse("Anthropic", tool, "its MCP connector sends no headers, only an "
                          "authorization token (authorization=...)")  # fmt: skip
        out.mcp_servers.append(
            {"type": "url", "url": tool.url, "name": tool.name,
             **_drop_none(authorization_token=tool.authorization)}
        )  # fmt: skip
        toolset: dict[str, Any] = {"type": "mcp_toolset", "mcp_server_name": tool.name}
        if tool.allowed_tools is not None:
            toolset["default_config"] = {"enabled": False}
            toolset["configs"] = {name: {"enabled": True} for name in tool.allowed_tools}
        out.tools.append(toolset)
        if "mcp-client-2025-11-20" not in out.betas:
            out.betas.append("mcp-client-2025-11-20")
    else:
        raise _refuse("Anthropic", tool, "use WebSearch, WebFetch, CodeExecution, MCPConnector "
                      "or NativeTool(\"anthropic\", {...})")  # fmt: skip


def _responses(tool: NativeToolSpec, out: NativeEntries) -> None:
    if isinstance(tool, WebSearch):
        if tool.blocked_domains or tool.max_uses is not None:
            raise _refuse("OpenAIResponses", tool, "its web_search takes allowed_domains and "
                          "user_location only")  # fmt: skip
        entry: dict[str, Any] = {"type": "web_search"}
        if tool.allowed_domains:
            entry["filters"] = {"allowed_domains": list(tool.allowed_domains)}
        if tool.user_location is not None:
            entry["user_location"] = copy.deepcopy(dict(tool.user_location))
        out.tools.append(entry)
    elif isinstance(tool, CodeExecution):
        out.tools.append({"type": "code_interpreter", "container": {"type": "auto"}})
    elif isinstance(tool, FileSearch):
        out.tools.append(
            {"type": "file_search", "vector_store_ids": list(tool.store_ids),
             **_drop_none(max_num_results=tool.max_results)}
        )  # fmt: skip
    elif isinstance(tool, MCPConnector):
        out.tools.append(
            {"type": "mcp", "server_label": tool.name, "server_url": tool.url,
             "require_approval": "never", **_drop_none(
                headers=dict(tool.headers) if tool.headers else None,
                authorization=tool.authorization, allowed_tools=_list(tool.allowed_tools))}
        )  # fmt: skip
    else:
        raise _refuse("OpenAIResponses", tool, "use WebSearch, CodeExecution, FileSearch, "
                      "MCPConnector or NativeTool(\"openai-responses\", {...})")  # fmt: skip


def _gemini(tool: NativeToolSpec, out: NativeEntries) -> None:
    if isinstance(tool, WebSearch):
        if tool.allowed_domains or tool.max_uses is not None or tool.user_location is not None:
            raise _refuse("Gemini", tool, "its googleSearch takes blocked_domains only")
        search = _drop_none(excludeDomains=_list(tool.blocked_domains))
        out.tools.append({"googleSearch": search})
    elif isinstance(tool, CodeExecution):
        out.tools.append({"codeExecution": {}})
    elif isinstance(tool, FileSearch):
        out.tools.append(
            {"fileSearch": {"fileSearchStoreNames": list(tool.store_ids),
                            **_drop_none(topK=tool.max_results)}}
        )  # fmt: skip
    elif isinstance(tool, UrlContext):
        out.tools.append({"urlContext": {}})
    elif isinstance(tool, MCPConnector):
        if tool.allowed_tools is not None:
            raise _refuse("Gemini", tool, "its mcpServers take no allowed tools")
        headers = dict(tool.headers or {})
        if tool.authorization:
            headers["Authorization"] = f"Bearer {tool.authorization}"
        transport = {"url": tool.url, **_drop_none(headers=headers or None)}
        out.tools.append(
            {"mcpServers": [{"name": tool.name, "streamableHttpTransport": transport}]}
        )
    else:
        raise _refuse("Gemini", tool, "use WebSearch, CodeExecution, FileSearch, UrlContext, "
                      "MCPConnector or NativeTool(\"gemini\", {...})")  # fmt: skip


def _kimi(tool: NativeToolSpec, out: NativeEntries) -> None:
    if isinstance(tool, WebSearch) and tool == WebSearch():
        out.tools.append({"type": "builtin_function", "function": {"name": "$web_search"}})
    else:
        raise _refuse("Kimi", tool, "Moonshot's builtin $web_search (WebSearch(), no options) "
                      "is the one native tool it has")  # fmt: skip


def _openai_chat(tool: NativeToolSpec, out: NativeEntries) -> None:
    raise _refuse("OpenAIChat", tool, "Chat Completions has no native tools; use "
                  "OpenAIResponses")  # fmt: skip


_RENDER = {
    "anthropic": _anthropic,
    "openai-responses": _responses,
    "gemini": _gemini,
    "kimi": _kimi,
    "openai": _openai_chat,
}


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def native_entries(provider: str, tools: Sequence[NativeToolSpec]) -> NativeEntries:
    """What `tools` add to a request of `provider` (its `name`), in its API's current form.

    Raises:
        ValueError: the provider has no such tool (or not with these options), or a
            `NativeTool` is another provider's; the message names both.
    """
    out = NativeEntries()
    for tool in tools:
        if isinstance(tool, NativeTool):
            if tool.provider != provider:
                raise ValueError(
                    f"NativeTool for {tool.provider!r} cannot be sent to {provider!r}: a "
                    "NativeTool goes verbatim to its own provider only"
                )
            out.tools.append(copy.deepcopy(dict(tool.spec)))
            continue
        render = _RENDER.get(provider)
        if render is None:
            raise ValueError(f"{provider!r} has no native tools (got {type(tool).__name__})")
        render(tool, out)
    return out
