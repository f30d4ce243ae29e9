"""ASGI app factories for benchmarks/bench_server.py (`uvicorn --factory server_apps:NAME`).

add_app     POST /tools/add through the pipeline (metrics + cache policies, the guard with
            its rate limiter at a rate never reached, so its cost is in the figures)
sse_app     POST /tools/progress/sse: 10 progress events 10 ms apart, then the result "3"
            (each progress message is the server's time.time() at the report)
redis_app   the same tools, runs in Redis (KOSONG_BENCH_REDIS), a 2 s lease
"""

from __future__ import annotations

import asyncio
import os
import time

from kosong.server import RateLimit, ServerConfig, create_app
from kosong.standard import report_progress
from kosong.tooling import tool

N_EVENTS = int(os.environ.get("SSE_EVENTS", "10"))
INTERVAL = int(os.environ.get("SSE_INTERVAL_MS", "10")) / 1000


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def progress(a: int, b: int) -> int:
    """Add two integers, slowly, reporting progress."""
    for i in range(N_EVENTS):
        await asyncio.sleep(INTERVAL)
        report_progress((i + 1) * 100 / N_EVENTS, repr(time.time()))
    return a + b


UNREACHED = RateLimit(1e9, 10**9)


def add_app():
    return create_app([add, progress], ServerConfig(rate_limit=UNREACHED))


def sse_app():
    return create_app([add, progress], ServerConfig(rate_limit=UNREACHED, max_runs=100_000))


def redis_app():
    config = ServerConfig(
        rate_limit=None, redis_url=os.environ["KOSONG_BENCH_REDIS"], lease=2.0, idle=0.25
    )
    return create_app([add, progress], config)
