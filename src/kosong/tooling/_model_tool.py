"""`CallableTool2`: a tool whose arguments are a pydantic model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, Self, TypeVar

import jsonschema_rs
from pydantic import BaseModel, PrivateAttr, ValidationError, model_validator

from kosong._threads import run_sync_tool
from kosong.tooling._call_checks import (
    calls_in_thread,
    checked_return,
    deferred_to_caller,
    jsonschema_errors_text,
    pydantic_errors_text,
)
from kosong.tooling._metadata import ToolMetadata
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._schema import check_tool_name, model_parameters_schema, schema_validator
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolValidateError
from kosong.utils.typing import JsonType

__all__ = ["CallableTool2", "Params"]

Params = TypeVar("Params", bound=BaseModel)


class CallableTool2(ToolMetadata, ABC, Generic[Params]):
    """A tool whose arguments are validated into an instance of a pydantic model, `params`.

    `name`, `description` and `params` can be class attributes (with or without an annotation)
    or constructor arguments. The model-facing definition, `base`, is computed when the tool is
    created: the model's JSON Schema without titles, with local `$ref`s inlined, aliases as
    property names, and defaults and constraints kept (see `model_parameters_schema`).

    The optional metadata of `Tool` (`strict`, `version`, `cacheable`, `read_only_hint`...) can
    be given the same two ways and is carried into `base`. A strict tool rejects arguments with
    properties its schema does not declare, whatever `params`' own `extra` setting.
    """

    name: str
    """The tool's name, as the model will call it."""
    description: str
    """What the tool does, for the model."""
    params: type[Params]
    """The pydantic model the arguments are validated into."""

    _base: Tool = PrivateAttr()
    _strict_validator: jsonschema_rs.Validator | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _build_base(self) -> Self:
        check_tool_name(self.name)
        parameters = model_parameters_schema(self.params)
        metadata = self.metadata()
        if metadata:
            # Validated, so the metadata is checked against the schema (and a strict one closed).
            self._base = Tool(
                name=self.name, description=self.description, parameters=parameters, **metadata
            )
        else:  # the common case stays as cheap as before: name and schema are checked already
            self._base = Tool.model_construct(
                name=self.name, description=self.description, parameters=parameters
            )
        if self.strict:
            self._strict_validator = schema_validator(self._base.parameters)
        return self

    @property
    def base(self) -> Tool:
        """The tool definition the model reads."""
        return self._base

    async def call(self, arguments: JsonType) -> ToolReturnValue:
        """Validate `arguments` into `params`, call the tool, and return its result."""
        if self.strict and self._strict_validator is not None:  # private read only if strict
            unknown = jsonschema_errors_text(self._strict_validator, arguments, only_unknown=True)
            if unknown:
                return ToolValidateError(unknown)
        try:
            params = self.params.model_validate(arguments)
        except ValidationError as e:
            return ToolValidateError(
                pydantic_errors_text(e, list(self.base.parameters.get("properties", {})))
            )
        if self.external:
            return deferred_to_caller(self.name)
        if calls_in_thread(type(self)):
            result = await run_sync_tool(self, params)
        else:
            result = await self(params)
        return checked_return(self.name, result)

    @abstractmethod
    async def __call__(self, params: Params) -> ToolReturnValue:
        """The tool's implementation."""
        ...
