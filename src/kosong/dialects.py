"""The dialect check: what each provider will reject or silently ignore in a tool definition.

Every provider reads JSON Schema in its own dialect. A schema one accepts, another answers with
an HTTP 400 (often in the middle of a conversation), or takes but never enforces.
`check_tools(tools, dialects)` reports, for each tool and dialect, every such finding with its
JSON path, the rule, the source of the rule, and a fix where one is safe (the schema means the
same after it). `fix_tool(tool, dialect)` applies the safe fixes. Providers run the check
before sending a request, so a schema the service would reject fails at once with the report.

Dialects (`DIALECTS`):

- `"openai"`: Chat Completions / Responses, `strict` off. Rejected: a root that is not an
  object. Ignored: validation keywords (`pattern`, `minimum`...) are not enforced on what the
  model writes (the toolset still validates them).
- `"openai-strict"`: OpenAI's strict mode (Structured Outputs' supported subset): every
  object closed, every property required, no unsupported keyword. Fix:
  `kosong.standard.to_strict_schema` where it can convert the schema.
- `"anthropic"`: the Messages API's `input_schema`. Rejected: a root that is not an object, or
  `anyOf` / `oneOf` / `allOf` at the root. Ignored: validation keywords, as for OpenAI.
- `"anthropic-strict"`: a tool Anthropic gets with `strict: true` (structured outputs' JSON
  Schema limitations). Rejected: what `"anthropic"` rejects, numeric, string and array
  constraints (`minimum`, `maxLength`, `minItems` above 1...), string formats outside the
  supported ones (fix: moved into the description, as Anthropic's SDKs do), an object without
  `additionalProperties: false` (fix: closed), object or array enum values, a recursive
  schema.
- `"moonshot"` (alias `"kimi"`): Moonshot's "moonshot flavored JSON Schema". Rejected: a
  schema without `type` (fix: the type its `enum` / `const` values imply, integers and floats
  together being "number", or the keywords that apply to one type only: `properties`,
  `additionalProperties` → object, `items`, `minItems` → array, `format`, `pattern`,
  `minLength` → string, `minimum`, `maximum` → number); a
  `type` beside `anyOf` / `oneOf` (fix: move it into each branch); a `$ref` with sibling
  keywords (fix: inline the local reference); a root that is not an object; a tool name
  shorter than 3 characters.
- `"gemini"`: Gemini's `parametersJsonSchema` (JSON Schema). Rejected: a root that is not an
  object; enum values other than strings and numbers; a `$ref` with sibling keywords (fix:
  inline the local reference); a recursive reference in a required property. Ignored:
  keywords outside the ones Gemini reads (`pattern`, `minLength`, `const`, `not`...).
- `"mcp"`: MCP's `tools/list`. Rejected: an `inputSchema` that is not an object.

A tool whose name starts with `$` declares a Moonshot builtin function (`$web_search`): the
`"moonshot"` dialect takes it as it is, every other dialect rejects it (no other provider has
it, and no MCP client could call it).

The sources of the rules are in `SOURCES` and on the docs page `docs/dialects.md`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast, get_args

from kosong.standard import StrictSchemaError, check_strict_schema, to_strict_schema
from kosong.tooling import Tool
from kosong.utils.jsonschema import deref_json_schema

__all__ = [
    "DIALECTS",
    "SOURCES",
    "Dialect",
    "DialectError",
    "DialectReport",
    "Effect",
    "Finding",
    "check_tools",
    "fix_schema",
    "fix_tool",
]

Dialect: TypeAlias = Literal[
    "openai", "openai-strict", "anthropic", "anthropic-strict", "moonshot", "gemini", "mcp"
]
"""A provider's dialect of JSON Schema."""

Effect: TypeAlias = Literal["rejected", "ignored"]
"""What the provider does with the finding: refuse the request, or take it and not apply it."""

DIALECTS: tuple[Dialect, ...] = get_args(Dialect)
"""Every dialect, in the order reports list them."""

_ALIASES: dict[str, Dialect] = {"kimi": "moonshot"}

SOURCES: dict[Dialect, tuple[str, ...]] = {
    "openai": ("https://platform.openai.com/docs/guides/function-calling",),
    "openai-strict": (
        "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas",
    ),
    "anthropic": (
        "https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use",
    ),
    "anthropic-strict": (
        "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations",
    ),
    "moonshot": (
        "https://platform.kimi.ai/docs/api/tool-use",
        "https://github.com/MoonshotAI/kimi-cli/issues/2531",
        "https://github.com/MoonshotAI/kimi-cli/issues/2061",
        "https://github.com/earendil-works/pi/issues/5822",
        "https://github.com/router-for-me/CLIProxyAPI/issues/5316",
        "https://github.com/14790897/MiqroForge-Desktop/issues/1165",
    ),
    "gemini": (
        "https://ai.google.dev/api/caching#FunctionDeclaration",
        "https://ai.google.dev/api/generate-content#FIELDS.response_json_schema",
        "https://ai.google.dev/gemini-api/docs/function-calling",
    ),
    "mcp": ("https://modelcontextprotocol.io/specification/2025-06-18/server/tools",),
}
"""Where each dialect's rules come from: the provider's documents, and for Moonshot, whose
documents do not list its schema rules, the 400 answers its API gave (quoted in those issues)."""

_VALIDATION_KEYWORDS = (
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties",
)  # fmt: skip
_COMPOSITIONS = ("anyOf", "oneOf", "allOf")
_STRICT_MODES: frozenset[Dialect] = frozenset({"openai-strict", "anthropic-strict"})
"""The dialects of a strict mode: they apply to the tools sent strict only."""
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a provider will reject or ignore in one tool's definition."""

    tool: str
    """The tool's name."""
    dialect: Dialect
    """The provider dialect."""
    path: str
    """Where, as a JSON path into the definition (`parameters.properties.city`)."""
    rule: str
    """The rule, as a short id (`moonshot.type-required`)."""
    effect: Effect
    """"rejected": the request fails; "ignored": accepted but not applied."""
    message: str
    """What is wrong, in words."""
    fix: str | None = None
    """The safe fix (`fix_tool` applies it), or None when there is none."""

    def __str__(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.effect}: {self.path}: {self.message} [{self.rule}]{fix}"


@dataclass(frozen=True, slots=True)
class DialectReport:
    """The findings of `check_tools`, with a plain-text rendering (`str(report)`)."""

    tools: list[str]
    """The names of the tools checked."""
    dialects: list[Dialect]
    """The dialects checked."""
    findings: list[Finding] = field(default_factory=list[Finding])
    """Every finding, by tool, then dialect."""
    not_checked: set[tuple[str, Dialect]] = field(default_factory=set[tuple[str, Dialect]])
    """The (tool, dialect) pairs left out: strict mode for a tool that does not declare it."""

    @property
    def ok(self) -> bool:
        """True when no provider checked will reject any tool."""
        return not self.rejected

    @property
    def rejected(self) -> list[Finding]:
        """The findings that make a request fail."""
        return [f for f in self.findings if f.effect == "rejected"]

    @property
    def ignored(self) -> list[Finding]:
        """The findings a provider accepts but does not apply."""
        return [f for f in self.findings if f.effect == "ignored"]

    def for_dialect(self, dialect: str) -> list[Finding]:
        """The findings of one dialect."""
        name = _dialect(dialect)
        return [f for f in self.findings if f.dialect == name]

    def render(self, *, include_ignored: bool = True) -> str:
        """The report as text: one block per tool and dialect, then a summary line."""
        lines: list[str] = []
        for tool in self.tools:
            for dialect in self.dialects:
                if (tool, dialect) in self.not_checked:
                    lines.append(f"{tool} [{dialect}]: not checked (the tool is not strict)")
                    continue
                found = [
                    f
                    for f in self.findings
                    if f.tool == tool
                    and f.dialect == dialect
                    and (include_ignored or f.effect == "rejected")
                ]
                verdict = "rejected" if any(f.effect == "rejected" for f in found) else "ok"
                lines.append(f"{tool} [{dialect}]: {verdict}")
                lines.extend(f"  {f}" for f in found)
        rejected, ignored = len(self.rejected), len(self.ignored)
        lines.append(
            f"{len(self.tools)} tool(s), {len(self.dialects)} dialect(s): "
            f"{rejected} rejected, {ignored} ignored"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


class DialectError(ValueError):
    """A provider will reject a tool definition; `report` says where and why."""

    def __init__(self, provider: str, report: DialectReport) -> None:
        """Refuse to send the tools `report` rejects."""
        rejected = "\n".join(f"  {f.tool}: {f}" for f in report.rejected)
        super().__init__(
            f"{provider} would reject these tool definitions, so the request was not sent:\n"
            f"{rejected}\nFix the schemas (`kosong.dialects.fix_tool` applies the safe fixes)."
        )
        self.report = report
        """The full report."""


def _dialect(name: str) -> Dialect:
    lowered = name.lower()
    lowered = _ALIASES.get(lowered, lowered)
    if lowered not in DIALECTS:
        known = ", ".join(DIALECTS)
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known} (and 'kimi')")
    return lowered


def _as_tool(tool: Tool | Mapping[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """The tool's name, parameters schema, and whether it declares `strict`."""
    if isinstance(tool, Tool):
        return tool.name, tool.parameters, tool.strict is True
    data = cast(Mapping[str, Any], tool.get("function", tool))
    name, strict = str(data.get("name", "")), data.get("strict") is True
    for key in ("parameters", "inputSchema", "input_schema"):
        schema = data.get(key)
        if isinstance(schema, Mapping):
            return name, dict(cast(Mapping[str, Any], schema)), strict
    return name, {}, strict


def check_tools(
    tools: Iterable[Tool | Mapping[str, Any]],
    dialects: Iterable[str] | None = None,
    *,
    include_ignored: bool = True,
) -> DialectReport:
    """Check each tool against each dialect (all of `DIALECTS` by default).

    A tool may be a `Tool` or a definition dict in any provider format (with `parameters`,
    `input_schema` or `inputSchema`). `include_ignored=False` leaves out what providers only
    ignore. With the default dialects, the strict modes (`"openai-strict"`,
    `"anthropic-strict"`) are checked only for the tools that declare `strict` (a provider
    sends the others without it); name one in `dialects` to check every tool against it.

    Raises:
        ValueError: a dialect name is unknown.
    """
    chosen: list[Dialect] = [_dialect(d) for d in (DIALECTS if dialects is None else dialects)]
    names: list[str] = []
    findings: list[Finding] = []
    not_checked: set[tuple[str, Dialect]] = set()
    for tool in tools:
        name, schema, strict = _as_tool(tool)
        names.append(name)
        for dialect in chosen:
            if dialect in _STRICT_MODES and dialects is None and not strict:
                not_checked.add((name, dialect))
                continue
            check = _check_builtin if name.startswith("$") else _CHECKS[dialect]
            findings += check(name, schema, dialect, include_ignored)
    return DialectReport(names, chosen, findings, not_checked)


def fix_schema(schema: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    """A copy of `schema` with the dialect's safe fixes applied (see the module doc).

    What has no safe fix is left as it is; `check_tools` still reports it.
    """
    name = _dialect(dialect)
    fixed = copy.deepcopy(dict(schema))
    if name == "moonshot":
        return _fix_moonshot(fixed)
    if name == "gemini":
        return _fix_gemini(fixed)
    if name == "anthropic-strict":
        return _fix_anthropic_strict(fixed)
    if name == "openai-strict":
        try:
            return to_strict_schema(fixed)
        except StrictSchemaError:
            return fixed
    return fixed


def fix_tool(tool: Tool, dialect: str) -> Tool:
    """A copy of `tool` whose parameters have the dialect's safe fixes applied."""
    fixed = fix_schema(tool.parameters, dialect)
    if fixed == tool.parameters:
        return tool
    return tool.model_copy(update={"parameters": fixed})


# --- walking a schema ------------------------------------------------------------------------


def _walk(node: Any, path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object in `node`, with its JSON path, parents before children."""
    if not isinstance(node, dict):
        return
    node = cast(dict[str, Any], node)
    yield node, path
    for key in _SUBSCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in cast(dict[str, Any], children).items():
                yield from _walk(child, f"{path}.{key}.{name}")
    for key in _SUBSCHEMA_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for i, child in enumerate(cast(list[Any], children)):
                yield from _walk(child, f"{path}.{key}[{i}]")
    for key in _SUBSCHEMAS:
        yield from _walk(node.get(key), f"{path}.{key}")


def _root_object(name: str, schema: dict[str, Any], dialect: Dialect) -> list[Finding]:
    if schema.get("type") == "object":
        return []
    return [
        Finding(
            name, dialect, "parameters", f"{dialect}.root-object", "rejected",
            f"the parameters must be a JSON Schema of type \"object\", got type "
            f"{schema.get('type')!r}",
        )
    ]  # fmt: skip


def _ignored_keywords(name: str, schema: dict[str, Any], dialect: Dialect) -> list[Finding]:
    found: list[Finding] = []
    for node, path in _walk(schema, "parameters"):
        for key in _VALIDATION_KEYWORDS:
            if key in node:
                found.append(
                    Finding(
                        name, dialect, f"{path}.{key}", f"{dialect}.not-enforced", "ignored",
                        f"`{key}` guides the model but is not enforced on what it writes "
                        "(no strict mode); the toolset still validates it",
                    )
                )  # fmt: skip
    return found


def _check_openai(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    found = _root_object(name, schema, "openai")
    return found + _ignored_keywords(name, schema, "openai") if ignored else found


def _check_openai_strict(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    problems = check_strict_schema(schema)
    if not problems:
        return []
    try:
        to_strict_schema(schema)
        fix = "kosong.standard.to_strict_schema converts it"
    except StrictSchemaError:
        fix = None
    found: list[Finding] = []
    for problem in problems:
        path, _, message = problem.partition(": ")
        found.append(
            Finding(name, "openai-strict", path, "openai-strict.supported-schema", "rejected",
                    message, fix)
        )  # fmt: skip
    return found


def _check_anthropic(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    found = _root_object(name, schema, "anthropic")
    for key in _COMPOSITIONS:
        if key in schema:
            found.append(
                Finding(
                    name, "anthropic", f"parameters.{key}", "anthropic.root-composition",
                    "rejected", f"input_schema does not support {key} at the top level",
                )
            )  # fmt: skip
    return found + _ignored_keywords(name, schema, "anthropic") if ignored else found


_ANTHROPIC_UNSUPPORTED = (
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "maxItems", "uniqueItems", "contains", "minContains",
    "maxContains", "minProperties", "maxProperties", "patternProperties",
)  # fmt: skip
"""Constraints Anthropic's strict tools do not support ("Numerical constraints", "String
constraints", "Array constraints beyond minItems of 0 or 1" in the JSON Schema limitations)."""
_ANTHROPIC_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
"""The string formats Anthropic's strict tools support."""


def _check_anthropic_strict(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    # Not what `anthropic` only ignores: strict mode enforces it.
    found = _check_anthropic(name, schema, "anthropic-strict", False)
    fix = "kosong moves the constraint into the description, as Anthropic's SDKs do"
    for node, path in _walk(schema, "parameters"):
        for key in _ANTHROPIC_UNSUPPORTED:
            if key in node:
                found.append(
                    Finding(name, "anthropic-strict", f"{path}.{key}",
                            "anthropic-strict.unsupported", "rejected",
                            f"`{key}` is not supported by strict tools", fix)
                )  # fmt: skip
        items = node.get("minItems")
        if isinstance(items, int) and items > 1:
            found.append(
                Finding(name, "anthropic-strict", f"{path}.minItems",
                        "anthropic-strict.unsupported", "rejected",
                        "strict tools support minItems 0 and 1 only", fix)
            )  # fmt: skip
        if node.get("type") == "object" and node.get("additionalProperties") is not False:
            found.append(
                Finding(name, "anthropic-strict", path, "anthropic-strict.open-object",
                        "rejected",
                        "every object of a strict tool needs additionalProperties: false",
                        "close the object (a strict kosong Tool closes every object itself)")
            )  # fmt: skip
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in _ANTHROPIC_FORMATS:
            found.append(
                Finding(name, "anthropic-strict", f"{path}.format", "anthropic-strict.format",
                        "rejected", f"the string format {fmt!r} is not supported by strict tools",
                        fix)
            )  # fmt: skip
        values = node.get("enum")
        if isinstance(values, list) and any(
            isinstance(v, dict | list) for v in cast(list[Any], values)
        ):
            found.append(
                Finding(name, "anthropic-strict", f"{path}.enum", "anthropic-strict.enum",
                        "rejected", "enum values must be strings, numbers, booleans or null")
            )  # fmt: skip
    with contextlib.suppress(ValueError):
        if any("$ref" in n for n, _ in _walk(deref_json_schema(schema), "parameters")):
            found.append(
                Finding(name, "anthropic-strict", "parameters", "anthropic-strict.recursive",
                        "rejected", "recursive schemas are not supported by strict tools")
            )  # fmt: skip
    return found


def _fix_anthropic_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Move the constraints strict tools lack into the description, as Anthropic's SDKs do.

    Unsupported formats too, and an object that does not say gets `additionalProperties:
    false` (a strict kosong Tool has it already). The toolset still checks the original.
    """
    for node, _ in _walk(schema, "parameters"):
        if node.get("type") == "object" and "additionalProperties" not in node:
            node["additionalProperties"] = False  # strict mode closes every object
        moved = {k: node.pop(k) for k in _ANTHROPIC_UNSUPPORTED if k in node}
        items = node.get("minItems")
        if isinstance(items, int) and items > 1:
            moved["minItems"] = node.pop("minItems")
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in _ANTHROPIC_FORMATS:
            moved["format"] = node.pop("format")
        if moved:
            said = ", ".join(f"{k}: {json.dumps(v)}" for k, v in moved.items())
            text = node.get("description")
            node["description"] = f"{text} ({said})" if isinstance(text, str) and text else said
    return schema


_IMPLYING: dict[str, tuple[str, ...]] = {
    "object": ("properties", "additionalProperties", "patternProperties", "required",
               "minProperties", "maxProperties", "propertyNames"),
    "array": ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
    "string": ("format", "pattern", "minLength", "maxLength"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}  # fmt: skip
"""The JSON Schema keywords that apply to one type only, by that type."""


def _implied_type(node: Mapping[str, Any]) -> str | None:
    """The type a schema without `type` implies, when exactly one (see the module doc)."""
    values = node.get("enum") if "enum" in node else [node["const"]] if "const" in node else None
    if values:
        kinds = {_json_type(v) for v in cast(list[Any], values)}
        if kinds == {"integer", "number"}:
            return "number"
        return kinds.pop() if len(kinds) == 1 else None
    implied = {kind for kind, keys in _IMPLYING.items() if any(k in node for k in keys)}
    return implied.pop() if len(implied) == 1 else None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_CONDITION = re.compile(r"\.(?:if|then|else|not)(?:[.\[]|$)")
"""A path inside `if` / `then` / `else` / `not`: a condition on the instance its parent
describes, not a schema of a value of its own. A `type` added there would change what the
schema means (`if: {"properties": ...}` holds for a non-object; with `type` it no longer
does), so Moonshot's type rule neither asks for one there nor adds one."""


def _check_moonshot(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    found = _root_object(name, schema, "moonshot")
    if len(name) < 3:
        found.append(
            Finding(
                name, "moonshot", "name", "moonshot.name", "rejected",
                "Moonshot's tool names match ^[a-zA-Z_][a-zA-Z0-9-_]{2,63}$: at least 3 "
                "characters",
            )
        )  # fmt: skip
    for node, path in _walk(schema, "parameters"):
        composition = next((k for k in ("anyOf", "oneOf") if k in node), None)
        if "$ref" in node:
            siblings = sorted(k for k in node if k != "$ref")
            local = str(node["$ref"]).startswith("#")
            if siblings:
                found.append(
                    Finding(
                        name, "moonshot", path, "moonshot.ref-siblings", "rejected",
                        f"a `$ref` with sibling keywords {siblings}: Moonshot wants them in "
                        "the referenced schema",
                        "inline the local reference" if local else None,
                    )
                )  # fmt: skip
        elif composition is not None:
            if "type" in node:
                # At the root the type must stay ("object"), so there is nothing safe to move.
                fix = (
                    f"move `type` into each {composition} branch" if path != "parameters" else None
                )
                found.append(
                    Finding(
                        name, "moonshot", path, "moonshot.type-beside-anyof", "rejected",
                        f"when using {composition}, the type goes in each {composition} branch, "
                        "not the parent schema", fix,
                    )
                )  # fmt: skip
        elif "type" not in node and "allOf" not in node and not _CONDITION.search(path):
            implied = _implied_type(node)
            found.append(
                Finding(
                    name, "moonshot", path, "moonshot.type-required", "rejected",
                    "type is not defined (Moonshot needs an explicit type on every schema)",
                    f'add "type": "{implied}", which its keywords imply' if implied else None,
                )
            )  # fmt: skip
    return found


def _fix_moonshot(schema: dict[str, Any]) -> dict[str, Any]:
    with contextlib.suppress(ValueError):  # a dangling reference: left for the check to report
        schema = deref_json_schema(schema)
    for node, path in list(_walk(schema, "parameters")):
        if "$ref" in node or path == "parameters":
            continue
        composition = next((k for k in ("anyOf", "oneOf") if k in node), None)
        if composition is not None and "type" in node:
            type_ = node.pop("type")
            for branch in cast(list[Any], node[composition]):
                if isinstance(branch, dict) and "type" not in branch and "$ref" not in branch:
                    cast(dict[str, Any], branch)["type"] = copy.deepcopy(type_)
        elif (
            composition is None
            and "type" not in node
            and "allOf" not in node
            and not _CONDITION.search(path)
        ):
            implied = _implied_type(node)
            if implied is not None:
                node["type"] = implied
    return schema


_GEMINI_KEYWORDS = frozenset(
    {"type", "format", "title", "description", "enum", "items", "prefixItems", "minItems",
     "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties", "additionalProperties",
     "required", "propertyOrdering"}
)  # fmt: skip
"""The JSON Schema keywords Gemini reads (besides `$id`, `$defs`, `$ref`, `$anchor`): the list
of https://ai.google.dev/api/generate-content#FIELDS.response_json_schema ("only the following
properties are supported"), the one place Google lists them for its JSON Schema fields."""


def _check_gemini(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    found = _root_object(name, schema, "gemini")
    for node, path in _walk(schema, "parameters"):
        if "$ref" in node:
            siblings = sorted(k for k in node if not k.startswith("$"))
            if siblings:
                found.append(
                    Finding(
                        name, "gemini", path, "gemini.ref-siblings", "rejected",
                        f"a `$ref` with sibling keywords {siblings}: Gemini takes no keyword "
                        "but `$...` ones beside a `$ref`",
                        "inline the local reference" if str(node["$ref"]).startswith("#") else None,
                    )
                )  # fmt: skip
        for key, value in node.items():
            where = f"{path}.{key}"
            if key == "enum" and isinstance(value, list):
                odd = [v for v in cast(list[Any], value) if _json_type(v) not in _ENUM_TYPES]
                if odd:
                    found.append(
                        Finding(
                            name, "gemini", where, "gemini.enum-values", "rejected",
                            f"enum values must be strings or numbers, got {_json_text(odd)}",
                        )
                    )  # fmt: skip
            elif (
                ignored
                and not key.startswith("$")
                and key not in _GEMINI_KEYWORDS
                and key != "definitions"
            ):
                found.append(
                    Finding(
                        name, "gemini", where, "gemini.not-read", "ignored",
                        f"`{key}` is not among the JSON Schema keywords Gemini reads; the "
                        "model does not see it (the toolset still validates it)",
                    )
                )  # fmt: skip
    return found + _recursive_required(name, schema)


_ENUM_TYPES = frozenset({"string", "integer", "number"})


def _json_text(values: list[Any]) -> str:
    return json.dumps(values, ensure_ascii=False)


def _recursive_required(name: str, schema: dict[str, Any]) -> list[Finding]:
    """Findings for recursive references in required properties.

    Gemini unrolls cycles "to a limited degree", so they "may only be used within
    non-required properties" (the response_json_schema page).
    """
    try:
        flat = deref_json_schema(schema)
    except ValueError:
        return []  # a dangling reference: the toolset refused the schema already
    found: list[Finding] = []
    for node, path in _walk(flat, "parameters"):
        required = node.get("required")
        properties = node.get("properties")
        if not isinstance(required, list) or not isinstance(properties, dict):
            continue
        for prop in cast(list[Any], required):
            sub = cast(dict[str, Any], properties).get(prop)
            if isinstance(sub, dict) and any("$ref" in n for n, _ in _walk(sub, "")):
                found.append(
                    Finding(
                        name, "gemini", f"{path}.properties.{prop}", "gemini.recursive-required",
                        "rejected",
                        "a recursive reference in a required property: Gemini allows cycles "
                        "only in properties that are not required",
                    )
                )  # fmt: skip
    return found


def _fix_gemini(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline local references when one has sibling keywords (Gemini refuses those)."""
    siblings = any(
        "$ref" in node and any(not k.startswith("$") for k in node)
        for node, _ in _walk(schema, "parameters")
    )
    if siblings:
        with contextlib.suppress(ValueError):  # a dangling reference: left for the check
            return deref_json_schema(schema)
    return schema


def _check_mcp(name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool) -> list[Finding]:
    found = _root_object(name, schema, "mcp")
    return [
        Finding(f.tool, f.dialect, "inputSchema", f.rule, f.effect,
                'inputSchema must be a JSON Schema of type "object"')
        for f in found
    ]  # fmt: skip


def _check_builtin(
    name: str, schema: dict[str, Any], dialect: Dialect, ignored: bool
) -> list[Finding]:
    """A `$` name: one of Moonshot's builtin functions, which only Moonshot can run."""
    if dialect == "moonshot":
        return []
    return [
        Finding(
            name, dialect, "name", f"{dialect}.builtin-function", "rejected",
            f"a name starting with `$` declares a Moonshot builtin function ({name}), which "
            "only the Kimi provider can send; this provider has no such function",
        )
    ]  # fmt: skip


_Check: TypeAlias = Callable[[str, dict[str, Any], Dialect, bool], list[Finding]]
"""A dialect's check of one tool: its name, its schema, the dialect, and whether to report
what the provider only ignores (building those findings costs a walk of the schema)."""

_CHECKS: dict[Dialect, _Check] = {
    "openai": _check_openai,
    "openai-strict": _check_openai_strict,
    "anthropic-strict": _check_anthropic_strict,
    "anthropic": _check_anthropic,
    "moonshot": _check_moonshot,
    "gemini": _check_gemini,
    "mcp": _check_mcp,
}
