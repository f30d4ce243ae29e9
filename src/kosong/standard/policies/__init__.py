"""The policies of the pipeline, one concern each.

See `Policy` and `with_policies` in `kosong.standard`.

Every policy and its helpers are imported from here. `RedisCache` is loaded on first use, so
the `redis` package (the `redis` extra) is only needed by those who use it.
"""

from typing import TYPE_CHECKING, Any

from kosong.standard.policies._approval import (
    ApprovalDecision,
    ApprovalHook,
    ApprovalInbox,
    ApprovalPolicy,
    ApprovalRequest,
    inbox_scope,
)
from kosong.standard.policies._cache import CacheBackend, CacheEntry, CachePolicy, MemoryCache
from kosong.standard.policies._concurrency import ConcurrencyPolicy
from kosong.standard.policies._debug import DebugPolicy
from kosong.standard.policies._deprecation import DeprecationPolicy
from kosong.standard.policies._event_hook import EventHookPolicy
from kosong.standard.policies._metrics import (
    UNKNOWN_TOOL,
    MetricsPolicy,
    MetricsRegistry,
    ToolMetrics,
)
from kosong.standard.policies._repair import RepairPolicy
from kosong.standard.policies._repeat_guard import RepeatGuardPolicy
from kosong.standard.policies._retry import DEFAULT_RULES, RetryPolicy, RetryRule
from kosong.standard.policies._single_flight import SingleFlightPolicy
from kosong.standard.policies._timeout import TimeoutPolicy
from kosong.standard.policies._tracing import TracingPolicy
from kosong.standard.policies._truncation import (
    ContinuationStore,
    MemoryContinuationStore,
    TruncationPolicy,
)

if TYPE_CHECKING:
    from kosong.standard.policies._redis_cache import RedisCache

__all__ = [
    "DEFAULT_RULES",
    "UNKNOWN_TOOL",
    "ApprovalDecision",
    "ApprovalHook",
    "ApprovalInbox",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CacheBackend",
    "CacheEntry",
    "CachePolicy",
    "ConcurrencyPolicy",
    "ContinuationStore",
    "DebugPolicy",
    "DeprecationPolicy",
    "EventHookPolicy",
    "MemoryCache",
    "MemoryContinuationStore",
    "MetricsPolicy",
    "MetricsRegistry",
    "RedisCache",
    "RepairPolicy",
    "RepeatGuardPolicy",
    "RetryPolicy",
    "RetryRule",
    "SingleFlightPolicy",
    "TimeoutPolicy",
    "ToolMetrics",
    "TracingPolicy",
    "TruncationPolicy",
    "inbox_scope",
]


def __getattr__(name: str) -> Any:
    if name == "RedisCache":  # imported on first use: it needs the redis package
        from kosong.standard.policies._redis_cache import RedisCache

        return RedisCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
