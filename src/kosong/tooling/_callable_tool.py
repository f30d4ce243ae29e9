"""`CallableTool`: a tool defined by a JSON Schema and an `async __call__`."""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from typing import Any, Self

import jsonschema_rs
from pydantic import PrivateAttr, model_validator

from kosong._threads import run_sync_tool
from kosong.tooling._call_checks import (
    calls_in_thread,
    checked_return,
    deferred_to_caller,
    jsonschema_errors_text,
)
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._schema import schema_validator
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolValidateError
from kosong.utils.typing import JsonType

__all__ = ["CallableTool"]


class CallableTool(Tool, ABC):
    """A tool whose arguments are described by a JSON Schema (`parameters`).

    `call(arguments)` validates the arguments against `parameters`, then calls `__call__`:

    - a JSON array is unpacked as positional arguments,
    - a JSON object as keyword arguments,
    - anything else is passed as a single argument.

    Arguments that fail the schema, or do not fit `__call__`'s signature, give a
    `ToolValidateError` naming the offending field. A plain (non-async) `__call__` runs in a
    worker thread so it never blocks the event loop. The validator is built once, when the tool
    is created.
    """

    _validator: jsonschema_rs.Validator = PrivateAttr()

    @model_validator(mode="after")
    def _build_validator(self) -> Self:
        self._validator = schema_validator(self.parameters)
        return self

    @property
    def base(self) -> Tool:
        """The tool definition the model reads (this tool itself)."""
        return self

    async def call(self, arguments: JsonType) -> ToolReturnValue:
        """Validate `arguments`, call the tool, and return its result (never its exception)."""
        validator = self._validator
        if not validator.is_valid(arguments):
            return ToolValidateError(jsonschema_errors_text(validator, arguments))
        if self.external:
            return deferred_to_caller(self.name)
        if isinstance(arguments, list):
            args: tuple[Any, ...] = tuple(arguments)
            kwargs: dict[str, Any] = {}
        elif isinstance(arguments, dict):
            args, kwargs = (), arguments
        else:
            args, kwargs = (arguments,), {}
        try:
            if calls_in_thread(type(self)):
                # Bound here, so a mismatch is the arguments' fault, not the tool's failure.
                inspect.signature(self.__call__).bind(*args, **kwargs)
                pending = run_sync_tool(functools.partial(self, *args, **kwargs))
            else:
                pending = self(*args, **kwargs)  # calling an async def only binds the arguments
        except TypeError as e:
            return ToolValidateError(f"the arguments do not fit the tool's signature: {e}")
        return checked_return(self.name, await pending)

    @abstractmethod
    async def __call__(self, *args: Any, **kwargs: Any) -> ToolReturnValue:
        """The tool's implementation."""
        ...
