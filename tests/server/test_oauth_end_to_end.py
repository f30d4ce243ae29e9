"""`kosong serve` behind an OAuth authorization server, used by the MCP SDK's OAuth client.

Everything is real: `kosong serve --jwks-url ... --issuer ... --audience ...` runs as a
process, the authorization server (`_authserver`, on the SDK's handlers) on a loopback
socket, and the client is the SDK's `OAuthClientProvider` under its `Client`. Refused at
first, the client finds the protected resource metadata from the challenge (RFC 9728), the
authorization server's metadata (RFC 8414), registers itself (RFC 7591), goes through the
authorization code flow with PKCE (the redirect handler here follows the redirect itself, as
a browser would, and the resource owner approves at once), and retries with the JWT it got.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.types import TextContent

from mcp import Client
from tests._local import free_port
from tests.server._authserver import RESOURCE_SERVER, AuthServer
from tests.server._procs import ServerProcess

pytestmark = pytest.mark.external  # `kosong serve` processes


class Storage:
    """The SDK's `TokenStorage`, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The redirect and callback handlers: open the authorization URL, read the redirect."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.opened.append(authorization_url)
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(authorization_url)  # not followed: the app would get it
        assert answer.status_code == 302, answer.text
        query = parse_qs(urlparse(answer.headers["location"]).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0]
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def oauth_client(mcp_url: str, storage: Storage, browser: Browser) -> OAuthClientProvider:
    metadata = OAuthClientMetadata.model_validate(
        {"client_name": "kosong tests", "redirect_uris": ["http://127.0.0.1:9/callback"],
         "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}
    )  # fmt: skip
    return OAuthClientProvider(
        server_url=mcp_url, client_metadata=metadata, storage=storage,
        redirect_handler=browser.redirect, callback_handler=browser.callback,
    )  # fmt: skip


def serve_jwt(auth: AuthServer) -> tuple[ServerProcess, str]:
    """`kosong serve` taking the authorization server's JWTs issued for it; and its URL."""
    port = free_port()  # the audience names the port, so it is chosen before the start
    url = f"http://127.0.0.1:{port}"
    flags = ("--jwks-url", auth.jwks_url, "--issuer", auth.url, "--audience", url)
    return ServerProcess("--port", str(port), *flags), url


async def test_the_sdk_s_oauth_client_gets_a_token_and_calls_kosong_serve() -> None:
    async with AuthServer() as auth:
        server, url = serve_jwt(auth)
        try:
            storage, browser = Storage(), Browser()
            provider = oauth_client(f"{url}/mcp", storage, browser)
            async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(10, read=60)) as h:
                transport = streamable_http_client(f"{url}/mcp", http_client=h)
                async with Client(transport, read_timeout_seconds=20) as client:
                    listed = await client.list_tools()
                    result = await client.call_tool("add", {"a": 2, "b": 3})
            assert storage.tokens is not None
            token = storage.tokens.access_token
            elsewhere = auth.token(aud="https://other.example.com")
            async with httpx.AsyncClient(base_url=url, timeout=10) as c:
                route = await c.post("/tools/add", json={"a": 4, "b": 5},
                                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                refused = await c.get("/tools", headers={"Authorization": f"Bearer {elsewhere}"})
        finally:
            log = server.terminate()
    assert "add" in [t.name for t in listed.tools]
    assert result.content == [TextContent(text="5")] and not result.is_error
    # The client asked for a token for this server (RFC 8707), as the metadata named it.
    assert [p.resource for p in auth.authorized] == [url]
    assert len(browser.opened) == 1 and "code_challenge_method=S256" in browser.opened[0]
    assert storage.client is not None  # registered dynamically
    assert route.status_code == 200 and route.json()["data"] == 9  # the same token, on HTTP
    assert refused.status_code == 401  # a token the same issuer made for another resource
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="kosong", error="invalid_token", '
        f'resource_metadata="{url}/.well-known/oauth-protected-resource"'
    )
    assert "Traceback" not in log


async def test_kosong_serve_asks_the_introspection_endpoint_about_each_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with AuthServer() as auth:
        auth.opaque = {"opaque-1": {"active": True, "sub": "dave", "client_id": "c",
                                    "scope": "tools", "iss": auth.url}}  # fmt: skip
        monkeypatch.setenv("KOSONG_INTROSPECTION_CLIENT", RESOURCE_SERVER[0])
        monkeypatch.setenv("KOSONG_INTROSPECTION_SECRET", RESOURCE_SERVER[1])
        server = ServerProcess("--introspection-url", auth.introspection_url,
                               "--issuer", auth.url, "--required-scope", "tools")  # fmt: skip
        try:
            headers = {"Authorization": "Bearer opaque-1"}
            async with httpx2.AsyncClient(headers=headers, timeout=10) as h:
                transport = streamable_http_client(f"{server.url}/mcp", http_client=h)
                async with Client(transport, read_timeout_seconds=20) as client:
                    result = await client.call_tool("add", {"a": 1, "b": 1})
            async with httpx.AsyncClient(base_url=server.url, timeout=10) as c:
                unknown = await c.get("/tools", headers={"Authorization": "Bearer nope"})
                document = await c.get("/.well-known/oauth-protected-resource")
        finally:
            server.terminate()
    assert result.content == [TextContent(text="2")]
    assert unknown.status_code == 401
    assert document.json() == {
        "resource": server.url, "authorization_servers": [auth.url],
        "scopes_supported": ["tools"], "bearer_methods_supported": ["header"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--jwks-url", "http://127.0.0.1:9/jwks"], "--jwks-url needs --issuer and --audience"),
        (["--token", "t", "--jwks-url", "http://127.0.0.1:9/jwks"], "give one of --token"),
        (["--issuer", "http://127.0.0.1:9"], "--issuer and --audience go with"),
        (["--required-scope", "tools"], "need tokens to check"),
        (["--introspection-url", "http://127.0.0.1:9/i", "--issuer", "not a url"],
         "must be http(s) URLs"),
    ],
)  # fmt: skip
def test_kosong_serve_says_in_one_line_which_auth_options_go_together(
    flags: list[str], says: str
) -> None:
    target = str(Path(__file__).parent / "_tools.py") + ":tools"
    done = subprocess.run(
        [sys.executable, "-m", "kosong", "serve", target, "--port", "0", *flags],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(lines) == 1 and lines[0].startswith("kosong: error: ") and says in lines[0]
