"""Serve any toolset over HTTP and SSE (the `server` extra).

    from kosong.server import ServerConfig, create_app, serve

    app = create_app(toolset, ServerConfig(token="s3cret"))
    await serve(app, port=8000)          # or: kosong serve my_tools:toolset

- `create_app(toolset, config)`: a Starlette app with the routes of `GET /tools`,
  `POST /tools/{name}`, SSE streams of calls that outlive their connections (runs, resumed
  with `Last-Event-ID` or `GET /runs/{id}`, cancelled with `DELETE /runs/{id}`), `/healthz`
  and `/metrics`, every request checked first (Host, Origin, cross-site, bearer token, rate
  limit, body size). `ServerConfig` holds the settings, with safe defaults. The app also answers
  `GET /dialects` (what each provider rejects or ignores in the tools' schemas) and serves the
  inspector, a web page that shows the tools and calls them, at `/`.
- Runs are kept in a run store of `kosong.eventstore` (`MemoryRunStore` by default;
  `RedisRunStore` shares them between processes, and `RedisRateLimiter`, in
  `kosong.server.redis_limits`, the rate limit).
- `serve(app)` runs the app until a signal; `serving(app)` runs it in the background.
- With Redis, every call is a run handed to workers through a queue (Docket): the front ends'
  own slots (`ServerConfig.workers`), and `work(toolset, config)` processes on any machine
  (`kosong worker`).
- Tokens: fixed ones (`ServerConfig(token=...)`), or a `TokenVerifier` for tokens an OAuth
  authorization server issues: `JWTVerifier` (signed JWTs, checked with its published keys) or
  `IntrospectionVerifier` (RFC 7662; the `auth` extra for both); with them the app
  serves the protected resource metadata (RFC 9728) its 401 challenges point to.
"""

from kosong.server._app import Server, as_toolset, create_app, query_arguments
from kosong.server._auth import TokenVerifier
from kosong.server._config import DEFAULT_MAX_BODY, LOCAL_HOSTS, ServerConfig
from kosong.server._limits import MemoryRateLimiter, RateLimit, RateLimiter
from kosong.server._oauth import IntrospectionVerifier, JWTVerifier
from kosong.server._serve import bind, serve, serving, work

__all__ = [
    "DEFAULT_MAX_BODY",
    "LOCAL_HOSTS",
    "IntrospectionVerifier",
    "JWTVerifier",
    "MemoryRateLimiter",
    "RateLimit",
    "RateLimiter",
    "Server",
    "ServerConfig",
    "TokenVerifier",
    "as_toolset",
    "bind",
    "create_app",
    "query_arguments",
    "serve",
    "serving",
    "work",
]
