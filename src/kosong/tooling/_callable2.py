"""`CallableTool2`: a tool whose arguments are a pydantic model."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Generic, Self, TypeVar

from pydantic import BaseModel, PrivateAttr, ValidationError, model_validator

from kosong._model import OverridableModelMeta
from kosong.tooling._calling import calls_in_thread, checked_return, pydantic_errors_text
from kosong.tooling._return import ToolReturnValue
from kosong.tooling._schema import check_tool_name, model_parameters_schema
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolValidateError
from kosong.utils.typing import JsonType

__all__ = ["CallableTool2", "Params"]

Params = TypeVar("Params", bound=BaseModel)


class CallableTool2(BaseModel, ABC, Generic[Params], metaclass=OverridableModelMeta):
    """A tool whose arguments are validated into an instance of a pydantic model, `params`.

    `name`, `description` and `params` can be class attributes (with or without an annotation)
    or constructor arguments. The model-facing definition, `base`, is computed when the tool is
    created: the model's JSON Schema without titles, with local `$ref`s inlined, aliases as
    property names, and defaults and constraints kept (see `model_parameters_schema`).
    """

    name: str
    """The tool's name, as the model will call it."""
    description: str
    """What the tool does, for the model."""
    params: type[Params]
    """The pydantic model the arguments are validated into."""

    _base: Tool = PrivateAttr()

    @model_validator(mode="after")
    def _build_base(self) -> Self:
        check_tool_name(self.name)
        self._base = Tool.model_construct(
            name=self.name,
            description=self.description,
            parameters=model_parameters_schema(self.params),
        )
        return self

    @property
    def base(self) -> Tool:
        """The tool definition the model reads."""
        return self._base

    async def call(self, arguments: JsonType) -> ToolReturnValue:
        """Validate `arguments` into `params`, call the tool, and return its result."""
        try:
            params = self.params.model_validate(arguments)
        except ValidationError as e:
            return ToolValidateError(pydantic_errors_text(e))
        if calls_in_thread(type(self)):
            result = await asyncio.to_thread(self, params)
        else:
            result = await self(params)
        return checked_return(self.name, result)

    @abstractmethod
    async def __call__(self, params: Params) -> ToolReturnValue:
        """The tool's implementation."""
        ...
