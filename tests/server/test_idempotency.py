"""Idempotency keys on the routes, in one process: the same key never runs a tool twice."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest

from kosong.message import ToolCall
from kosong.remote import RemoteToolset
from kosong.server import ServerConfig, create_app, serving
from kosong.standard import with_policies
from kosong.standard.policies import RetryPolicy
from tests.server._sse import read_sse
from tests.server._tools import GATES, STARTED, TOUCHED, tools


def _key() -> str:
    return str(uuid.uuid4())


async def test_the_same_key_gets_the_same_result_and_runs_the_tool_once() -> None:
    key, tag = _key(), _key()
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await c.post("/tools/touch", json={"tag": tag}, headers={"Idempotency-Key": key})
        again = await c.post("/tools/touch", json={"tag": tag}, headers={"Idempotency-Key": key})
        spaced = await c.post("/tools/touch", content=f'{{ "tag" : "{tag}" }}',
                              headers={"Idempotency-Key": key,
                                       "Content-Type": "application/json"})  # fmt: skip
        streamed = await read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag},
                                  headers={"Idempotency-Key": key})  # fmt: skip
    assert TOUCHED.count(tag) == 1
    assert first.status_code == again.status_code == spaced.status_code == 200
    assert first.json() == again.json() == spaced.json()
    assert streamed.final["data"] == f"touched {tag}"
    assert streamed.final["metadata"]["tool_call_id"] == first.json()["metadata"]["tool_call_id"]


async def test_a_second_caller_with_the_key_follows_the_run_in_progress() -> None:
    key, gate = _key(), "idem-follow"
    GATES[gate], STARTED[gate] = asyncio.Event(), asyncio.Event()
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = asyncio.ensure_future(read_sse(c, "POST", "/tools/gated/sse", json={"name": gate},
                                               headers={"Idempotency-Key": key}))  # fmt: skip
        await asyncio.wait_for(STARTED[gate].wait(), 5)
        second = asyncio.ensure_future(read_sse(c, "POST", "/tools/gated/sse", json={"name": gate},
                                                headers={"Idempotency-Key": key}))  # fmt: skip
        await asyncio.sleep(0.05)
        GATES[gate].set()
        one, two = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert one.headers["content-location"] == two.headers["content-location"]
    assert one.events == two.events and one.final["data"] == f"opened {gate}"


async def test_a_key_reused_with_other_arguments_is_refused_with_422() -> None:
    key = _key()
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        await c.post("/tools/add", json={"a": 1, "b": 2}, headers={"Idempotency-Key": key})
        other = await c.post("/tools/add", json={"a": 1, "b": 3}, headers={"Idempotency-Key": key})
        other_tool = await c.post("/tools/touch/sse", json={}, headers={"Idempotency-Key": key})
        bad = await c.post("/tools/add", json={"a": 1, "b": 2}, headers={"Idempotency-Key": "a b"})
    for response in (other, other_tool):
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "INVALID_PARAMS" and "Idempotency-Key" in error["message"]
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PARAMS"


async def test_keys_belong_to_their_principal() -> None:
    key, tag = _key(), _key()
    config = ServerConfig(tokens={"alice-token": "alice", "bob-token": "bob"})
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        for token in ("alice-token", "bob-token"):
            response = await c.post("/tools/touch", json={"tag": tag}, headers={
                "Idempotency-Key": key, "Authorization": f"Bearer {token}"})  # fmt: skip
            assert response.status_code == 200
    assert TOUCHED.count(tag) == 2  # the same key, two callers: two calls


async def test_remote_toolset_sends_the_key_and_a_retry_through_it_runs_the_tool_once() -> None:
    key, tag = _key(), _key()
    call = ToolCall(
        id="c1",
        function=ToolCall.FunctionBody(name="touch", arguments=json.dumps({"tag": tag})),
        extras={"idempotency_key": key},
    )
    async with serving(create_app(tools)) as url, RemoteToolset(url) as remote:
        pipeline = with_policies(remote, RetryPolicy(base_delay=0.001))
        first = await pipeline.handle(call)
        second = await remote.handle(call.model_copy(update={"id": "c2"}))
    assert TOUCHED.count(tag) == 1
    assert first.return_value.output == second.return_value.output == f"touched {tag}"


@pytest.mark.parametrize("header", ["", "x" * 256, "é"])
async def test_a_malformed_key_is_refused(header: str) -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post(
            "/tools/add", json={"a": 1, "b": 2}, headers=[(b"Idempotency-Key", header.encode())]
        )
    assert response.status_code == 400
