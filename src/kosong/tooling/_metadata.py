"""The optional metadata of a tool definition (private; `kosong.standard` reads it).

The Tool Use standard's extension fields and MCP's behaviour hints.

Every field defaults to None, meaning "not declared", and a definition that declares none of
them dumps exactly as before (`{name, description, parameters}`). Values are checked when the
tool is created, each with an error that says how to fix it.

The MCP hints are Python attributes in snake_case (`read_only_hint`) and keep MCP's camelCase
spelling on the wire: `readOnlyHint` is accepted when a tool is created or validated, and is the
key `model_dump()` writes, since the dump is what goes to other systems.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from typing import Any, cast

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from kosong._model import OverridableModelMeta
from kosong.tooling._schema import check_json_schema, check_parameter_names, check_tool_name
from kosong.utils.dates_and_versions import SEMVER_PATTERN, parse_iso8601
from kosong.utils.jsonschema import map_subschemas
from kosong.utils.typing import JsonType

__all__ = [
    "HINT_ALIASES",
    "METADATA_FIELDS",
    "PROVIDER_OWNED_FIELDS",
    "EstimatedTokens",
    "TokenRange",
    "ToolMetadata",
    "check_metadata_against_definition",
    "close_object_schemas",
]

HINT_ALIASES: dict[str, str] = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
    "output_schema": "outputSchema",
}
"""Python attribute name -> MCP's JSON key, for the behaviour hints and the output schema."""


def _check_semver(value: str, what: str) -> str:
    if not SEMVER_PATTERN.match(value):
        raise ValueError(
            f"{what} {value!r} is not a semantic version; write MAJOR.MINOR.PATCH, e.g. '1.0.0' "
            "(optionally with '-beta.1' or '+build.5')"
        )
    return value


class _DropNone(BaseModel):
    """A model whose dump leaves out the fields left at None, so it reads as it was written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_serializer(mode="wrap")
    def _drop_none(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            return {k: v for k, v in cast(dict[str, Any], data).items() if v is not None}
        return data


class TokenRange(_DropNone):
    """How many tokens a tool's output takes: any of a minimum, a maximum and a typical count."""

    min: int | None = Field(default=None, ge=0)
    """The fewest tokens the output takes."""
    max: int | None = Field(default=None, ge=0)
    """The most tokens the output takes."""
    typical: int | None = Field(default=None, ge=0)
    """The usual number of tokens."""

    @model_validator(mode="after")
    def _check_order(self) -> TokenRange:
        if self.min is None and self.max is None and self.typical is None:
            raise ValueError("a token range needs at least one of min, max and typical")
        named = (("min", self.min), ("typical", self.typical), ("max", self.max))
        known = [(name, value) for name, value in named if value is not None]
        for (low_name, low), (high_name, high) in itertools.pairwise(known):
            if low > high:
                raise ValueError(f"token range has {low_name}={low} above {high_name}={high}")
        return self


class EstimatedTokens(_DropNone):
    """The standard's detailed token estimate: the definition's own cost and its output's."""

    input: int | None = Field(default=None, ge=0)
    """Tokens the call's arguments take."""
    output: int | TokenRange | None = None
    """Tokens the result takes: one number, or a range."""

    @field_validator("output")
    @classmethod
    def _non_negative(cls, value: int | TokenRange | None) -> int | TokenRange | None:
        if isinstance(value, int) and value < 0:
            raise ValueError("estimated output tokens cannot be negative")
        return value


def _mcp_field(name: str) -> Any:
    """An undeclared field that is also read under MCP's camelCase key."""
    return Field(default=None, validation_alias=AliasChoices(name, HINT_ALIASES[name]))


_NAME = "is the tool's `name`"
_DESCRIPTION = "is the tool's `description`"
_STRICT = "comes from `strict=True`"
_TYPE = "is written by kosong (a function, a custom tool or a native tool)"
PROVIDER_OWNED_FIELDS: dict[str, dict[str, str]] = {
    "anthropic": {"name": _NAME, "description": _DESCRIPTION, "strict": _STRICT,
                  "input_schema": "is the tool's `parameters`", "type": _TYPE},
    "openai": {"name": _NAME, "description": _DESCRIPTION, "strict": _STRICT,
               "parameters": "is the tool's `parameters`", "type": _TYPE},
    "openai-responses": {"name": _NAME, "description": _DESCRIPTION, "strict": _STRICT,
                         "parameters": "is the tool's `parameters`", "type": _TYPE,
                         "output_schema": "is the tool's `output_schema`"},
    "gemini": {"name": _NAME, "description": _DESCRIPTION,
               "parametersJsonSchema": "is the tool's `parameters`",
               "parameters": "is the tool's `parameters` (sent as parametersJsonSchema)"},
    "kimi": {"name": _NAME, "description": _DESCRIPTION, "strict": _STRICT,
             "parameters": "is the tool's `parameters`", "type": _TYPE},
}  # fmt: skip
"""The providers `ToolMetadata.provider_options` may name, and in each the fields of a tool's
entry kosong writes itself (with what sets them)."""


class ToolMetadata(BaseModel, metaclass=OverridableModelMeta):
    """The optional fields a tool may declare about itself; all default to None (undeclared).

    From the Tool Use standard: `strict`, `version`, `cacheable`, `cache_ttl`,
    `cache_key_params`, `streaming`, `estimated_tokens`, `deprecated`, `sunset_date`,
    `replacement`, `migration_guide`, `changelog`. kosong's own: `sequential`, `external`.
    From MCP's tool annotations: `title`, `read_only_hint`, `destructive_hint`,
    `idempotent_hint`, `open_world_hint` (written `readOnlyHint`... in JSON), and
    `output_schema` (`outputSchema`: the JSON Schema of the JSON text a successful call
    returns). A dump leaves out every field still at None.
    """

    strict: bool | None = None
    """Reject arguments with properties the schema does not declare; providers that support it
    (OpenAI's strict function calling) constrain the model to the schema."""
    version: str | None = None
    """The tool's semantic version, `MAJOR.MINOR.PATCH`."""
    cacheable: bool | None = None
    """Whether results may be cached (identical arguments give an identical result)."""
    cache_ttl: int | float | None = None
    """How long, in seconds, a cached result stays valid."""
    cache_key_params: list[str] | None = None
    """The arguments the cache key is made of (default: all of them)."""
    streaming: bool | None = None
    """Whether the tool reports progress while it runs."""
    sequential: bool | None = None
    """Its calls must run one at a time, in the order they were made (kosong's own field,
    honoured by `ConcurrencyPolicy`): for tools not safe to run concurrently."""
    external: bool | None = None
    """The caller runs it, not the toolset (kosong's own field): its definition goes to the
    model, and a call with valid arguments answers `ToolDeferredError` instead of running, so
    `agent_loop` stops and hands the call to its caller (a browser, a desktop client)."""
    estimated_tokens: int | EstimatedTokens | None = None
    """Tokens the result takes: a number, or `{input, output: {min, max, typical}}`."""
    deprecated: bool | None = None
    """Whether the tool is deprecated."""
    sunset_date: str | None = None
    """When the tool stops working, as an ISO 8601 date or date-time."""
    replacement: str | None = None
    """The name of the tool to use instead."""
    migration_guide: str | None = None
    """Where to read how to move to the replacement (usually a URL)."""
    changelog: dict[str, str] | None = None
    """What each version changed, by semantic version."""
    title: str | None = None
    """A human-readable name for user interfaces (MCP)."""
    read_only_hint: bool | None = _mcp_field("read_only_hint")
    """The tool does not change its environment (MCP `readOnlyHint`)."""
    destructive_hint: bool | None = _mcp_field("destructive_hint")
    """The tool may destroy or overwrite data (MCP `destructiveHint`)."""
    idempotent_hint: bool | None = _mcp_field("idempotent_hint")
    """Calling it again with the same arguments has no further effect (MCP `idempotentHint`)."""
    open_world_hint: bool | None = _mcp_field("open_world_hint")
    """The tool talks to an open world, such as the web (MCP `openWorldHint`)."""
    output_schema: dict[str, Any] | None = _mcp_field("output_schema")
    """The JSON Schema of what a successful call returns, as JSON text (MCP `outputSchema`);
    an MCP server sends that output as `structuredContent` too. Checked like `parameters`."""
    provider_options: dict[str, dict[str, JsonType]] | None = None
    """Fields merged into one provider's entry for this tool, keyed by the provider's `name`
    (`"anthropic"`, `"openai"`, `"openai-responses"`, `"gemini"`, `"kimi"`): say
    `{"anthropic": {"input_examples": [...], "cache_control": {"type": "ephemeral"}}}`. A
    field kosong writes itself (the name, the description, the input schema, `strict`) is
    refused, with the option that sets it."""

    @field_validator("version")
    @classmethod
    def _check_version(cls, value: str | None) -> str | None:
        return None if value is None else _check_semver(value, "version")

    @field_validator("cache_ttl")
    @classmethod
    def _check_ttl(cls, value: float | None) -> float | None:
        if value is not None and (
            isinstance(value, bool) or not math.isfinite(value) or value <= 0
        ):
            raise ValueError(f"cache_ttl must be a positive number of seconds, got {value!r}")
        return value

    @field_validator("cache_key_params")
    @classmethod
    def _check_key_params(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("cache_key_params is empty; leave it out to key on every argument")
        if len(set(value)) != len(value):
            raise ValueError(f"cache_key_params lists a parameter twice: {value!r}")
        return value

    @field_validator("estimated_tokens")
    @classmethod
    def _check_tokens(cls, value: int | EstimatedTokens | None) -> int | EstimatedTokens | None:
        if isinstance(value, int) and value < 0:
            raise ValueError("estimated_tokens cannot be negative")
        return value

    @field_validator("sunset_date")
    @classmethod
    def _check_sunset(cls, value: str | None) -> str | None:
        if value is not None:
            parse_iso8601(value)
        return value

    @field_validator("replacement")
    @classmethod
    def _check_replacement(cls, value: str | None) -> str | None:
        if value is not None:
            check_tool_name(value)
        return value

    @field_validator("migration_guide", "title")
    @classmethod
    def _non_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank; leave it out instead")
        return value

    @field_validator("output_schema")
    @classmethod
    def _check_output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            check_json_schema(value, "the `output_schema`")
        return value

    @field_validator("provider_options")
    @classmethod
    def _check_provider_options(
        cls, value: dict[str, dict[str, JsonType]] | None
    ) -> dict[str, dict[str, JsonType]] | None:
        for provider, fields in (value or {}).items():
            owned = PROVIDER_OWNED_FIELDS.get(provider)
            if owned is None:
                known = ", ".join(sorted(PROVIDER_OWNED_FIELDS))
                raise ValueError(
                    f"provider_options names no provider kosong knows: {json.dumps(provider)} "
                    f"(known: {known})"
                )
            taken = sorted(set(fields) & owned.keys())
            if taken:
                said = "; ".join(f"`{k}` {owned[k]}" for k in taken)
                raise ValueError(
                    f"provider_options[{json.dumps(provider)}] sets what kosong writes from the "
                    f"tool itself: {said}"
                )
        return value

    @field_validator("changelog")
    @classmethod
    def _check_changelog(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for version in value or {}:
            _check_semver(version, "changelog version")
        return value

    @model_validator(mode="after")
    def _check_hints(self) -> ToolMetadata:
        if self.read_only_hint and self.destructive_hint:
            raise ValueError(
                "a tool cannot be both read-only and destructive; drop one of read_only_hint "
                "and destructive_hint"
            )
        if self.cacheable is not True:
            for name in ("cache_ttl", "cache_key_params"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name} is set but the tool is not cacheable; add cacheable=True"
                    )
        return self

    def metadata(self) -> dict[str, Any]:
        """The declared metadata fields (those not None), by Python attribute name."""
        return {
            name: value for name in METADATA_FIELDS if (value := getattr(self, name)) is not None
        }

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        data = cast(dict[str, Any], data)
        # Core fields first, in their order; then the declared metadata, under its wire key.
        out = {k: v for k, v in data.items() if k not in _METADATA_SET and k not in _ALIAS_SET}
        for name in METADATA_FIELDS:
            if getattr(self, name) is None:
                continue
            key = _WIRE_KEY[name]
            if name in data:
                out[key] = data[name]
            elif key in data:
                out[key] = data[key]
        return out

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The core fields first, then only the declared metadata: undeclared (None) metadata
        # would clutter every repr.
        args = list(super().__repr_args__())
        yield from ((n, v) for n, v in args if n not in _METADATA_SET)
        yield from ((n, v) for n, v in args if n in _METADATA_SET and v is not None)


METADATA_FIELDS: tuple[str, ...] = tuple(ToolMetadata.model_fields)
"""The optional fields, in the order a dump writes them (after name, description, parameters)."""
_METADATA_SET = frozenset(METADATA_FIELDS)
_WIRE_KEY = {name: HINT_ALIASES.get(name, name) for name in METADATA_FIELDS}
_ALIAS_SET = frozenset(HINT_ALIASES.values())


def _is_object_schema(schema: dict[str, Any]) -> bool:
    type_ = schema.get("type")
    if type_ == "object" or (isinstance(type_, list) and "object" in type_):
        return True
    return type_ is None and "properties" in schema


def close_object_schemas(schema: dict[str, Any], owner: str) -> dict[str, Any]:
    """A copy of `schema` where every object schema refuses undeclared properties.

    An object schema without `additionalProperties` gets `additionalProperties: false`.

    Raises:
        ValueError: an object schema explicitly allows other properties (`true` or a schema),
            which a strict tool cannot honour; the message names where.
    """

    def close(node: Any, path: str) -> Any:
        if not isinstance(node, dict):
            return node
        node = cast(dict[str, Any], node)
        if _is_object_schema(node):
            extra = node.get("additionalProperties", False)
            if extra is not False:
                raise ValueError(
                    f"{owner} is strict, but {path} allows properties it does not declare "
                    f"(additionalProperties: {extra!r}); declare them, or drop strict"
                )
            node = {**node, "additionalProperties": False}
        return map_subschemas(node, close, path)

    return cast(dict[str, Any], close(schema, "parameters"))


def check_metadata_against_definition(
    meta: ToolMetadata, name: str, parameters: dict[str, Any]
) -> dict[str, Any]:
    """Check the metadata fields that depend on the rest of the definition.

    Returns the parameters schema to keep: closed (see `close_object_schemas`) for a strict
    tool, else `parameters` itself.

    Raises:
        ValueError: the metadata contradicts the definition.
    """
    owner = f"tool `{name}`"
    if meta.replacement is not None and meta.replacement == name:
        raise ValueError(f"{owner} names itself as its replacement")
    if meta.cache_key_params is not None:
        props = parameters.get("properties")
        if isinstance(props, dict):
            what = f"cache_key_params of {owner} names"
            check_parameter_names(meta.cache_key_params, cast(dict[str, Any], props), what)
    if meta.strict:
        return close_object_schemas(parameters, owner)
    return parameters
