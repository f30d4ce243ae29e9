"""Tool definitions in each provider's format, and back to `Tool`.

| function | shape |
|---|---|
| `to_openai_chat_tool` | `{"type": "function", "function": {name, description, parameters}}` |
| `to_openai_responses_tool` | `{"type": "function", name, description, parameters, strict}` |
| `to_anthropic_tool` | `{name, description, input_schema, strict?}` |
| `to_gemini_function_declaration` | `{name, description, parametersJsonSchema}` |
| `to_mcp_tool` | `{name, title?, description, inputSchema, annotations?}` |

A `Tool` whose name starts with `$` declares a provider's builtin function (Moonshot's
`$web_search`): only the Kimi provider sends it (as a `builtin_function`), the dialect check
rejects it for every other provider, and `to_mcp_tool` refuses it.

Each `from_*` function reads that shape back into a `Tool` (a bare OpenAI `function` object
is accepted too). The conversions copy the schema; the `Tool` is not changed.

`strict` comes from the tool's metadata: an OpenAI Chat tool carries it only when the tool
declares it, while a Responses tool always states it, since the Responses API makes a function
strict when `strict` is left out; an Anthropic tool carries `strict: true` when the tool is
strict. MCP's `annotations` come from the tool's behaviour hints and
`title`. A tool's `provider_options` for a provider are merged into that provider's entry
(`to_openai_chat_tool(tool, provider="kimi")` for Moonshot's); each function is a pure
function of the tool.

Gemini takes a function's parameters two ways: `parametersJsonSchema`, JSON Schema as it is
(https://ai.google.dev/api/caching#FunctionDeclaration), which `to_gemini_function_declaration`
writes, as the published kosong does; and the older `parameters`, a subset of OpenAPI 3.0.
`to_gemini_schema` converts a JSON Schema to that subset where a caller still needs it (local
`$ref`s inlined, `["string", "null"]` to `nullable`, `const` to a one-value `enum`, keywords
the subset lacks left out). `kosong.dialects.check_tools(..., ["gemini"])` lists what Gemini
still refuses or does not read in a JSON Schema.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from kosong.tooling import FreeformTool, Tool
from kosong.utils.jsonschema import deref_json_schema

__all__ = [
    "GEMINI_SCHEMA_KEYS",
    "from_anthropic_tool",
    "from_gemini_function_declaration",
    "from_mcp_tool",
    "from_openai_chat_tool",
    "from_openai_responses_tool",
    "to_anthropic_tool",
    "to_gemini_function_declaration",
    "to_gemini_schema",
    "to_mcp_tool",
    "to_openai_chat_tool",
    "to_openai_responses_tool",
]

GEMINI_SCHEMA_KEYS = frozenset(
    {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
     "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
     "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
     "maximum"}
)  # fmt: skip
"""The fields of Gemini's `Schema` object (its API reference, `Schema`)."""

_HINTS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def _parameters(tool: Tool) -> dict[str, Any]:
    return copy.deepcopy(tool.parameters)


def _with_options(entry: dict[str, Any], tool: Tool, provider: str) -> dict[str, Any]:
    """`entry` with the tool's `provider_options[provider]` merged in (copies)."""
    options = (tool.provider_options or {}).get(provider)
    if options:
        entry.update(copy.deepcopy(options))
    return entry


def _custom_format(tool: FreeformTool) -> dict[str, Any]:
    grammar = tool.grammar
    if grammar is None:
        return {"type": "text"}
    return {"type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition}


def to_openai_chat_tool(tool: Tool, *, provider: str = "openai") -> dict[str, Any]:
    """The tool as a Chat Completions `tools` entry; `strict` only when the tool declares it.

    The tool's `provider_options[provider]` ("openai", or "kimi" for Moonshot) are merged into
    the `function` object. A `FreeformTool` is a custom tool for OpenAI (its text constrained
    by its grammar), a function of one string for another provider (Moonshot has no custom
    tools).
    """
    if isinstance(tool, FreeformTool) and provider == "openai":
        fmt = _custom_format(tool)
        if fmt["type"] == "grammar":
            fmt = {"type": "grammar", "grammar": {k: fmt[k] for k in ("definition", "syntax")}}
        custom = {"name": tool.name, "description": tool.description, "format": fmt}
        return {"type": "custom", "custom": _with_options(custom, tool, provider)}
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": _parameters(tool),
    }
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": _with_options(function, tool, provider)}


def to_openai_responses_tool(tool: Tool) -> dict[str, Any]:
    """The tool as a Responses API `tools` entry; `strict` always stated.

    The tool's `output_schema` goes as `output_schema` (the JSON value its text output holds),
    and its `provider_options["openai-responses"]` are merged in (`defer_loading`...). A
    `FreeformTool` is a custom tool (`{"type": "custom", name, description, format}`).
    """
    if isinstance(tool, FreeformTool):
        custom = {
            "type": "custom",
            "name": tool.name,
            "description": tool.description,
            "format": _custom_format(tool),
        }
        return _with_options(custom, tool, "openai-responses")
    entry: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": _parameters(tool),
        "strict": bool(tool.strict),
    }
    if tool.output_schema is not None:
        entry["output_schema"] = copy.deepcopy(tool.output_schema)
    return _with_options(entry, tool, "openai-responses")


def to_anthropic_tool(tool: Tool) -> dict[str, Any]:
    """The tool as an Anthropic Messages API `tools` entry; `strict: true` for a strict tool.

    The tool's `provider_options["anthropic"]` are merged in (`input_examples`,
    `defer_loading`, `cache_control`, `eager_input_streaming`, `allowed_callers`...).
    """
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": _parameters(tool),
    }
    if tool.strict:
        out["strict"] = True
    return _with_options(out, tool, "anthropic")


def to_gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema converted to Gemini's OpenAPI subset (see the module doc).

    Raises:
        ValueError: a local `$ref` points at nothing, or a recursive one cannot be inlined
            (Gemini's subset has no references).
    """
    flat = deref_json_schema(dict(schema))
    return _gemini(flat)


def _gemini(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node = cast(dict[str, Any], node)
    if "$ref" in node:
        raise ValueError(
            f"the recursive reference {node['$ref']!r} cannot be expressed for Gemini, "
            "whose schemas have no references"
        )
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            types = [t for t in cast(list[Any], value) if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
            else:
                out["anyOf"] = [{"type": t} for t in types]
            if len(types) < len(cast(list[Any], value)):
                out["nullable"] = True
        elif key == "const":
            out.setdefault("enum", [value])
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: _gemini(v) for k, v in cast(dict[str, Any], value).items()}
        elif key == "items":
            out[key] = _gemini(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_gemini(v) for v in cast(list[Any], value)]
        elif key in GEMINI_SCHEMA_KEYS:
            out[key] = copy.deepcopy(value)
    return out


def to_gemini_function_declaration(tool: Tool) -> dict[str, Any]:
    """The tool as a Gemini `functionDeclarations` entry, its JSON Schema in `parametersJsonSchema`.

    Its `provider_options["gemini"]` are merged in (`behavior`, `responseJsonSchema`...). See
    the module doc.
    """
    entry: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parametersJsonSchema": _parameters(tool),
    }
    return _with_options(entry, tool, "gemini")


def to_mcp_tool(tool: Tool) -> dict[str, Any]:
    """The tool as an MCP tool definition (`tools/list`), with hints as `annotations`.

    Raises:
        ValueError: the tool is a provider's builtin function (a `$` name), which no MCP
            client could call.
    """
    if tool.name.startswith("$"):
        raise ValueError(
            f"{tool.name} is a provider's builtin function (a name starting with '$'): the "
            "provider runs it, so it cannot be served over MCP"
        )
    out: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        out["title"] = tool.title
    out["description"] = tool.description
    out["inputSchema"] = _parameters(tool)
    annotations: dict[str, Any] = {}
    if tool.title is not None:
        annotations["title"] = tool.title
    for attribute, key in _HINTS.items():
        value = getattr(tool, attribute)
        if value is not None:
            annotations[key] = value
    if annotations:
        out["annotations"] = annotations
    return out


def _require(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ValueError(f"{where} has no `{key}`; got keys {sorted(data)}")
    return data[key]


def _tool(name: Any, description: Any, parameters: Any, **metadata: Any) -> Tool:
    params: Any = parameters if parameters is not None else {"type": "object", "properties": {}}
    return Tool(
        name=name,
        description=description or "",
        parameters=copy.deepcopy(params),
        **{k: v for k, v in metadata.items() if v is not None},
    )


def from_openai_chat_tool(data: Mapping[str, Any]) -> Tool:
    """A `Tool` from a Chat Completions tool (or its bare `function` object).

    Raises:
        ValueError: a required key is missing.
        pydantic.ValidationError: the definition is not a valid `Tool`.
    """
    function = data.get("function", data) if data.get("type", "function") == "function" else None
    if not isinstance(function, Mapping):
        raise ValueError(f"not an OpenAI function tool: {dict(data)!r}")
    return _from_openai(cast(Mapping[str, Any], function), "an OpenAI tool")


def from_openai_responses_tool(data: Mapping[str, Any]) -> Tool:
    """A `Tool` from a Responses API function tool.

    Raises:
        ValueError: a required key is missing.
        pydantic.ValidationError: the definition is not a valid `Tool`.
    """
    return _from_openai(data, "a Responses tool")


def _from_openai(function: Mapping[str, Any], where: str) -> Tool:
    return _tool(
        _require(function, "name", where),
        function.get("description"),
        function.get("parameters"),
        strict=function.get("strict"),
    )


def from_anthropic_tool(data: Mapping[str, Any]) -> Tool:
    """A `Tool` from an Anthropic tool definition.

    Raises:
        ValueError: a required key is missing.
        pydantic.ValidationError: the definition is not a valid `Tool`.
    """
    return _tool(
        _require(data, "name", "an Anthropic tool"),
        data.get("description"),
        _require(data, "input_schema", "an Anthropic tool"),
    )


def from_gemini_function_declaration(data: Mapping[str, Any]) -> Tool:
    """A `Tool` from a Gemini function declaration (`parameters` or `parametersJsonSchema`).

    Gemini's `nullable: true` becomes a `"null"` type, and upper-case type names (`"OBJECT"`,
    as Google's SDKs write them) become JSON Schema's lower-case ones.

    Raises:
        ValueError: a required key is missing.
        pydantic.ValidationError: the definition is not a valid `Tool`.
    """
    schema = data.get("parametersJsonSchema", data.get("parameters_json_schema"))
    if schema is None and data.get("parameters") is not None:
        schema = _from_gemini(data["parameters"])
    return _tool(_require(data, "name", "a Gemini declaration"), data.get("description"), schema)


def _from_gemini(node: Any) -> Any:
    if isinstance(node, list):
        return [_from_gemini(v) for v in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    node = cast(dict[str, Any], node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "nullable":
            continue
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: _from_gemini(v) for k, v in cast(dict[str, Any], value).items()}
        elif key in ("items", "anyOf"):
            out[key] = _from_gemini(value)
        else:
            out[key] = copy.deepcopy(value)
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def from_mcp_tool(data: Mapping[str, Any]) -> Tool:
    """A `Tool` from an MCP tool definition; `annotations` become the behaviour hints.

    Raises:
        ValueError: a required key is missing.
        pydantic.ValidationError: the definition is not a valid `Tool`.
    """
    annotations = cast(Mapping[str, Any], data.get("annotations") or {})
    hints = {attribute: annotations.get(key) for attribute, key in _HINTS.items()}
    return _tool(
        _require(data, "name", "an MCP tool"),
        data.get("description"),
        _require(data, "inputSchema", "an MCP tool"),
        title=data.get("title", annotations.get("title")),
        **hints,
    )
