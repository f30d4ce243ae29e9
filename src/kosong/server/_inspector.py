"""The inspector: a web page at `/` that shows the app's tools and calls them (private).

    GET /                       the page
    GET /inspector/{file}       its script modules and style sheet

The files ship inside the package (`kosong/server/inspector/`): plain HTML, CSS and JavaScript
written for it, nothing fetched from elsewhere and nothing built at install time. The page uses
the app's own routes (`/tools`, `/dialects`, `/tools/{name}/sse`, `/runs/{id}`, `/metrics`)
with the token the user gives it, so it can do nothing a client of the API cannot. The page and
its files hold no data, so they need no token (`public_paths`); the Host and Origin checks and
the rate limit apply to them as to every route.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["ASSETS", "inspector_routes", "public_paths"]

ASSETS = Path(__file__).parent / "inspector"
"""The page's files."""

_PREFIX = "/inspector"

_HEADERS = {
    # The page runs its own scripts only, talks to this server only, and shows images that
    # and media that tools return inline (data: URLs); nothing may frame it.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "media-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated (ETag): a new version is seen at once
}


class _Assets(StaticFiles):
    """The page's files, with the page's headers."""

    def file_response(
        self, full_path: os.PathLike[str] | str, stat_result: os.stat_result, scope: Scope,
        status_code: int = 200,
    ) -> Response:  # fmt: skip
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(_HEADERS)
        return response


async def _page(request: Request) -> Response:
    return FileResponse(ASSETS / "index.html", headers=_HEADERS, media_type="text/html")


def inspector_routes() -> list[BaseRoute]:
    """The routes of the page and its files."""
    return [
        Route("/", _page, methods=["GET"]),
        Mount(_PREFIX, app=_Assets(directory=ASSETS), name="inspector"),
    ]


def public_paths() -> frozenset[str]:
    """The paths of the page and of each of its files: they need no token."""
    files = (p for p in ASSETS.rglob("*") if p.is_file())
    return frozenset(["/", *(f"{_PREFIX}/{p.relative_to(ASSETS).as_posix()}" for p in files)])
