"""`MCPToolset` against servers that want credentials: the MCP SDK's own server behind its
bearer-token auth, and `kosong serve --token` started as users start it.

The SDK server is `MCPServer` with a `TokenVerifier` and `AuthSettings`: its middleware answers
401 with a `WWW-Authenticate` challenge naming its protected-resource metadata, and 403 for a
token without the required scope. The OAuth flow itself (discovery, registration, PKCE,
tokens) runs against the conformance suite's authorization server, in
test_mcp_conformance.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx
import httpx2
import pytest
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from kosong.mcp import MCPToolset, ServerSpec
from kosong.message import ToolCall
from kosong.standard import error_code, structured_data
from tests._local import free_port
from tests.mcp._mcp_servers import ROOT, Uvicorn
from tests.server._procs import ServerProcess


class Tokens:
    """The SDK server's token verifier: which tokens are good, with which scopes, right now."""

    def __init__(self) -> None:
        self.scopes: dict[str, list[str]] = {"good": ["tools"], "reader": ["read"]}
        self.seen: list[str] = []
        self.resource = ""

    async def verify_token(self, token: str) -> AccessToken | None:
        self.seen.append(token)
        scopes = self.scopes.get(token)
        if scopes is None:
            return None
        return AccessToken(token=token, client_id="c", scopes=scopes, resource=self.resource)


@pytest.fixture
def tokens() -> Tokens:
    return Tokens()


@pytest.fixture
async def guarded(tokens: Tokens) -> AsyncGenerator[Uvicorn]:
    """The SDK's server, tokens required (scope `tools`), in this process."""
    port = free_port()
    tokens.resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        "guarded",
        token_verifier=tokens,
        auth=AuthSettings(
            issuer_url="https://auth.example.com",  # pyright: ignore[reportArgumentType]
            resource_server_url=f"http://127.0.0.1:{port}/mcp",  # pyright: ignore[reportArgumentType]
            required_scopes=["tools"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with Uvicorn(server.streamable_http_app(), port=port) as running:
        yield running


@pytest.fixture
async def guarded_sse(tokens: Tokens) -> AsyncGenerator[Uvicorn]:
    """The same server on the legacy HTTP+SSE transport (2024-11-05), tokens required."""
    port = free_port()
    tokens.resource = f"http://127.0.0.1:{port}/sse"
    server = MCPServer(
        "guarded-sse",
        token_verifier=tokens,
        auth=AuthSettings(
            issuer_url="https://auth.example.com",  # pyright: ignore[reportArgumentType]
            resource_server_url=f"http://127.0.0.1:{port}/sse",  # pyright: ignore[reportArgumentType]
            required_scopes=["tools"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with Uvicorn(server.sse_app(), port=port) as running:
        yield running


async def test_the_legacy_sse_transport_takes_the_same_credentials(
    guarded_sse: Uvicorn, tokens: Tokens
):
    url = guarded_sse.url.removesuffix("/mcp") + "/sse"
    spec = ServerSpec(url=url, headers={"Authorization": "Bearer good"})
    async with MCPToolset({"sdk": spec}) as toolset:
        assert toolset.errors == {}
        result = (await toolset.handle(call("add", {"a": 2, "b": 3}))).return_value
    assert result.output == "5" and structured_data(result) == 5
    assert set(tokens.seen) == {"good"}  # the event stream and every POST carried it
    async with MCPToolset({"sdk": url}) as refused:
        pass
    assert "unauthorized (HTTP 401)" in refused.errors["sdk"]


def call(name: str, arguments: dict[str, Any]) -> ToolCall:
    body = ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments))
    return ToolCall(id="c1", function=body)


async def test_a_bearer_header_reaches_a_server_behind_auth(guarded: Uvicorn, tokens: Tokens):
    spec = ServerSpec(url=guarded.url, headers={"Authorization": "Bearer good"})
    async with MCPToolset({"sdk": spec}) as toolset:
        result = (await toolset.handle(call("add", {"a": 2, "b": 3}))).return_value
    assert toolset.errors == {}
    # The SDK's `-> int`: its text for the model, its `{"result": 5}` unwrapped as the data.
    assert result.output == "5" and structured_data(result) == 5
    assert set(tokens.seen) == {"good"}


async def test_no_token_fails_the_connection_saying_unauthorized_and_what_to_pass(
    guarded: Uvicorn,
):
    async with MCPToolset({"sdk": guarded.url}) as toolset:
        assert toolset.tools == []
    error = toolset.errors["sdk"]
    assert error.startswith(
        f"the MCP server `sdk` ({guarded.url}) answered unauthorized (HTTP 401): it needs "
        "credentials; it asks for: Bearer "
    )
    assert "resource_metadata=" in error  # the challenge names where to discover the OAuth
    assert 'ServerSpec(url=..., headers={"Authorization": "Bearer <token>"})' in error
    assert "auth=<an httpx2.Auth, such as the MCP SDK's OAuthClientProvider>" in error


async def test_a_token_without_the_scope_fails_the_connection_as_forbidden(guarded: Uvicorn):
    spec = ServerSpec(url=guarded.url, headers={"Authorization": "Bearer reader"})
    async with MCPToolset({"sdk": spec}) as toolset:
        pass
    assert "answered forbidden (HTTP 403)" in toolset.errors["sdk"]
    assert "insufficient_scope" in toolset.errors["sdk"]


async def test_a_revoked_token_makes_a_call_an_unauthorized_result(
    guarded: Uvicorn, tokens: Tokens
):
    spec = ServerSpec(url=guarded.url, headers={"Authorization": "Bearer good"})
    async with MCPToolset({"sdk": spec}) as toolset:
        assert [t.name for t in toolset.tools] == ["add"]
        del tokens.scopes["good"]
        revoked = (await toolset.handle(call("add", {"a": 1, "b": 1}))).return_value
    assert revoked.is_error and error_code(revoked) == "UNAUTHORIZED"
    assert "unauthorized (HTTP 401)" in revoked.message


async def test_a_token_that_lost_its_scope_makes_a_call_permission_denied(
    guarded: Uvicorn, tokens: Tokens
):
    spec = ServerSpec(url=guarded.url, headers={"Authorization": "Bearer good"})
    async with MCPToolset({"sdk": spec}) as toolset:
        tokens.scopes["good"] = ["read"]
        denied = (await toolset.handle(call("add", {"a": 1, "b": 1}))).return_value
    assert denied.is_error and error_code(denied) == "PERMISSION_DENIED"
    assert "forbidden (HTTP 403)" in denied.message


class RefreshingBearer(httpx.Auth):
    """An `httpx.Auth` as users write them: a token, and a new one when the server says 401."""

    def __init__(self) -> None:
        self.token = "stale"
        self.refreshed = 0

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        response = yield request
        if response.status_code == 401:
            self.token, self.refreshed = "good", self.refreshed + 1
            request.headers["Authorization"] = f"Bearer {self.token}"
            yield request


async def test_an_httpx_auth_runs_its_flow_on_the_mcp_requests(guarded: Uvicorn, tokens: Tokens):
    auth = RefreshingBearer()
    async with MCPToolset({"sdk": ServerSpec(url=guarded.url, auth=auth)}) as toolset:
        result = (await toolset.handle(call("add", {"a": 20, "b": 22}))).return_value
    assert result.output == "42" and structured_data(result) == 42
    assert auth.refreshed == 1 and tokens.seen[0] == "stale" and set(tokens.seen[1:]) == {"good"}


async def test_an_httpx2_auth_is_used_as_it_is(guarded: Uvicorn, tokens: Tokens):
    def bearer(request: httpx2.Request) -> httpx2.Request:
        request.headers["Authorization"] = "Bearer good"
        return request

    spec = ServerSpec(url=guarded.url, auth=httpx2.FunctionAuth(bearer))
    async with MCPToolset({"sdk": spec}) as toolset:
        result = (await toolset.handle(call("add", {"a": 1, "b": 2}))).return_value
    assert result.output == "3" and structured_data(result) == 3


def kosong(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kosong", *args],
        capture_output=True, text=True, timeout=90, cwd=ROOT, check=False,
    )  # fmt: skip


@pytest.mark.external  # `kosong serve`
async def test_kosong_serve_with_a_token_is_usable_by_kosongs_own_mcp_client():
    server = ServerProcess("--token", "T0k3n", target="tests.mcp._mcp_servers:served")
    try:
        url = f"{server.url}/mcp"
        spec = ServerSpec(url=url, headers={"Authorization": "Bearer T0k3n"})
        async with MCPToolset({"k": spec}) as toolset:
            added = (await toolset.handle(call("add", {"a": 4, "b": 5}))).return_value
        async with MCPToolset({"k": url}) as refused:
            pass
        commands = [
            ("tools", "list", url, "--token", "T0k3n"),
            ("tools", "call", url, "add", '{"a": 1, "b": 2}', "--token", "T0k3n", "--json"),
            ("tools", "list", url, "--header", "Authorization: Bearer T0k3n"),
            ("tools", "list", url),
        ]
        listed, called, headed, missing = await asyncio.gather(
            *(asyncio.to_thread(kosong, *command) for command in commands)
        )
    finally:
        server.kill()
    assert added.output == "9"
    assert "unauthorized (HTTP 401)" in refused.errors["k"]
    assert listed.returncode == 0 and "add" in listed.stdout.split(), listed.stderr
    assert called.returncode == 0 and json.loads(called.stdout)["data"] == "3", called.stderr
    assert headed.returncode == 0 and "add" in headed.stdout.split(), headed.stderr
    assert missing.returncode == 1 and missing.stderr.startswith(
        f"kosong: error: cannot use the MCP server {url}: the MCP server `mcp` ({url}) answered "
        "unauthorized (HTTP 401)"
    )
    assert "--token T" in missing.stderr
