"""`JWTVerifier`: access tokens that are JWTs (RFC 9068), checked with an issuer's published keys.

PyJWT checks the signature and the claims: the MCP SDK depends on it already (so it costs
nothing more), it is maintained, and its `PyJWK` binds each key to the one algorithm it was
published for (a token cannot pick `none`, nor HMAC with a public key as its secret). What is
ours is only fetching the key set asynchronously (PyJWT's `PyJWKClient` blocks on `urllib`) and
when: cached for `cache_seconds`, fetched again for a key id not seen, but at most once per
`refresh_seconds`, so tokens with made-up key ids cannot make the server hammer the issuer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from kosong._extras import install_hint

if TYPE_CHECKING:
    import jwt
    from mcp.server.auth.provider import AccessToken

__all__ = ["ASYMMETRIC_ALGORITHMS", "JWTVerifier", "KeysUnavailableError", "access_token"]

logger = logging.getLogger(__name__)

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
        try:
            import jwt  # noqa: F401  # pyright: ignore[reportUnusedImport]
            from mcp.server.auth.provider import AccessToken  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError:
            raise ImportError(
                f"JWTVerifier needs PyJWT and the MCP SDK: {install_hint('auth')}"
            ) from None
        audiences = [audience] if isinstance(audience, str) else list(audience)
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
        return access_token(token, claims, self.audience)

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
                response = await client.get(self.jwks_url, headers={"Accept": "application/json"})
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


def access_token(token: str, claims: dict[str, Any], audiences: Sequence[str]) -> AccessToken:
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
