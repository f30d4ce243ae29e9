"""Who is calling: the bearer token of a request, and the principal it stands for."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Collection, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from kosong.server._guard import ANONYMOUS, PRINCIPAL, header, refuse, route_path

__all__ = ["BearerTokenMiddleware"]


class BearerTokenMiddleware:
    """Puts who is calling in the scope (`PRINCIPAL`); with tokens, refuses others (401).

    Tokens are compared by their digests: a dict lookup whose time does not depend on how
    much of a wrong token matches. The `exempt` paths (exact) need no token.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        principals: Mapping[str, str],
        exempt: Collection[str] = (),
        rejected: Counter[str] | None = None,
    ) -> None:
        """Accept the tokens of `principals` (token -> principal); none: anyone, anonymous."""
        self.app = app
        self._principals = {
            hashlib.sha256(token.encode()).digest(): name for token, name in principals.items()
        }
        self._exempt = frozenset(exempt)
        self.rejected = rejected if rejected is not None else Counter[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Find the request's principal, or refuse it."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self._principals and route_path(scope) not in self._exempt:
            authorization = header(scope, b"authorization")
            found = None
            if authorization is not None:
                scheme, _, token = authorization.partition(b" ")
                if scheme.lower() == b"bearer" and token.strip():
                    found = self._principals.get(hashlib.sha256(token.strip()).digest())
            if found is None:
                self.rejected["auth"] += 1
                challenge = 'Bearer realm="kosong"'
                if authorization is not None:
                    challenge += ', error="invalid_token"'
                await refuse(
                    scope, send, 401, "UNAUTHORIZED",
                    "a valid bearer token is needed (Authorization: Bearer <token>)",
                    [(b"www-authenticate", challenge.encode())],
                )  # fmt: skip
                return
            principal = found
        scope[PRINCIPAL] = principal
        await self.app(scope, receive, send)
