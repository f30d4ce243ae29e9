"""`ToolResult` and the `Toolset` protocol: what handling a tool call gives back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from kosong.message import ToolCall
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._tool import Tool
from kosong.utils.typing import JsonType

__all__ = ["HandleResult", "ToolResult", "ToolResultFuture", "Toolset"]


_set = object.__setattr__  # frozen: fields are set past the dataclass' guard, once


@dataclass(frozen=True, slots=True, init=False)
class ToolResult:
    """The result of one tool call: the call's id and the tool's return value.

    `return_value` is the field; `result` is its older name and reads the same value, and
    `ToolResult(tool_call_id=..., result=...)` builds one as well. A ToolResult can be awaited
    (it gives itself), so `await toolset.handle(call)` works whether `handle` returned a
    finished result or a future.

    `metadata` is what a policy pipeline (`kosong.standard`) recorded about the call: tool
    name, time taken, timestamp, trace id... (None for a call that went through none). It
    belongs to this call; the return value is what the tool said, and may be handed to other
    calls as a copy (a cache hit).
    """

    tool_call_id: str
    """The id of the tool call this answers."""
    return_value: ToolReturnValue
    """What the tool returned (or the error that stands for it)."""
    metadata: Mapping[str, JsonType] | None = field(default=None, compare=False)
    """The call's metadata as the Tool Use standard names it, when a pipeline recorded it."""

    def __init__(
        self,
        tool_call_id: str,
        return_value: ToolReturnValue | None = None,
        *,
        result: ToolReturnValue | None = None,
        metadata: Mapping[str, JsonType] | None = None,
    ) -> None:
        """Build a result from `return_value` (or its older name, `result`)."""
        value = return_value if return_value is not None else result
        if value is None or (return_value is not None and result is not None):
            raise TypeError("ToolResult needs exactly one of `return_value` and `result`")
        _set(self, "tool_call_id", tool_call_id)
        _set(self, "return_value", value)
        _set(self, "metadata", metadata)

    def __hash__(self) -> int:
        # Equal results share an id; hashing the id keeps results usable in sets and in
        # asyncio.gather (which hashes its arguments) even though return values are mutable.
        return hash(self.tool_call_id)

    @property
    def result(self) -> ToolReturnValue:
        """The return value (the older name of `return_value`)."""
        return self.return_value

    def to_json(self) -> str:
        """The result as JSON text, its return value's class named, for `from_json`.

        `{"id", "type", "value", "metadata"}`: `type` is the return value's class
        (`ToolOk`, `ToolValidateError`...), `value` its five fields. Its `artifact`, for the
        application only, is not kept.
        """
        value = self.return_value.model_dump(mode="json")
        return json.dumps(
            {"id": self.tool_call_id, "type": type(self.return_value).__name__, "value": value,
             "metadata": dict(self.metadata) if self.metadata is not None else None},
            ensure_ascii=False,
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str | bytes) -> ToolResult:
        """A result `to_json` wrote, its return value of the same class.

        kosong's own classes come back as themselves; any other as a `ToolOk` or a
        `ToolError`.

        Raises:
            ValueError: `text` is not such a result.
        """
        try:
            data = json.loads(text)
            value = ToolReturnValue.model_validate(data["value"])
            kind = _value_class(str(data["type"]), value.is_error)
            fields = {name: getattr(value, name) for name in ToolReturnValue.model_fields}
            return cls(str(data["id"]), kind.model_construct(**fields),
                       metadata=data.get("metadata"))  # fmt: skip
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a stored ToolResult: {e}") from None

    def __await__(self) -> Generator[Any, None, ToolResult]:
        return self
        yield  # a generator that finishes at once: awaiting gives the result itself


def _value_class(name: str, is_error: bool) -> type[ToolReturnValue]:
    """Kosong's return value class of this name (`ToolOk`, an error of `kosong.tooling.error`)."""
    from kosong.tooling import error  # it needs this module first

    found = getattr(error, name, None) if name in error.__all__ else None
    if isinstance(found, type) and issubclass(found, ToolReturnValue):
        return found
    from kosong.tooling._return_value import ToolError, ToolOk

    known = {"ToolOk": ToolOk, "ToolError": ToolError}.get(name)
    return known or (ToolError if is_error else ToolOk)


ToolResultFuture: TypeAlias = asyncio.Future[ToolResult]
"""A result still being computed."""

HandleResult: TypeAlias = ToolResultFuture | ToolResult
"""What `Toolset.handle` returns: a finished result, or a future of one."""


@runtime_checkable
class Toolset(Protocol):
    """Something that holds tools and handles the model's calls to them."""

    @property
    def tools(self) -> list[Tool]:
        """The definitions of the tools, for the model."""
        ...

    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Handle one tool call: return its result, or a future of it.

        It must not block (it runs while the model's response is being streamed) and must not
        raise anything but `asyncio.CancelledError`: every failure is a `ToolError` result.
        """
        ...
