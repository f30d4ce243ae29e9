"""`EmptyToolset`: a toolset with no tools."""

from __future__ import annotations

from kosong.message import ToolCall
from kosong.tooling._result import HandleResult, ToolResult, Toolset
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolNotFoundError

__all__ = ["EmptyToolset"]


class EmptyToolset(Toolset):
    """A toolset without tools: every call is answered with `ToolNotFoundError`."""

    @property
    def tools(self) -> list[Tool]:
        """No tools."""
        return []

    def handle(self, tool_call: ToolCall) -> HandleResult:
        """Answer at once that the tool does not exist."""
        return ToolResult(tool_call.id, ToolNotFoundError(tool_call.function.name))
