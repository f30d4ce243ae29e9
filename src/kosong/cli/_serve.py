"""`kosong serve TARGET`: serve a toolset over HTTP and SSE (and MCP at `/mcp`)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import socket
from typing import Any

import click

from kosong._extras import install_hint
from kosong.cli._errors import CLIError
from kosong.cli._load import TARGET_HELP, open_target
from kosong.server import (
    DEFAULT_MAX_BODY,
    LOCAL_HOSTS,
    IntrospectionVerifier,
    JWTVerifier,
    RateLimit,
    ServerConfig,
    TokenVerifier,
    bind,
    create_app,
)
from kosong.server import serve as serve_app

__all__ = ["check_redis", "listen", "parse_size", "run_app", "serve"]

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}  # fmt: skip


def parse_size(text: str) -> int:
    """`16MiB`, `10MB`, `1048576` as a number of bytes.

    Raises:
        ValueError: not a size.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise ValueError(f"{text!r} is not a size such as 16MiB, 10MB or 1048576")
    return int(float(match.group(1)) * unit)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command(epilog=TARGET_HELP, short_help="Serve the tools over HTTP, SSE and MCP.")
@click.argument("target", metavar="TARGET")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token", envvar="KOSONG_TOKEN", help="Bearer token every request must carry "
              "(or KOSONG_TOKEN).")  # fmt: skip
@click.option("--jwks-url", metavar="URL", help="Accept JWTs signed with the keys published "
              "here (needs --issuer and --audience; the `auth` extra).")  # fmt: skip
@click.option("--introspection-url", metavar="URL", help="Accept the tokens this RFC 7662 "
              "endpoint says are active (client credentials from KOSONG_INTROSPECTION_CLIENT "
              "and KOSONG_INTROSPECTION_SECRET, if it wants them).")  # fmt: skip
@click.option("--issuer", metavar="URL", help="The authorization server issuing the tokens: "
              "their `iss`, named in /.well-known/oauth-protected-resource.")  # fmt: skip
@click.option("--audience", metavar="URL", help="The `aud` tokens must name: this server's "
              "URL as clients reach it.")  # fmt: skip
@click.option("--required-scope", "required_scopes", multiple=True, metavar="SCOPE",
              help="A scope every token must carry (403 without it).")  # fmt: skip
@click.option("--resource-url", metavar="URL", help="This server's public URL, as the "
              "metadata names it (default: the URL each request came to).")  # fmt: skip
@click.option("--redis", "redis_url", metavar="URL", envvar="KOSONG_REDIS",
              help="Redis shared by several processes: runs, cache, rate limits.")  # fmt: skip
@click.option("--max-body", default=f"{DEFAULT_MAX_BODY // 2**20}MiB", show_default=True,
              help="Largest request body (413 beyond).")  # fmt: skip
@click.option("--rate-limit", default="100/s,burst=200", show_default=True,
              help="Requests per principal, e.g. 100/s, 600/m,burst=50, or 'off'.")  # fmt: skip
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Host name requests may use besides the loopback ones ('*': any).")  # fmt: skip
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="Browser origin allowed to call, e.g. https://app.example.com.")  # fmt: skip
@click.option(
    "--grace",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds in-flight calls get when shutting down.",
)
@click.option("--lease", default=5.0, show_default=True, type=click.FloatRange(0.1),
              help="With --redis: seconds before a silent process counts as dead.")  # fmt: skip
@click.option(
    "--workers",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    help="With --redis: calls this process runs at once for the queue all the "
    "processes share (0: a front end only; `kosong worker` runs the calls).",
)
@click.option(
    "--max-queued",
    type=click.IntRange(1),
    metavar="N",
    help="With --redis: runs that may wait for a worker (more: 429).",
)
@click.option(
    "--idempotency-ttl",
    default=86_400.0,
    show_default=True,
    type=click.FloatRange(1),
    metavar="SECONDS",
    help="How long an Idempotency-Key, and its run, are remembered.",
)
@click.option("--no-inspector", "no_inspector", is_flag=True,
              help="Leave / free instead of serving the inspector page there.")  # fmt: skip
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))  # fmt: skip
@click.option("--no-mcp", is_flag=True, help="Do not serve the tools over MCP at /mcp.")
@click.option("--name", default="kosong", show_default=True,
              help="The server's name, as MCP clients are told.")  # fmt: skip
def serve(
    target: str,
    host: str,
    port: int,
    token: str | None,
    jwks_url: str | None,
    introspection_url: str | None,
    issuer: str | None,
    audience: str | None,
    required_scopes: tuple[str, ...],
    resource_url: str | None,
    redis_url: str | None,
    max_body: str,
    rate_limit: str,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    grace: float,
    lease: float,
    workers: int,
    max_queued: int | None,
    idempotency_ttl: float,
    no_inspector: bool,
    log_level: str,
    no_mcp: bool,
    name: str,
) -> int:
    """Serve the tools of TARGET over HTTP and SSE, over MCP at /mcp, with the inspector at /.

    Only this machine can reach it by default (127.0.0.1). A POST /tools/NAME with a JSON
    object of arguments calls a tool; GET /tools lists them.
    """
    if redis_url is None and (workers != 100 or max_queued is not None):
        raise CLIError("--workers and --max-queued need --redis (without it, calls run here)")
    try:
        limit = None if rate_limit.strip().lower() == "off" else RateLimit.parse(rate_limit)
        body_limit = parse_size(max_body)
    except ValueError as e:
        raise CLIError(str(e)) from None
    hosts = (*LOCAL_HOSTS, *allow_hosts)
    if not _loopback(host) and not allow_hosts:
        click.echo(
            f"kosong: listening on {host}, but only requests to {', '.join(LOCAL_HOSTS)} are "
            "answered: add --allow-host NAME for the name clients use",
            err=True,
        )
    verifier = _verifier(token, jwks_url, introspection_url, issuer, audience)
    try:
        config = ServerConfig(
            token=token,
            verifier=verifier,
            required_scopes=required_scopes,
            resource_url=resource_url,
            allowed_hosts=hosts,
            allowed_origins=allow_origins,
            max_body=body_limit,
            rate_limit=limit,
            redis_url=redis_url,
            grace=grace,
            lease=lease,
            workers=workers,
            max_queued=max_queued,
            key_ttl=idempotency_ttl,
            inspector=not no_inspector,
            name=name,
        )
    except ValueError as e:
        raise CLIError(str(e)) from None
    mcp = not no_mcp and _mcp_installed()
    asyncio.run(_serve(target, config, host, port, mcp=mcp, log_level=log_level))
    return 0


async def _serve(
    target: str, config: ServerConfig, host: str, port: int, *, mcp: bool, log_level: str
) -> None:
    """Load the toolset and serve it, in one event loop (an async factory's toolset lives in it)."""
    if config.redis_url is not None:
        await check_redis(config.redis_url)
    async with open_target(target) as toolset:
        try:
            app = create_app(toolset, config, mcp=mcp)
        except ValueError as e:  # such as an --issuer that is not a URL
            raise CLIError(str(e)) from None
        sock, url = listen(host, port)
        count = len(toolset.tools)
        click.echo(f"kosong: serving {count} tool(s) at {url} (Ctrl+C to stop)", err=True)
        if mcp:
            click.echo(f"kosong: and over MCP at {url}/mcp", err=True)
        if config.inspector:
            click.echo(f"kosong: inspect them in a browser: {url}/", err=True)
        if config.redis_url is not None and config.workers == 0:
            click.echo(
                "kosong: a front end only: `kosong worker` processes run the calls", err=True
            )
        await run_app(app, sock, log_level)


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket listening on `host:port`, and its URL; CLIError when the address is unusable."""
    try:
        sock = bind(host, port)
    except OSError as e:
        raise CLIError(str(e)) from None
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"


async def run_app(app: Any, sock: socket.socket, log_level: str) -> None:
    """Serve `app` on `sock` until a signal; CLIError when its app fails to start."""
    try:
        await serve_app(app, sock=sock, log_level=log_level)
    except RuntimeError as e:
        raise CLIError(f"the server stopped: {e}") from None


def _verifier(
    token: str | None,
    jwks_url: str | None,
    introspection_url: str | None,
    issuer: str | None,
    audience: str | None,
) -> TokenVerifier | None:
    """The token verifier the options ask for (None: fixed tokens, or none)."""
    given = [name for name, value in (("--token", token), ("--jwks-url", jwks_url),
             ("--introspection-url", introspection_url)) if value]  # fmt: skip
    if len(given) > 1:
        raise CLIError(f"give one of {', '.join(given)}: each is a way of checking tokens")
    try:
        if jwks_url:
            if not issuer or not audience:
                raise CLIError("--jwks-url needs --issuer and --audience (this server's URL)")
            return JWTVerifier(jwks_url, issuer=issuer, audience=audience)
        if introspection_url:
            return IntrospectionVerifier(
                introspection_url,
                client_id=os.environ.get("KOSONG_INTROSPECTION_CLIENT") or None,
                client_secret=os.environ.get("KOSONG_INTROSPECTION_SECRET") or None,
                issuer=issuer,
                audience=audience,
            )
    except (ImportError, ValueError) as e:
        raise CLIError(str(e)) from None
    if issuer or audience:
        raise CLIError("--issuer and --audience go with --jwks-url or --introspection-url")
    return None


def _mcp_installed() -> bool:
    """Whether the MCP SDK is there for /mcp; says how to get it when it is not."""
    try:
        import mcp  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        click.echo(
            f"kosong: /mcp is not served: the MCP SDK is missing ({install_hint('mcp')})",
            err=True,
        )
        return False
    return True


async def check_redis(url: str) -> None:
    """Connect to the Redis at `url` once, so that a wrong URL is said at once.

    Raises:
        CLIError: not a Redis URL, or no answer.
    """
    from redis.exceptions import RedisError

    from kosong.eventstore.redis_store import connect

    try:
        client = connect(url, socket_timeout=5)
    except ValueError as e:
        raise CLIError(f"--redis {url!r} is not a Redis URL: {e}") from None
    try:
        ping: Any = client.ping()  # pyright: ignore[reportUnknownMemberType]
        await asyncio.wait_for(ping, 6)
    except (RedisError, OSError, TimeoutError) as e:
        reason = str(e) or type(e).__name__
        raise CLIError(f"cannot reach Redis at {url}: {reason}") from None
    finally:
        await client.aclose()
