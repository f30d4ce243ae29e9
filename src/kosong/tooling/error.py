"""The errors a toolset returns on its own, as values (each one is a `ToolError`).

ToolError                       EXECUTION_ERROR: any failure a tool reports
├── ToolNotFoundError           TOOL_NOT_FOUND: the model named a tool that is not in the toolset
├── ToolParseError              INVALID_PARAMS: the arguments are not acceptable JSON
├── ToolValidateError           INVALID_PARAMS: the arguments do not fit the tool's parameters
├── ToolRuntimeError            EXECUTION_ERROR: the tool raised instead of returning
├── ToolCancelledError          CANCELLED: the call was cancelled before it finished
│
│   and the other failures of the Tool Use standard's error catalog (`kosong.standard`'s
│   `CATALOG` gives each code's HTTP status and whether a retry may help):
├── ToolTimeoutError            TIMEOUT: the call took too long and was stopped
├── ToolRateLimitedError        RATE_LIMITED: too many calls; may say when to retry
├── ToolNetworkError            NETWORK_ERROR: a service the tool needs is unreachable
├── ToolPermissionDeniedError   PERMISSION_DENIED: the call is not allowed (with the reason)
│   └── ToolDeferredError       the call waits for an answer from outside (see the class)
├── ToolUnauthorizedError       UNAUTHORIZED: the tool lacks valid credentials
├── ToolResourceNotFoundError   RESOURCE_NOT_FOUND: what the call names does not exist
├── ToolQuotaExceededError      QUOTA_EXCEEDED: a usage quota is spent
├── ToolDeprecatedError         TOOL_DEPRECATED: the tool is past its sunset date
└── ToolRepeatedCallError       REPEATED_CALL: the same call, again and again (a loop)

A result's error code is its class's `code`; a tool may give one of its own with
`kosong.standard.coded_error` (then it travels in `extras["standard"]["error"]["code"]`). The
details an error carries for the envelope (`retry_after`, `replacement`...) travel in
`extras["standard"]["error"]`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from kosong._deprecated import moved_names
from kosong._guard import Failed, call_guarded
from kosong._keys import STANDARD_KEY as _STANDARD_KEY  # the name left this module
from kosong.tooling._return_value import ToolError
from kosong.utils.typing import JsonType

__all__ = [
    "ToolCancelledError",
    "ToolDeferredError",
    "ToolDeprecatedError",
    "ToolNetworkError",
    "ToolNotFoundError",
    "ToolParseError",
    "ToolPermissionDeniedError",
    "ToolQuotaExceededError",
    "ToolRateLimitedError",
    "ToolRepeatedCallError",
    "ToolResourceNotFoundError",
    "ToolRuntimeError",
    "ToolTimeoutError",
    "ToolUnauthorizedError",
    "ToolValidateError",
    "describe_exception",
]


class ToolNotFoundError(ToolError):
    """The model called a tool the toolset does not have."""

    code: ClassVar[str] = "TOOL_NOT_FOUND"

    def __init__(self, tool_name: str) -> None:
        """Say which tool was not found."""
        text = f"Tool `{tool_name}` not found"
        super().__init__(message=text, brief=text)


class ToolParseError(ToolError):
    """The tool call's arguments could not be parsed as JSON (or broke a parsing limit)."""

    code: ClassVar[str] = "INVALID_PARAMS"

    def __init__(self, message: str) -> None:
        """Wrap the parser's explanation."""
        super().__init__(
            message=f"Error parsing JSON arguments: {message}", brief="Invalid arguments"
        )


class ToolValidateError(ToolError):
    """The arguments parsed but do not fit the tool's parameters."""

    code: ClassVar[str] = "INVALID_PARAMS"

    def __init__(self, message: str) -> None:
        """Wrap the validator's explanation, which names the offending field."""
        super().__init__(
            message=f"Error validating JSON arguments: {message}", brief="Invalid arguments"
        )


class ToolRuntimeError(ToolError):
    """The tool raised an exception instead of returning a value."""

    code: ClassVar[str] = "EXECUTION_ERROR"

    def __init__(self, message: str) -> None:
        """Wrap a description of what the tool raised (see `describe_exception`)."""
        super().__init__(message=f"Error running tool: {message}", brief="Tool runtime error")


class ToolCancelledError(ToolError):
    """The call was cancelled before it finished (CANCELLED, kosong's extension).

    Whoever cancels a call (its caller, a client that cancels a run, a server shutting down)
    ends it with this one error. The tool may or may not have done its work.
    """

    code: ClassVar[str] = "CANCELLED"

    def __init__(self, tool_name: str, reason: str | None = None) -> None:
        """Say which call was cancelled, and why when known."""
        text = f"The call to `{tool_name}` was cancelled before it finished"
        super().__init__(message=f"{text}: {reason}" if reason else text, brief="Cancelled")


def describe_exception(exc: BaseException) -> str:
    """`"TypeName: text"` for an exception, or just the type name when its text is empty.

    Never raises, even for an exception whose `__str__` itself fails.
    """
    name = type(exc).__name__
    text = call_guarded(str, exc)  # a broken __str__ must not hide the original error
    if isinstance(text, Failed):
        text = f"<str() failed with {type(text.error).__name__}>"
    return f"{name}: {text}" if text else name


def _error_extras(details: dict[str, JsonType]) -> dict[str, JsonType] | None:
    error: dict[str, JsonType] = {k: v for k, v in details.items() if v is not None}
    return {_STANDARD_KEY: {"error": error}} if error else None


class _CodedError(ToolError):
    """A ToolError of the standard's catalog with details for the envelope's `error`."""

    def __init__(self, message: str, brief: str, **details: JsonType) -> None:
        super().__init__(message=message, brief=brief, extras=_error_extras(details))


class ToolTimeoutError(_CodedError):
    """The call did not finish in time and was cancelled (TIMEOUT)."""

    code: ClassVar[str] = "TIMEOUT"

    def __init__(self, tool_name: str, seconds: float, *, what: str = "time limit") -> None:
        """Say which tool ran out of time, and which limit (`what`) it hit."""
        super().__init__(
            f"Tool `{tool_name}` did not finish within its {what} of {seconds:g} seconds "
            "and was stopped",
            "Tool timed out",
            timeout_seconds=seconds,
        )


class ToolRateLimitedError(_CodedError):
    """The tool, or a service it calls, refuses more calls for now (RATE_LIMITED).

    `retry_after` (seconds), when known, is when a retry may succeed; a retry policy waits that
    long instead of its own backoff.
    """

    code: ClassVar[str] = "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        """Explain the limit; give `retry_after` in seconds when the service said it."""
        if retry_after is not None and retry_after < 0:
            raise ValueError("retry_after cannot be negative")
        hint = f" (retry after {retry_after:g} seconds)" if retry_after is not None else ""
        super().__init__(f"{message}{hint}", "Rate limited", retry_after=retry_after)


class ToolNetworkError(_CodedError):
    """A service the tool depends on could not be reached (NETWORK_ERROR); worth retrying."""

    code: ClassVar[str] = "NETWORK_ERROR"

    def __init__(self, message: str) -> None:
        """Describe what could not be reached."""
        super().__init__(message, "Network error")


class ToolPermissionDeniedError(_CodedError):
    """The call is not allowed, for example refused by an approval hook (PERMISSION_DENIED)."""

    code: ClassVar[str] = "PERMISSION_DENIED"

    def __init__(self, tool_name: str, reason: str) -> None:
        """Say which tool was refused and why."""
        super().__init__(
            f"Permission denied for tool `{tool_name}`: {reason}",
            "Permission denied",
            reason=reason,
        )


class ToolDeferredError(ToolPermissionDeniedError):
    """The call did not run: it waits for an answer from outside the toolset.

    `kind` says whose: `"approval"` (an `ApprovalPolicy` hook answered
    `ApprovalDecision.defer(question)`: a person decides later) or `"external"` (the tool is
    declared `external`: the caller runs it, a browser say). `agent_loop` stops on it and
    returns the call as a `kosong.DeferredCall`, to be answered and resumed later; a server
    keeps its run waiting. Anywhere else nobody can answer, so it is what it is coded as: the
    call is not allowed (PERMISSION_DENIED). Its `question` and `kind` travel with the
    envelope's `error` details.
    """

    def __init__(
        self,
        tool_name: str,
        kind: Literal["approval", "external"],
        question: str,
        *,
        within: float | None = None,
    ) -> None:
        """Say which call waits, for whom (`kind`), and on what `question`.

        `within`: how many seconds an answer may take before the call is denied (None: no
        limit).
        """
        reason = (
            f"the call waits for an answer to {question!r}, and nobody can answer here"
            if kind == "approval"
            else "the tool is external: its caller runs it, and no caller here can"
        )
        _CodedError.__init__(
            self,
            f"Permission denied for tool `{tool_name}`: {reason}",
            "Waiting for an answer",
            reason=reason,
            deferred=kind,
            question=question,
            within=within,
        )

    @property
    def kind(self) -> Literal["approval", "external"]:
        """Whose answer the call waits for: a person's approval, or the caller running it."""
        return "external" if self._detail("deferred") == "external" else "approval"

    @property
    def question(self) -> str:
        """What the answer is to (for an external tool, its description of the call)."""
        return str(self._detail("question") or "")

    @property
    def within(self) -> float | None:
        """Seconds an answer may take before the call is denied (None: no limit)."""
        within = self._detail("within")
        return float(within) if isinstance(within, int | float) else None

    def _detail(self, name: str) -> JsonType:
        standard = (self.extras or {}).get(_STANDARD_KEY)
        error = standard.get("error") if isinstance(standard, dict) else None
        return error.get(name) if isinstance(error, dict) else None


class ToolUnauthorizedError(_CodedError):
    """The tool has no valid credentials for what it calls (UNAUTHORIZED)."""

    code: ClassVar[str] = "UNAUTHORIZED"

    def __init__(self, message: str) -> None:
        """Describe which credentials are missing or rejected."""
        super().__init__(message, "Unauthorized")


class ToolResourceNotFoundError(_CodedError):
    """What the call names (a file, a record, a city) does not exist (RESOURCE_NOT_FOUND)."""

    code: ClassVar[str] = "RESOURCE_NOT_FOUND"

    def __init__(self, message: str) -> None:
        """Say what was not found."""
        super().__init__(message, "Not found")


class ToolQuotaExceededError(_CodedError):
    """A usage quota is spent; retrying will not help until it is raised (QUOTA_EXCEEDED)."""

    code: ClassVar[str] = "QUOTA_EXCEEDED"

    def __init__(self, message: str) -> None:
        """Say which quota is spent."""
        super().__init__(message, "Quota exceeded")


class ToolDeprecatedError(_CodedError):
    """The tool is past its sunset date (TOOL_DEPRECATED); the message names what replaces it."""

    code: ClassVar[str] = "TOOL_DEPRECATED"

    def __init__(
        self,
        tool_name: str,
        *,
        replacement: str | None = None,
        sunset_date: str | None = None,
        migration_guide: str | None = None,
    ) -> None:
        """Say that `tool_name` is retired, and what to use instead."""
        text = f"Tool `{tool_name}` is deprecated"
        if sunset_date:
            text += f" and was retired on {sunset_date}"
        text += f"; use `{replacement}` instead" if replacement else "; no replacement is named"
        if migration_guide:
            text += f" (migration guide: {migration_guide})"
        super().__init__(
            text,
            "Tool deprecated",
            replacement=replacement,
            sunset_date=sunset_date,
            migration_guide=migration_guide,
        )


class ToolRepeatedCallError(_CodedError):
    """The model made the same call, with the same arguments, too many times (REPEATED_CALL).

    Models sometimes loop on one call; this error tells the model so, instead of running the
    tool yet again.
    """

    code: ClassVar[str] = "REPEATED_CALL"

    def __init__(self, tool_name: str, count: int) -> None:
        """Say which tool was called again, and how many identical calls came before."""
        super().__init__(
            f"Tool `{tool_name}` was already called {count} times with exactly these arguments; "
            "calling it again will not give a different result. Use the results you already "
            "have, change the arguments, or take another approach.",
            "Repeated call blocked",
            previous_calls=count,
        )


__getattr__ = moved_names(
    __name__,
    {
        "STANDARD_KEY": ("kosong.standard", "import it from `kosong.standard`"),
        "unhandled_result": ("kosong.tooling._dispatch", "`BaseToolset.handle` never raises"),
    },
)
