"""MetricsPolicy and MetricsRegistry: snapshots and Prometheus text."""

from __future__ import annotations

import re

import pytest

from kosong.standard import coded_error, with_policies
from kosong.standard.policies import UNKNOWN_TOOL, MetricsPolicy, MetricsRegistry, RetryPolicy
from kosong.tooling import ToolOk
from kosong.tooling.error import ToolNetworkError
from tests.standard._std_tools import Scripted, Weather, make_call, toolset


def test_snapshot_computes_rates_mean_and_p99() -> None:
    registry = MetricsRegistry()
    for i in range(1, 101):  # 1 ms ... 100 ms
        code = "TIMEOUT" if i % 10 == 0 else None
        registry.record("search", i / 1000, code=code, retries=1 if i % 4 == 0 else 0)
    metrics = registry.snapshot()["search"]
    assert metrics.calls == 100 and metrics.errors == 10
    assert metrics.success_rate == pytest.approx(0.9)
    assert metrics.error_rate == pytest.approx(0.1)
    assert metrics.retry_rate == pytest.approx(0.25) and metrics.retries == 25
    assert metrics.mean_latency_ms == pytest.approx(50.5)
    assert metrics.p99_latency_ms == pytest.approx(99)  # nearest rank: the 99th of 100
    assert metrics.p50_latency_ms == pytest.approx(50)
    assert metrics.errors_by_code == {"TIMEOUT": 10}


def test_p99_uses_the_recent_window() -> None:
    registry = MetricsRegistry(window=10)
    for _ in range(100):
        registry.record("t", 5.0, code=None)
    for _ in range(10):
        registry.record("t", 0.001, code=None)
    assert registry.snapshot()["t"].p99_latency_ms == pytest.approx(1)


def test_an_empty_snapshot_and_reset() -> None:
    registry = MetricsRegistry()
    assert registry.snapshot() == {}
    registry.record("t", 0.1, code=None)
    registry.reset()
    assert registry.snapshot() == {}


async def test_the_policy_records_every_call_with_its_outcome() -> None:
    tool = Scripted(
        lambda n: (
            ToolNetworkError("flaky")
            if n in (0, 2)
            else (coded_error("NO", "x") if n == 3 else ToolOk())
        ),
        read_only_hint=True,
    )
    metrics = MetricsPolicy()
    pipeline = with_policies(toolset(tool, Weather()), metrics, RetryPolicy(base_delay=0.001))
    await pipeline.handle(make_call("scripted", {}, "a"))  # fails once, retried, succeeds
    await pipeline.handle(make_call("scripted", {}, "b"))  # fails once, retried, fails (NO)
    await pipeline.handle(make_call("get_weather", {"location": "x"}))
    await pipeline.handle(make_call("invented_tool", {}))
    snapshot = metrics.registry.snapshot()
    assert set(snapshot) == {"scripted", "get_weather", UNKNOWN_TOOL}
    scripted = snapshot["scripted"]
    assert (scripted.calls, scripted.errors, scripted.retried_calls, scripted.retries) == (
        2,
        1,
        2,
        2,
    )
    assert scripted.errors_by_code == {"NO": 1}
    assert snapshot[UNKNOWN_TOOL].errors_by_code == {"TOOL_NOT_FOUND": 1}
    assert snapshot["get_weather"].error_rate == 0


LINE = re.compile(r"^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+|\+Inf)$")


def test_prometheus_text_is_well_formed() -> None:
    registry = MetricsRegistry(buckets=(0.01, 0.1, 1.0))
    registry.record("get_weather", 0.005, code=None)
    registry.record("get_weather", 0.05, code="TIMEOUT", retries=2)
    registry.record('we"ird\\tool\n', 2.0, code=None)
    text = registry.prometheus_text()
    assert text.endswith("\n")
    families: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            _, _, name, kind = line.split()
            families[name] = kind
        elif not line.startswith("# HELP"):
            assert LINE.match(line), line
    assert families == {
        "kosong_tool_calls_total": "counter",
        "kosong_tool_errors_total": "counter",
        "kosong_tool_retried_calls_total": "counter",
        "kosong_tool_retries_total": "counter",
        "kosong_tool_call_latency_seconds": "gauge",
        "kosong_tool_call_duration_seconds": "histogram",
    }
    assert 'kosong_tool_call_latency_seconds{tool="get_weather",quantile="0.5"} 0.005' in text
    assert 'kosong_tool_call_latency_seconds{tool="get_weather",quantile="0.99"} 0.05' in text
    assert 'kosong_tool_calls_total{tool="get_weather"} 2' in text
    assert 'kosong_tool_errors_total{tool="get_weather",code="TIMEOUT"} 1' in text
    assert 'kosong_tool_retries_total{tool="get_weather"} 2' in text
    assert 'kosong_tool_call_duration_seconds_bucket{tool="get_weather",le="0.01"} 1' in text
    assert 'kosong_tool_call_duration_seconds_bucket{tool="get_weather",le="0.1"} 2' in text
    assert 'kosong_tool_call_duration_seconds_bucket{tool="get_weather",le="+Inf"} 2' in text
    assert 'kosong_tool_call_duration_seconds_count{tool="get_weather"} 2' in text
    assert 'tool="we\\"ird\\\\tool\\n"' in text  # label values escaped
    assert 'kosong_tool_call_duration_seconds_bucket{tool="we\\"ird\\\\tool\\n",le="1"} 0' in text


def test_invalid_registry_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        MetricsRegistry(window=0)
    with pytest.raises(ValueError):
        MetricsRegistry(buckets=(1.0, 0.5))


async def test_metrics_keep_unknown_tools_apart_from_a_real_tool_whatever_its_name() -> None:
    metrics = MetricsPolicy()
    real = Scripted(lambda n: ToolOk(output="real"), name="_unknown")
    pipeline = with_policies(toolset(real), metrics)
    await pipeline.handle(make_call("_unknown", {}))
    await pipeline.handle(make_call("not_a_tool", {}))
    await pipeline.handle(make_call("<unknown>", {}))
    snapshot = metrics.registry.snapshot()
    assert snapshot["_unknown"].calls == 1 and snapshot["_unknown"].errors == 0
    assert snapshot[UNKNOWN_TOOL].calls == 2
    assert snapshot[UNKNOWN_TOOL].errors_by_code == {"TOOL_NOT_FOUND": 2}
