"""The error codes of the Tool Use standard (appendix A), and the code of any result.

`CATALOG` is the one table of codes: each entry's HTTP status, whether a retry may help, and
the result class that stands for it. A result's code is its class's `code` (a validation
error is INVALID_PARAMS, an unknown tool TOOL_NOT_FOUND...), unless it carries a code of its
own (`coded_error`: tools may use codes outside the catalog, as the standard's examples use
CITY_NOT_FOUND; those are not retryable unless the error says so). `error_code` and
`is_retryable` are the only readers: the envelope, the server and the MCP server ask them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, cast

from kosong.standard._values import STANDARD_KEY, standard_part
from kosong.tooling import ToolError, ToolResult, ToolReturnValue
from kosong.tooling import error as errors
from kosong.tooling.error import (
    ToolCancelledError,
    ToolNetworkError,
    ToolNotFoundError,
    ToolRuntimeError,
    ToolTimeoutError,
    ToolValidateError,
)
from kosong.utils.typing import JsonType

__all__ = [
    "CATALOG",
    "ErrorCode",
    "ErrorSpec",
    "coded_error",
    "error_class_for",
    "error_code",
    "error_details",
    "is_retryable",
    "retry_after",
]


class ErrorCode(StrEnum):
    """The error codes of the standard's catalog, and kosong's one extension."""

    INVALID_PARAMS = "INVALID_PARAMS"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    RESOURCE_NOT_FOUND = "RESOURCE_NOT_FOUND"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAUTHORIZED = "UNAUTHORIZED"
    TIMEOUT = "TIMEOUT"
    RATE_LIMITED = "RATE_LIMITED"
    NETWORK_ERROR = "NETWORK_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    TOOL_DEPRECATED = "TOOL_DEPRECATED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    REPEATED_CALL = "REPEATED_CALL"
    """kosong's extension: the repeat guard stopped a call the model keeps making."""
    CANCELLED = "CANCELLED"
    """kosong's extension: the call was cancelled before it finished."""


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """One entry of the catalog."""

    code: ErrorCode
    """The code."""
    description: str
    """What it means."""
    http_status: int
    """The HTTP status a service answers with."""
    retryable: bool
    """Whether calling again may succeed."""
    error_class: type[ToolError]
    """The kosong result class that stands for it."""
    in_standard: bool = True
    """False for kosong's extensions, which appendix A does not list."""


CATALOG: Mapping[str, ErrorSpec] = MappingProxyType(
    {
        spec.code.value: spec
        for spec in (
            ErrorSpec(ErrorCode.INVALID_PARAMS, "parameter validation failed", 400, False,
                      ToolValidateError),
            ErrorSpec(ErrorCode.TOOL_NOT_FOUND, "the tool does not exist", 404, False,
                      ToolNotFoundError),
            ErrorSpec(ErrorCode.RESOURCE_NOT_FOUND, "the resource does not exist", 404, False,
                      errors.ToolResourceNotFoundError),
            ErrorSpec(ErrorCode.PERMISSION_DENIED, "not permitted", 403, False,
                      errors.ToolPermissionDeniedError),
            ErrorSpec(ErrorCode.UNAUTHORIZED, "not authenticated", 401, False,
                      errors.ToolUnauthorizedError),
            ErrorSpec(ErrorCode.TIMEOUT, "the call timed out", 504, True, ToolTimeoutError),
            ErrorSpec(ErrorCode.RATE_LIMITED, "rate limit reached", 429, True,
                      errors.ToolRateLimitedError),
            ErrorSpec(ErrorCode.NETWORK_ERROR, "network failure", 503, True, ToolNetworkError),
            ErrorSpec(ErrorCode.EXECUTION_ERROR, "the tool failed", 500, False, ToolRuntimeError),
            ErrorSpec(ErrorCode.TOOL_DEPRECATED, "the tool is retired", 410, False,
                      errors.ToolDeprecatedError),
            ErrorSpec(ErrorCode.QUOTA_EXCEEDED, "quota spent", 429, False,
                      errors.ToolQuotaExceededError),
            ErrorSpec(ErrorCode.REPEATED_CALL, "the same call was repeated too often", 429,
                      False, errors.ToolRepeatedCallError, in_standard=False),
            # 499: nginx's "client closed request"; no standard status says "cancelled".
            ErrorSpec(ErrorCode.CANCELLED, "the call was cancelled", 499, False,
                      ToolCancelledError, in_standard=False),
        )
    }
)  # fmt: skip
"""Every code of appendix A (and kosong's extensions REPEATED_CALL and CANCELLED), by code."""


def error_code(value: ToolReturnValue | ToolResult) -> str | None:
    """The error code of a result (None for a success): its own code, else its class's."""
    if isinstance(value, ToolResult):
        value = value.return_value
    if not value.is_error:
        return None
    error = standard_part(value).get("error")
    code = cast(dict[str, Any], error).get("code") if isinstance(error, dict) else None
    if isinstance(code, str) and code:
        return code
    own: object = getattr(type(value), "code", None)
    return own if isinstance(own, str) else ErrorCode.EXECUTION_ERROR.value


def error_details(value: ToolReturnValue | ToolResult) -> dict[str, JsonType]:
    """The details an error carries besides its code (retry_after, replacement, reason...)."""
    if isinstance(value, ToolResult):
        value = value.return_value
    error = standard_part(value).get("error")
    if not isinstance(error, dict):
        return {}
    return {k: v for k, v in error.items() if k != "code"}  # pyright: ignore[reportUnknownVariableType]


def is_retryable(value: ToolReturnValue | ToolResult) -> bool:
    """Whether calling again may succeed: the error's own `retryable`, else its catalog entry."""
    if isinstance(value, ToolResult):
        value = value.return_value
    if not value.is_error:
        return False
    own = error_details(value).get("retryable")
    if isinstance(own, bool):
        return own
    spec = CATALOG.get(error_code(value) or "")
    return spec.retryable if spec is not None else False


def retry_after(value: ToolReturnValue | ToolResult) -> float | None:
    """The seconds an error asks the caller to wait before retrying, if it says."""
    seconds = error_details(value).get("retry_after")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
        return float(seconds)
    return None


def error_class_for(code: str) -> type[ToolError]:
    """The result class that stands for `code` (ToolError for a code outside the catalog)."""
    spec = CATALOG.get(code)
    return spec.error_class if spec is not None else ToolError


def coded_error(
    code: str,
    message: str,
    *,
    brief: str = "",
    retryable: bool | None = None,
    **details: JsonType,
) -> ToolError:
    """A ToolError with an error code, for a tool to return.

    Example:
        `coded_error("CITY_NOT_FOUND", "City 'XYZ' is not covered")`

    Args:
        code: Any code: one of the catalog's, or the tool's own (upper snake case).
        message: The explanation for the model.
        brief: A short line for the user interface.
        retryable: Whether a retry may help; by default the catalog's answer (False for codes
            outside it).
        **details: More JSON details for the envelope's `error` object.
    """
    if not code or not code.replace("_", "").isalnum() or code != code.upper():
        raise ValueError(f"error code {code!r} must be UPPER_SNAKE_CASE, e.g. 'CITY_NOT_FOUND'")
    error: dict[str, JsonType] = {"code": code}
    if retryable is not None:
        error["retryable"] = retryable
    error.update({k: v for k, v in details.items() if v is not None})
    return ToolError(message=message, brief=brief, extras={STANDARD_KEY: {"error": error}})
