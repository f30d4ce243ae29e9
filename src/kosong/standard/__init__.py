"""The Tool Use interface standard, as a layer over any `Toolset`.

- Tool metadata: `Tool` and `CallableTool2` accept the standard's extension fields and MCP's
  behaviour hints (`kosong.standard.metadata`).
- Strict schemas: `to_strict_schema` (`kosong.standard.strict`).
- One JSON shape for every result: `Envelope`, `to_envelope`, `from_envelope`
  (`kosong.standard.envelope`), with the error-code catalog of `kosong.standard.codes`.
- A policy pipeline around any toolset: `with_policies(toolset, MetricsPolicy(), ...)`
  (`kosong.standard.pipeline`, policies in `kosong.standard.policies`), with trace ids
  (`kosong.standard.trace`), progress from inside tools (`report_progress`) and the events of a
  call (`PolicyToolset.stream`, `kosong.standard.events`).
- Helpers: cursor pagination, binary results, token estimates, and a compatibility checker
  between versions of a tool (`pagination`, `binary`, `tokens`, `compat`).
"""

from kosong.standard.codes import CATALOG, ErrorCode, ErrorSpec, coded_error, error_code
from kosong.standard.compat import CompatibilityReport, check_compatibility
from kosong.standard.context import CallContext, PolicyContext, current_call, report_progress
from kosong.standard.envelope import Envelope, attach_metadata, from_envelope, to_envelope
from kosong.standard.events import CallStream, ToolEvent
from kosong.standard.metadata import EstimatedTokens, TokenRange
from kosong.standard.pagination import Page, decode_cursor, encode_cursor, fetch_all_pages, paginate
from kosong.standard.pipeline import Policy, PolicyToolset, with_policies
from kosong.standard.strict import StrictSchemaError, to_strict_schema
from kosong.standard.tokens import count_tokens, estimate_tokens
from kosong.standard.trace import current_trace_id, new_trace_id, trace_scope

__all__ = [
    "CATALOG",
    "CallContext",
    "CallStream",
    "CompatibilityReport",
    "Envelope",
    "ErrorCode",
    "ErrorSpec",
    "EstimatedTokens",
    "Page",
    "Policy",
    "PolicyContext",
    "PolicyToolset",
    "StrictSchemaError",
    "TokenRange",
    "ToolEvent",
    "attach_metadata",
    "check_compatibility",
    "coded_error",
    "count_tokens",
    "current_call",
    "current_trace_id",
    "decode_cursor",
    "encode_cursor",
    "error_code",
    "estimate_tokens",
    "fetch_all_pages",
    "from_envelope",
    "new_trace_id",
    "paginate",
    "report_progress",
    "to_envelope",
    "to_strict_schema",
    "trace_scope",
    "with_policies",
]
