"""The policies of the pipeline, one concern each (see `kosong.standard.pipeline`).

`RedisCache` lives in `kosong.standard.policies.redis_cache`, so the `redis` package is only
needed by those who use it.
"""

from kosong.standard.policies.approval import (
    ApprovalDecision,
    ApprovalHook,
    ApprovalPolicy,
    ApprovalRequest,
)
from kosong.standard.policies.cache import CacheBackend, CacheEntry, CachePolicy, MemoryCache
from kosong.standard.policies.debug import DebugPolicy
from kosong.standard.policies.deprecation import DeprecationPolicy
from kosong.standard.policies.event_hook import EventHookPolicy
from kosong.standard.policies.metrics import MetricsPolicy, MetricsRegistry, ToolMetrics
from kosong.standard.policies.repeat_guard import RepeatGuardPolicy
from kosong.standard.policies.retry import DEFAULT_RULES, RetryPolicy, RetryRule
from kosong.standard.policies.single_flight import SingleFlightPolicy
from kosong.standard.policies.timeout import TimeoutPolicy
from kosong.standard.policies.tracing import TracingPolicy
from kosong.standard.policies.truncation import (
    ContinuationStore,
    MemoryContinuationStore,
    TruncationPolicy,
)

__all__ = [
    "DEFAULT_RULES",
    "ApprovalDecision",
    "ApprovalHook",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CacheBackend",
    "CacheEntry",
    "CachePolicy",
    "ContinuationStore",
    "DebugPolicy",
    "DeprecationPolicy",
    "EventHookPolicy",
    "MemoryCache",
    "MemoryContinuationStore",
    "MetricsPolicy",
    "MetricsRegistry",
    "RepeatGuardPolicy",
    "RetryPolicy",
    "RetryRule",
    "SingleFlightPolicy",
    "TimeoutPolicy",
    "ToolMetrics",
    "TracingPolicy",
    "TruncationPolicy",
]
