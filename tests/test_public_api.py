"""The public surface is deliberate.

`PUBLIC` lists every public module and exactly the names its `__all__` exports: adding or
removing a public name fails this test until it is written here too (an API decision, visible
in review). Each name has one import path: no two public modules export the same name. Every
other module of kosong is private (a leading underscore) or not importable on its own.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import kosong

PUBLIC: dict[str, list[str]] = {
    "kosong": [
        "AgentLoopResult", "AgentState", "AgentStep", "Approve", "DeferredCall", "Deny",
        "GenerateResult", "OutputRetriesExhausted", "StepResult", "StopReason",
        "ToolRetriesExhausted", "__version__", "agent_loop", "generate", "step",
        "tool_result_to_message",
    ],
    "kosong.chat_provider": [
        "APIConnectionError", "APIEmptyResponseError", "APIStatusError", "APITimeoutError",
        "AllowedTools", "ChatProvider", "ChatProviderError", "OutputSchema",
        "RetryableChatProvider", "StreamedMessage", "StreamedMessagePart", "ThinkingEffort",
        "TokenUsage", "ToolChoice",
    ],
    "kosong.chat_provider.anthropic": [
        "THINKING_BUDGETS", "THINKING_MODELS", "Anthropic", "ThinkingSpec", "clamped_effort",
        "thinking_spec",
    ],
    "kosong.chat_provider.gemini": [
        "DEFAULT_GEMINI_BASE_URL", "DEFAULT_GEMINI_MODEL", "GEMINI_THINKING_BUDGETS", "MODELS",
        "Gemini", "ModelSpec", "model_spec",
    ],
    "kosong.chat_provider.kimi": [
        "DEFAULT_BASE_URL", "DEFAULT_MODEL", "KIMI_MODELS", "Kimi", "KimiSpec",
    ],
    "kosong.chat_provider.mock": ["MockChatProvider"],
    "kosong.chat_provider.native": [
        "CodeExecution", "FileSearch", "MCPConnector", "NativeEntries", "NativeTool",
        "NativeToolSpec", "UrlContext", "WebFetch", "WebSearch", "native_entries",
    ],
    "kosong.chat_provider.openai": ["OpenAIChat", "OpenAIResponses"],
    "kosong.chat_provider.scripted": [
        "ScriptItem", "ScriptedChatProvider", "ScriptedRequest", "Turn", "call",
    ],
    "kosong.dialects": [
        "DIALECTS", "SOURCES", "Dialect", "DialectError", "DialectReport", "Effect", "Finding",
        "check_tools", "fix_schema", "fix_tool",
    ],
    "kosong.formats": [
        "GEMINI_SCHEMA_KEYS", "from_anthropic_tool", "from_gemini_function_declaration",
        "from_mcp_tool", "from_openai_chat_tool", "from_openai_responses_tool",
        "to_anthropic_tool", "to_gemini_function_declaration", "to_gemini_schema", "to_mcp_tool",
        "to_openai_chat_tool", "to_openai_responses_tool",
    ],
    "kosong.message": [
        "AudioURLPart", "ContentPart", "ImageURLPart", "Message", "NativeToolPart", "Role",
        "TextPart", "ThinkPart", "ToolCall", "ToolCallPart", "VideoURLPart",
    ],
    "kosong.telemetry": ["CAPTURE_VARIABLE", "configure", "enabled"],
    "kosong.testing": ["RecordingListener", "ScriptedTool", "make_call"],
    "kosong.tooling": [
        "SEARCH_TOOL_NAME", "UNPARSED", "ArgumentLimits", "BaseToolset",
        "BriefDisplayBlock", "CallableTool", "CallableTool2", "CombinedToolset",
        "DisplayBlock", "EstimatedTokens", "FilteredToolset", "FreeformTool",
        "FunctionTool", "Grammar", "HandleResult", "Injected", "ParametersType",
        "PrefixedToolset", "PreparedToolset", "RenamedToolset", "ResponseFormat",
        "SearchableToolset", "TokenRange", "Tool", "ToolError", "ToolErrorHandler",
        "ToolException", "ToolMetadata", "ToolOk", "ToolOptions", "ToolOutput",
        "ToolResult", "ToolResultFuture", "ToolReturnType", "ToolReturnValue", "Toolset",
        "UnknownDisplayBlock", "Unparsed", "WrapperToolset", "combined", "filtered",
        "prefixed", "prepared", "renamed", "searchable", "tool",
    ],
    "kosong.tooling.error": [
        "ToolCancelledError", "ToolDeferredError", "ToolDeprecatedError", "ToolNetworkError",
        "ToolNotFoundError", "ToolParseError", "ToolPermissionDeniedError",
        "ToolQuotaExceededError", "ToolRateLimitedError", "ToolRepeatedCallError",
        "ToolResourceNotFoundError", "ToolRuntimeError", "ToolTimeoutError",
        "ToolUnauthorizedError", "ToolValidateError", "describe_exception",
    ],
    "kosong.tooling.simple": ["SimpleToolset", "ToolType"],
    "kosong.tooling.empty": ["EmptyToolset"],
    "kosong.tooling.langchain": ["from_langchain", "to_langchain"],
    "kosong.standard": [
        "CATALOG", "RESERVED_METADATA", "STANDARD_KEY", "BinaryStore", "CacheInfo",
        "CallContext", "CallMetadata", "CallStream", "Caller", "Change", "ChangeKind",
        "CompatibilityReport", "ContentKind", "CursorError", "ElicitAnswer", "Envelope",
        "EnvelopeError", "EnvelopeMetadata", "ErrorCode", "ErrorSpec", "EventSink",
        "EventType", "FileBinaryStore", "Forward", "LogLevel", "Page", "PageFetchError",
        "PageInfo", "Policy", "PolicyContext", "PolicyToolset", "RepairedArguments",
        "StoredObject", "StrictSchemaError", "TokenCount", "ToolEvent", "binary_data",
        "binary_ok", "caller_scope", "check_compatibility", "check_strict_schema",
        "coded_error", "count_tokens", "current_call", "current_trace_id", "decode_binary",
        "decode_cursor", "encode_cursor", "error_code", "estimate_tokens",
        "fetch_all_pages", "fetch_all_tool_pages", "from_envelope", "from_strict_arguments",
        "is_destructive", "is_read_only", "is_retryable", "is_safe_to_repeat", "is_sunset",
        "new_trace_id", "paginate", "report_progress", "retry_after", "structured_data",
        "to_envelope", "to_strict_arguments", "to_strict_schema", "trace_scope",
        "with_policies",
    ],
    "kosong.standard.policies": [
        "DEFAULT_RULES", "UNKNOWN_TOOL", "ApprovalDecision", "ApprovalHook", "ApprovalInbox",
        "ApprovalPolicy", "ApprovalRequest", "CacheBackend", "CacheEntry", "CachePolicy",
        "ConcurrencyPolicy",
        "ContinuationStore", "DebugPolicy", "DeprecationPolicy", "EventHookPolicy",
        "MemoryCache", "MemoryContinuationStore", "MetricsPolicy", "MetricsRegistry",
        "RedisCache", "RepairPolicy", "RepeatGuardPolicy", "RetryPolicy", "RetryRule",
        "SingleFlightPolicy", "TimeoutPolicy", "ToolMetrics", "TracingPolicy",
        "TruncationPolicy", "inbox_scope",
    ],
    "kosong.mcp": [
        "ElicitationRequest", "MCPTool", "MCPToolServer", "MCPToolset", "ResourcePart",
        "SamplingRequest", "ServerSpec", "SessionEventStore", "ask_user_to_approve",
        "mcp_request",
    ],
    "kosong.utils.jsonschema": [
        "KNOWN_DRAFTS",
        "check_offline",
        "deref_json_schema",
        "map_subschemas",
        "resolve_ref",
        "walk_schema",
    ],
    "kosong.utils.typing": ["JsonType"],
    "kosong.utils.dates_and_versions": [
        "SEMVER_PATTERN", "SemVer", "parse_iso8601", "parse_semver",
    ],
    "kosong.server": [
        "DEFAULT_MAX_BODY", "LOCAL_HOSTS", "IntrospectionVerifier", "JWTVerifier",
        "MemoryRateLimiter", "RateLimit", "RateLimiter", "Server", "ServerConfig", "TokenVerifier",
        "as_toolset", "bind", "create_app", "query_arguments", "serve", "serving",
        "work",
    ],
    "kosong.server.redis_limits": ["RedisRateLimiter"],
    "kosong.eventstore": [
        "START", "Executor", "IdempotencyConflictError", "MemoryRunStore", "QueueFullError",
        "RunNotFoundError", "RunRecord", "RunStatus", "RunStore", "Runs", "ShuttingDownError",
        "StoreFullError", "StoreUnavailableError", "StoredEvent", "event_id", "split_event_id",
    ],
    "kosong.eventstore.redis_store": ["RedisRunStore", "connect", "reachable"],
    "kosong.remote": ["RemoteToolset"],
    "kosong.cli": ["main"],
}  # fmt: skip


def _ruff_order(name: str) -> tuple[int, str]:
    # ruff's RUF022 ("isort-style"): CONSTANTS, then Classes, then functions and the rest.
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_all_of_each_public_module_is_exactly_its_listed_names(name: str) -> None:
    module = importlib.import_module(name)
    assert list(module.__all__) == PUBLIC[name]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_all_is_sorted_every_name_exists_and_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} has no docstring"
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_ruff_order)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is in __all__ but missing"
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attr} has no docstring"


def test_every_public_name_has_one_import_path() -> None:
    seen: dict[str, str] = {}
    for module, names in PUBLIC.items():
        for name in names:
            assert name not in seen or name == "__version__", (
                f"{name} is exported by both {seen[name]} and {module}"
            )
            seen[name] = module


def test_every_other_module_is_private() -> None:
    found: list[str] = ["kosong"]
    for info in pkgutil.walk_packages(kosong.__path__, "kosong."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    # Subpackages that only group public modules count as public too.
    assert sorted(found) == sorted(set(PUBLIC) | {"kosong.utils"})
