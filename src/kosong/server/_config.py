"""`ServerConfig`: every setting of the app, with safe defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kosong.eventstore import RunStore
from kosong.server._auth import StaticTokens, TokenVerifier
from kosong.server._limits import RateLimit

__all__ = ["DEFAULT_MAX_BODY", "LOCAL_HOSTS", "ServerConfig"]

DEFAULT_MAX_BODY = 16 * 1024 * 1024
"""The largest request body accepted by default: 16 MiB."""

LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
"""The host names allowed by default: the loopback ones, at any port."""


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """How the app serves: who may call, how much, and where runs are kept.

    The defaults are safe for a server on this machine: loopback host names only, no
    cross-site callers, 16 MiB bodies, 100 requests per second per principal.
    """

    token: str | None = None
    """A bearer token every request must carry (`Authorization: Bearer ...`); its
    principal is `"default"`. None: no authentication (unless `tokens` is given)."""
    tokens: Mapping[str, str] | None = None
    """Bearer tokens and the principal each stands for (`{"s3cret": "alice"}`)."""
    verifier: TokenVerifier | None = None
    """Checks bearer tokens instead of fixed ones: `JWTVerifier` (tokens an OAuth
    authorization server signed), `IntrospectionVerifier` (tokens it answers for), or any
    object with the MCP SDK's `async verify_token(token)`. The principal is the token's
    subject (else its client id)."""
    required_scopes: Sequence[str] = ()
    """Scopes every token must carry; a token without them is refused with 403
    (`insufficient_scope`)."""
    authorization_servers: Sequence[str] = ()
    """The OAuth authorization servers whose tokens are accepted, named by the protected
    resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource` and by each 401's
    challenge. Default: the verifier's `issuer`, if it has one; none: no metadata is served."""
    resource_url: str | None = None
    """This server's public URL, its resource identifier in the metadata (tokens' audience).
    Default: the URL each request came to (scheme, `Host`, the path the app is mounted at)."""
    allowed_hosts: Sequence[str] = LOCAL_HOSTS
    """Host names (any port) a request's `Host` may name; `"*"` allows any. Requests to
    other names are refused with 421 (DNS-rebinding protection)."""
    allowed_origins: Sequence[str] = ()
    """Origins (`https://app.example.com`) allowed besides those on an allowed host;
    `"*"` allows any. A request with another `Origin` is refused with 403."""
    max_body: int = DEFAULT_MAX_BODY
    """The largest request body, in bytes; a larger one is answered 413 before it is read."""
    rate_limit: RateLimit | None = field(default_factory=lambda: RateLimit(100, 200))
    """Requests per principal (the token's, else the client's address); None: unlimited."""
    redis_url: str | None = None
    """A Redis server shared by several processes: runs, the result cache and the rate
    limits are kept there."""
    run_store: RunStore | None = None
    """Where runs are kept (default: in memory, or in Redis with `redis_url`). Runs execute
    in this process: a store shared with other processes needs `redis_url` (and workers)."""
    run_ttl: float = 600.0
    """Seconds a run's events are kept after it ends, for clients that come back."""
    max_runs: int = 10_000
    """Runs in flight at once in this process; more are refused with 503."""
    keepalive: float = 15.0
    """Seconds between keep-alive comments on a quiet stream."""
    retry_ms: int = 2000
    """The `retry:` a stream tells clients to wait before reconnecting, in milliseconds."""
    grace: float = 10.0
    """Seconds in-flight calls get to finish when the server shuts down."""
    lease: float = 5.0
    """With Redis: a worker not heard from for this long is taken for dead, and the queue
    delivers its runs again to another worker."""
    idle: float = 1.0
    """With Redis: seconds a follower waits for an event before it looks at its run's record
    (a question past its deadline, while nobody else looks)."""
    workers: int = 100
    """With Redis: how many queued runs this process executes at once, as a worker of the
    queue that every process sharing the Redis serves (0: a front end only, whose runs are
    executed by `kosong worker` processes). Without Redis every run executes here."""
    max_queued: int | None = None
    """With Redis: how many runs may wait for a worker, across every front end; more are
    refused with 429 and `Retry-After` (None: no bound)."""
    key_ttl: float = 86_400.0
    """Seconds an idempotency key is remembered, and its run kept after it ends."""
    inspector: bool = True
    """Serve the inspector, a web page that shows the tools and calls them, at `/` (its
    files under `/inspector/`); False leaves `/` free."""
    name: str = "kosong"
    """The server's name, as MCP clients are told (`serverInfo.name` at `/mcp`)."""

    def __post_init__(self) -> None:
        if self.token is not None and not self.token:
            raise ValueError("token cannot be empty")
        if self.tokens is not None and any(not t for t in self.tokens):
            raise ValueError("tokens cannot be empty")
        if self.verifier is not None and self.principals():
            raise ValueError("give token(s) or a verifier, not both")
        checked = self.verifier is not None or self.principals()
        if (self.required_scopes or self.authorization_servers) and not checked:
            raise ValueError("required_scopes and authorization_servers need tokens to check")
        if self.redis_url is not None and self.run_store is not None:
            raise ValueError("give redis_url or run_store, not both")
        if self.max_queued is not None and self.max_queued < 1:
            raise ValueError("max_queued must be at least 1, or None")
        if self.key_ttl <= 0:
            raise ValueError("key_ttl must be positive")
        for name in ("max_body", "run_ttl", "keepalive", "grace", "lease", "idle", "workers"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} cannot be negative")

    def principals(self) -> dict[str, str]:
        """Every fixed token and its principal (`token`, `tokens`)."""
        found = dict(self.tokens or {})
        if self.token is not None:
            found[self.token] = "default"
        return found

    def token_verifier(self) -> TokenVerifier | None:
        """What checks the tokens: the verifier, or the fixed tokens; None: no authentication."""
        if self.verifier is not None:
            return self.verifier
        principals = self.principals()
        return StaticTokens(principals) if principals else None

    def issuers(self) -> list[str]:
        """The authorization servers the metadata names (empty: no metadata is served)."""
        if self.authorization_servers:
            return list(self.authorization_servers)
        issuer: object = getattr(self.verifier, "issuer", None)
        return [issuer] if isinstance(issuer, str) and issuer else []
