"""The public surface is deliberate: each public module lists its API in a sorted `__all__`."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_MODULES = [
    "kosong",
    "kosong.message",
    "kosong.tooling",
    "kosong.tooling.error",
    "kosong.tooling.simple",
    "kosong.tooling.empty",
    "kosong.tooling.function",
    "kosong.tooling.langchain",
    "kosong.mcp",
    "kosong.mcp.client",
    "kosong.mcp.content",
    "kosong.mcp.events",
    "kosong.mcp.server",
    "kosong.utils.jsonschema",
    "kosong.utils.typing",
]

# What the foundation issue promises, module by module.
PROMISED = {
    "kosong.message": {
        "ContentPart", "TextPart", "ThinkPart", "ImageURLPart", "AudioURLPart", "VideoURLPart",
        "ToolCall", "ToolCallPart", "Message",
    },
    "kosong.tooling": {
        "Tool", "ParametersType", "ToolReturnValue", "ToolReturnType", "ToolOk", "ToolError",
        "DisplayBlock", "BriefDisplayBlock", "UnknownDisplayBlock", "CallableTool",
        "CallableTool2", "ToolResult", "ToolResultFuture", "HandleResult", "Toolset",
        "FunctionTool", "ToolException", "tool",
    },
    "kosong.tooling.error": {
        "ToolNotFoundError", "ToolParseError", "ToolValidateError", "ToolRuntimeError",
    },
    "kosong.tooling.simple": {"SimpleToolset"},
    "kosong.tooling.function": {"FunctionTool", "ToolException", "tool"},
    "kosong.tooling.langchain": {"from_langchain", "to_langchain"},
    "kosong.tooling.empty": {"EmptyToolset"},
    "kosong.utils.jsonschema": {"deref_json_schema"},
}  # fmt: skip


def _ruff_order(name: str) -> tuple[int, str]:
    # ruff's RUF022 ("isort-style"): CONSTANTS, then Classes, then functions and the rest.
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_every_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_ruff_order)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_promised_names_are_exported(name: str) -> None:
    module = importlib.import_module(name)
    assert PROMISED[name] <= set(module.__all__)


def test_public_classes_have_docstrings() -> None:
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if isinstance(obj, type):
                assert obj.__doc__, f"{name}.{attr} has no docstring"
