"""`IntrospectionVerifier`: any token, asked about at the authorization server (RFC 7662)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from kosong._extras import install_hint
from kosong.server._jwt import access_token

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

__all__ = ["IntrospectionError", "IntrospectionVerifier"]

_ACCEPT = {"Accept": "application/json"}


class IntrospectionError(ConnectionError):
    """The introspection endpoint cannot answer: tokens cannot be checked now."""


class IntrospectionVerifier:
    """Accepts the tokens the authorization server says are active (RFC 7662 introspection).

    For opaque tokens, or to see revocations at once: every request's token is posted to
    `url` (form `token=...`), with the client credentials when given (HTTP Basic, as RFC
    7662 §2.1 asks of a protected endpoint). A token is accepted when the answer says
    `"active": true`, names `audience` in its `aud` (when an audience is given) and `issuer`
    in its `iss` (when both are there), and it has not expired. Its principal is its `sub`
    (else its `client_id`), its scopes its `scope`. An endpoint that cannot be reached or
    answers other than 200 with a JSON object raises `IntrospectionError` (503).

    It is the MCP SDK's `TokenVerifier` too: `verify_token` gives the SDK's `AccessToken`.
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        """Ask `url` about each token.

        Args:
            url: The introspection endpoint.
            client_id: This server's client id at the authorization server, if the endpoint
                wants one (with `client_secret`).
            client_secret: Its secret.
            issuer: The authorization server: named by the protected resource metadata, and
                the `iss` an answer must have when it has one.
            audience: The `aud` an answer must name (this server's URL); None: not checked.
            timeout: Seconds one introspection may take.

        Raises:
            ImportError: The MCP SDK is missing (the `auth` extra).
        """
        try:
            from mcp.server.auth.provider import AccessToken  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError:
            raise ImportError(
                f"IntrospectionVerifier needs the MCP SDK: {install_hint('auth')}"
            ) from None
        if (client_id is None) != (client_secret is None):
            raise ValueError("give both client_id and client_secret, or neither")
        self.url = url
        self.issuer = issuer
        audiences = [audience] if isinstance(audience, str) else list(audience or ())
        self.audience = audiences or None
        self.timeout = timeout
        self._auth = (client_id, client_secret) if client_id and client_secret else None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's grant, or None when it is not active (see the class doc).

        Raises:
            IntrospectionError: The endpoint cannot answer.
        """
        import httpx

        data = {"token": token, "token_type_hint": "access_token"}
        try:
            async with httpx.AsyncClient(timeout=self.timeout, auth=self._auth) as client:
                response = await client.post(self.url, data=data, headers=_ACCEPT)
            answer: object = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as e:
            reason = e or type(e).__name__
            raise IntrospectionError(f"cannot introspect at {self.url}: {reason}") from e
        if not isinstance(answer, dict):
            raise IntrospectionError(
                f"the introspection endpoint {self.url} answered {response.status_code} "
                "without a JSON object"
            )
        claims = cast(dict[str, Any], answer)
        if claims.get("active") is not True:
            return None
        if self.issuer is not None and claims.get("iss", self.issuer) != self.issuer:
            return None
        grant = access_token(token, claims, self.audience or [])
        if self.audience is not None and grant.resource is None:
            return None
        return grant
