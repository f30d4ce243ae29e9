"""The tools benchmarks/bench_server.py serves: `kosong serve benchmarks/server_apps.py:tools`.

add         POST /tools/add: the request/response scenario
add_sync    POST /tools/add_sync: the same with a plain `def` (run in a worker thread)
progress    POST /tools/progress/sse: 10 progress events 10 ms apart (SSE_EVENTS,
            SSE_INTERVAL_MS), then the result "3"; each progress message is the server's
            time.time() at the report
"""

from __future__ import annotations

import asyncio
import os
import time

from kosong.standard import report_progress
from kosong.tooling import tool

N_EVENTS = int(os.environ.get("SSE_EVENTS", "10"))
INTERVAL = int(os.environ.get("SSE_INTERVAL_MS", "10")) / 1000


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    """Add two integers (a plain function: it runs in a worker thread)."""
    return a + b


@tool
async def progress(a: int, b: int) -> int:
    """Add two integers, slowly, reporting progress."""
    for i in range(N_EVENTS):
        await asyncio.sleep(INTERVAL)
        report_progress((i + 1) * 100 / N_EVENTS, repr(time.time()))
    return a + b


tools = [add, add_sync, progress]
