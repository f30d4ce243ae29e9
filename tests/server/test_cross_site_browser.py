"""A page of another origin, in a real browser, cannot run a tool; the server's own page can.

Debian's Chromium (Playwright) opens an attacker's page served from another port, which tries
every request a page may send without the server's consent: an `<img>`, an `<iframe>`, a
followed link, form POSTs (text/plain shaped as JSON, urlencoded, multipart), `fetch` in no-cors
mode (GET, HEAD, POST), a JSON `fetch` (which needs a CORS preflight) and an `EventSource`.
The `touch` tool records every call that runs; the server's requests are recorded as they
arrive, to show that each attempt reached it and was refused.

Three attackers: another port of the same host (`same-site`: the port is not part of a site),
another host name (`cross-site`), and, for browsers that send no `Sec-Fetch-Site`, a server
on a plain-HTTP host name that is not this machine's (Chromium sends no fetch metadata there).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from kosong.server import LOCAL_HOSTS, ServerConfig, create_app, serving
from tests.server._browser import FLAGS, chromium_or_skip
from tests.server._tools import TOUCHED, tools

pytestmark = pytest.mark.external  # headless Chromium against a server in this process

# Chromium resolves *.test to this machine, so the third attacker needs no DNS.
RESOLVE = "--host-resolver-rules=MAP *.test 127.0.0.1"

ATTACKS = {
    # tag: how the victim recognises the attempt (method, path, and query or body marker)
    "img": ("GET", "/tools/touch/sse", "tag=img"),
    "iframe": ("GET", "/tools/touch/sse", "tag=iframe"),
    "link": ("GET", "/tools/touch/sse", "tag=link"),
    "form-text": ("POST", "/tools/touch", "text/plain"),
    "form-urlencoded": ("POST", "/tools/touch/sse", "application/x-www-form-urlencoded"),
    "form-multipart": ("POST", "/tools/touch", "multipart/form-data"),
    "no-cors-get": ("GET", "/tools/touch/sse", "tag=no-cors-get"),
    "no-cors-head": ("HEAD", "/tools/touch/sse", "tag=no-cors-head"),
    "no-cors-post": ("POST", "/tools/touch/sse", "text/plain"),
    "event-source": ("GET", "/tools/touch/sse", "tag=event-source"),
}

ATTACKER_PAGE = """<!doctype html>
<title>a page on another origin</title>
<img src="{v}/tools/touch/sse?tag=img">
<iframe src="{v}/tools/touch/sse?tag=iframe"></iframe>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="form-text" method="POST" action="{v}/tools/touch" enctype="text/plain" target="sink1">
  <input name='{{"tag": "form-text", "x": "' value='"}}'></form>
<form id="form-urlencoded" method="POST" action="{v}/tools/touch/sse" target="sink2">
  <input name="tag" value="form-urlencoded"></form>
<form id="form-multipart" method="POST" action="{v}/tools/touch" enctype="multipart/form-data"
  target="sink3"><input name="tag" value="form-multipart"></form>
<a id="link" href="{v}/tools/touch/sse?tag=link">a link</a>
<script>
const v = "{v}";
const source = new Promise((resolve) => {{
  const es = new EventSource(v + "/tools/touch/sse?tag=event-source");
  es.onerror = () => {{ es.close(); resolve("error"); }};
  es.onmessage = () => resolve("message");
}});
window.attempts = Promise.allSettled([
  fetch(v + "/tools/touch/sse?tag=no-cors-get", {{mode: "no-cors"}}),
  fetch(v + "/tools/touch/sse?tag=no-cors-head", {{mode: "no-cors", method: "HEAD"}}),
  fetch(v + "/tools/touch/sse", {{mode: "no-cors", method: "POST",
                                 body: '{{"tag": "no-cors-post"}}'}}),
  fetch(v + "/tools/touch", {{method: "POST", headers: {{"Content-Type": "application/json"}},
                             body: '{{"tag": "cors-json"}}'}}),
  source,
]).then((all) => all.map((a) => a.status + " " + (a.value ? a.value.status ?? a.value : "")));
</script>"""


@dataclass
class Seen:
    """A request as it reached the victim, and the status it was answered with."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    status: int | None = None


@dataclass
class Recorder:
    """The victim app, recording each HTTP request and its answer's status."""

    app: Any
    seen: list[Seen] = field(default_factory=list[Seen])

    @property
    def state(self) -> Any:  # `serving` drains the app's runs through it
        return self.app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"]}
        entry = Seen(scope["method"], scope["path"], scope["query_string"].decode(), headers)
        self.seen.append(entry)

        async def recording(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry.status = message["status"]
            await send(message)

        await self.app(scope, receive, recording)

    def matching(self, method: str, path: str, marker: str) -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.method == method
            and s.path == path
            and (marker in s.query or marker in s.headers.get("content-type", ""))
        ]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    chromium = chromium_or_skip()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium, args=[*FLAGS, RESOLVE], timeout=30_000
        )
        try:
            yield launched
        finally:
            await launched.close()


@contextlib.asynccontextmanager
async def victim_and_attacker(
    victim_host: str, attacker_host: str
) -> AsyncIterator[tuple[Recorder, str, str]]:
    config = ServerConfig(retry_ms=50, grace=1, allowed_hosts=(*LOCAL_HOSTS, "victim.test"))
    victim = Recorder(create_app(tools, config))
    victim_base: list[str] = []

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(ATTACKER_PAGE.format(v=victim_base[0]))

    attacker = Starlette(routes=[Route("/", page)])
    async with serving(victim) as victim_url, serving(attacker) as attacker_url:
        victim_base.append(f"http://{victim_host}:{victim_url.rpartition(':')[2]}")
        yield victim, victim_base[0], f"http://{attacker_host}:{attacker_url.rpartition(':')[2]}"


async def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"never reached the server: {what}"
        await asyncio.sleep(0.02)


async def _attack(page: Page, victim: Recorder, attacker_url: str) -> list[str]:
    """Open the attacker's page, let it try everything, and wait until each try arrived."""
    await page.goto(attacker_url + "/")
    settled: list[str] = await page.evaluate("window.attempts")
    for form in ("form-text", "form-urlencoded", "form-multipart"):
        await page.evaluate(f"document.getElementById('{form}').submit()")
    await page.click("#link")  # a top-level navigation to the victim
    await page.wait_for_load_state()
    for tag, (method, path, marker) in ATTACKS.items():
        await _until(lambda m=method, p=path, k=marker: victim.matching(m, p, k), tag)
    return settled


@pytest.mark.parametrize(
    ("victim_host", "attacker_host", "site"),
    [
        ("127.0.0.1", "127.0.0.1", "same-site"),
        ("127.0.0.1", "localhost", "cross-site"),
        ("victim.test", "attacker.test", None),  # plain HTTP elsewhere: no fetch metadata
    ],
    ids=["another-port", "another-host", "no-fetch-metadata"],
)
async def test_a_page_of_another_origin_cannot_run_a_tool(
    browser: Browser, victim_host: str, attacker_host: str, site: str | None
) -> None:
    TOUCHED.clear()
    async with victim_and_attacker(victim_host, attacker_host) as (victim, _, attacker_url):
        context = await browser.new_context()
        try:
            settled = await _attack(await context.new_page(), victim, attacker_url)
        finally:
            await context.close()
        for tag, (method, path, marker) in ATTACKS.items():
            for seen in victim.matching(method, path, marker):
                assert seen.status is not None and 400 <= seen.status < 500, (tag, seen)
                assert seen.headers.get("sec-fetch-site") == site, (tag, seen.headers)
        # The JSON fetch needs the server's consent (a CORS preflight): refused, never sent.
        preflights = victim.matching("OPTIONS", "/tools/touch", "")
        assert preflights and all(s.status in (403, 405) for s in preflights)  # no CORS grant
        assert victim.matching("POST", "/tools/touch", "application/json") == []
    assert TOUCHED == [], f"a tool ran: {TOUCHED}"
    assert settled[3].startswith("rejected")  # the JSON fetch: blocked by the browser


async def test_the_servers_own_page_runs_and_resumes_with_eventsource(browser: Browser) -> None:
    TOUCHED.clear()
    async with victim_and_attacker("127.0.0.1", "localhost") as (victim, victim_url, _):
        context = await browser.new_context()
        try:
            page = await context.new_page()
            await page.goto(victim_url + "/healthz")  # any page of the server's own origin
            received = await page.evaluate(
                """() => new Promise((resolve) => {
                  const events = [];
                  const es = new EventSource("/tools/touch/sse?tag=own-page");
                  es.addEventListener("tool_result", (e) => events.push(JSON.parse(e.data).data));
                  // After the final event the server ends the stream; EventSource reconnects
                  // with Last-Event-ID, is answered 204, and stops for good.
                  es.onerror = () => { if (es.readyState === EventSource.CLOSED) resolve(events); };
                })"""
            )
            fetched = await page.evaluate(
                """async () => (await (await fetch("/tools/touch", {method: "POST",
                    headers: {"Content-Type": "application/json"},
                    body: JSON.stringify({tag: "own-fetch"})})).json()).data"""
            )
        finally:
            await context.close()
    resumes = [s for s in victim.seen if s.headers.get("last-event-id")]
    assert received == ["touched own-page"] and fetched == "touched own-fetch"
    assert [(s.path, s.status, s.headers["sec-fetch-site"]) for s in resumes] == [
        ("/tools/touch/sse", 204, "same-origin")
    ]
    assert TOUCHED == ["own-page", "own-fetch"]  # each once: the reconnection ran nothing


async def test_without_fetch_metadata_the_servers_own_page_starts_runs_with_post_only(
    browser: Browser,
) -> None:
    TOUCHED.clear()
    async with victim_and_attacker("victim.test", "attacker.test") as (victim, victim_url, _):
        context = await browser.new_context()
        try:
            page = await context.new_page()
            await page.goto(victim_url + "/healthz")
            statuses = await page.evaluate(
                """async () => [
                  (await fetch("/tools/touch/sse?tag=own-get")).status,
                  (await fetch("/tools/touch/sse", {method: "POST",
                    headers: {"Content-Type": "application/json"},
                    body: JSON.stringify({tag: "own-post"})})).status,
                ]"""
            )
        finally:
            await context.close()
    assert all("sec-fetch-site" not in s.headers for s in victim.seen)
    assert statuses == [403, 200]
    assert TOUCHED == ["own-post"]  # GET: such a browser does not say where it comes from
