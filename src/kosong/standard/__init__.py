"""The Tool Use interface standard, as a layer over any `Toolset`.

Every public name of the standard is imported from here (the policies from
`kosong.standard.policies`):

- Tool metadata lives on `Tool` and `CallableTool2` (`kosong.tooling.ToolMetadata`); the
  questions policies ask of it are `is_read_only`, `is_safe_to_repeat`, `is_destructive`,
  `is_sunset`.
- Strict schemas for OpenAI: `to_strict_schema`, `check_strict_schema`, and the arguments
  both ways (`to_strict_arguments`, `from_strict_arguments`).
- One JSON shape for every result: `Envelope`, `to_envelope`, `from_envelope`, with the
  error-code catalog (`CATALOG`, `ErrorCode`, `error_code`, `coded_error`...) and a result's
  typed value (`structured_data`: the envelope's `data`, MCP's `structuredContent`).
- A policy pipeline around any toolset: `with_policies(toolset, MetricsPolicy(), ...)`,
  `Policy`, `PolicyToolset`, the call's contexts (`CallContext` for tools, `PolicyContext`
  for policies), progress (`report_progress`), what reaches back to whoever made the call
  (`CallContext.elicit`, `.sample`, `.log`, through a `Caller` in `caller_scope`), trace ids
  (`trace_scope`...), and the events
  of a call (`PolicyToolset.stream`, `ToolEvent`).
- Helpers: cursor pagination, binary results, token estimates, and a compatibility checker
  between versions of a tool.
"""

from kosong._deprecated import moved_names
from kosong._keys import STANDARD_KEY
from kosong.standard._binary import (
    BinaryStore,
    FileBinaryStore,
    StoredObject,
    binary_data,
    binary_ok,
    decode_binary,
)

# kosong's other packages import these from here (a package's private modules are its own);
# they are not public, so not in `__all__`.
from kosong.standard._caller import LOG_LEVELS as LOG_LEVELS
from kosong.standard._caller import (
    Caller,
    ElicitAnswer,
    LogLevel,
    caller_scope,
)
from kosong.standard._codes import (
    CATALOG,
    ErrorCode,
    ErrorSpec,
    coded_error,
    error_code,
    is_retryable,
    retry_after,
)
from kosong.standard._compatibility import (
    Change,
    ChangeKind,
    CompatibilityReport,
    check_compatibility,
)
from kosong.standard._context import (
    RESERVED_METADATA,
    CallContext,
    CallMetadata,
    PolicyContext,
    current_call,
    report_progress,
)
from kosong.standard._digest import canonical_json as canonical_json
from kosong.standard._envelope import (
    CacheInfo,
    Envelope,
    EnvelopeError,
    EnvelopeMetadata,
    from_envelope,
    to_envelope,
)
from kosong.standard._events import CallStream, EventSink, EventType, ToolEvent
from kosong.standard._hints import is_destructive, is_read_only, is_safe_to_repeat, is_sunset
from kosong.standard._pagination import (
    CursorError,
    Page,
    PageFetchError,
    PageInfo,
    decode_cursor,
    encode_cursor,
    fetch_all_pages,
    fetch_all_tool_pages,
    paginate,
)
from kosong.standard._pipeline import (
    Forward,
    Policy,
    PolicyToolset,
    RepairedArguments,
    with_policies,
)
from kosong.standard._strict import (
    StrictSchemaError,
    check_strict_schema,
    from_strict_arguments,
    to_strict_arguments,
    to_strict_schema,
)
from kosong.standard._tokens import (
    ContentKind,
    TokenCount,
    count_tokens,
    estimate_tokens,
)
from kosong.standard._trace import (
    current_trace_id,
    new_trace_id,
    trace_scope,
)
from kosong.standard._values import structured_data

__all__ = [
    "CATALOG",
    "RESERVED_METADATA",
    "STANDARD_KEY",
    "BinaryStore",
    "CacheInfo",
    "CallContext",
    "CallMetadata",
    "CallStream",
    "Caller",
    "Change",
    "ChangeKind",
    "CompatibilityReport",
    "ContentKind",
    "CursorError",
    "ElicitAnswer",
    "Envelope",
    "EnvelopeError",
    "EnvelopeMetadata",
    "ErrorCode",
    "ErrorSpec",
    "EventSink",
    "EventType",
    "FileBinaryStore",
    "Forward",
    "LogLevel",
    "Page",
    "PageFetchError",
    "PageInfo",
    "Policy",
    "PolicyContext",
    "PolicyToolset",
    "RepairedArguments",
    "StoredObject",
    "StrictSchemaError",
    "TokenCount",
    "ToolEvent",
    "binary_data",
    "binary_ok",
    "caller_scope",
    "check_compatibility",
    "check_strict_schema",
    "coded_error",
    "count_tokens",
    "current_call",
    "current_trace_id",
    "decode_binary",
    "decode_cursor",
    "encode_cursor",
    "error_code",
    "estimate_tokens",
    "fetch_all_pages",
    "fetch_all_tool_pages",
    "from_envelope",
    "from_strict_arguments",
    "is_destructive",
    "is_read_only",
    "is_retryable",
    "is_safe_to_repeat",
    "is_sunset",
    "new_trace_id",
    "paginate",
    "report_progress",
    "retry_after",
    "structured_data",
    "to_envelope",
    "to_strict_arguments",
    "to_strict_schema",
    "trace_scope",
    "with_policies",
]

__getattr__ = moved_names(
    __name__,
    {
        "arguments_digest": ("._digest", "read `PolicyContext.arguments_key`"),
        "final_event": ("._events", "the last event of a `CallStream` is the result"),
        "use_trace_id": ("._trace", "use `trace_scope(trace_id)`"),
        "load_encoding": ("._tokens", "use `count_tokens`, which loads the encoding"),
        "HookPolicy": ("._pipeline:Policy", "use `Policy` (HookPolicy was another name of it)"),
        "TRACE_ID_PATTERN": ("._trace", "`new_trace_id()` makes trace ids"),
        "CHARS_PER_TOKEN": ("._tokens", "use `estimate_tokens`"),
        "guess_kind": ("._tokens", "use `estimate_tokens`, which guesses the kind"),
        "chars_for_tokens": ("._tokens", "use `policies.TruncationPolicy` to cut to a budget"),
        "INLINE_LIMIT": ("._binary", "pass `inline_limit=` to `binary_data` or `binary_ok`"),
        "SUPPORTED_FORMATS": ("._strict", "`check_strict_schema` names a format it refuses"),
        "error_class_for": ("._codes", "use `from_envelope`, which picks the class"),
        "error_details": ("._codes", "read `to_envelope(result).error`"),
        "elicit_with": ("._caller", "give a `Caller` with `caller_scope`"),
        "Elicitor": ("._caller", "implement `Caller.elicit`; give it with `caller_scope`"),
    },
)
