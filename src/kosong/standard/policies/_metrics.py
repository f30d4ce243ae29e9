"""Metrics: per tool, how many calls, how many failed or were retried, and how long they took.

`MetricsPolicy` records every call that passes through it in a `MetricsRegistry`. The registry
gives a `snapshot()` (calls, success rate, error rate, retry rate, mean and P99 latency, errors
by code, per tool) and the same counters in Prometheus' text format (`prometheus_text()`), for
a `/metrics` endpoint. Put the policy outermost to measure what the caller sees (retries and
waits included). A cancelled call is not recorded (it has no outcome). Calls to tools the
toolset does not have are counted together under `UNKNOWN_TOOL` ("<unknown>", which no tool can
be named), so a model inventing names cannot grow the metrics without bound, and they never mix
with a real tool's.

The P99 comes from the latest `window` latencies of each tool; means and counters cover
everything since the registry was created (or `reset()`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from kosong.message import ToolCall
from kosong.standard._codes import error_code
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import ToolResult

__all__ = ["DEFAULT_BUCKETS", "UNKNOWN_TOOL", "MetricsPolicy", "MetricsRegistry", "ToolMetrics"]

DEFAULT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
"""Upper bounds, in seconds, of the latency histogram's buckets."""

_bisect_left = bisect.bisect_left

UNKNOWN_TOOL = "<unknown>"
"""What calls to missing tools are counted under: not a valid tool name, so never a tool's."""


@dataclass(frozen=True, slots=True)
class ToolMetrics:
    """The metrics of one tool at the time of a snapshot."""

    tool: str
    """The tool's name."""
    calls: int
    """Calls completed."""
    errors: int
    """Calls that ended in an error."""
    retried_calls: int
    """Calls retried at least once."""
    retries: int
    """Retries, over all calls."""
    mean_latency_ms: float
    """The mean time a call took."""
    p50_latency_ms: float
    """The median of the recent calls' times (nearest rank)."""
    p99_latency_ms: float
    """The 99th percentile of the recent calls' times (nearest rank)."""
    errors_by_code: dict[str, int] = field(default_factory=dict[str, int])
    """Errors by error code."""

    @property
    def success_rate(self) -> float:
        """Successful calls / calls (1.0 when there were none)."""
        return 1.0 - self.error_rate

    @property
    def error_rate(self) -> float:
        """Failed calls / calls (0.0 when there were none)."""
        return self.errors / self.calls if self.calls else 0.0

    @property
    def retry_rate(self) -> float:
        """Retried calls / calls (0.0 when there were none)."""
        return self.retried_calls / self.calls if self.calls else 0.0


class _Series:
    __slots__ = (
        "buckets",
        "calls",
        "errors",
        "errors_by_code",
        "latencies",
        "retried",
        "retries",
        "total",
    )

    def __init__(self, n_buckets: int, window: int) -> None:
        self.calls = 0
        self.errors = 0
        self.retried = 0
        self.retries = 0
        self.total = 0.0
        self.buckets = [0] * n_buckets
        self.latencies: deque[float] = deque(maxlen=window)
        self.errors_by_code: Counter[str] = Counter()


def _nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The `q` quantile of sorted values, by nearest rank (0.0 when there are none)."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


def _escape(label: str) -> str:
    return label.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class MetricsRegistry:
    """Per-tool call metrics; thread-safe. See the module doc."""

    def __init__(self, *, window: int = 10_000, buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        """Keep the latest `window` latencies per tool for the P99; histogram `buckets`.

        Raises:
            ValueError: `window` is below 1 or `buckets` is not increasing.
        """
        if window < 1:
            raise ValueError("window must be at least 1")
        if not buckets or any(b <= a for a, b in itertools.pairwise(buckets)):
            raise ValueError("buckets must be a non-empty increasing sequence")
        self._window = window
        self._bounds = tuple(float(b) for b in buckets)
        self._series: dict[str, _Series] = {}
        self._lock = threading.Lock()

    def record(self, tool: str, seconds: float, *, code: str | None, retries: int = 0) -> None:
        """Record one completed call: its duration, its error code (None: success), retries."""
        # acquire/release rather than `with`: a third of the cost, and every call comes here.
        lock = self._lock
        lock.acquire()
        try:
            series = self._series.get(tool)
            if series is None:
                series = self._series[tool] = _Series(len(self._bounds), self._window)
            series.calls += 1
            series.total += seconds
            series.latencies.append(seconds)
            index = _bisect_left(self._bounds, seconds)
            if index < len(series.buckets):
                series.buckets[index] += 1
            if code is not None:
                series.errors += 1
                series.errors_by_code[code] += 1
            if retries:
                series.retried += 1
                series.retries += retries
        finally:
            lock.release()

    def reset(self) -> None:
        """Forget everything recorded."""
        with self._lock:
            self._series.clear()

    def snapshot(self) -> dict[str, ToolMetrics]:
        """The metrics of every tool called so far, by tool name."""
        with self._lock:
            return {name: self._metrics(name, s) for name, s in sorted(self._series.items())}

    @staticmethod
    def _metrics(name: str, s: _Series) -> ToolMetrics:
        ordered = sorted(s.latencies)
        return ToolMetrics(
            tool=name,
            calls=s.calls,
            errors=s.errors,
            retried_calls=s.retried,
            retries=s.retries,
            mean_latency_ms=(s.total / s.calls * 1000) if s.calls else 0.0,
            p50_latency_ms=_nearest_rank(ordered, 0.50) * 1000,
            p99_latency_ms=_nearest_rank(ordered, 0.99) * 1000,
            errors_by_code=dict(s.errors_by_code),
        )

    def prometheus_text(self, prefix: str = "kosong_tool") -> str:
        """The metrics in Prometheus' text exposition format (version 0.0.4)."""
        with self._lock:
            series = sorted(self._series.items())
            lines: list[str] = []

            def family(name: str, kind: str, help_text: str) -> None:
                lines.append(f"# HELP {prefix}_{name} {help_text}")
                lines.append(f"# TYPE {prefix}_{name} {kind}")

            def counter(name: str, help_text: str, values: list[int]) -> None:
                family(name, "counter", help_text)
                for (tool, _), value in zip(series, values, strict=True):
                    lines.append(f'{prefix}_{name}{{tool="{_escape(tool)}"}} {value}')

            counter("calls_total", "Tool calls completed.", [s.calls for _, s in series])
            family("errors_total", "counter", "Tool calls that ended in an error, by code.")
            for tool, s in series:
                for code, count in sorted(s.errors_by_code.items()):
                    labels = f'tool="{_escape(tool)}",code="{_escape(code)}"'
                    lines.append(f"{prefix}_errors_total{{{labels}}} {count}")
            counter(
                "retried_calls_total",
                "Tool calls retried at least once.",
                [s.retried for _, s in series],
            )
            counter("retries_total", "Retries of tool calls.", [s.retries for _, s in series])
            family(
                "call_latency_seconds",
                "gauge",
                "The median and 99th percentile of the recent calls' times (nearest rank).",
            )
            for tool, s in series:
                ordered = sorted(s.latencies)
                for q in ("0.5", "0.99"):
                    labels = f'tool="{_escape(tool)}",quantile="{q}"'
                    value = _nearest_rank(ordered, float(q))
                    lines.append(f"{prefix}_call_latency_seconds{{{labels}}} {value!r}")
            family("call_duration_seconds", "histogram", "How long tool calls took.")
            for tool, s in series:
                label = _escape(tool)
                cumulative = 0
                for bound, count in zip(self._bounds, s.buckets, strict=True):
                    cumulative += count
                    labels = f'tool="{label}",le="{_number(bound)}"'
                    lines.append(f"{prefix}_call_duration_seconds_bucket{{{labels}}} {cumulative}")
                lines.append(
                    f'{prefix}_call_duration_seconds_bucket{{tool="{label}",le="+Inf"}} {s.calls}'
                )
                lines.append(f'{prefix}_call_duration_seconds_sum{{tool="{label}"}} {s.total!r}')
                lines.append(f'{prefix}_call_duration_seconds_count{{tool="{label}"}} {s.calls}')
            return "\n".join(lines) + "\n"


class MetricsPolicy(Policy):
    """Record every call in a `MetricsRegistry`; see the module doc."""

    observes_refusals = True  # an unknown tool or unreadable arguments are calls too

    def __init__(self, registry: MetricsRegistry | None = None) -> None:
        """Record into `registry` (a new one by default)."""
        self.registry: MetricsRegistry = registry if registry is not None else MetricsRegistry()
        """Where the metrics go."""

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Pass the call on; record how it went (a cancelled call is not recorded)."""
        started = time.perf_counter()
        result = await forward(call, ctx)
        value = result.return_value
        self.registry.record(
            call.function.name if ctx.has_tool else UNKNOWN_TOOL,
            time.perf_counter() - started,
            code=error_code(value) if value.is_error else None,
            retries=ctx.retry_count,
        )
        return result
