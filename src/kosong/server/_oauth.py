"""Tokens an OAuth server issued: JWTs (RFC 9068) and any token it answers for (RFC 7662).

`JWTVerifier` checks a JWT with the issuer's published keys. PyJWT checks the signature and
the claims: the MCP SDK depends on it already (so it costs nothing more), it is maintained,
and its `PyJWK` binds each key to the one algorithm it was published for (a token cannot pick
`none`, nor HMAC with a public key as its secret). What is ours is only fetching the key set
asynchronously (PyJWT's `PyJWKClient` blocks on `urllib`) and when: cached for
`cache_seconds`, fetched again for a key id not seen, but at most once per `refresh_seconds`,
so tokens with made-up key ids cannot make the server hammer the issuer.
`IntrospectionVerifier` asks the authorization server about each token.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from kosong._extras import install_hint

if TYPE_CHECKING:
    import jwt
    from mcp.server.auth.provider import AccessToken

__all__ = ["IntrospectionError", "IntrospectionVerifier", "JWTVerifier", "KeysUnavailableError"]

logger = logging.getLogger(__name__)

_ACCEPT = {"Accept": "application/json"}

ASYMMETRIC_ALGORITHMS: tuple[str, ...] = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""The algorithms accepted by default: signatures with a published public key only."""


class KeysUnavailableError(ConnectionError):
    """The issuer's key set cannot be fetched (or holds no usable key): tokens cannot be checked."""


class JWTVerifier:
    """Accepts JWT access tokens signed by `issuer`'s keys, for `audience`.

    A token is accepted when its signature verifies with the key of its `kid` in the key set
    at `jwks_url`, with one of `algorithms`, and its `iss` is `issuer`, its `aud` names
    `audience`, and it has not expired (`exp` is required; `leeway` seconds of clock skew).
    Its principal is its `sub` (else its `client_id`); its scopes are its `scope` (or `scp`).
    Anything else is None (401): a garbled token, another issuer's, one for another resource.
    Only a key set that cannot be fetched raises (`KeysUnavailableError`: 503).

    It is the MCP SDK's `TokenVerifier` too: `verify_token` gives the SDK's `AccessToken`.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ASYMMETRIC_ALGORITHMS,
        leeway: float = 30.0,
        cache_seconds: float = 300.0,
        refresh_seconds: float = 30.0,
        timeout: float = 10.0,
    ) -> None:
        """Check tokens with the keys at `jwks_url` (a JSON Web Key Set, RFC 7517).

        Args:
            jwks_url: Where the issuer publishes its keys.
            issuer: The `iss` tokens must have; also the authorization server the protected
                resource metadata names.
            audience: The `aud` tokens must name: this server's resource identifier (its URL).
            algorithms: The signature algorithms accepted.
            leeway: Seconds of clock skew allowed for `exp`, `nbf` and `iat`.
            cache_seconds: How long a fetched key set is used before it is fetched again.
            refresh_seconds: The least time between two fetches for unknown key ids.
            timeout: Seconds a fetch of the key set may take.

        Raises:
            ImportError: PyJWT or the MCP SDK is missing (the `auth` extra).
            ValueError: No audience, or an algorithm that is not a public-key signature.
        """
        _require("JWTVerifier needs PyJWT and the MCP SDK", "jwt", "mcp.server.auth.provider")
        audiences = _listed(audience)
        if not audiences or not all(audiences):
            raise ValueError("JWTVerifier needs the audience tokens must be issued for")
        if not issuer:
            raise ValueError("JWTVerifier needs the issuer of the tokens")
        unsafe = [a for a in algorithms if a not in ASYMMETRIC_ALGORITHMS]
        if unsafe or not algorithms:
            raise ValueError(f"not public-key signature algorithms: {unsafe or 'none given'}")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = audiences
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.cache_seconds = cache_seconds
        self.refresh_seconds = refresh_seconds
        self.timeout = timeout
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched = -float("inf")
        self._failure: str | None = None
        self._lock = asyncio.Lock()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's grant, or None when it is not valid (see the class doc).

        Raises:
            KeysUnavailableError: The key set cannot be fetched.
        """
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError):
            return None
        kid: object = header.get("kid")
        if header.get("alg") not in self.algorithms or not isinstance(kid, str | None):
            return None
        key = await self._key(kid)
        if key is None:
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[key.algorithm_name], audience=self.audience,
                issuer=self.issuer, leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )  # fmt: skip
        except (jwt.PyJWTError, ValueError, TypeError):
            return None
        return _access_token(token, claims, self.audience)

    async def _key(self, kid: str | None) -> jwt.PyJWK | None:
        """The key of `kid` (None: the only key of a set of one), fetching the set if needed."""
        now = time.monotonic()
        stale = now - self._fetched > self.cache_seconds
        if stale or (kid not in self._keys and now - self._fetched > self.refresh_seconds):
            async with self._lock:
                if self._fetched < now:  # nobody fetched it while this waited
                    await self._fetch()
        if not self._keys and self._failure is not None:
            raise KeysUnavailableError(self._failure)
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _fetch(self) -> None:
        """Fetch the key set; on failure keep the keys fetched before, if any."""
        import httpx
        import jwt

        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.get(self.jwks_url, headers=_ACCEPT)
            response.raise_for_status()
            data: object = response.json()
            if not isinstance(data, dict):
                raise ValueError("the key set is not a JSON object")
            found = jwt.PyJWKSet.from_dict(cast(dict[str, Any], data))
            keys = {k.key_id: k for k in found.keys if k.algorithm_name in self.algorithms}
            if not keys:
                raise ValueError(f"no key for the algorithms {', '.join(self.algorithms)}")
        except (httpx.HTTPError, jwt.PyJWTError, ValueError) as e:
            self._fetched = time.monotonic()  # wait `refresh_seconds` before the next try
            reason = f"cannot use the key set at {self.jwks_url}: {e or type(e).__name__}"
            kept = "; the keys fetched before are kept" if self._keys else ""
            logger.warning("%s%s", reason, kept)
            self._failure = reason
            return
        self._keys, self._failure = keys, None
        self._fetched = time.monotonic()


def _access_token(token: str, claims: dict[str, Any], audiences: Sequence[str]) -> AccessToken:
    """The MCP SDK's `AccessToken` of verified claims (JWT or introspection: the same names)."""
    from mcp.server.auth.provider import AccessToken

    scope: object = claims.get("scope")
    if scope is None:
        scope = claims.get("scp")  # Azure's and Okta's name
    if isinstance(scope, str):
        scopes = scope.split()
    elif isinstance(scope, list):
        scopes = [str(s) for s in cast(list[object], scope)]
    else:
        scopes = []
    subject: object = claims.get("sub")
    client: object = claims.get("client_id")
    if client is None:
        client = claims.get("azp")  # OpenID Connect's authorized party
    exp: object = claims.get("exp")
    aud: object = claims.get("aud")
    named = cast(list[object], aud) if isinstance(aud, list) else [aud]
    resource = next((a for a in named if isinstance(a, str) and a in audiences), None)
    return AccessToken(
        token=token,
        client_id=str(client) if client is not None else str(subject or ""),
        scopes=scopes,
        expires_at=int(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None,
        resource=resource,
        subject=str(subject) if subject is not None else None,
        claims=claims,
    )


def _require(message: str, *modules: str) -> None:
    """Raise an ImportError (`message`, and what to install) unless every module imports."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{message}: {install_hint('auth')}") from None


def _listed(audience: str | Sequence[str]) -> list[str]:
    return [audience] if isinstance(audience, str) else list(audience)


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
        _require("IntrospectionVerifier needs the MCP SDK", "mcp.server.auth.provider")
        if (client_id is None) != (client_secret is None):
            raise ValueError("give both client_id and client_secret, or neither")
        self.url = url
        self.issuer = issuer
        self.audience = _listed(audience or ()) or None
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
        grant = _access_token(token, claims, self.audience or [])
        if self.audience is not None and grant.resource is None:
            return None
        return grant
