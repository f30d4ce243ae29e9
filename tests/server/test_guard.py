"""Every request is checked first: Host, Origin, bearer token, rate limit, body size."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.types import Message, Scope

from kosong.server import RateLimit, ServerConfig, create_app, serving
from tests.server._tools import tools

JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("path", ["/tools", "/healthz", "/metrics", "/runs/x", "/nowhere"])
async def test_a_foreign_host_is_refused_everywhere(path: str) -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        refused = await c.get(path, headers={"Host": "evil.example.com"})
        rebinding = await c.get(path, headers={"Host": "evil.example.com:8000"})
    assert refused.status_code == rebinding.status_code == 421


async def test_loopback_hosts_and_allowed_hosts_pass() -> None:
    config = ServerConfig(allowed_hosts=("127.0.0.1", "tools.internal"))
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        named = await c.get("/healthz", headers={"Host": "tools.internal:8443"})
        local = await c.get("/healthz", headers={"Host": "localhost"})
    assert named.status_code == 200 and local.status_code == 421


async def test_origins_are_checked_when_sent() -> None:
    config = ServerConfig(allowed_origins=("https://app.example.com",))
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        evil = await c.post("/tools/add", json={"a": 1, "b": 2},
                            headers={"Origin": "http://evil.example.com"})  # fmt: skip
        app = await c.post("/tools/add", json={"a": 1, "b": 2},
                           headers={"Origin": "https://app.example.com"})  # fmt: skip
        local = await c.get("/tools", headers={"Origin": "http://localhost:3000"})
        none = await c.get("/tools")
    assert evil.status_code == 403 and evil.json()["error"]["code"] == "PERMISSION_DENIED"
    assert app.status_code == local.status_code == none.status_code == 200


async def test_a_token_is_required_in_the_authorization_header_only() -> None:
    config = ServerConfig(token="s3cret")
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        missing = await c.get("/tools")
        wrong = await c.get("/tools", headers={"Authorization": "Bearer nope"})
        query = await c.get("/tools?token=s3cret&access_token=s3cret")
        right = await c.get("/tools", headers={"Authorization": "Bearer s3cret"})
        health = await c.get("/healthz")
        metrics = await c.get("/metrics")
    assert missing.status_code == wrong.status_code == query.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="kosong"'
    assert wrong.headers["WWW-Authenticate"] == 'Bearer realm="kosong", error="invalid_token"'
    assert missing.json()["error"]["code"] == "UNAUTHORIZED"
    assert right.status_code == 200 and health.status_code == 200
    assert metrics.status_code == 401


async def test_each_replay_is_authenticated_again() -> None:
    config = ServerConfig(token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        run = await c.post("/tools/count/sse", json={"n": 1, "delay": 0}, headers=auth)
        path = run.headers["content-location"]
        anonymous = await c.get(path)
        again = await c.get(path, headers=auth)
    assert anonymous.status_code == 401 and again.status_code == 200


async def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    config = ServerConfig(max_body=1024)
    async with serving(create_app(tools, config)) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        # Headers only: the body is never sent, so an answer proves nothing was waited for.
        writer.write(
            b"POST /tools/add HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.close()
        async with httpx.AsyncClient(base_url=url) as c:
            small = await c.post("/tools/add", json={"a": 1, "b": 2})
            big = await c.post("/tools/echo", json={"text": "x" * 2000})

            async def chunks():  # no Content-Length: sent chunked
                for _ in range(10):
                    yield b" " * 200

            chunked = await c.post("/tools/add", content=chunks(), headers=JSON)

            async def small_chunks():
                yield b'{"a": 1,'
                yield b' "b": 2}'

            chunked_ok = await c.post("/tools/add", content=small_chunks(), headers=JSON)
            metrics = (await c.get("/metrics")).text
    assert head.startswith(b"HTTP/1.1 413")
    assert small.status_code == 200 and big.status_code == 413 and chunked.status_code == 413
    assert "1024 bytes" in big.json()["error"]["message"]
    assert chunked_ok.status_code == 200 and chunked_ok.json()["data"] == 3
    assert 'kosong_server_rejected_requests_total{reason="body"} 3' in metrics


async def test_the_rate_limit_is_per_principal_with_retry_after() -> None:
    config = ServerConfig(tokens={"a": "alice", "b": "bob"}, rate_limit=RateLimit(0.5, 2))
    alice, bob = {"Authorization": "Bearer a"}, {"Authorization": "Bearer b"}
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        codes = [(await c.get("/tools", headers=alice)).status_code for _ in range(3)]
        limited = await c.get("/tools", headers=alice)
        other = await c.get("/tools", headers=bob)
        health = await c.get("/healthz")
    assert codes == [200, 200, 429]
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "2"
    assert limited.json()["error"]["code"] == "RATE_LIMITED"
    assert other.status_code == 200 and health.status_code == 200


def test_rate_limits_parse_from_text() -> None:
    assert RateLimit.parse("100/s") == RateLimit(100, 100)
    assert RateLimit.parse("600/m,burst=50") == RateLimit(10, 50)
    with pytest.raises(ValueError, match="must look like"):
        RateLimit.parse("fast")


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("Host", "127.0.0.1", "evil.example.com"),
        ("Host", "evil.example.com", "127.0.0.1"),
        ("Authorization", "Bearer s3cret", "Bearer nope"),
        ("Authorization", "Bearer nope", "Bearer s3cret"),
        ("Origin", "http://127.0.0.1", "http://evil.example.com"),
        ("Sec-Fetch-Site", "same-origin", "cross-site"),
        ("Content-Type", "application/json", "text/plain"),
    ],
)
async def test_a_header_the_checks_read_is_refused_when_sent_twice(
    name: str, first: str, second: str
) -> None:
    # Sent as raw bytes on a real socket, so that no client merges or drops the second value:
    # with two values, one check could pass on one and the next check read the other.
    config = ServerConfig(token="s3cret")
    async with serving(create_app(tools, config)) as url:
        host, port = url.removeprefix("http://").split(":")
        lines = {"Host": "127.0.0.1", "Authorization": "Bearer s3cret",
                 "Content-Type": "application/json"}  # fmt: skip
        lines.pop(name, None)
        head = "".join(f"{k}: {v}\r\n" for k, v in lines.items())
        body = b'{"a": 1, "b": 2}'
        request = (
            f"POST /tools/add HTTP/1.1\r\n{head}{name}: {first}\r\n{name}: {second}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        async with httpx.AsyncClient(base_url=url) as c:
            metrics = await c.get("/metrics", headers={"Authorization": "Bearer s3cret"})
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 400 Bad Request"
    if name == "Host" and b"Invalid HTTP request" in rest:
        return  # uvicorn refuses two Hosts itself (RFC 9112 3.2); the app would too
    assert f"the {name.lower()} header is sent more than once".encode() in rest
    assert b'"INVALID_PARAMS"' in rest and b'"result"' not in rest
    assert 'kosong_server_rejected_requests_total{reason="header"} 1' in metrics.text


async def test_two_hosts_are_refused_by_the_app_too() -> None:
    # Behind an ASGI server that passes both on, the app's first check refuses them.
    scope: Scope = {"type": "http", "method": "GET", "path": "/healthz", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"host", b"evil.example.com")]}  # fmt: skip
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await create_app(tools)(scope, receive, send)
    assert sent[0]["status"] == 400
    assert b"the host header is sent more than once" in sent[1]["body"]
