"""What a tool returns: one value type for success and failure, never an exception."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field

from kosong.message import ContentPart
from kosong.tooling._display import BriefDisplayBlock, DisplayBlock
from kosong.utils.typing import JsonType

__all__ = ["ToolError", "ToolOk", "ToolOutput", "ToolReturnType", "ToolReturnValue"]

ToolOutput = str | ContentPart | Sequence[ContentPart]
"""What `ToolOk` and `ToolError` accept as output: text, one content part, or several."""


class ToolReturnValue(BaseModel):
    """The result of a tool call, successful or not.

    `output` and `message` go to the model; `display` goes to the user interface; `extras`
    carries data for debugging and tests. Its JSON is exactly these five fields: anything added
    later defaults to None, so `model_dump(mode="json", exclude_none=True)` keeps this shape.
    """

    # Extras must survive a JSON round trip; NaN and infinities would come back as null.
    model_config = ConfigDict(allow_inf_nan=False)

    is_error: bool
    """Whether the call failed."""
    output: str | list[ContentPart] = ""
    """The output for the model: text, or content parts."""
    message: str = ""
    """An explanation for the model, such as what went wrong."""
    display: list[DisplayBlock] = []
    """Blocks for the user interface."""
    extras: dict[str, JsonType] | None = None
    """Extra data for debugging and tests; never shown to the model."""
    artifact: Any = Field(default=None, exclude=True)
    """Any Python object the application keeps from the call (say a DataFrame the text output
    summarises). It never reaches the model and is not serialized."""

    @property
    def brief(self) -> str:
        """The text of the first `BriefDisplayBlock`, or "" when there is none."""
        for block in self.display:
            if isinstance(block, BriefDisplayBlock):
                return block.text
        return ""


ToolReturnType = ToolReturnValue
"""The older name of `ToolReturnValue`."""


class ToolOk(ToolReturnValue):
    """A successful result.

    Example:
        `ToolOk(output="42", message="computed", brief="Result: 42")`
    """

    def __init__(
        self,
        *,
        output: ToolOutput = "",
        message: str = "",
        brief: str = "",
        display: Sequence[DisplayBlock] | None = None,
        extras: dict[str, JsonType] | None = None,
        **kwargs: Any,
    ) -> None:
        """Build a success; `brief` becomes a `BriefDisplayBlock` in front of `display`."""
        _init(self, False, output, message, brief, display, extras, kwargs)


class ToolError(ToolReturnValue):
    """A failed result. It is a value the model reads, not an exception.

    Its class's `code` is its error code in the Tool Use standard's catalog (EXECUTION_ERROR
    here; each error class of `kosong.tooling.error` has its own).

    Example:
        `ToolError(message="the weather API is unreachable", brief="Weather lookup failed")`
    """

    code: ClassVar[str] = "EXECUTION_ERROR"
    """The error code of this kind of failure."""

    def __init__(
        self,
        *,
        message: str,
        brief: str = "",
        output: ToolOutput = "",
        display: Sequence[DisplayBlock] | None = None,
        extras: dict[str, JsonType] | None = None,
        **kwargs: Any,
    ) -> None:
        """Build a failure; `brief` becomes a `BriefDisplayBlock` in front of `display`."""
        _init(self, True, output, message, brief, display, extras, kwargs)


def _init(
    self: ToolReturnValue,
    is_error: bool,
    output: ToolOutput,
    message: str,
    brief: str,
    display: Sequence[DisplayBlock] | None,
    extras: dict[str, JsonType] | None,
    more: dict[str, Any],
) -> None:
    # What ToolOk and ToolError share: `output` as a str or a list, `brief` as the first block.
    if not isinstance(output, str):  # str first: the common case, and the cheapest check
        output = [output] if isinstance(output, ContentPart) else _parts(self, output)
    blocks: list[DisplayBlock] = [BriefDisplayBlock(text=brief)] if brief else []
    if display:
        blocks.extend(display)
    ToolReturnValue.__init__(
        self,
        is_error=is_error,
        output=output,
        message=message,
        display=blocks,
        extras=extras,
        **more,
    )


def _parts(self: ToolReturnValue, output: object) -> list[Any]:
    """`output` as a list of content parts (or dicts naming their `type`), or a TypeError.

    The TypeError says what was given, as JSON, and what to write instead: the model reads
    text, so a number or a plain dict becomes text the tool chooses (`json.dumps`).
    """
    if isinstance(output, Sequence) and not isinstance(output, bytes):
        items = cast(Sequence[object], output)
        if all(isinstance(i, ContentPart) or (isinstance(i, dict) and "type" in i) for i in items):
            return list(items)
    elif isinstance(output, dict) and "type" in output:
        return [output]  # one content part written as a dict
    kind = type(self).__name__
    given = cast(Any, output)  # whatever it is: shown, never used
    raise TypeError(
        f"{kind}(output=...) takes text, a content part or a list of content parts, not "
        f"{_json(given)} ({type(given).__name__}); write {kind}(output=json.dumps(value)) to "
        "give the model this value as JSON text"
    )


def _json(value: object) -> str:
    """`value` as JSON for an error text (`null`, not `None`), shortened; repr if not JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
