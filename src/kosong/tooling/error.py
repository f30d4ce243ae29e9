"""The errors a toolset returns on its own, as values (each one is a `ToolError`).

    ToolError
    ├── ToolNotFoundError   the model named a tool that is not in the toolset
    ├── ToolParseError      the arguments are not acceptable JSON
    ├── ToolValidateError   the arguments do not fit the tool's parameters
    └── ToolRuntimeError    the tool raised instead of returning
"""

from __future__ import annotations

from kosong.tooling._return import ToolError

__all__ = [
    "ToolNotFoundError",
    "ToolParseError",
    "ToolRuntimeError",
    "ToolValidateError",
    "describe_exception",
]


class ToolNotFoundError(ToolError):
    """The model called a tool the toolset does not have."""

    def __init__(self, tool_name: str) -> None:
        """Say which tool was not found."""
        text = f"Tool `{tool_name}` not found"
        super().__init__(message=text, brief=text)


class ToolParseError(ToolError):
    """The tool call's arguments could not be parsed as JSON (or broke a parsing limit)."""

    def __init__(self, message: str) -> None:
        """Wrap the parser's explanation."""
        super().__init__(
            message=f"Error parsing JSON arguments: {message}", brief="Invalid arguments"
        )


class ToolValidateError(ToolError):
    """The arguments parsed but do not fit the tool's parameters."""

    def __init__(self, message: str) -> None:
        """Wrap the validator's explanation, which names the offending field."""
        super().__init__(
            message=f"Error validating JSON arguments: {message}", brief="Invalid arguments"
        )


class ToolRuntimeError(ToolError):
    """The tool raised an exception instead of returning a value."""

    def __init__(self, message: str) -> None:
        """Wrap a description of what the tool raised (see `describe_exception`)."""
        super().__init__(message=f"Error running tool: {message}", brief="Tool runtime error")


def describe_exception(exc: BaseException) -> str:
    """`"TypeName: text"` for an exception, or just the type name when its text is empty.

    Never raises, even for an exception whose `__str__` itself fails.
    """
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception as str_failure:  # a broken __str__ must not hide the original error
        text = f"<str() failed with {type(str_failure).__name__}>"
    return f"{name}: {text}" if text else name
