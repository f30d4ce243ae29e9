"""`Last-Event-ID` is parsed strictly, the same way on both stores: ASCII digits, in range,
the run's own prefix. Anything else is a 400 with the envelope before any stream starts,
never an echoed id, a cut stream or a 500, even while the run is still running."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from kosong.server import ServerConfig, create_app, serving
from tests.server._sse import read_sse
from tests.server._tools import GATES, STARTED, tools

FORGED = [
    "{run}.999",  # past the last event of a run still running
    "{run}.-1",
    "{run}.abc",
    "{run}." + "9" * 64,
    "{run}.\u0663",  # ARABIC-INDIC DIGIT THREE: a digit to str.isdigit, not to us
    "{run}.\u00b2",  # SUPERSCRIPT TWO
    "{run}.01",  # a leading zero: not the id the server gave
    "{run}.",
    "{run}.1.2",
    "{run}.99999999999999-0",  # a Redis entry id in the future
    "{run}.18446744073709551616-0",  # past 2**64
    "{run}.1-2-3",
    "{run}.1-",
]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.external)])
def config(request: pytest.FixtureRequest) -> ServerConfig:
    if request.param == "memory":
        return ServerConfig()
    return ServerConfig(redis_url=request.getfixturevalue("redis_url"))


async def test_a_forged_last_event_id_is_a_clean_400_and_the_run_goes_on(
    config: ServerConfig, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"forged-{id(config)}"
    GATES[name] = asyncio.Event()
    STARTED[name] = asyncio.Event()
    caplog.set_level(logging.WARNING)
    answers: dict[str, list[tuple[int, str]]] = {}
    async with (
        serving(create_app(tools, config), log_config=None) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as c,
    ):
        first = await read_sse(c, "POST", "/tools/gated/sse", json={"name": name, "steps": 2},
                               stop_after=1)  # fmt: skip
        run = first.headers["content-location"].removeprefix("/runs/")
        for template in FORGED:
            forged = template.format(run=run)
            for method, path in (("GET", f"/runs/{run}"), ("POST", "/tools/gated/sse")):
                headers = {b"Last-Event-ID": forged.encode(), b"Content-Type": b"application/json"}
                response = await c.request(method, path, headers=headers)
                body = response.json()
                assert body["success"] is False and "error" in body, (forged, body)
                assert "text/event-stream" not in response.headers["content-type"]
                answers.setdefault(forged, []).append((response.status_code,
                                                       body["error"]["code"]))  # fmt: skip
        GATES[name].set()
        rest = await read_sse(c, "GET", f"/runs/{run}", last_event_id=first.last_id)
    for forged, got in answers.items():
        assert got == [(400, "INVALID_PARAMS")] * 2, (forged, got)
    assert rest.kinds == ["tool_progress", "tool_progress", "tool_result"]
    assert rest.final["data"] == f"opened {name}"
    assert not [r for r in caplog.records if r.exc_info], caplog.text
