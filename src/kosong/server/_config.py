"""`ServerConfig`: every setting of the app, with safe defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kosong.eventstore._store import EventStore
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
    event_store: EventStore | None = None
    """Where run events are kept (default: in memory, or in Redis with `redis_url`)."""
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
    """With Redis: a process not heard from for this long is taken for dead and its runs
    are ended with an error."""
    idle: float = 1.0
    """Seconds a follower waits for an event before checking on its run."""
    inspector: bool = True
    """Serve the inspector, a web page that shows the tools and calls them, at `/` (its
    files under `/inspector/`); False leaves `/` free."""
    name: str = "kosong"
    """The server's name, as MCP clients are told (`serverInfo.name` at `/mcp`)."""

    def __post_init__(self) -> None:
        if self.max_body < 0:
            raise ValueError("max_body cannot be negative")
        if self.token is not None and not self.token:
            raise ValueError("token cannot be empty")
        if self.tokens is not None and any(not t for t in self.tokens):
            raise ValueError("tokens cannot be empty")
        if self.redis_url is not None and self.event_store is not None:
            raise ValueError("give redis_url or event_store, not both")
        for name in ("run_ttl", "keepalive", "grace", "lease", "idle"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} cannot be negative")

    def principals(self) -> dict[str, str]:
        """Every accepted token and its principal (empty: no authentication)."""
        found = dict(self.tokens or {})
        if self.token is not None:
            found[self.token] = "default"
        return found
