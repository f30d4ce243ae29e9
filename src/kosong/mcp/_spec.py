"""`ServerSpec`: how to reach one MCP server, with its credentials (see `MCPToolset`).

    ServerSpec(url="https://tools.example.com/mcp", headers={"Authorization": "Bearer ..."})
    ServerSpec(url="https://tools.example.com/mcp", auth=OAuthClientProvider(...))
    ServerSpec(url="http://127.0.0.1:3001/sse")             # the legacy HTTP+SSE transport
    ServerSpec(command=["python", "-m", "files_server"], env={"ROOT": "/srv"}, cwd="/srv")

A plain URL, a command line or a list of arguments stands for the spec with nothing else.
A URL is served over streamable HTTP, or over the 2024-11-05 HTTP+SSE transport for
`transport="sse"` or a path ending in `/sse` (docs/mcp.md, "Tasks, and servers on the legacy
transport"). Over HTTP every request goes through one `httpx2` client (the MCP SDK's HTTP
library) with the spec's headers and `auth` (an `httpx.Auth` through a small adapter), closed
with the connection. Its `AuthWatch` remembers a 401 or 403, so a failure can say
"unauthorized" and what to pass instead of the SDK's "Server returned an error response".
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcp import StdioServerParameters

__all__ = ["AuthFailure", "AuthWatch", "ServerSpec", "ServerTarget", "http_transport"]

_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the MCP SDK's defaults (5 minutes' silence: read)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ServerSpec:
    """One MCP server: an HTTP `url` (with `headers`, `auth`) or a stdio `command`.

    Give exactly one of `url` and `command`. `headers`, `auth` and `transport` are for a URL;
    `env` and `cwd` for a command. The repr never shows header values or the auth object's
    secrets.
    """

    url: str | None = None
    """The endpoint: streamable HTTP (`http(s)://.../mcp`), or the legacy transport's event
    stream (`http(s)://.../sse`)."""
    transport: Literal["streamable-http", "sse"] | None = None
    """How to talk to `url`: streamable HTTP, or the 2024-11-05 HTTP+SSE transport; by
    default `"sse"` for a URL whose path ends in `/sse`, else streamable HTTP."""
    headers: Mapping[str, str] | None = None
    """Headers every request carries, e.g. `{"Authorization": "Bearer <token>"}`."""
    auth: httpx2.Auth | Any | None = None
    """An `httpx2.Auth` (the MCP SDK's `OAuthClientProvider`, say) or an `httpx.Auth`."""
    command: str | Sequence[str] | None = None
    """The command that runs the server over stdio: a command line or a list of arguments
    (with `args`: the program itself)."""
    args: Sequence[str] | None = None
    """The program's arguments, when `command` is the program alone (as `mcpServers` files
    write it, so `ServerSpec(**entry)` takes a `{"command", "args", "env"}` entry)."""
    env: Mapping[str, str] | None = None
    """More environment variables for the server process, over the SDK's safe default
    environment (`PATH`, `HOME`..., never this process's other variables and secrets)."""
    cwd: str | os.PathLike[str] | None = None
    """The directory the server process runs in."""
    argv: tuple[str, ...] = field(default=(), init=False)
    """The command as a list of arguments (set from `command`)."""

    def __post_init__(self) -> None:
        if (self.url is None) == (self.command is None):
            raise ValueError("a ServerSpec needs exactly one of url=... and command=...")
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
            if self.env is not None or self.cwd is not None or self.args is not None:
                raise ValueError(
                    "args, env and cwd are for a command; a URL takes headers and auth"
                )
            if self.transport not in (None, "streamable-http", "sse"):
                raise ValueError(
                    f'transport must be "streamable-http" or "sse", got {self.transport!r}'
                )
            for key, value in (self.headers or {}).items():
                if not isinstance(key, str) or not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise ValueError(f"header {key!r} must be a string with a string value")
            if self.auth is not None and not _is_auth(self.auth):
                raise TypeError(
                    f"auth must be an httpx2.Auth or an httpx.Auth, got {type(self.auth).__name__}"
                )
            return
        if self.headers is not None or self.auth is not None or self.transport is not None:
            raise ValueError(
                "headers, auth and transport are for a URL; a command takes env and cwd"
            )
        command, args = self.command, self.args
        if args is not None:
            if not isinstance(command, str) or isinstance(args, str):
                raise ValueError(
                    "with args=[...], command is the program alone (a string), and args a list"
                )
            argv = [command, *(str(a) for a in args)]
        else:
            argv = shlex.split(command) if isinstance(command, str) else list(command or ())
        if not argv:
            raise ValueError("the command of an MCP server is empty")
        object.__setattr__(self, "argv", tuple(argv))

    @classmethod
    def of(cls, target: object) -> ServerSpec:
        """`target` as a spec: a spec, an `http(s)://` URL, a command line or list, stdio params.

        Raises:
            ValueError: an empty command.
            TypeError: `target` is none of these.
        """
        if isinstance(target, ServerSpec):
            return target
        if isinstance(target, StdioServerParameters):
            return cls(command=[target.command, *target.args], env=target.env, cwd=target.cwd)
        if isinstance(target, str):
            if target.startswith(("http://", "https://")):
                return cls(url=target)
            return cls(command=target)
        if isinstance(target, Sequence) and not isinstance(target, bytes | bytearray):
            return cls(command=[str(a) for a in cast(Sequence[object], target)])
        raise TypeError(
            "an MCP server is a ServerSpec, a URL, a command line or a list of arguments, "
            f"not a {type(target).__name__}"
        )

    @property
    def legacy_sse(self) -> bool:
        """Whether the URL is served over the 2024-11-05 HTTP+SSE transport."""
        if self.url is None:
            return False
        if self.transport is not None:
            return self.transport == "sse"
        return urlsplit(self.url).path.rstrip("/").endswith("/sse")

    @property
    def where(self) -> str:
        """The URL, or the command line (for messages)."""
        return self.url if self.url is not None else shlex.join(self.argv)

    def stdio(self) -> StdioServerParameters:
        """The SDK's parameters for the command (a spec with a URL has none).

        Raises:
            ValueError: the spec is a URL.
        """
        if not self.argv:
            raise ValueError(f"{self.where} is not a command")
        cwd = None if self.cwd is None else os.fspath(self.cwd)
        env = None if self.env is None else dict(self.env)
        return StdioServerParameters(
            command=self.argv[0], args=list(self.argv[1:]), env=env, cwd=cwd
        )

    def __repr__(self) -> str:
        if self.url is not None:
            parts = [f"url={self.url!r}"]
            if self.transport is not None:
                parts.append(f"transport={self.transport!r}")
            if self.headers:
                parts.append(f"headers={dict.fromkeys(self.headers, '***')!r}")
            if self.auth is not None:
                parts.append(f"auth=<{type(self.auth).__name__}>")
        else:
            parts = [f"command={list(self.argv)!r}"]
            if self.env is not None:
                parts.append(f"env={dict.fromkeys(self.env, '***')!r}")
            if self.cwd is not None:
                parts.append(f"cwd={os.fspath(self.cwd)!r}")
        return f"ServerSpec({', '.join(parts)})"


ServerTarget = ServerSpec | str | Sequence[str] | StdioServerParameters
"""What `MCPToolset` takes for a server: a spec, a URL, a command line or list, stdio params."""


def _is_auth(value: object) -> bool:
    if isinstance(value, httpx2.Auth):
        return True
    try:
        import httpx
    except ImportError:  # httpx is optional: only its Auth objects need it
        return False
    return isinstance(value, httpx.Auth)


# --- 401 and 403 ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthFailure:
    """The server refused the credentials: its status, and the challenge it sent."""

    status: int
    """401 (no valid credentials) or 403 (not allowed)."""
    challenge: str
    """The `WWW-Authenticate` header, when sent (it may name the protected-resource metadata)."""

    def describe(self, where: str) -> str:
        """Why, and what to pass, in one sentence."""
        if self.status == 403:
            what = "forbidden (HTTP 403): the credentials given are not allowed to do this"
        else:
            what = "unauthorized (HTTP 401): it needs credentials"
        hint = f"; it asks for: {self.challenge}" if self.challenge else ""
        return (
            f"{where} answered {what}{hint}. Pass them in the server's ServerSpec: "
            'ServerSpec(url=..., headers={"Authorization": "Bearer <token>"}), or '
            "auth=<an httpx2.Auth, such as the MCP SDK's OAuthClientProvider>"
            " (on the command line: --token T, or --header 'Name: value')"
        )


class AuthWatch:
    """The last 401 or 403 a connection's HTTP client saw, until a request succeeds again."""

    def __init__(self) -> None:
        self.failure: AuthFailure | None = None

    async def seen(self, response: httpx2.Response) -> None:
        """An `httpx2` response hook: remember a refusal, forget it on success."""
        status = response.status_code
        if status in (401, 403):
            challenge = response.headers.get("www-authenticate", "")
            self.failure = AuthFailure(status, challenge[:300])
        elif status < 400:
            self.failure = None


# --- the HTTP transport -----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_transport(spec: ServerSpec, watch: AuthWatch) -> AsyncGenerator[Any]:
    """The SDK client's transport for `spec`'s URL (streamable HTTP or legacy SSE), watched."""
    url = spec.url
    assert url is not None
    auth = spec.auth
    if auth is not None and not isinstance(auth, httpx2.Auth):
        auth = _HttpxAuth(auth)
    headers = dict(spec.headers or {})

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=timeout or _TIMEOUT,
            event_hooks={"response": [watch.seen]},
        )

    if spec.legacy_sse:
        async with sse_client(url, headers=headers, auth=auth, httpx_client_factory=client) as sse:
            yield sse
        return
    async with (
        client(headers, _TIMEOUT, auth) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


class _HttpxAuth(httpx2.Auth):
    """An `httpx.Auth` run on `httpx2`'s requests: each request and response is copied across.

    A response's body is read only for auths that ask (it may be an endless event stream).
    """

    def __init__(self, auth: Any) -> None:
        self._auth = auth
        self.requires_request_body = bool(getattr(auth, "requires_request_body", False))
        self.requires_response_body = bool(getattr(auth, "requires_response_body", False))

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        import httpx

        flow = self._auth.async_auth_flow(_copied(request, httpx))
        try:
            outgoing: Any = await flow.__anext__()
            while True:
                response = yield _copied(outgoing, httpx2)
                body = await response.aread() if self.requires_response_body else b""
                headers = list(response.headers.raw)
                copy = httpx.Response(
                    response.status_code, headers=headers, content=body, request=outgoing
                )
                outgoing = await flow.asend(copy)
        except StopAsyncIteration:
            return


def _copied(request: Any, library: Any) -> Any:
    """`request` (of httpx or httpx2) as a request of `library`, the other one."""
    import httpx  # there: the auth extra brings it, and `request` or `library` is its

    content: bytes | None = None
    with contextlib.suppress(httpx.RequestNotRead, httpx2.RequestNotRead):
        content = request.content  # unread: a streamed body nobody read, nothing to copy
    return library.Request(
        request.method, str(request.url), headers=list(request.headers.raw), content=content
    )
