"""`FreeformTool`: a tool whose input is one text, optionally constrained by a grammar."""

from __future__ import annotations

from abc import ABC
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kosong.tooling._callable import CallableTool
from kosong.tooling._tool import ParametersType

__all__ = ["FREEFORM_PARAMETERS", "FreeformTool", "Grammar"]

FREEFORM_PARAMETERS: ParametersType = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's input, as text."}},
    "required": ["input"],
    "additionalProperties": False,
}
"""What a free-form tool is for an API without custom tools: a function of one string."""


class Grammar(BaseModel):
    """What a free-form tool's text must match: a Lark grammar or a regular expression."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    syntax: Literal["lark", "regex"]
    """"lark" (a Lark CFG) or "regex" (a regular expression), as OpenAI's custom tools take."""
    definition: str = Field(min_length=1)
    """The grammar or the expression."""


class FreeformTool(CallableTool, ABC):
    """A tool whose input is one text, not JSON: say an apply_patch-style editing tool.

    Subclass it with a `name`, a `description`, optionally a `grammar`, and an
    `async def __call__(self, input: str) -> ToolReturnValue`. OpenAI (Chat Completions and
    Responses) gets it as a custom tool, whose calls arrive as `ToolCall(type="custom")` with
    the text as their input; the toolset hands that text to the tool unparsed, as `input`.
    Other APIs get a function of one string parameter, `input` (`FREEFORM_PARAMETERS`), and
    the grammar is not enforced there (the text still reaches the tool the same way).
    """

    parameters: ParametersType = Field(default_factory=lambda: dict(FREEFORM_PARAMETERS))
    """The one-string-parameter schema other APIs get (and calls are validated with)."""
    grammar: Grammar | None = None
    """What the text must match (OpenAI enforces it); None: any text."""
