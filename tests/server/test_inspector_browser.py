"""The inspector page in a real browser: Debian's Chromium, driven by Playwright.

Each test serves the example tools (examples/inspector_tools.py, plus a `stepper` the test
moves one step at a time) with a real uvicorn server on a free port, opens the page, and does
what a person would: fill forms, call tools, watch the progress, lose the connection (through
a proxy the test cuts), cancel, give a token. Each state is saved as a screenshot in
`artifacts/inspector/` (not committed; `KOSONG_ARTIFACTS` moves it).

Chromium must be installed (`apt-get install chromium`, which .ci/run does): in CI a missing
browser is a failure; locally the tests skip and say why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from examples.inspector_tools import make_toolset
from playwright.async_api import Browser, Locator, Page, Request, async_playwright, expect
from pydantic import BaseModel, Field, PrivateAttr

from kosong.message import ToolCall
from kosong.server import ServerConfig, create_app, serving
from kosong.standard import report_progress, with_policies
from kosong.standard.policies import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    MetricsRegistry,
)
from kosong.tooling import CallableTool, CallableTool2, ToolOk, ToolReturnValue
from kosong.tooling.simple import SimpleToolset
from tests.server._browser import FLAGS, chromium_or_skip
from tests.server._proxy import Proxy
from tests.server._sse import read_sse

pytestmark = pytest.mark.external  # headless Chromium

ARTIFACTS = (
    Path(os.environ.get("KOSONG_ARTIFACTS") or Path(__file__).resolve().parents[2] / "artifacts")
    / "inspector"
)
TOKEN = "s3cret-t0ken"

expect.set_options(timeout=10_000)


# --- a tool the test moves one step at a time ---------------------------------------------------


class Gate:
    """What the `stepper` waits on and tells: permits to take a step, steps reported."""

    def __init__(self) -> None:
        self.permits: asyncio.Queue[None] = asyncio.Queue()
        self.reported: asyncio.Queue[int] = asyncio.Queue()
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def step_reported(self, step: int) -> None:
        """Wait until the tool has reported `step` (its event is in the run's store)."""
        while await asyncio.wait_for(self.reported.get(), 10) != step:
            pass


class StepParams(BaseModel):
    steps: int = Field(default=4, ge=1, le=10, description="How many steps")


class Stepper(CallableTool2[StepParams]):
    name: str = "stepper"
    description: str = "Take one step each time the test allows, reporting progress."
    params: type[StepParams] = StepParams
    streaming = True
    _gate: Gate = PrivateAttr(default_factory=Gate)

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self._gate = gate

    async def __call__(self, params: StepParams) -> ToolReturnValue:
        gate = self._gate
        gate.started.set()
        try:
            for step in range(1, params.steps + 1):
                await gate.permits.get()
                report_progress(step * 100 / params.steps, f"step {step} of {params.steps}")
                gate.reported.put_nowait(step)
        except asyncio.CancelledError:
            gate.cancelled.set()
            raise
        return ToolOk(output=f"{params.steps} steps done")


FOUR_STEPS = [*(f"{n} tool_progress" for n in range(1, 5)), "5 tool_result"]
"""The events of a four-step run, each once, in order: `<position> <kind>`."""


def _app(gate: Gate | None = None, *, stepper: bool = True, **config: Any) -> Any:
    """The example tools, and the stepper unless told not to, on a server for the tests."""
    settings = ServerConfig(retry_ms=50, grace=1, **config)
    extra = [Stepper(gate or Gate())] if stepper else []
    return create_app(make_toolset(*extra), settings)


# --- the browser and a page on a server -----------------------------------------------------------


@pytest.fixture
def chromium() -> str:
    return chromium_or_skip()


@pytest.fixture
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium, args=FLAGS, timeout=30_000
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
def gate() -> Gate:
    return Gate()


@dataclass
class Session:
    """A page of the inspector, open on a server (through `proxy` when there is one)."""

    page: Page
    url: str
    proxy: Proxy | None
    errors: list[str] = field(default_factory=list[str])
    requests: list[Request] = field(default_factory=list[Request])

    async def open(self) -> None:
        await self.page.goto(self.url + "/")

    def field(self, path: str) -> Locator:
        """The input of the field at `path` (`start.latitude`, `stops[1]`, `['budget-eur']`)."""
        return self.page.locator(f'[data-path="{path}"] > :is(input, select, textarea)')

    async def fill(self, values: dict[str, str]) -> None:
        """Type each value into the field at its path."""
        for path, value in values.items():
            await self.field(path).fill(value)

    def error_of(self, path: str) -> Locator:
        return self.page.locator(f'[data-path="{path}"] > .field-error')

    async def select(self, tool: str) -> None:
        await self.page.locator(f'button.tool[data-tool="{tool}"]').click()
        await expect(self.page.locator("#tool-name")).to_contain_text(tool)

    async def call(self) -> None:
        await self.page.locator("#call-button").click()

    async def start_stepper(self, gate: Gate, steps: int = 4) -> None:
        """Call the stepper with `steps`, and wait until it runs."""
        await self.select("stepper")
        await self.field("steps").fill(str(steps))
        await self.call()
        await asyncio.wait_for(gate.started.wait(), 10)

    def outcome(self) -> Locator:
        return self.page.locator("#result .outcome")

    async def event_sequence(self) -> list[str]:
        return await self.page.locator("#events li.event").evaluate_all(
            "rows => rows.map(row => row.dataset.seq + ' ' + row.dataset.kind)"
        )

    async def shot(self, name: str, *, full_page: bool = True) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if not full_page:
            await self.page.evaluate("window.scrollTo(0, 0)")
        await self.page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=full_page)


@contextlib.asynccontextmanager
async def opened(browser: Browser, app: Any, *, via_proxy: bool = False) -> AsyncIterator[Session]:
    async with serving(app) as url:
        proxy = Proxy(int(url.rpartition(":")[2])) if via_proxy else None
        async with proxy.running() if proxy else contextlib.nullcontext(url) as base:
            context = await browser.new_context(viewport={"width": 1280, "height": 880})
            page = await context.new_page()
            session = Session(page, base, proxy)
            page.on("pageerror", lambda error: session.errors.append(str(error)))
            page.on("request", lambda request: session.requests.append(request))
            try:
                await session.open()
                yield session
            finally:
                await context.close()  # its streams close before the server stops
    assert session.errors == [], "the page threw"


# --- the tests ------------------------------------------------------------------------------------


async def test_the_tools_are_listed_with_their_metadata_and_provider_verdicts(
    browser: Browser,
) -> None:
    async with opened(browser, _app()) as s:
        page = s.page
        tools = page.locator("button.tool")
        await expect(tools).to_have_count(8)
        badges = {
            "legacy_forecast": "deprecated",
            "exchange_rate": "cached 60 s",
            "forget_trip": "destructive",
            "crawl_site": "read-only",
        }
        for tool, text in badges.items():
            await expect(page.locator(f'button.tool[data-tool="{tool}"]')).to_contain_text(text)
        await s.select("plan_trip")
        verdicts = page.locator("table.dialects tbody tr")
        await expect(verdicts).to_have_count(7)
        gemini = page.locator('table.dialects tr[data-dialect="gemini"]')
        # Gemini takes JSON Schema (parametersJsonSchema) and does not read exclusiveMinimum.
        await expect(gemini).to_have_attribute("data-verdict", "ignored")
        await expect(gemini).to_contain_text("exclusiveMinimum")
        await expect(page.locator('button.tool[data-tool="plan_trip"]')).not_to_contain_text(
            "rejected"
        )
        await expect(page.locator('tr[data-dialect="moonshot"]')).to_have_attribute(
            "data-verdict", "ok"
        )
        await page.locator("details.schema summary").click()
        await expect(page.locator("#schema-json")).to_contain_text('"budget-eur"')
        # The form: every field the schema has, defaults filled in, required ones marked.
        await expect(s.field("transport")).to_have_value("0")  # "train", the default
        await expect(s.field("travellers")).to_have_value("2")
        await expect(page.locator("[data-path=\"['budget-eur']\"] .required")).to_have_count(1)
        await expect(page.locator('[data-path="transport"] .required')).to_have_count(0)
        await expect(s.field("stops[0]")).to_have_count(1)  # minItems 1: one empty item
        await s.select("exchange_rate")
        await expect(page.locator("#output-schema-json")).to_contain_text('"rate"')
        await s.select("legacy_forecast")
        await expect(page.locator("#output-schema-json")).to_have_count(0)
        await expect(page.locator("dl.meta")).to_contain_text("sunset on 2099-12-31")
        await page.locator("dl.meta button.link", has_text="rainfall_chart").click()
        await expect(page.locator("#tool-name")).to_contain_text("rainfall_chart")
        await s.shot("tools")


async def test_a_filled_form_calls_the_tool_and_the_result_is_rendered(browser: Browser) -> None:
    async with opened(browser, _app(stepper=False)) as s:
        page = s.page
        await s.select("plan_trip")
        place = {"start.name": "Munich", "start.latitude": "48.137", "start.longitude": "11.575"}
        await s.fill({**place, "stops[0]": "Vienna"})
        await page.get_by_role("button", name="Add an item to stops").click()
        await s.field("stops[1]").fill("Prague")
        await s.field("transport").select_option(label="car")
        await s.field("travellers").fill("3")
        await s.field("['budget-eur']").fill("900")
        await s.field("avoid_tolls").check()
        await page.locator("details.preview summary").click()
        await expect(page.locator("#arguments-preview")).to_contain_text('"budget-eur": 900')
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        result = page.locator("#result")
        await expect(result.locator(".output")).to_contain_text('"Munich"')
        await expect(result.locator('[data-block="brief"]')).to_contain_text("2 legs")
        await expect(result.locator('[data-block="brief"] .label')).to_have_text(
            "Brief for the user:"
        )
        await expect(result.locator('[data-block="table"] tbody tr')).to_have_count(2)
        await expect(result.locator('[data-block="table"]')).to_contain_text("Vienna → Prague")

        await s.select("rainfall_chart")
        await s.field("city").select_option(label="Lisbon")
        await s.field("months").fill("4")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(result.locator('[data-part="text"]')).to_contain_text("Jan–Apr")
        image = result.locator('img[data-part="image_url"]')
        await expect(image).to_have_count(1)
        width = await image.evaluate("img => img.decode().then(() => img.naturalWidth)")
        assert width == 240  # the PNG the tool drew, decoded by the browser
        table = result.locator('[data-block="table"]')
        await expect(table.locator("thead th")).to_have_text(["month", "mm"])
        await expect(table.locator("tbody tr")).to_have_count(4)
        await expect(result.locator('[data-block="map_pin"]')).to_contain_text('"city": "Lisbon"')
        for fact in ("server-time", "wall-time", "trace", "run"):
            await expect(result.locator(f'[data-fact="{fact}"]')).not_to_be_empty()
        await expect(result.locator('[data-fact="trace"]')).to_contain_text("trace_")
        await expect(result.locator('[data-fact="cache"]')).to_have_text("not cacheable")
        await s.shot("inspector", full_page=False)  # the one in the README (docs/inspector.png)
        await result.locator("details.envelope summary").click()
        envelope = result.locator('details.envelope pre[aria-label="the envelope"]')
        await expect(envelope).to_contain_text('"success": true')
        await expect(envelope).to_contain_text('"image_url"')
        await s.shot("result")


async def test_the_progress_advances_while_a_slow_tool_runs(browser: Browser, gate: Gate) -> None:
    async with opened(browser, _app(gate)) as s:
        page = s.page
        await s.start_stepper(gate, 4)
        await expect(page.locator("#run")).to_have_attribute("data-state", "running")
        await expect(page.locator("#cancel-button")).to_be_enabled()
        for step in (1, 2, 3):
            gate.permits.put_nowait(None)
            await expect(page.locator("#progress")).to_have_js_property("value", 25 * step)
            await expect(page.locator("#progress-text")).to_contain_text(f"step {step} of 4")
            if step == 2:
                await s.shot("progress")
        gate.permits.put_nowait(None)
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(page.locator("#progress")).to_have_attribute("data-done", "success")
        assert await s.event_sequence() == FOUR_STEPS


async def test_a_dropped_connection_is_resumed_and_every_event_arrives_once(
    browser: Browser, gate: Gate
) -> None:
    async with opened(browser, _app(gate), via_proxy=True) as s:
        page = s.page
        assert s.proxy is not None
        await s.start_stepper(gate)
        for _ in range(2):
            gate.permits.put_nowait(None)
        await expect(page.locator("#progress")).to_have_js_property("value", 50)
        run_id = await page.locator("#run").get_attribute("data-run-id")
        assert run_id

        s.proxy.refusing = True
        s.proxy.cut()  # the connection drops for real, mid-run
        await expect(page.locator("#events li.connection.lost")).to_have_count(1)
        gate.permits.put_nowait(None)  # step 3 happens while the page is cut off
        await gate.step_reported(3)
        # The page tries again, and is refused at least once more, before the proxy opens.
        await expect(page.locator("#run")).to_have_attribute(
            "data-attempt", re.compile(r"[2-9]|\d\d")
        )
        await expect(page.locator("#progress-text")).to_contain_text("step 2 of 4")

        s.proxy.refusing = False
        resumed = page.locator("#events li.connection.resumed")
        await expect(resumed).to_have_count(1)
        await expect(resumed).to_have_attribute("data-resumed", f"{run_id}.2")
        await expect(page.locator("#progress-text")).to_contain_text("step 3 of 4")  # replayed
        await expect(page.locator("#notices li.resumed")).to_contain_text(f"{run_id}.2")
        await s.shot("resumed")
        gate.permits.put_nowait(None)
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(s.outcome().locator(".badge.resumed")).to_have_text("resumed ×1")
        assert await s.event_sequence() == FOUR_STEPS
        await expect(page.locator("#events li.duplicate")).to_have_count(0)
        # One run: started once, followed again with Last-Event-ID.
        starts = [r for r in s.requests if r.method == "POST" and "/sse" in r.url]
        follows = [r for r in s.requests if r.url.endswith(f"/runs/{run_id}")]
        assert len(starts) == 1 and follows
        assert (await follows[-1].all_headers())["last-event-id"] == f"{run_id}.2"


async def test_invalid_arguments_are_shown_next_to_the_fields_they_name(browser: Browser) -> None:
    async with opened(browser, _app()) as s:
        page = s.page
        await s.select("plan_trip")
        place = {"start.name": "Home", "start.latitude": "100", "start.longitude": "2"}
        await s.fill({**place, "stops[0]": "Paris"})
        # The page's own check: nothing is sent, the errors sit by their fields.
        await s.call()
        await expect(s.error_of("start.latitude")).to_have_text("must be at most 90")
        await expect(s.error_of("['budget-eur']")).to_contain_text("Required")
        await expect(s.field("start.latitude")).to_have_attribute("aria-invalid", "true")
        await expect(s.field("start.latitude")).to_be_focused()
        await expect(page.locator("#form-errors")).to_contain_text("Not sent: 2 problems")
        assert not [r for r in s.requests if r.method == "POST"]

        # The server's check, of what the schema cannot say: the stops must be known cities.
        await s.field("start.latitude").fill("48.8")
        await s.field("['budget-eur']").fill("500")
        await page.get_by_role("button", name="Add an item to stops").click()
        await s.field("stops[1]").fill("Atlantis")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "INVALID_PARAMS")
        await expect(s.error_of("stops[1]")).to_contain_text(
            "'Atlantis' is not a city this planner knows"
        )
        # The error's details are labelled facts, not a bare `{ "retryable": false }` box.
        details = page.locator("#result .error-details")
        await expect(details.locator("dt")).to_have_text(["Retry"])
        await expect(details.locator('[data-detail="retryable"]')).to_have_text("will not help")
        await expect(page.locator("#result .error-message + pre")).to_have_count(0)
        await expect(s.error_of("start.latitude")).to_be_hidden()
        await expect(page.locator("#form-errors")).to_contain_text("The server refused")

        # Unchecked in the page, out-of-bounds values reach the server, which names them:
        # `start.latitude` and `['budget-eur']` (a name that is not an identifier).
        await s.field("stops[1]").fill("Lyon")
        await page.get_by_label("Check the arguments in the page before sending").uncheck()
        await s.field("start.latitude").fill("100")
        await s.field("['budget-eur']").fill("-5")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "INVALID_PARAMS")
        await expect(s.error_of("start.latitude")).to_contain_text("less than or equal to 90")
        await expect(s.error_of("['budget-eur']")).to_contain_text("greater than 0")
        await expect(page.locator("#form-errors")).to_contain_text("['budget-eur']")
        await s.shot("invalid")


async def test_a_run_is_cancelled_from_the_page(browser: Browser, gate: Gate) -> None:
    async with opened(browser, _app(gate)) as s:
        page = s.page
        await s.start_stepper(gate, 3)
        gate.permits.put_nowait(None)
        await expect(page.locator("#progress-text")).to_contain_text("step 1 of 3")
        await page.get_by_role("button", name="Cancel the run").click()
        await expect(s.outcome()).to_have_attribute("data-outcome", "CANCELLED")
        await asyncio.wait_for(gate.cancelled.wait(), 10)  # the tool's task was cancelled
        assert (await s.event_sequence())[-1] == "2 tool_error"
        await expect(page.locator("#cancel-button")).to_be_disabled()
        await expect(page.locator("#call-button")).to_be_enabled()
        deletes = [r for r in s.requests if r.method == "DELETE"]
        assert len(deletes) == 1 and "/runs/" in deletes[0].url
        await s.shot("cancelled")


async def test_a_token_protected_server_gets_the_token_in_the_header_only(
    browser: Browser,
) -> None:
    async with opened(browser, _app(token=TOKEN)) as s:
        page = s.page
        token_field = page.get_by_label("Bearer token")
        await expect(token_field).to_be_visible()
        await expect(token_field).to_be_focused()
        # Said once, in the status line; the help says only what the page does with the token.
        await expect(page.get_by_text("This server needs a token.")).to_have_count(1)
        await expect(page.locator("#server-status")).to_have_text("This server needs a token.")
        await expect(page.locator("button.tool")).to_have_count(0)
        await token_field.fill("wrong")
        await token_field.press("Enter")
        await expect(page.locator("#token-error")).to_contain_text("refused this token")
        await token_field.fill(TOKEN)
        await page.get_by_role("button", name="Connect").click()
        await expect(page.locator("button.tool")).to_have_count(8)
        await expect(page.locator("#token-form")).to_be_hidden()
        await s.select("exchange_rate")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(page.locator('#result [data-fact="cache"]')).to_have_text("miss")
        await s.call()
        await expect(page.locator('#result [data-fact="cache"]')).to_contain_text("hit")
        await s.shot("token")
        # Reloaded, the tab still has its token and its history.
        await page.reload()
        await expect(page.locator("button.tool")).to_have_count(8)
        await expect(page.locator("#history li")).to_have_count(2)

        api = re.compile(r"/(tools|dialects|metrics|runs)(/.*)?")
        sent_after_token = False
        for request in s.requests:
            assert TOKEN not in request.url
            headers = await request.all_headers()
            if headers.get("authorization") == f"Bearer {TOKEN}":
                sent_after_token = True
            elif sent_after_token and api.fullmatch(urlsplit(request.url).path):
                raise AssertionError(f"{request.url} was sent without the token")
        assert sent_after_token


async def test_retries_cache_deprecation_history_and_metrics_are_shown(browser: Browser) -> None:
    async with opened(browser, _app()) as s:
        page = s.page
        await s.select("flaky_lookup")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        retry = page.locator("#notices li.retry")
        await expect(retry).to_contain_text("Retry 1 of")
        await expect(retry).to_contain_text("NETWORK_ERROR")

        await s.select("legacy_forecast")
        await s.field("city").fill("Oslo")
        await s.call()
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(page.locator('#result [data-fact="warnings"]')).to_contain_text("deprecated")

        await s.select("exchange_rate")
        await s.field("quote").select_option(label="JPY")
        for _ in range(2):
            await s.call()
            await expect(page.locator("#call-button")).to_be_enabled()
        await expect(page.locator('#result [data-fact="cache"]')).to_contain_text("hit")

        history = page.locator("#history li")
        await expect(history).to_have_count(4)
        await expect(history.first).to_contain_text("exchange_rate")
        await page.get_by_role("button", name="Refresh").click()
        rate = page.locator('table.metrics tr[data-tool="exchange_rate"]')
        await expect(rate.locator('[data-metric="calls"]')).to_have_text("2")
        await expect(rate.locator('[data-metric="errors"]')).to_have_text("0")
        await expect(rate.locator('[data-metric="p50"]')).to_contain_text("s")
        await expect(rate.locator('[data-metric="p99"]')).to_contain_text("ms")
        flaky = page.locator('table.metrics tr[data-tool="flaky_lookup"]')
        await expect(flaky.locator('[data-metric="calls"]')).to_have_text("1")

        # An entry of the history brings back its arguments and its result.
        await history.last.locator("button").click()
        await expect(page.locator("#tool-name")).to_contain_text("flaky_lookup")
        await expect(page.locator("#result .badge", has_text="history")).to_have_count(1)
        await s.shot("history-metrics")


async def test_the_page_works_from_the_keyboard_and_labels_every_field(browser: Browser) -> None:
    async with opened(browser, _app()) as s:
        page = s.page
        await expect(page.locator("button.tool")).to_have_count(8)
        await page.keyboard.press("Tab")  # the skip link
        await page.keyboard.press("Tab")  # the tool list: one tab stop, the selected tool
        await expect(page.locator('button.tool[data-tool="crawl_site"]')).to_be_focused()
        await page.keyboard.press("ArrowDown")
        await page.keyboard.press("ArrowDown")
        await expect(page.locator('button.tool[data-tool="rainfall_chart"]')).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator("#tool-name")).to_contain_text("rainfall_chart")
        await page.keyboard.press("Tab")
        await expect(page.get_by_label("city")).to_be_focused()
        await page.keyboard.type("Vienna")
        await page.keyboard.press("Tab")
        await expect(page.get_by_label("months")).to_be_focused()
        await page.keyboard.press("Control+A")
        await page.keyboard.type("3")
        await page.keyboard.press("Enter")  # submits the form
        await expect(s.outcome()).to_have_attribute("data-outcome", "success")
        await expect(page.locator('#result [data-block="table"] tbody tr')).to_have_count(3)
        await expect(page.locator('#result [data-block="brief"]')).to_contain_text("Vienna")

        for tool in ("plan_trip", "crawl_site", "exchange_rate", "forget_trip"):
            await s.select(tool)
            unlabelled = await page.evaluate(
                """() => [...document.querySelectorAll('input, select, textarea')]
                    .filter(el => !el.labels.length && !el.getAttribute('aria-label'))
                    .map(el => el.id || el.outerHTML)"""
            )
            assert unlabelled == [], tool


# --- the page's own parsers, run in the browser ------------------------------------------------

STREAM = (
    "\ufeff: a comment\r\n"
    "retry: 50\r\n"
    "id: run.0\r\n"
    "\r\n"  # an id and no data: sets the last event id, dispatches nothing
    "event: tool_progress\n"
    "id: run.1\n"
    'data: {"progress": 50,\n'
    'data:  "message": "half"}\n'
    "\n"
    "data\r"  # a field name alone: an empty data line
    "id: bad\0id\r"  # an id with NUL is ignored
    "\r"
    "event: tool_result\n"
    "id: run.2\n"
    "data:{}\n"
    ": keep-alive\n"
    "\n"
    "data: never dispatched, the stream ends first"
)
EXPECTED = [
    {"type": "tool_progress", "data": '{"progress": 50,\n "message": "half"}', "id": "run.1"},
    {"type": "message", "data": "", "id": "run.1"},
    {"type": "tool_result", "data": "{}", "id": "run.2"},
]

PARSE = """async ([stream, sizes]) => {
  const { EventStreamParser } = await import("./inspector/sse.js");
  const results = [];
  for (const size of sizes) {
    const events = [], retries = [];
    const parser = new EventStreamParser({
      onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms) });
    for (let i = 0; i < stream.length; i += size) parser.feed(stream.slice(i, i + size));
    results.push({ events, retries, last: parser.lastEventId });
  }
  return results;
}"""


async def test_the_event_stream_parser_reads_any_split_of_a_stream(browser: Browser) -> None:
    async with opened(browser, _app()) as s:
        sizes = [len(STREAM), 1, 2, 3, 5, 7, 64]
        results = await s.page.evaluate(PARSE, [STREAM, sizes])
    for size, result in zip(sizes, results, strict=True):
        assert result["events"] == EXPECTED, size
        assert result["retries"] == [50] and result["last"] == "run.2", size


async def test_validation_messages_are_read_back_to_the_paths_they_name(
    browser: Browser,
) -> None:
    # Names that are not identifiers are quoted the way Python's repr() quotes them.
    names = ["max-results", "it's", "two\nlines", "ünïcode"]
    schema = {
        "type": "object",
        "properties": {
            "place": {"type": "object", "properties": {n: {"type": "integer"} for n in names}},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    }

    class Odd(CallableTool):
        name: str = "odd"
        description: str = "Tricky property names."
        parameters: dict[str, Any] = schema

        async def __call__(self, **kwargs: Any) -> ToolReturnValue:
            return ToolOk(output="")

    arguments = {"place": dict.fromkeys(names, "x"), "items": [1, "two"]}
    call = ToolCall(
        id="c", function=ToolCall.FunctionBody(name="odd", arguments=json.dumps(arguments))
    )
    message = (await SimpleToolset([Odd()]).handle(call)).return_value.message
    async with opened(browser, _app()) as s:
        read = await s.page.evaluate(
            """async (message) => {
              const { fieldErrors, formatPath } = await import("./inspector/paths.js");
              return fieldErrors(message).map((e) => [e.path, formatPath(e.path), e.message]);
            }""",
            message,
        )
    assert sorted(path for path, _, _ in read) == sorted(
        [["place", n] for n in names] + [["items", 1]]
    )
    for _, shown, text in read:
        assert f"{shown}: {text}" in message  # written back exactly as the server wrote it


async def test_latency_quantiles_are_the_registrys_or_estimated_from_the_histogram(
    browser: Browser,
) -> None:
    registry = MetricsRegistry()
    for i in range(10):
        registry.record("slow", 0.002 + i * 0.0002, code=None)
    registry.record("failing", 0.2, code="TIMEOUT")
    text = registry.prometheus_text()
    without_quantiles = "\n".join(
        line for line in text.splitlines() if "call_latency_seconds" not in line
    )
    read = """async (text) => {
      const { parsePrometheus, toolMetrics } = await import("./inspector/metrics.js");
      return toolMetrics(parsePrometheus(text)).tools;
    }"""
    async with opened(browser, _app()) as s:
        exact = await s.page.evaluate(read, text)
        estimated = await s.page.evaluate(read, without_quantiles)
    failing, slow = exact
    assert (failing["tool"], failing["calls"], failing["errors"]) == ("failing", 1, 1)
    assert failing["errorsByCode"] == {"TIMEOUT": 1}
    assert (slow["calls"], slow["errors"]) == (10, 0)
    # The registry's own: the 5th and the 10th of the ten, by nearest rank.
    assert slow["exact"] and slow["p50"] == pytest.approx(0.0028)
    assert slow["p99"] == pytest.approx(0.0038)
    assert slow["mean"] == pytest.approx(0.0029)
    # Without them, the histogram: all ten in the (1 ms, 5 ms] bucket, as Prometheus estimates.
    slow = estimated[1]
    assert not slow["exact"] and slow["p50"] == pytest.approx(0.003)
    assert slow["p99"] == pytest.approx(0.00496)


FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 2, "pattern": "^[a-z ]+$"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
        "exact": {"type": "boolean"},  # optional, no default: a choice of three
        "safe": {"type": "boolean", "default": True},
        "sort": {"enum": ["asc", "desc", None]},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "kind": {"const": "search"},
        "filters": {"type": "object"},  # free-form: a JSON box
        "range": {
            "type": "object",
            "properties": {"low": {"type": "number"}, "high": {"type": "number"}},
            "required": ["low", "high"],
        },
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 3},
        "points": {
            "type": "array",
            "items": {"$ref": "#/$defs/Point"},
        },
    },
    "required": ["query", "kind"],
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
        }
    },
}

FORM_ROUND_TRIP = """async ([schema, cases]) => {
  const { SchemaForm } = await import("./inspector/form.js");
  return cases.map((value) => {
    const form = new SchemaForm(schema);
    document.body.append(form.element);
    form.fill(value);
    const read = form.read();
    form.element.remove();
    return { value: read.value, errors: read.errors.map((e) => [e.path, e.message]) };
  });
}"""


async def test_the_form_gives_back_the_arguments_it_was_filled_with(browser: Browser) -> None:
    cases: list[dict[str, Any]] = [
        {"query": "red shoes", "kind": "search"},
        {
            "query": "red shoes",
            "kind": "search",
            "limit": 5,
            "ratio": 1.5,
            "exact": False,
            "safe": False,
            "sort": None,
            "level": 2,
            "note": "hi",
            "filters": {"size": [42, 43]},
            "range": {"low": 1, "high": 2.5},
            "tags": ["a", "b"],
            "points": [{"x": 1, "y": 2}, {"x": 3, "y": 4}],
        },
    ]
    defaults = {"limit": 10, "safe": True}
    async with opened(browser, _app()) as s:
        results = await s.page.evaluate(FORM_ROUND_TRIP, [FORM_SCHEMA, cases])
        bad = await s.page.evaluate(
            FORM_ROUND_TRIP,
            [
                FORM_SCHEMA,
                [
                    {
                        "query": "X",
                        "kind": "search",
                        "limit": 80,
                        "ratio": 0.7,
                        "range": {"low": 1},
                        "tags": ["a", "a", "b", "c"],
                        "points": [{"x": 1}],
                    }
                ],
            ],
        )
    assert results[0] == {"value": {**defaults, **cases[0]}, "errors": []}
    assert results[1] == {"value": cases[1], "errors": []}
    assert sorted(map(tuple, bad[0]["errors"])) == sorted(
        [
            (["query"], "must be at least 2 characters"),
            (["query"], "must match the pattern ^[a-z ]+$"),
            (["limit"], "must be at most 50"),
            (["ratio"], "must be a multiple of 0.5"),
            (["range", "high"], "Required: enter a value"),
            (["tags"], "must have at most 3 items"),
            (["tags"], "must not repeat an item"),
            (["points", 0, "y"], "Required: enter a value"),
        ]
    )


async def test_a_run_waiting_for_approval_is_answered_from_the_panel(browser: Browser) -> None:
    def ask(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.ask(f"Forget the trip {request.arguments}?")

    held = with_policies(make_toolset(), ApprovalPolicy(ask))
    app = create_app(held, ServerConfig(retry_ms=50, grace=1))
    async with opened(browser, app) as session, httpx.AsyncClient(base_url=session.url) as c:
        page = session.page
        waiting = asyncio.ensure_future(
            read_sse(c, "POST", "/tools/forget_trip/sse", json={"trip_id": "trip-1"})
        )
        item = page.locator("#approvals li.approval")
        await page.locator("#refresh-approvals").click()
        await expect(item).to_have_count(1)
        await expect(item.locator(".question")).to_have_text(
            "Forget the trip {'trip_id': 'trip-1'}?"
        )
        await expect(page.locator("#approvals-status")).to_have_text("1 run waits for an answer.")
        await item.scroll_into_view_if_needed()
        await session.shot("approval-waiting", full_page=False)
        await item.get_by_label("Reason (optional)").fill("checked with the traveller")
        await item.get_by_role("button", name="Approve").click()
        await expect(page.locator("#approvals-status")).to_contain_text("Approved: forget_trip")
        await expect(item).to_have_count(0)
        stream = await asyncio.wait_for(waiting, 10)
        await session.shot("approval-answered")
    assert stream.final.get("data") == "forgot trip-1", stream.final
    assert session.errors == []
