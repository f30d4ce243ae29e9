"""`Tool`: the definition of a tool that a model reads."""

from __future__ import annotations

from typing import Any, Self

from pydantic import model_validator

from kosong.tooling._metadata import ToolMetadata, check_metadata_against_definition
from kosong.tooling._schema import check_json_schema, check_tool_name

__all__ = ["ParametersType", "Tool"]

ParametersType = dict[str, Any]
"""A JSON Schema, as a dict, describing a tool's arguments."""


class Tool(ToolMetadata):
    """A tool definition the model can read: a name, a description and a parameters schema.

    Both are checked when the tool is created, so a bad definition fails at once rather than
    when the model first calls it: the name must match `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$` and
    `parameters` must be a valid JSON Schema (Draft 2020-12 unless it names another `$schema`).
    Either failure raises pydantic's `ValidationError`.

    A tool may also declare the optional metadata of the Tool Use standard and MCP's behaviour
    hints (see `ToolMetadata`: `strict`, `version`, `cacheable`, `read_only_hint`...). They are
    checked too, and a tool declaring none of them dumps exactly `{name, description,
    parameters}`. A strict tool's `parameters` are closed: every object schema gets
    `additionalProperties: false`, so arguments with undeclared properties are rejected.
    """

    name: str
    """The tool's name, as the model will call it."""
    description: str
    """What the tool does, for the model."""
    parameters: ParametersType
    """A JSON Schema of the tool's arguments."""

    @property
    def expects_object(self) -> bool:
        """Whether the arguments are a JSON object (the schema's `type` is "object").

        Toolsets unwrap a JSON string holding an object for such a tool (`parse_arguments`).
        """
        return self.parameters.get("type") == "object"

    @model_validator(mode="after")
    def _check_definition(self) -> Self:
        check_tool_name(self.name, builtin=type(self) is Tool)  # only a declaration may be `$...`
        check_json_schema(self.parameters, f"the `parameters` of tool `{self.name}`")
        if self.strict or self.cache_key_params is not None or self.replacement is not None:
            self.parameters = check_metadata_against_definition(self, self.name, self.parameters)
        return self
