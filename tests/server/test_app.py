"""The app's routes over a real uvicorn server: definitions, calls and their HTTP statuses."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from pydantic import BaseModel

from kosong.server import ServerConfig, create_app, serving
from kosong.standard import CATALOG, with_policies
from kosong.standard.policies import DeprecationPolicy, MetricsPolicy, TimeoutPolicy
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset
from tests.server._tools import tools

JSON = {"Content-Type": "application/json"}


class CityParams(BaseModel):
    city: str


class Weather(CallableTool2[CityParams]):
    name: str = "weather"
    description: str = "The weather of a city."
    params: type[CityParams] = CityParams
    version = "1.2.0"
    cacheable = True
    cache_ttl = 60
    read_only_hint = True

    async def __call__(self, params: CityParams) -> ToolReturnValue:
        return ToolOk(output="sunny")


class AddParams(BaseModel):
    a: int
    b: int


class OldAdd(CallableTool2[AddParams]):
    name: str = "old_add"
    description: str = "Add, the old way."
    params: type[AddParams] = AddParams
    deprecated = True
    sunset_date = "2020-01-01"
    replacement = "add"

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


class KeyParams(BaseModel):
    key: int


async def test_tools_lists_every_definition_with_the_standard_fields() -> None:
    async with (
        serving(create_app([Weather(), *tools])) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        listed = (await c.get("/tools")).json()["tools"]
        one = (await c.get("/tools/weather")).json()
        missing = await c.get("/tools/nope")
    assert [t["name"] for t in listed] == ["weather", *(t.name for t in tools)]
    assert one == listed[0]
    assert one["version"] == "1.2.0" and one["cacheable"] is True and one["cache_ttl"] == 60
    assert one["readOnlyHint"] is True
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "TOOL_NOT_FOUND"


async def test_post_returns_the_envelope_with_200() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/tools/add", json={"a": 1, "b": 2}, headers={"X-Trace-Id": "t-1"})
    body = response.json()
    assert response.status_code == 200
    assert body["success"] is True and body["status"] == "success" and body["data"] == 3
    assert body["metadata"]["tool_name"] == "add" and body["metadata"]["trace_id"] == "t-1"


@pytest.mark.parametrize(
    ("request_", "status", "code"),
    [
        (("add", b'{"a": "x", "b": 2}'), 400, "INVALID_PARAMS"),
        (("add", b"{not json"), 400, "INVALID_PARAMS"),
        (("add", b"\xff\xfe"), 400, "INVALID_PARAMS"),
        (("nope", b"{}"), 404, "TOOL_NOT_FOUND"),
    ],
)
async def test_bad_calls_get_the_status_of_their_code(
    request_: tuple[str, bytes], status: int, code: str
) -> None:
    name, body = request_
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post(f"/tools/{name}", content=body, headers=JSON)
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)


@pytest.mark.parametrize("code", sorted(CATALOG))
async def test_every_catalog_code_gets_the_status_of_appendix_a(code: str) -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/tools/fail", json={"code": code})
    assert response.status_code == CATALOG[code].http_status
    assert response.json()["error"]["code"] == code
    if response.status_code in (429, 503):
        assert response.headers["Retry-After"] == "1"


async def test_rate_limited_tools_say_when_to_retry() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/tools/fail", json={"code": "RATE_LIMITED", "retry_after": 7.2})
    assert response.status_code == 429 and response.headers["Retry-After"] == "8"


async def test_a_tool_code_outside_the_catalog_is_a_500() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        response = await c.post("/tools/fail", json={"code": "CITY_NOT_FOUND"})
    assert response.status_code == 500 and response.json()["error"]["code"] == "CITY_NOT_FOUND"


async def test_policies_of_a_given_pipeline_answer_with_their_statuses() -> None:
    @tool
    async def hang() -> str:
        """Never answers in time."""
        await asyncio.sleep(30)
        return "late"

    metrics = MetricsPolicy()
    pipeline = with_policies(
        SimpleToolset([OldAdd(), hang]), metrics, DeprecationPolicy(), TimeoutPolicy(0.05)
    )
    async with serving(create_app(pipeline)) as url, httpx.AsyncClient(base_url=url) as c:
        retired = await c.post("/tools/old_add", json={"a": 1, "b": 2})
        late = await c.post("/tools/hang", json={})
        text = (await c.get("/metrics")).text
    assert retired.status_code == 410 and retired.json()["error"]["replacement"] == "add"
    assert late.status_code == 504 and late.json()["error"]["code"] == "TIMEOUT"
    assert 'kosong_tool_calls_total{tool="hang"} 1' in text  # the pipeline's own registry


async def test_healthz_and_metrics_in_prometheus_text() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        health = await c.get("/healthz")
        await c.post("/tools/add", json={"a": 1, "b": 2})
        await c.post("/tools/add", json={"a": 1})
        metrics = await c.get("/metrics")
    assert health.json() == {"status": "ok"}
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = metrics.text.splitlines()
    assert 'kosong_tool_calls_total{tool="add"} 2' in lines
    assert 'kosong_tool_errors_total{tool="add",code="INVALID_PARAMS"} 1' in lines
    assert "kosong_server_runs_active 0" in lines
    assert 'kosong_server_rejected_requests_total{reason="auth"} 0' in lines


async def test_cacheable_tools_are_cached_by_the_default_pipeline() -> None:
    calls: list[int] = []

    class Lookup(CallableTool2[KeyParams]):
        name: str = "lookup"
        description: str = "Look a key up."
        params: type[KeyParams] = KeyParams
        cacheable = True
        cache_ttl = 60

        async def __call__(self, params: KeyParams) -> ToolReturnValue:
            calls.append(params.key)
            return ToolOk(output=str(params.key * 2))

    async with serving(create_app([Lookup()])) as url, httpx.AsyncClient(base_url=url) as c:
        first = (await c.post("/tools/lookup", json={"key": 2})).json()
        second = (await c.post("/tools/lookup", json={"key": 2})).json()
    assert calls == [2] and first["data"] == second["data"] == "4"
    assert second["metadata"]["cache"]["hit"] is True


async def test_extra_routes_sit_behind_the_same_checks() -> None:
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    app = create_app(tools, ServerConfig(token="t0k"), routes=[Route("/extra", hello)])
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        refused = await c.get("/extra")
        foreign = await c.get(
            "/extra", headers={"Host": "evil.example", "Authorization": "Bearer t0k"}
        )
        allowed = await c.get("/extra", headers={"Authorization": "Bearer t0k"})
    assert refused.status_code == 401 and foreign.status_code == 421
    assert allowed.text == "hello"


async def test_root_is_left_free_without_the_inspector() -> None:
    app = create_app(tools, ServerConfig(inspector=False))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/")).status_code == 404
