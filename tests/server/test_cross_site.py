"""No request that a page of another site can make runs a tool, and HEAD never runs anything.

Over real sockets with httpx, sending what browsers send (their `Sec-Fetch-Site`, `Origin` and
`Content-Type`); tests/server/test_cross_site_browser.py does the same attacks from a real
Chromium page on another origin.
"""

from __future__ import annotations

import httpx
import pytest

from kosong.server import ServerConfig, create_app, serving
from tests.server._sse import read_sse
from tests.server._tools import TOUCHED, tools

JSON = "application/json"


@pytest.fixture(autouse=True)
def _untouched() -> None:
    TOUCHED.clear()


def _acting(run_path: str) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    """Requests that run or change something: (method, path, headers, body)."""
    body = b'{"tag": "t"}'
    return [
        ("POST", "/tools/touch", {"Content-Type": JSON}, body),
        ("POST", "/tools/touch/sse", {"Content-Type": JSON}, body),
        ("GET", "/tools/touch/sse?tag=t", {}, None),
        ("HEAD", "/tools/touch/sse?tag=t", {}, None),
        ("DELETE", run_path, {}, None),
    ]


@pytest.mark.parametrize(
    "marks",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example.com"},
        {"Sec-Fetch-Site": "same-site"},  # another port of localhost is the same site
        {"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:9999"},
    ],
    ids=["cross-site", "cross-site-origin", "same-site", "same-site-unlisted-origin"],
)
async def test_a_request_a_browser_marks_as_from_another_site_runs_nothing(
    marks: dict[str, str],
) -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        run = await read_sse(c, "POST", "/tools/count/sse", json={"n": 1, "delay": 0})
        path = run.headers["content-location"]
        refused = [
            await c.request(method, p, headers={**headers, **marks}, content=body)
            for method, p, headers, body in _acting(path)
        ]
        reading = await c.get("/tools", headers=marks)  # reading is no action
        metrics = (await c.get("/metrics")).text
    foreign_origin = "evil" in marks.get("Origin", "")  # refused by the Origin check first
    for response in refused:
        assert response.status_code == 403, response.text
        if response.request.method != "HEAD":
            error = response.json()["error"]
            assert error["code"] == "PERMISSION_DENIED"
            assert foreign_origin or "another site" in error["message"], error
    assert TOUCHED == []
    assert reading.status_code == (403 if foreign_origin else 200)
    if not foreign_origin:
        assert 'kosong_server_rejected_requests_total{reason="cross_site"} 5' in metrics


async def test_a_page_of_a_listed_origin_on_the_same_site_may_call() -> None:
    config = ServerConfig(allowed_origins=("http://localhost:3000",))
    marks = {"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:3000"}
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        called = await c.post("/tools/touch", json={"tag": "listed"}, headers=marks)
        streamed = await read_sse(c, "GET", "/tools/touch/sse?tag=listed-get", headers=marks)
    assert called.status_code == 200 and streamed.final["data"] == "touched listed-get"
    assert TOUCHED == ["listed", "listed-get"]


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
     "multipart/form-data; boundary=x"],
)  # fmt: skip
@pytest.mark.parametrize("path", ["/tools/touch", "/tools/touch/sse"])
async def test_a_post_a_form_or_no_cors_fetch_could_send_runs_nothing(
    path: str, content_type: str | None
) -> None:
    # What a browser without Sec-Fetch-Site sends for a form or a no-cors fetch.
    headers = {"Origin": "http://localhost:9999"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        refused = await c.post(path, content=b'{"tag": "form"}', headers=headers)
        empty = await c.post(path, headers={k: v for k, v in headers.items() if k == "Origin"})
    assert refused.status_code == empty.status_code == 415
    assert refused.json()["error"]["code"] == "INVALID_PARAMS"
    assert "application/json" in refused.json()["error"]["message"]
    assert TOUCHED == []


async def test_starting_a_run_with_get_needs_a_header_no_simple_request_carries() -> None:
    config = ServerConfig(tokens={"s3cret": "alice"})
    bearer = {"Authorization": "Bearer s3cret"}
    async with (
        serving(create_app(tools)) as open_url,
        serving(create_app(tools, config)) as token_url,
        httpx.AsyncClient() as c,
    ):
        bare = await c.get(f"{open_url}/tools/touch/sse?tag=bare")  # an <img>, an old browser
        typed = await read_sse(c, "GET", f"{open_url}/tools/touch/sse?tag=typed",
                               headers={"Sec-Fetch-Site": "none"})  # fmt: skip
        page = await read_sse(c, "GET", f"{open_url}/tools/touch/sse?tag=page",
                              headers={"Sec-Fetch-Site": "same-origin"})  # fmt: skip
        token = await read_sse(c, "GET", f"{token_url}/tools/touch/sse?tag=token", headers=bearer)
        # Resuming is no start: an EventSource of this origin reconnects with Last-Event-ID
        # alone, and GET /runs/{id} needs nothing more either.
        resumed = await read_sse(c, "GET", f"{open_url}/tools/touch/sse?tag=typed",
                                 last_event_id=typed.ids[0].rpartition(".")[0] + ".0")  # fmt: skip
        replay = await read_sse(c, "GET", f"{open_url}{typed.headers['content-location']}")
    assert bare.status_code == 403 and "Sec-Fetch-Site" in bare.json()["error"]["message"]
    assert typed.final["data"] == "touched typed" and page.final["data"] == "touched page"
    assert token.final["data"] == "touched token"
    assert resumed.kinds == replay.kinds == ["tool_result"]
    assert TOUCHED == ["typed", "page", "token"]  # each ran once; the refused one never


async def test_head_never_runs_anything() -> None:
    browser = {"Sec-Fetch-Site": "same-origin"}
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        run = await read_sse(c, "POST", "/tools/count/sse", json={"n": 1, "delay": 0})
        head_start = await c.head("/tools/touch/sse?tag=head", headers=browser)
        head_run = await c.head(run.headers["content-location"])
        head_tool = await c.head("/tools/touch")
    assert head_start.status_code == head_run.status_code == 405
    assert head_start.headers["Allow"] == "GET, POST"
    assert head_tool.status_code == 200  # a definition's headers: nothing runs
    assert TOUCHED == []


async def test_the_checks_hold_for_an_app_mounted_under_a_prefix() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    inner = create_app(tools, ServerConfig(token="s3cret"))
    outer = Starlette(routes=[Mount("/api", app=inner)])
    bearer = {"Authorization": "Bearer s3cret"}
    async with serving(outer) as url, httpx.AsyncClient(base_url=url) as c:
        bare = await c.get("/api/tools/touch/sse?tag=bare")  # refused before the token check
        img = await c.get("/api/tools/touch/sse?tag=img", headers=bearer)
        other_site = await c.get("/api/tools/touch/sse?tag=site",
                                 headers={**bearer, "Sec-Fetch-Site": "cross-site"})  # fmt: skip
        health = await c.get("/api/healthz")  # exempt from the token there too
    assert bare.status_code == 403 and "Sec-Fetch-Site" in bare.json()["error"]["message"]
    assert img.status_code == 200  # a bearer token: no simple request carries one
    assert other_site.status_code == 403 and health.status_code == 200
    assert TOUCHED == ["img"]
