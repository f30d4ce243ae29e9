"""Streamed calls are runs: SSE events, resumption with Last-Event-ID, cancellation."""

from __future__ import annotations

import asyncio

import httpx

from kosong.eventstore import MemoryRunStore
from kosong.server import ServerConfig, create_app, serving
from tests._waiting import until
from tests.server._sse import read_sse
from tests.server._tools import CANCELLED, GATES, STARTED, tools

PROGRAM = {"Sec-Fetch-Site": "none"}
"""What a program sends to start a run with GET (a page of another site cannot)."""


def _gate(name: str) -> asyncio.Event:
    GATES[name] = asyncio.Event()
    STARTED[name] = asyncio.Event()
    return GATES[name]


async def test_a_streamed_call_sends_progress_then_the_result_each_with_a_unique_id() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        stream = await read_sse(c, "POST", "/tools/count/sse", json={"n": 3, "delay": 0})
    assert stream.status == 200
    assert stream.kinds == ["tool_progress"] * 3 + ["tool_result"]
    assert len(set(stream.ids)) == 4
    run = stream.headers["content-location"].removeprefix("/runs/")
    assert all(i.startswith(f"{run}.") for i in stream.ids)
    assert stream.retry == 2000
    assert [e[2]["progress"] for e in stream.events[:3]] == [100 / 3, 200 / 3, 100]
    assert stream.final["data"] == "counted" and stream.final["metadata"]["tool_call_id"] == run


async def test_get_takes_the_arguments_from_the_query_by_the_schema() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        stream = await read_sse(c, "GET", "/tools/echo/sse?text=42&tags=a&tags=b&flag=true",
                                headers=PROGRAM)  # fmt: skip
        single = await read_sse(c, "GET", "/tools/add/sse?a=1&b=2", headers=PROGRAM)
    assert stream.final["data"] == "42|a,b|True"
    assert single.final["data"] == 3  # a `-> int` tool: the number


async def test_invalid_arguments_end_the_stream_with_a_tool_error() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        stream = await read_sse(c, "POST", "/tools/add/sse", json={"a": "x"})
        unknown = await read_sse(c, "POST", "/tools/nope/sse", json={})
    assert stream.kinds == ["tool_error"] and stream.final["error"]["code"] == "INVALID_PARAMS"
    assert unknown.status == 404


async def test_keepalive_comments_keep_a_quiet_stream_open() -> None:
    gate = _gate("quiet")
    app = create_app(tools, ServerConfig(keepalive=0.05))
    async with (
        serving(app) as url,
        httpx.AsyncClient(base_url=url) as c,
        c.stream("POST", "/tools/gated/sse", json={"name": "quiet", "steps": 0}) as r,
    ):
        text = ""
        async for chunk in r.aiter_text():
            text += chunk
            if text.count(": ping") >= 2 and not gate.is_set():
                gate.set()
        assert "event: tool_result" in text


async def test_a_dropped_client_resumes_from_the_same_url_without_gap_or_duplicate() -> None:
    gate = _gate("resume")
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(
            c, "GET", "/tools/gated/sse?name=resume&steps=3", stop_after=1, headers=PROGRAM
        )  # dropped after one event; the run goes on
        await asyncio.wait_for(STARTED["resume"].wait(), 5)
        gate.set()
        rest = await read_sse(
            c, "GET", "/tools/gated/sse?name=resume&steps=3", last_event_id=first.last_id
        )
    assert first.kinds == ["tool_progress"]
    assert rest.kinds == ["tool_progress"] * 3 + ["tool_result"]
    ids = first.ids + rest.ids
    assert len(ids) == len(set(ids)) == 5
    assert [int(i.rpartition(".")[2]) for i in ids] == [1, 2, 3, 4, 5]
    assert rest.final["data"] == "opened resume"


async def test_a_drop_before_the_first_event_resumes_the_same_run() -> None:
    gate = _gate("early")
    preamble = ""
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        async with c.stream("POST", "/tools/gated/sse", json={"name": "early", "steps": 0}) as r:
            async for line in r.aiter_lines():
                if line.startswith("id: "):
                    preamble = line.removeprefix("id: ")
                    break
        gate.set()
        rest = await read_sse(c, "POST", "/tools/gated/sse", last_event_id=preamble)
    assert preamble.endswith(".0")
    assert rest.kinds == ["tool_progress", "tool_result"]


async def test_runs_resume_at_their_own_url_and_finish_during_the_replay() -> None:
    gate = _gate("during")
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(c, "POST", "/tools/gated/sse", json={"name": "during", "steps": 40},
                               stop_after=2)  # fmt: skip
        run = first.headers["content-location"]
        seen: list[str] = []
        async with c.stream("GET", run, headers={"Last-Event-ID": first.last_id}) as r:
            from httpx_sse import EventSource

            async for sse in EventSource(r).aiter_sse():
                if not sse.data:
                    continue
                seen.append(sse.id)
                if len(seen) == 1:
                    gate.set()  # the run finishes while the replay is being read
    numbers = [int(i.rpartition(".")[2]) for i in first.ids + seen]
    assert numbers == list(range(1, 40 + 3))  # 40 steps, "through the gate", the result


async def test_runs_replay_from_the_start_without_last_event_id() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(c, "POST", "/tools/count/sse", json={"n": 2, "delay": 0})
        again = await read_sse(c, "GET", first.headers["content-location"])
    assert again.events == first.events


async def test_resuming_after_the_final_event_answers_204() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(c, "POST", "/tools/count/sse", json={"n": 1, "delay": 0})
        done = await read_sse(c, "POST", "/tools/count/sse", last_event_id=first.last_id)
    assert done.status == 204


async def test_unknown_expired_or_foreign_ids_get_an_answer_apart_from_a_stream() -> None:
    clock = [0.0]
    store = MemoryRunStore(ttl=5, clock=lambda: clock[0])
    config = ServerConfig(tokens={"alice-token": "alice", "bob-token": "bob"}, run_store=store)
    alice = {"Authorization": "Bearer alice-token"}
    bob = {"Authorization": "Bearer bob-token"}
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        run = await read_sse(c, "POST", "/tools/count/sse", json={"n": 1, "delay": 0},
                             headers=alice)  # fmt: skip
        first_id = run.ids[0]
        path = run.headers["content-location"]
        foreign = await read_sse(c, "GET", path, headers=bob)
        foreign_resume = await read_sse(c, "POST", "/tools/count/sse", headers=bob,
                                        last_event_id=first_id)  # fmt: skip
        other_tool = await read_sse(c, "POST", "/tools/add/sse", headers=alice,
                                    last_event_id=first_id)  # fmt: skip
        unknown = await read_sse(c, "GET", "/runs/00112233445566778899aabbccddeeff", headers=alice)
        garbage = await read_sse(c, "POST", "/tools/count/sse", headers=alice,
                                 last_event_id="not an id")  # fmt: skip
        beyond = await read_sse(c, "GET", path, headers=alice, last_event_id=f"{path[6:]}.99")
        own = await read_sse(c, "GET", path, headers=alice, last_event_id=first_id)
        clock[0] += 10  # past the TTL
        expired = await c.get(path, headers=alice)
    assert foreign.status == foreign_resume.status == other_tool.status == unknown.status == 404
    assert garbage.status == beyond.status == 400
    assert own.status == 200 and own.kinds == ["tool_result"]
    assert expired.status_code == 404
    assert expired.json()["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert "seconds ago" in expired.json()["error"]["message"]


async def test_delete_cancels_the_run_and_its_tool() -> None:
    _gate("cancel")
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(c, "POST", "/tools/gated/sse", json={"name": "cancel"}, stop_after=1)
        run = first.headers["content-location"]
        await asyncio.wait_for(STARTED["cancel"].wait(), 5)
        cancelled = await c.delete(run)
        again = await c.delete(run)
        rest = await read_sse(c, "GET", run, last_event_id=first.last_id)
        missing = await c.delete("/runs/00112233445566778899aabbccddeeff")
        await until(lambda: "cancel" in CANCELLED, "the tool to be cancelled")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    assert again.status_code == 200 and again.json()["status"] == "finished"
    assert rest.kinds == ["tool_progress", "tool_error"]
    assert rest.final["error"]["code"] == "CANCELLED"
    assert missing.status_code == 404
    assert "cancel" in CANCELLED


async def test_a_client_that_drops_does_not_cancel_the_run() -> None:
    gate = _gate("orphan")
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        first = await read_sse(c, "POST", "/tools/gated/sse", json={"name": "orphan"}, stop_after=1)
        gate.set()

        async def ended() -> bool:
            return "kosong_server_runs_active 0" in (await c.get("/metrics")).text

        await until(ended, "the run to end")
        replay = await read_sse(c, "GET", first.headers["content-location"])
    assert replay.final["data"] == "opened orphan"
    assert "orphan" not in CANCELLED


async def test_a_query_argument_nested_past_the_parsers_stack_is_a_400() -> None:
    deep = "[" * 12_000  # JSON's parser runs out of stack before it sees the missing "]"
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.get(f"/tools/add/sse?a={deep}&b=1", headers=PROGRAM)
        fitting = await read_sse(c, "GET", f"/tools/add/sse?a={'[' * 200}{']' * 200}&b=1",
                                 headers=PROGRAM)  # fmt: skip
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_PARAMS"
    assert "nested too deeply" in response.json()["error"]["message"]
    assert fitting.final["error"]["code"] == "INVALID_PARAMS"  # the pipeline's own depth cap
