"""Who is calling: the bearer token of a request, checked by a verifier, and its principal."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from kosong.server._guard import (
    ANONYMOUS,
    PRINCIPAL,
    header,
    refuse,
    refuse_unavailable,
    route_path,
)
from kosong.server._resource import METADATA_PATH, resource_url

__all__ = ["BearerTokenMiddleware", "StaticTokens", "TokenVerifier", "VerifiedToken"]


class VerifiedToken(Protocol):
    """What the guard reads of a token its verifier accepted (the MCP SDK's `AccessToken`)."""

    @property
    def client_id(self) -> str:
        """The OAuth client the token was issued to."""
        ...

    @property
    def subject(self) -> str | None:
        """Who the token speaks for (`sub`); None: the client itself."""
        ...

    @property
    def scopes(self) -> list[str]:
        """The scopes granted."""
        ...

    @property
    def expires_at(self) -> int | None:
        """When it expires, in seconds since the epoch; None: never."""
        ...


class TokenVerifier(Protocol):
    """Checks a bearer token: the MCP SDK's protocol of the same name.

    So a verifier written for the SDK's servers (`mcp.server.auth.provider.TokenVerifier`)
    serves here unchanged, and kosong's `JWTVerifier` and `IntrospectionVerifier` serve there.
    """

    async def verify_token(self, token: str) -> VerifiedToken | None:
        """The token's grant, or None when it is not valid.

        Raise only when the token cannot be checked now (the keys or the authorization
        server cannot be reached): the request is then refused with 503, not 401.
        """
        ...


@dataclass(frozen=True)
class _StaticGrant:
    client_id: str
    subject: str | None = None
    scopes: list[str] = field(default_factory=list[str])
    expires_at: int | None = None


class StaticTokens:
    """Fixed tokens, each standing for a principal (`ServerConfig(token=...)`, `tokens=`).

    Tokens are compared by their digests: a dict lookup whose time does not depend on how
    much of a wrong token matches.
    """

    def __init__(self, principals: Mapping[str, str]) -> None:
        """Accept the tokens of `principals` (token -> principal)."""
        self._grants = {
            _digest(token): _StaticGrant(client_id=name, subject=name)
            for token, name in principals.items()
        }

    async def verify_token(self, token: str) -> VerifiedToken | None:
        """The token's principal, if it is one of the tokens."""
        return self._grants.get(_digest(token))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class BearerTokenMiddleware:
    """Puts who is calling in the scope (`PRINCIPAL`); with a verifier, refuses others.

    A missing or rejected token is answered 401, a token without every `required_scopes`
    403 (`insufficient_scope`), each with a `WWW-Authenticate` challenge (RFC 6750) naming,
    when `metadata` is on, the protected-resource metadata document (RFC 9728) where a client
    finds the authorization server. A verifier that cannot answer gets the request refused
    with 503 and `Retry-After`: fail closed. The `exempt` paths (exact) need no token.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        verifier: TokenVerifier | None,
        required_scopes: Sequence[str] = (),
        exempt: Collection[str] = (),
        metadata: bool = False,
        resource_url: str | None = None,
        rejected: Counter[str],
    ) -> None:
        """Check tokens with `verifier`; None: anyone may call, as `ANONYMOUS`."""
        self.app = app
        self._verifier = verifier
        self._scopes = tuple(required_scopes)
        self._exempt = frozenset(exempt)
        self._metadata = metadata
        self._resource_url = resource_url
        self.rejected = rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Find the request's principal, or refuse it."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self._verifier is not None and route_path(scope) not in self._exempt:
            token = _bearer_token(scope)
            grant = None
            if token is not None:
                try:
                    grant = await self._verifier.verify_token(token)
                except Exception as e:
                    self.rejected["unavailable"] += 1
                    await refuse_unavailable(
                        scope, send, "The token could not be checked",
                        "the token could not be checked now; try again shortly", e,
                    )  # fmt: skip
                    return
                if grant is not None and grant.expires_at is not None:
                    grant = grant if grant.expires_at > time.time() else None
            if grant is None:
                error = None if header(scope, b"authorization") is None else "invalid_token"
                await self._challenge(scope, send, 401, error)
                return
            if any(s not in grant.scopes for s in self._scopes):
                await self._challenge(scope, send, 403, "insufficient_scope")
                return
            principal = grant.subject or grant.client_id
        scope[PRINCIPAL] = principal
        await self.app(scope, receive, send)

    async def _challenge(self, scope: Scope, send: Send, status: int, error: str | None) -> None:
        self.rejected["auth"] += 1
        challenge = 'Bearer realm="kosong"'
        if error is not None:
            challenge += f', error="{error}"'
        if self._scopes and (error is None or status == 403):
            challenge += f', scope="{" ".join(self._scopes)}"'
        if self._metadata:
            url = resource_url(scope, self._resource_url) + METADATA_PATH
            challenge += f', resource_metadata="{url}"'
        if status == 403:
            code = "PERMISSION_DENIED"
            message = f"the token needs the scopes {' '.join(self._scopes)}"
        else:
            code = "UNAUTHORIZED"
            message = "a valid bearer token is needed (Authorization: Bearer <token>)"
        headers = [(b"www-authenticate", challenge.encode())]
        await refuse(scope, send, status, code, message, headers)


def _bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    authorization = header(scope, b"authorization")
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(b" ")
    token = token.strip()
    if scheme.lower() != b"bearer" or not token:
        return None
    try:
        return token.decode()
    except UnicodeDecodeError:  # no token anyone was given
        return None
