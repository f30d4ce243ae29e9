"""Tools a model can read and call, their results, and toolsets that dispatch calls.

- `Tool`: a definition (name, description, JSON Schema of the parameters).
- `CallableTool`: a Tool with an `async __call__`, arguments checked against its schema.
- `CallableTool2`: a tool whose arguments are validated into a pydantic model.
- `FreeformTool`, `Grammar`: a tool whose input is one text (OpenAI custom tools), optionally
  constrained by a Lark or regex grammar.
- `ToolReturnValue` (`ToolOk`, `ToolError`): what a tool returns; failures are values.
- `DisplayBlock`: what a tool shows the user, apart from what the model reads.
- `Toolset`, `ToolResult`: the protocol that turns a `ToolCall` into a result, and the result.
- `BaseToolset`: kosong's one dispatcher (resolve, parse once, run in a task, failures as
  values); toolsets that run or wrap calls implement its `call_tool`.
- Composition: `combined`, `filtered`, `prefixed`, `renamed`, `prepared` wrap any `Toolset`
  (also one-line methods of every `BaseToolset`); `WrapperToolset` is their common base.
- `ToolMetadata`: the optional fields of the Tool Use standard (strict, version, cacheable,
  deprecation, MCP's behaviour hints...) that `Tool` and `CallableTool2` accept.
- `FunctionTool`, `tool`, `ToolException`: tools from plain functions.
- `searchable(toolset, always_visible=...)`: a large catalog behind a `search_tools` tool
  (`SearchableToolset`; the `search` extra ranks with BM25).

`kosong.tooling.simple.SimpleToolset` is the toolset to start with; `kosong.tooling.error` holds
the errors a toolset reports on its own.
"""

from kosong.tooling._arguments import ArgumentLimits, ArgumentsError, parse_arguments
from kosong.tooling._callable import CallableTool
from kosong.tooling._callable2 import CallableTool2
from kosong.tooling._combined import CombinedToolset, combined
from kosong.tooling._dispatch import UNPARSED, BaseToolset, Unparsed, dispatch, with_json_arguments
from kosong.tooling._display import BriefDisplayBlock, DisplayBlock, UnknownDisplayBlock
from kosong.tooling._filtered import FilteredToolset, filtered
from kosong.tooling._freeform import FreeformTool, Grammar
from kosong.tooling._function import (
    FunctionTool,
    Injected,
    ResponseFormat,
    ToolErrorHandler,
    ToolException,
    ToolOptions,
    tool,
)
from kosong.tooling._metadata import EstimatedTokens, TokenRange, ToolMetadata
from kosong.tooling._prefixed import PrefixedToolset, prefixed
from kosong.tooling._prepared import PreparedToolset, prepared
from kosong.tooling._renamed import RenamedToolset, renamed
from kosong.tooling._result import HandleResult, ToolResult, ToolResultFuture, Toolset
from kosong.tooling._return import ToolError, ToolOk, ToolOutput, ToolReturnType, ToolReturnValue
from kosong.tooling._search import SEARCH_TOOL_NAME, SearchableToolset, searchable
from kosong.tooling._tool import ParametersType, Tool
from kosong.tooling._wrapper import WrapperToolset

__all__ = [
    "SEARCH_TOOL_NAME",
    "UNPARSED",
    "ArgumentLimits",
    "ArgumentsError",
    "BaseToolset",
    "BriefDisplayBlock",
    "CallableTool",
    "CallableTool2",
    "CombinedToolset",
    "DisplayBlock",
    "EstimatedTokens",
    "FilteredToolset",
    "FreeformTool",
    "FunctionTool",
    "Grammar",
    "HandleResult",
    "Injected",
    "ParametersType",
    "PrefixedToolset",
    "PreparedToolset",
    "RenamedToolset",
    "ResponseFormat",
    "SearchableToolset",
    "TokenRange",
    "Tool",
    "ToolError",
    "ToolErrorHandler",
    "ToolException",
    "ToolMetadata",
    "ToolOk",
    "ToolOptions",
    "ToolOutput",
    "ToolResult",
    "ToolResultFuture",
    "ToolReturnType",
    "ToolReturnValue",
    "Toolset",
    "UnknownDisplayBlock",
    "Unparsed",
    "WrapperToolset",
    "combined",
    "dispatch",
    "filtered",
    "parse_arguments",
    "prefixed",
    "prepared",
    "renamed",
    "searchable",
    "tool",
    "with_json_arguments",
]
