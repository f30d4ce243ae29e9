"""The protected-resource metadata (RFC 9728): where a client learns who issues tokens here.

The MCP authorization spec has a client that is refused (401) read the `resource_metadata`
URL of the challenge, fetch that document, and ask the authorization server it names for a
token whose audience is the `resource` it gives. The resource is this server as a whole (its
HTTP routes and `/mcp` take the same tokens): the configured `ServerConfig.resource_url`,
else the URL the request came to (its scheme, its `Host`, which the guard checked first, and
the path the app is mounted under). The document is served beside it, at
`<resource>/.well-known/oauth-protected-resource`, which for an app at the root of its host
is the place RFC 9728 names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from kosong.server._guard import header

__all__ = ["METADATA_PATH", "metadata_route", "resource_url"]

METADATA_PATH = "/.well-known/oauth-protected-resource"
"""Where the document is served, under the app."""

_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d+)?|\[[0-9A-Fa-f:.]+\](:\d+)?")


def resource_url(scope: Scope, configured: str | None = None) -> str:
    """This server's resource identifier, for a request (see the module doc)."""
    if configured is not None:
        return configured.rstrip("/")
    scheme = {"ws": "http", "wss": "https"}.get(scope["scheme"], scope["scheme"])
    found = header(scope, b"host")
    host = found.decode("latin-1") if found is not None else ""
    if not _HOST.fullmatch(host):  # never copy a stray quote into a challenge
        server = scope.get("server") or ("localhost", None)
        host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
    return f"{scheme}://{host}{scope.get('root_path', '')}"


def metadata_route(
    authorization_servers: Sequence[str],
    scopes: Sequence[str] = (),
    configured: str | None = None,
) -> Route:
    """The route of the document, naming `authorization_servers` (with the MCP SDK's model).

    Raises:
        ImportError: The MCP SDK is not installed.
        ValueError: An authorization server is not an http(s) URL.
    """
    from mcp.shared.auth import ProtectedResourceMetadata
    from pydantic import ValidationError

    servers = list(authorization_servers)
    try:  # checked once, when the app is made
        ProtectedResourceMetadata.model_validate(
            {"resource": "http://localhost", "authorization_servers": servers}
        )
    except ValidationError:
        raise ValueError(
            f"the authorization servers must be http(s) URLs: {', '.join(servers)}"
        ) from None

    async def document(request: Request) -> Response:
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource_url(request.scope, configured),
                "authorization_servers": servers,
                "scopes_supported": list(scopes) or None,
                "bearer_methods_supported": ["header"],
            }
        )
        body = metadata.model_dump_json(exclude_none=True)
        return Response(body, media_type="application/json",
                        headers={"Cache-Control": "public, max-age=3600"})  # fmt: skip

    return Route(METADATA_PATH, document, methods=["GET"])
