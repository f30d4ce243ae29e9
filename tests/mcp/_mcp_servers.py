"""Servers the kosong.mcp tests talk to, and ways to run them.

- `kosong_toolset()`: the tools our `MCPToolServer` serves in these tests;
- `sdk_server()`: an MCP server written directly on the SDK's low-level `Server`, no kosong;
- `Uvicorn`: an ASGI app on a free loopback port, in this process (its state observable);
- `Subprocess`: a server in a child process (so it can be killed for real).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types as mcp
import uvicorn
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from starlette.types import ASGIApp

from kosong.mcp import MCPToolServer, mcp_request
from kosong.standard import report_progress
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool
from kosong.tooling.error import ToolRateLimitedError
from kosong.tooling.simple import SimpleToolset
from tests._local import free_port

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


@contextlib.contextmanager
def serving_command(argv: list[str], port: int, **popen: Any) -> Iterator[str]:
    """`argv` run as a server listening on `port` until the block ends (then killed and reaped).

    Yields the URL of its MCP endpoint.
    """
    process = subprocess.Popen(argv, stderr=subprocess.DEVNULL, **popen)
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)


class Probe:
    """What the test tools tell the test: started, cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def wait_until_cancelled(self) -> None:
        """Say the tool started, then wait until it is cancelled (and say so).

        In a child process, "started" is also a file: the one `KOSONG_TEST_STARTED` names.
        """
        self.started.set()
        marker = os.environ.get("KOSONG_TEST_STARTED")
        if marker:
            Path(marker).touch()  # noqa: ASYNC240 - one tiny local file, in a test server
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


class AddParams(BaseModel):
    a: int
    b: int


class Add(CallableTool2[AddParams]):
    name: str = "add"
    description: str = "Add two integers."
    params: type[AddParams] = AddParams
    read_only_hint: bool | None = True
    idempotent_hint: bool | None = True
    title: str | None = "Adder"

    async def __call__(self, params: AddParams) -> ToolReturnValue:
        return ToolOk(output=str(params.a + params.b))


def kosong_toolset(probe: Probe | None = None) -> SimpleToolset:
    probe = probe or Probe()

    @tool
    async def slow(steps: int) -> str:
        """Report progress `steps` times, then answer."""
        for i in range(steps):
            report_progress(100 * (i + 1) / steps, f"step {i + 1}")
            await asyncio.sleep(0.01)
        return "done"

    @tool
    async def wait_forever() -> str:
        """Wait until cancelled."""
        await probe.wait_until_cancelled()
        return "never"

    @tool
    def boom() -> str:
        """Raise."""
        raise RuntimeError("kaput")

    @tool
    def limited() -> ToolReturnValue:
        """Refuse with a coded error."""
        return ToolRateLimitedError("too many calls", retry_after=2)

    @tool
    def shout() -> str:
        """Print to stdout, then answer."""
        print("this must not reach the protocol stream")
        os.write(1, b"nor this\n")
        return "ok"

    @tool
    async def reconnect() -> str:
        """Close this call's SSE stream, then answer (on the stream the client resumes)."""
        ctx = mcp_request()
        assert ctx is not None and ctx.close_sse_stream is not None
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        return "resumed"

    return SimpleToolset([Add(), slow, wait_forever, boom, limited, shout, reconnect])


served = kosong_toolset()
"""The test toolset as a module attribute, for commands that serve MODULE:ATTR."""


def kosong_app() -> ASGIApp:
    """Factory for a subprocess: our server over the test toolset."""
    return MCPToolServer(kosong_toolset(), name="kosong-test").app()


def sdk_server(probe: Probe | None = None) -> Server[Any]:
    """An MCP server on the SDK alone: `add`, `search`, `picture`, `fail`, `wait_forever`."""
    probe = probe or Probe()
    tools = [
        mcp.Tool(
            name="add",
            description="Add.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        ),
        mcp.Tool(
            name="search",
            description="Search.",
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
            annotations=mcp.ToolAnnotations(read_only_hint=True, destructive_hint=True),
        ),
        mcp.Tool(name="picture", description="A picture.", input_schema={"type": "object"}),
        mcp.Tool(name="fail", description="Fails.", input_schema={"type": "object"}),
        mcp.Tool(name="wait_forever", description="Waits.", input_schema={"type": "object"}),
        mcp.Tool(name="dotted.name/v2", description="Odd name.", input_schema={"type": "object"}),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mcp.PaginatedRequestParams | None
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mcp.CallToolRequestParams
    ) -> mcp.CallToolResult:
        args = params.arguments or {}
        if params.name == "add":
            for i in range(3):
                await ctx.session.report_progress(i + 1, 3, f"adding {i + 1}/3")
            return mcp.CallToolResult(content=[mcp.TextContent(text=str(args["a"] + args["b"]))])
        if params.name == "search":
            return mcp.CallToolResult(
                content=[mcp.TextContent(text=f"sdk results for {args.get('q')}")]
            )
        if params.name == "picture":
            return mcp.CallToolResult(
                content=[
                    mcp.TextContent(text="a picture:"),
                    mcp.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                ]
            )
        if params.name == "fail":
            return mcp.CallToolResult(content=[mcp.TextContent(text="it failed")], is_error=True)
        if params.name == "wait_forever":
            await probe.wait_until_cancelled()
        if params.name == "dotted.name/v2":
            return mcp.CallToolResult(content=[mcp.TextContent(text="odd")])
        raise MCPError(mcp.INVALID_PARAMS, f"Unknown tool: {params.name}")

    return Server("sdk-test", on_list_tools=list_tools, on_call_tool=call_tool)


def sdk_app() -> ASGIApp:
    """Factory for a subprocess: the SDK-only server over streamable HTTP."""
    return sdk_server().streamable_http_app()


class Uvicorn:
    """An ASGI app served on a free loopback port by uvicorn, in this process and event loop.

    `sock`, when given, is a socket already listening (its port known before the app is
    made); it is closed when the server stops.
    """

    def __init__(
        self, app: ASGIApp, port: int | None = None, *, sock: socket.socket | None = None
    ) -> None:
        self.sock = sock
        self.port = sock.getsockname()[1] if sock is not None else port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Uvicorn:
        sockets = [self.sock] if self.sock is not None else None
        self._task = asyncio.create_task(self._server.serve(sockets=sockets))
        async with asyncio.timeout(20):
            while not self._server.started:
                if self._task.done():
                    self._task.result()
                await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.should_exit = True
        assert self._task is not None
        async with asyncio.timeout(20):
            await self._task
        if self.sock is not None:
            self.sock.close()


class Subprocess:
    """A server in a child process: `uvicorn --factory` for HTTP, or a stdio command."""

    def __init__(
        self, factory: str, port: int | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.port = port or free_port()
        self._env = env or {}
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._argv = [
            sys.executable, "-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1",
            "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Subprocess:
        path = os.pathsep.join([str(HERE), str(ROOT), str(ROOT / "src")])  # ROOT: tests._local
        env = {**os.environ, **self._env, "PYTHONPATH": path}
        self.process = subprocess.Popen(self._argv, cwd=HERE, env=env, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)
        return self

    def kill(self) -> None:
        """Kill it for real (SIGKILL), and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def __enter__(self) -> Subprocess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


def stdio_command(kind: str, pidfile: Path | None = None) -> list[str]:
    """The command that serves `kind` ("kosong" or "sdk") over stdio in a child process.

    With `pidfile`, the child writes its process id there (for a test to kill it).
    """
    return [sys.executable, str(HERE / "_mcp_stdio.py"), kind, *([str(pidfile)] if pidfile else [])]


async def serve_sdk_stdio() -> None:
    server = sdk_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


@contextlib.asynccontextmanager
async def running(app: ASGIApp) -> AsyncIterator[Uvicorn]:
    async with Uvicorn(app) as server:
        yield server
