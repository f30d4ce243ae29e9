"""Where a request comes from: the `Host` it names, the `Origin` and site a browser says it has.

`HostOriginMiddleware` refuses requests to a host name not allowed (DNS rebinding) and from an
origin not allowed; `CrossSiteMiddleware` refuses whatever a page of another site could make a
browser send to run or change something here. See `_guard` for their place among the checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from kosong.server._guard import refuse

__all__ = ["CrossSiteMiddleware", "HostOriginMiddleware"]


def _host_name(value: str) -> str:
    """`example.com` of `example.com:8000`, `[::1]` of `[::1]:8000`, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def _origin(value: str) -> str:
    return value.strip().lower().rstrip("/")


_ONCE = frozenset(
    {b"host", b"origin", b"authorization", b"sec-fetch-site", b"content-type", b"content-length"}
)
"""The headers the checks read, each allowed once (RFC 9110 5.3; RFC 9112 3.2 asks a 400 for
two `Host`s): with two values, one check could pass on one value and the next read the other."""


class HostOriginMiddleware:
    """Refuses a `Host` (421) or an `Origin` (403) not allowed, and a repeated header (400).

    A header the checks read may be sent once (`_ONCE`). Hosts are names at any port; `"*"`
    allows any. An origin is allowed when listed, or when its host is an allowed host (a page
    of this server, at any port); `"*"` allows any.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Collection[str],
        origins: Collection[str],
        rejected: Counter[str],
    ) -> None:
        """Pass requests to `app` whose `Host` is one of `hosts` and `Origin` allowed."""
        self.app = app
        self._any_host = "*" in hosts
        self._hosts = frozenset(h.lower() for h in hosts if h != "*")
        self._any_origin = "*" in origins
        self._origins = frozenset(_origin(o) for o in origins)
        self.rejected = rejected

    def _origin_ok(self, origin: str) -> bool:
        origin = _origin(origin)
        if self._any_origin or origin in self._origins:
            return True
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and _host_name(rest) in self._hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check `Host` and `Origin`, then pass the request on."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            if key not in _ONCE:
                continue
            if key in sent:
                self.rejected["header"] += 1
                await refuse(
                    scope, send, 400, "INVALID_PARAMS",
                    f"the {key.decode('latin-1')} header is sent more than once; send it once",
                )  # fmt: skip
                return
            sent[key] = value
        host = sent.get(b"host")
        origin = sent.get(b"origin")
        if not self._any_host and (
            host is None or _host_name(host.decode("latin-1")) not in self._hosts
        ):
            self.rejected["host"] += 1
            await refuse(
                scope, send, 421, "PERMISSION_DENIED",
                "this server does not answer to that Host; start it with the host name allowed "
                "(--allow-host)",
            )  # fmt: skip
            return
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            self.rejected["origin"] += 1
            await refuse(
                scope, send, 403, "PERMISSION_DENIED",
                "requests from this Origin are not allowed (--allow-origin)",
            )  # fmt: skip
            return
        await self.app(scope, receive, send)


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TRUSTED_SITES = frozenset({b"same-origin", b"none"})


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.partition(b";")[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and
                                            media.endswith(b"+json"))  # fmt: skip


class CrossSiteMiddleware:
    """No page of another site can make a request here that runs or changes something.

    Such a request (any method but GET, HEAD and OPTIONS; and a GET or HEAD that `starts`
    something, such as a run) is refused with 403 when the browser marks it as coming from
    another site (`Sec-Fetch-Site: cross-site`, or `same-site` without an `Origin` listed in
    `origins`: "site" ignores the port, so another port of localhost is the same site).

    Browsers that send no `Sec-Fetch-Site` (older ones, or a plain-HTTP host that is not this
    machine) still cannot reach it with a "simple" request, the only kind a page of another
    origin may send without the browser asking the server first (a CORS preflight, which
    this server never grants): a POST must declare a JSON body (415 otherwise: a form or a
    no-cors `fetch` can only send form or text bodies), and a GET that `starts` something
    must carry a header no such request can: `Sec-Fetch-Site` (`same-origin`, or `none`: what
    a browser sends for an address its user typed, and what a program may send) or a bearer
    `Authorization` (403 otherwise).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        starts: Callable[[Scope], bool],
        origins: Collection[str],
        rejected: Counter[str],
    ) -> None:
        """Guard `app`; `starts(scope)` says whether a GET or HEAD request starts something."""
        self.app = app
        self._starts = starts
        self._listed = frozenset(_origin(o) for o in origins if o != "*")
        self.rejected = rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request from another site that would act; pass the others on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        safe = method in _SAFE_METHODS
        if safe and not self._starts(scope):
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"])  # each one read here is sent once (`_ONCE`)
        site = sent.get(b"sec-fetch-site", b"").strip().lower()
        origin = sent.get(b"origin")
        listed = origin is not None and _origin(origin.decode("latin-1")) in self._listed
        if site == b"cross-site" or (site == b"same-site" and not listed):
            await self._refuse(
                scope, send, 403,
                f"a page of another site cannot run or change anything here (Sec-Fetch-Site: "
                f"{site.decode('latin-1')}); allow its origin with --allow-origin if it is yours",
            )  # fmt: skip
            return
        if method == "POST" and not _is_json(sent.get(b"content-type")):
            await self._refuse(
                scope, send, 415,
                "a POST body must be declared JSON (Content-Type: application/json), even when "
                "empty: a page of another site can send forms and text, not JSON",
            )  # fmt: skip
            return
        bearer = sent.get(b"authorization", b"")[:7].lower() == b"bearer "
        if safe and not (site in _TRUSTED_SITES or listed or bearer):
            await self._refuse(
                scope, send, 403,
                "starting a run with GET needs a header that a page of another site cannot "
                "send: Sec-Fetch-Site (a browser sends it; a program may send "
                "'Sec-Fetch-Site: none') or a bearer Authorization; or POST a JSON body",
            )  # fmt: skip
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, message: str) -> None:
        self.rejected["cross_site"] += 1
        code = "INVALID_PARAMS" if status == 415 else "PERMISSION_DENIED"
        await refuse(scope, send, status, code, message)
