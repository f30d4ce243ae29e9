"""MCP both ways: `tools/call` on our `/mcp` against the SDK's own server and FastMCP, and
`MCPToolset` against the SDK client's own `call_tool`.

Server side (what issue 10 sets as targets: ours <= 1.1x the SDK's low-level server's CPU per
call, and >= 2x FastMCP's req/s). Each row is one server process (uvicorn, asyncio + h11,
pinned to CPU 0) serving an `add(a, b)` tool; wrk (pinned to CPU 1) sends the self-contained
2026-07-28 `tools/call` POST of `../shared/anchor-bench/server/wrk/rpc-modern.lua` (every body
checked) for a 2 s warm-up, then a measured run. Server CPU per call is the process's user +
system time over the measured run, divided by the requests.

    sdk-lowlevel   mcp.server.Server, a trivial on_call_tool (the floor of the SDK)
    sdk-mcpserver  mcp.server.mcpserver.MCPServer (the SDK's FastMCP), stateless JSON
    kosong         MCPToolServer over SimpleToolset([add]) through the standard pipeline
    fastmcp        fastmcp 4.1.2 FastMCP, stateless JSON (its own venv: --fastmcp-python)

Client side: one client calls `add` on the SDK's low-level server (pinned to CPU 0) over
streamable HTTP, one call at a time; time per call, `mcp.Client.call_tool` against
`MCPToolset.handle` (same negotiated era, 2026-07-28).

    .venv/bin/python benchmarks/bench_mcp.py                 # 3 repeats, c=1,16; ~3 min
    .venv/bin/python benchmarks/bench_mcp.py --repeats 1 --seconds 3
    .venv/bin/python benchmarks/bench_mcp.py --breakdown     # our handler's pieces, in process

Medians of the repeats; every repeat starts each server afresh. Needs wrk and taskset (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = ROOT.parent / "shared" / "anchor-bench" / "server"
WRK_SCRIPT = ANCHOR / "wrk" / "rpc-modern.lua"
SERVER_CPU, CLIENT_CPU = "0", "1"
TICKS = os.sysconf("SC_CLK_TCK")


# --- the servers (factories for `uvicorn --factory bench_mcp:NAME`) ----------------------------


def sdk_lowlevel() -> Any:
    import mcp_types as mcp
    from mcp.server import Server

    tool = mcp.Tool(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    )

    async def list_tools(ctx: Any, params: Any) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: mcp.CallToolRequestParams) -> mcp.CallToolResult:
        args = params.arguments or {}
        return mcp.CallToolResult(content=[mcp.TextContent(text=str(args["a"] + args["b"]))])

    server = Server(
        "bench",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=lambda name: tool.input_schema if name == "add" else None,
    )
    return server.streamable_http_app(stateless_http=True, json_response=True)


def sdk_mcpserver() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server.streamable_http_app(stateless_http=True, json_response=True)


def kosong() -> Any:
    from kosong.mcp import MCPToolServer
    from kosong.tooling import tool
    from kosong.tooling.simple import SimpleToolset

    @tool
    async def add(
        a: int, b: int
    ) -> int:  # async, as the SDK row's handler (a def runs in a thread)
        """Add two integers."""
        return a + b

    return MCPToolServer(SimpleToolset([add]), name="bench", stateless=True).app()


def fastmcp() -> Any:
    from fastmcp import FastMCP  # its own venv has the server (dev has fastmcp-slim: a client)

    server = FastMCP("bench")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server.http_app(stateless_http=True, json_response=True)


# --- running them ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    def __init__(self, factory: str, python: str) -> None:
        self.port = free_port()
        argv = ["taskset", "-c", SERVER_CPU, python, "-m", "uvicorn", "--factory",
                f"bench_mcp:{factory}", "--host", "127.0.0.1", "--port", str(self.port),
                "--loop", "asyncio", "--http", "h11", "--log-level", "warning"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
        self.process = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{factory} did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def run_wrk(server: ServerProcess, connections: int, seconds: int) -> dict[str, float]:
    base = ["taskset", "-c", CLIENT_CPU, "wrk", "-t1", f"-c{connections}", "-s", str(WRK_SCRIPT)]
    subprocess.run([*base, "-d2s", server.url], capture_output=True, check=True)  # warm-up
    before = server.cpu_seconds()
    out = subprocess.run(
        [*base, f"-d{seconds}s", "--latency", server.url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    cpu = server.cpu_seconds() - before
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = int(re.search(r"BAD (\d+)", out).group(1))  # type: ignore[union-attr]
    if bad or "Non-2xx" in out:
        raise RuntimeError(f"wrong answers from the server:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return {"rps": rps, "cpu_us": cpu / requests * 1e6}


# --- the client side ---------------------------------------------------------------------------


async def client_times(url: str, calls: int) -> dict[str, float]:
    from kosong.mcp import MCPToolset
    from kosong.message import ToolCall
    from mcp import Client

    out: dict[str, float] = {}
    async with Client(url) as client:
        for _ in range(200):
            await client.call_tool("add", {"a": 1, "b": 2})
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool("add", {"a": 1, "b": 2})
        out["sdk_us"] = (time.perf_counter() - start) / calls * 1e6
        out["sdk_cpu_us"] = (time.process_time() - cpu) / calls * 1e6
        assert result.content[0].text == "3"  # type: ignore[union-attr]
    async with MCPToolset({"bench": url}) as toolset:
        call = ToolCall(
            id="c", function=ToolCall.FunctionBody(name="add", arguments='{"a":1,"b":2}')
        )
        answer = await toolset.handle(call)
        for _ in range(200):
            await toolset.handle(call)
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(calls):
            answer = await toolset.handle(call)
        out["kosong_us"] = (time.perf_counter() - start) / calls * 1e6
        out["kosong_cpu_us"] = (time.process_time() - cpu) / calls * 1e6
        assert answer.return_value.output == "3"
    return out


# --- where our server's time goes (in process, no HTTP) --------------------------------------


async def breakdown(rounds: int = 9, n: int = 1000) -> list[tuple[str, float]]:
    """µs per call of the pieces of our tools/call handler, and of the SDK's trivial handler."""
    import mcp_types as mcp

    from kosong.mcp import MCPToolServer
    from kosong.mcp._convert import to_call_tool_result
    from kosong.message import ToolCall
    from kosong.standard import PolicyToolset
    from kosong.tooling import tool
    from kosong.tooling.simple import SimpleToolset

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    class Ctx:
        meta = None
        protocol_version = "2026-07-28"
        request_id = 1
        session = None
        request = None

    server = MCPToolServer(SimpleToolset([add]))
    params = mcp.CallToolRequestParams(name="add", arguments={"a": 1, "b": 2})
    call = ToolCall(id="c", function=ToolCall.FunctionBody(name="add", arguments='{"a":1,"b":2}'))
    simple, pipeline = SimpleToolset([add]), PolicyToolset(SimpleToolset([add]))
    value = (await pipeline.handle(call)).return_value

    async def sdk_trivial() -> object:
        args = params.arguments or {}
        return mcp.CallToolResult(content=[mcp.TextContent(text=str(args["a"] + args["b"]))])

    async def ours() -> object:
        return await server._call_tool(Ctx(), params)  # type: ignore[arg-type]

    async def make_call() -> object:
        arguments = json.dumps(params.arguments)
        return ToolCall(id="c", function=ToolCall.FunctionBody(name="add", arguments=arguments))

    async def bare() -> object:
        return await simple.handle(call)

    async def piped() -> object:
        return await pipeline.handle(call)

    async def convert() -> object:
        return to_call_tool_result(value, None)

    import httpx

    body = WRK_SCRIPT.read_text().split("wrk.body = ", 1)[1].split("\nwrk.headers", 1)[0]
    body = "".join(re.findall(r"'([^']*)'", body))  # the Lua string pieces, joined
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "add",
    }
    stack = contextlib.AsyncExitStack()
    clients: dict[str, httpx.AsyncClient] = {}
    for name, factory in (("sdk", sdk_lowlevel), ("kosong", kosong)):
        app = factory()
        await stack.enter_async_context(app.router.lifespan_context(app))
        clients[name] = await stack.enter_async_context(
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:1")
        )

    async def request_sdk() -> object:
        return await clients["sdk"].post("/mcp", content=body, headers=headers)

    async def request_ours() -> object:
        return await clients["kosong"].post("/mcp", content=body, headers=headers)

    assert '"text":"3"' in (await request_ours()).text  # type: ignore[attr-defined]
    pieces = [
        ("whole request, SDK low-level app (+ httpx client)", request_sdk),
        ("whole request, our app (+ httpx client)", request_ours),
        ("SDK trivial handler (the SDK row's)", sdk_trivial),
        ("MCPToolServer tools/call handler", ours),
        ("  ToolCall from the request", make_call),
        ("  SimpleToolset.handle (no pipeline)", bare),
        ("  PolicyToolset.handle (no policies)", piped),
        ("  result to its wire form", convert),
    ]
    best = {label: float("inf") for label, _ in pieces}
    for _ in range(rounds):  # interleaved: noise hits every piece alike
        for label, piece in pieces:
            for _ in range(200):
                await piece()
            start = time.perf_counter()
            for _ in range(n):
                await piece()
            best[label] = min(best[label], (time.perf_counter() - start) / n * 1e6)
    await stack.aclose()
    return [(label, best[label]) for label, _ in pieces]


# --- the report --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--fastmcp-python", default="/tmp/srvbench-fastmcp/bin/python")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    parser.add_argument("--breakdown", action="store_true", help="only the in-process pieces")
    args = parser.parse_args()
    if args.breakdown:
        for label, micros in asyncio.run(breakdown()):
            print(f"{label:40} {micros:7.1f} µs")
        return
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        sys.exit("bench_mcp: needs wrk and taskset (apt-get install wrk)")
    rows = {"sdk-lowlevel": sys.executable, "sdk-mcpserver": sys.executable,
            "kosong": sys.executable, "fastmcp": args.fastmcp_python}  # fmt: skip
    if not Path(args.fastmcp_python).exists():
        print(f"(no FastMCP row: {args.fastmcp_python} is missing; see "
              "../shared/anchor-bench/server/setup.sh)")  # fmt: skip
        del rows["fastmcp"]
    connections = [int(c) for c in args.connections.split(",")]
    samples: dict[str, dict[int, list[dict[str, float]]]] = {
        name: {c: [] for c in connections} for name in rows
    }
    client: list[dict[str, float]] = []
    for repeat in range(args.repeats):
        for name, python in rows.items():
            for c in connections:
                server = ServerProcess(name.replace("-", "_"), python)
                try:
                    samples[name][c].append(run_wrk(server, c, args.seconds))
                finally:
                    server.stop()
                print(f"repeat {repeat + 1} {name} c={c}: {samples[name][c][-1]}", flush=True)
        server = ServerProcess("sdk_lowlevel", sys.executable)
        try:
            client.append(asyncio.run(client_times(server.url, args.calls)))
        finally:
            server.stop()
        print(f"repeat {repeat + 1} client: {client[-1]}", flush=True)

    def med(values: list[dict[str, float]], key: str) -> float:
        return statistics.median(v[key] for v in values)

    print("\n| server | " + " | ".join(f"req/s c={c}" for c in connections)
          + " | " + " | ".join(f"server CPU µs/call c={c}" for c in connections)
          + " | CPU vs sdk-lowlevel | req/s vs fastmcp |")  # fmt: skip
    print("|---" * (2 + 2 * len(connections) + 1) + "|")
    base_cpu = {c: med(samples["sdk-lowlevel"][c], "cpu_us") for c in connections}
    for name in rows:
        rps = [med(samples[name][c], "rps") for c in connections]
        cpu = [med(samples[name][c], "cpu_us") for c in connections]
        ratio = " / ".join(f"{cpu[i] / base_cpu[c]:.2f}x" for i, c in enumerate(connections))
        vs_fast = "—"
        if "fastmcp" in rows:
            vs_fast = " / ".join(
                f"{rps[i] / med(samples['fastmcp'][c], 'rps'):.2f}x"
                for i, c in enumerate(connections)
            )
        print(f"| {name} | " + " | ".join(f"{r:,.0f}" for r in rps) + " | "
              + " | ".join(f"{u:,.0f}" for u in cpu) + f" | {ratio} | {vs_fast} |")  # fmt: skip
    sdk, ours = med(client, "sdk_us"), med(client, "kosong_us")
    print("\n| client (one call at a time, 2026-07-28) | µs/call | client CPU µs/call | vs SDK |")
    print("|---|---|---|---|")
    print(f"| mcp.Client.call_tool | {sdk:,.0f} | {med(client, 'sdk_cpu_us'):,.0f} | 1.00x |")
    print(f"| MCPToolset.handle | {ours:,.0f} | {med(client, 'kosong_cpu_us'):,.0f} "
          f"| {ours / sdk:.2f}x |")  # fmt: skip
    print("\n| piece of a tools/call (in process, best of 9) | µs/call |")
    print("|---|---:|")
    for label, micros in asyncio.run(breakdown()):
        print(f"| {label} | {micros:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"servers": samples, "client": client}, indent=1))


if __name__ == "__main__":
    main()
