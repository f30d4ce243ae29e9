"""`EmptyToolset`: a toolset with no tools."""

from __future__ import annotations

from kosong.message import ToolCall
from kosong.tooling._dispatch import BaseToolset
from kosong.tooling._result import ToolResult
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolNotFoundError
from kosong.utils.typing import JsonType

__all__ = ["EmptyToolset"]

_NEVER_CHANGES = object()


class EmptyToolset(BaseToolset):
    """A toolset without tools: every call is answered at once with `ToolNotFoundError`."""

    @property
    def tools(self) -> list[Tool]:
        """No tools."""
        return []

    @property
    def tools_version(self) -> object:
        """Always the same: there are never any tools."""
        return _NEVER_CHANGES

    def find_tool(self, name: str) -> Tool | None:
        """None: there is no tool here."""
        return None

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Not found (never reached through `handle`: no tool is ever found)."""
        return ToolResult(call.id, ToolNotFoundError(tool.name))
