"""kosong's MCP client (`MCPToolset`) playing the official conformance suite's client scenarios.

The suite (npm `@modelcontextprotocol/conformance`) starts a server of its own for each
scenario and runs

    python examples/mcp_conformance_client.py SERVER_URL

with the scenario's name in `MCP_CONFORMANCE_SCENARIO`, then checks what the client did:
its handshake, its tool calls, how it answered an elicitation (SEP-1034: it must fill in the
defaults the user left), how it resumed a dropped stream, and, for the `auth/*` scenarios,
the whole OAuth flow against the suite's own authorization server, which the MCP SDK's
`OAuthClientProvider` runs here as the `auth` of a `ServerSpec`. Nothing here knows a
scenario's server: the client lists the tools and calls each, as an application would.
`tests/mcp/test_mcp_conformance.py` runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from kosong.mcp import ElicitationRequest, MCPToolset, ServerSpec
from kosong.message import ToolCall
from kosong.standard import ElicitAnswer


class MemoryTokens:
    """Where the OAuth provider keeps its registration and tokens (this run only)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class HeadlessBrowser:
    """The user's browser, for a test: opens the authorization URL and reads the redirect.

    The suite's authorization server approves at once and redirects to the client's
    `redirect_uri` with the code; a real application would open a browser and listen there.
    """

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as http:
            response = await http.get(authorization_url, follow_redirects=False)
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the authorization URL was never opened"
        return self.result


def oauth(url: str) -> OAuthClientProvider:
    browser = HeadlessBrowser()
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="kosong conformance client",
            redirect_uris=["http://localhost:3030/callback"],  # pyright: ignore[reportArgumentType]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=MemoryTokens(),
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )


async def accept_with_defaults(request: ElicitationRequest) -> ElicitAnswer:
    """The user accepts the form as shown: `MCPToolset` fills in the schema's defaults."""
    return ElicitAnswer.accept({})


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Some value for each required argument (numbers 1, 2, 3...; strings "x")."""
    properties: dict[str, Any] = schema.get("properties", {})
    made: dict[str, Any] = {}
    for i, name in enumerate(schema.get("required", []), start=1):
        kind = properties.get(name, {}).get("type")
        made[name] = i if kind in ("number", "integer") else "x"
    return made


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    spec = ServerSpec(url=url, auth=oauth(url) if scenario.startswith("auth/") else None)
    async with MCPToolset(
        {"server": spec}, elicitation=accept_with_defaults, connect_timeout=30
    ) as toolset:
        if toolset.errors:
            print(toolset.errors["server"], file=sys.stderr)
            return 1
        failed = False
        for n, tool in enumerate(toolset.tools):
            arguments = arguments_for(tool.parameters)
            call = ToolCall(
                id=f"call-{n}",
                function=ToolCall.FunctionBody(name=tool.name, arguments=json.dumps(arguments)),
            )
            result = (await toolset.handle(call)).return_value
            print(f"{tool.name}: {result.output or result.message}", file=sys.stderr)
            failed = failed or result.is_error
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
