"""Instructions per MCP `tools/call`, counted by valgrind: a figure the machine's noise cannot move.

Sends N self-contained 2026-07-28 `tools/call` POSTs (after 100 warm-up ones) to an app of
`bench_mcp.py` in this process, through httpx's ASGI transport (no sockets). Run under
callgrind twice, with N = 0 and N = 200: the difference of the two totals, divided by 200, is
the instructions of one request (client side included; the `floor` app, a Starlette route that
decodes the body and answers a fixed JSON, measures that part).

    for app in floor sdk_lowlevel kosong; do for n in 0 200; do
      valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-$app-$n.out \\
        .venv/bin/python benchmarks/mcp_instructions.py $app $n 2>&1 | grep refs
    done; done

About 2 minutes a run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
import bench_mcp

BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "add",
            "arguments": {"a": 1, "b": 2},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
            },
        },
    }
)
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "add",
}


def floor() -> Any:
    """The client's share: a route that decodes the body and answers a fixed result."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"3","type":"text"}]}}'

    async def endpoint(request: Request) -> Response:
        json.loads(await request.body())
        return Response(answer, media_type="application/json")

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])


async def main(name: str, n: int) -> None:
    app = floor() if name == "floor" else getattr(bench_mcp, name)()
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client,
    ):
        for _ in range(100 + n):
            response = await client.post("/mcp", content=BODY, headers=HEADERS)
            if '"text":"3"' not in response.text:
                raise RuntimeError(f"wrong answer: {response.text}")


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
