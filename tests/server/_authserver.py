"""A small OAuth authorization server for the auth tests, on the MCP SDK's own handlers.

Its metadata (RFC 8414), dynamic client registration (RFC 7591), the authorization code flow
with PKCE (RFC 7636) and the token endpoint are the SDK's (`create_auth_routes`), so their
checks are not ours. Ours are the provider behind them (clients, codes and tokens in memory;
the resource owner, "alice", approves every request at once) and the two routes the SDK has
no server side for: the key set (RFC 7517) of the RSA key that signs the access tokens (JWTs,
RFC 9068: `iss`, `sub`, `aud` = the resource the client asked for, `exp`, `scope`,
`client_id`), and token introspection (RFC 7662) for the resource server, which must present
its own client credentials.

It is served by uvicorn on a loopback socket bound before the app is made, so its issuer URL
(`http://127.0.0.1:PORT`) is known from the start.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kosong.server import bind
from tests.mcp._mcp_servers import Uvicorn

RESOURCE_SERVER = ("kosong-rs", "rs-secret")
"""The resource server's client credentials at the introspection endpoint."""


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class _Provider:
    """The SDK's `OAuthAuthorizationServerProvider`, in memory, issuing signed JWTs."""

    def __init__(self, server: AuthServer) -> None:
        self.server = server
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32), scopes=params.scopes or [],
            expires_at=time.time() + 300, client_id=client.client_id or "",
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject="alice",
        )  # fmt: skip
        self.codes[code.code] = code
        self.server.authorized.append(params)
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        claims: dict[str, Any] = {"sub": authorization_code.subject, "client_id": client.client_id,
                                  "scope": " ".join(authorization_code.scopes)}  # fmt: skip
        if authorization_code.resource:
            claims["aud"] = authorization_code.resource
        token = self.server.token(**claims)
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=3600,
                          scope=" ".join(authorization_code.scopes) or None)  # fmt: skip

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise NotImplementedError


class AuthServer:
    """The authorization server, served while the `async with` block runs.

    `token(**claims)` signs a valid access token (claims override the defaults);
    `sign(claims, ...)` signs anything, for the tests of bad tokens. `opaque` holds the
    introspection answers of opaque tokens; `introspected` counts the introspections.
    """

    def __init__(self, audience: str = "") -> None:
        self.audience = audience
        self.key = rsa_key()
        self.kid = "key-1"
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.jwks_url = f"{self.url}/jwks"
        self.introspection_url = f"{self.url}/introspect"
        self.opaque: dict[str, dict[str, Any]] = {}
        self.introspected = 0
        self.authorized: list[AuthorizationParams] = []
        # Issuer identifiers are compared as strings (RFC 8414 §3.3): no slash added.
        issuer = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
        routes = create_auth_routes(
            _Provider(self), issuer.validate_python(self.url),
            client_registration_options=ClientRegistrationOptions(enabled=True),
        )  # fmt: skip
        routes += [Route("/jwks", self._jwks),
                   Route("/introspect", self._introspect, methods=["POST"])]  # fmt: skip
        self._web = Uvicorn(Starlette(routes=routes), sock=self.sock)

    def jwk(self) -> dict[str, Any]:
        public: dict[str, Any] = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "alg": "RS256", "use": "sig"}

    def sign(
        self,
        claims: dict[str, Any],
        *,
        key: Any = None,
        headers: dict[str, Any] | None = None,
        algorithm: str = "RS256",
    ) -> str:
        """`claims` signed (by default with this server's key, under its key id)."""
        headers = {"kid": self.kid} if headers is None else headers
        signing_key = key if key is not None else self.key
        return jwt.encode(claims, signing_key, algorithm=algorithm, headers=headers)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {"iss": self.url, "sub": "alice", "aud": self.audience, "iat": now,
                  "exp": now + 3600, "scope": "tools", "client_id": "test-client"}  # fmt: skip
        return {**claims, **overrides}

    def token(self, **overrides: Any) -> str:
        return self.sign(self.claims(**overrides))

    async def _jwks(self, request: Request) -> Response:
        return JSONResponse({"keys": [self.jwk()]})

    async def _introspect(self, request: Request) -> Response:
        self.introspected += 1
        expected = base64.b64encode(":".join(RESOURCE_SERVER).encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, 401)
        token = (await request.form()).get("token")
        if not isinstance(token, str):
            return JSONResponse({"error": "invalid_request"}, 400)
        if token in self.opaque:
            answer = self.opaque[token]
        else:
            try:
                answer = {"active": True, **jwt.decode(
                    token, self.key.public_key(), algorithms=["RS256"],
                    options={"verify_aud": False},
                )}  # fmt: skip
            except jwt.PyJWTError:
                answer = {"active": False}
        return Response(json.dumps(answer), media_type="application/json")

    async def __aenter__(self) -> AuthServer:
        await self._web.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._web.__aexit__(*exc)
