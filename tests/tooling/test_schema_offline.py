"""Defining a tool never touches the network or the file system.

A real HTTP server counts the requests it gets and a real file holds a secret: every way of
defining a tool with a schema that points at them is refused at once, naming the JSON path,
and neither is ever read.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kosong.tooling import CallableTool, FunctionTool, Tool, ToolOk, ToolReturnValue
from kosong.utils.jsonschema import deref_json_schema


class _Counter(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b'{"type": "string", "description": "FROM THE NETWORK"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Counter.hits = 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    # shutdown() returns once serve_forever next looks: every 0.05 s, not the default 0.5 s.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/schema.json"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def secret_file(tmp_path: Path) -> str:
    path = tmp_path / "secret.json"
    path.write_text('{"type": "string", "description": "SECRET FROM DISK"}')
    return path.as_uri()


def _schema(ref: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"city": {"$ref": ref}}}


def _definitions(ref: str) -> list[tuple[str, Any]]:
    class Remote(CallableTool):
        name: str = "remote"
        description: str = "d"
        parameters: dict[str, Any] = _schema(ref)

        async def __call__(self, city: str) -> ToolReturnValue:
            return ToolOk(output=city)

    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    return [
        ("Tool", lambda: Tool(name="t", description="d", parameters=_schema(ref))),
        ("CallableTool", Remote),
        (
            "FunctionTool(schema=...)",
            lambda: FunctionTool.from_function(lookup, schema=_schema(ref)),
        ),
        ("deref_json_schema", lambda: deref_json_schema(_schema(ref))),
    ]


def test_remote_refs_are_refused_at_definition_and_never_fetched(server: str) -> None:
    for what, define in _definitions(server):
        with pytest.raises((ValidationError, ValueError)) as caught:
            define()
        assert "properties.city.$ref" in str(caught.value), what
        assert "never fetches" in str(caught.value), what
    assert _Counter.hits == 0


def test_file_refs_are_refused_at_definition_and_never_read(secret_file: str) -> None:
    for what, define in _definitions(secret_file):
        with pytest.raises((ValidationError, ValueError)) as caught:
            define()
        assert "properties.city.$ref" in str(caught.value), what
        assert "SECRET" not in str(caught.value), what


def test_an_unknown_meta_schema_is_refused_and_never_fetched(server: str) -> None:
    with pytest.raises(ValidationError, match=r"\$schema"):
        Tool(name="t", description="d", parameters={"$schema": server, "type": "object"})
    assert _Counter.hits == 0


def test_local_refs_and_known_drafts_still_work() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"$ref": "#/$defs/City"}},
        "$defs": {"City": {"type": "string"}},
    }
    assert Tool(name="t", description="d", parameters=schema).parameters == schema
