"""A Redis outage, for real: every route answers 503 with the envelope and `Retry-After`,
`/healthz` says so, and the first calls after Redis is back succeed (stale connections are
tried again, not what fails a request or cuts a stream)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests._local import RedisProcess
from tests.server._procs import ServerProcess
from tests.server._routes import ALL, Endpoint
from tests.server._sse import Stream, read_sse

pytestmark = pytest.mark.external  # a redis-server stopped and started for real, `kosong serve`

SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}  # what the inspector's page sends
NEEDS_REDIS = {"GET /tools/{name}/sse", "POST /tools/{name}/sse", "GET /runs/{run_id}",
               "DELETE /runs/{run_id}", "POST /tools/{name}"}  # fmt: skip
"""What needs Redis without a rate limit in Redis: the runs, which every call is (everything
else still works)."""


async def _request(c: httpx.AsyncClient, base: str, endpoint: Endpoint, run_id: str):
    url = base + endpoint.url(name="count", run_id=run_id, path="main.js")
    if endpoint.method == "POST":
        body = {"n": 1, "delay": 0}
        if endpoint.path == "/mcp":
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        return await c.request("POST", url, json=body, headers=SAME_ORIGIN)
    return await c.request(endpoint.method, url, headers=SAME_ORIGIN)


def _assert_unavailable(response: httpx.Response, endpoint: object) -> None:
    assert response.status_code == 503, (endpoint, response.status_code, response.text[:300])
    assert int(response.headers["Retry-After"]) >= 1, endpoint
    if response.request.method != "HEAD":
        error = response.json()["error"]
        assert error["code"] == "NETWORK_ERROR" and error["retryable"] is True, endpoint
        assert "Redis" in error["message"] or "store" in error["message"], error


async def _full_run(c: httpx.AsyncClient, base: str) -> Stream:
    return await read_sse(c, "POST", f"{base}/tools/count/sse", json={"n": 3, "delay": 0.01})


async def test_while_redis_is_down_every_route_answers_503_and_the_first_calls_after_succeed(
) -> None:  # fmt: skip
    redis = RedisProcess()
    limited = ServerProcess("--redis", redis.url, "--lease", "1")  # its rate limits in Redis
    unlimited = ServerProcess("--redis", redis.url, "--lease", "1", "--rate-limit", "off")
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            # Fill the connection pools: after the restart, these connections are dead.
            before = await asyncio.gather(
                *(_full_run(c, s.url) for s in (limited, unlimited) for _ in range(4))
            )
            run_id = before[0].headers["content-location"].removeprefix("/runs/")
            redis.stop()

            for endpoint in ALL:
                response = await _request(c, limited.url, endpoint, run_id)
                _assert_unavailable(response, endpoint)
            for endpoint in ALL:
                response = await _request(c, unlimited.url, endpoint, run_id)
                if str(endpoint) in NEEDS_REDIS or endpoint.path == "/healthz":
                    _assert_unavailable(response, endpoint)
                else:
                    assert response.status_code < 500, (endpoint, response.text[:300])
            health = await c.get(f"{limited.url}/healthz")
            assert "Redis cannot be reached" in health.json()["error"]["message"]

            redis.start()
            after = [await _full_run(c, s.url) for s in (limited, unlimited)]
            more = await asyncio.gather(
                *(_full_run(c, s.url) for s in (limited, unlimited) for _ in range(4))
            )
            added = await c.post(f"{limited.url}/tools/add", json={"a": 1, "b": 2})
            healthy = [(await c.get(f"{s.url}/healthz")).status_code for s in (limited, unlimited)]
    finally:
        logs = limited.terminate() + unlimited.terminate()
        redis.close()
    assert all(s.kinds == ["tool_progress"] * 3 + ["tool_result"] for s in before)
    for stream in [*after, *more]:  # every event, the final one too, on the first attempts
        assert stream.status == 200
        assert stream.kinds == ["tool_progress"] * 3 + ["tool_result"], stream.kinds
        assert stream.final["data"] == "counted"
    assert added.status_code == 200 and added.json()["data"] == 3
    assert healthy == [200, 200]
    assert "Traceback" not in logs, logs[-3000:]
    assert "cannot be reached" in logs  # said once per refusal, in one line each
