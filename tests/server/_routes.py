"""Every route of an app, read from the app itself, so a test walking them misses none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.routing import Mount, Route

from kosong.server import create_app
from tests.server._tools import tools


@dataclass(frozen=True)
class Endpoint:
    """One method of one route: `path` is its template (`/tools/{name}`)."""

    method: str
    path: str

    @property
    def streams(self) -> bool:
        """Whether a good request to it is answered with an SSE stream."""
        return self.path in ("/tools/{name}/sse", "/runs/{run_id}") and self.method != "DELETE"

    def url(self, **values: str) -> str:
        """The path with its parameters filled in (`name`, `run_id`, `path`)."""
        return self.path.format(**values)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def endpoints(app: Any) -> list[Endpoint]:
    """Each method of each route of `app` (a mount: GET and HEAD under it, and POST)."""
    found: list[Endpoint] = []
    for route in app.routes:
        if isinstance(route, Route):
            found += [Endpoint(m, route.path) for m in sorted(route.methods or ())]
        elif isinstance(route, Mount):
            found += [Endpoint(m, f"{route.path}/{{path}}") for m in ("GET", "HEAD", "POST")]
        else:  # a new kind of route: the walk must learn about it
            raise AssertionError(f"unknown route type {type(route).__name__}")
    return found


ALL = endpoints(create_app(tools, mcp=True))
"""The endpoints of the app `kosong serve tests/server/_tools.py:tools` serves."""
