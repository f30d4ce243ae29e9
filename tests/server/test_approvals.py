"""Approvals that wait, in one process: listed by GET /runs?state=waiting, answered with
POST /runs/{id}/input by the run's own principal only, denied once ask_timeout passes."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx

from kosong.server import ServerConfig, create_app, serving
from kosong.standard import with_policies
from kosong.standard.policies import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from kosong.tooling.simple import SimpleToolset
from tests._waiting import until
from tests.server._sse import read_sse
from tests.server._tools import TOUCHED, touch

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}
CONFIG = ServerConfig(tokens={"alice-token": "alice", "bob-token": "bob"})


def _asking(request: ApprovalRequest) -> ApprovalDecision:
    arguments = request.arguments
    tag = arguments.get("tag") if isinstance(arguments, dict) else None
    return ApprovalDecision.ask(f"touch {tag}?")


def _pipeline(**options: Any):
    held = touch.model_copy()  # the same tool, held for approval by a rule of its own
    return with_policies(
        SimpleToolset([held]),
        ApprovalPolicy(_asking, needs_approval=lambda tool: tool.name == "touch", **options),
    )


async def _listed(c: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    return (await c.get("/runs?state=waiting", headers=headers)).json()["runs"]


async def _waiting(c: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    return await until(lambda: _listed(c, headers), "a run to wait")


async def test_a_waiting_run_is_listed_and_runs_once_its_principal_approves() -> None:
    tag = uuid.uuid4().hex
    app = create_app(_pipeline(), CONFIG)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        stream = asyncio.ensure_future(read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag},
                                                headers=ALICE))  # fmt: skip
        (waiting,) = await _waiting(c, ALICE)
        assert waiting["tool"] == "touch" and waiting["arguments"] == {"tag": tag}
        assert waiting["question"] == f"touch {tag}?" and waiting["since"].endswith("Z")
        assert await _listed(c, BOB) == []  # someone else's run is not shown
        run_id = waiting["id"]
        by_bob = await c.post(f"/runs/{run_id}/input", json={"approved": True}, headers=BOB)
        bad = await c.post(f"/runs/{run_id}/input", json={"approved": "yes"}, headers=ALICE)
        assert TOUCHED.count(tag) == 0
        answered = await c.post(f"/runs/{run_id}/input", json={"approved": True, "reason": "ok"},
                                headers=ALICE)  # fmt: skip
        result = await asyncio.wait_for(stream, 10)
        after = await c.post(f"/runs/{run_id}/input", json={"approved": True}, headers=ALICE)
        left = (await c.get("/runs?state=waiting", headers=ALICE)).json()
        unlisted = await c.get("/runs", headers=ALICE)
    assert by_bob.status_code == 404 and by_bob.json()["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PARAMS"
    assert answered.status_code == 202 and answered.json() == {
        "run_id": run_id,
        "status": "answered",
    }
    assert result.final["data"] == f"touched {tag}" and TOUCHED.count(tag) == 1
    assert after.status_code == 409 and left == {"runs": []}
    assert unlisted.status_code == 400


async def test_a_denial_answers_the_run_with_permission_denied() -> None:
    tag = uuid.uuid4().hex
    async with (
        serving(create_app(_pipeline(), CONFIG)) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        stream = asyncio.ensure_future(read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag},
                                                headers=ALICE))  # fmt: skip
        (waiting,) = await _waiting(c, ALICE)
        await c.post(f"/runs/{waiting['id']}/input",
                     json={"approved": False, "reason": "not now"}, headers=ALICE)  # fmt: skip
        result = await asyncio.wait_for(stream, 10)
    error = result.final["error"]
    assert error["code"] == "PERMISSION_DENIED" and "not now" in error["message"]
    assert TOUCHED.count(tag) == 0


async def test_an_unanswered_question_is_denied_after_ask_timeout() -> None:
    tag = uuid.uuid4().hex
    async with (
        serving(create_app(_pipeline(ask_timeout=0.2))) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        result = await read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag})
        left = (await c.get("/runs?state=waiting")).json()
    assert result.final["error"]["code"] == "PERMISSION_DENIED"
    assert "nobody answered" in result.final["error"]["message"]
    assert TOUCHED.count(tag) == 0 and left == {"runs": []}


async def test_cancelling_a_waiting_run_ends_it_and_unlists_it() -> None:
    tag = uuid.uuid4().hex
    async with serving(create_app(_pipeline())) as url, httpx.AsyncClient(base_url=url) as c:
        stream = asyncio.ensure_future(read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag}))
        (waiting,) = await _waiting(c, {})
        cancelled = await c.delete(f"/runs/{waiting['id']}")
        result = await asyncio.wait_for(stream, 10)
        left = (await c.get("/runs?state=waiting")).json()
        late = await c.post(f"/runs/{waiting['id']}/input", json={"approved": True})
    assert cancelled.status_code == 202
    assert result.final["error"]["code"] == "CANCELLED" and TOUCHED.count(tag) == 0
    assert left == {"runs": []} and late.status_code == 409


async def test_a_waiting_run_holds_no_task_and_defer_waits_like_ask() -> None:
    tag = uuid.uuid4().hex
    held = touch.model_copy()
    deferring = with_policies(
        SimpleToolset([held]),
        ApprovalPolicy(lambda r: ApprovalDecision.defer("go?"), needs_approval=lambda t: True),
    )
    async with serving(create_app(deferring)) as url, httpx.AsyncClient(base_url=url) as c:
        stream = asyncio.ensure_future(read_sse(c, "POST", "/tools/touch/sse", json={"tag": tag}))
        (waiting,) = await _waiting(c, {})
        metrics = (await c.get("/metrics")).text
        answered = await c.post(f"/runs/{waiting['id']}/input", json={"approved": True})
        result = await asyncio.wait_for(stream, 10)
    assert waiting["question"] == "go?"
    assert "kosong_server_runs_active 0" in metrics  # only its record waits
    assert answered.status_code == 202
    assert result.final["data"] == f"touched {tag}" and TOUCHED.count(tag) == 1
