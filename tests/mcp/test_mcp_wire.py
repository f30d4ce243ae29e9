"""Request ids: one of the wrong type is an Invalid Request in both eras, never a notification."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_types import JSONRPCRequest
from pydantic import ValidationError

from kosong.mcp._server import _invalid_id_response, _read_message
from kosong.server import ServerConfig, create_app
from tests.mcp._mcp_http import Session, results, sse_events
from tests.mcp._mcp_servers import Uvicorn, kosong_toolset

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
WRONG_IDS: list[Any] = [{}, {"a": 1}, [], [1], True, False, None, 1.5, 1.0, -0.0]
INVALID_REQUEST = -32600


@pytest.fixture
async def app_server() -> AsyncIterator[tuple[Uvicorn, Any]]:
    app = create_app(kosong_toolset(), ServerConfig(), mcp=True)
    async with Uvicorn(app) as running:
        yield running, app


def _modern(request_id: Any, method: str = "tools/call") -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-era request (body, headers) calling `add`, or listing the tools."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    params: dict[str, Any] = {"_meta": ENVELOPE}
    if method == "tools/call":
        headers["Mcp-Name"] = "add"
        params |= {"name": "add", "arguments": {"a": 1, "b": 2}}
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not ...:
        body["id"] = request_id
    return body, headers


def _handshake(request_id: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}  # fmt: skip
    if request_id is not ...:
        body["id"] = request_id
    return body


def _assert_invalid_request(response: httpx.Response) -> None:
    assert response.status_code == 400, (response.status_code, response.text)
    answer = response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == INVALID_REQUEST


async def test_an_id_of_the_wrong_type_is_an_invalid_request_in_the_handshake_era(
    app_server: tuple[Uvicorn, Any],
):
    server, app = app_server
    async with httpx.AsyncClient(timeout=10) as http:
        session = await Session(http, server.url).open()
        for request_id in WRONG_IDS:
            in_session = await http.post(
                server.url, json=_handshake(request_id), headers=session.headers()
            )
            _assert_invalid_request(in_session)
            # Without a session too: an `initialize` of the wrong id opens none.
            opening = await Session(http, server.url).initialize()
            assert opening.status_code == 200  # a well-formed one does
            init = {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
            refused = await http.post(server.url, json=init, headers=Session(http, "").headers())
            _assert_invalid_request(refused)
            assert "mcp-session-id" not in refused.headers
    assert "add" not in app.state.kosong.metrics.snapshot()  # no call ran


async def test_an_id_of_the_wrong_type_is_an_invalid_request_in_the_2026_era(
    app_server: tuple[Uvicorn, Any],
):
    server, app = app_server
    async with httpx.AsyncClient(timeout=10) as http:
        for request_id in WRONG_IDS:
            for method in ("tools/call", "tools/list"):
                body, headers = _modern(request_id, method)
                _assert_invalid_request(await http.post(server.url, json=body, headers=headers))
            # The streaming path too (a progress token makes a call stream its progress).
            body, headers = _modern(request_id)
            body["params"]["_meta"] = {**ENVELOPE, "progressToken": "p"}
            _assert_invalid_request(await http.post(server.url, json=body, headers=headers))
    assert "add" not in app.state.kosong.metrics.snapshot()


@pytest.mark.parametrize("era", ["handshake", "2026"])
async def test_string_and_integer_ids_are_answered_and_a_missing_id_is_a_notification(
    app_server: tuple[Uvicorn, Any], era: str
):
    server, _ = app_server
    async with httpx.AsyncClient(timeout=10) as http:
        session = await Session(http, server.url).open() if era == "handshake" else None
        for request_id in ["7", "", "a b", 0, -1, 2**62, 10**30]:
            if session is not None:
                response = await http.post(
                    server.url, json=_handshake(request_id), headers=session.headers()
                )
                assert response.status_code == 200
                answer = results(sse_events(response.text))[-1]
            else:
                body, headers = _modern(request_id)
                response = await http.post(server.url, json=body, headers=headers)
                assert response.status_code == 200
                answer = response.json()
            assert answer["id"] == request_id
            assert answer["result"]["content"] == [{"type": "text", "text": "3"}]
        if session is not None:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            missing = await http.post(server.url, json=note, headers=session.headers())
        else:
            body, headers = _modern(...)
            missing = await http.post(server.url, json=body, headers=headers)
    assert missing.status_code == 202 and missing.content == b""


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(_JSON)
def test_an_id_is_refused_exactly_when_the_sdk_s_request_model_refuses_it(request_id: Any):
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}).encode()
    try:
        JSONRPCRequest.model_validate(json.loads(body), by_name=False)
        sdk_takes_it = True
    except ValidationError:
        sdk_takes_it = False
    assert (_invalid_id_response(_read_message(body)) is None) == sdk_takes_it


@given(_JSON)
def test_only_a_request_with_an_id_is_ever_refused(value: Any):
    """A notification, a response, or any other JSON (a batch, a number) is left to the SDK."""
    for message in ({"jsonrpc": "2.0", "method": "x", "params": value},
                    {"jsonrpc": "2.0", "id": value, "result": {}}, value):  # fmt: skip
        body = json.dumps(message).encode()
        assert _invalid_id_response(_read_message(body)) is None or (
            isinstance(message, dict) and "method" in message and "id" in message
        )


def test_a_body_that_is_not_one_json_object_is_read_as_none():
    for body in (
        None,
        b"",
        b"[1]",
        b"7",
        b"{",
        b'{"a": NaN',
        "{}".encode("utf-16"),
        b"[" * 100_000,
    ):
        assert _read_message(body) is None
    assert _read_message(b'{"method": "\\u0069nitialize"}') == {"method": "initialize"}
