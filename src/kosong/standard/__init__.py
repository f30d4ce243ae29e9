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

from kosong.standard._binary import (
    INLINE_LIMIT,
    BinaryStore,
    FileBinaryStore,
    StoredObject,
    binary_data,
    binary_ok,
    decode_binary,
)
from kosong.standard._caller import (
    LOG_LEVELS,
    Caller,
    ElicitAnswer,
    Elicitor,
    LogLevel,
    caller_scope,
    elicit_with,
)
from kosong.standard._codes import (
    CATALOG,
    ErrorCode,
    ErrorSpec,
    coded_error,
    error_class_for,
    error_code,
    error_details,
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
from kosong.standard._digest import arguments_digest, canonical_json
from kosong.standard._envelope import (
    CacheInfo,
    Envelope,
    EnvelopeError,
    EnvelopeMetadata,
    from_envelope,
    to_envelope,
)
from kosong.standard._events import CallStream, EventSink, EventType, ToolEvent, final_event
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
    HookPolicy,
    Policy,
    PolicyToolset,
    RepairedArguments,
    with_policies,
)
from kosong.standard._strict import (
    SUPPORTED_FORMATS,
    StrictSchemaError,
    check_strict_schema,
    from_strict_arguments,
    to_strict_arguments,
    to_strict_schema,
)
from kosong.standard._tokens import (
    CHARS_PER_TOKEN,
    ContentKind,
    TokenCount,
    chars_for_tokens,
    count_tokens,
    estimate_tokens,
    guess_kind,
    load_encoding,
)
from kosong.standard._trace import (
    TRACE_ID_PATTERN,
    current_trace_id,
    new_trace_id,
    trace_scope,
    use_trace_id,
)
from kosong.standard._values import structured_data

__all__ = [
    "CATALOG",
    "CHARS_PER_TOKEN",
    "INLINE_LIMIT",
    "LOG_LEVELS",
    "RESERVED_METADATA",
    "SUPPORTED_FORMATS",
    "TRACE_ID_PATTERN",
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
    "Elicitor",
    "Envelope",
    "EnvelopeError",
    "EnvelopeMetadata",
    "ErrorCode",
    "ErrorSpec",
    "EventSink",
    "EventType",
    "FileBinaryStore",
    "Forward",
    "HookPolicy",
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
    "arguments_digest",
    "binary_data",
    "binary_ok",
    "caller_scope",
    "canonical_json",
    "chars_for_tokens",
    "check_compatibility",
    "check_strict_schema",
    "coded_error",
    "count_tokens",
    "current_call",
    "current_trace_id",
    "decode_binary",
    "decode_cursor",
    "elicit_with",
    "encode_cursor",
    "error_class_for",
    "error_code",
    "error_details",
    "estimate_tokens",
    "fetch_all_pages",
    "fetch_all_tool_pages",
    "final_event",
    "from_envelope",
    "from_strict_arguments",
    "guess_kind",
    "is_destructive",
    "is_read_only",
    "is_retryable",
    "is_safe_to_repeat",
    "is_sunset",
    "load_encoding",
    "new_trace_id",
    "paginate",
    "report_progress",
    "retry_after",
    "structured_data",
    "to_envelope",
    "to_strict_arguments",
    "to_strict_schema",
    "trace_scope",
    "use_trace_id",
    "with_policies",
]
