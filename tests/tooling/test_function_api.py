"""The public surface of function tools: exports, docstrings, and types a checker sees.

The `assert_type` lines do nothing at run time; pyright checks them, so a signature change that
would break users' types fails the type check.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, assert_type

from kosong.tooling import (
    CallableTool2,
    FunctionTool,
    Injected,
    ResponseFormat,
    ToolErrorHandler,
    ToolException,
    ToolOptions,
    tool,
)
from kosong.tooling.simple import SimpleToolset, ToolType


def test_the_three_names_are_exported_from_kosong_tooling() -> None:
    tooling = importlib.import_module("kosong.tooling")
    assert {"FunctionTool", "ToolException", "tool"} <= set(tooling.__all__)
    assert issubclass(ToolException, Exception)
    assert issubclass(FunctionTool, CallableTool2)


async def test_types_seen_by_a_checker() -> None:
    @tool
    def bare(a: int) -> int:
        """Bare."""
        return a

    @tool("named", return_direct=True)
    def named(a: int, ctx: Injected[dict[str, int]]) -> int:
        """Named."""
        return a + ctx["k"]

    decorator = tool(parse_docstring=False, response_format="content")
    assert_type(decorator, Callable[[Callable[..., Any]], FunctionTool])
    assert_type(bare, FunctionTool)
    assert_type(named, FunctionTool)
    assert_type(named.inject(ctx={"k": 1}), FunctionTool)
    assert_type(bare.invoke({"a": 1}), Any)
    assert_type(await bare.ainvoke({"a": 1}), Any)
    assert_type(bare.return_direct, bool)
    assert_type(bare.response_format, ResponseFormat)
    assert_type(bare.handle_tool_error, ToolErrorHandler)
    assert_type(bare.args, dict[str, Any])
    options: ToolOptions = {"name": "x", "field_descriptions": {"a": "A"}}
    made = FunctionTool.from_function(bare.func, **options)
    assert_type(made, FunctionTool)
    as_tool: ToolType = made  # SimpleToolset takes it as it takes any CallableTool2
    assert SimpleToolset([as_tool]).tools == [made.base]
    assert named.inject(ctx={"k": 1}).invoke({"a": 1}) == 2
