"""Shared pieces of `CallableTool.call` and `CallableTool2.call` (private)."""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Sequence
from itertools import islice
from typing import Any

import jsonschema_rs
from pydantic import ValidationError

from kosong.tooling._return_value import ToolError, ToolReturnValue
from kosong.tooling.error import ToolDeferredError

__all__ = [
    "MAX_REPORTED_ERRORS",
    "calls_in_thread",
    "checked_return",
    "deferred_to_caller",
    "json_path",
    "jsonschema_errors_text",
    "pydantic_errors_text",
    "short_json",
    "unknown_argument_text",
]

MAX_REPORTED_ERRORS = 5
"""How many validation errors one message lists; the model fixes them all in one retry."""


def calls_in_thread(cls: type) -> bool:
    """Whether `cls.__call__` is a plain function, to be run in a worker thread.

    Decided once per class (stored on it), since this sits on every call's path.
    """
    in_thread: bool | None = cls.__dict__.get("__kosong_calls_in_thread__")
    if in_thread is None:
        in_thread = not inspect.iscoroutinefunction(cls.__call__)
        type.__setattr__(cls, "__kosong_calls_in_thread__", in_thread)
    return in_thread


def checked_return(tool_name: str, value: object) -> ToolReturnValue:
    """`value` if it is a ToolReturnValue, else a ToolError saying what the tool returned."""
    if isinstance(value, ToolReturnValue):
        return value
    return ToolError(
        message=(
            f"Tool `{tool_name}` returned a {type(value).__name__}, not a ToolReturnValue; "
            "its implementation must return ToolOk(...) or ToolError(...)"
        ),
        brief="Invalid tool result",
    )


def deferred_to_caller(tool_name: str) -> ToolDeferredError:
    """What a call of an external tool answers once its arguments are valid (see `external`)."""
    return ToolDeferredError(tool_name, "external", "")


def json_path(loc: Sequence[Any]) -> str:
    """`location.latitude`, `items[0]`, `["max-results"]`: where in the arguments."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{str(part)!r}]"
    return out


def short_json(value: Any) -> str:
    """`value` as JSON (`null`, `true`: what the model wrote), shortened; repr if not JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def jsonschema_errors_text(
    validator: jsonschema_rs.Validator, instance: Any, *, only_unknown: bool = False
) -> str:
    """Every (up to a few) schema violation of `instance`, each with where it is.

    With `only_unknown`, only the undeclared properties ("" when there are none).
    """
    errors = validator.iter_errors(instance)
    if only_unknown:
        unknown = jsonschema_rs.ValidationErrorKind.AdditionalProperties
        errors = (e for e in errors if isinstance(e.kind, unknown))
    lines: list[str] = []
    for error in islice(errors, MAX_REPORTED_ERRORS):
        where = json_path(error.instance_path)
        lines.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(lines)


def pydantic_errors_text(error: ValidationError, parameters: Sequence[str] = ()) -> str:
    """Every (up to a few) pydantic error, each with the field it is about.

    Values are shown as JSON. `parameters` (the tool's parameter names) are named when an
    argument is unknown, with the closest one, since that is usually a typo. The arguments
    model's own name (a class of kosong's or of the tool) never appears.
    """
    details = error.errors(include_url=False, include_context=False)
    lines: list[str] = []
    for detail in details[:MAX_REPORTED_ERRORS]:
        where = json_path(detail["loc"])
        kind = detail["type"]
        text = detail["msg"]
        if kind == "extra_forbidden" and len(detail["loc"]) == 1:
            lines.append(unknown_argument_text(str(detail["loc"][0]), detail["input"], parameters))
            continue
        if not detail["loc"] and kind in ("model_type", "model_attributes_type", "dict_type"):
            text = "the arguments must be a JSON object of the tool's parameters"
        if kind != "missing":
            text += f" (got {short_json(detail['input'])})"
        lines.append(f"{where}: {text}" if where else text)
    if len(details) > MAX_REPORTED_ERRORS:
        lines.append(f"and {len(details) - MAX_REPORTED_ERRORS} more")
    return "; ".join(lines)


def unknown_argument_text(name: str, value: Any, parameters: Sequence[str]) -> str:
    """What the model reads about an argument `name` that is not one of `parameters`."""
    text = f"{json_path([name])}: not a parameter of this tool (got {short_json(value)})"
    if not parameters:
        return f"{text}; it takes no arguments"
    close = difflib.get_close_matches(name, parameters, n=1)
    listed = ", ".join(parameters)
    if close:
        return f"{text}; did you mean `{close[0]}`? Its parameters: {listed}"
    return f"{text}; its parameters: {listed}"
