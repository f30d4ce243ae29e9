"""Tokens from an OAuth authorization server: JWTs, introspection, metadata and challenges.

The authorization server is a real one on a loopback socket (`_authserver`: the MCP SDK's
handlers, RSA-signed JWTs, its key set and an introspection endpoint); the app is served by
uvicorn and asked over HTTP, on its routes and on `/mcp`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.auth import ProtectedResourceMetadata

from kosong.server import (
    IntrospectionVerifier,
    JWTVerifier,
    ServerConfig,
    TokenVerifier,
    create_app,
    serving,
)
from tests.server._authserver import RESOURCE_SERVER, AuthServer, rsa_key
from tests.server._tools import tools

RESOURCE = "https://tools.example.com"
"""The resource the app says it is (`resource_url`): the audience its tokens name."""

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}}  # fmt: skip
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(header: dict[str, Any], claims: dict[str, Any], key: bytes = b"") -> str:
    """A JWT put together by hand: HS256 with `key` as the secret, else no signature."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = b""
    if header.get("alg") == "HS256":
        signature = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def jwt_config(auth: AuthServer, **more: Any) -> ServerConfig:
    verifier = JWTVerifier(auth.jwks_url, issuer=auth.url, audience=RESOURCE)
    return ServerConfig(verifier=verifier, resource_url=RESOURCE, **more)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_jwt_of_the_issuer_for_this_server_is_accepted_on_the_routes_and_mcp() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        app = create_app(tools, jwt_config(auth), mcp=True)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            token = bearer(auth.token())
            listed = await c.get("/tools", headers=token)
            called = await c.post("/tools/add", json={"a": 2, "b": 3}, headers=token)
            mcp = await c.post("/mcp", json=INIT, headers={**MCP_HEADERS, **token})
    assert listed.status_code == 200 and called.json()["data"] == 5
    assert mcp.status_code == 200 and "serverInfo" in mcp.text


async def test_the_principal_is_the_token_s_subject() -> None:
    """Runs belong to their principal: another token of alice's reads hers, bob's does not."""
    async with AuthServer(audience=RESOURCE) as auth:
        app = create_app(tools, jwt_config(auth))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            run = await c.post("/tools/count/sse", json={"n": 1, "delay": 0},
                               headers=bearer(auth.token(client_id="one")))  # fmt: skip
            path = run.headers["content-location"]
            alice = await c.get(path, headers=bearer(auth.token(client_id="another")))
            bob = await c.get(path, headers=bearer(auth.token(sub="bob", client_id="one")))
    assert run.status_code == 200 and alice.status_code == 200
    assert bob.status_code == 404


def _tampered(token: str, claims: dict[str, Any]) -> str:
    """`token` with other claims, its signature kept."""
    header, _, signature = token.split(".")
    return f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"


def _bad_tokens(auth: AuthServer) -> dict[str, str]:
    now = int(time.time())
    public_pem = auth.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return {
        "expired": auth.token(exp=now - 120, iat=now - 3720),
        "not yet valid": auth.token(nbf=now + 600),
        "wrong audience": auth.token(aud="https://other.example.com"),
        "wrong issuer": auth.token(iss="https://evil.example.com"),
        "no expiry": auth.sign({k: v for k, v in auth.claims().items() if k != "exp"}),
        "bad signature": auth.sign(auth.claims(), key=rsa_key()),
        "unknown kid": auth.sign(auth.claims(), key=rsa_key(), headers={"kid": "key-2"}),
        "alg none": forged({"alg": "none", "kid": auth.kid, "typ": "JWT"}, auth.claims()),
        "HS256 with the public key as secret": forged(
            {"alg": "HS256", "kid": auth.kid}, auth.claims(), public_pem
        ),
        "tampered claims": _tampered(auth.token(), auth.claims(sub="root")),
        "not a JWT": "opaque-token-nobody-issued",
        "three dots of nothing": "..",
    }


async def test_bad_tokens_are_answered_401_with_the_challenge_never_500() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        app = create_app(tools, jwt_config(auth), mcp=True)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            answers: dict[str, list[httpx.Response]] = {}
            for name, token in _bad_tokens(auth).items():
                answers[name] = [
                    await c.get("/tools", headers=bearer(token)),
                    await c.post("/tools/touch", json={}, headers=bearer(token)),
                    await c.post("/mcp", json=INIT, headers={**MCP_HEADERS, **bearer(token)}),
                ]
    challenge = (
        f'Bearer realm="kosong", error="invalid_token", '
        f'resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource"'
    )
    for name, responses in answers.items():
        for response in responses:
            assert response.status_code == 401, (name, response.request.url, response.text)
            assert response.headers["WWW-Authenticate"] == challenge, name
            assert response.json()["error"]["code"] == "UNAUTHORIZED"


async def test_a_request_without_a_token_is_told_where_the_metadata_is() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        app = create_app(tools, jwt_config(auth, required_scopes=["tools"]), mcp=True)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            route = await c.get("/tools")
            mcp = await c.post("/mcp", json=INIT, headers=MCP_HEADERS)
            basic = await c.get("/tools", headers={"Authorization": "Basic YTpi"})
    expected = (
        f'Bearer realm="kosong", scope="tools", '
        f'resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource"'
    )
    assert route.status_code == mcp.status_code == 401
    assert route.headers["WWW-Authenticate"] == mcp.headers["WWW-Authenticate"] == expected
    assert basic.status_code == 401 and 'error="invalid_token"' in basic.headers["WWW-Authenticate"]


async def test_a_token_without_the_required_scopes_is_refused_with_insufficient_scope() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        config = jwt_config(auth, required_scopes=["tools", "admin"])
        async with (
            serving(create_app(tools, config, mcp=True)) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as c,
        ):
            only_tools = bearer(auth.token(scope="tools"))
            narrow = await c.get("/tools", headers=only_tools)
            narrow_mcp = await c.post("/mcp", json=INIT, headers={**MCP_HEADERS, **only_tools})
            scp = bearer(auth.token(scope=None, scp=["tools", "admin"]))  # Azure's claim
            listed = await c.get("/tools", headers=scp)
            wide = await c.get("/tools", headers=bearer(auth.token(scope="admin tools other")))
    for refused in (narrow, narrow_mcp):
        assert refused.status_code == 403
        assert refused.headers["WWW-Authenticate"] == (
            'Bearer realm="kosong", error="insufficient_scope", scope="tools admin", '
            f'resource_metadata="{RESOURCE}/.well-known/oauth-protected-resource"'
        )
        assert refused.json()["error"]["code"] == "PERMISSION_DENIED"
    assert listed.status_code == wide.status_code == 200


async def test_the_protected_resource_metadata_names_the_issuer_and_needs_no_token() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        configured = create_app(tools, jwt_config(auth, required_scopes=["tools"]))
        verifier = JWTVerifier(auth.jwks_url, issuer=auth.url, audience=RESOURCE)
        derived = create_app(tools, ServerConfig(verifier=verifier, allowed_hosts=["*"]))
        async with serving(configured) as url, httpx.AsyncClient(base_url=url) as c:
            document = await c.get("/.well-known/oauth-protected-resource")
        async with serving(derived) as url, httpx.AsyncClient(base_url=url) as c:
            local = await c.get("/.well-known/oauth-protected-resource")
            named = await c.get("/.well-known/oauth-protected-resource",
                                headers={"Host": "tools.internal:8443"})  # fmt: skip
            odd = await c.get("/tools", headers={"Host": 'x"y'})
    assert document.status_code == 200
    assert document.json() == {
        "resource": RESOURCE, "authorization_servers": [auth.url],
        "scopes_supported": ["tools"], "bearer_methods_supported": ["header"],
    }  # fmt: skip
    ProtectedResourceMetadata.model_validate_json(document.content)  # the SDK's own model
    assert local.json()["resource"] == url and local.json()["authorization_servers"] == [auth.url]
    assert named.json()["resource"] == "http://tools.internal:8443"
    # A Host that is no host name never makes it into the challenge.
    assert odd.status_code == 401 and '"y' not in odd.headers["WWW-Authenticate"]


async def test_no_metadata_is_served_for_fixed_tokens() -> None:
    config = ServerConfig(token="s3cret")
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        document = await c.get("/.well-known/oauth-protected-resource", headers=bearer("s3cret"))
        missing = await c.get("/tools")
    assert document.status_code == 404
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="kosong"'


async def test_keys_that_cannot_be_fetched_are_a_503_and_the_keys_fetched_later_work() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        token = auth.token()
    # The authorization server is gone: nothing answers at its key set's URL.
    verifier = JWTVerifier(auth.jwks_url, issuer=auth.url, audience=RESOURCE, refresh_seconds=0)
    app = create_app(tools, ServerConfig(verifier=verifier, resource_url=RESOURCE))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
        down = await c.get("/tools", headers=bearer(token))
        metrics = await c.get("/metrics", headers=bearer(token))
    assert down.status_code == metrics.status_code == 503
    assert down.headers["Retry-After"] == "2"
    assert down.json()["error"]["code"] == "NETWORK_ERROR"


async def test_a_new_key_id_fetches_the_key_set_again_but_made_up_ones_do_not_flood_it() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        fetches = 0
        jwks = auth.jwk

        def counted() -> dict[str, Any]:
            nonlocal fetches
            fetches += 1
            return jwks()

        auth.jwk = counted
        app = create_app(tools, jwt_config(auth))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            first = await c.get("/tools", headers=bearer(auth.token()))
            stranger = rsa_key()  # one key the issuer never published, under 20 made-up kids
            made_up = [
                await c.get("/tools", headers=bearer(
                    auth.sign(auth.claims(), key=stranger, headers={"kid": f"made-up-{n}"})))
                for n in range(20)
            ]  # fmt: skip
            assert fetches == 1  # within refresh_seconds of the first fetch: not fetched again
            auth.key, auth.kid = rsa_key(), "key-2"  # the issuer rotates its key
            verifier = app.state.kosong.config.verifier
            verifier.refresh_seconds = 0  # as if refresh_seconds had passed
            rotated = await c.get("/tools", headers=bearer(auth.token()))
    assert first.status_code == rotated.status_code == 200
    assert {r.status_code for r in made_up} == {401}
    assert fetches == 2


async def test_introspection_accepts_active_tokens_for_this_server_only() -> None:
    async with AuthServer() as auth:
        now = int(time.time())
        auth.opaque = {
            "good": {"active": True, "sub": "carol", "client_id": "c1", "scope": "tools",
                     "aud": RESOURCE, "iss": auth.url, "exp": now + 600},
            "revoked": {"active": False},
            "elsewhere": {"active": True, "sub": "carol", "aud": "https://other.example.com"},
            "expired": {"active": True, "sub": "carol", "aud": RESOURCE, "exp": now - 10},
            "other issuer": {"active": True, "sub": "carol", "aud": RESOURCE,
                             "iss": "https://evil.example.com"},
        }  # fmt: skip
        verifier = IntrospectionVerifier(
            auth.introspection_url, client_id=RESOURCE_SERVER[0],
            client_secret=RESOURCE_SERVER[1], issuer=auth.url, audience=RESOURCE,
        )  # fmt: skip
        app = create_app(tools, ServerConfig(verifier=verifier, resource_url=RESOURCE), mcp=True)
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            good = await c.post("/tools/add", json={"a": 1, "b": 1}, headers=bearer("good"))
            mcp = await c.post("/mcp", json=INIT, headers={**MCP_HEADERS, **bearer("good")})
            bad = ("revoked", "elsewhere", "expired", "other issuer", "unknown")
            refused = {t: await c.get("/tools", headers=bearer(t)) for t in bad}
            document = await c.get("/.well-known/oauth-protected-resource")
        introspected = auth.introspected
    assert good.json()["data"] == 2 and mcp.status_code == 200
    assert {t: r.status_code for t, r in refused.items()} == dict.fromkeys(refused, 401)
    assert introspected == 7  # each request asked, none answered from a cache
    assert document.json()["authorization_servers"] == [auth.url]


async def test_an_introspection_endpoint_that_cannot_answer_is_a_503() -> None:
    async with AuthServer() as auth:
        auth.opaque = {"good": {"active": True, "sub": "carol"}}
        wrong_secret = IntrospectionVerifier(auth.introspection_url, client_id="kosong-rs",
                                             client_secret="wrong")  # fmt: skip
        app = create_app(tools, ServerConfig(verifier=wrong_secret))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            refused = await c.get("/tools", headers=bearer("good"))
    gone = create_app(tools, ServerConfig(verifier=IntrospectionVerifier(auth.introspection_url)))
    async with serving(gone) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
        down = await c.get("/tools", headers=bearer("good"))
    assert refused.status_code == down.status_code == 503
    assert down.headers["Retry-After"] == "2"


async def test_any_object_with_verify_token_is_a_verifier_and_an_mcp_sdk_one_too() -> None:
    from mcp.server.auth.provider import AccessToken

    class Verifier:  # the shape of the SDK's TokenVerifier protocol
        async def verify_token(self, token: str) -> AccessToken | None:
            if token == "letmein":
                return AccessToken(token=token, client_id="cli", scopes=[], expires_at=None)
            if token == "stale":
                return AccessToken(token=token, client_id="cli", scopes=[], expires_at=1)
            return None

    verifier: TokenVerifier = Verifier()
    config = ServerConfig(verifier=verifier, authorization_servers=["https://as.example.com"])
    async with serving(create_app(tools, config)) as url, httpx.AsyncClient(base_url=url) as c:
        ok = await c.get("/tools", headers=bearer("letmein"))
        stale = await c.get("/tools", headers=bearer("stale"))
        document = await c.get("/.well-known/oauth-protected-resource")
    assert ok.status_code == 200 and stale.status_code == 401
    assert document.json()["authorization_servers"] == ["https://as.example.com"]


def test_the_configuration_refuses_what_cannot_work() -> None:
    verifier = IntrospectionVerifier("http://127.0.0.1:9/introspect")
    with pytest.raises(ValueError, match="not both"):
        ServerConfig(token="t", verifier=verifier)
    with pytest.raises(ValueError, match="need tokens"):
        ServerConfig(required_scopes=["tools"])
    with pytest.raises(ValueError, match="audience"):
        JWTVerifier("http://127.0.0.1:9/jwks", issuer="https://as", audience=[])
    with pytest.raises(ValueError, match="public-key"):
        JWTVerifier("http://127.0.0.1:9/jwks", issuer="https://as", audience="a",
                    algorithms=["HS256"])  # fmt: skip
    with pytest.raises(ValueError, match="http"):
        create_app(tools, ServerConfig(verifier=verifier, authorization_servers=["not a url"]))


def _segments() -> st.SearchStrategy[str]:
    header = st.fixed_dictionaries(
        {"alg": st.sampled_from(["RS256", "ES256", "none", "HS256", "", "PS256"])},
        optional={"kid": st.sampled_from(["key-1", "key-2", ""]) | st.integers(),
                  "typ": st.text(max_size=5)},
    )  # fmt: skip
    claims = st.dictionaries(st.sampled_from(["iss", "aud", "sub", "exp", "scope"]),
                             st.integers() | st.text(max_size=10) | st.none())  # fmt: skip
    return st.builds(
        lambda h, c, s: ".".join((_b64(json.dumps(h).encode()), _b64(json.dumps(c).encode()),
                                  _b64(s))),
        header, claims, st.binary(max_size=300),
    )  # fmt: skip


def test_no_token_text_makes_the_jwt_verifier_raise() -> None:
    async def loaded() -> JWTVerifier:
        async with AuthServer(audience=RESOURCE) as auth:
            verifier = JWTVerifier(auth.jwks_url, issuer=auth.url, audience=RESOURCE,
                                   cache_seconds=3600, refresh_seconds=3600)  # fmt: skip
            assert await verifier.verify_token(auth.token()) is not None  # keys fetched
        return verifier

    verifier = asyncio.run(loaded())

    @settings(max_examples=300, deadline=None)
    @given(st.text() | _segments() | st.from_regex(r"[A-Za-z0-9_\-.=]{0,200}", fullmatch=True))
    def check(token: str) -> None:
        assert asyncio.run(verifier.verify_token(token)) is None

    check()


async def test_an_authorization_header_of_any_bytes_is_a_401() -> None:
    async with AuthServer(audience=RESOURCE) as auth:
        app = create_app(tools, jwt_config(auth))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as c:
            answers = [
                await c.get("/tools", headers=[(b"Authorization", value)])
                for value in (b"Bearer \xff\xfe", b"Bearer", b"bearer x y z",
                              b"Bearer " + b"A" * 6000, b"Token abc")
            ]  # fmt: skip
    assert [a.status_code for a in answers] == [401] * len(answers)
