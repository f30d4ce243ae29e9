"""Every route, walked with the usual hostile inputs: no 5xx, the envelope on every 4xx the app
answers, and no traceback in the log.

The routes are read from the app (`tests.server._routes`), so a new one is walked too. Requests
are written byte by byte on real sockets, since a client library would refuse to send most of
these (or fix them on the way).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from kosong.server import ServerConfig, create_app, serving
from tests.server._routes import ALL, Endpoint
from tests.server._tools import tools

MAX_BODY = 1024 * 1024
DEEP = 100_000


@dataclass
class Hostile:
    """One hostile request: what replaces the path, query, headers or body of a good one."""

    name: str
    name_param: str = "add"
    query: bytes = b""
    headers: dict[bytes, bytes] = field(default_factory=dict[bytes, bytes])
    drop: tuple[bytes, ...] = ()
    body: bytes | None = None


def _json_bodies() -> list[Hostile]:
    bodies = {
        "deep-array": b"[" * DEEP + b"]" * DEEP,
        "deep-object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
        "too-large": b'{"a": "' + b"x" * (2 * MAX_BODY) + b'"}',
        "invalid-utf8": b'{"a": "\xff\xfe", "b": 2}',
        "lone-surrogate": b'{"a": "\\ud800", "b": 2}',
        "array": b"[1, 2]",
        "string": b'"a string"',
        "number": b"12",
        "null": b"null",
        "true": b"true",
        "wrong-types": b'{"a": [1], "b": {"c": null}}',
        "huge-int": b'{"a": 1' + b"0" * 5000 + b', "b": 2}',
        "huge-float": b'{"a": 1e999, "b": 2}',
        "nan": b'{"a": NaN, "b": 2}',
        "duplicate-keys": b'{"a": 1, "a": 2, "b": 2}',
        "truncated": b'{"a": 1, "b":',
        "nul": b'{"a": 1, "b": 2}\x00',
        "bom": b'\xef\xbb\xbf{"a": 1, "b": 2}',
        "utf16": '{"a": 1, "b": 2}'.encode("utf-16"),
    }
    return [Hostile(f"body-{name}", body=body) for name, body in bodies.items()]


def _queries() -> list[Hostile]:
    queries = {
        "deep": b"a=" + b"[" * 12_000 + b"&b=1",  # past the parser's stack, unclosed
        "deep-fitting": b"a=" + b"[" * 900 + b"]" * 900 + b"&b=1",
        "bad-percent": b"a=%zz&b=%&%=1",
        "invalid-utf8": b"a=%ff%fe&b=%c3",
        "raw-bytes": b"a=\xff&b=2",
        "repeated": b"a=1&a=2&a=3&b=x",
        "huge-int": b"a=1" + b"0" * 5000 + b"&b=2",
        "nan": b"a=NaN&b=Infinity",
        "many-keys": b"&".join(b"k%d=1" % i for i in range(2000)),
        "long": b"a=" + b"1" * 12_000,
    }
    return [Hostile(f"query-{name}", query=q) for name, q in queries.items()]


def _path_params() -> list[Hostile]:
    names = {
        "bad-percent": b"%zz",
        "invalid-utf8": b"%ff%fe",
        "nul": b"a%00b",
        "dot-dot": b"..%2f..%2fetc%2fpasswd",
        "long": b"a" * 5000,
        "unicode": "w\u00e9ather".encode(),
        "newline": b"add%0a",
    }
    return [Hostile(f"param-{name}", name_param=n.decode("latin-1")) for name, n in names.items()]


def _headers() -> list[Hostile]:
    cases: dict[str, dict[bytes, bytes]] = {
        "last-event-id-empty": {b"last-event-id": b""},
        "last-event-id-garbage": {b"last-event-id": b"x.y.z"},
        "last-event-id-bytes": {b"last-event-id": b"\xff\xfe.1"},
        "last-event-id-long": {b"last-event-id": b"a" * 8000 + b".1"},
        "last-event-id-digits": {b"last-event-id": b"abc." + b"9" * 300},
        "authorization-bare": {b"authorization": b"Bearer"},
        "authorization-space": {b"authorization": b"Bearer    "},
        "authorization-basic": {b"authorization": b"Basic dXNlcjpwYXNz"},
        "authorization-bytes": {b"authorization": b"Bearer \xff\xfe"},
        "authorization-long": {b"authorization": b"Bearer " + b"t" * 8000},
        "content-length-huge": {b"content-length": b"9" * 30},
        "content-length-garbage": {b"content-length": b"abc"},
        "content-length-negative": {b"content-length": b"-1"},
        "content-length-plus": {b"content-length": b"+5"},
        "content-type-odd": {b"content-type": b"application/json; charset=latin-1"},
        "content-type-bytes": {b"content-type": b"application/\xffjson"},
        "host-empty": {b"host": b""},
        "host-bracket": {b"host": b"[::1"},
        "host-port-garbage": {b"host": b"127.0.0.1:abc"},
        "origin-null": {b"origin": b"null"},
        "origin-bytes": {b"origin": b"http://\xff"},
        "sec-fetch-site-odd": {b"sec-fetch-site": b"\xffsame-origin"},
        "trace-id-long": {b"x-trace-id": b"t" * 8000},
        "trace-id-bytes": {b"x-trace-id": b"\xff\xfe"},
        "accept-odd": {b"accept": b"text/event-stream;q=\xff"},
        "transfer-encoding-odd": {b"transfer-encoding": b"gzip"},
        "mcp-session-garbage": {b"mcp-session-id": b"\xff" * 100},
        "mcp-protocol-garbage": {b"mcp-protocol-version": b"\xff1999-01-01"},
    }
    found = [Hostile(f"header-{name}", headers=h) for name, h in cases.items()]
    found.append(Hostile("header-host-missing", drop=(b"host",)))
    return found


HOSTILE = [*_json_bodies(), *_queries(), *_path_params(), *_headers()]


def _request(endpoint: Endpoint, hostile: Hostile, port: int, run_id: str) -> bytes:
    path = endpoint.url(name=hostile.name_param, run_id=run_id, path="main.js").encode("latin-1")
    target = path + (b"?" + hostile.query if hostile.query else b"")
    body = hostile.body if hostile.body is not None else b'{"a": 1, "b": 2}'
    if endpoint.method in ("GET", "HEAD", "DELETE") and hostile.body is None:
        body = b""
    headers = {
        b"host": f"127.0.0.1:{port}".encode(),
        b"connection": b"close",
        b"sec-fetch-site": b"same-origin",  # what the server's own page sends: go deep
        b"content-type": b"application/json",
        b"accept": b"application/json, text/event-stream",
        b"content-length": str(len(body)).encode(),
    }
    headers.update(hostile.headers)
    for name in hostile.drop:
        headers.pop(name, None)
    head = b"".join(k + b": " + v + b"\r\n" for k, v in headers.items())
    return endpoint.method.encode() + b" " + target + b" HTTP/1.1\r\n" + head + b"\r\n" + body


@dataclass
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes


async def _send(port: int, request: bytes) -> Answer:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = b""
    try:
        writer.write(request)
        with contextlib.suppress(ConnectionError):  # refused before the body was all read
            await writer.drain()
        async with asyncio.timeout(15):
            while chunk := await reader.read(65536):
                raw += chunk
    except ConnectionResetError:
        assert raw, "the connection was reset before any answer"
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(b":")
        headers[key.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding") == b"chunked":
        body = _dechunk(body)
    return Answer(status, headers, body)


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def _problems(endpoint: Endpoint, hostile: Hostile, answer: Answer) -> str | None:
    if answer.status >= 500:
        return f"{answer.status}: {answer.body[:200]!r}"
    if answer.status < 400 or endpoint.method == "HEAD":
        return None
    if answer.body == b"Invalid HTTP request received.":
        return None  # refused by the HTTP parser (uvicorn's h11), before the app
    if endpoint.path == "/mcp" and hostile.name.startswith(("body", "header-mcp")):
        return None  # the MCP SDK answers protocol errors in JSON-RPC's own shape
    try:
        error = json.loads(answer.body)["error"]
    except (ValueError, KeyError, TypeError):
        return f"{answer.status} without the envelope: {answer.body[:200]!r}"
    if not (isinstance(error, dict) and "code" in error and "message" in error):
        return f"{answer.status} with a bad envelope: {answer.body[:200]!r}"
    return None


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.external)])
def config(request: pytest.FixtureRequest) -> ServerConfig:
    if request.param == "memory":
        return ServerConfig(max_body=MAX_BODY, rate_limit=None)
    redis_url = request.getfixturevalue("redis_url")
    return ServerConfig(max_body=MAX_BODY, rate_limit=None, redis_url=redis_url)


@pytest.mark.parametrize("endpoint", ALL, ids=str)
async def test_hostile_inputs_to_every_route_are_4xx_with_the_envelope_and_no_traceback(
    endpoint: Endpoint, config: ServerConfig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    app = create_app(tools, config, mcp=True)
    problems: dict[str, str] = {}
    async with serving(app, log_config=None) as url:
        port = int(url.rpartition(":")[2])
        started = await _send(port, _request(Endpoint("POST", "/tools/{name}/sse"),
                                             Hostile("setup"), port, ""))  # fmt: skip
        run_id = started.headers[b"content-location"].decode().removeprefix("/runs/")
        for hostile in HOSTILE:
            answer = await _send(port, _request(endpoint, hostile, port, run_id))
            problem = _problems(endpoint, hostile, answer)
            if problem is not None:
                problems[hostile.name] = problem
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info]
    assert problems == {}
    assert tracebacks == [], caplog.text[-5000:]


def test_the_walk_covers_the_routes_of_kosong_serve() -> None:
    walked: Callable[[str], bool] = lambda p: any(e.path == p for e in ALL)  # noqa: E731
    assert all(walked(p) for p in ("/tools/{name}", "/tools/{name}/sse", "/runs/{run_id}",
                                   "/healthz", "/metrics", "/dialects", "/mcp", "/"))  # fmt: skip
